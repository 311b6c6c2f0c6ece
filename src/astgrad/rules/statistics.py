"""Derivative rules for ``np.cov`` and ``np.corrcoef``.

``np.cov`` stacks its variables as rows ``X`` (``m``, then ``y``; columns
with ``rowvar=False``), centres each row on its weighted mean and returns
``C = Xc W Xc^T / f`` with ``W`` the observation weights (``fweights``
times ``aweights``, else ones) and ``f`` the normalisation numpy computes
from ``ddof``, ``bias`` and the weights.  Centering drops out of the
gradient (``Xc w = 0``), so ``X`` gets ``(G + G^T) Xc W / f``.  The
``aweights`` get ``(x_k^T G x_k - <G, C> df/da_k) / f`` per observation (the
mean moves with them, but that term vanishes for the same reason);
``fweights`` are integer counts and get none.  ``np.corrcoef`` divides
``C`` by ``sqrt(C_ii C_jj)``, and its rule sends ``G / sqrt(C_ii C_jj)``
less the diagonal terms of that division on to ``np.cov``'s.  Complex data
is refused: its covariance conjugates one factor and has no rule yet.
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp


def _rows(a, rowvar):
    """One data argument of ``np.cov`` as numpy reads it: a 2-D array with the variables as rows."""
    if np.iscomplexobj(a):
        raise ValueError("astgrad: no gradient for numpy.cov or numpy.corrcoef of complex data; "
                         "write the centred products yourself (x - x.mean(1, keepdims=True)) @ y.conj().T / (n - 1)")
    x = np.reshape(a, (1, -1)) if np.ndim(a) < 2 else a
    return x if rowvar or np.shape(x)[0] == 1 else np.transpose(x)


def _variables(m, y, rowvar):
    x = _rows(m, rowvar)
    return x if y is None else np.concatenate([x, _rows(y, rowvar)], axis=0)


def _back_to(g_rows, a, rowvar):
    """The gradient of ``_rows(a, rowvar)`` carried back to ``a``'s own shape."""
    if not rowvar and np.ndim(a) == 2 and np.shape(a)[0] != 1:
        g_rows = np.transpose(g_rows)
    return np.reshape(g_rows, np.shape(a))


def _weights(fweights, aweights):
    """The observations' weights, ``None`` when there are none."""
    if fweights is None:
        return None if aweights is None else aweights * 1.0
    return fweights * 1.0 if aweights is None else fweights * aweights


def _normalisation(n, w, aweights, bias, ddof):
    """numpy's divisor ``f`` of the centred products."""
    if ddof is None:
        ddof = 0 if bias else 1
    if w is None:
        return n - ddof
    total = np.sum(w)
    if ddof == 0:
        return total
    if aweights is None:
        return total - ddof
    return total - ddof * np.sum(w * aweights) / total


def _centred(x, w):
    mean = np.mean(x, axis=1, keepdims=True) if w is None else np.sum(x * w, axis=1, keepdims=True) / np.sum(w)
    return x - mean


def _square(g, k):
    return np.reshape(g, (k, k))


@defvjp(np.cov)
def cov(g, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    x = _variables(m, y, rowvar)
    w = _weights(fweights, aweights)
    f = _normalisation(np.shape(x)[1], w, aweights, bias, ddof)
    xc = _centred(x, w)
    g = _square(g, np.shape(x)[0])
    g_x = (g + np.transpose(g)) @ xc / f
    if w is not None:
        g_x = g_x * w
    head = np.shape(_rows(m, rowvar))[0]
    g_m = _back_to(g_x[:head], m, rowvar)
    g_y = None if y is None else _back_to(g_x[head:], y, rowvar)
    g_aweights = None
    if aweights is not None:
        counts = 1.0 if fweights is None else fweights
        moved = np.sum(xc * (g @ xc), axis=0)  # x_k^T G x_k for each observation k
        c = _square(ans, np.shape(x)[0])
        g_aweights = (counts * moved - np.sum(g * c) * _normalisation_slope(w, aweights, counts, bias, ddof)) / f
    return g_m, g_y, None, None, None, None, g_aweights


def _normalisation_slope(w, aweights, counts, bias, ddof):
    """``df/da_k``: how numpy's divisor moves with each analytic weight."""
    if ddof is None:
        ddof = 0 if bias else 1
    if ddof == 0:
        return counts * np.ones(np.shape(aweights))
    total, squares = np.sum(w), np.sum(w * aweights)
    return counts - ddof * counts * (2 * aweights * total - squares) / total ** 2


def cov_jvp_m(t, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    return _cov_tangent(_variables(t, None if y is None else np.zeros(np.shape(y)), rowvar), ans, m, y, rowvar,
                        bias, ddof, fweights, aweights)


def cov_jvp_y(t, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, dtype=None):
    return _cov_tangent(_variables(np.zeros(np.shape(m)), t, rowvar), ans, m, y, rowvar, bias, ddof, fweights,
                        aweights)


def _cov_tangent(dx, ans, m, y, rowvar, bias, ddof, fweights, aweights):
    x = _variables(m, y, rowvar)
    w = _weights(fweights, aweights)
    f = _normalisation(np.shape(x)[1], w, aweights, bias, ddof)
    xc = _centred(x, w)
    weighted = xc if w is None else xc * w
    half = weighted @ np.transpose(dx)
    return np.reshape((half + np.transpose(half)) / f, np.shape(ans))


def cov_jvp_aweights(t, ans, m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
                     dtype=None):
    x = _variables(m, y, rowvar)
    w = _weights(fweights, aweights)
    f = _normalisation(np.shape(x)[1], w, aweights, bias, ddof)
    xc = _centred(x, w)
    counts = 1.0 if fweights is None else fweights
    c = _square(ans, np.shape(x)[0])
    slope = np.sum(t * _normalisation_slope(w, aweights, counts, bias, ddof))
    return np.reshape(((xc * (counts * t)) @ np.transpose(xc) - c * slope) / f, np.shape(ans))


defjvp(np.cov, cov_jvp_m, cov_jvp_y, None, None, None, None, cov_jvp_aweights)


def _correlation_parts(x, y, rowvar):
    k = np.shape(_variables(x, y, rowvar))[0]
    c = _square(np.cov(x, y, rowvar), k)
    spread = np.sqrt(np.diagonal(c))
    return c, np.outer(spread, spread)


@defvjp(np.corrcoef)
def corrcoef(g, ans, x, y=None, rowvar=True, dtype=None):
    c, scale = _correlation_parts(x, y, rowvar)
    g = _square(g, np.shape(c)[0])
    r = c / scale
    # r_ij = c_ij / sqrt(c_ii c_jj): the diagonal of c moves every entry of its row and column
    along = np.sum(g * r, axis=1) + np.sum(g * r, axis=0)
    g_c = g / scale - np.diag(along / (2 * np.diagonal(c)))
    return cov(g_c, c, x, y, rowvar)[:2]


def _corrcoef_tangent(dc, c, scale):
    r = c / scale
    d = np.diagonal(dc) / (2 * np.diagonal(c))
    return dc / scale - r * (d[:, None] + d[None, :])


def corrcoef_jvp_x(t, ans, x, y=None, rowvar=True, dtype=None):
    c, scale = _correlation_parts(x, y, rowvar)
    dc = np.reshape(cov_jvp_m(t, c, x, y, rowvar), np.shape(c))
    return np.reshape(_corrcoef_tangent(dc, c, scale), np.shape(ans))


def corrcoef_jvp_y(t, ans, x, y=None, rowvar=True, dtype=None):
    c, scale = _correlation_parts(x, y, rowvar)
    dc = np.reshape(cov_jvp_y(t, c, x, y, rowvar), np.shape(c))
    return np.reshape(_corrcoef_tangent(dc, c, scale), np.shape(ans))


defjvp(np.corrcoef, corrcoef_jvp_x, corrcoef_jvp_y)
