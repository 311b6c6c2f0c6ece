"""A value written into an array keeps its gradient where no value of that array can hold integers.

``u[1:-1] = v`` gives ``v`` the gradient ``through_cast(written(du, ...), u)``:
zeros where ``u`` holds integers or booleans (numpy rounds what it writes
there).  passes/float_casts.py drops the call where ``u`` is proven to hold
floats (a parameter given floats, copies of it, writes into it,
``np.zeros``), so a loop need not save ``u``'s dtype on every trip.  In the
adversarial programs ``u`` holds integers or booleans (given so, made so by
``astype``, a comparison, ``np.zeros(..., dtype=int)``, rebound in a
branch): their written values must get no gradient, checked against central
differences at every level.  What the stencil saves is pinned by
tests/golden/specialised_stencil.py.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(5)


def stencil(kappa, u0):
    u = u0.copy()
    for _ in range(4):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def given_integers(x, u0):
    u = u0.copy()  # u0 an integer array: what is written is rounded
    for i in range(3):
        u[1:3] = x[1:3] * 3.7 + u[0:2]
    return np.sum(u * x)


def made_integers(x, w):
    u = (x * 0).astype(int).copy()
    for i in range(3):
        u[1:3] = x[1:3] * 2.5 * w
    return np.sum(u * x) + np.sum(w * x)


def zeros_of_ints(x, w):
    u = np.zeros(4, dtype=int)
    for i in range(2):
        u[i] = x[i] * 3.3 * w
    return np.sum(u * x) + w * np.sum(x)


def booleans(x, w):
    m = x > 10.0  # all False: writing a positive value makes True
    for i in range(2):
        m[i] = x[i] * w + 20.0
    return np.sum(m * x) + w * np.sum(x ** 2)


def rebound_in_branch(x, w):
    u = x * 1.0
    for i in range(3):
        if i == 1:
            u = (u * 0).astype(int).copy()
        u[0:2] = x[0:2] * w + 0.4
    return np.sum(u * x) + w


def zeros_of_floats(x, w):
    s = 0.0
    for i in range(3):
        u = np.zeros(4)
        u[1:3] = x[1:3] * w
        s = s + np.sum(np.sin(u) * x)
    return s


PROGRAMS = {
    "stencil": (stencil, lambda: (0.3, RNG.standard_normal(6))),
    "given_integers": (given_integers, lambda: (RNG.standard_normal(4), np.arange(4))),
    "made_integers": (made_integers, lambda: (RNG.uniform(1, 2, 4), 0.7)),
    "zeros_of_ints": (zeros_of_ints, lambda: (RNG.uniform(1, 2, 4), 0.9)),
    "booleans": (booleans, lambda: (RNG.uniform(1, 2, 4), 1.3)),
    "rebound_in_branch": (rebound_in_branch, lambda: (RNG.uniform(1, 2, 4), 0.8)),
    "zeros_of_floats": (zeros_of_floats, lambda: (RNG.standard_normal(4), 0.6)),
}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_matches_central_differences(name, level):
    fn, make = PROGRAMS[name]
    args = make()
    wrt = (0,) if name == "given_integers" else (0, 1)
    gradient_fn = astgrad.grad(fn, wrt=wrt, optimize=level)
    for _ in range(2):  # the first call, then the adjoint specialised on the arguments' ranks and floats
        got = gradient_fn(*args)
        got = got if isinstance(got, tuple) else (got,)
        for index, value in zip(wrt, got):
            def at(v, index=index):
                trial = list(args)
                trial[index] = v
                return fn(*trial)
            expected = gradient(at, args[index])
            assert np.shape(value) == np.shape(expected)
            np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


def test_integers_then_floats_get_their_own_adjoint():
    """The adjoint dropped the dtype test for float arrays; called with integers it is not the one that runs."""
    g = astgrad.grad(given_integers, wrt=0)
    x = RNG.standard_normal(4)
    for u0 in (np.arange(4.0), np.arange(4), np.arange(4.0)):
        expected = gradient(lambda v: given_integers(v, u0), x)
        np.testing.assert_allclose(g(x, u0), expected, rtol=1e-5, atol=1e-6)
