"""Calls of user functions, recursion, globals, closures, defaults, lambdas, comprehensions."""

import warnings

import numpy as np
import pytest

import astgrad
from tests._numeric import gradient
from _numeric import assert_grad, numeric_grad

X = np.array([0.3, -0.2, 0.5])
WEIGHT = np.array([1.0, 2.0, 3.0])


def inner(a, b):
    return a * np.exp(b)


def nested(x, y):
    z = inner(x, y) + inner(y, x)
    return np.sum(z)


def square(v):
    return v * v


def calls_twice(x):
    return np.sum(square(square(x)) + inner(x, 2.0))


def factorial_power(x, n):
    if n == 0:
        return x
    return x * factorial_power(x, n - 1)


def fib_like(x, n):
    if n < 2:
        return x
    return fib_like(x, n - 1) * 0.5 + np.sin(fib_like(x, n - 2))


def pair(x):
    return x * 2, np.cos(x)


def uses_tuple_return(x):
    a, b = pair(x)
    return np.sum(a * b)


def scaled(x, scale=2.0, *, shift=0.5):
    return x * scale + shift


def defaults_and_keywords(x):
    return np.sum(scaled(x) * scaled(x, 3.0, shift=x))


def reads_global(x):
    return np.sum(WEIGHT * x * x)


def make_closure(c):
    def f(x):
        return np.sum(np.sin(x * c))
    return f


def with_lambda(x):
    sq = lambda v, k=2.0: v * v * k
    return np.sum(sq(x) + sq(np.sin(x), 3.0))


def list_comprehension(x):
    parts = [x * i for i in range(1, 4) if i != 2]
    return np.sum(np.stack(parts) ** 2)


def list_building(x):
    rows = []
    for i in range(3):
        rows.append(np.sin(x) * i)
    return np.sum(np.concatenate(rows) * 2.0)


def list_indexing(x):
    items = [x, x * 2, np.cos(x)]
    return np.sum(items[0] * items[2]) + np.sum(items[1])


CASES = [
    (calls_twice, (X,)), (factorial_power, (1.3, 4)), (fib_like, (0.7, 5)),
    (uses_tuple_return, (X,)), (defaults_and_keywords, (X,)), (reads_global, (X,)),
    (make_closure(1.7), (X,)), (with_lambda, (X,)), (list_comprehension, (X,)),
    (list_building, (X,)), (list_indexing, (X,)),
]


@pytest.mark.parametrize("f, args", CASES, ids=[c[0].__name__ for c in CASES])
def test_matches_finite_differences(f, args):
    assert_grad(astgrad.grad(f), f, *args)


def test_nested_call_both_arguments():
    assert_grad(astgrad.grad(nested, wrt=(0, 1)), nested, X, X * 2, wrt=(0, 1))


def test_globals_are_read_at_call_time():
    global WEIGHT
    g = astgrad.grad(reads_global)
    saved = WEIGHT
    try:
        WEIGHT = np.array([-1.0, 0.0, 4.0])
        np.testing.assert_allclose(g(X), 2 * WEIGHT * X)
    finally:
        WEIGHT = saved
    np.testing.assert_allclose(g(X), 2 * WEIGHT * X)


def test_closure_value_is_a_constant_of_the_gradient():
    f = make_closure(3.0)
    np.testing.assert_allclose(astgrad.grad(f)(X), 3.0 * np.cos(3.0 * X))


def test_recursion_is_transformed_once_per_activity_pattern():
    source = astgrad.grad(factorial_power).source
    assert source.count("def forward_factorial_power(") == 1
    assert source.count("def backward_factorial_power(") == 1
    assert astgrad.grad(factorial_power)(1.5, 3) == pytest.approx(4 * 1.5 ** 3)


def test_gradient_object_called_inside_is_differentiated():
    """A hessian block of the inner function, never the lower order its own gradient would give."""
    g_inner = astgrad.grad(lambda v: np.sum(v * v * v))

    def outer(x):
        return np.sum(g_inner(x) * x)
    np.testing.assert_allclose(astgrad.grad(outer)(X), gradient(outer, X), rtol=1e-6)


def test_value_and_grad_object_called_inside_is_rejected():
    vg = astgrad.value_and_grad(square)

    def outer(x):
        return np.sum(vg(x)[1] * x)
    with pytest.raises(astgrad.TransformError, match="generated gradient"):
        astgrad.grad(outer)


@astgrad.grad
def decorated_recursive(x, n=3):
    if n == 0:
        return x
    return np.sin(decorated_recursive(x, n - 1))


def test_decorated_function_recursing_by_its_own_name():
    def plain(x, n=3):
        return x if n == 0 else np.sin(plain(x, n - 1))
    assert decorated_recursive(0.4) == pytest.approx(numeric_grad(plain, [0.4], 0), rel=1e-6)


def _sum_of_squares(x):
    return np.sum(x * x)


def test_looking_for_callees_warns_about_nothing():
    # names the function uses (str, object) are also looked up on the modules
    # it reads; numpy answers np.str and np.object with a FutureWarning
    def f(x):
        label = str(x.shape)
        kind = np.asarray(x, dtype=object).dtype
        return _sum_of_squares(x) if label and kind else 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = astgrad.grad(f)(np.array([1.0, 2.0]))
    assert [str(w.message) for w in caught] == []
    np.testing.assert_allclose(g, [2.0, 4.0])
