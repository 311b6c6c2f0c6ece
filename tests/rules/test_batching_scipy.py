"""Batching rules of scipy's entries where test_batching_rules' samples do not reach: the paths a flag
chooses (numpy's stacked call or a loop over examples), weights and keywords beside a batched argument, a
batch of one, and scipy's own checks."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import astgrad

sla = pytest.importorskip("scipy.linalg")
special = pytest.importorskip("scipy.special")
stats = pytest.importorskip("scipy.stats")

from .test_batching_linalg_fourier import _looped, _same  # noqa: E402

RNG = np.random.default_rng(11)
SPD = np.stack([m @ m.T + 3 * np.eye(3) for m in RNG.standard_normal((4, 3, 3))])


def solve_symmetric(a, b):
    return sla.solve(a, b, assume_a="sym")


def solve_transposed(a, b):
    return sla.solve(a, b, transposed=True)


def inverse_of_symmetric(a):
    return sla.inv(a, assume_a="pos")


def generalized_eigh(a, b):
    w, v = sla.eigh(a, b)
    return w, np.abs(v)


def eigvalsh_upper_by_index(a):
    return sla.eigvalsh(a, lower=False, subset_by_index=(1, 2))


def upper_cholesky(a):
    return sla.cholesky(a), sla.cholesky(a, lower=True)


def weighted_logsumexp(a, b):
    return special.logsumexp(a, None, b, True), special.logsumexp(a, 0, b)


def softmax_everywhere(x):
    return special.softmax(x), special.log_softmax(x, axis=-1)


def zeta_of(x, q):
    return special.zeta(x, q=q)


def densities(x, loc):
    return stats.norm.pdf(x, loc=loc), stats.gamma.logpdf(x, 2.0, scale=loc)


def gaussian(x, mean, cov):
    return stats.multivariate_normal.logpdf(x, mean, cov)


A = RNG.standard_normal((4, 3, 3)) * 0.3 + 2 * np.eye(3)
CASES = [
    (solve_symmetric, [SPD, RNG.standard_normal((3, 4))], (0, 1)),
    (solve_transposed, [A, RNG.standard_normal((3, 2))], (0, None)),
    # scipy.linalg.inv's assume_a came with scipy 1.17 (Python 3.10's newest scipy is 1.15)
    *([(inverse_of_symmetric, [SPD], (0,))] if "assume_a" in inspect.signature(sla.inv).parameters else []),
    (generalized_eigh, [SPD[0], np.moveaxis(SPD, 0, 2)], (None, 2)),
    (eigvalsh_upper_by_index, [SPD], (0,)),
    (upper_cholesky, [np.moveaxis(SPD, 0, 1)], (1,)),
    (weighted_logsumexp, [RNG.standard_normal((3,)), RNG.uniform(0.5, 1.5, (4, 2, 3))], (None, 0)),
    (weighted_logsumexp, [RNG.standard_normal((4, 2, 3)), RNG.uniform(0.5, 1.5, (3,))], (0, None)),
    (softmax_everywhere, [RNG.standard_normal((2, 4, 3))], (1,)),
    (zeta_of, [RNG.uniform(2, 3, (4, 1)), RNG.uniform(1, 2, (2, 3))], (0, None)),
    (densities, [RNG.uniform(0.5, 2, (4, 3)), RNG.uniform(0.5, 2, (2, 3))], (0, None)),
    (gaussian, [RNG.standard_normal((1, 3)), np.zeros(3), SPD[0]], (0, None, None)),  # a batch of one
    (gaussian, [RNG.standard_normal((5, 3)), RNG.standard_normal((3, 5)), SPD[0]], (None, 1, None)),
]


@pytest.mark.parametrize("f, args, in_axes", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_batched_matches_a_loop(f, args, in_axes):
    _same(astgrad.vmap(f, in_axes=in_axes)(*args), _looped(f, args, in_axes))


def inverse(a):
    return sla.inv(a)


def inverse_unchecked(a):
    return sla.inv(a, check_finite=False)


def test_scipy_checks_for_infinities_as_in_a_loop():
    a = A.copy()
    a[2, 0, 0] = np.nan
    with pytest.raises(ValueError, match="infs or NaNs"):
        inverse(a[2])
    with pytest.raises(ValueError, match="infs or NaNs"):
        astgrad.vmap(inverse)(a)
    assert np.all(np.isfinite(astgrad.vmap(inverse_unchecked)(a)[:2]))


def triangular_solve(a, b, trans):
    return sla.solve_triangular(a, b, trans)


def test_a_batch_axis_on_a_flag_is_refused():
    a, b = np.tril(A[0]), np.ones(3)
    with pytest.raises((astgrad.TransformError, ValueError), match="other than its arrays"):
        astgrad.vmap(triangular_solve, in_axes=(None, None, 0))(a, b, np.zeros(4, int))
