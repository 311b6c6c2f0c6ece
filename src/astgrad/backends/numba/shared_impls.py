"""One implementation of each of astgrad's overloads per kind of arguments, whichever compiled function calls it.

Numba keeps the implementations of an overload under a key of the argument
types and of the calling function's compile flags, all of them.  What it
compiles depends on only some: the flags a CPU compile takes from its
caller (``inherit_if_not_set`` in ``CPUTargetOptions.finalize``: the runtime
``nrt``, ``fastmath``, ``error_model``, ``forceinline``); the others are the
implementation's own (astgrad's are compiled without the wrappers for calls
from Python and C) or its defaults (``boundscheck``).  A gradient's entry is
compiled with a wrapper for Python's call, its callees without one, so a
helper called from both was compiled twice into the same machine code
(``zeros_like_gradient``, ``unbroadcast``'s same-rank sum, ``is_zero``...:
S3's first call compiled six helpers twice).

``share_impls`` keys astgrad's overloads by the inherited flags alone, read
from Numba's own ``finalize`` (its source names them); where that source
cannot be read, or names a flag this module does not know to be inherited
only, nothing is changed.  Two callers that differ in an inherited flag (a
fused loop compiled with numpy's error model, an entry with Python's) still
get an implementation each.
"""

from __future__ import annotations

import inspect
import re

#: the flags a CPU compile may take from its caller, by the Numba versions astgrad was measured with
_KNOWN_INHERITED = frozenset({"nrt", "fastmath", "error_model", "forceinline"})

_installed = False


def share_impls() -> None:
    """Key the implementations of astgrad's overloads by their caller's inherited flags only (once; a Numba whose
    templates or target options differ from the ones read here keeps its own keys)."""
    global _installed
    if _installed:
        return
    _installed = True
    inherited = inherited_flags()
    if inherited is None:
        return
    from numba.core import targetconfig
    from numba.core.typing import templates
    template = getattr(templates, "_OverloadFunctionTemplate", None)
    original = getattr(template, "_get_impl", None)
    if template is None or original is None or not hasattr(template, "_build_impl"):
        return

    def _get_impl(self, args, kws):
        if not str(getattr(self._overload_func, "__module__", "")).startswith("astgrad."):
            return original(self, args, kws)
        flags = targetconfig.ConfigStack.top_or_none()
        taken = None if flags is None else tuple((name, _hashable(getattr(flags, name))) for name in inherited)
        cache_key = self.context, tuple(args), tuple(kws.items()), ("astgrad: inherited flags", taken)
        try:
            return self._impl_cache[cache_key]
        except KeyError:
            pass
        return self._build_impl(cache_key, args, kws)

    template._get_impl = _get_impl


def inherited_flags():
    """The names of the flags Numba's CPU target takes from the calling function (sorted), or None where its
    ``finalize`` cannot be read or may take one not known to be only that (``inherited_in``)."""
    try:
        from numba.core.cpu import CPUTargetOptions
        source = inspect.getsource(CPUTargetOptions.finalize)
    except (ImportError, AttributeError, OSError, TypeError):
        return None
    return inherited_in(source)


def inherited_in(source):
    """The flags ``source`` (a ``finalize`` method's) passes to ``inherit_if_not_set``, sorted; None where it names
    none, names one outside ``_KNOWN_INHERITED``, or inherits some other way (the word anywhere else)."""
    names = set(re.findall(r"inherit_if_not_set\(\s*[\"'](\w+)[\"']", source))
    if not names or not names <= _KNOWN_INHERITED or "inherit" in re.sub(r"inherit_if_not_set\(\s*[\"']\w+[\"']", "", source):
        return None
    return tuple(sorted(names))


def _hashable(value):
    """A flag's value as a key: fastmath's options compare by their set of flags and have no hash."""
    flags = getattr(value, "flags", None)
    return ("flags", tuple(sorted(flags))) if isinstance(flags, (set, frozenset)) else value
