"""A library function is a primitive with a rule, or refused at the user's call under its real name.

astgrad never differentiates a library's source: scipy.linalg.cho_solve
without a rule would be followed into scipy and refused at a line inside
scipy, or worse, differentiated through whatever it happens to run.  And
scipy's rules load only once the program imports scipy.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import astgrad
from astgrad import rules
from _numeric import gradient

special = pytest.importorskip("scipy.special")
sla = pytest.importorskip("scipy.linalg")
stats = pytest.importorskip("scipy.stats")

SRC = os.path.join(os.path.dirname(__file__), "..", "..", "src")


def _run(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(SRC))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_importing_astgrad_never_imports_scipy():
    assert _run("import sys, astgrad; print('scipy' in sys.modules)") == "False"


def test_a_users_rule_for_a_scipy_function_is_kept_when_more_scipy_rules_load():
    out = _run("""
        import numpy as np, scipy.special, astgrad
        from astgrad import rules
        def mine(g, ans, x):
            return g * 0.0
        astgrad.defvjp(scipy.special.gammaln, mine)
        import scipy.stats  # its rules load at the next miss, after the user's
        rules.find(np.vectorize)
        print(rules.lookup(scipy.special.gammaln).vjp is mine, rules.find(scipy.stats.norm.cdf) is not None)
    """)
    assert out == "True True"


# -- programs calling library functions without rules -------------------------------------------------


def uses_spence(x):
    return np.sum(special.spence(x))


def uses_cosm(a):
    return np.sum(sla.cosm(a))


def uses_fmean(x):
    return statistics.fmean(x * 2.0)


def uses_ppf(p):
    return np.sum(stats.norm.ppf(p))


@pytest.mark.parametrize("f, arg, name", [
    (uses_spence, np.array([0.5, 1.5]), "scipy.special.spence"),
    (uses_cosm, np.eye(2) * 2.0, "scipy.linalg.cosm"),
    (uses_fmean, np.array([0.5, 1.5]), "statistics.fmean"),
    (uses_ppf, np.array([0.3, 0.6]), "scipy.stats.norm.ppf"),
], ids=["ufunc", "python_function", "standard_library", "method_of_a_library_object"])
def test_refused_at_the_users_line_under_the_library_name(f, arg, name):
    with pytest.raises(astgrad.TransformError) as error:
        astgrad.grad(f)(arg)
    text = str(error.value)
    assert text.startswith(f"{__file__}:"), text  # the user's file, never scipy's
    assert f"no gradient rule for {name}" in text
    assert f"astgrad.defvjp({name}, rule)" in text
    assert "site-packages" not in text and "numpy.spence" not in text


def test_a_library_python_function_is_said_to_be_one():
    with pytest.raises(astgrad.TransformError) as error:
        astgrad.grad(uses_cosm)(np.eye(2) * 2.0)
    assert "never through their source" in str(error.value)


def test_a_library_function_of_constants_only_runs():
    def f(x):
        return np.sum(x * special.comb(5, 2))  # no rule, and no gradient wanted through it
    np.testing.assert_allclose(astgrad.grad(f)(np.ones(3)), np.full(3, 10.0))


# -- a function differentiable in some arguments only ----------------------------------------------------


def bessel_in_order(v, x):
    return np.sum(special.iv(v, x))


def test_a_gradient_in_an_argument_without_one_is_refused_in_both_engines():
    v, x = np.array([0.5, 1.5]), np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="scipy.special.iv has no gradient in its argument v"):
        astgrad.grad(bessel_in_order, wrt=0)(v, x)
    tv, tx = astgrad.tensor(v, requires_grad=True), astgrad.tensor(x)
    with pytest.raises(ValueError, match="scipy.special.iv has no gradient in its argument v"):
        special.iv(tv, tx).sum().backward()
    np.testing.assert_allclose(astgrad.grad(bessel_in_order, wrt=1)(v, x),
                               gradient(lambda x: bessel_in_order(v, x), x))


# -- methods of library objects ----------------------------------------------------------------------------

dist = stats.norm


def log_likelihood(x):
    return np.sum(dist.logcdf(x) + stats.norm.logpdf(x, 0.5, 2.0))


def test_a_method_of_a_library_object_is_its_rule_and_follows_a_rebinding():
    global dist
    x = np.array([-0.3, 0.4, 1.2])
    g = astgrad.grad(log_likelihood)
    np.testing.assert_allclose(g(x), gradient(log_likelihood, x), rtol=1e-6)
    dist = stats.logistic
    try:
        np.testing.assert_allclose(g(x), gradient(log_likelihood, x), rtol=1e-6)
    finally:
        dist = stats.norm


def test_the_tape_reaches_a_python_function_through_apply():
    x = np.array([0.3, -1.2, 2.0])
    t = astgrad.tensor(x, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):  # scipy turns the Tensor into an array first
        special.logsumexp(t)
    rules.apply(special.logsumexp, t).backward()
    np.testing.assert_allclose(t.grad.numpy(), gradient(special.logsumexp, x), rtol=1e-6)
