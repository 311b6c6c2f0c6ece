"""docs/api.md documents every public name of astgrad, and every name it documents exists and has a docstring.

A new public name (``astgrad.jvp``...) fails here until it has a docstring
and a ``::: astgrad.NAME`` line in docs/api.md, where mkdocstrings renders it.
"""

import importlib
import inspect
import pathlib
import re
import types

import astgrad
import astgrad.autograd

API_PAGE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "api.md"


def directives():
    return re.findall(r"^::: ([\w.]+)$", API_PAGE.read_text(), re.MULTILINE)


def resolve(path):
    module, _, name = path.rpartition(".")
    while module:
        try:
            return getattr(importlib.import_module(module), name)
        except ModuleNotFoundError:
            module, _, rest = module.rpartition(".")
            name = f"{rest}.{name}"
    raise AssertionError(path)


def public_names():
    names = {f"astgrad.{n}" for n, v in vars(astgrad).items()
             if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    return names | {f"astgrad.autograd.{n}" for n in astgrad.autograd.__all__}


def test_every_public_name_is_on_the_api_page():
    documented = {id(resolve(path)) for path in directives()}  # astgrad.autograd.no_grad is astgrad.no_grad
    missing = sorted(name for name in public_names() if id(resolve(name)) not in documented)
    assert not missing, f"add a '::: NAME' line to docs/api.md for each of {missing}"


def test_every_name_on_the_api_page_exists_and_has_a_docstring():
    for path in directives():
        value = resolve(path)
        doc = value.__doc__ if inspect.isclass(value) else inspect.getdoc(value)
        assert doc and doc.strip(), f"{path} has no docstring"
    assert len(directives()) == len(set(directives())), "a name documented twice"
