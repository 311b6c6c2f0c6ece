"""np.nan_to_num and np.select pass the gradient only to the values they keep; linspace is linear in its ends."""

from __future__ import annotations

import numpy as np
import pytest

import astgrad


def cleaned(x):
    return np.sum(np.nan_to_num(x, nan=7.0, posinf=1.0) * np.arange(1.0, 5.0))


def chosen(x):
    return np.sum(np.select([x > 1.0, x < -1.0], [x * 3.0, x * x], default=x))


def grid(a, b):
    return np.sum(np.linspace(a, b, 5) ** 2)


def test_replaced_values_get_no_gradient():
    x = np.array([1.5, np.nan, np.inf, -2.0])
    for got in (astgrad.grad(cleaned)(x), _taped(cleaned, x)):
        np.testing.assert_array_equal(got, [1.0, 0.0, 0.0, 4.0])


def test_select_differentiates_the_branch_each_element_takes():
    x = np.array([2.0, -3.0, 0.5])
    for got in (astgrad.grad(chosen)(x), _taped(chosen, x)):
        np.testing.assert_allclose(got, [3.0, -6.0, 1.0])


def test_linspace_closed_form():
    # points a + (b - a) k / 4: d/da sum p^2 = sum 2 p (1 - k/4), d/db = sum 2 p k / 4
    a, b = 0.5, 2.5
    k = np.arange(5) / 4
    p = a + (b - a) * k
    got = astgrad.grad(grid, wrt=(0, 1))(a, b)
    np.testing.assert_allclose(got, [np.sum(2 * p * (1 - k)), np.sum(2 * p * k)])


def _taped(f, x):
    t = astgrad.tensor(x, requires_grad=True)
    f(t).backward()
    return t.grad.numpy()


def with_coordinates(f):
    return np.sum(np.gradient(f, np.array([0.0, 0.5, 2.0, 2.5])) ** 2)


def test_gradient_is_numpys_own_stencil_transposed_and_coordinates_are_refused():
    # np.gradient(f) of length 4 is d @ f with numpy's edge rows; the gradient of sum(w * d @ f) is d.T @ w
    f = np.array([1.0, 4.0, 2.0, 8.0])
    d = np.array([[-1.0, 1.0, 0.0, 0.0], [-0.5, 0.0, 0.5, 0.0], [0.0, -0.5, 0.0, 0.5], [0.0, 0.0, -1.0, 1.0]])
    w = np.array([1.0, -2.0, 3.0, 0.5])

    def weighted(f):
        return np.sum(np.gradient(f) * w)

    np.testing.assert_allclose(astgrad.grad(weighted)(f), d.T @ w)
    np.testing.assert_allclose(_taped(weighted, f), d.T @ w)
    for run in (astgrad.grad(with_coordinates), lambda f: _taped(with_coordinates, f)):
        with pytest.raises(ValueError, match="coordinate arrays"):
            run(f)
