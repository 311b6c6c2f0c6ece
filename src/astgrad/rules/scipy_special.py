"""Derivative rules for ``scipy.special``, registered once a program imports it (``_deferred``).

Most of scipy.special are numpy ufuncs: the taped Tensor meets them in
``__array_ufunc__`` as it meets ``np.sin``, and generated code calls them
and inlines these rules.  ``logsumexp``, ``softmax``, ``log_softmax``,
``polygamma`` and ``zeta`` are Python functions: generated code treats them
as primitives too; on the tape call them through ``astgrad.rules.apply``.

A function differentiable in some arguments only (the order ``v`` of the
Bessel functions, the shape ``a`` of ``gammainc``, the exponent of
``zeta``) gets :func:`refused` for the others: asking for that gradient is
an error naming the function, never a zero.  A unary function's Jacobian
is diagonal, so its reverse rule is registered again as its forward rule.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ._registry import defjvp, defvjp
from ._support import expand_reduced

_SQRT_PI = float(np.sqrt(np.pi))
_SQRT_2PI = float(np.sqrt(2 * np.pi))


def refused(argument, function):
    """Raise: ``function`` has no gradient rule in ``argument``; called only when that gradient is wanted."""
    raise ValueError(f"astgrad: {function} has no gradient in its argument {argument} (scipy gives no derivative "
                     f"in it); pass a constant there, or register a rule with astgrad.defvjp({function}, rule)")


# ---------------------------------------------------------------- gamma and friends


@defvjp(special.gammaln)
def gammaln(g, ans, x):
    return g * special.digamma(x)


@defvjp(special.gamma)
def gamma(g, ans, x):
    return g * ans * special.digamma(x)


@defvjp(special.digamma)
def digamma(g, ans, x):
    if np.iscomplexobj(x):  # scipy's polygamma takes real numbers only
        raise ValueError("astgrad: no gradient for scipy.special.digamma of complex numbers")
    return g * special.polygamma(1, x)


@defvjp(special.polygamma)
def polygamma(g, ans, n, x):
    return refused("n", "scipy.special.polygamma"), g * special.polygamma(n + 1, x)


@defvjp(special.beta)
def beta(g, ans, a, b):
    both = special.digamma(a + b)
    return g * ans * (special.digamma(a) - both), g * ans * (special.digamma(b) - both)


@defvjp(special.betaln)
def betaln(g, ans, a, b):
    both = special.digamma(a + b)
    return g * (special.digamma(a) - both), g * (special.digamma(b) - both)


@defvjp(special.zeta)
def zeta(g, ans, x, q=None, out=None):
    """Hurwitz zeta: ``d/dq zeta(x, q) = -x zeta(x + 1, q)``; none in ``x``."""
    return refused("x", "scipy.special.zeta"), -g * x * special.zeta(x + 1, q)


@defvjp(special.gammainc)
def gammainc(g, ans, a, x):
    return refused("a", "scipy.special.gammainc"), g * np.exp((a - 1) * np.log(x) - x - special.gammaln(a))


@defvjp(special.gammaincc)
def gammaincc(g, ans, a, x):
    return refused("a", "scipy.special.gammaincc"), -g * np.exp((a - 1) * np.log(x) - x - special.gammaln(a))


# ---------------------------------------------------------------- error functions and the normal


@defvjp(special.erf)
def erf(g, ans, x):
    return g * (2 / _SQRT_PI) * np.exp(-x * x)


@defvjp(special.erfc)
def erfc(g, ans, x):
    return -g * (2 / _SQRT_PI) * np.exp(-x * x)


@defvjp(special.erfinv)
def erfinv(g, ans, x):
    return g * (_SQRT_PI / 2) * np.exp(ans * ans)


@defvjp(special.erfcinv)
def erfcinv(g, ans, x):
    return -g * (_SQRT_PI / 2) * np.exp(ans * ans)


@defvjp(special.ndtr)
def ndtr(g, ans, x):
    return g * np.exp(-x * x / 2) / _SQRT_2PI


@defvjp(special.ndtri)
def ndtri(g, ans, x):
    return g * _SQRT_2PI * np.exp(ans * ans / 2)


@defvjp(special.log_ndtr)
def log_ndtr(g, ans, x):
    return g * np.exp(-x * x / 2 - ans) / _SQRT_2PI  # the normal density over its cdf, without 0/0 in the tail


# ---------------------------------------------------------------- logistic, entropies


@defvjp(special.expit)
def expit(g, ans, x):
    return g * ans * (1 - ans)


@defvjp(special.logit)
def logit(g, ans, x):
    return g / (x * (1 - x))


@defvjp(special.xlogy)
def xlogy(g, ans, x, y):
    return g * np.log(y), g * np.where(x == 0, 0, x / np.where(x == 0, 1, y))


@defvjp(special.xlog1py)
def xlog1py(g, ans, x, y):
    return g * np.log1p(y), g * np.where(x == 0, 0, x / np.where(x == 0, 1, 1 + y))


@defvjp(special.entr)
def entr(g, ans, x):
    return -g * (np.log(x) + 1)


@defvjp(special.rel_entr)
def rel_entr(g, ans, x, y):
    return g * (np.log(x / y) + 1), -g * x / y


# ---------------------------------------------------------------- Bessel functions (in x, not the order v)


@defvjp(special.i0)
def i0(g, ans, x):
    return g * special.i1(x)


@defvjp(special.i1)
def i1(g, ans, x):
    return g * (special.i0(x) + special.iv(2, x)) / 2


@defvjp(special.i0e)
def i0e(g, ans, x):
    return g * (special.i1e(x) - np.sign(x) * ans)


@defvjp(special.i1e)
def i1e(g, ans, x):
    return g * ((special.i0e(x) + special.ive(2, x)) / 2 - np.sign(x) * ans)


@defvjp(special.iv)
def iv(g, ans, v, x):
    return refused("v", "scipy.special.iv"), g * (special.iv(v - 1, x) + special.iv(v + 1, x)) / 2


@defvjp(special.ive)
def ive(g, ans, v, x):
    return refused("v", "scipy.special.ive"), g * ((special.ive(v - 1, x) + special.ive(v + 1, x)) / 2
                                                    - np.sign(x) * ans)


@defvjp(special.jv)
def jv(g, ans, v, x):
    return refused("v", "scipy.special.jv"), g * (special.jv(v - 1, x) - special.jv(v + 1, x)) / 2


@defvjp(special.yv)
def yv(g, ans, v, x):
    return refused("v", "scipy.special.yv"), g * (special.yv(v - 1, x) - special.yv(v + 1, x)) / 2


@defvjp(special.kv)
def kv(g, ans, v, x):
    return refused("v", "scipy.special.kv"), -g * (special.kv(v - 1, x) + special.kv(v + 1, x)) / 2


# ---------------------------------------------------------------- reductions over an axis


@defvjp(special.logsumexp)
def logsumexp(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:
        raise ValueError("astgrad: no gradient for scipy.special.logsumexp(..., return_sign=True); "
                         "differentiate it with return_sign=False")
    shape = np.shape(a) if b is None else np.broadcast_shapes(np.shape(a), np.shape(b))
    weights = np.exp(a - expand_reduced(ans, shape, axis, keepdims))  # exp(a) / sum(b exp(a))
    spread = expand_reduced(g, shape, axis, keepdims)
    if b is None:
        return spread * weights
    return spread * b * weights, None, spread * weights


@defvjp(special.softmax)
def softmax(g, ans, x, axis=None):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True))


@defvjp(special.log_softmax)
def log_softmax(g, ans, x, axis=None):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)


# ---------------------------------------------------------------- forward rules
# a unary function's reverse rule g * f'(x) is its forward rule

for _fn, _rule in ((special.gammaln, gammaln), (special.gamma, gamma), (special.digamma, digamma),
                   (special.erf, erf), (special.erfc, erfc), (special.erfinv, erfinv), (special.erfcinv, erfcinv),
                   (special.ndtr, ndtr), (special.ndtri, ndtri), (special.log_ndtr, log_ndtr),
                   (special.expit, expit), (special.logit, logit), (special.entr, entr), (special.i0, i0),
                   (special.i1, i1), (special.i0e, i0e), (special.i1e, i1e)):
    defjvp(_fn, _rule)


def polygamma_jvp_x(t, ans, n, x):
    return t * special.polygamma(n + 1, x)


def polygamma_jvp_n(t, ans, n, x):
    return refused("n", "scipy.special.polygamma")


def beta_jvp_a(t, ans, a, b):
    return t * ans * (special.digamma(a) - special.digamma(a + b))


def beta_jvp_b(t, ans, a, b):
    return t * ans * (special.digamma(b) - special.digamma(a + b))


def betaln_jvp_a(t, ans, a, b):
    return t * (special.digamma(a) - special.digamma(a + b))


def betaln_jvp_b(t, ans, a, b):
    return t * (special.digamma(b) - special.digamma(a + b))


def zeta_jvp_x(t, ans, x, q=None, out=None):
    return refused("x", "scipy.special.zeta")


def zeta_jvp_q(t, ans, x, q=None, out=None):
    return -t * x * special.zeta(x + 1, q)


def gammainc_jvp_a(t, ans, a, x):
    return refused("a", "scipy.special.gammainc")


def gammaincc_jvp_a(t, ans, a, x):
    return refused("a", "scipy.special.gammaincc")


def gammainc_jvp_x(t, ans, a, x):
    return t * np.exp((a - 1) * np.log(x) - x - special.gammaln(a))


def gammaincc_jvp_x(t, ans, a, x):
    return -t * np.exp((a - 1) * np.log(x) - x - special.gammaln(a))


def xlogy_jvp_x(t, ans, x, y):
    return t * np.log(y)


def xlogy_jvp_y(t, ans, x, y):
    return t * np.where(x == 0, 0, x / np.where(x == 0, 1, y))


def xlog1py_jvp_x(t, ans, x, y):
    return t * np.log1p(y)


def xlog1py_jvp_y(t, ans, x, y):
    return t * np.where(x == 0, 0, x / np.where(x == 0, 1, 1 + y))


def rel_entr_jvp_x(t, ans, x, y):
    return t * (np.log(x / y) + 1)


def rel_entr_jvp_y(t, ans, x, y):
    return -t * x / y


def bessel_order_jvp(t, ans, v, x):
    return refused("v", "the Bessel functions of scipy.special (iv, ive, jv, yv, kv)")


def iv_jvp_x(t, ans, v, x):
    return t * (special.iv(v - 1, x) + special.iv(v + 1, x)) / 2


def ive_jvp_x(t, ans, v, x):
    return t * ((special.ive(v - 1, x) + special.ive(v + 1, x)) / 2 - np.sign(x) * ans)


def jv_jvp_x(t, ans, v, x):
    return t * (special.jv(v - 1, x) - special.jv(v + 1, x)) / 2


def yv_jvp_x(t, ans, v, x):
    return t * (special.yv(v - 1, x) - special.yv(v + 1, x)) / 2


def kv_jvp_x(t, ans, v, x):
    return -t * (special.kv(v - 1, x) + special.kv(v + 1, x)) / 2


def logsumexp_jvp_a(t, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:
        raise ValueError("astgrad: no tangent for scipy.special.logsumexp(..., return_sign=True)")
    shape = np.shape(a) if b is None else np.broadcast_shapes(np.shape(a), np.shape(b))
    weights = np.exp(a - expand_reduced(ans, shape, axis, keepdims))
    return np.sum(t * weights if b is None else t * b * weights, axis=axis, keepdims=keepdims)


def logsumexp_jvp_b(t, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    if return_sign:
        raise ValueError("astgrad: no tangent for scipy.special.logsumexp(..., return_sign=True)")
    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    return np.sum(t * np.exp(a - expand_reduced(ans, shape, axis, keepdims)), axis=axis, keepdims=keepdims)


def softmax_jvp(t, ans, x, axis=None):
    return ans * (t - np.sum(t * ans, axis=axis, keepdims=True))


def log_softmax_jvp(t, ans, x, axis=None):
    return t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)


defjvp(special.polygamma, polygamma_jvp_n, polygamma_jvp_x)
defjvp(special.beta, beta_jvp_a, beta_jvp_b)
defjvp(special.betaln, betaln_jvp_a, betaln_jvp_b)
defjvp(special.zeta, zeta_jvp_x, zeta_jvp_q)
defjvp(special.gammainc, gammainc_jvp_a, gammainc_jvp_x)
defjvp(special.gammaincc, gammaincc_jvp_a, gammaincc_jvp_x)
defjvp(special.xlogy, xlogy_jvp_x, xlogy_jvp_y)
defjvp(special.xlog1py, xlog1py_jvp_x, xlog1py_jvp_y)
defjvp(special.rel_entr, rel_entr_jvp_x, rel_entr_jvp_y)
defjvp(special.iv, bessel_order_jvp, iv_jvp_x)
defjvp(special.ive, bessel_order_jvp, ive_jvp_x)
defjvp(special.jv, bessel_order_jvp, jv_jvp_x)
defjvp(special.yv, bessel_order_jvp, yv_jvp_x)
defjvp(special.kv, bessel_order_jvp, kv_jvp_x)
defjvp(special.logsumexp, logsumexp_jvp_a, None, logsumexp_jvp_b)
defjvp(special.softmax, softmax_jvp)
defjvp(special.log_softmax, log_softmax_jvp)
