"""The less common ways of calling numpy, in both engines: einsum's sublist form,
hstack of vectors and numbers, row_stack, concatenate(axis=None), dict arguments.

Each against central differences; where a form is refused, the error says so.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import astgrad

from _numeric import numeric_grad

M = np.array([[1.0, 2.0], [3.0, 4.0]])
A = np.array([[0.5, -1.0], [2.0, 0.25]])


def einsum_sublist_transpose(x):
    return np.sum(np.einsum(x, [0, 1], [1, 0]) * M)


def einsum_sublist_product(x):
    return np.sum(np.einsum(x, [0, 1], A, [1, 2], [0, 2]) * M)


def einsum_sublist_implicit(x):
    return np.einsum(x, [0, 1], x, [0, 1])


def hstack_vectors(x):
    return np.sum(np.hstack([x, x * 2]) * np.arange(4.0))


def hstack_numbers(x):
    return np.sum(np.hstack([x[0], 2.0, x]) * np.arange(4.0))


def vstack_vectors(x):
    return np.sum(np.vstack([x, x * 2]) * M)


def concatenate_flat(m):
    return np.sum(np.concatenate([m, 2 * m], axis=None) * np.arange(8.0))


def stack_last(x):
    return np.sum(np.stack([x, x * x], axis=-1) * M)


FORMS = [
    (einsum_sublist_transpose, M.copy()),
    (einsum_sublist_product, M.copy()),
    (einsum_sublist_implicit, M.copy()),
    (hstack_vectors, np.array([1.0, 2.0])),
    (hstack_numbers, np.array([1.0, 2.0])),
    (vstack_vectors, np.array([1.0, 2.0])),
    (concatenate_flat, M.copy()),
    (stack_last, np.array([1.0, 2.0])),
]


@pytest.mark.parametrize("f, x", FORMS, ids=[f[0].__name__ for f in FORMS])
def test_generated_gradient_of_argument_form(f, x):
    got = astgrad.grad(f)(x)
    assert np.shape(got) == np.shape(x)
    np.testing.assert_allclose(got, numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("f, x", FORMS, ids=[f[0].__name__ for f in FORMS])
def test_taped_gradient_of_argument_form(f, x):
    t = astgrad.tensor(x, requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric_grad(f, [x], 0), rtol=1e-6, atol=1e-8)


def row_stack_vectors(x):
    return np.sum(np.row_stack([x, x * 2]) * M)


@pytest.mark.skipif(not hasattr(np, "row_stack"), reason="numpy without row_stack")
def test_row_stack_in_both_engines():
    x = np.array([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        want = numeric_grad(row_stack_vectors, [x], 0)
        np.testing.assert_allclose(astgrad.grad(row_stack_vectors)(x), want, rtol=1e-6)
        t = astgrad.tensor(x, requires_grad=True)
        row_stack_vectors(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), want, rtol=1e-6)


def einsum_sublist_ellipsis(x):
    return np.sum(np.einsum(x, [Ellipsis, 0], [0, Ellipsis]) * np.arange(M.size).reshape(M.T.shape))


def test_einsum_sublist_with_ellipsis_is_differentiated():
    # the einsum is a transpose: each element gets the weight its transposed position holds
    want = np.arange(M.size).reshape(M.T.shape).T
    np.testing.assert_allclose(astgrad.grad(einsum_sublist_ellipsis)(M.copy()), want)


# -- dict arguments -----------------------------------------------------------


def scaled_by_config(x, cfg):
    return np.sum(x * cfg["scale"])


def from_dict(d):
    return np.sum(d["a"] * 2.0)


def test_a_dict_that_is_only_read_keeps_working():
    np.testing.assert_allclose(astgrad.grad(scaled_by_config)(np.ones(2), {"scale": 3.0}), [3.0, 3.0])


def test_a_dict_wrt_argument_gets_a_dict_gradient():
    got = astgrad.grad(from_dict)({"a": np.ones(2), "unread": np.ones(3)})
    assert list(got) == ["a", "unread"]
    np.testing.assert_allclose(got["a"], [2.0, 2.0])
    np.testing.assert_allclose(got["unread"], np.zeros(3))


# -- integer results carry no gradient ------------------------------------------------


def astype_int_times(x):
    return np.sum(x.astype(int) * x)


def cumsum_int_times(x):
    return np.sum(np.cumsum(x, dtype=np.int64) * x)


def sum_as_int(x):
    return np.sum(x, dtype=int) * 1.0 + np.sum(x)


def prod_as_int(x):
    return np.prod(x, dtype="int32") * 1.0 + np.sum(x * x)


X = np.array([1.5, 2.5, -0.5])


@pytest.mark.parametrize("f, expected", [
    (astype_int_times, [1.0, 2.0, 0.0]),
    (cumsum_int_times, [1.0, 3.0, 3.0]),
    (sum_as_int, [1.0, 1.0, 1.0]),
    (prod_as_int, 2 * X),
], ids=["astype", "cumsum", "sum", "prod"])
def test_an_integer_dtype_result_has_no_gradient(f, expected):
    np.testing.assert_allclose(astgrad.grad(f)(X.copy()), expected)
    t = astgrad.tensor(X.copy(), requires_grad=True)
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), expected)
