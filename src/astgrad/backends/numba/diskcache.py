"""Numba's machine code of a generated gradient kept on disk, keyed so it is never out of date.

Numba's own cache (``njit(cache=True)``) finds a function by its source
file and checks the file's contents and the function's bytecode; it does
not see what the code reads besides its text: the globals it compiled in
(a module-level number, ``ALPHA``) and the code of the functions it calls
(astgrad's runtime helpers and their Numba implementations, the rules whose
text the transform wrote in).  So the generated text is written to a file
whose name is a hash of everything the machine code depends on:

* the text itself (the user's function, its callees and the rules as
  written into it);
* every global the text names, described by value: a number by its type and
  value, a module by its name, a function of numpy, math, builtins or
  astgrad by its module and name;
* the source of every module of the astgrad package (the helpers, their
  Numba implementations, the rules), Numba's, numpy's and Python's versions
  and Numba's optimisation level.

A change of any of them names another file, which Numba has not compiled:
it compiles again and caches that.  A global the text names that is none of
those kinds (an object whose code the key cannot see) turns the cache off
for that gradient: it compiles in the process, as without a cache.

``ASTGRAD_NUMBA_CACHE`` chooses the directory (``0`` or an empty value: no
cache); by default ``$XDG_CACHE_HOME/astgrad/numba`` (``~/.cache/...``).  A
directory that cannot be written means no cache, never an error.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pathlib
import sys
import tempfile
import types
import warnings
from typing import Any

import numpy as np

from ...transform.ir.compat import gast

#: the packages whose functions the key describes by module and name (astgrad's by the hash of its source)
_DESCRIBED = frozenset({"numpy", "math", "cmath", "builtins", "astgrad", "operator"})


def directory() -> pathlib.Path | None:
    """Where the files and Numba's cache go, or None when caching is off."""
    chosen = os.environ.get("ASTGRAD_NUMBA_CACHE")
    if chosen is not None:
        return pathlib.Path(chosen) if chosen not in ("", "0") else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "astgrad" / "numba"


def source_file(source: str, functions, namespace) -> str | None:
    """The path of a file holding ``source`` under a name that is the hash of what its machine code depends on,
    or None where it cannot be cached (caching off, a global the key cannot describe, no writable directory)."""
    where = directory()
    if where is None:
        return None
    own = {f.name for f in functions}  # defined by the text itself
    names = sorted({n.id for f in functions for n in gast.walk(f) if isinstance(n, gast.Name)}
                   & set(namespace) - own)
    described = []
    for name in names:
        text = _describe(namespace[name])
        if text is None:
            return None
        described.append(f"{name}={text}")
    key = hashlib.sha256("\n".join([_environment(), source, *described]).encode()).hexdigest()[:32]
    path = where / f"astgrad_{key}.py"
    if path.is_file():
        return str(path)
    try:
        where.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=where, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(source)
        os.replace(temporary, path)  # whole or not at all: another process may write the same file
    except OSError:
        return None
    return str(path)


def _describe(value) -> str | None:
    """A text that changes whenever what compiled code reads from ``value`` may change; None where not known."""
    if type(value) in (int, float, bool, complex) or isinstance(value, (np.number, np.bool_)):
        return f"{type(value).__module__}.{type(value).__qualname__}:{value!r}"
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if value is None or type(value) is str:
        return repr(value)
    if isinstance(value, np.ufunc):
        name = getattr(value, "__name__", "")
        return f"ufunc:{name}" if getattr(np, name, None) is value else None
    if isinstance(value, type) and value.__module__ == "builtins":
        return f"type:{value.__qualname__}"
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not (isinstance(module, str) and isinstance(qualname, str)) or module.split(".")[0] not in _DESCRIBED \
            or "<locals>" in qualname:
        return None
    owner: object = sys.modules.get(module)
    for part in qualname.split("."):
        owner = getattr(owner, part, None)
    if owner is not value:  # not found where its names say: a copy or a replacement the key cannot tell apart
        return None
    return f"{module}.{qualname}"


@functools.lru_cache(maxsize=1)
def _environment() -> str:
    """The versions and the hash of astgrad's own source (its helpers, their implementations, the rules)."""
    import numba
    package = pathlib.Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    from numba.core import config
    level = getattr(config, "OPT", None)  # set from NUMBA_OPT when Numba is imported
    return (f"python {sys.version}; numba {numba.__version__} opt {level}; numpy {np.__version__}; "
            f"astgrad {digest.hexdigest()}")


def held(dispatcher):
    """Keep back Numba's writes of ``dispatcher``'s machine code to the cache; returns the function that makes them.

    The compiled code is checked after Numba compiled it (``compiled``'s
    refusal of integer products), in the entry and in the callees compiled
    apart from it; code read back from the cache brings the entry's typed
    text, not the callees', so it is written only once every check passed.
    The writes are quiet: Numba does not cache code that holds the address
    of a Python object (a Numba function a helper calls, where LLVM's
    optimisations are off, as the tests run them) and warns, under its
    compiler lock, where no filter of the caller's (an ``error`` filter,
    pytest's) should see it.
    """
    from numba.core.errors import NumbaWarning
    cache: Any = getattr(dispatcher, "_cache", None)
    save = getattr(cache, "save_overload", None)
    pending: list = []
    if save is None:
        return lambda: None
    cache.save_overload = lambda sig, data: pending.append((sig, data))

    def write():
        from numba.core.compiler_lock import global_compiler_lock
        while pending:
            sig, data = pending.pop(0)
            with global_compiler_lock, warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Cannot cache compiled function", category=NumbaWarning)
                save(sig, data)
    return write
