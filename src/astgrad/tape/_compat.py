"""What the tape needs of numpy's private modules, in one place.

numpy >= 2 keeps its floating-point error state in a context variable;
setting that variable directly costs a tenth of ``np.errstate``.  The
variable lives in the private ``numpy._core._ufunc_config``: when a numpy
release moves it, this file is the one to change, and older numpy falls
back to ``np.seterr``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

__all__ = ["IGNORE_ERRORS", "restore", "set_errors"]

try:  # numpy >= 2
    from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj  # type: ignore[attr-defined]

    #: ``token = set_errors(IGNORE_ERRORS)`` silences numpy's floating-point warnings (inf and nan are
    #: results, as in torch) until ``restore(token)``: two calls of the variable's own methods, spelled
    #: out at each use because a wrapper (a partial, a function) would double their cost per operation
    IGNORE_ERRORS: Any = _make_extobj(all="ignore")
    set_errors: Callable[[Any], Any] = _extobj_contextvar.set
    restore: Callable[[Any], Any] = _extobj_contextvar.reset
except ImportError:  # numpy 1.x
    IGNORE_ERRORS = "ignore"

    def set_errors(level):  # type: ignore[misc]  # one of two definitions, by numpy's version
        """Set every floating-point error to ``level``; returns a token for ``restore``."""
        return np.seterr(all=level)

    def restore(token) -> None:  # type: ignore[misc]
        np.seterr(**token)
