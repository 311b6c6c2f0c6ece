"""A reader of the DOT text astgrad.graph writes: nodes and edges with their attributes, for tests to assert on.

Written independently of the writer: it reads the text as Graphviz would
(one statement a line, ``name [key="value" ...]``, ``tail -> head [...]``).
"""

import re

_ATTR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r"^\s*(\w+) -> (\w+)(?: \[(.*)\])?$")
_NODE = re.compile(r"^\s*(\w+) \[(.*)\]$")


def _attrs(text):
    return {key: value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
            for key, value in _ATTR.findall(text or "")}


def parse(dot):
    """``(nodes, edges)``: ``{name: attrs}`` in order, ``[(tail, head, attrs)]`` in order."""
    nodes, edges = {}, []
    lines = dot.splitlines()
    assert lines[0].startswith("digraph ") and lines[-1] == "}", dot
    for line in lines[1:-1]:
        edge = _EDGE.match(line)
        if edge:
            edges.append((edge.group(1), edge.group(2), _attrs(edge.group(3))))
            continue
        node = _NODE.match(line)
        if node and node.group(1) not in ("graph", "node", "edge"):
            nodes[node.group(1)] = _attrs(node.group(2))
    for tail, head, _ in edges:
        assert tail in nodes and head in nodes, f"edge {tail} -> {head} to an undeclared node"
    return nodes, edges


def by_label(nodes):
    """``{label: [names]}``."""
    found = {}
    for name, attrs in nodes.items():
        found.setdefault(attrs.get("label"), []).append(name)
    return found
