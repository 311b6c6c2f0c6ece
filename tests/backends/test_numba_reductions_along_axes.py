"""Reductions along axes under backend="numba": Numba's own take no keepdims (and max, min, mean no axis).

The generated code's ``np.max(x, axis=1, keepdims=True)`` is rewritten to a
helper compiled for the rank and axes; these tests hold each helper to
numpy's values, dtypes and shapes on the cases a row-by-row loop could get
wrong (axes not last, several axes, negative axes, a transposed input, NaN,
booleans), and the gradients through them to the numpy backend's.
"""

import numpy as np
import pytest

import _numeric
import astgrad

numba = pytest.importorskip("numba")


@pytest.fixture(scope="module")
def reduce_all():
    from astgrad.backends.numba import helpers, reductions as r
    helpers.register()

    @numba.njit(boundscheck=True)
    def reduce_all(x, hits):
        return (r.max_along(x, 1, True), r.min_along(x, (0, 2), False), r.sum_along(x, -1, True),
                r.mean_along(x, (1, 2), False), r.argmax_along(x, 0, False), r.argmin_along(x, 2, True),
                r.sum_along(hits, 1, False), r.max_along(x, None, True), r.mean_along(x, (0, 1, 2), False))
    return reduce_all


def _expected(x, hits):
    return (np.max(x, axis=1, keepdims=True), np.min(x, axis=(0, 2)), np.sum(x, axis=-1, keepdims=True),
            np.mean(x, axis=(1, 2)), np.argmax(x, axis=0), np.argmin(x, axis=2, keepdims=True),
            np.sum(hits, axis=1), np.max(x, axis=None, keepdims=True), np.mean(x))


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "with nan"])
def test_each_reduction_gives_numpys_values_dtypes_and_shapes(reduce_all, layout):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 5))
    if layout == "transposed":
        x = rng.standard_normal((5, 4, 3)).transpose(2, 1, 0)  # strides reversed: not C-contiguous
    if layout == "with nan":
        x[1, 2, 3] = np.nan
    hits = x > 0.2
    for got, expected in zip(reduce_all(x, hits), _expected(x, hits)):
        assert np.shape(got) == np.shape(expected)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)  # NaN where numpy has NaN


def test_the_maximum_of_nothing_raises_as_in_numpy(reduce_all):
    x = np.ones((3, 0, 5))
    with pytest.raises(ValueError):
        np.max(x, axis=1, keepdims=True)
    with pytest.raises(ValueError):
        reduce_all(x, x > 0)


def log_sum_exp_rows(W, X):
    logits = X @ W
    m = np.max(logits, axis=-1, keepdims=True)
    spread = np.min(logits, axis=1) + np.mean(logits, axis=0)[0]
    return np.sum(m + np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))) + np.sum(spread)


def test_gradients_through_reductions_along_axes_are_the_numpy_backends():
    rng = np.random.default_rng(2)
    W, X = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    gradient = astgrad.grad(log_sum_exp_rows, backend="numba")
    code = "\n".join(line for line in gradient.source.splitlines() if not line.lstrip().startswith("#"))
    assert "max_along(logits, -1, True)" in code and "np.max(" not in code
    got = gradient(W, X)
    np.testing.assert_allclose(got, astgrad.grad(log_sum_exp_rows)(W, X), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(got, _numeric.gradient(lambda w: log_sum_exp_rows(w, X), W), rtol=1e-6, atol=1e-8)


def max_along_a_given_axis(x, axis):
    return np.sum(np.max(x, axis=axis))


def test_an_axis_known_only_at_run_time_is_refused_at_the_users_line():
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(max_along_a_given_axis, backend="numba")(np.ones((2, 3)), 1)
    assert "return np.sum(np.max(x, axis=axis))" in str(info.value)
