"""Control flow: branches, loops, break/continue, several returns."""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad

X = np.array([0.3, -0.2, 0.5])


def if_elif_else(x):
    s = np.sum(x)
    if s > 1.0:
        y = x * 2
    elif s > 0.0:
        y = np.sin(x) * x
    else:
        y = x ** 3
    return np.sum(y)


def conditional_expression(x):
    y = x * x if np.sum(x) > 0 else -x
    return np.sum(y * x)


def if_without_else(x):
    y = x * 1.5
    if np.max(x) > 0.4:
        y = y * x
    return np.sum(y)


def for_range(x, n):
    y = x
    for i in range(n):
        y = y * x + np.sin(y) * i
    return np.sum(y)


def for_over_array(x):
    total = 0.0
    for row in x:
        total = total + np.sum(row * row)
    return total


def for_over_list(x):
    total = 0.0
    for w in [0.5, -1.0, 2.0]:
        total = total + np.sum(np.exp(x * w))
    return total


def for_enumerate_zip(x, y):
    total = 0.0
    for i, v in enumerate(x):
        total = total + v * i
    for a, b in zip(x, y):
        total = total + a * b
    return total


def while_norm(x):
    y = x
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y)


def while_counter(x):
    i = 0
    y = x
    while i < 4:
        y = np.cos(y) + x
        i = i + 1
    return np.sum(y)


def with_break(x):
    s = 0.0
    for i in range(10):
        s = s + np.sum(x * i)
        if s > 5:
            break
        s = s * 1.1
    return s


def with_continue(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s = s + np.sum(np.sin(x * i))
    return s


def while_break(x):
    y = x
    n = 0
    while True:
        y = y * 1.5 + 0.1
        n = n + 1
        if np.sum(y) > 10 or n > 20:
            break
    return np.sum(y * y)


def several_returns(x):
    s = np.sum(x)
    if s > 0.5:
        return s * s
    if s > 0.0:
        return np.sum(np.exp(x))
    return -s


def return_in_loop(x):
    y = x
    for i in range(10):
        y = y * 1.3
        if np.sum(y) > 3:
            return np.sum(y * y)
    return np.sum(y)


def nested_loops(x):
    y = x
    for i in range(3):
        for j in range(2):
            y = np.sin(y) * (i + j + 1)
    return np.sum(y)


def and_or(x):
    s = np.sum(x)
    if s > 0 and np.max(x) < 1 or s < -5:
        return np.sum(x * x)
    return np.sum(x)


CASES = [
    (if_elif_else, (X,)), (if_elif_else, (X * 5,)), (if_elif_else, (-X * 3,)),
    (conditional_expression, (X,)), (conditional_expression, (-X * 2,)),
    (if_without_else, (X,)), (if_without_else, (X * 0.5,)),
    (for_range, (X, 3)), (for_range, (X, 0)),
    (for_over_array, (np.arange(6.0).reshape(3, 2) / 5,)),
    (for_over_list, (X,)),
    (while_norm, (X,)), (while_counter, (X,)),
    (with_break, (np.array([0.3, 0.25]),)), (with_continue, (X,)), (while_break, (X,)),
    (several_returns, (X * 2,)), (several_returns, (X * 0.5,)), (several_returns, (-X * 2,)),
    (return_in_loop, (X * 2,)), (return_in_loop, (-X,)),
    (nested_loops, (X,)), (and_or, (X,)), (and_or, (-X,)),
]


@pytest.mark.parametrize("f, args", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_matches_finite_differences(f, args):
    assert_grad(astgrad.grad(f), f, *args)


def test_two_arguments_through_zip():
    y = np.array([1.0, 2.0, -1.0])
    assert_grad(astgrad.grad(for_enumerate_zip, wrt=(0, 1)), for_enumerate_zip, X, y, wrt=(0, 1))


def test_tutorial_while_loop_gradient_is_the_power_of_two():
    # y doubles until its norm reaches 1000; dy/dx is 2**k with k the number of doublings
    x = np.array([0.5, -0.25, 1.0])
    k = 0
    while np.linalg.norm(x * 2 ** k) < 1000:
        k += 1
    np.testing.assert_allclose(astgrad.grad(while_norm)(x), np.full(3, 2.0 ** k))
