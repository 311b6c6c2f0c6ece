"""Course-style state and randomness: ``h[:, t, :], c = step(...)``, ``np.random.rand(*x.shape)``, seeds.

A tuple target may hold subscripts (each target assigned alone, left to
right, after the value is read, as Python does); a call with ``*`` or
``**`` runs as written where the callable gives no gradient; calls that
only set the global random state (``np.random.seed``) are no writes into
what they are given.  References: a backward pass written by hand, central
finite differences, and the tape's ``backward()``.
"""

import numpy as np
import pytest

import astgrad
from tests._numeric import gradient

RNG = np.random.default_rng(5)


def sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def step(x, prev_h, prev_c, Wx, Wh):
    a = x @ Wx + prev_h @ Wh
    c = prev_c * sigmoid(a) + np.tanh(a)
    return np.tanh(c), c


def recurrent_loss(Wx, Wh, x, h0):
    N, T, _ = x.shape
    H = h0.shape[1]
    h = np.zeros((N, T, H))
    c = np.zeros((N, H))
    h[:, 0, :], c = step(x[:, 0, :], h0, c, Wx, Wh)
    for t in range(1, T):
        h[:, t, :], c = step(x[:, t, :], h[:, t - 1, :].copy(), c, Wx, Wh)
    return np.sum(h * h)


def recurrent_backward(Wx, Wh, x, h0):
    """By hand, through time: (dWx, dWh)."""
    N, T, _ = x.shape
    H = h0.shape[1]
    prevs, cs, acts, hs = [], [np.zeros((N, H))], [], []
    prev = h0
    for t in range(T):
        a = x[:, t, :] @ Wx + prev @ Wh
        c = cs[-1] * sigmoid(a) + np.tanh(a)
        prevs.append(prev)
        acts.append(a)
        cs.append(c)
        prev = np.tanh(c)
        hs.append(prev)
    dWx, dWh = np.zeros_like(Wx), np.zeros_like(Wh)
    dprev, dc_next = np.zeros((N, H)), np.zeros((N, H))
    for t in reversed(range(T)):
        dh = 2 * hs[t] + dprev
        dc = dh * (1 - hs[t] ** 2) + dc_next
        s = sigmoid(acts[t])
        da = dc * cs[t] * s * (1 - s) + dc * (1 - np.tanh(acts[t]) ** 2)
        dc_next = dc * s
        dWx += x[:, t, :].T @ da
        dWh += prevs[t].T @ da
        dprev = da @ Wh.T
    return dWx, dWh


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_a_recurrence_writing_preallocated_state_through_tuple_targets(optimize):
    Wx, Wh = RNG.normal(size=(3, 4)) * 0.5, RNG.normal(size=(4, 4)) * 0.5
    x, h0 = RNG.normal(size=(2, 5, 3)), RNG.normal(size=(2, 4))
    dWx, dWh = astgrad.grad(recurrent_loss, wrt=(0, 1), optimize=optimize)(Wx, Wh, x, h0)
    by_hand = recurrent_backward(Wx, Wh, x, h0)
    np.testing.assert_allclose(dWx, by_hand[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWh, by_hand[1], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWh, gradient(lambda w: recurrent_loss(Wx, w, x, h0), Wh), rtol=1e-6, atol=1e-8)


def test_targets_are_assigned_left_to_right_after_the_value_is_read():
    def f(x):
        i = 0
        a = np.zeros(3)
        i, a[i] = 2, x[0] * x[1]  # a[2]: i is rebound first, as in Python
        b, (c, a[0]) = x[2], (x[1], 3.0 * x[2])
        return np.sum(a * x) + b * c
    x = np.array([1.5, -2.0, 0.5])
    np.testing.assert_allclose(astgrad.grad(f)(x), gradient(f, x), rtol=1e-7)


def dropout_loss(x, param):
    np.random.seed(param["seed"])
    mask = (np.random.rand(*x.shape) < param["p"]) / param["p"]
    return np.sum((x * mask) ** 2)


def test_dropout_with_a_seed_and_a_spread_shape_in_both_engines():
    x, param = RNG.normal(size=(4, 5)), {"seed": 7, "p": 0.6}
    got = astgrad.grad(dropout_loss)(x, param)
    np.random.seed(7)
    mask = (np.random.rand(4, 5) < 0.6) / 0.6
    np.testing.assert_allclose(got, 2 * x * mask ** 2, rtol=1e-12)  # by hand
    np.testing.assert_allclose(got, gradient(lambda v: dropout_loss(v, param), x), rtol=1e-6, atol=1e-8)
    taped = astgrad.tensor(x, requires_grad=True)
    dropout_loss(taped, param).backward()
    np.testing.assert_allclose(taped.grad.numpy(), got, rtol=1e-12)
    dparam = astgrad.grad(dropout_loss, wrt=1)(x, param)  # the seed is a number: a zero; p moves the scale
    np.testing.assert_allclose(dparam["p"], gradient(lambda p: dropout_loss(x, {"seed": 7, "p": p}), 0.6), rtol=1e-6)


def test_spread_arguments_into_what_gives_a_gradient_are_refused_located():
    def into_a_rule(x):
        return np.sum(np.add(*x))

    def keywords(x):
        spec = {"low": 2.0, "high": 2.0, "size": x.shape}
        return np.sum(x * np.random.uniform(**spec))
    with pytest.raises(astgrad.TransformError, match=r"\*args or \*\*kwargs in a call of np.add") as info:
        astgrad.grad(into_a_rule)
    assert info.value.lineno == into_a_rule.__code__.co_firstlineno + 1
    x = RNG.normal(size=3)
    np.testing.assert_allclose(astgrad.grad(keywords)(x), 2.0 * np.ones(3))


def recurrent_loss_through_views(Wx, Wh, x, h0):
    N, T, _ = x.shape
    h = np.zeros((N, T, h0.shape[1]))
    c = np.zeros(h0.shape)
    h[:, 0, :], c = step(x[:, 0, :], h0, c, Wx, Wh)
    for t in range(1, T):
        h[:, t, :], c = step(x[:, t, :], h[:, t - 1, :], c, Wx, Wh)  # a view of h, read by step only
    return np.sum(h * h)


def test_a_view_of_the_state_passed_into_a_function_that_returns_new_arrays():
    Wx, Wh = RNG.normal(size=(3, 4)) * 0.5, RNG.normal(size=(4, 4)) * 0.5
    x, h0 = RNG.normal(size=(2, 5, 3)), RNG.normal(size=(2, 4))
    dWx, dWh = astgrad.grad(recurrent_loss_through_views, wrt=(0, 1))(Wx, Wh, x, h0)
    by_hand = recurrent_backward(Wx, Wh, x, h0)
    np.testing.assert_allclose(dWx, by_hand[0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWh, by_hand[1], rtol=1e-10, atol=1e-12)


KEPT = []


def returns_it(v, c):
    return v, c + 1.0


def returns_a_view(v, c):
    return v[:, :2] * 1.0, v[:, 1:]


def keeps_it(v, c):
    KEPT.append(v)
    return v * 2.0, c * 2.0


keep = KEPT.append


def keeps_it_through_a_name(v, c):
    keep(v)
    return v * 2.0, c * 2.0


def repeats_it(v, c):
    return v * 2, c * 2.0  # v a list would be repeated, its items shared


def through(fn):
    def loss(x):
        h = np.zeros((3, 4, 2))
        c = np.zeros((3, 2))
        for t in range(1, 4):
            h[:, t, :], c = fn(h[:, t - 1, :] + x, c)  # a new array: fine whatever fn does
            h[:, t, :], c = fn(h[:, t - 1, :], c + x)
        return np.sum(h) + np.sum(c)
    loss.__name__ = f"through_{fn.__name__}"
    return loss


@pytest.mark.parametrize("fn", [returns_it, returns_a_view, keeps_it, keeps_it_through_a_name, repeats_it])
def test_a_view_passed_to_a_function_whose_result_may_share_it_stays_refused(fn):
    # refused when transformed, or (a result the analysis cannot tell from a number) by the check made right
    # after the call when it runs: both before any number comes out
    with pytest.raises((astgrad.TransformError, TypeError), match="shares? memory with h|may change v in place"):
        astgrad.grad(through(fn))(np.ones(2))
