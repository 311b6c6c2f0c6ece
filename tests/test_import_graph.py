"""The modules under src/astgrad import each other without a cycle.

The graph (tests/_imports.py) counts every import, inside functions too;
test_layers.py checks the direction of the same edges.
"""

import pytest

from _imports import _edges, graph


@pytest.fixture(scope="module")
def edges():
    """The package's graph, parsed once for the tests here (none of them changes it)."""
    return graph()


def cycle(edges) -> list:
    """One import cycle of ``edges`` as a list of modules (first == last), or []."""
    state = {}

    def visit(node, trail):
        state[node] = "open"
        trail.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == "open":
                return trail[trail.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, trail)
                if found:
                    return found
        trail.pop()
        state[node] = "done"
        return []
    for node in sorted(edges):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return []


def test_cycle_finder_finds_a_cycle_through_a_function_level_import(tmp_path):
    edges = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}}
    assert cycle(edges) == ["p.a", "p.b", "p.c", "p.a"]
    assert cycle({"p.a": {"p.b"}, "p.b": set()}) == []
    source = "def f():\n    from .b import g\nif TYPE_CHECKING:\n    from . import c\n"
    path = tmp_path / "a.py"
    path.write_text(source)
    assert _edges("p.a", path, {"p.a", "p.b", "p.c"}) == {"p.b"}


def test_the_graph_sees_known_edges(edges):
    assert "astgrad.transform.core.reverse" in edges["astgrad.transform.pipeline"]
    assert "astgrad.rules" in edges["astgrad.transform.core.reverse"]


@pytest.mark.parametrize("package", ["astgrad.transform", "astgrad.rules", "astgrad.tape", "astgrad"])
def test_no_import_cycle(edges, package):
    if package != "astgrad":  # the package's own modules among themselves
        edges = {m: {n for n in e if n.startswith(package)} for m, e in edges.items() if m.startswith(package)}
    found = cycle(edges)
    assert not found, "import cycle: " + " -> ".join(found)
