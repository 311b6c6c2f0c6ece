"""The import graph of the astgrad package, read from its source (for the tests of its shape).

Every import counts, at module level or inside a function (a function-level
import that breaks a cycle at load time still leaves the two modules
knowing each other); only imports under ``if TYPE_CHECKING:`` are left out.
An edge goes to the module an import names: ``from .x import y`` reads
``x`` (or ``x.y`` where ``y`` is a submodule), ``from . import x`` reads the
submodule ``x``.  The package a module sits in is not an edge of its own.
"""

import ast
import pathlib

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
