"""``backend="numba"``: the generated adjoint compiled by Numba in nopython mode.

lower.py rewrites the numpy module into the subset Numba compiles,
helpers.py gives the runtime helpers Numba implementations, compiled.py
compiles the module and runs it (the pipeline's backend hook, ``attach``).
"""

from .compiled import attach, available

__all__ = ["attach", "available"]
