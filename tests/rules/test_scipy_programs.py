"""Programs as a statistician writes them with scipy, differentiated by astgrad.grad.

Each is compared with central differences of the program itself and, where
JAX is installed, with ``jax.grad`` of the same program written with
``jax.scipy``: a negative-binomial GLM with ``gammaln``, a Black-Scholes
price with ``norm.cdf``, a Gaussian-process log-likelihood with
``cho_factor``/``cho_solve``, a Gaussian mixture with ``logsumexp``.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from _numeric import gradient

pytest.importorskip("scipy")
from scipy.linalg import cho_factor, cho_solve  # noqa: E402
from scipy.special import gammaln, logsumexp  # noqa: E402
from scipy.stats import norm  # noqa: E402

RNG = np.random.default_rng(7)
X = RNG.standard_normal((20, 3))
COUNTS = RNG.poisson(3.0, 20).astype(float)
POINTS = np.sort(RNG.uniform(-2, 2, 8))
TARGETS = np.sin(POINTS) + 0.1 * RNG.standard_normal(8)
DATA = np.concatenate([RNG.normal(-1.0, 0.5, 15), RNG.normal(1.5, 0.8, 15)])


def glm_negative_binomial(beta, log_r):
    """The negative log-likelihood of a negative-binomial regression with a log link."""
    mu = np.exp(X @ beta)
    r = np.exp(log_r)
    ll = (gammaln(COUNTS + r) - gammaln(r) - gammaln(COUNTS + 1)
          + r * np.log(r / (r + mu)) + COUNTS * np.log(mu / (r + mu)))
    return -np.sum(ll)


def black_scholes(spot, strike, rate, vol, maturity):
    d1 = (np.log(spot / strike) + (rate + vol ** 2 / 2) * maturity) / (vol * np.sqrt(maturity))
    d2 = d1 - vol * np.sqrt(maturity)
    return np.sum(spot * norm.cdf(d1) - strike * np.exp(-rate * maturity) * norm.cdf(d2))


def gp_log_likelihood(log_length, log_noise):
    """The log marginal likelihood of a GP with a squared-exponential kernel."""
    length, noise = np.exp(log_length), np.exp(log_noise)
    sq = (POINTS[:, None] - POINTS[None, :]) ** 2
    K = np.exp(-sq / (2 * length ** 2)) + noise * np.eye(len(POINTS))
    c, lower = cho_factor(K)
    alpha = cho_solve((c, lower), TARGETS)
    log_det = 2 * np.sum(np.log(np.diag(c)))
    return -0.5 * TARGETS @ alpha - 0.5 * log_det - 0.5 * len(POINTS) * np.log(2 * np.pi)


def mixture_log_likelihood(means, log_scales, logits):
    log_weights = logits - logsumexp(logits)
    z = (DATA[:, None] - means[None, :]) / np.exp(log_scales)[None, :]
    per_component = log_weights[None, :] - 0.5 * z ** 2 - log_scales[None, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(per_component, axis=1))


PROGRAMS = {
    "glm_gammaln": (glm_negative_binomial, (np.array([0.3, -0.2, 0.1]), 0.4)),
    "black_scholes_norm_cdf": (black_scholes, (np.array([95.0, 100.0, 110.0]), 100.0, 0.03, 0.25, 1.5)),
    "gp_cho_solve": (gp_log_likelihood, (0.2, -1.5)),
    "mixture_logsumexp": (mixture_log_likelihood, (np.array([-0.8, 1.2]), np.array([-0.5, -0.1]),
                                                   np.array([0.1, -0.2]))),
}


def _central(f, args):
    out = []
    for i, arg in enumerate(args):
        def at(value, i=i):
            moved = list(args)
            moved[i] = value
            return f(*moved)
        out.append(gradient(at, arg))
    return out


@pytest.mark.parametrize("name", PROGRAMS)
def test_generated_gradient_matches_finite_differences(name):
    f, args = PROGRAMS[name]
    got = astgrad.grad(f, wrt=tuple(range(len(args))))(*args)
    for g, want in zip(got, _central(f, args)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


# -- the same programs in JAX ------------------------------------------------------------------------------


def _jax_programs():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.scipy.linalg import cho_factor as jcho_factor, cho_solve as jcho_solve
    from jax.scipy.special import gammaln as jgammaln, logsumexp as jlogsumexp
    from jax.scipy.stats import norm as jnorm

    def glm(beta, log_r):
        mu = jnp.exp(X @ beta)
        r = jnp.exp(log_r)
        ll = (jgammaln(COUNTS + r) - jgammaln(r) - jgammaln(COUNTS + 1)
              + r * jnp.log(r / (r + mu)) + COUNTS * jnp.log(mu / (r + mu)))
        return -jnp.sum(ll)

    def bs(spot, strike, rate, vol, maturity):
        d1 = (jnp.log(spot / strike) + (rate + vol ** 2 / 2) * maturity) / (vol * jnp.sqrt(maturity))
        d2 = d1 - vol * jnp.sqrt(maturity)
        return jnp.sum(spot * jnorm.cdf(d1) - strike * jnp.exp(-rate * maturity) * jnorm.cdf(d2))

    def gp(log_length, log_noise):
        length, noise = jnp.exp(log_length), jnp.exp(log_noise)
        sq = (POINTS[:, None] - POINTS[None, :]) ** 2
        K = jnp.exp(-sq / (2 * length ** 2)) + noise * jnp.eye(len(POINTS))
        c, lower = jcho_factor(K)
        alpha = jcho_solve((c, lower), TARGETS)
        return -0.5 * TARGETS @ alpha - jnp.sum(jnp.log(jnp.diag(c))) - 0.5 * len(POINTS) * jnp.log(2 * jnp.pi)

    def mixture(means, log_scales, logits):
        log_weights = logits - jlogsumexp(logits)
        z = (DATA[:, None] - means[None, :]) / jnp.exp(log_scales)[None, :]
        per_component = log_weights[None, :] - 0.5 * z ** 2 - log_scales[None, :] - 0.5 * jnp.log(2 * jnp.pi)
        return jnp.sum(jlogsumexp(per_component, axis=1))

    return jax, {"glm_gammaln": glm, "black_scholes_norm_cdf": bs, "gp_cho_solve": gp, "mixture_logsumexp": mixture}


@pytest.mark.parametrize("name", PROGRAMS)
def test_generated_gradient_matches_jax(name):
    jax, ported = _jax_programs()
    f, args = PROGRAMS[name]
    wrt = tuple(range(len(args)))
    got = astgrad.grad(f, wrt=wrt)(*args)
    with jax.enable_x64(True):  # float64 inside this test only
        want = jax.grad(ported[name], argnums=wrt)(*[np.asarray(a, dtype=np.float64) for a in args])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, np.asarray(w), rtol=1e-8, atol=1e-10)


def test_the_tape_runs_the_glm_and_the_price():
    """scipy.special's ufuncs reach the tape by themselves; norm.cdf through astgrad.rules.apply."""
    from astgrad import rules

    beta = astgrad.tensor(np.array([0.3, -0.2, 0.1]), requires_grad=True)
    glm_negative_binomial(beta, 0.4).backward()
    np.testing.assert_allclose(beta.grad.numpy(), _central(glm_negative_binomial, (beta.detach().numpy(), 0.4))[0],
                               rtol=1e-5)
    vol = astgrad.tensor(0.25, requires_grad=True)
    spot, strike, rate, maturity = np.array([95.0, 100.0, 110.0]), 100.0, 0.03, 1.5
    d1 = (np.log(spot / strike) + (rate + vol ** 2 / 2) * maturity) / (vol * np.sqrt(maturity))
    d2 = d1 - vol * np.sqrt(maturity)
    price = (spot * rules.apply(norm.cdf, d1) - strike * np.exp(-rate * maturity) * rules.apply(norm.cdf, d2)).sum()
    price.backward()
    vega = gradient(lambda v: black_scholes(spot, strike, rate, v, maturity), 0.25)
    np.testing.assert_allclose(float(vol.grad.numpy()), vega, rtol=1e-5)
