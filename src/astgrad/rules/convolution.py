"""Derivative rules for ``np.convolve`` and ``np.correlate``.

A convolution is bilinear: the gradient of each operand is the incoming
gradient, placed where this mode's output sits inside the full convolution,
convolved with the other operand reversed ("valid", so it comes back at the
operand's length).  No conjugation for complex values: the product is
holomorphic in each operand.  ``np.correlate(a, v)`` is ``np.convolve(a,
conj(v[::-1]))`` with its own placement of the output when ``v`` is the
longer, so its rule reuses convolve's and conjugates ``v``'s gradient.
``scipy_signal`` uses the same helpers for arrays of any rank.
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp


def real_for(grad, x):
    """A real argument's gradient is the real part of its complex gradient (docs/rules.md, complex numbers)."""
    return grad if np.iscomplexobj(x) else np.real(grad)


def placed(g, full_shape, starts):
    """Zeros of ``full_shape`` holding ``g`` from ``starts`` on: a mode's output inside the full convolution."""
    return np.pad(g, [(s, total - s - n) for s, total, n in zip(starts, full_shape, np.shape(g))])


def reversed_all(x):
    """``x`` reversed along every axis."""
    return x[(slice(None, None, -1),) * np.ndim(x)]


def numpy_start(n_a, n_v, mode, correlating=False):
    """Where ``np.convolve``'s (or ``np.correlate``'s) output of this mode starts inside the full one."""
    if mode == "full":
        return 0
    shorter = min(n_a, n_v)
    start = (shorter - 1) // 2 if mode == "same" else shorter - 1
    if correlating and n_a < n_v:  # numpy swaps the operands and reverses the result
        length = max(n_a, n_v) if mode == "same" else max(n_a, n_v) - shorter + 1
        return n_a + n_v - 1 - length - start
    return start


def _checked_mode(mode, name):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"astgrad: numpy.{name} with mode={mode!r}: write 'full', 'same' or 'valid'")
    return mode


def convolve_gradients(g, a, v, start):
    """The gradients of ``a`` and ``v`` of a 1-d convolution whose output starts at ``start`` of the full one."""
    full = placed(g, (len(a) + len(v) - 1,), (start,))
    return (real_for(np.convolve(full, v[::-1], "valid"), a),
            real_for(np.convolve(full, a[::-1], "valid"), v))


@defvjp(np.convolve)
def convolve(g, ans, a, v, mode="full"):
    start = numpy_start(len(a), len(v), _checked_mode(mode, "convolve"))
    return convolve_gradients(g, a, v, start)


@defvjp(np.correlate)
def correlate(g, ans, a, v, mode="valid"):
    start = numpy_start(len(a), len(v), _checked_mode(mode, "correlate"), correlating=True)
    reverse = np.conj(v[::-1])
    d_a, d_reverse = convolve_gradients(g, a, reverse, start)
    return d_a, real_for(np.conj(d_reverse[::-1]), v)


def convolve_jvp_a(t, ans, a, v, mode="full"):
    return np.convolve(t, v, mode)


def convolve_jvp_v(t, ans, a, v, mode="full"):
    return np.convolve(a, t, mode)


defjvp(np.convolve, convolve_jvp_a, convolve_jvp_v)


def correlate_jvp_a(t, ans, a, v, mode="valid"):
    return np.correlate(t, v, mode)


def correlate_jvp_v(t, ans, a, v, mode="valid"):
    return np.correlate(a, t, mode)  # conjugate-linear in v, as the tangent of conj(v) is conj(t)


defjvp(np.correlate, correlate_jvp_a, correlate_jvp_v)
