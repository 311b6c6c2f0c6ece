"""A plain alias, then a write in place: both names see the write, as in numpy.

``scores = H; H -= np.max(H, axis=1, keepdims=True)`` (a softmax shifted for
stability, as course code writes it) was refused.  Where the alias surely
names the array written (bound once, by ``z = x``, in the write's own block
before it), the generated code binds ``z = x`` again after each write, which
is numpy's value; the gradient is compared with the hand-written one and with
central differences, in reverse and forward mode (the tape refuses it, as PyTorch does: the max
kept the array the write changes).  Where the
analysis cannot tell (an alias bound in one branch, before a loop, a write
through the alias), it stays refused, located.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError
from tests._numeric import directional, gradient


def softmax_loss(W, X, y):
    H = X @ W
    scores = H
    H -= np.max(H, axis=1, keepdims=True)
    probs = np.exp(scores)
    probs /= np.sum(probs, axis=1, keepdims=True)
    return -np.mean(np.log(probs[np.arange(X.shape[0]), y]))


def _hand_softmax_gradient(W, X, y):
    H = X @ W
    p = np.exp(H - H.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    return X.T @ p / len(y)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, 3)) * 3, rng.standard_normal((6, 4)), rng.integers(0, 3, 6)


def test_the_alias_sees_the_write_in_value():
    W, X, y = _data()
    H = X @ W
    reference = -np.mean(np.log(np.exp(H - H.max(1, keepdims=True))[np.arange(6), y]
                                / np.exp(H - H.max(1, keepdims=True)).sum(1)))
    value, _ = astgrad.value_and_grad(softmax_loss)(W, X, y)
    assert np.isclose(value, reference, rtol=1e-13)
    assert np.isclose(softmax_loss(W, X, y), reference, rtol=1e-13)


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_softmax_with_an_alias_then_a_write(optimize):
    W, X, y = _data()
    got = astgrad.grad(softmax_loss, optimize=optimize)(W, X, y)
    np.testing.assert_allclose(got, _hand_softmax_gradient(W, X, y), rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(got, gradient(lambda w: softmax_loss(w, X, y), W), rtol=1e-6, atol=1e-8)


def test_forward_mode_and_the_tape_agree():
    W, X, y = _data(1)
    v = np.random.default_rng(2).standard_normal(W.shape)
    _, tangent = astgrad.jvp(softmax_loss)(W, X, y, v)
    assert np.isclose(tangent, directional(lambda w: softmax_loss(w, X, y), W, v), rtol=1e-6)
    assert np.isclose(tangent, np.sum(_hand_softmax_gradient(W, X, y) * v), rtol=1e-10)
    Wt = astgrad.tensor(W, requires_grad=True)
    # the tape writes in place as numpy does, and refuses as PyTorch does: max saved the H it changes
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        softmax_loss(Wt, astgrad.tensor(X), y).backward()


def two_writes_in_a_loop(w, n):
    total = 0.0
    for _ in range(n):
        h = w * 2.0
        seen = h
        h += 1.0
        h *= w
        total = total + np.sum(seen * seen)
    return total


def test_each_write_in_a_loop_rebinds_the_alias():
    w = np.array([0.3, -1.2, 0.7])
    got = astgrad.grad(two_writes_in_a_loop)(w, 3)
    hand = 3 * 2 * ((2 * w + 1) * w) * (4 * w + 1)  # d/dw sum(((2w + 1) w)^2), three times
    np.testing.assert_allclose(got, hand, rtol=1e-12)
    np.testing.assert_allclose(got, gradient(lambda v: two_writes_in_a_loop(v, 3), w), rtol=1e-6)


def rebound_before_the_write(w):
    h = w * 2.0
    old = h
    h = h * 1.0
    h += 1.0
    return np.sum(old * h)


def test_an_alias_of_an_array_since_replaced_keeps_the_old_values():
    w = np.array([0.5, -2.0])
    got = astgrad.grad(rebound_before_the_write)(w)
    np.testing.assert_allclose(got, 2 * w * 2 + 2 * (2 * w + 1), rtol=1e-12)  # sum(2w (2w + 1))


def alias_in_one_branch(w, flag):
    h = w * 2.0
    seen = w * 3.0
    if flag:
        seen = h
    h += 1.0
    return np.sum(seen * h)


def alias_before_a_loop(w):
    h = w * 2.0
    seen = h
    for _ in range(2):
        h += 1.0
    return np.sum(seen)


def write_through_the_alias(w):
    h = w * 2.0
    seen = h
    seen -= 1.0
    return np.sum(h * h)


@pytest.mark.parametrize("fn", [alias_in_one_branch, alias_before_a_loop, write_through_the_alias])
def test_where_the_analysis_cannot_tell_it_refuses_located(fn):
    with pytest.raises(UnsupportedSyntaxError, match="shares memory|share memory") as info:
        astgrad.grad(fn)(np.array([1.0, 2.0]), *([True] if fn is alias_in_one_branch else []))
    assert "test_alias_then_write_in_place.py" in str(info.value)


def masked_write_through_the_name(w):
    h = w * 1.5
    a = h
    h[h < 0] = 0.0  # a ReLU written into h: a sees it
    return np.sum(a * a * w)


def read_before_and_after(w):
    h = w * 2.0
    z = h
    before = np.sum(z)  # the old values
    h += w
    return before * np.sum(z * z)


def sine_scaled(w):
    h = np.sin(w)
    z = h
    h *= w
    return np.sum(z ** 3)


@pytest.mark.parametrize("fn", [masked_write_through_the_name, read_before_and_after, sine_scaled])
def test_values_and_gradients_against_differences(fn):
    w = np.array([0.4, -0.7, 1.3])
    value, got = astgrad.value_and_grad(fn)(w)
    assert value == fn(w.copy())
    np.testing.assert_allclose(got, gradient(fn, w), rtol=1e-6, atol=1e-8)


def test_hessian_through_the_rebinding():
    w = np.array([0.4, -0.7, 1.3])
    # sum((w sin w)^3): the gradient by hand, then its derivative by differences
    hand_grad = 3 * (w * np.sin(w)) ** 2 * (np.sin(w) + w * np.cos(w))
    np.testing.assert_allclose(astgrad.grad(sine_scaled)(w), hand_grad, rtol=1e-12)
    numeric = np.array([gradient(lambda v: (3 * (v * np.sin(v)) ** 2 * (np.sin(v) + v * np.cos(v)))[i], w)
                        for i in range(3)])
    np.testing.assert_allclose(astgrad.hessian(sine_scaled)(w), numeric, rtol=1e-6, atol=1e-8)


def alias_rebound_by_a_loop(w):
    h = w * 2.0
    z = h
    for z in [w * 5.0]:  # z is the loop's item after this
        pass
    h += 1.0
    return np.sum(z * h)


def test_an_alias_a_loop_rebinds_is_not_taken_for_the_array():
    w = np.array([0.5, -1.0])
    try:
        value, got = astgrad.value_and_grad(alias_rebound_by_a_loop)(w)
    except astgrad.TransformError:
        return  # refused is fine; a number must be numpy's
    assert value == alias_rebound_by_a_loop(w.copy())
    np.testing.assert_allclose(got, gradient(alias_rebound_by_a_loop, w), rtol=1e-6)


def numpy_scalar_alias(w):
    s = np.sum(w)
    t = s
    s += 1.0  # a numpy scalar: numpy rebinds s only, t keeps the old sum
    return t * s


def python_number_alias(w):
    s = 0.0
    prev = s
    s += float(np.sum(w))
    return prev + s


def test_an_alias_of_a_number_keeps_the_old_value():
    w = np.array([0.5, -1.0, 2.0])
    value, got = astgrad.value_and_grad(python_number_alias)(w)
    assert value == python_number_alias(w.copy())
    with pytest.raises(TypeError, match="numpy rebinds only the written name") as info:
        astgrad.grad(numpy_scalar_alias)(w)
    assert "s = s + 1.0" in str(info.value)
