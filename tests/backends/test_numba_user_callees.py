"""backend="numba" through calls of the user's own functions: the numpy backend's numbers, or a located refusal.

A callee called at two places or more is compiled once, apart, and called
(its forward returns what it saved, its backward takes it); a callee called
once is inlined into its caller.  Recursion is refused at the recursive
call.  Every value is compared with the numpy backend's gradient of the same call.
"""

import numpy as np
import pytest

import _numeric
import astgrad

pytest.importorskip("numba")


def inner(a, b):
    return a * np.exp(b)


def calls_inner(x, y):
    return np.sum(inner(x, y) + inner(y, x))


def scale(v, k):
    return v * k


def nested(v):
    return np.sin(scale(v, 2.0)) + v


def in_a_loop(x, n):
    for _ in range(n):
        x = nested(x) * 0.5
    return np.sum(x * x)


def unused_callee(x):
    return 0.0 * inner(x, x) + x * x


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def _same(got, expected):
    for a, b in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_callee_called_twice_gives_the_numpy_backends_gradient():
    x, y = np.linspace(0.0, 1.0, 3), np.linspace(1.0, 2.0, 3)
    gradient = astgrad.grad(calls_inner, wrt=(0, 1), backend="numba")
    got = gradient(x, y)
    _same(got, astgrad.grad(calls_inner, wrt=(0, 1))(x, y))
    _same(got, (np.exp(y) + y * np.exp(x), x * np.exp(y) + np.exp(x)))  # closed form


def test_nested_callees_in_a_loop_and_a_loop_of_none():
    x = np.array([0.3, -0.7])
    gradient = astgrad.grad(in_a_loop, backend="numba")
    for n in (0, 1, 4):
        got = gradient(x, n)
        _same(got, astgrad.grad(in_a_loop)(x, n))
        np.testing.assert_allclose(got, _numeric.gradient(lambda v: in_a_loop(v, n), x), rtol=1e-6, atol=1e-8)


def test_a_zero_gradient_into_a_callee_skips_its_rules_as_numpy_does():
    """dresult is the number 0.0 into inner: the numpy backend skips the rules (0 * inf would be nan)."""
    gradient = astgrad.grad(unused_callee, backend="numba")
    for x in (1.5, 800.0):  # exp(800) is inf
        with np.errstate(over="ignore", invalid="ignore"):
            expected = astgrad.grad(unused_callee)(x)
            got = gradient(x)
        assert got == expected or np.isnan(got) and np.isnan(expected)


def test_recursion_is_refused_at_the_recursive_call():
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(power, backend="numba")
    message = str(info.value)
    assert "recursive" in message and "`power`" in message and "return x * power(x, n - 1)" in message
    assert "test_numba_user_callees.py:47" in message
    with pytest.warns(RuntimeWarning, match="recursive"):
        assert astgrad.grad(power, backend="auto")(1.5, 3) == pytest.approx(3 * 1.5 ** 2, rel=1e-14)


def two_kinds(x):
    return np.sum(inner(x, 2.0) + inner(2.0, x))


def mixed_kinds(x):
    return np.sum(inner(x, x) + inner(np.sum(x), x))


def test_a_callee_with_two_active_sets_is_two_pairs_with_a_stack_each():
    x = np.linspace(0.0, 1.0, 3)
    _same(astgrad.grad(two_kinds, backend="numba")(x), astgrad.grad(two_kinds)(x))


def test_a_callee_saving_values_of_different_kinds_at_two_calls_is_refused_located():
    """Its saves share its one stack: an (array, array) and a (number, array) are not one type."""
    x = np.linspace(0.0, 1.0, 3)
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(mixed_kinds, backend="numba")(x)
    assert "Numba cannot compile" in str(info.value) and "test_numba_user_callees.py" in str(info.value)
    with pytest.warns(RuntimeWarning, match="backend='auto' runs the numpy backend"):
        got = astgrad.grad(mixed_kinds, backend="auto")(x)
    np.testing.assert_allclose(got, astgrad.grad(mixed_kinds)(x), rtol=1e-14)


def test_a_callee_called_twice_is_compiled_once_apart_and_called():
    """Its saves travel by its return value and its backward's argument, on a list of its caller's."""
    x, y = np.linspace(0.0, 1.0, 3), np.linspace(1.0, 2.0, 3)
    gradient = astgrad.grad(calls_inner, wrt=(0, 1), backend="numba")
    got = gradient(x, y)
    text = gradient.source
    assert "_saves_forward_inner.append(" in text and "backward_inner(_saves_forward_inner.pop()" in text
    callees = gradient._generated.function.callees
    assert [c.py_func.__name__ for c in callees] == ["forward_inner", "backward_inner"]
    assert all(len(c.overloads) == 1 for c in callees)  # one specialisation, called at both places
    _same(got, astgrad.grad(calls_inner, wrt=(0, 1))(x, y))


def cubed_count(x, n):
    return x * (n * n * n)


def counts_twice(x, n):
    return np.sum(cubed_count(x, n) + cubed_count(2.0 * x, n))


def test_an_integer_product_in_a_callee_compiled_apart_is_refused_at_its_line():
    """2**66 is 0 in 64 bits: the check of integer products reads the callees' typed code too."""
    assert astgrad.grad(counts_twice)(np.ones(2), 2 ** 22)[0] == 3.0 * 2.0 ** 66
    gradient = astgrad.grad(counts_twice, backend="numba")
    for _ in range(2):
        with pytest.raises(astgrad.TransformError, match="multiplies integers") as info:
            gradient(np.ones(2), 2 ** 22)
        assert "return x * (n * n * n)" in str(info.value)
