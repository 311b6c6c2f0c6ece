"""What the tape needs of numpy's private modules, in one place.

numpy >= 2 keeps its floating-point error state in a context variable;
setting that variable directly costs a tenth of ``np.errstate``.  The
variable lives in the private ``numpy._core._ufunc_config``: when a numpy
release moves it, this file is the one to change, and older numpy falls
back to ``np.seterr``.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

__all__ = ["quiet", "restore"]

try:  # numpy >= 2
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj  # type: ignore[attr-defined]

    _IGNORE_ERRORS = _make_extobj(all="ignore")

    #: quiet() silences numpy's floating-point warnings (inf and nan are results, as in torch) and
    #: returns a token for restore(token).
    quiet: Callable[[], Any] = functools.partial(_extobj_contextvar.set, _IGNORE_ERRORS)
    restore: Callable[[Any], Any] = _extobj_contextvar.reset
except ImportError:  # numpy 1.x
    def quiet():  # type: ignore[misc]  # one of two definitions, by numpy's version
        """Silence numpy's floating-point warnings (inf and nan are results, as in torch); returns a token."""
        return np.seterr(all="ignore")

    def restore(token) -> None:  # type: ignore[misc]
        np.seterr(**token)
