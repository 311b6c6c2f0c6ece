"""The gradient of ``X @ w`` (a matrix times a vector) for ``w``: ``X.T @ g``, without an X-sized temporary."""

import tracemalloc

import numpy as np

import astgrad

from _numeric import gradient


def scores(w, X):
    return np.sum(np.tanh(X @ w))


def test_the_vector_gradient_is_the_closed_form_and_the_numeric_one():
    rng = np.random.default_rng(8)
    X, w = rng.standard_normal((7, 4)), rng.standard_normal(4)
    dw = astgrad.grad(scores)(w, X)
    np.testing.assert_allclose(dw, X.T @ (1 - np.tanh(X @ w) ** 2), rtol=1e-13)
    np.testing.assert_allclose(dw, gradient(lambda v: scores(v, X), w), rtol=1e-7)
    taped = astgrad.tensor(w, requires_grad=True)
    scores(taped, astgrad.tensor(X)).backward()
    np.testing.assert_allclose(taped.grad.numpy(), dw, rtol=1e-13)


def test_a_batch_of_matrices_times_a_vector_still_sums_over_the_batch():
    rng = np.random.default_rng(9)
    X, w = rng.standard_normal((3, 5, 4)), rng.standard_normal(4)
    dw = astgrad.grad(scores)(w, X)
    np.testing.assert_allclose(dw, gradient(lambda v: scores(v, X), w), rtol=1e-7)


def test_the_gradient_takes_no_copy_of_the_matrix():
    X, w = np.ones((20_000, 50)) / 50, np.full(50, 0.01)
    grad = astgrad.grad(scores)
    grad(w, X)  # transformed outside the measurement
    tracemalloc.start()
    try:
        grad(w, X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < X.nbytes / 4, peak  # X * g[:, None] would take X.nbytes
