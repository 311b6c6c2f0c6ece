"""Derivative rules for the distributions of ``scipy.stats``, registered once a program imports it.

``scipy.stats.norm.cdf`` is a method of the module-level object ``norm``;
the table holds the bound method (equal, and of equal hash, for every
``norm.cdf`` read), so generated code that calls ``norm.cdf(d1)`` finds
this rule.  Each rule gives the gradient in the argument and in every
parameter as scipy orders them: ``norm.logpdf(x, loc=0, scale=1)``,
``t.logpdf(x, df, loc=0, scale=1)``, ``poisson.logpmf(k, mu, loc=0)``.
The count ``k`` of a discrete distribution and its shift ``loc`` get none.

A location-scale family is its standard density at ``z = (x - loc) / scale``:
each family gives the derivative of its standard log density (its score)
and the log density itself, and one helper per method turns them into the
gradients in ``x``, ``loc`` and ``scale``.  These functions are elementwise,
so an argument's forward rule is the reverse rule's gradient for that
argument with the tangent in place of ``g`` (``elementwise_jvp``).
A frozen distribution's method (``D.logpdf`` for ``D = norm(0.5, 2.0)``
made outside the differentiated function, or ``dirichlet(alpha)``) gets its
distribution's rule with the frozen parameters passed along: a gradient in ``x`` only, the parameters
being constants there.  Freezing inside the function, ``norm(mu, s)`` with
``mu`` differentiated, is refused at that call (its message says to write
``norm.logpdf(x, mu, s)``).
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np
from scipy import special, stats

from . import _registry
from ._registry import Rule, defjvp, defvjp
from .linalg import T, one_triangle

_LOG_SQRT_2PI = float(0.5 * np.log(2 * np.pi))


# ---------------------------------------------------------------- standard densities: log density and score


def norm_log_density(z):
    return -z * z / 2 - _LOG_SQRT_2PI


def norm_score(z):
    return -z


def expon_log_density(z):
    return np.where(z >= 0, -z, -np.inf)


def expon_score(z):
    return np.where(z >= 0, -1.0, 0.0)


def laplace_log_density(z):
    return -np.abs(z) - np.log(2.0)


def laplace_score(z):
    return -np.sign(z)


def logistic_log_density(z):
    return -np.abs(z) - 2 * np.log1p(np.exp(-np.abs(z)))


def logistic_score(z):
    return -np.tanh(z / 2)


# ---------------------------------------------------------------- one helper per method of a location-scale family


def logpdf_gradients(g, z, scale, score):
    """``(x, loc, scale)`` gradients of ``log f(z) - log(scale)``, ``score`` the derivative of ``log f`` at ``z``."""
    dz = g * score / scale
    return dz, -dz, -(dz * z + g / scale)


def cdf_gradients(g, z, scale, log_density):
    """``(x, loc, scale)`` gradients of ``F(z)``: the density at ``z`` (``log_density``, its log) over ``scale``."""
    dz = g * np.exp(log_density) / scale
    return dz, -dz, -dz * z


def logcdf_gradients(g, ans, z, scale, log_density):
    """``(x, loc, scale)`` gradients of ``log F(z)`` (or ``log S(z)`` with ``-g``): density over ``F``, in logs."""
    dz = g * np.exp(log_density - ans) / scale
    return dz, -dz, -dz * z


# ---------------------------------------------------------------- the normal, written out


def norm_logpdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g, z, scale, norm_score(z))


def norm_pdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g * ans, z, scale, norm_score(z))


def norm_cdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(g, z, scale, norm_log_density(z))


def norm_sf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(-g, z, scale, norm_log_density(z))


def norm_logcdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(g, ans, z, scale, norm_log_density(z))


def norm_logsf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(-g, ans, z, scale, norm_log_density(z))


def expon_logpdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g, z, scale, expon_score(z))


def expon_pdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g * ans, z, scale, expon_score(z))


def expon_cdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(g, z, scale, expon_log_density(z))


def expon_sf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(-g, z, scale, expon_log_density(z))


def expon_logcdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(g, ans, z, scale, expon_log_density(z))


def expon_logsf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(-g, ans, z, scale, expon_log_density(z))


def laplace_logpdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g, z, scale, laplace_score(z))


def laplace_pdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g * ans, z, scale, laplace_score(z))


def laplace_cdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(g, z, scale, laplace_log_density(z))


def laplace_sf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(-g, z, scale, laplace_log_density(z))


def laplace_logcdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(g, ans, z, scale, laplace_log_density(z))


def laplace_logsf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(-g, ans, z, scale, laplace_log_density(z))


def logistic_logpdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g, z, scale, logistic_score(z))


def logistic_pdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logpdf_gradients(g * ans, z, scale, logistic_score(z))


def logistic_cdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(g, z, scale, logistic_log_density(z))


def logistic_sf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return cdf_gradients(-g, z, scale, logistic_log_density(z))


def logistic_logcdf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(g, ans, z, scale, logistic_log_density(z))


def logistic_logsf(g, ans, x, loc=0, scale=1):
    z = (x - loc) / scale
    return logcdf_gradients(-g, ans, z, scale, logistic_log_density(z))


# ---------------------------------------------------------------- families with shape parameters (log densities)


def t_logpdf(g, ans, x, df, loc=0, scale=1):
    z = (x - loc) / scale
    dz = -g * (df + 1) * z / (df + z * z) / scale
    d_df = g * ((special.digamma((df + 1) / 2) - special.digamma(df / 2) - 1 / df - np.log1p(z * z / df)) / 2
                + (df + 1) * z * z / (2 * df * (df + z * z)))
    return dz, d_df, -dz, -(dz * z + g / scale)


def t_pdf(g, ans, x, df, loc=0, scale=1):
    return t_logpdf(g * ans, ans, x, df, loc, scale)


def gamma_logpdf(g, ans, x, a, loc=0, scale=1):
    z = (x - loc) / scale
    dz = g * ((a - 1) / z - 1) / scale
    return dz, g * (np.log(z) - special.digamma(a)), -dz, -(dz * z + g / scale)


def gamma_pdf(g, ans, x, a, loc=0, scale=1):
    return gamma_logpdf(g * ans, ans, x, a, loc, scale)


def beta_logpdf(g, ans, x, a, b, loc=0, scale=1):
    z = (x - loc) / scale
    dz = g * ((a - 1) / z - (b - 1) / (1 - z)) / scale
    both = special.digamma(a + b)
    return (dz, g * (np.log(z) - special.digamma(a) + both), g * (np.log1p(-z) - special.digamma(b) + both),
            -dz, -(dz * z + g / scale))


def beta_pdf(g, ans, x, a, b, loc=0, scale=1):
    return beta_logpdf(g * ans, ans, x, a, b, loc, scale)


# ---------------------------------------------------------------- discrete: in the rate or the probability


def poisson_logpmf(g, ans, k, mu, loc=0):
    return None, g * ((k - loc) / mu - 1), None


def poisson_pmf(g, ans, k, mu, loc=0):
    return poisson_logpmf(g * ans, ans, k, mu, loc)


def binom_logpmf(g, ans, k, n, p, loc=0):
    count = k - loc
    return None, None, g * (count / p - (n - count) / (1 - p)), None


def binom_pmf(g, ans, k, n, p, loc=0):
    return binom_logpmf(g * ans, ans, k, n, p, loc)


def nbinom_logpmf(g, ans, k, n, p, loc=0):
    """In the (real) number of successes ``n`` and the probability ``p``: ``gammaln(k + n) - gammaln(n) + n log p``."""
    count = k - loc
    return (None, g * (special.digamma(count + n) - special.digamma(n) + np.log(p)),
            g * (n / p - count / (1 - p)), None)


def nbinom_pmf(g, ans, k, n, p, loc=0):
    return nbinom_logpmf(g * ans, ans, k, n, p, loc)


# ---------------------------------------------------------------- the multivariate normal


def multivariate_normal_logpdf(g, ans, x, mean=None, cov=1, allow_singular=False):
    """In ``x``, ``mean`` and ``cov`` (a 2-D matrix, of which scipy reads the lower triangle)."""
    if np.ndim(cov) != 2 or mean is None:
        raise ValueError("astgrad: the gradient of scipy.stats.multivariate_normal.logpdf needs mean= and cov= "
                         "as a vector and a matrix")
    precision = np.linalg.inv(np.tril(cov) + T(np.tril(cov, -1)))  # the symmetric matrix scipy reads (see the jvp)
    alpha = (x - mean) @ precision  # a row per point
    g_rows = np.expand_dims(g, -1)
    outer = np.sum(np.expand_dims(g_rows * alpha, -1) * np.expand_dims(alpha, -2), axis=tuple(range(np.ndim(alpha) - 1)))
    g_cov = (outer - np.sum(g) * precision) / 2
    return -g_rows * alpha, g_rows * alpha, one_triangle((g_cov + T(g_cov)) / 2, "L")


def multivariate_normal_logpdf_jvp(t, ans, x, mean=None, cov=1, allow_singular=False, *, argnum):
    """Of the matrix scipy reads: ``cov``'s lower triangle and its mirror, so that the rules are the derivatives
    of the function at any ``cov``, not only at a symmetric one (a hessian differentiates them again)."""
    precision = np.linalg.inv(np.tril(cov) + T(np.tril(cov, -1)))
    alpha = (x - mean) @ precision
    if argnum == 0:
        return -np.sum(t * alpha, axis=-1)
    if argnum == 1:
        return np.sum(t * alpha, axis=-1)
    read = np.tril(t) + T(np.tril(t, -1))  # the symmetric matrix scipy reads from the lower triangle
    return (np.sum((alpha @ read) * alpha, axis=-1) - np.sum(precision * read)) / 2


# ---------------------------------------------------------------- the Dirichlet distribution


def dirichlet_points(x, alpha):
    """``(x, filled)``: the points with every component (scipy's ``1 - sum`` appended where ``x`` has one fewer
    than ``alpha``; components on the first axis), and whether it was appended; ``alpha`` as a column to match."""
    filled = np.shape(x)[0] + 1 == np.shape(alpha)[0]
    full = np.concatenate([x, 1 - np.sum(x, 0, keepdims=True)], 0) if filled else x
    return full, filled, np.reshape(alpha, (-1,) + (1,) * (np.ndim(full) - 1))


def dirichlet_x_score(full, column):
    """The derivative of ``xlogy(alpha - 1, x)`` in ``x``: 0 where ``alpha`` is 1 (that term is 0 for every ``x``)."""
    return (column - 1) / np.where(column == 1, 1, full)


def dirichlet_alpha_score(full, alpha, column):
    """The derivative of the log density in ``alpha``: ``-inf`` at a component 0 (its log), without a warning."""
    with np.errstate(divide="ignore"):
        return special.digamma(np.sum(alpha)) - special.digamma(column) + np.log(full)


def dirichlet_logpdf(g, ans, x, alpha):
    """In ``x`` (off the simplex too: the formula's partial derivatives; a filled-in last component moves with
    the others) and in ``alpha``; ``g`` has a value per point."""
    full, filled, column = dirichlet_points(x, alpha)
    g_full = g * dirichlet_x_score(full, column)
    g_x = g_full[:-1] - g_full[-1:] if filled else g_full
    g_alpha = np.reshape(np.sum(g * dirichlet_alpha_score(full, alpha, column), axis=tuple(range(1, np.ndim(full)))),
                         np.shape(alpha))
    return g_x, g_alpha


def dirichlet_pdf(g, ans, x, alpha):
    return dirichlet_logpdf(g * ans, ans, x, alpha)


def dirichlet_logpdf_jvp(t, ans, x, alpha, *, argnum):
    full, filled, column = dirichlet_points(x, alpha)
    if argnum == 0:
        moved = np.concatenate([t, -np.sum(t, 0, keepdims=True)], 0) if filled else t
        return np.reshape(np.sum(dirichlet_x_score(full, column) * moved, axis=0), np.shape(ans))
    moved = np.reshape(t, np.shape(column))
    return np.reshape(np.sum(dirichlet_alpha_score(full, alpha, column) * moved, axis=0), np.shape(ans))


def dirichlet_pdf_jvp(t, ans, x, alpha, *, argnum):
    return ans * dirichlet_logpdf_jvp(t, ans, x, alpha, argnum=argnum)


# ---------------------------------------------------------------- registration


def elementwise_jvp(t, ans, *args, argnum, vjp, **kwargs):
    """The forward rule of an elementwise function's argument: its reverse rule's gradient, read with ``t`` for ``g``."""
    out = vjp(t, ans, *args, **kwargs)[argnum]
    if out is None:
        raise ValueError(f"astgrad: no tangent for argument {argnum} of {vjp.__name__} (a count, a shift of a "
                         f"discrete distribution): pass a constant there")
    return out


_ELEMENTWISE: dict[str, tuple[Callable, ...]] = {
    "norm": (norm_logpdf, norm_pdf, norm_cdf, norm_sf, norm_logcdf, norm_logsf),
    "expon": (expon_logpdf, expon_pdf, expon_cdf, expon_sf, expon_logcdf, expon_logsf),
    "laplace": (laplace_logpdf, laplace_pdf, laplace_cdf, laplace_sf, laplace_logcdf, laplace_logsf),
    "logistic": (logistic_logpdf, logistic_pdf, logistic_cdf, logistic_sf, logistic_logcdf, logistic_logsf),
    "t": (t_logpdf, t_pdf),
    "gamma": (gamma_logpdf, gamma_pdf),
    "beta": (beta_logpdf, beta_pdf),
    "poisson": (poisson_logpmf, poisson_pmf),
    "binom": (binom_logpmf, binom_pmf),
    "nbinom": (nbinom_logpmf, nbinom_pmf),
}

for _family, _rules in _ELEMENTWISE.items():
    for _rule in _rules:
        _method = _rule.__name__[len(_family) + 1:]
        _fn = getattr(getattr(stats, _family), _method)
        defvjp(_fn, _rule, name=f"scipy.stats.{_family}.{_method}")
        defjvp(_fn, rest=functools.partial(elementwise_jvp, vjp=_rule))

defvjp(stats.multivariate_normal.logpdf, multivariate_normal_logpdf, name="scipy.stats.multivariate_normal.logpdf")
defjvp(stats.multivariate_normal.logpdf, rest=multivariate_normal_logpdf_jvp)
defvjp(stats.dirichlet.logpdf, dirichlet_logpdf, name="scipy.stats.dirichlet.logpdf")
defjvp(stats.dirichlet.logpdf, rest=dirichlet_logpdf_jvp)
defvjp(stats.dirichlet.pdf, dirichlet_pdf, name="scipy.stats.dirichlet.pdf")
defjvp(stats.dirichlet.pdf, rest=dirichlet_pdf_jvp)


# ---------------------------------------------------------------- frozen distributions: the distribution's rules


def frozen_method_rule(fn) -> Rule | None:
    """The entry of ``D.logpdf`` for a frozen distribution ``D``, made from the entry of ``D.dist.logpdf``."""
    frozen: Any = getattr(fn, "__self__", None)
    if not isinstance(frozen, _FROZEN) or not isinstance(getattr(fn, "__name__", None), str):
        return None
    family = str(getattr(frozen.dist, "name", ""))
    public = getattr(stats, family, None)  # the frozen copy's module-level original
    method = getattr(public, fn.__name__, None)
    if type(public) is not type(frozen.dist) or method is None:
        return None
    entry = _registry.find(method)
    if entry is None or entry.vjp is None:
        return None
    base, base_jvp, args, kwds = entry.vjp, entry.jvp_for(0), frozen.args, frozen.kwds

    def frozen_vjp(g, ans, x):
        """The distribution's rule with the frozen parameters passed on: the gradient in ``x`` alone."""
        return base(g, ans, x, *args, **kwds)[0]

    def frozen_jvp(t, ans, x):
        assert base_jvp is not None  # the entry offers frozen_jvp only then
        return base_jvp(t, ans, x, *args, **kwds)

    return Rule(fn, frozen_vjp, f"scipy.stats.{family}(...).{fn.__name__}",
                (None if base_jvp is None else frozen_jvp,))


def frozen_dirichlet_rule(fn) -> Rule | None:
    """The entry of ``D.logpdf`` (or ``pdf``) for ``D = dirichlet(alpha)`` frozen outside: the gradient in ``x``."""
    frozen: Any = getattr(fn, "__self__", None)
    if type(frozen) is not _FROZEN_DIRICHLET or getattr(fn, "__name__", None) not in ("logpdf", "pdf"):
        return None
    entry = _registry.find(getattr(stats.dirichlet, fn.__name__))
    if entry is None or entry.vjp is None:
        return None
    base, base_jvp, alpha = entry.vjp, entry.jvp_for(0), frozen.alpha

    def frozen_vjp(g, ans, x):
        return base(g, ans, x, alpha)[0]

    def frozen_jvp(t, ans, x):
        assert base_jvp is not None  # the entry offers frozen_jvp only then
        return base_jvp(t, ans, x, alpha)

    return Rule(fn, frozen_vjp, f"scipy.stats.dirichlet(...).{fn.__name__}",
                (None if base_jvp is None else frozen_jvp,))


_FROZEN: Any = type(stats.norm(0, 1)).__mro__[1]  # scipy's rv_frozen, the base of continuous and discrete frozen ones
_FROZEN_DIRICHLET: Any = type(stats.dirichlet(np.ones(2)))
_registry.derived += [frozen_method_rule, frozen_dirichlet_rule]
