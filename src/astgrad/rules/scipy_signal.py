"""Derivative rules for ``scipy.signal.convolve`` and ``correlate``, registered once a program imports scipy.signal.

Both take arrays of any (equal) rank; the output of a mode sits centred in
the full convolution (scipy's own placement, also when ``valid`` swaps the
operands).  The gradient of each operand is the incoming gradient placed
there, convolved with the other operand reversed along every axis
(``valid``): no conjugation, the product being holomorphic in each operand.
``correlate(in1, in2)`` is ``convolve(in1, conj(in2) reversed)`` in every
mode, as scipy documents it, so its rule reuses convolve's.  Both are
linear in each operand: a forward rule is the function applied to the
tangent.
"""

from __future__ import annotations

import numpy as np
from scipy import signal

from ._registry import defjvp, defvjp
from .convolution import placed, real_for, reversed_all


def _checked_mode(mode, name):
    if mode not in ("full", "same", "valid"):
        raise ValueError(f"astgrad: scipy.signal.{name} with mode={mode!r}: write 'full', 'same' or 'valid'")


def convolve_gradients(g, ans, in1, in2, method):
    """The gradients of ``in1`` and ``in2`` of ``signal.convolve`` with the output ``ans`` of some mode."""
    in1, in2 = np.asarray(in1), np.asarray(in2)
    full_shape = tuple(n1 + n2 - 1 for n1, n2 in zip(np.shape(in1), np.shape(in2)))
    starts = [(n - k) // 2 for n, k in zip(full_shape, np.shape(ans))]
    full = placed(g, full_shape, starts)
    return (real_for(signal.convolve(full, reversed_all(in2), "valid", method), in1),
            real_for(signal.convolve(full, reversed_all(in1), "valid", method), in2))


def convolve(g, ans, in1, in2, mode="full", method="auto"):
    _checked_mode(mode, "convolve")
    return convolve_gradients(g, ans, in1, in2, method)


def correlate(g, ans, in1, in2, mode="full", method="auto"):
    _checked_mode(mode, "correlate")
    d_in1, d_reverse = convolve_gradients(g, ans, in1, reversed_all(np.conj(in2)), method)
    return d_in1, real_for(reversed_all(np.conj(d_reverse)), in2)


def convolve_jvp_in1(t, ans, in1, in2, mode="full", method="auto"):
    return signal.convolve(t, in2, mode, method)


def convolve_jvp_in2(t, ans, in1, in2, mode="full", method="auto"):
    return signal.convolve(in1, t, mode, method)


def correlate_jvp_in1(t, ans, in1, in2, mode="full", method="auto"):
    return signal.correlate(t, in2, mode, method)


def correlate_jvp_in2(t, ans, in1, in2, mode="full", method="auto"):
    return signal.correlate(in1, t, mode, method)  # conjugate-linear in in2: the tangent of conj(in2) is conj(t)


defvjp(signal.convolve, convolve, name="scipy.signal.convolve")
defjvp(signal.convolve, convolve_jvp_in1, convolve_jvp_in2)
defvjp(signal.correlate, correlate, name="scipy.signal.correlate")
defjvp(signal.correlate, correlate_jvp_in1, correlate_jvp_in2)
