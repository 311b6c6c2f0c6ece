"""The machine code Numba compiles for astgrad's helper implementations, kept on disk for every later gradient.

A gradient's first call compiles its own functions and, for each kind of
arguments they pass, the Numba implementations of the runtime helpers they
call (``unbroadcast``, ``shape``, the list helpers, ...: helpers.py).  The
helpers are the same for every program, so after the first gradient on a
machine their machine code is read from disk (S2's first call, RK4: about
0.6 s of 3.4 s).  The gradient's own code is kept by diskcache.py.

Numba keeps a function's code under a key of its signature, the machine,
the hash of its bytecode and of its closure's values, and a stamp of the
source it came from.  For a helper the stamp is diskcache's (the hash of
astgrad's whole source and Numba's, numpy's and Python's versions) with
Numba's settings that change the code but not its key (``NUMBA_BOUNDSCHECK``,
the vectorizers, the CPU asked for), so code compiled by another astgrad
(another helper, another rule it inlines) or under other settings is never
read.  Two implementations with one bytecode and other constants (a
lambda written per axis, a text compiled per rank) would share Numba's key:
each function's file is named by the hash of its whole code object, its
constants and nested code included.

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
        dispatcher._cache = _cache_class()(dispatcher.py_func, str(where / "helpers" / _stamp()[:16]))
    except Exception:  # noqa: BLE001 (any failure leaves the helper compiled in the process, never an error)
        return


def _code_hash(code) -> str:
    """A hash of everything a code object computes with: its bytecode, names and constants, nested code included.
    Not ``marshal``'s bytes, which mark objects by how many references they have: one function's differed
    from one process to the next, and it was never read back."""
    digest = hashlib.sha256()

    def add(code):
        digest.update(code.co_code)
        digest.update(repr((code.co_name, code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars,
                            code.co_argcount, code.co_kwonlyargcount, code.co_flags)).encode())
        for constant in code.co_consts:
            if isinstance(constant, types.CodeType):
                add(constant)
            elif isinstance(constant, frozenset):  # its order is the hashes' (strings': the process's seed)
                digest.update(repr(sorted(repr(item) for item in constant)).encode())
            else:
                digest.update(f"{type(constant).__name__}:{constant!r};".encode())
    add(code)
    return digest.hexdigest()[:20]


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

        def __init__(self, py_func, path):
            self._path = path
            self._py_file = py_func.__code__.co_filename  # Numba's warnings name it
            self._code = _code_hash(py_func.__code__)

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

        def __init__(self, py_func, path):  # Numba's, without its search of the locators
            self._lineno = py_func.__code__.co_firstlineno
            self._locator = _Locator(py_func, path)
            name = py_func.__qualname__.replace("<", "").replace(">", "")
            self._filename_base = self.get_filename_base(name, getattr(sys, "abiflags", ""))

        def check_cachable(self, cres):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return super().check_cachable(cres)

    class _Cache(caching.FunctionCache):
        """A helper's cache: every failure to read or write is a miss, never an error."""

        def __init__(self, py_func, path):
            self._impl_class = functools.partial(_Implementation, path=path)  # type: ignore[assignment]
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
