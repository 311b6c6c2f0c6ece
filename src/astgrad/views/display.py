"""Rich display in notebooks (IPython's ``_repr_html_`` / ``_repr_markdown_``).

Generated gradients show their source highlighted (by pygments, which
IPython brings, when it is installed; plain otherwise) and check_grads
reports show a table.  Nothing here is imported unless a notebook asks.
"""

from __future__ import annotations

import html


def source_html(source: str) -> str:
    """``source`` as highlighted HTML: the ``# grad of line N`` comments name the user's lines."""
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import PythonLexer
    except ImportError:
        return f"<pre><code>{html.escape(source)}</code></pre>"
    return highlight(source, PythonLexer(), HtmlFormatter(noclasses=True, nowrap=False))


def source_markdown(source: str) -> str:
    return f"```python\n{source.rstrip()}\n```"


def report_html(report) -> str:
    """A check_grads report as an HTML table, mismatched rows in bold."""
    head = "".join(f"<th>{h}</th>" for h in ("argument", "methods", "max abs diff", "max rel diff", "at", ""))
    rows = []
    for name, pair, abs_diff, rel_diff, where, ok in report.rows:
        cells = [html.escape(str(name)), html.escape(str(pair)), f"{abs_diff:.3g}", f"{rel_diff:.3g}",
                 html.escape(str(where)), "ok" if ok else "<b>MISMATCH</b>"]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines = str(report).splitlines()
    title = html.escape(lines[0])
    notes = [html.escape(line) for line in lines[1:] if not line.startswith("|")]
    return (f"<p><code>{title}</code></p><table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + "".join(f"<p>{note}</p>" for note in notes))


def report_markdown(report) -> str:
    lines = str(report).splitlines()
    notes = [line for line in lines[1:] if not line.startswith("|")]
    return "\n\n".join([f"`{lines[0]}`", report.table(), *notes])
