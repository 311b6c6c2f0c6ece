"""Rules of the functions that take complex numbers apart.

The table's convention (docs/rules.md, "Complex numbers"): the gradient that
flows through a complex value ``w = u + iv`` is ``dL/du - i dL/dv``, so a
holomorphic ``f`` passes ``g * f'(z)`` on and only the functions that are not
holomorphic (these, ``abs``, norms, ``vdot``, variance) conjugate.
"""

from __future__ import annotations

import numpy as np

from ._registry import defvjp


@defvjp(np.conjugate)
def conjugate(g, ans, x):
    return np.conj(g)


@defvjp(np.real)
def real(g, ans, val):
    return np.real(g) * np.ones_like(val)


@defvjp(np.imag)
def imag(g, ans, val):
    return np.real(g) * -1j * np.ones_like(val)
