"""Item assignment: fresh arrays work; writes another name would see are rejected, located."""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad

X = np.array([0.3, -0.2, 0.5, 1.1])
W = np.array([1.0, 2.0, 3.0, 4.0])


# -- supported: the written array is fresh and no other name sees it ----------

def fresh_zeros(x):
    z = np.zeros(3)
    z[0] = x[0]
    z[1:] = x[1:3] * x[0]
    z[2] += np.sum(x)
    return np.sum(z * z)


def copied_argument(x):
    x = x.copy()
    x[0] = 5.0 * x[1]
    return np.sum(x * x)


def recurrence(x):
    z = np.zeros(4)
    z[0] = x[0]
    for i in range(1, 4):
        z[i] = z[i - 1] * x[i] + np.sin(z[i - 1])
    return np.sum(z)


def view_read_after_the_last_write(x):
    m = np.zeros((2, 2))
    m[0] = x[:2]
    m[1, :] = x[2:] * x[:2]
    row = m[1]
    t = m.T
    return np.sum(row * row) + np.sum(t[0])


def arithmetic_result_then_write(x):
    y = x * 2.0
    y[1] = y[0] * x[3]
    y += 1.0
    y[2] = np.exp(y[1])
    return np.sum(y)


def helper_writes_its_own_copy(a):
    b = a.copy()
    b[0] = b[0] * b[1]
    return b


def calls_helper_that_copies(x):
    y = helper_writes_its_own_copy(x)
    return np.sum(y * x)


@pytest.mark.parametrize("fn", [fresh_zeros, copied_argument, recurrence, view_read_after_the_last_write,
                                arithmetic_result_then_write, calls_helper_that_copies])
def test_fresh_arrays_match_finite_differences(fn):
    assert_grad(astgrad.grad(fn), fn, X.copy())


def test_the_callers_array_is_left_alone():
    x = X.copy()
    astgrad.grad(copied_argument)(x)
    np.testing.assert_array_equal(x, X)


# -- rejected: Python would share the write with another name ------------------

def alias_then_write(x):
    y = x * 1.0
    z = y
    y[0] = 5.0
    return np.sum(z * x)


def writes_the_argument(x):
    x[0] = 5.0
    return np.sum(x * x)


def mutates(a):
    a[0] = 0.0
    return np.sum(a)


def caller_of_mutating_helper(x):
    y = x * 2.0
    s = mutates(y)
    return s + np.sum(y * x)


def writes_through_a_view(x):
    y = x * 1.0
    v = y[1:]
    v[0] = 7.0
    return np.sum(y * x)


def view_read_after_write(x):
    m = np.zeros((2, 2))
    row = m[0]
    m[0] = x[:2]
    return np.sum(row * x[:2])


def writes_a_global(x):
    W[0] = x[0]
    return np.sum(W * x)


def appended_then_written(x):
    y = x * 2.0
    items = [y]
    y[0] = 0.0
    return np.sum(items[0] * x)


def test_a_write_of_an_active_value_into_a_global_is_rejected_at_transform_time():
    # a global's item write runs as written in the primal, so the value must carry no gradient
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(writes_a_global)
    text = str(info.value)
    assert "test_item_assignment.py:" in text and "W[0] = x[0]" in text and "^" in text
    assert "depends on the differentiated arguments" in text and "w_copy = W.copy()" in text


def test_a_plain_alias_sees_the_write_as_in_numpy():
    # z = y names y's array: numpy's z sees y[0] = 5.0, and so does the generated code (it binds z = y again)
    x = np.array([0.5, -1.5, 2.0])
    assert astgrad.value_and_grad(alias_then_write)(x)[0] == alias_then_write(x.copy())
    assert_grad(astgrad.grad(alias_then_write), alias_then_write, x)


@pytest.mark.parametrize("fn, advice, snippet", [
    (writes_the_argument, "Copy first: x = x.copy()", "x[0] = 5.0"),
    (caller_of_mutating_helper, "Copy first: a = a.copy()", "a[0] = 0.0"),
    (writes_through_a_view, "Copy first", "v = y[1:]"),
    (view_read_after_write, "Copy first", "row = m[0]"),
    (appended_then_written, "Copy first", "items = [y]"),
])
def test_shared_writes_are_rejected_at_transform_time(fn, advice, snippet):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert "test_item_assignment.py:" in text
    assert snippet in text and "^" in text
    assert advice in text
    assert "writes to a copy" in text
