"""np.split and its kin into parts of unequal shapes, the list of parts named twice or concatenated again.

The gradient of a list of parts is a list, never one array numpy would
stack (it cannot, for parts of unequal shapes): ``q = parts; q[0]`` crashed
inside astgrad, and the hessian of ``np.concatenate(np.split(...))`` was
refused in astgrad's own helper.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from _numeric import gradient

V = np.array([0.7, -1.1, 0.4, 1.6, -0.3])
M = np.arange(1.0, 25.0).reshape(2, 3, 4) / 10


def split_named_twice(v):
    parts = np.split(v, [2])
    q = parts
    return np.sum(q[0] * 3) + np.sum(parts[1] ** 2)


def array_split_named_twice(v):
    parts = np.array_split(v, 2)
    q = parts
    return np.sum(q[0] ** 3) * np.sum(parts[1])


def split_joined_again(v):
    parts = np.split(v, [1, 3])
    return np.sum(np.concatenate(parts) ** 3) + np.sum(parts[2] ** 2)


def hsplit_named_twice(m):
    parts = np.hsplit(m, [1])
    q = parts
    return np.sum(q[0] ** 2) + np.sum(parts[1] ** 3)


def vsplit_named_twice(m):
    parts = np.vsplit(m, [1])
    q = parts
    return np.sum(q[1] ** 2) * np.sum(parts[0])


def dsplit_named_twice(m):
    parts = np.dsplit(m, [3])
    q = parts
    return np.sum(q[0] * parts[0]) + np.sum(parts[1] ** 3)


CASES = [(split_named_twice, V), (array_split_named_twice, V), (split_joined_again, V),
         (hsplit_named_twice, M), (vsplit_named_twice, M), (dsplit_named_twice, M)]


@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_gradient(f, x, level):
    np.testing.assert_allclose(astgrad.grad(f, optimize=level)(x.copy()), gradient(f, x), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f, x", CASES, ids=[f.__name__ for f, _ in CASES])
def test_forward_mode_and_tape(f, x):
    expected = gradient(f, x)
    np.testing.assert_allclose(astgrad.jacfwd(f)(x.copy()), expected, rtol=1e-6, atol=1e-6)
    t = torch.tensor(x.copy(), requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("f", [split_named_twice, array_split_named_twice, split_joined_again],
                         ids=lambda f: f.__name__)
def test_hessian(f):
    g = astgrad.grad(f)
    expected = np.array([gradient(lambda p, i=i: g(p)[i], V) for i in range(V.size)])
    np.testing.assert_allclose(astgrad.hessian(f)(V.copy()), expected, rtol=1e-5, atol=1e-5)
