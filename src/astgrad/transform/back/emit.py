"""Turn generated trees into source text, and source into functions.

Comments cannot live in an AST, so the passes insert marker statements
(``__comment_3__``, made by ir/trees.py) that are replaced here by
``# grad of line N: ...`` after astor renders the module.  The text is registered in ``linecache`` under a
pseudo-filename before compiling, so tracebacks and pdb show the generated
lines; the entry goes when the code's owner is freed (``drop_lines_with``).
"""

from __future__ import annotations

import linecache
import re
import weakref

from ..ir import compat

_MARKER = re.compile(r"^(\s*)__comment_(\d+)__$", re.MULTILINE)


def render(functions, comments, header) -> str:
    module = compat.make("Module", body=list(functions), type_ignores=[])
    text = compat.to_source(module)
    text = _MARKER.sub(lambda m: f"{m.group(1)}# {comments[int(m.group(2))]}", text)
    text = re.sub(r"\n\n\ndef ", "\n\n\ndef ", text)
    return "".join(f"# {printable(line)}\n" for line in header) + text


def printable(text: str) -> str:
    """``text`` on one line: a line break in a name (``f.__qualname__``) cannot end a comment early."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def compile_source(source: str, filename: str, namespace) -> str:
    """Execute ``source`` into ``namespace``, registered for tracebacks and pdb.

    Returns the filename used: ``filename``, or ``filename`` numbered (``#2``)
    when a live entry has it (the same function transformed twice, such as two
    closures of one ``def``), so each text keeps its own lines.
    """
    filename = _unused(filename)
    lines = source.splitlines(True)
    linecache.cache[filename] = (len(source), None, lines, filename)
    code = compile(source, filename, "exec")
    exec(code, namespace)
    return filename


def drop_lines_with(owner, filename: str) -> None:
    """Forget ``filename``'s lines in ``linecache`` once ``owner`` (what runs the code) is freed."""
    weakref.finalize(owner, _drop, filename, linecache.cache[filename])


def _drop(filename, entry):
    if linecache.cache.get(filename) is entry:
        del linecache.cache[filename]


def _unused(filename: str) -> str:
    number, name = 1, filename
    while name in linecache.cache:
        number += 1
        name = f"{filename[:-1]} #{number}>"
    return name
