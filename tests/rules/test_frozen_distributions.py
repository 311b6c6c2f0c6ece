"""Frozen scipy.stats distributions: exact where the parameters are constants, refused at the call where they move.

``D = norm(0.5, 2.0)`` made outside the differentiated function is a
constant; ``D.logpdf(x)`` gets ``norm.logpdf``'s rule with the frozen
parameters passed on (both engines, forward mode too).  ``norm(mu, s)``
with ``mu`` differentiated inside the function, and a method of a
distribution frozen there, are refused at the user's line, saying to write
``norm.logpdf(x, mu, s)``, which is differentiated in every argument.
"""

import numpy as np
import pytest

import astgrad
from _numeric import directional, gradient

stats = pytest.importorskip("scipy.stats")

NORMAL = stats.norm(0.5, 2.0)
GAMMA = stats.gamma(2.5, 0.0, 1.5)
POISSON = stats.poisson(3.0)
X = np.array([0.8, 1.7, 2.9])


def normal_loglik(x):
    return np.sum(NORMAL.logpdf(x) * np.array([1.0, 2.0, 3.0]))


def gamma_cdf_and_pdf(x):
    return np.sum(GAMMA.pdf(x)) + np.sum(NORMAL.cdf(x) ** 2)


@pytest.mark.parametrize("f", [normal_loglik, gamma_cdf_and_pdf])
def test_a_method_of_a_distribution_frozen_outside_is_differentiated_in_x(f):
    expected = gradient(f, X)
    np.testing.assert_allclose(astgrad.grad(f)(X), expected, rtol=1e-6)
    _, tangent = astgrad.jvp(f)(X, np.array([1.0, -0.5, 2.0]))
    assert tangent == pytest.approx(directional(f, X, np.array([1.0, -0.5, 2.0])), rel=1e-6)


def test_the_tape_records_a_frozen_method_through_rules_apply():
    leaf = astgrad.tensor(X, requires_grad=True)
    np.sum(astgrad.rules.apply(NORMAL.logpdf, leaf) * np.array([1.0, 2.0, 3.0])).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), gradient(normal_loglik, X), rtol=1e-6)


def poisson_in_rate(k):
    return np.sum(POISSON.logpmf(k) * k)


def test_a_frozen_discrete_count_has_no_gradient_and_says_so():
    with pytest.raises(RuntimeError, match="returned no gradient for argument"):
        astgrad.grad(poisson_in_rate)(np.array([1.0, 2.0]))


def frozen_inside(mu, x):
    return np.sum(stats.norm(mu, 2.0).logpdf(x))


def constant_frozen_inside(x):
    return np.sum(stats.norm(0.5, 2.0).logpdf(x))


def written_out(mu, x):
    return np.sum(stats.norm.logpdf(x, mu, 2.0))


def test_freezing_a_differentiated_parameter_is_refused_at_the_call_with_what_to_write():
    with pytest.raises(astgrad.TransformError) as caught:
        astgrad.grad(frozen_inside)(0.3, X)
    message = str(caught.value)
    assert "test_frozen_distributions.py" in message and "scipy.stats.norm(...)" in message
    assert "scipy.stats.norm.logpdf(x, loc, scale)" in message
    expected = gradient(lambda mu: written_out(mu, X), 0.3)
    assert astgrad.grad(written_out)(0.3, X) == pytest.approx(expected, rel=1e-6)


def test_a_method_of_a_distribution_frozen_inside_is_refused_with_what_to_write():
    with pytest.raises(astgrad.TransformError) as caught:
        astgrad.grad(constant_frozen_inside)(X)
    message = str(caught.value)
    assert "test_frozen_distributions.py" in message and "norm.logpdf(x, loc, scale)" in message
