"""backend="numba" for np.squeeze, np.reshape of broadcast gradients and np.dot.

Numba has no np.squeeze, reshapes only contiguous arrays and cannot call
the rule helpers np.dot's gradient calls; each is lowered (squeeze_along,
reshaped, the helpers' Numba implementations).  The gradients are compiled
once per module (fixtures); each is checked against the numpy backend and
against central differences, and the ways a squeeze could give a wrong
number without an error (an axis of length 2 at a later call) raise.
"""

import warnings

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

pytest.importorskip("numba")

RNG = np.random.default_rng(11)


def mlp_1d(W1, b1, W2, x, y):
    h = np.tanh(x @ W1 + b1)  # a 1-d x: the rule of @ squeezes the axis it added
    return np.sum((h @ W2 - y) ** 2)


def squeezes(A, w, c):
    col = np.squeeze(A @ w, axis=1)  # (n, 1) -> (n,)
    last = (A @ w).squeeze(-1)  # the method, a negative axis
    both = np.squeeze(c @ A @ w, (0, 1))  # (1, 1) -> a 0-d array
    flat = np.reshape(np.cumsum(col), (1, -1))  # the reshape of a broadcast gradient
    return np.sum(col * last) + both * 3.0 + np.sum(np.sin(flat))


def dots(A, v, B, u):
    return np.sum(np.dot(A, v) ** 2) + np.sum(np.dot(u, A) * 2.0) + np.sum(np.tanh(np.dot(A, B))) \
        + np.dot(v, v) * 0.5


def unaxed(A, w):
    return np.sum(np.squeeze(A @ w) ** 2)


CASES = {
    "mlp_1d": (mlp_1d, (0, 1, 2, 3), (RNG.standard_normal((4, 5)), RNG.standard_normal(5),
                                      RNG.standard_normal((5, 2)), RNG.standard_normal(4), RNG.standard_normal(2))),
    "squeezes": (squeezes, (0, 1, 2), (RNG.standard_normal((3, 4)), RNG.standard_normal((4, 1)),
                                       RNG.standard_normal((1, 3)))),
    "dots": (dots, (0, 1, 2, 3), (RNG.standard_normal((3, 4)), RNG.standard_normal(4), RNG.standard_normal((4, 2)),
                                  RNG.standard_normal(3))),
}


@pytest.fixture(scope="module")
def compiled():
    """Each case's numba gradient, called once (compiled), beside the numpy backend's."""
    out = {}
    for name, (fn, wrt, args) in CASES.items():
        gradient = astgrad.grad(fn, wrt=wrt, backend="numba")
        out[name] = (gradient, gradient(*args), astgrad.grad(fn, wrt=wrt)(*args))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_numba_gradient_is_the_numpy_backends(compiled, name):
    _, got, numpy = compiled[name]
    for a, b in zip(got, numpy):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_numba_gradient_matches_finite_differences(compiled, name):
    fn, wrt, args = CASES[name]
    _, got, _ = compiled[name]
    for value, index in zip(got, wrt):
        np.testing.assert_allclose(value, numeric_grad(fn, args, index), rtol=1e-6, atol=1e-7)


def test_the_compiled_code_is_the_lowered_squeeze(compiled):
    source = "\n".join(line for line in compiled["squeezes"][0].source.splitlines()
                        if not line.lstrip().startswith("#"))  # the comments quote the user's lines
    assert "np.squeeze" not in source and "np.reshape" not in source
    assert "squeeze_along(" in source and "reshaped(" in source
    assert "squeeze_along(" in compiled["mlp_1d"][0].source


def test_new_values_of_the_same_kinds_run_the_compiled_code(compiled):
    gradient = compiled["mlp_1d"][0]
    fn, wrt, args = CASES["mlp_1d"]
    other = tuple(a * 0.5 - 0.1 for a in args)
    for a, b in zip(gradient(*other), astgrad.grad(fn, wrt=wrt)(*other)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_squeezing_an_axis_of_length_two_raises_as_numpy_does(compiled):
    gradient = compiled["squeezes"][0]
    A, w, c = CASES["squeezes"][2]
    with pytest.raises(ValueError, match="cannot select an axis to squeeze out") as info:
        gradient(A, np.ones((4, 2)), c)  # same ranks, so the same machine code: it must check the length
    assert "np.squeeze(A @ w, axis=1)" in "\n".join(getattr(info.value, "__notes__", []))


def test_squeeze_without_an_axis_is_refused_at_the_users_line():
    with pytest.raises(astgrad.TransformError, match="np.squeeze without an axis") as info:
        astgrad.grad(unaxed, backend="numba")
    message = str(info.value)
    assert "test_numba_squeeze.py" in message and "np.squeeze(A @ w)" in message
    assert "axis=1" in message  # says what to write instead


def test_squeeze_without_an_axis_falls_back_under_auto():
    A, w = RNG.standard_normal((3, 4)), RNG.standard_normal((4, 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gradient = astgrad.grad(unaxed, backend="auto")
        got = gradient(A, w)
    assert any("np.squeeze without an axis" in str(w.message) for w in caught)
    np.testing.assert_allclose(got, numeric_grad(unaxed, (A, w), 0), rtol=1e-6)
