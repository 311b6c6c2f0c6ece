"""Backends other than numpy that run the generated code (``grad(f, backend=...)``).

Each is an optional extra and imports its library only when a gradient asks
for it: ``import astgrad`` never imports Numba.
"""

from __future__ import annotations

import functools

from . import numba

#: the names ``backend=`` takes
BACKENDS = ("numpy", "numba", "auto")


def hook(backend, mode, composed=False):
    """What ``build(backend=...)`` takes for ``backend``: None for numpy; ValueError for an unknown name.

    ``composed``: the function is a generated gradient, whose generated code
    is differentiated again; only the numpy backend does that.
    """
    if backend == "numpy":
        return None
    if composed and backend in BACKENDS:
        raise ValueError(f"astgrad.{mode}: backend={backend!r} compiles the gradient of a function, not of a "
                         f"generated gradient; differentiate it with the numpy backend (the default)")
    if backend in ("numba", "auto"):
        return functools.partial(numba.attach, strict=backend == "numba")
    raise ValueError(f"astgrad.{mode}: backend={backend!r}; the backends are 'numpy' (the default), 'numba' "
                     f"(compiled by Numba, an error where it cannot) and 'auto' (Numba where it can, else numpy "
                     f"with a warning)")
