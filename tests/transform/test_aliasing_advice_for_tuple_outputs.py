"""A write refused for aliasing into an item of a tuple output is told to copy the item, not the tuple.

``a, b = np.modf(x)``, ``np.split``, ``np.linalg.eigh``'s pair, ``r =
np.unstack(x)``: a tuple has no ``.copy()``, so "Copy first: a =
np.modf(x).copy()" would fail where the user tries it.  The advice names
what to write, and the function written that way is accepted and gives
numpy's derivative (central differences).
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient


def split_halves(x):
    a, b = np.split(x, 2)
    a[0] = 1.0
    return np.sum(a * b)


def split_halves_copied(x):
    a, b = np.split(x, 2)
    a = a.copy()
    a[0] = 1.0
    return np.sum(a * b)


def fractional_parts(x):
    frac, whole = np.modf(x)
    frac += 1.0
    frac[0] = 2.0
    return np.sum(frac * whole)


def fractional_parts_copied(x):
    frac, whole = np.modf(x)
    frac = frac.copy()
    frac += 1.0
    frac[0] = 2.0
    return np.sum(frac * whole)


def eigen_pair(x):
    m = np.reshape(x, (2, 2))
    w, v = np.linalg.eigh(m @ m.T)
    w[0] = 0.0
    return np.sum(w) + np.sum(v ** 2)


def eigen_pair_copied(x):
    m = np.reshape(x, (2, 2))
    w, v = np.linalg.eigh(m @ m.T)
    w = w.copy()
    w[0] = 0.0
    return np.sum(w) + np.sum(v ** 2)


def unstacked_rows(x):
    rows = np.unstack(np.reshape(x, (2, 2)))
    rows[0][1] = 2.0
    return np.sum(rows[0] * rows[1])


def unstacked_rows_copied(x):
    rows = [item.copy() for item in np.unstack(np.reshape(x, (2, 2)))]
    rows[0][1] = 2.0
    return np.sum(rows[0] * rows[1])


def eigen_result(x):
    m = np.reshape(x, (2, 2))
    res = np.linalg.eigh(m @ m.T)
    res[0][0] = 0.0
    return np.sum(res[0])


def eigen_result_copied(x):
    m = np.reshape(x, (2, 2))
    res = [item.copy() for item in np.linalg.eigh(m @ m.T)]
    res[0][0] = 0.0
    return np.sum(res[0])


def pairs_in_a_loop(x):
    total = 0.0
    for a, b in zip(np.reshape(x, (2, 2)), np.reshape(x, (2, 2)) * 2.0):
        a[0] = 1.0
        total = total + np.sum(a * b)
    return total


def pairs_in_a_loop_copied(x):
    total = 0.0
    for a, b in zip(np.reshape(x, (2, 2)), np.reshape(x, (2, 2)) * 2.0):
        a = a.copy()
        a[0] = 1.0
        total = total + np.sum(a * b)
    return total


CASES = [
    (split_halves, split_halves_copied, "Copy the item first: a = a.copy() on the line after a, b = np.split(x, 2)"),
    (fractional_parts, fractional_parts_copied,
     "Copy the item first: frac = frac.copy() on the line after frac, whole = np.modf(x), or write frac = frac + 1.0"),
    (eigen_pair, eigen_pair_copied, "Copy the item first: w = w.copy() on the line after w, v = np.linalg.eigh(m @ m.T)"),
    (unstacked_rows, unstacked_rows_copied,
     "Copy the items first: rows = [item.copy() for item in np.unstack(np.reshape(x, (2, 2)))] (a tuple has no .copy())"),
    (eigen_result, eigen_result_copied,
     "Copy the items first: res = [item.copy() for item in np.linalg.eigh(m @ m.T)]"),
    (pairs_in_a_loop, pairs_in_a_loop_copied, "Copy the item first: a = a.copy() as the first line of the loop's body"),
]


@pytest.mark.parametrize("fn, fixed, advice", CASES, ids=[c[0].__name__ for c in CASES])
def test_a_write_into_an_item_of_a_tuple_output_is_told_to_copy_the_item(fn, fixed, advice):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert "may share memory" in text and "test_aliasing_advice_for_tuple_outputs.py:" in text
    assert advice in text, text
    assert ").copy()" not in text.split("\n")[-1], text  # never .copy() on the call that makes the tuple


@pytest.mark.parametrize("fn, fixed, advice", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_function_written_as_advised_gives_numpys_derivative(fn, fixed, advice):
    x = np.array([0.7, 1.6, -0.4, 2.3])
    np.testing.assert_allclose(astgrad.grad(fixed)(x.copy()), gradient(fixed, x), rtol=1e-6, atol=1e-8)
