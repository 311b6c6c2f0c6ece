"""The machine code Numba compiles for astgrad's helper implementations, kept on disk for every later gradient.

A gradient's first call compiles its own functions and, for each kind of
arguments they pass, the Numba implementations of the runtime helpers they
call (``unbroadcast``, ``shape``, the list helpers, ...: helpers.py).  The
helpers are the same for every program, so after the first gradient on a
machine their machine code is read from disk (S2's first call, RK4: about
0.8 s of 3.2 s).  The gradient's own code is kept by diskcache.py.

Numba keeps a function's code under a key of its signature, the machine,
the hash of its bytecode and of its closure's values, and a stamp of the
source it came from.  For a helper the stamp is diskcache's (the hash of
astgrad's whole source and Numba's, numpy's and Python's versions) with
Numba's settings that change the code but not its key (``NUMBA_BOUNDSCHECK``,
the vectorizers, the CPU asked for; and, per helper, the flags it takes
from the function it was compiled for), so code compiled by another astgrad
(another helper, another rule it inlines) or under other settings is never
read.  Two implementations with one bytecode and other constants or
other values of the globals they read (a lambda written per axis, a text
compiled per rank with the values it needs as its globals) would share
Numba's key: each function's file is named by the hash of its code, its
constants and nested code, and the value of every global it names; a
helper that names a global whose value cannot be described (a Numba
function) is not kept.

The files go to ``<directory>/helpers/<the stamp's hash>`` (``ASTGRAD_NUMBA_CACHE``,
the directory diskcache uses; off with it), so two versions of astgrad on
one machine keep theirs side by side.  Nothing here is ever an error: a
directory that cannot be written, a closure Numba cannot pickle, a Numba
whose internals differ, code Numba will not cache (it holds a Python
object's address, as object mode does without LLVM's optimisations) mean
the helper compiles in the process, as without a cache.

Numba offers no public way to choose where one overload's implementation is
cached: ``keep_helpers`` wraps the method of Numba's overload templates that
makes each implementation's dispatcher (for astgrad's overloads only) and
gives that dispatcher a cache of this module's kind.
"""

from __future__ import annotations

import functools
import hashlib
import sys
import types
import warnings

import numpy as np

from . import diskcache

_installed = False


def keep_helpers() -> None:
    """Give each dispatcher Numba makes for an implementation of one of astgrad's overloads a cache on disk (once;
    a Numba without the method wrapped keeps its own behaviour)."""
    global _installed
    if _installed:
        return
    _installed = True
    from numba.core.typing import templates
    template = getattr(templates, "_OverloadFunctionTemplate", None)
    original = getattr(template, "_get_jit_decorator", None)
    if template is None or original is None:
        return

    def _get_jit_decorator(self):
        jitter = original(self)
        if not str(getattr(self._overload_func, "__module__", "")).startswith("astgrad."):
            return jitter

        def decorator(**options):
            make = jitter(**options)

            def dispatcher(pyfunc):
                made = make(pyfunc)
                _keep(made)
                return made
            return dispatcher
        return decorator

    template._get_jit_decorator = _get_jit_decorator


def _keep(dispatcher) -> None:
    """``dispatcher``'s compiled code read from and written to ``<directory>/helpers/...``, where caching is on."""
    where = diskcache.directory()
    module = getattr(dispatcher.py_func, "__module__", None)
    if where is None or not isinstance(module, str) or module not in sys.modules:  # Numba's reading needs it
        return
    try:
        from numba.core import config
        if getattr(config, "CACHE_LOCATOR_CLASSES", None):  # the user chose where Numba's caches go: this too
            return
        identity = _identity(dispatcher.py_func, _inherited())
        if identity is None:  # it reads a global whose value the key cannot describe: compiled in the process
            return
        dispatcher._cache = _cache_class()(dispatcher.py_func, str(where / "helpers" / _stamp()[:16]), identity)
    except Exception:  # noqa: BLE001 (any failure leaves the helper compiled in the process, never an error)
        return


def _inherited() -> str:
    """The flags a helper compiled now takes from the function whose compile asked for it (Numba's
    ``ConfigStack``: ``fastmath``, ``error_model``, ``forceinline``), which Numba's key of the helper's
    code leaves out: a helper compiled for a caller with ``error_model="numpy"`` divides by zero into inf,
    where the same helper for the generated code (``"python"``) raises ZeroDivisionError."""
    from numba.core import targetconfig
    stack = targetconfig.ConfigStack()
    if not stack:
        return "none"
    top = stack.top()
    fastmath = getattr(top, "fastmath", None)
    return repr((sorted(getattr(fastmath, "flags", None) or ()), str(getattr(top, "error_model", None)),
                 bool(getattr(top, "forceinline", False))))


def _identity(function, inherited="none") -> str | None:
    """A hash of everything ``function`` computes with that Numba's key leaves out, or None where a part of it
    cannot be described: its bytecode, names and constants, nested code included, and the value of each global
    it names (a helper written from text reads the values it was made with as globals: two made with other
    values have one code).  Not ``marshal``'s bytes of the code, which mark objects by how many references
    they have: one function's differed from one process to the next, and it was never read back."""
    digest = hashlib.sha256(inherited.encode())
    names: set = set()

    def add(code):
        names.update(code.co_names)
        digest.update(code.co_code)
        digest.update(repr((code.co_name, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                            code.co_argcount, code.co_kwonlyargcount, code.co_flags)).encode())
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                add(constant)
            else:
                digest.update(_described(constant).encode())
    add(function.__code__)
    for name in sorted(names & set(function.__globals__)):
        value = _described(function.__globals__[name])
        if "?" in value:
            return None
        digest.update(f"{name}={value};".encode())
    for cell in function.__closure__ or ():  # Numba's key pickles these: only values that pickle the same in
        if "?" in _described(cell.cell_contents, closed=True):  # every process (an intrinsic pickles a new id)
            return None
    return digest.hexdigest()[:20]


def _described(value, closed=False) -> str:
    """A text naming ``value`` by what it is (``?`` in it where that is not known): numbers, strings and their
    tuples by value, a numpy dtype or a Numba type by name, modules and functions by diskcache's rule (a
    function of numpy, math or astgrad by its module and name), one of astgrad's Numba intrinsics by its
    name where it is a global (``closed``: a closure's value, which Numba's key pickles, and an intrinsic
    pickles with an id new in each process)."""
    if value is None or type(value) in (bool, int, float, complex, str, bytes):
        return f"{type(value).__name__}:{value!r}"
    if type(value) in (tuple, list):
        return f"{type(value).__name__}({','.join(_described(v, closed) for v in value)})"
    if type(value) is frozenset:  # its order is the hashes' (strings': the process's seed)
        return f"frozenset({','.join(sorted(_described(v, closed) for v in value))})"
    if isinstance(value, np.dtype):
        return f"dtype:{value.str}"
    if type(value).__module__.startswith("numba.core.types"):
        return f"numba:{type(value).__name__}:{value}"
    defn = getattr(value, "_defn", None)
    if type(value).__name__ == "_Intrinsic" and defn is not None and str(defn.__module__).startswith("astgrad."):
        return "?" if closed else f"intrinsic:{defn.__module__}.{defn.__qualname__}"  # its code: astgrad's source
    described = diskcache._describe(value)
    return described if described is not None else "?"


@functools.lru_cache(maxsize=1)
def _stamp() -> str:
    """The hash of diskcache's stamp (astgrad's source, the versions, ``NUMBA_OPT``) and of Numba's settings that
    change a helper's code but not Numba's key of it: bounds checked or not (an index out of range raises, or
    reads past the array), the vectorizers, the machine Numba was told to compile for."""
    from numba.core import config
    settings = [getattr(config, name, None) for name in ("BOUNDSCHECK", "LOOP_VECTORIZE", "SLP_VECTORIZE", "CPU_NAME",
                                                         "CPU_FEATURES", "ENABLE_AVX", "DEBUGINFO_DEFAULT")]
    return hashlib.sha256(f"{diskcache._environment()}; {settings!r}".encode()).hexdigest()


@functools.lru_cache(maxsize=1)
def _cache_class():
    """The cache of a helper's dispatcher (built once Numba is imported)."""
    from numba.core import caching

    class _Locator(caching._CacheLocator):
        """Where and under which stamp: the helpers' directory, diskcache's stamp, the code's hash."""

        def __init__(self, py_func, path, identity):
            self._path = path
            self._py_file = py_func.__code__.co_filename  # Numba's warnings name it
            self._code = identity

        def get_cache_path(self):
            return self._path

        def get_source_stamp(self):
            return _stamp()

        def get_disambiguator(self):
            return self._code

        @classmethod
        def from_function(cls, py_func, py_file):
            raise NotImplementedError("made by _Implementation, with its path")

    class _Implementation(caching.CompileResultCacheImpl):
        """Numba's implementation of a function's cache, with the locator above and no warning where the
        code cannot be cached (it compiles in the process)."""

        def __init__(self, py_func, path, identity):  # Numba's, without its search of the locators
            self._lineno = py_func.__code__.co_firstlineno
            self._locator = _Locator(py_func, path, identity)
            name = py_func.__qualname__.replace("<", "").replace(">", "")
            self._filename_base = self.get_filename_base(name, getattr(sys, "abiflags", ""))

        def check_cachable(self, cres):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return super().check_cachable(cres)

    class _Cache(caching.FunctionCache):
        """A helper's cache: every failure to read or write is a miss, never an error."""

        def __init__(self, py_func, path, identity):
            self._impl_class = functools.partial(_Implementation, path=path, identity=identity)  # type: ignore[assignment]
            super().__init__(py_func)

        def load_overload(self, sig, target_context):
            try:
                return super().load_overload(sig, target_context)
            except Exception:  # noqa: BLE001
                return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except Exception:  # noqa: BLE001
                pass

    return _Cache
