"""Derivative rules for numpy's polynomials of coefficient vectors: ``vander``, ``polyval`` and the ``poly*`` algebra.

Coefficients run from the highest power down, as numpy writes them.
``polyadd``/``polysub`` zero-pad the shorter vector in front, so each
gradient is the tail of the incoming one; ``polymul`` is ``np.convolve`` and
takes its rule (refused where numpy drops a leading zero coefficient); ``polyder`` and ``polyint`` are linear (coefficients times,
or over, their powers; ``polyint``'s constants ``k`` are the new last
coefficients).  ``vander`` and ``polyval`` are powers of ``x``: the slope of
``x ** p`` is ``p x ** (p - 1)``, written so that ``p = 0`` has slope 0 at
``x = 0`` (no ``0 ** -1``).
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp
from .convolution import convolve


def _powers(n, increasing=False):
    return np.arange(n) if increasing else np.arange(n - 1, -1, -1)


def _slopes(x, powers):
    """``p x ** (p - 1)`` for each power ``p`` along a new last axis, 0 for ``p = 0``."""
    return powers * np.expand_dims(x, -1) ** np.maximum(powers - 1, 0)


@defvjp(np.vander)
def vander(g, ans, x, N=None, increasing=False):
    powers = _powers(np.shape(ans)[1], increasing)
    return np.sum(g * _slopes(x, powers), axis=1)


@defjvp(np.vander)
def vander_jvp(t, ans, x, N=None, increasing=False):
    return np.expand_dims(t, -1) * _slopes(x, _powers(np.shape(ans)[1], increasing))


def _coefficients(p):
    """numpy's coefficient vector, refusing the ``np.poly1d`` objects whose gradient would lose their type."""
    if isinstance(p, np.poly1d):
        raise ValueError("astgrad: no gradient through a numpy.poly1d; pass its coefficients, p.coeffs")
    return p


@defvjp(np.polyval)
def polyval(g, ans, p, x):
    p = _coefficients(p)
    n = np.shape(p)[0]
    terms = np.expand_dims(x, -1) ** _powers(n)  # x ** p for each coefficient, along a new last axis
    g_p = np.tensordot(g * np.ones(np.shape(ans)), terms, axes=np.ndim(ans))
    g_x = g * np.sum(p * _slopes(x, _powers(n)), axis=-1)
    return g_p, g_x


def polyval_jvp_p(t, ans, p, x):
    return np.polyval(t, x)


def polyval_jvp_x(t, ans, p, x):
    return t * np.sum(_coefficients(p) * _slopes(x, _powers(np.shape(p)[0])), axis=-1)


defjvp(np.polyval, polyval_jvp_p, polyval_jvp_x)


def _tail(g, a):
    """The part of a padded sum's gradient that ``a`` (padded in front) was added into."""
    return np.reshape(g[np.size(g) - np.size(a):], np.shape(a))


@defvjp(np.polyadd)
def polyadd(g, ans, a1, a2):
    return _tail(g, _coefficients(a1)), _tail(g, _coefficients(a2))


@defvjp(np.polysub)
def polysub(g, ans, a1, a2):
    return _tail(g, _coefficients(a1)), -_tail(g, _coefficients(a2))


def polyadd_jvp_a1(t, ans, a1, a2):
    return np.polyadd(t, np.zeros(np.shape(a2)))


def polyadd_jvp_a2(t, ans, a1, a2):
    return np.polyadd(np.zeros(np.shape(a1)), t)


def polysub_jvp_a2(t, ans, a1, a2):
    return np.polysub(np.zeros(np.shape(a1)), t)


defjvp(np.polyadd, polyadd_jvp_a1, polyadd_jvp_a2)
defjvp(np.polysub, polyadd_jvp_a1, polysub_jvp_a2)


def _full_product(a1, a2, ans):
    """``polymul``'s factors as vectors; refused where numpy dropped leading zeros (the length would jump)."""
    a, b = np.atleast_1d(_coefficients(a1)), np.atleast_1d(_coefficients(a2))
    if np.size(ans) != np.size(a) + np.size(b) - 1:
        raise ValueError("astgrad: no gradient for numpy.polymul of coefficients with a leading zero (numpy drops "
                         "it, so the result's length jumps when it moves); use np.convolve(a1, a2)")
    return a, b


@defvjp(np.polymul)
def polymul(g, ans, a1, a2):
    a, b = _full_product(a1, a2, ans)
    g_a, g_b = convolve(g, ans, a, b)
    return np.reshape(g_a, np.shape(a1)), np.reshape(g_b, np.shape(a2))


def polymul_jvp_a1(t, ans, a1, a2):
    a, b = _full_product(a1, a2, ans)
    return np.convolve(np.atleast_1d(t), b)


def polymul_jvp_a2(t, ans, a1, a2):
    a, b = _full_product(a1, a2, ans)
    return np.convolve(a, np.atleast_1d(t))


defjvp(np.polymul, polymul_jvp_a1, polymul_jvp_a2)


@defvjp(np.polyder)
def polyder(g, ans, p, m=1):
    n = np.shape(_coefficients(p))[0]
    for length in range(n - m + 1, n + 1):  # undo the steps last first: each multiplied by the powers and dropped one
        g = np.concatenate([g * np.arange(length - 1, 0, -1), np.zeros(1, np.result_type(g))])
    return g


@defjvp(np.polyder)
def polyder_jvp(t, ans, p, m=1):
    return np.polyder(t, m)


def _constants(k, m):
    """``polyint``'s constants as numpy spreads them: one number for every step, or one per step."""
    return np.zeros(m) if k is None else np.atleast_1d(k) * np.ones(m)


@defvjp(np.polyint)
def polyint(g, ans, p, m=1, k=None):
    n = np.shape(_coefficients(p))[0]
    constants: list = []
    for length in range(n + m - 1, n - 1, -1):  # the last step first: it divided by the powers and added k[step]
        constants.insert(0, g[-1])
        g = g[:-1] / np.arange(length, 0, -1)
    g_k = None if k is None else np.stack(constants)
    if g_k is not None and np.size(k) == 1:
        g_k = np.reshape(np.sum(g_k), np.shape(k))
    return g, None, g_k


def polyint_jvp_p(t, ans, p, m=1, k=None):
    return np.polyint(t, m)


def polyint_jvp_k(t, ans, p, m=1, k=None):
    return np.polyint(np.zeros(np.shape(p)), m, _constants(t, m))


defjvp(np.polyint, polyint_jvp_p, None, polyint_jvp_k)
