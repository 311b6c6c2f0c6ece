"""Rules of the functions that take complex numbers apart.

The table's convention (docs/rules.md, "Complex numbers"): the gradient that
flows through a complex value ``w = u + iv`` is ``dL/du - i dL/dv``, so a
holomorphic ``f`` passes ``g * f'(z)`` on and only the functions that are not
holomorphic (these, ``abs``, norms, ``vdot``, variance) conjugate.
Their forward rules are real linear maps of the tangent.
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp


@defvjp(np.conjugate)
def conjugate(g, ans, x):
    return np.conj(g)


@defvjp(np.real)
def real(g, ans, val):
    return np.real(g) * np.ones_like(val)


@defvjp(np.imag)
def imag(g, ans, val):
    return np.real(g) * -1j * np.ones_like(val)


@defvjp(np.angle)
def angle(g, ans, z, deg=False):
    scale = 180 / np.pi if deg else 1.0
    return -1j * np.real(g) * scale * np.conj(z) / np.abs(z) ** 2


@defvjp(np.real_if_close)
def real_if_close(g, ans, a, tol=100):
    """The real part when numpy dropped a negligible imaginary part (as ``np.real``), else the identity."""
    return np.real(g) if np.iscomplexobj(a) and not np.iscomplexobj(ans) else g


@defjvp(np.conjugate)
def conjugate_jvp(t, ans, x):
    return np.conj(t)


@defjvp(np.real)
def real_jvp(t, ans, val):
    return np.real(t)


@defjvp(np.imag)
def imag_jvp(t, ans, val):
    return np.imag(t)


@defjvp(np.angle)
def angle_jvp(t, ans, z, deg=False):
    scale = 180 / np.pi if deg else 1.0
    return scale * np.imag(np.conj(z) * t) / np.abs(z) ** 2


@defjvp(np.real_if_close)
def real_if_close_jvp(t, ans, a, tol=100):
    return np.real(t) if np.iscomplexobj(a) and not np.iscomplexobj(ans) else t
