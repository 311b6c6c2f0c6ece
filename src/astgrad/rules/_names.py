"""What a user calls a callable, and whether its code is a library's.

Messages name callables as users write them (``numpy.sin``,
``scipy.special.gammaln``, ``scipy.stats.norm.cdf``), never by a private
module or a ``repr``; and only the user's own code is differentiated
through its source, so a function of the standard library or an installed
package is told apart by where its code lives.
"""

from __future__ import annotations

import builtins
import functools
import os
import site
import sys
import sysconfig
import types
from typing import Callable

__all__ = ["qualified_name", "names", "library_function"]


def qualified_name(fn: Callable) -> str:
    """A name a user recognises: ``numpy.sin``, ``numpy.linalg.norm``.

    A callable without a name of its own (a ``functools.partial``, an instance
    of a class with ``__call__``) is described, never shown by its ``repr``.
    """
    if isinstance(fn, functools.partial):
        return f"functools.partial({qualified_name(fn.func)}, ...)"
    if not hasattr(fn, "__qualname__") and not hasattr(fn, "__name__"):
        return f"a {qualified_name(type(fn))} instance"
    module = getattr(fn, "__module__", None) or ""
    if isinstance(fn, type(abs)) and module in ("", "builtins") and hasattr(fn, "__self__"):
        module = ""
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    if module.startswith("numpy"):
        module = "numpy" if module in ("numpy", "numpy._core.fromnumeric", "numpy._core.numeric",
                                       "numpy._core.multiarray", "numpy._core.umath") else module
    if module.startswith("astgrad.rules._"):
        module = "astgrad.rules"
    if type(fn).__name__ == "ufunc":
        if vars(sys.modules["numpy"]).get(fn.__name__) is fn:
            return f"numpy.{fn.__name__}"
        return _public_path(fn, fn.__name__) or f"numpy.{fn.__name__}"  # scipy.special's ufuncs
    if isinstance(fn, types.MethodType) and not isinstance(fn.__self__, (type, types.ModuleType)):
        owner = _public_path(fn.__self__, None)  # scipy.stats.norm.cdf: a method of a library's object
        if owner is not None:
            return f"{owner}.{fn.__name__}"
    if module and not module.startswith(("numpy", "astgrad")) and "._" in f".{module}" and name.isidentifier():
        module = _public_module(fn, module, name) or module  # scipy.linalg._basic.solve as scipy.linalg.solve
    return f"{module}.{name}" if module and module != "builtins" else name


def _public_module(fn, module: str, name: str) -> str | None:
    """The shortest public parent of ``module`` (no part starting ``_``) that exports ``fn`` as ``name``."""
    parts = module.split(".")
    for end in range(1, len(parts)):
        if any(part.startswith("_") for part in parts[:end]):
            break
        parent = sys.modules.get(".".join(parts[:end]))
        if parent is not None and vars(parent).get(name) is fn:
            return ".".join(parts[:end])
    return None


def _public_path(obj, name: str | None) -> str | None:
    """``module.name`` of a module-level object without a ``__module__`` of its own (a ufunc, an instance).

    Searched among the imported public modules (no part starting ``_``), read
    through their dicts (never a module's ``__getattr__``), the shortest path
    first: ``scipy.special.gammaln``, ``scipy.stats.norm``.
    """
    found = []
    package = None if name is not None else (getattr(type(obj), "__module__", None) or "").split(".")[0]
    for module_name, module in list(sys.modules.items()):
        if module is None or any(part.startswith("_") for part in module_name.split(".")):
            continue
        if package is not None and module_name.split(".")[0] != package:  # an instance: its class's package
            continue
        try:
            members = vars(module)
        except TypeError:
            continue
        if name is not None:
            if members.get(name) is obj:
                found.append(f"{module_name}.{name}")
            continue
        for key, value in list(members.items()):
            if value is obj and not key.startswith("_"):
                found.append(f"{module_name}.{key}")
    return min(found, key=lambda path: (path.count("."), len(path))) if found else None


def _library_paths() -> tuple:
    paths = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.update(getattr(site, "getsitepackages", list)())
    return tuple(os.path.join(os.path.realpath(path), "") for path in paths)


_LIBRARY_PATHS = _library_paths()


def library_function(fn) -> bool:
    """A Python function of the standard library or an installed package (scipy's ``logsumexp``), not astgrad's.

    Only the user's code is differentiated through its source: a library
    function is a primitive with a rule in the table, or refused where the
    user calls it (docs/guarantees.md).  A package installed in editable mode
    is the user's own code, where it lives.
    """
    fn = fn.__func__ if isinstance(fn, types.MethodType) else fn  # scipy.stats.norm.cdf: its class's function
    code = getattr(fn, "__code__", None)
    module = str(getattr(fn, "__module__", "") or "")
    if not isinstance(fn, types.FunctionType) or code is None or module.split(".")[0] == "astgrad":
        return False
    return os.path.realpath(code.co_filename).startswith(_LIBRARY_PATHS)


def names(name: str, fn) -> bool:
    """Does the dotted ``name`` (``numpy.linalg.norm``) lead back to ``fn`` through ``sys.modules``?"""
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        return False
    if len(parts) == 1:
        return getattr(builtins, name, None) is fn
    for split in range(len(parts) - 1, 0, -1):
        value = sys.modules.get(".".join(parts[:split]))
        if value is None:
            continue
        for part in parts[split:]:
            value = getattr(value, part, None)
        return value is fn or (value is not None and value == fn)
    return False
