"""numpy takes lists and Python numbers where it takes arrays; so do both engines.

``np.sum([1, a * a, 2])``, ``np.mean([x, x + 2])``, ``np.sum(3.5)``, a float
carried through a loop into ``np.sum``, ``np.r_[x, x]``: each against central
differences or a closed form.  The tape keeps PyTorch's refusal of a list of
Tensors that numpy converts to an array (a clear error, never a number).
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from numpy import c_, r_

from _numeric import numeric_grad


def sum_of_list(a):
    return np.sum([1.0, a * a, 2.0])


def sum_of_comprehension(a):
    return np.sum([i * 3 for i in a])


def comprehension_over_the_list_it_replaces(x):
    parts = [x, x * x]
    parts = [p * 2.0 for p in parts]  # read, then rebound: the list it reads is the old one
    return parts[0] + parts[1]


def mean_of_list(x):
    return np.mean([x, x + 2])


def norm_of_list(x):
    return np.linalg.norm([x, 2 * x])


def sum_of_number(x):
    return np.sum(x) * 3.0


def max_of_constant(x):
    return np.max(1.5) * x


def atleast_1d_of_number(x):
    return np.sum(np.atleast_1d(x) * np.array([2.0]))


def float_through_loop(x):
    total = 0.0
    for i in range(3):
        total = total + x * i
    return np.sum(total)


def std_of_number(x):
    return np.std(x) + np.var(x) + np.prod(x)


def rows_of_list(x):
    return np.sum(np.mean([x, x * x], axis=0) * np.array([1.0, 2.0]))


CASES = [
    (sum_of_list, 2.0, 4.0),
    (sum_of_comprehension, np.array([1.0, 2.0]), [3.0, 3.0]),
    (comprehension_over_the_list_it_replaces, 1.5, 2.0 + 4.0 * 1.5),
    (mean_of_list, 2.0, 1.0),
    (norm_of_list, 2.0, np.sqrt(5.0)),
    (sum_of_number, 2.0, 3.0),
    (max_of_constant, 2.0, 1.5),
    (atleast_1d_of_number, 1.2, 2.0),
    (float_through_loop, 2.0, 3.0),
    (std_of_number, 3.5, 1.0),
    (rows_of_list, np.array([1.0, -2.0]), [(1 + 2 * 1.0) / 2, 2 * (1 + 2 * -2.0) / 2]),
]


@pytest.mark.parametrize("f, x, expected", CASES, ids=[c[0].__name__ for c in CASES])
def test_generated_gradient_of_lists_and_numbers(f, x, expected):
    got = astgrad.grad(f)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)
    assert np.shape(got) == np.shape(x)


@pytest.mark.parametrize("f, x, expected", [c for c in CASES if c[0] in (sum_of_number, max_of_constant,
                                                                      atleast_1d_of_number, float_through_loop,
                                                                      std_of_number)],
                         ids=lambda v: getattr(v, "__name__", ""))
def test_taped_gradient_of_numbers(f, x, expected):
    t = astgrad.tensor(x, requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-9)


@pytest.mark.parametrize("f", [sum_of_list, mean_of_list, norm_of_list])
def test_the_tape_refuses_a_list_of_tensors_numpy_would_convert(f):
    with pytest.raises(RuntimeError, match="requires grad"):
        f(astgrad.tensor(2.0, requires_grad=True))


# -- np.r_ and np.c_ -----------------------------------------------------------

W4 = np.arange(4.0) + 1
W22 = np.array([[1.0, 2.0], [3.0, 4.0]])


def r_one(x):
    return np.sum(np.r_[x] * np.array([1.0, 2.0]))


def r_twice(x):
    return np.sum(np.r_[x, x] * W4)


def r_with_range(x):
    return np.sum(np.r_[0:3, x, 2.0 * x[0]] * np.arange(6.0))


def r_of_numbers(x):
    return np.sum(np.r_[x[0], 3.0, x[1] * x[1]] * np.array([1.0, 2.0, 3.0]))


def c_with_constant(x):
    return np.sum(np.c_[x, np.array([5.0, 6.0])] * W22)


def c_of_matrices(m):
    return np.sum(np.c_[m, 2 * m] * np.arange(8.0).reshape(2, 4))


def c_with_range(x):
    return np.sum(np.c_[0:2, x] ** 2)


R_CASES = [
    (r_one, np.array([1.0, 2.0]), [1.0, 2.0]),
    (r_twice, np.array([1.0, 2.0]), [1.0 + 3.0, 2.0 + 4.0]),
    (r_with_range, np.array([1.0, 2.0]), [3.0 + 2 * 5.0, 4.0]),
    (r_of_numbers, np.array([1.5, 2.0]), [1.0, 3.0 * 2 * 2.0]),
    (c_with_constant, np.array([1.0, 2.0]), [1.0, 3.0]),
    (c_of_matrices, W22, [[0.0 + 2 * 2.0, 1.0 + 2 * 3.0], [4.0 + 2 * 6.0, 5.0 + 2 * 7.0]]),
    (c_with_range, np.array([1.0, -2.0]), [2.0, -4.0]),
]


@pytest.mark.parametrize("f, x, expected", R_CASES, ids=[c[0].__name__ for c in R_CASES])
def test_index_concatenation_has_its_gradient(f, x, expected):
    got = astgrad.grad(f)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


def r_imported(x):
    return np.sum(r_[x, 1.0] * np.array([2.0, 3.0, 4.0])) + np.sum(c_[x] * 5.0)


def test_index_concatenation_imported_by_name():
    np.testing.assert_allclose(astgrad.grad(r_imported)(np.array([1.0, 2.0])), [7.0, 8.0])


def r_with_directive(x):
    return np.sum(np.r_["0,2", x, x])


def test_index_concatenation_directive_is_refused_where_it_is_written():
    with pytest.raises(astgrad.TransformError) as error:
        astgrad.grad(r_with_directive)(np.ones(2))
    message = str(error.value)
    assert "test_lists_and_numbers_into_numpy.py" in message and "'0,2'" in message and "np.concatenate" in message


def test_the_tape_refuses_index_concatenation_of_tensors():
    with pytest.raises(RuntimeError, match="requires grad"):
        r_twice(astgrad.tensor(np.array([1.0, 2.0]), requires_grad=True))


def dot_of_lists(x):
    return np.dot([x, 1.0], [2.0, x])


def product_of_lists(a):
    return np.sum(np.multiply([a, 2.0 * a], (3.0, a)))


def sin_of_list(a):
    return np.sum(np.sin([a, a * a]))


def clip_of_list(a):
    return np.sum(np.clip([a, -a, 0.5 * a], -1.0, 1.0) * np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("f, x, expected", [
    (dot_of_lists, 1.5, 3.0),
    (product_of_lists, 1.5, 3.0 + 4 * 1.5),
    (sin_of_list, 0.5, np.cos(0.5) + 2 * 0.5 * np.cos(0.25)),
    (clip_of_list, 1.5, 3.0 * 0.5),
], ids=["dot", "multiply", "sin", "clip"])
def test_lists_into_products_and_ufuncs(f, x, expected):
    got = astgrad.grad(f)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6)


# -- a list read both as one array and item by item -----------------------------------


def summed_and_indexed(a):
    v = [a, 2 * a]
    return np.sum(v) + v[0] * 3


def indexed_and_averaged(a):
    v = [a, 2 * a]
    return v[1] * 3 + np.mean(v)


def looped_and_maxed(a):
    v = [a, 2 * a]
    s = 0.0
    for item in v:
        s = s + item * item
    return s + np.max(v)


def stacked_and_summed(x):
    v = [x, 2 * x]
    return np.sum(np.stack(v)) + np.sum(v) + np.sum(v[1])


@pytest.mark.parametrize("f, x, expected", [
    (summed_and_indexed, 1.5, 6.0),
    (indexed_and_averaged, 1.5, 7.5),
    (looped_and_maxed, 1.5, 2 * 1.5 + 8 * 1.5 + 2.0),
    (stacked_and_summed, np.array([1.0, 2.0]), [8.0, 8.0]),
], ids=["sum_and_index", "index_and_mean", "loop_and_max", "stack_and_sum"])
def test_a_list_read_as_an_array_and_by_items_gets_both_gradients(f, x, expected):
    got = astgrad.grad(f)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6)
