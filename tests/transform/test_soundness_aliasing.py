"""Writes through shared memory: numpy's values and true gradients, or a located refusal.

numpy's ``x += v`` (and ``-=``, ``*=``, ``/=``, ``**=``, ``@=``) writes into the array ``x`` holds, so
every other name sharing that memory (a view, a plain alias, a list holding it, the caller's
argument) sees the change.  The generated code computes ``x = x + v``, a new array; each case below
either gives numpy's own value and the gradient finite differences give, or is refused when
transformed, at the line that makes the sharing name, with what to write instead.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

X = np.array([0.3, -0.2, 0.5, 1.1])


def _matches_numpy(fn, *args):
    expected = fn(*[a.copy() for a in args])
    given = [a.copy() for a in args]
    value, grad = astgrad.value_and_grad(fn)(*given)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(fn, [a.copy() for a in args], 0), rtol=1e-5, atol=1e-6)
    for a, g in zip(args, given):
        np.testing.assert_array_equal(a, g)


# -- supported: the written name owns fresh memory, or holds a number --------------------------

def every_operator_on_a_fresh_product(x):
    y = x * 2.0
    y += x
    y -= 0.5
    y *= x
    y /= 3.0
    y **= 2
    m = np.outer(y, x)
    m @= np.eye(4) * x
    return np.sum(m)


def numbers_count_and_accumulate(x):
    k = 0
    s = 0.0
    for i in range(4):
        prev = s
        s += float(x[i] * x[i])
        k += 1
        s -= prev * 0.1
    return s * k


def aliases_of_an_old_value(x):
    v = np.sin(x)
    z = v
    v = x * 1.0
    v += 1.0
    return np.sum(z * v)


def parameter_rebound_first(x):
    x = x * 1.0
    x += np.tanh(x)
    return np.sum(x * x)


def accumulator_in_a_loop(x):
    acc = np.zeros(4)
    for i in range(3):
        acc += x * (i + 1.0)
        acc *= np.cos(x)
    return np.sum(acc)


def alias_read_before_the_write(x):
    y = x * 2.0
    z = y
    s = np.sum(z * x)
    y += x
    return s + np.sum(y * y)


def fresh_on_both_branches(x):
    if np.sum(x) > 0:
        y = x * 2.0
    else:
        y = np.exp(x)
    y += x * x
    return np.sum(y)


@pytest.mark.parametrize("fn", [every_operator_on_a_fresh_product, numbers_count_and_accumulate,
                                aliases_of_an_old_value, parameter_rebound_first, accumulator_in_a_loop,
                                alias_read_before_the_write, fresh_on_both_branches])
def test_augmented_assignment_on_fresh_memory_matches_numpy_and_finite_differences(fn):
    _matches_numpy(fn, X)
    _matches_numpy(fn, -X)


# -- refused: numpy would write into memory another name sees ----------------------------------

def through_a_slice(x):
    y = x * 2.0
    tail = y[1:]
    tail *= 3.0
    return np.sum(y * y)


def through_a_plain_alias(x):
    y = x * 2.0
    z = y
    y += x
    return np.sum(z * x)


def through_a_list(x):
    h = x * 2.0
    items = []
    items.append(h)
    h += 1.0
    return np.sum(items[0] * x)


def through_a_tuple(x):
    y = x * 2.0
    pair = (y, x)
    y *= x
    return np.sum(pair[0])


def through_a_transpose(x):
    m = np.outer(x, x)
    t = m.T
    t -= 1.0
    return np.sum(m * m)


def through_a_reshape(x):
    y = x * 1.0
    r = y.reshape(2, 2)
    r /= 2.0
    return np.sum(y * x)


def the_callers_array(x):
    x += 1.0
    return np.sum(x * x)


def adds_to_its_argument(a):
    a += 1.0
    return np.sum(a)


def caller_of_a_helper_that_adds(x):
    y = x * 2.0
    s = adds_to_its_argument(y)
    return s + np.sum(y * x)


def a_row_of_a_matrix(x):
    m = np.outer(x, x)
    row = m[0]
    row += x
    return np.sum(m)


def rows_in_a_loop(x):
    m = np.outer(x, x)
    for row in m:
        row *= 2.0
    return np.sum(m)


def alias_from_the_previous_iteration(x):
    y = x * 1.0
    prev = x * 0.0
    s = 0.0
    for i in range(3):
        s = s + np.sum(prev * x)
        prev = y
        y += x
    return s


def alias_made_in_a_branch(x):
    y = x * 1.0
    z = x * 0.0
    if np.sum(x) > 0:
        z = y
    y *= 2.0
    return np.sum(z * x)


def number_or_view(x):
    s = x[0]  # a view when x has two dimensions
    s += 1.0
    return np.sum(x) * s


def chained_assignment(x):
    a = b = x * 2.0
    a += 1.0
    return np.sum(b * x)


def array_without_a_copy(x):
    y = x * 2.0
    z = np.array(y, copy=False)
    z += 1.0
    return np.sum(y * x)


def unpacked_from_a_tuple(x):
    y = x * 2.0
    a, b = y, x
    a += 1.0
    return np.sum(y * x)


def swapped(x):
    y = x * 2.0
    z = x * 3.0
    y, z = z, y
    y += 1.0
    return np.sum(z * x)


def parameter_through_names(x, y):
    y = x
    v = y
    x = x
    x += v * x  # numpy writes into the caller's x: a cycle of copies is no number
    return np.sum(x * y)


@pytest.mark.parametrize("fn, snippet, advice", [
    (parameter_through_names, "x = x", "Copy first: x = x.copy(), or write x = x + (v * x)"),
    (chained_assignment, "a = b = x * 2.0", "a = a + 1.0"),
    (array_without_a_copy, "z = np.array(y, copy=False)", "z = z + 1.0"),
    (unpacked_from_a_tuple, "a, b = y, x", "a = a + 1.0"),
    (swapped, "y, z = z, y", "y = y + 1.0"),
    (through_a_slice, "tail = y[1:]", "Copy first: tail = y[1:].copy(), or write tail = tail * 3.0"),
    (through_a_list, "items.append(h)", "h = h + 1.0"),
    (through_a_tuple, "pair = (y, x)", "y = y * x"),
    (through_a_transpose, "t = m.T", "m.T.copy()"),
    (through_a_reshape, "r = y.reshape(2, 2)", "r = r / 2.0"),
    (the_callers_array, "x += 1.0", "Copy first: x = x.copy(), or write x = x + 1.0"),
    (caller_of_a_helper_that_adds, "a += 1.0", "Copy first: a = a.copy()"),
    (a_row_of_a_matrix, "row = m[0]", "row = m[0].copy()"),
    (rows_in_a_loop, "for row in m:", "Write row = row * 2.0"),
    (alias_from_the_previous_iteration, "prev = y", "y = y + x"),
    (alias_made_in_a_branch, "z = y", "y = y * 2.0"),
    (number_or_view, "s = x[0]", "s = s + 1.0"),
])
def test_writes_another_name_would_see_are_refused_where_the_sharing_starts(fn, snippet, advice):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert "test_soundness_aliasing.py:" in text and "^" in text
    assert snippet in text, text
    assert advice in text, text
    assert "writes to a copy" in text


def test_the_issue_example_numpy_computes_472_and_the_transform_refuses():
    def f(x):
        y = x * 2.0
        tail = y[1:]
        tail *= 3.0
        return np.sum(y * y)
    assert f(np.array([1.0, 2.0, 3.0])) == 4.0 + 144.0 + 324.0
    with pytest.raises(astgrad.TransformError, match="tail may share memory"):
        astgrad.grad(f)


def _shuffled_then_added(x, y):
    np.random.default_rng(1).shuffle(x)
    x += np.sin(x)
    return np.sum(y * y)


@pytest.mark.parametrize("wrt", [0, 1])
def test_a_write_after_a_call_that_wrote_in_place_still_reaches_the_caller(wrt):
    """rng.shuffle(x) writes x in place, so x is still the caller's array when x += ... runs: numpy
    changes the caller's x there; a copy would not. Found by the random aliasing programs."""
    with pytest.raises(astgrad.TransformError, match="would change the caller's array x"):
        astgrad.grad(_shuffled_then_added, wrt)(np.array([0.37, -0.65, 1.13, 0.21]), np.ones(4))


def _plus(a, b):
    return a + b


def _first(a, b):
    return a


def an_alias_made_after_the_write(x):
    y = x * 2.0
    y = _plus(y, x)
    v = np.sin(x)
    v -= x
    s = np.sum(y * y)
    y = _plus(x, v)
    return s + np.sum(y * x)


def test_a_name_made_before_the_write_does_not_share_what_a_later_call_returns():
    """``y = _plus(x, v)`` may return ``v``'s array, but only after ``v -= x`` ran, and the ``y`` of the
    earlier ``y = _plus(y, x)``, read after the write, cannot be that array: numpy's value and gradient,
    not a refusal at that earlier line.
    Found by the random renamed programs (--runslow)."""
    _matches_numpy(an_alias_made_after_the_write, X)


def alias_through_a_call_in_the_next_iteration(x):
    v = x * 2.0
    y = x * 1.0
    z = x * 1.0
    for i in range(2):
        z = _first(y, x)
        v -= x
        y = _first(v, x)
    return np.sum(z * x)


def test_a_name_a_call_makes_in_the_next_iteration_still_shares_memory():
    """In the second iteration ``z`` is ``v``'s array (``y = _first(v, x)`` ran in the first), and
    ``v -= x`` zeroes it: numpy returns 0, a copy would return sum(x * x).  What a user function returns
    may be a number, which shares nothing, so this is asked when the call has run."""
    assert alias_through_a_call_in_the_next_iteration(X.copy()) == 0.0
    with pytest.raises(TypeError, match="`z = _first.y, x.` gives a ndarray, which may share memory with v"):
        astgrad.grad(alias_through_a_call_in_the_next_iteration)(X.copy())


def test_a_plain_alias_sees_the_augmented_write_as_in_numpy():
    # z = y names y's array, and numpy's z sees y += x: so does the generated code (it binds z = y again)
    x = np.array([0.3, -1.1, 2.0])
    value, got = astgrad.value_and_grad(through_a_plain_alias)(x)
    assert value == through_a_plain_alias(x.copy())
    np.testing.assert_allclose(got, numeric_grad(through_a_plain_alias, [x], 0), rtol=1e-6, atol=1e-8)


def copied_then_written(x):
    h = x * 1.0
    c = h.copy()  # a copy, not an alias: numpy's c keeps the old values after h[0] = 5.0
    h[0] = 5.0
    return np.sum(c * x) + np.sum(h)


def test_a_copy_is_not_rebound_as_an_alias_after_the_write():
    """The alias rebinding (``z = x`` again after ``x`` is written) once took ``c = h.copy()`` for ``c = h``:
    the value came out 9 where numpy gives 5, with a gradient to match.  Pinned against numpy's own run."""
    x = np.array([1.0, 2.0])
    value, got = astgrad.value_and_grad(copied_then_written)(x)
    assert value == copied_then_written(x.copy())
    np.testing.assert_allclose(got, numeric_grad(copied_then_written, [x], 0), rtol=1e-6, atol=1e-8)
