"""``astgrad.torch`` is built on the public names of ``astgrad`` and ``astgrad.tape`` alone.

A facade that reaches into the tape's private modules breaks whenever the
tape is reorganised; this test reads every import under astgrad/torch
(function-level ones too) and names the first private one.
"""

import ast
import pathlib

import astgrad.torch

FACADE = pathlib.Path(astgrad.torch.__file__).parent


def _astgrad_imports():
    """(file, line, module, name) of each ``from <astgrad...> import name`` under astgrad/torch."""
    for path in sorted(FACADE.rglob("*.py")):
        package = ["astgrad", *path.relative_to(FACADE.parent).parent.parts]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("astgrad"):
                        yield path.name, node.lineno, alias.name, None
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - node.level + 1]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module
                if module.startswith("astgrad") and not module.startswith("astgrad.torch"):
                    for alias in node.names:
                        yield path.name, node.lineno, module, alias.name


def test_the_facade_imports_only_public_names():
    seen = list(_astgrad_imports())
    assert seen, "the walk found no import of astgrad: it is broken"
    private = [f"{file}:{line}: from {module} import {name}" for file, line, module, name in seen
               if any(part.startswith("_") for part in module.split("."))
               or name is not None and name.startswith("_")]
    assert private == []

