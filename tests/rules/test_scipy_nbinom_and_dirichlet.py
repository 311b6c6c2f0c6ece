"""scipy.stats.nbinom in its float parameters and scipy.stats.dirichlet in its points and concentrations.

References: central differences of the same program, and the log
probability written out with ``gammaln`` (which astgrad differentiates by
scipy.special's own rules), in both engines.  ``dirichlet`` takes points on
the simplex, components on the first axis, with the last component left out
or given: left out, scipy fills it in as ``1 - sum`` and a point moved stays
on the simplex, so differences apply; given, the point cannot move off the
simplex (scipy raises), so the gradient in ``x`` is checked through a map
onto it (softmax), where only the part along the simplex counts.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from astgrad import rules
from _numeric import directional, gradient

stats = pytest.importorskip("scipy.stats")
from scipy.special import gammaln  # noqa: E402

COUNTS = np.array([0.0, 1.0, 4.0, 9.0])
N = np.array([0.7, 2.5, 3.0, 6.5])
P = np.array([0.2, 0.45, 0.6, 0.85])


def nbinom_logpmf(n, p):
    return np.sum(stats.nbinom.logpmf(COUNTS, n, p) * np.arange(1.0, 5.0))


def nbinom_pmf_shifted(n, p):
    return np.sum(stats.nbinom.pmf(COUNTS + 2, n, p, loc=2))


def nbinom_written_out(n, p):
    log_pmf = gammaln(COUNTS + n) - gammaln(n) - gammaln(COUNTS + 1) + n * np.log(p) + COUNTS * np.log1p(-p)
    return np.sum(log_pmf * np.arange(1.0, 5.0))


@pytest.mark.parametrize("program", [nbinom_logpmf, nbinom_pmf_shifted])
def test_nbinom_in_n_and_p_matches_finite_differences(program):
    got = astgrad.grad(program, wrt=(0, 1))(N, P)
    np.testing.assert_allclose(got[0], gradient(lambda n: program(n, P), N), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[1], gradient(lambda p: program(N, p), P), rtol=1e-6, atol=1e-9)
    u, v = np.linspace(-1, 1, 4), np.linspace(0.5, -0.5, 4)
    _, tangent = astgrad.jvp(program, wrt=(0, 1))(N, P, (u, v))
    assert tangent == pytest.approx(directional(lambda s: program(N + s * u, P + s * v), 0.0, 1.0), rel=1e-6)


def test_nbinom_matches_its_log_probability_written_out_in_both_engines():
    want = astgrad.grad(nbinom_written_out, wrt=(0, 1))(N, P)
    got = astgrad.grad(nbinom_logpmf, wrt=(0, 1))(N, P)
    n, p = astgrad.tensor(N, requires_grad=True), astgrad.tensor(P, requires_grad=True)
    (rules.apply(stats.nbinom.logpmf, COUNTS, n, p) * np.arange(1.0, 5.0)).sum().backward()
    for g, taped, w in zip(got, (n.grad.numpy(), p.grad.numpy()), want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
        np.testing.assert_allclose(taped, w, rtol=1e-12)


def test_the_count_gets_no_tangent():
    with pytest.raises(ValueError, match="no tangent for argument 0"):
        rules.lookup(stats.nbinom.logpmf).jvp_for(0)(np.ones(4), None, COUNTS, N, P)


# -- dirichlet ---------------------------------------------------------------------------------------------------

ALPHA = np.array([0.8, 2.0, 3.5])
ALL_BUT_LAST = np.array([[0.2, 0.1, 0.5], [0.3, 0.6, 0.25]])  # components x points; the last fills in to 1
ONE_POINT = np.array([0.25, 0.35, 0.4])


def dirichlet_points(x, alpha):
    return np.sum(stats.dirichlet.logpdf(x, alpha) * np.array([1.0, -0.5, 2.0]))


def dirichlet_pdf_points(x, alpha):
    return np.sum(stats.dirichlet.pdf(x, alpha))


def dirichlet_one_point(x, alpha):
    return stats.dirichlet.logpdf(x, alpha) ** 2


@pytest.mark.parametrize("program, x", [(dirichlet_points, ALL_BUT_LAST), (dirichlet_pdf_points, ALL_BUT_LAST),
                                        (dirichlet_one_point, ALL_BUT_LAST[:, 0].copy())])
def test_dirichlet_with_its_last_component_filled_in_matches_finite_differences(program, x):
    got = astgrad.grad(program, wrt=(0, 1))(x, ALPHA)
    np.testing.assert_allclose(got[0], gradient(lambda v: program(v, ALPHA), x), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(got[1], gradient(lambda a: program(x, a), ALPHA), rtol=1e-6, atol=1e-9)
    u, v = np.ones_like(x) * 0.3, np.array([0.5, -1.0, 0.25])
    _, tangent = astgrad.jvp(program, wrt=(0, 1))(x, ALPHA, (u, v))
    assert tangent == pytest.approx(directional(lambda s: program(x + s * u, ALPHA + s * v), 0.0, 1.0), rel=1e-6)


def dirichlet_of_softmax(theta, alpha):
    e = np.exp(theta)
    x = e / np.sum(e, axis=0)
    return np.sum(stats.dirichlet.logpdf(x, alpha) * np.array([1.0, 3.0]))


def dirichlet_of_softmax_written_out(theta, alpha):
    e = np.exp(theta)
    x = e / np.sum(e, axis=0)
    log_norm = np.sum(gammaln(alpha)) - gammaln(np.sum(alpha))
    return np.sum((np.sum((alpha[:, None] - 1) * np.log(x), axis=0) - log_norm) * np.array([1.0, 3.0]))


THETA = np.array([[0.3, -1.0], [1.2, 0.4], [-0.5, 0.1]])


def test_dirichlet_of_every_component_through_a_map_onto_the_simplex():
    got = astgrad.grad(dirichlet_of_softmax, wrt=(0, 1))(THETA, ALPHA)
    np.testing.assert_allclose(got[0], gradient(lambda t: dirichlet_of_softmax(t, ALPHA), THETA), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(got[1], gradient(lambda a: dirichlet_of_softmax(THETA, a), ALPHA), rtol=1e-6,
                               atol=1e-9)
    want = astgrad.grad(dirichlet_of_softmax_written_out, wrt=(0, 1))(THETA, ALPHA)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)


def test_dirichlet_on_the_tape():
    x, alpha = astgrad.tensor(ALL_BUT_LAST, requires_grad=True), astgrad.tensor(ALPHA, requires_grad=True)
    (rules.apply(stats.dirichlet.logpdf, x, alpha) * np.array([1.0, -0.5, 2.0])).sum().backward()
    want = astgrad.grad(dirichlet_points, wrt=(0, 1))(ALL_BUT_LAST, ALPHA)
    np.testing.assert_allclose(x.grad.numpy(), want[0], rtol=1e-12)
    np.testing.assert_allclose(alpha.grad.numpy(), want[1], rtol=1e-12)


def test_an_alpha_of_one_reads_no_component():
    """``xlogy(0, x)`` is 0 for every x, so its component gets 0, not 0/0, even at x = 0."""
    alpha = np.array([1.0, 2.0, 3.0])
    x = np.array([0.0, 0.4, 0.6])
    g_x, _ = rules.lookup(stats.dirichlet.logpdf).vjp(1.0, stats.dirichlet.logpdf(x, alpha), x, alpha)
    np.testing.assert_allclose(g_x, [0.0, 1 / 0.4, 2 / 0.6])


FROZEN = stats.dirichlet(ALPHA)


def frozen_outside(x):
    return FROZEN.logpdf(x) + FROZEN.pdf(x)


def test_a_dirichlet_frozen_outside_is_differentiated_in_x():
    x = ALL_BUT_LAST[:, 1].copy()
    np.testing.assert_allclose(astgrad.grad(frozen_outside)(x), gradient(frozen_outside, x), rtol=1e-6)
    _, tangent = astgrad.jvp(frozen_outside)(x, np.array([0.4, -0.2]))
    assert tangent == pytest.approx(directional(frozen_outside, x, np.array([0.4, -0.2])), rel=1e-6)


def frozen_inside(alpha, x):
    return stats.dirichlet(alpha).logpdf(x)


def test_a_dirichlet_frozen_inside_is_refused_at_the_call():
    with pytest.raises(astgrad.TransformError, match="dirichlet"):
        astgrad.grad(frozen_inside)(ALPHA, ONE_POINT)
