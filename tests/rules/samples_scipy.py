"""Sample calls for the scipy entries of the table (scipy is optional: ``samples`` adds these when it is installed).

Python functions of scipy (``logsumexp``, ``scipy.linalg``, ``scipy.stats``'s
methods) are invisible to the taped Tensor, which reaches them through
``astgrad.rules.apply``; scipy.special's ufuncs it meets by itself.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy import signal, special, stats

from astgrad import rules

from .samples import Arg, Case, const, normal, positive, unit_open, well_conditioned


def taped(fn):
    """``fn`` called through its rule, which the tape records (a Python function it cannot see into)."""
    def call(*args, **kwargs):
        return rules.apply(fn, *args, **kwargs)
    call.__name__ = getattr(fn, "__name__", "call")
    call.generated_call = fn  # generated code calls fn itself (test_table_generated)
    return call


def between(lo, hi, *shape):
    return Arg(lambda rng: rng.uniform(lo, hi, shape))


def spd(n):
    """A symmetric positive definite matrix from any square one."""
    return Arg(lambda rng: (lambda m: m @ m.T + n * np.eye(n))(rng.standard_normal((n, n)) * 0.5))


def lower_triangular(n):
    return Arg(lambda rng: np.tril(rng.standard_normal((n, n)) * 0.3) + 2 * np.eye(n))


def cho_factor_then_solve(a, b):
    return sla.cho_solve(sla.cho_factor(a), b)


def cho_factor_lower_then_solve(a, b):
    c, lower = sla.cho_factor(a, lower=True)
    return sla.cho_solve((c, lower), b)


def lu_factor_then_solve(a, b):
    return sla.lu_solve(sla.lu_factor(a), b)


def lu_factor_then_solve_transposed(a, b):
    lu, piv = sla.lu_factor(a, check_finite=False)
    return sla.lu_solve((lu, piv), b, trans=1)


def lu_by_indices(a):
    p, lower, upper = sla.lu(a, p_indices=True)
    return lower, upper


def lu_upper_only(a):
    return sla.lu(a)[2]


def scipy_eigh_squared(a):
    """Eigenvectors squared: the loss does not depend on the sign LAPACK gives each."""
    w, v = sla.eigh(a)
    return w, v ** 2


def scipy_eigh_upper_squared(a):
    w, v = sla.eigh(a, lower=False, driver="evd")
    return w, v ** 2


def scipy_svd_squared(a):
    u, s, vh = sla.svd(a, full_matrices=False)
    return u ** 2, s, vh ** 2


def scipy_svd_square_full(a):
    u, s, vh = sla.svd(a)
    return u ** 2, s ** 2, vh ** 2


def simplex_but_last(k, *points):
    """All but the last component of points on the simplex (scipy's dirichlet fills it in): moved, they stay on it."""
    return Arg(lambda rng: rng.uniform(0.1, 0.8 / (k - 1), (k - 1,) + points))


SPD = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, -0.3], [0.5, -0.3, 2.5]])


def _special_cases():
    unary = [(special.gammaln, positive), (special.gamma, positive), (special.digamma, positive),
             (special.erf, normal), (special.erfc, normal), (special.ndtr, normal),
             (special.log_ndtr, normal), (special.expit, normal), (special.entr, positive),
             (special.i0, normal), (special.i1, normal), (special.i0e, normal), (special.i1e, normal)]
    cases = [Case(fn, [maker(3, 4)]) for fn, maker in unary]
    cases += [Case(fn, [between(-0.8, 0.8, 3, 4)]) for fn in (special.erfinv,)]
    cases += [Case(fn, [between(0.2, 1.8, 3, 4)]) for fn in (special.erfcinv,)]
    cases += [Case(fn, [unit_open(3, 4)]) for fn in (special.ndtri, special.logit)]
    cases += [
        Case(special.beta, [positive(3, 4), positive(4)]), Case(special.betaln, [positive(3, 4), positive(3, 4)]),
        Case(special.xlogy, [normal(3, 4), positive(3, 4)]), Case(special.xlog1py, [normal(3, 4), positive(4)]),
        Case(special.rel_entr, [positive(3, 4), positive(3, 4)]),
        Case(special.iv, [const(1.5), positive(3, 4)]), Case(special.ive, [const(0.5), positive(3, 4)]),
        Case(special.ive, [const(2.0), normal(3, 4)], name="negative"),
        Case(special.jv, [const(2.0), positive(3, 4)]), Case(special.yv, [const(1.0), positive(3, 4)]),
        Case(special.kv, [const(0.5), positive(3, 4)]),
        Case(special.gammainc, [const(2.5), positive(3, 4)]), Case(special.gammaincc, [const(1.5), positive(3, 4)]),
        # Python functions: generated code calls them, the tape through rules.apply
        Case(special.polygamma, [const(1), positive(3, 4)], call=taped(special.polygamma)),
        Case(special.zeta, [const(3.0), positive(3, 4)], call=taped(special.zeta)),
        Case(special.logsumexp, [normal(3, 4)], call=taped(special.logsumexp)),
        Case(special.logsumexp, [normal(3, 4)], {"axis": 1}, call=taped(special.logsumexp), name="axis"),
        Case(special.logsumexp, [normal(3, 4), const(0), positive(3, 4)], {"keepdims": True},
             call=taped(special.logsumexp), name="weights"),
        Case(special.softmax, [normal(3, 4)], {"axis": 1}, call=taped(special.softmax)),
        Case(special.softmax, [normal(5)], call=taped(special.softmax), name="all"),
        Case(special.log_softmax, [normal(3, 4)], {"axis": 0}, call=taped(special.log_softmax)),
    ]
    return cases


def _linalg_cases():
    return [
        Case(sla.inv, [well_conditioned(3)], call=taped(sla.inv)),
        Case(sla.det, [well_conditioned(3)], call=taped(sla.det)),
        Case(sla.solve, [well_conditioned(3), normal(3)], call=taped(sla.solve)),
        Case(sla.solve, [well_conditioned(3), normal(3, 2)], call=taped(sla.solve), name="matrix"),
        Case(sla.solve_triangular, [lower_triangular(3), normal(3)], {"lower": True},
             call=taped(sla.solve_triangular)),
        Case(sla.solve_triangular, [well_conditioned(3), normal(3, 2)], {"trans": 1},
             call=taped(sla.solve_triangular), name="upper_transposed"),
        Case(sla.solve_triangular, [well_conditioned(3), normal(3)], {"lower": True, "unit_diagonal": True},
             call=taped(sla.solve_triangular), name="unit_diagonal"),
        Case(sla.cholesky, [spd(3)], call=taped(sla.cholesky)),
        Case(sla.cholesky, [spd(3)], {"lower": True}, call=taped(sla.cholesky), name="lower"),
        Case(sla.expm, [Arg(lambda rng: rng.standard_normal((3, 3)) * 0.5)], call=taped(sla.expm)),
        # near the identity: eigenvalues well inside the right half plane, a real root and logarithm
        Case(sla.sqrtm, [Arg(lambda rng: np.eye(3) + rng.standard_normal((3, 3)) * 0.2)], call=taped(sla.sqrtm)),
        Case(sla.logm, [Arg(lambda rng: np.eye(3) + rng.standard_normal((3, 3)) * 0.2)], call=taped(sla.logm)),
        # cho_factor returns a tuple, which only generated code differentiates
        Case(sla.cho_factor, [spd(3)], tape=False),
        Case(sla.cho_factor, [spd(3)], {"lower": True}, tape=False, name="lower"),
        Case(sla.cho_solve, [const(sla.cho_factor(SPD)), normal(3, 2)], tape=False),
        Case(sla.cho_solve, [spd(3), normal(3)], call=cho_factor_then_solve, tape=False, name="through_factor"),
        Case(sla.cho_solve, [spd(3), normal(3, 2)], call=cho_factor_lower_then_solve, tape=False,
             name="through_lower_factor"),
        # lu_factor and lu return tuples, lu_solve takes one: generated code only, as for cho_factor
        Case(sla.lu_factor, [well_conditioned(3)], tape=False),
        Case(sla.lu_solve, [const(sla.lu_factor(SPD)), normal(3, 2)], tape=False),
        Case(sla.lu_solve, [const(sla.lu_factor(SPD)), normal(3)], {"trans": 1}, tape=False, name="transposed"),
        Case(sla.lu_solve, [well_conditioned(3), normal(3)], call=lu_factor_then_solve, tape=False,
             name="through_factor"),
        Case(sla.lu_solve, [well_conditioned(3), normal(3, 2)], call=lu_factor_then_solve_transposed, tape=False,
             name="through_factor_transposed"),
        Case(sla.lu, [well_conditioned(3)], tape=False),
        Case(sla.lu, [well_conditioned(3)], {"permute_l": True}, tape=False, name="permute_l"),
        Case(sla.lu, [well_conditioned(3)], call=lu_by_indices, tape=False, name="p_indices"),
        Case(sla.lu, [well_conditioned(3)], call=lu_upper_only, tape=False, name="upper_only"),
        Case(sla.eigh, [normal(3, 3)], {"eigvals_only": True}, call=taped(sla.eigh), name="values"),
        Case(sla.eigh, [normal(3, 3)], call=scipy_eigh_squared, tape=False),
        Case(sla.eigh, [normal(3, 3)], call=scipy_eigh_upper_squared, tape=False, name="upper"),
        Case(sla.eigvalsh, [normal(3, 3)], call=taped(sla.eigvalsh)),
        Case(sla.eigvalsh, [normal(3, 3)], {"lower": False}, call=taped(sla.eigvalsh), name="upper"),
        Case(sla.svd, [normal(4, 3)], call=scipy_svd_squared, tape=False, name="tall"),
        Case(sla.svd, [normal(3, 4)], call=scipy_svd_squared, tape=False, name="wide"),
        Case(sla.svd, [normal(3, 3)], call=scipy_svd_square_full, tape=False, name="square_full"),
        Case(sla.svd, [normal(3, 4)], {"compute_uv": False}, call=taped(sla.svd), name="values"),
        Case(sla.svdvals, [normal(4, 3)], call=taped(sla.svdvals)),
    ]


def _stats_cases():
    cases = []
    for method in ("logpdf", "pdf", "cdf", "sf", "logcdf", "logsf"):
        for family, x in (("norm", normal(3, 4)), ("logistic", normal(3, 4)), ("laplace", normal(3, 4)),
                          ("expon", positive(3, 4))):
            fn = getattr(getattr(stats, family), method)
            cases.append(Case(fn, [x, normal(4) if family != "expon" else const(0.0), positive(3, 4)],
                              call=taped(fn), name=family))
    cases += [
        Case(stats.norm.cdf, [normal(3, 4)], call=taped(stats.norm.cdf), name="standard"),
        Case(stats.norm.logpdf, [normal(3, 4)], {"loc": 0.5}, call=taped(stats.norm.logpdf), name="keyword"),
        Case(stats.t.logpdf, [normal(3, 4), above(2.0, 3, 4), normal(4), positive(4)], call=taped(stats.t.logpdf)),
        Case(stats.t.pdf, [normal(3, 4), above(2.0, 4)], call=taped(stats.t.pdf)),
        Case(stats.gamma.logpdf, [positive(3, 4), positive(4)], call=taped(stats.gamma.logpdf)),
        Case(stats.gamma.pdf, [positive(3, 4), above(1.5, 4), const(0.0), positive(4)], call=taped(stats.gamma.pdf)),
        Case(stats.beta.logpdf, [unit_open(3, 4), positive(4), positive(3, 4)], call=taped(stats.beta.logpdf)),
        Case(stats.beta.pdf, [unit_open(3, 4), positive(4), positive(4)], call=taped(stats.beta.pdf)),
        Case(stats.poisson.logpmf, [const(np.array([0, 2, 5])), positive(3)], call=taped(stats.poisson.logpmf)),
        Case(stats.poisson.pmf, [const(np.array([1, 3])), positive(2)], call=taped(stats.poisson.pmf)),
        Case(stats.binom.logpmf, [const(np.array([0, 2, 5])), const(6), unit_open(3)], call=taped(stats.binom.logpmf)),
        Case(stats.binom.pmf, [const(np.array([1, 3])), const(4), unit_open(2)], call=taped(stats.binom.pmf)),
        Case(stats.nbinom.logpmf, [const(np.array([0, 2, 5])), above(0.5, 3), unit_open(3)],
             call=taped(stats.nbinom.logpmf)),
        Case(stats.nbinom.pmf, [const(np.array([1, 3])), above(0.5, 2), unit_open(2), const(1)],
             call=taped(stats.nbinom.pmf)),
        Case(stats.dirichlet.logpdf, [simplex_but_last(3, 4), above(0.5, 3)], call=taped(stats.dirichlet.logpdf)),
        Case(stats.dirichlet.logpdf, [const(np.array([0.2, 0.5, 0.3])), above(0.5, 3)],
             call=taped(stats.dirichlet.logpdf), name="alpha"),
        Case(stats.dirichlet.pdf, [simplex_but_last(4), above(0.5, 4)], call=taped(stats.dirichlet.pdf)),
        Case(stats.multivariate_normal.logpdf, [normal(5, 3), normal(3), spd(3)],
             call=taped(stats.multivariate_normal.logpdf)),
        Case(stats.multivariate_normal.logpdf, [normal(3), normal(3), spd(3)],
             call=taped(stats.multivariate_normal.logpdf), name="one_point"),
    ]
    return cases


def _signal_cases():
    cases = []
    for mode in ("full", "same", "valid"):
        for fn in (signal.convolve, signal.correlate):
            cases += [
                Case(fn, [normal(5), normal(3), const(mode)], call=taped(fn), name=mode),
                Case(fn, [normal(2), normal(5), const(mode)], call=taped(fn), name=f"{mode}_shorter_first"),
                Case(fn, [normal(4, 5), normal(2, 3), const(mode)], call=taped(fn), name=f"{mode}_2d"),
                Case(fn, [normal(3, 2), normal(4, 3), const(mode)], call=taped(fn), name=f"{mode}_2d_shorter_first"),
            ]
    cases.append(Case(signal.convolve, [normal(4, 4), normal(3, 2)], {"method": "fft"}, call=taped(signal.convolve),
                      name="fft"))
    return cases


def above(lo, *shape):
    return Arg(lambda rng: rng.uniform(lo, lo + 2.0, shape))


def scipy_cases():
    return _special_cases() + _linalg_cases() + _stats_cases() + _signal_cases()


def scipy_edges():
    """Edge samples (``samples.EDGES``) of scipy's entries: one triangle read, a term that is 0 for every x."""
    def fixed(value):
        return Arg(lambda rng: np.array(value, dtype=np.float64))
    not_symmetric = [[2.0, 0.7, -0.4], [-1.3, 1.0, 0.2], [0.9, 0.5, -0.6]]
    return [
        Case(sla.eigvalsh, [fixed(not_symmetric)], {"lower": False}, call=taped(sla.eigvalsh), name="upper_triangle"),
        Case(sla.eigh, [fixed(not_symmetric)], {"eigvals_only": True}, call=taped(sla.eigh), name="lower_triangle"),
        # x = (0, 0.4, 0.6) with alpha 1 on the first: xlogy(0, x) is 0 for every x, so the first gets 0 before the
        # last component's share, -(3 - 1) / 0.6 (differences cannot step below 0: scipy refuses)
        Case(stats.dirichlet.logpdf, [fixed([0.0, 0.4]), const(np.array([1.0, 2.0, 3.0]))],
             call=taped(stats.dirichlet.logpdf), name="alpha_one_at_zero", expected=[[-2 / 0.6, 1 / 0.4 - 2 / 0.6]]),
    ]
