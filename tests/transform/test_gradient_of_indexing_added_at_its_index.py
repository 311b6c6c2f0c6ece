"""The gradient of ``x[i]`` added at ``i`` into ``x``'s gradient (``added_at``), in place where nothing else
reaches that gradient (``add_at``: passes/accumulate.py).

Writing into a gradient in place is where a wrong number hides: another
name (a copy ``dt = dx``, a view ``written(dt, i)``, the caller's seed, a
returned gradient, what a callee's backward half got) may hold the same
array.  Each program reads items, rows, slices, masks or repeated indexes
in loops, branches and callees, and its gradient is checked against central
differences at every level, against the taped Tensor where it runs, and the
arguments and seeds the caller passed must not change.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform import runtime
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(3)
X = RNG.random(7) + 0.5
M = RNG.random((4, 5)) + 0.5


def items_in_a_loop(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i] * x[i - 1]
    return s


def repeated_positions(x):
    s = 0.0
    for i in [0, 0, 3, 0, 3]:
        s = s + x[i] * x[i + 1] + x[[i, i, 1]].sum()
    return s


def slices_overlapping(x):
    s = 0.0
    for _ in range(3):
        s = s + np.sum(x[1:] * x[:-1]) + np.sum(x[2:5] ** 2)
    return s


def mask_each_step(x):
    s = 0.0
    for k in range(3):
        s = s + np.sum(x[x > 0.5 + 0.1 * k] ** 2)
    return s


def copy_then_read(x):
    y = x
    s = 0.0
    for i in range(3):
        s = s + y[i] * x[i + 1] + x[i] * y[i + 2]
    return s


def rows_and_columns(m):
    s = 0.0
    for i in range(m.shape[0]):
        s = s + np.sum(m[i] * m[i, 0]) + np.sum(m[:, i] ** 2) + m[i, i] * m[0, i]
    return s


def new_axis_and_ellipsis(m):
    s = 0.0
    for j in range(2):
        s = s + np.sum(m[None, j] * m[j + 1, ...]) + np.sum(m[..., j + 1] * m[j, None, 1:5])
    return s


def nested_loops_with_a_branch(x):
    s = 0.0
    for i in range(3):
        for j in range(i, 5):
            if x[j] > 1.0:
                s = s + x[j] * x[i]
            else:
                s = s + x[j + 1] ** 2
    return s


def while_and_break(x):
    s = 0.0
    i = 0
    while i < 6:
        if x[i] > 1.3:
            break
        s = s + x[i] * x[i + 1]
        i = i + 1
    for j in range(6):
        if j == 4:
            break
        s = s + x[j] ** 2
    return s


def gradient_read_twice(x):
    y = x * 2.0
    s = 0.0
    for i in range(4):
        s = s + y[i] * y[i + 1]
    return s + np.sum(y * x)


def _step(x, i):
    return x[i] * x[i + 1] + x[i + 2]


def through_a_callee(x):
    s = 0.0
    for i in range(4):
        s = s + _step(x, i) * x[i]
    return s


def into_an_array_it_made(x):
    rates = np.zeros(4)
    for i in range(4):
        rates[i] += x[i] * x[i + 1]
    c = x[:4] * 1.0
    for _ in range(3):
        c = c + 0.1 * rates * c[0]
    return np.sum(c ** 2)


PROGRAMS = [items_in_a_loop, repeated_positions, slices_overlapping, mask_each_step, copy_then_read,
            nested_loops_with_a_branch, while_and_break, gradient_read_twice, through_a_callee,
            into_an_array_it_made]
MATRIX_PROGRAMS = [rows_and_columns, new_axis_and_ellipsis]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", PROGRAMS + MATRIX_PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, level):
    a = M if f in MATRIX_PROGRAMS else X
    given = a.copy()
    got = astgrad.grad(f, optimize=level)(given)
    np.testing.assert_allclose(got, gradient(f, a.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(given, a)  # the caller's array is not written


@pytest.mark.parametrize("f", [items_in_a_loop, repeated_positions, slices_overlapping, copy_then_read,
                               rows_and_columns, nested_loops_with_a_branch, gradient_read_twice],
                         ids=lambda f: f.__name__)
def test_gradient_matches_the_tape(f):
    a = M if f in MATRIX_PROGRAMS else X
    leaf = astgrad.tensor(a.copy(), requires_grad=True)
    f(leaf).backward()
    np.testing.assert_allclose(astgrad.grad(f)(a.copy()), leaf.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_a_vjp_seed_and_a_reused_pullback_are_not_written():
    def f(x):
        out = x * 1.0
        for i in range(3):
            out = out + x[i] * x
        return out

    seed = RNG.random(X.size)
    kept = seed.copy()
    value, pullback = astgrad.vjp(f, X.copy())
    first = pullback(seed)
    np.testing.assert_array_equal(seed, kept)
    again = pullback(seed)
    np.testing.assert_allclose(again, first, rtol=0, atol=0)
    expected = gradient(lambda x: float(np.sum(f(x) * seed)), X.copy())
    np.testing.assert_allclose(np.asarray(first).ravel(), expected, rtol=1e-6, atol=1e-7)
    df = astgrad.vjp(f, wrt=0)
    np.testing.assert_allclose(df(X.copy(), seed), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(seed, kept)


def test_two_gradients_returned_are_separate_arrays():
    def f(x, y):
        s = 0.0
        for i in range(3):
            s = s + x[i] * y[i + 1] + y[i] * x[i + 2]
        return s

    dx, dy = astgrad.grad(f, wrt=(0, 1))(X.copy(), X.copy())
    assert not np.shares_memory(dx, dy)
    np.testing.assert_allclose(dx, gradient(lambda x: f(x, X.copy()), X.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dy, gradient(lambda y: f(X.copy(), y), X.copy()), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.complex128])
def test_other_dtypes_add_as_numpy_does(dtype):
    def f(x):
        s = 0.0
        for i in range(3):
            s = s + x[i] * x[i + 1]
        return s

    x = (X + (0.5j if dtype is np.complex128 else 0)).astype(dtype)
    got = astgrad.grad(f)(x)
    want = astgrad.grad(f, optimize=1)(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_the_hessian_through_a_loop_of_items():
    h = astgrad.hessian(items_in_a_loop)(X.copy())
    g = astgrad.grad(items_in_a_loop, optimize=0)
    expected = np.stack([gradient(lambda x: g(x)[j], X.copy(), eps=1e-5) for j in range(X.size)])
    np.testing.assert_allclose(h, expected, rtol=1e-5, atol=1e-6)


def test_the_source_adds_in_place_only_into_what_it_made():
    source = astgrad.grad(items_in_a_loop).source
    assert "add_at(dx, " in source or "added_at(dx, " in source
    assert "scatter(" not in source
    source = astgrad.grad(copy_then_read).source
    assert "scatter(" not in source


# -- the helpers, one case at a time ------------------------------------------------

@pytest.mark.parametrize("total, g, index", [
    (np.ones(5), 2.0, 3),
    (np.ones(5), np.float64(2.0), np.int64(1)),
    (np.ones(5), np.array([1.0, 2.0]), slice(1, 3)),
    (np.ones(5), np.array([1.0, 2.0, 3.0]), [0, 0, 4]),  # repeats add up
    (np.ones(5), np.array([1.0, 2.0]), np.array([True, False, False, True, False])),
    (np.ones((3, 4)), np.arange(4.0), 1),
    (np.ones((3, 4)), np.arange(3.0), (slice(None), 2)),
    (np.ones((3, 4)), np.ones((1, 4)), (None, 0)),
    (np.ones((3, 4)), 1.5, (Ellipsis, 1)),
    (np.ones((3, 4)), np.ones((1, 4)), 1),  # g has an extra leading axis: numpy's write drops it
    (np.ones(5, np.float32), 2.0, 1),  # a Python float: float64 zeros, a float64 result
    (np.ones(5, np.float32), np.float32(2.0), 1),
    (np.ones(5), 1j, 1),  # a complex result
    (np.ones(5, np.int64), 2, 1),
    (0.0, np.array([1.0, 2.0]), slice(0, 2)),  # a join's zero
    (np.broadcast_to(np.ones(4), (3, 4)), 2.0, (0, 1)),  # read-only: a new array
])
@pytest.mark.parametrize("helper", [runtime.added_at, runtime.add_at], ids=lambda h: h.__name__)
def test_the_helpers_add_as_zeros_and_a_sum_would(helper, total, g, index):
    shape = np.shape(total) if np.ndim(total) else np.shape(np.zeros(5))
    kept = np.array(total, copy=True)
    expected = total + astgrad.rules.scatter(g, shape, index)
    got = helper(total, g, shape, index)
    assert type(got) is type(expected) and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    if helper is runtime.added_at or not np.asarray(total).flags.writeable:
        np.testing.assert_array_equal(total, kept)  # the copy leaves total alone
        assert got is not total


def test_add_at_writes_into_its_array():
    total = np.ones(5)
    assert runtime.add_at(total, 2.0, (5,), 1) is total
    np.testing.assert_array_equal(total, [1.0, 3.0, 1.0, 1.0, 1.0])
