"""A gradient that is zero on some path reaches rules that index, reshape or
scatter it: the answer is the finite-difference one, never a crash.

Where control flow joins a path without a gradient for a name, the adjoint
holds the number 0.0 for it (its shape is not known there); a list's item
that nothing flowed into is 0.0 too.  Rules that need an array skip their
work for that number.
"""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad

X = np.array([0.3, -0.2, 0.5, 1.1])


def reversed_scale_then_rebound(x):
    v0 = x * 1.0
    v0[::-1] *= -0.5
    if x[0] > -100:  # always taken: v0's scaled value is never read
        v0 = x * 2.0
    return np.sum(v0 * v0)


def reversed_scale_sometimes_rebound(x):
    v0 = x * 1.0
    v0[::-1] *= -0.5
    if x[0] > 0.4:
        v0 = x * 2.0
    return np.sum(v0 * x)


def reshape_in_loop_overwritten(x):
    y = x.reshape(2, 2) * 1.0
    for i in range(2):
        z = y.reshape(4)
        if i > 5:  # never: z's reshaped value gets no gradient
            y = y * 2.0
        z = x * 3.0
    return np.sum(z * y.reshape(4))


def reshape_in_loop_unused(x):
    y = x.reshape(2, 2)
    for i in range(2):
        z = y.reshape(4)
        z = z[::-1] * 0.5
    return np.sum(y * y)


def reshape_read_on_one_path(x):
    z = x * 1.0
    for i in range(3):
        z = x.reshape(2, 2).reshape(4)
        if x[1] > 0.0:
            z = x * 2.0
    return np.sum(z * z)


def list_item_replaced(x):
    lst = [x, x * 2.0]
    lst[0] = x * 5.0
    return np.sum(lst[0] * lst[1])


def list_of_numbers_item_replaced(x):
    lst = [1.0, 2.0]
    lst[0] = x * 5.0
    return np.sum(lst[0]) + lst[1]


def list_item_replaced_not_read(x):
    lst = [x, x * 2.0]
    lst[0] = x.reshape(2, 2)
    return np.sum(lst[1] ** 2)


def list_item_replaced_by_its_neighbour(x):
    lst = [x, x * 2.0]
    lst[1] = lst[0] * 3.0
    return np.sum(np.stack(lst) ** 2)


def list_items_replaced_in_loop(x):
    lst = [x, x * 2.0]
    for i in range(2):
        lst[i] = lst[i] * lst[1 - i]
    return np.sum(lst[0] + lst[1])


def list_slice_replaced(x):
    lst = [x, x * 2.0, x * 3.0]
    lst[0:2] = [x * 3.0, np.sin(x)]
    return np.sum(lst[0] * lst[1] * lst[2])


def helper_reshaping(a):
    return a.reshape(2, 2)


def call_result_unused_on_one_path(x):
    z = x * 1.0
    w = helper_reshaping(z)
    if x[0] > 0.0:
        w = x.reshape(2, 2) * 3.0
    return np.sum(w * w)


CASES = [reversed_scale_then_rebound, reversed_scale_sometimes_rebound, reshape_in_loop_overwritten,
         reshape_in_loop_unused, reshape_read_on_one_path, list_item_replaced, list_of_numbers_item_replaced,
         list_item_replaced_not_read, list_item_replaced_by_its_neighbour, list_items_replaced_in_loop,
         list_slice_replaced, call_result_unused_on_one_path]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("x", [X, -X[::-1].copy()], ids=["x", "flipped"])
def test_matches_finite_differences(f, x):
    assert_grad(astgrad.grad(f), f, x)


def test_list_item_assignment_keeps_the_list():
    def f(x):
        lst = [1.0, x]
        lst[0] = x * 2.0
        return np.sum(lst[0]) + len(lst)
    assert_grad(astgrad.grad(f), f, X)
    assert astgrad.grad(f)(X).shape == X.shape
