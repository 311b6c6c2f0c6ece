"""Straight-line code: operators, numpy calls, methods, indexing, broadcasting."""

import math

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 4))
B = RNG.normal(size=(4,))
M = RNG.normal(size=(4, 2))


def arithmetic(x, y):
    return np.sum(x * y - x / (y * y + 1.0) + (-x) ** 2 + 2.0 ** y - 3 * x)


def matmul_2d(w, v):
    return np.sum(np.tanh(w @ v))


def broadcasting(a, row):
    return np.sum((a + row) * row / (1.0 + a * a))


def numpy_calls(x):
    s = np.sum(x, axis=0, keepdims=True)
    m = np.mean(x * s, axis=1)
    return np.sum(np.exp(-m)) + np.max(np.sin(x)) + np.linalg.norm(x)


def methods(x):
    return x.T.dot(x).sum() + x.mean(axis=1).max() + x.reshape(-1)[2] ** 2 + x.sum(axis=0).std()


def shape_constant(x):
    n = x.shape[0]
    return np.sum(x) / n + x.size * np.mean(x)


def math_functions(x):
    return math.sin(x) * math.exp(x) + math.sqrt(x) - math.log(x) + math.tanh(x) * math.cos(x)


def numpy_scalar(x):
    y = np.float64(2.0) * x
    return y * np.sin(x)


def unpacking(x):
    a, b = x * 2, np.cos(x)
    a, b = b, a
    c = d = a * b
    return np.sum(c + d + a)


def augmented(x):
    y = x * 1.0
    y += x
    y *= x
    y -= 1.0
    y /= 2.0
    y **= 2
    return np.sum(y)


def subscripts(x):
    return np.sum(x[1:, ::2]) + x[0, 1] * x[1, 0] + np.sum(x[np.array([0, 1, 1])]) + np.sum(x[0, :] * x[-1])


def item_assignment(x):
    y = np.zeros(x.shape)
    y[0] = x[1] * 2
    y[1:] = np.sin(x[1:])
    y[0] += x[0]
    return np.sum(y * y)


def reductions_and_shapes(x):
    y = np.transpose(x)
    z = np.concatenate([y, y * 2], axis=0)
    w = np.stack([x[0], x[1]], axis=1)
    return np.sum(z ** 2) + np.sum(np.squeeze(np.expand_dims(w, 0)) ** 3) + np.prod(x[0])


def two_dimensional(w):
    return np.sum(w @ M)


def clip_and_where(x):
    return np.sum(np.clip(x, -0.5, 0.5) * 2 + np.where(x > 0, x, x * x) + np.maximum(x, 0.1) + abs(x))


def float_cast(x):
    return float(x) * 3.0 + x


CASES = [
    (arithmetic, (A, A + 2.5), (0, 1)),
    (matmul_2d, (A, B), (0, 1)),
    (broadcasting, (A, B), (0, 1)),
    (numpy_calls, (A,), (0,)),
    (methods, (A,), (0,)),
    (shape_constant, (A,), (0,)),
    (math_functions, (0.7,), (0,)),
    (numpy_scalar, (0.4,), (0,)),
    (unpacking, (B,), (0,)),
    (augmented, (B,), (0,)),
    (subscripts, (A,), (0,)),
    (item_assignment, (B,), (0,)),
    (reductions_and_shapes, (np.abs(A) + 0.5,), (0,)),
    (two_dimensional, (A,), (0,)),
    (clip_and_where, (A,), (0,)),
    (float_cast, (0.3,), (0,)),
]


@pytest.mark.parametrize("f, args, wrt", CASES, ids=[c[0].__name__ for c in CASES])
def test_matches_finite_differences(f, args, wrt):
    assert_grad(astgrad.grad(f, wrt=wrt if len(wrt) > 1 else wrt[0]), f, *args, wrt=wrt)


def test_python_float_gives_python_float():
    g = astgrad.grad(math_functions)(0.7)
    assert type(g) is float


def test_gradient_has_argument_shape_when_zero():
    def constant(x, y):
        return np.sum(y * 2.0)
    g = astgrad.grad(constant)(A, B)
    assert g.shape == A.shape and not g.any()


def test_array_gradient_is_a_fresh_array():
    def identity(x):
        return x
    seed = np.ones(3)
    g = astgrad.vjp(identity)(B[:3], seed)
    assert g is not seed
    np.testing.assert_array_equal(g, seed)
