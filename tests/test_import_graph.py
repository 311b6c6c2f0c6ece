"""The modules under src/astgrad import each other without a cycle.

Every import counts, at module level or inside a function (a function-level
import that breaks a cycle at load time still leaves the two modules
knowing each other); only imports under ``if TYPE_CHECKING:`` are left out.
An edge goes to the module an import names: ``from .x import y`` reads
``x`` (or ``x.y`` where ``y`` is a submodule), ``from . import x`` reads the
submodule ``x``.  The package a module sits in is not an edge of its own.
"""

import ast
import pathlib

import pytest

import astgrad

ROOT = pathlib.Path(astgrad.__file__).parent


def _modules() -> dict:
    """``{dotted name: path}`` of every module of the package."""
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node) -> bool:
    test = node.test
    return isinstance(test, ast.Name) and test.id == "TYPE_CHECKING" or \
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imports(tree):
    """The Import and ImportFrom nodes of ``tree``, at any depth, outside ``if TYPE_CHECKING``."""
    todo = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.If) and _type_checking(node):
            todo += node.orelse
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        todo += ast.iter_child_nodes(node)


def _edges(name, path, modules) -> set:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in modules}
            continue
        if node.level:
            base = package.split(".")
            base = base[:len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        for alias in node.names:
            sub = f"{target}.{alias.name}"
            if sub in modules:
                out.add(sub)
            elif target in modules:
                out.add(target)
    out.discard(name)
    return out


def graph() -> dict:
    modules = _modules()
    return {name: _edges(name, path, modules) for name, path in modules.items()}


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
    assert "astgrad.transform.reverse" in edges["astgrad.transform.pipeline"]
    assert "astgrad.rules" in edges["astgrad.transform.reverse"]


@pytest.mark.parametrize("package", ["astgrad.transform", "astgrad.rules", "astgrad.tape", "astgrad"])
def test_no_import_cycle(edges, package):
    if package != "astgrad":  # the package's own modules among themselves
        edges = {m: {n for n in e if n.startswith(package)} for m, e in edges.items() if m.startswith(package)}
    found = cycle(edges)
    assert not found, "import cycle: " + " -> ".join(found)
