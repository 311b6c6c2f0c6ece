"""A called function's pair is made for the ranks its call proves, as the entry is for the ranks it is given.

The ranks of a call's arguments come from the caller's (front/ranks.py:
the entry's given ranks, items of lists the caller alone sees, what a
callee returns for its arguments' ranks), and the pair made for them drops
what those ranks make needless (``unbroadcast`` between numbers).  The
ways that could give a wrong number without an error, each against central
differences at every level: one function called with a number at one
site and an array at another; with float32 at one and float64 at another;
a function that is also an entry; one passed as ``f`` to two entries;
recursion, with ranks growing at each depth; arguments aliased; lists
whose items differ in rank, or that may stay empty; a callee whose
result's rank depends on a flag.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(11)


def mix(a, b):
    s = a * b
    for _ in range(2):
        s = s * a + b
    return s


def number_and_array(x, v):
    return np.sum(mix(x[0], v)) + np.sum(mix(v, x[1]))


def mixed_sum(a, b):
    return np.sum(mix(a, b) * b)


def uses_mixed_sum(x, v):
    return mixed_sum(x[0], v) + mixed_sum(v, x[1]) * mixed_sum(x, v[:3])


def bilinear(u, w):
    return u * w + w


def float32_and_float64(x):
    a = x.astype(np.float32)
    return np.sum(bilinear(a, a[0])).astype(np.float64) + np.sum(bilinear(x, x[1]))


def apply_f(f, x):
    return np.sum(f(x[0], x))


def apply_f_to_arrays(f, y):
    return np.sum(f(y, y) * y)


def grow_rank(x, n):
    if n == 0:
        return np.sum(x * x)
    return grow_rank(np.array([x, 2.0 * x]), n - 1)


def axpy(a, x, y):
    for _ in range(2):
        y = a * x + y
    return y


def aliased(v):
    return np.sum(axpy(v[0], v, v)) + np.sum(axpy(v, v[1], v[2]))


def ranks_of_items(x):
    items = [x[0]]
    items.append(x)
    total = 0.0
    for i in range(2):
        total = total + np.sum(bilinear(items[i], x))
    return total


def scalar_items(x):
    ys = [x[0]]
    for i in range(3):
        ys.append(ys[i] * x[1] + x[2])
    return np.sum(mix(np.array(ys), x[0]))


def rows_or_none(x, n):
    rows = []
    for i in range(n):
        rows.append(x * (i + 1.0))
    m = np.array(rows)  # (n, 3), or (0,) for no rows whatever the rows would have been
    return np.sum(mix(m, x[0])) + np.sum(mix(x[1], x) * x)


def push_outer(lst, x):
    lst.append(np.outer(x, x))
    return 0.0


def list_to_callee(x):
    items = [x[0]]
    push_outer(items, x)
    total = 0.0
    for i in range(2):
        total = total + np.sum(items[i] * x)
    return total


def constant(n):
    return 2.0


def inactive_call(x, n):
    c = constant(n)
    s = 0.0
    for _ in range(2):
        s = s + np.sum(x * c * x[0])
    return s


def outer_or_double(x, flag):
    if flag:
        return np.outer(x, x)
    return x * 2.0


def by_flag(x, flag):
    y = outer_or_double(x, flag)
    return np.sum(mix(y, x[0]) * x)


def _check(f, args, wrt, level):
    grad = astgrad.grad(f, wrt=wrt, optimize=level)
    names = list(f.__code__.co_varnames[:f.__code__.co_argcount])
    got = grad(*args)
    for value, name in zip(got, wrt):
        expected = numeric_grad(f, args, names.index(name))
        assert np.shape(value) == np.shape(expected)
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)
    return grad


@pytest.mark.parametrize("level", LEVELS)
def test_a_number_at_one_site_and_an_array_at_another(level):
    grad = _check(number_and_array, (RNG.standard_normal(3), RNG.standard_normal(4)), ("x", "v"), level)
    if level == 2:
        assert grad.source.count("def forward_mix") == 2  # one pair for each site's ranks


@pytest.mark.parametrize("level", LEVELS)
def test_float32_at_one_site_and_float64_at_another(level):
    x = RNG.standard_normal(3)
    grad = astgrad.grad(float32_and_float64, optimize=level)
    # bilinear in each element: a central difference of a wide step is exact but for float32's rounding
    expected = numeric_grad(float32_and_float64, (x,), 0, eps=1e-2)
    np.testing.assert_allclose(grad(x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("level", LEVELS)
def test_a_callee_that_is_also_an_entry(level):
    a, b = RNG.standard_normal(3), RNG.standard_normal(4)
    _check(mixed_sum, (a, b[:3]), ("a", "b"), level)
    _check(uses_mixed_sum, (a, b), ("x", "v"), level)
    _check(mixed_sum, (a[0], b), ("a", "b"), level)


@pytest.mark.parametrize("level", LEVELS)
def test_one_function_passed_as_f_to_two_entries(level):
    x = RNG.standard_normal(3)
    grad = astgrad.grad(apply_f, wrt="x", optimize=level)
    np.testing.assert_allclose(grad(mix, x), numeric_grad(apply_f, (mix, x), 1), rtol=1e-5, atol=1e-6)
    other = astgrad.grad(apply_f_to_arrays, wrt="y", optimize=level)
    np.testing.assert_allclose(other(mix, x), numeric_grad(apply_f_to_arrays, (mix, x), 1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad(bilinear, x), numeric_grad(apply_f, (bilinear, x), 1), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
def test_recursion_with_ranks_growing_at_each_depth(level):
    _check(grow_rank, (RNG.standard_normal(2), 3), ("x",), level)


@pytest.mark.parametrize("level", LEVELS)
def test_aliased_arguments(level):
    _check(aliased, (RNG.standard_normal(3),), ("v",), level)


@pytest.mark.parametrize("level", LEVELS)
def test_list_items_of_different_ranks(level):
    _check(ranks_of_items, (RNG.standard_normal(3),), ("x",), level)
    _check(scalar_items, (RNG.standard_normal(3),), ("x",), level)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("n", [0, 2])
def test_an_array_of_a_list_appended_to_in_a_loop(level, n):
    _check(rows_or_none, (RNG.standard_normal(3), n), ("x",), level)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("flag", [True, False])
def test_a_result_whose_rank_depends_on_a_flag(level, flag):
    _check(by_flag, (RNG.standard_normal(3), flag), ("x",), level)


def apply_to_numbers(f, x):
    return np.sum(f(x[0], x[1]) * x[2])


def test_a_function_taking_f_is_specialised_on_its_arguments_ranks():
    """``rk4(f, ...)``'s gradient, made per function passed, is made per ranks too: its callee for numbers at
    the call ``f`` makes, without un-broadcasting between them."""
    x = RNG.standard_normal(3)
    grad = astgrad.grad(apply_to_numbers, wrt="x")
    np.testing.assert_allclose(grad(mix, x), numeric_grad(apply_to_numbers, (mix, x), 1), rtol=1e-5, atol=1e-6)
    assert "for a 1-d float x" in grad.source
    backward = grad.source[grad.source.index("def backward_mix"):]
    assert "unbroadcast" not in backward
    y = RNG.standard_normal((3, 2))  # other ranks: another module, its callee for rows
    np.testing.assert_allclose(grad(mix, y), numeric_grad(apply_to_numbers, (mix, y), 1), rtol=1e-5, atol=1e-6)
    assert "for a 2-d float x" in grad.source


def test_a_list_a_callee_appends_to_is_followed_no_more():
    with pytest.raises(astgrad.TransformError, match="may change it"):
        astgrad.grad(list_to_callee)(RNG.standard_normal(3))


def test_a_callee_rebound_after_its_result_rank_was_read(monkeypatch):
    """The rank a call returns is read from the callee's code: the gradient is made again when it changes."""
    x = RNG.standard_normal(3)
    grad = astgrad.grad(inactive_call)
    np.testing.assert_allclose(grad(x, 3), numeric_grad(inactive_call, (x, 3), 0), rtol=1e-5, atol=1e-6)
    monkeypatch.setitem(globals(), "constant", lambda n: np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(grad(x, 3), numeric_grad(inactive_call, (x, 3), 0), rtol=1e-5, atol=1e-6)
