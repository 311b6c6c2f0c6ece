"""Writes through an index that names one element twice keep numpy's last write, in every engine.

``y[[0, 0]] = v`` stores ``v[1]``; ``y[[0, 0, 1]] += v`` stores ``y[0] + v[1]`` (numpy's buffered
semantics: the first ``v[0]`` is lost). The lost write moves nothing, so it gets no gradient: the
generated reverse sweep, the forward sweep, the hessian (forward over reverse), grad of a gradient
and the tape all agree with central differences of numpy's own run. ``np.add.at`` and reading
``x[[0, 0]]`` still sum.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from _numeric import gradient

X = np.array([0.7, -1.2, 0.4, 1.5])


def augmented_with_repeats(v):
    y = v * v
    y[[0, 0, 1]] += v[1:] * v[1:]
    return np.sum(y * y)


def assigned_twice(v):
    y = v[1:] * 0.0  # zeros, in both engines
    y[[0, 0]] = v[:2] ** 3
    return np.sum(y * y) + np.sum(y * v[1:])


def two_dimensional_fancy(v):
    y = np.outer(v[:2], v[2:]) * 0.0
    y[[0, 0], [1, 1]] = v[:2] * 3
    y[np.array([1, 1]), 0] = np.sin(v[2:])
    return np.sum(y * y)


def index_array_and_broadcast_value(v):
    y = v * 1.0
    idx = np.array([2, 2, 3, 2])
    y[idx] = v[0] * v[1]  # one value written four times: it lands once at 2, once at 3
    return np.sum(y * v)


def multiplied_with_repeats(v):
    y = v * 1.0
    y[[3, 0, 3, 1]] *= v[:4] ** 2
    return np.sum(y * y)


def rows_with_repeats(v):
    m = np.outer(v, v)
    m[[1, 1, 2]] = m[[0, 3, 3]] * 2.0
    return np.sum(m * m)


def reads_repeat_and_sum(v):
    return np.sum(v[[0, 0, 1]] ** 2)


CASES = [augmented_with_repeats, assigned_twice, two_dimensional_fancy, index_array_and_broadcast_value,
         multiplied_with_repeats, rows_with_repeats, reads_repeat_and_sum]


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_generated_gradient_keeps_the_last_write(f, level):
    np.testing.assert_allclose(astgrad.grad(f, optimize=level)(X.copy()), gradient(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_forward_mode_keeps_the_last_write(f):
    np.testing.assert_allclose(astgrad.jacfwd(f)(X.copy()), gradient(f, X), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_keeps_the_last_write(f):
    g = astgrad.grad(f)
    expected = np.array([gradient(lambda p, i=i: g(p)[i], X) for i in range(X.size)])
    np.testing.assert_allclose(astgrad.hessian(f)(X.copy()), expected, rtol=1e-5, atol=1e-5)


_GRADIENT = astgrad.grad(augmented_with_repeats)


def gradient_norm(v):
    return np.sum(_GRADIENT(v) ** 2)


def test_grad_of_a_gradient_keeps_the_last_write():
    np.testing.assert_allclose(astgrad.grad(gradient_norm)(X.copy()), gradient(gradient_norm, X), rtol=1e-6)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_tape_keeps_the_last_write(f):
    t = torch.tensor(X.copy(), requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), gradient(f, X), rtol=1e-6, atol=1e-6)


def test_tape_second_order_keeps_the_last_write():
    t = torch.tensor(X.copy(), requires_grad=True)
    (g,) = torch.autograd.grad(augmented_with_repeats(t), t, create_graph=True)
    (g ** 2).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), gradient(gradient_norm, X), rtol=1e-6)


def random_writes(v, rows, cols, source):
    y = np.outer(v[:3], v[1:]) * 0.5
    y[rows, cols] = v[source] * v[source[::-1]]
    y[rows[::-1]] += np.exp(v[: len(rows)])[:, None]
    return np.sum(y * y * np.arange(1.0, 10.0).reshape(3, 3))


@pytest.mark.parametrize("seed", range(6))
def test_random_repeated_indices_in_both_engines(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 5))
    rows, cols = rng.integers(0, 3, n), rng.integers(0, 3, n)
    source = rng.integers(0, 4, n)
    v = rng.standard_normal(4) * 0.5
    expected = gradient(lambda p: random_writes(p, rows, cols, source), v)
    got = astgrad.grad(random_writes)(v.copy(), rows, cols, source)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    t = torch.tensor(v.copy(), requires_grad=True)
    random_writes(t, rows, cols, source).backward()
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_last_writes_asks_numpy_which_write_lasts():
    from astgrad.rules import _extra
    kept = _extra.last_writes((3,), [0, 2, 0, 0])
    assert kept.tolist() == [False, True, False, True]
    assert _extra.last_writes((3,), np.array([True, False, True])) is True  # a mask never repeats
    assert _extra.last_writes((3, 3), (slice(None), 1)) is True
