"""DOT text, written deterministically, and its rendering by Graphviz.

Writing DOT needs nothing; rendering needs the ``graphviz`` Python package
(``pip install 'astgrad[viz]'``) and Graphviz's ``dot`` program, both looked
for only when a picture is asked for.
"""

from __future__ import annotations

import os
from typing import Optional

_RENDER_HINT = ("the DOT text is the graph's .source; to render it, install the graphviz Python package "
                "(pip install 'astgrad[viz]') and Graphviz's dot program (e.g. apt-get install graphviz, "
                "brew install graphviz)")


def quote(text: str) -> str:
    """``text`` as a DOT string: quotes and backslashes escaped, line breaks as ``\\n``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def attributes(attrs: dict) -> str:
    """``[a="1" b="2"]`` in the order given (empty values left out), or ``""``."""
    shown = [f"{key}={quote(str(value))}" for key, value in attrs.items() if value not in (None, "")]
    return f" [{' '.join(shown)}]" if shown else ""


class Writer:
    """Lines of one ``digraph``, with subgraphs (clusters) nested as they are opened."""

    def __init__(self, name: str, graph: dict, node: dict, edge: Optional[dict] = None):
        self.lines = [f"digraph {name} {{"]
        self.depth = 1
        self.nodes = 0
        self.edges = 0
        self.clusters = 0
        self.line(f"graph{attributes(graph)}")
        self.line(f"node{attributes(node)}")
        if edge:
            self.line(f"edge{attributes(edge)}")

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def node(self, name: str, **attrs) -> None:
        self.nodes += 1
        self.line(f"{name}{attributes(attrs)}")

    def edge(self, tail: str, head: str, **attrs) -> None:
        self.edges += 1
        self.line(f"{tail} -> {head}{attributes(attrs)}")

    def open_cluster(self, **attrs) -> None:
        self.line(f"subgraph cluster_{self.clusters} {{")
        self.clusters += 1
        self.depth += 1
        for key, value in attrs.items():
            self.line(f"{key}={quote(str(value))}")

    def close_cluster(self) -> None:
        self.depth -= 1
        self.line("}")

    def graph(self, kind: str) -> "Graph":
        return Graph("\n".join(self.lines + ["}"]) + "\n", kind, self.nodes, self.edges)


class Graph:
    """A graph as Graphviz DOT text (``.source``, also ``str(graph)``), renderable to SVG or PNG.

    ``pipe(format)`` returns the rendered bytes and ``save(path)`` writes a
    file; both need the ``graphviz`` package and the ``dot`` program.  In a
    notebook the graph shows as a picture where they are installed.
    """

    def __init__(self, source: str, kind: str, nodes: int, edges: int):
        self.source = source
        self.kind = kind
        self.nodes = nodes
        self.edges = edges

    def __str__(self) -> str:
        return self.source

    def __repr__(self) -> str:
        return f"<astgrad.graph of {self.kind}: {self.nodes} nodes, {self.edges} edges; DOT text in .source>"

    def pipe(self, format: str = "svg") -> bytes:
        """The graph rendered by Graphviz's ``dot`` in ``format`` (``"svg"``, ``"png"``, ``"pdf"``...)."""
        return render(self.source, format)

    def save(self, path: str, format: Optional[str] = None) -> str:
        """Write the graph to ``path``, in ``format`` or the one its suffix names (``.dot`` writes the text)."""
        format = format or os.path.splitext(path)[1][1:].lower()
        if not format:
            raise ValueError(f"{path!r}: no suffix to tell the format; pass format='svg' or 'png'")
        if format in ("dot", "gv"):
            with open(path, "w", encoding="utf-8") as file:
                file.write(self.source)
            return path
        data = self.pipe(format)
        with open(path, "wb") as file:
            file.write(data)
        return path

    def _repr_svg_(self) -> Optional[str]:
        """In a notebook: the picture, where graphviz and dot are installed (else the text repr shows)."""
        try:
            return self.pipe("svg").decode("utf-8")
        except (ImportError, RuntimeError):
            return None


def render(source: str, format: str) -> bytes:
    """``source`` rendered by ``dot``; a clear error names what is missing."""
    try:
        import graphviz
    except ImportError:
        raise ImportError(f"rendering a graph needs the graphviz Python package: {_RENDER_HINT}") from None
    try:
        return graphviz.Source(source).pipe(format=format)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(f"rendering a graph needs Graphviz's dot program on PATH: {_RENDER_HINT}") from None
