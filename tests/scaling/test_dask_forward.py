"""jvp, hvp and hessian with Dask arrays: lazy Dask results equal to numpy's, nothing computed but conditions.

The adversarial cases: a numpy tangent made from a Dask one, a column
stacked with ``np.stack`` or a numpy function Dask lacks would each still
give the right number, only by computing whole arrays at once; the
``computations`` fixture counts every computation, so each fails here.
"""

import inspect
import re

import numpy as np
import pytest

import astgrad

from corpus.functions import CASES

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(18)
ROWS, FEATURES = 600, 5
X = RNG.standard_normal((ROWS, FEATURES))
Y = (RNG.random(ROWS) < 0.5).astype(float)
W = RNG.standard_normal(FEATURES) * 0.3
LAM = 0.01


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * LAM * np.sum(w * w)


def logistic_gradient(w, X, y):
    return X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y) / len(y) + LAM * w


def logistic_hessian(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (X.T * (p * (1 - p))) @ X / len(y) + LAM * np.eye(len(w))


def chunked(value, rows=100):
    return da.from_array(value, chunks=(rows,) + value.shape[1:])


def test_jvp_with_dask_data_is_lazy_and_equals_the_gradient_along_u(computations):
    u = RNG.standard_normal(FEATURES)
    value, tangent = astgrad.jvp(logistic_loss)(W, chunked(X), chunked(Y), u)
    assert isinstance(value, da.Array) and isinstance(tangent, da.Array) and tangent.shape == ()
    assert len(computations) == 0
    got_value, got_tangent = dask.compute(value, tangent)
    assert len(computations) == 1
    np.testing.assert_allclose(got_value, logistic_loss(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(got_tangent, logistic_gradient(W, X, Y) @ u, rtol=1e-12)


def test_a_dask_tangent_of_a_numpy_argument_is_not_computed(computations):
    def rowwise(x, s):
        return np.tanh(x) * s

    x, u = RNG.standard_normal(ROWS), RNG.standard_normal(ROWS)
    value, tangent = astgrad.jvp(rowwise, (0, 1))(x, 0.7, (chunked(u), 0.0))
    assert isinstance(value, np.ndarray)  # the value needs no Dask array: numpy computes it as before
    assert isinstance(tangent, da.Array) and tangent.chunks == chunked(u).chunks
    assert len(computations) == 0
    np.testing.assert_allclose(tangent.compute(), 0.7 * u / np.cosh(x) ** 2, rtol=1e-12)


def test_the_tangent_has_the_values_chunks_and_dtype(computations):
    def spread(x):
        return np.outer(x, np.ones(3)) * 2.0

    x = chunked(RNG.standard_normal(ROWS), 150)
    value, tangent = astgrad.jvp(spread)(x, da.ones_like(x))
    assert tangent.chunks == value.chunks and tangent.dtype == np.float64
    assert len(computations) == 0
    np.testing.assert_allclose(tangent.compute(), np.full((ROWS, 3), 2.0))


def test_an_inactive_output_gets_a_lazy_zero_tangent(computations):
    def constant(x, X):
        return np.sum(X, axis=1)

    value, tangent = astgrad.jvp(constant)(0.5, chunked(X), 1.0)
    assert isinstance(tangent, da.Array) and tangent.shape == (ROWS,) and tangent.chunks == value.chunks
    assert len(computations) == 0
    np.testing.assert_array_equal(tangent.compute(), np.zeros(ROWS))


def test_container_outputs_get_lazy_tangents_leaf_by_leaf(computations):
    def both(x):
        return {"sin": np.sin(x), "total": np.sum(x * x)}

    x = chunked(RNG.standard_normal(ROWS))
    u = chunked(RNG.standard_normal(ROWS))
    value, tangent = astgrad.jvp(both)(x, u)
    assert set(tangent) == {"sin", "total"} and all(isinstance(t, da.Array) for t in tangent.values())
    assert tangent["sin"].chunks == x.chunks and len(computations) == 0
    x, u = x.compute(), u.compute()
    np.testing.assert_allclose(tangent["sin"].compute(), np.cos(x) * u, rtol=1e-12)
    np.testing.assert_allclose(tangent["total"].compute(), 2 * x @ u, rtol=1e-12)


def test_a_data_dependent_loop_computes_only_its_conditions(computations):
    def doubling(x):
        y = x
        while np.max(np.abs(y)) < 100.0:
            y = y * 2.0
        return np.sum(y)

    x = X[:, 0]
    _, tangent = astgrad.jvp(doubling)(chunked(x), chunked(np.ones(ROWS)))
    assert computations and computations.scalars_only()
    trips = int(np.ceil(np.log2(100.0 / np.max(np.abs(x)))))
    np.testing.assert_allclose(tangent.compute(), ROWS * 2.0 ** trips)


def test_a_function_dask_lacks_is_an_error_naming_it_not_a_computation(computations):
    def sorted_weights(x):
        return np.sum(np.sort(x) * np.arange(4.0))

    x = da.from_array(np.array([0.3, -1.0, 2.0, 0.5]), chunks=2)
    with pytest.raises(TypeError, match=r"Dask does not implement numpy\.sort"):
        astgrad.jvp(sorted_weights)(x, da.ones_like(x))
    assert len(computations) == 0


def test_hvp_with_dask_data_is_lazy_and_equals_the_hessian_times_v(computations):
    v = RNG.standard_normal(FEATURES)
    hv = astgrad.hvp(logistic_loss)(W, chunked(X), chunked(Y), v)
    assert isinstance(hv, da.Array) and hv.shape == (FEATURES,) and hv.dtype == np.float64
    assert len(computations) == 0
    np.testing.assert_allclose(hv.compute(), logistic_hessian(W, X, Y) @ v, rtol=1e-10)


def test_hvp_along_a_dask_direction_has_its_chunks(computations):
    def energy(x):
        return np.sum(np.cos(x) * x ** 2)

    x, v = RNG.standard_normal(ROWS), RNG.standard_normal(ROWS)
    hv = astgrad.hvp(energy)(chunked(x), chunked(v))
    assert hv.chunks == chunked(v).chunks and len(computations) == 0
    second = 2 * np.cos(x) - 4 * x * np.sin(x) - x ** 2 * np.cos(x)
    np.testing.assert_allclose(hv.compute(), second * v, rtol=1e-10)


def test_hessian_with_dask_data_is_one_lazy_array(computations):
    H = astgrad.hessian(logistic_loss)(W, chunked(X), chunked(Y))
    assert isinstance(H, da.Array) and H.shape == (FEATURES, FEATURES) and H.dtype == np.float64
    assert len(computations) == 0
    np.testing.assert_allclose(H.compute(), logistic_hessian(W, X, Y), rtol=1e-10, atol=1e-14)
    assert len(computations) == 1


def test_hessian_blocks_of_a_tuple_wrt_stay_lazy(computations):
    def bilinear(a, b, X):
        return np.sum(np.tanh(X @ a) * (X @ b))

    a, b = RNG.standard_normal(FEATURES) * 0.2, RNG.standard_normal(FEATURES)
    blocks = astgrad.hessian(bilinear, (0, 1))(a, b, chunked(X))
    assert all(isinstance(block, da.Array) for row in blocks for block in row) and len(computations) == 0
    expected = astgrad.hessian(bilinear, (0, 1))(a, b, X)
    for got_row, want_row in zip(dask.compute(*blocks), expected):
        for got, want in zip(got_row, want_row):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ---------------------------------------------------------------- the corpus

#: case id -> (error, text it names): as for gradients (tests/scaling/test_dask_corpus.py), less what forward
#: mode never needs (a gather with repeated positions has no scatter in its jvp)
NOT_ON_DASK = {
    "clip_keywords": (TypeError, "a_max"),
    "split_pieces": (TypeError, "Dask does not implement numpy.split"),
    "reshape_transpose": (NotImplementedError, None),
    "shape_methods": (NotImplementedError, None),
    "inverse_and_solve": (ValueError, "square"),
    "cholesky_logdet": (ValueError, "square"),
    "determinant": (TypeError, "Dask does not implement numpy.linalg.det"),
    "gram_eigenvalues": (TypeError, "Dask does not implement numpy.linalg.eigh"),
}
NEEDS_SCIPY = {"inverse_and_solve", "cholesky_logdet"}
ON_ARRAYS = [c for c in CASES if any(isinstance(a, np.ndarray) and a.ndim for a in c.args)]
RUNNABLE = [c for c in ON_ARRAYS if c.id not in NOT_ON_DASK]
REFUSED = [c for c in ON_ARRAYS if c.id in NOT_ON_DASK]


def lazy(value):
    if isinstance(value, np.ndarray) and value.ndim:
        return da.from_array(value, chunks=tuple(max(1, (n + 1) // 2) for n in value.shape))
    return value


def _directions(case):
    names = list(inspect.signature(case.f).parameters)
    wrt = case.wrt if isinstance(case.wrt, tuple) else (case.wrt,)
    rng = np.random.default_rng(7)
    out = []
    for position in (names.index(w) if isinstance(w, str) else w for w in wrt):
        value = case.args[position]
        u = rng.standard_normal(np.shape(value))
        if np.iscomplexobj(value):
            u = u + 1j * rng.standard_normal(np.shape(value))
        out.append(u if np.ndim(value) else complex(u) if np.iscomplexobj(value) else float(u))
    return out


def _jvp(case, args, directions):
    tangents = tuple(directions) if isinstance(case.wrt, tuple) else directions[0]
    return astgrad.jvp(case.f, case.wrt)(*args, tangents)


@pytest.mark.sweep(3)
@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
def test_corpus_jvps_on_dask_are_numpys_and_lazy(case, computations):
    directions = _directions(case)
    value, tangent = _jvp(case, case.args, directions)
    lazy_value, lazy_tangent = _jvp(case, [lazy(a) for a in case.args], [lazy(u) for u in directions])
    assert computations.scalars_only(), f"computed more than conditions: {computations}"
    built = len(computations)
    assert isinstance(lazy_tangent, da.Array), type(lazy_tangent)
    if isinstance(lazy_value, da.Array):
        assert lazy_tangent.chunks == lazy_value.chunks
    got_value, got_tangent = dask.compute(lazy_value, lazy_tangent)
    assert len(computations) == built + 1
    np.testing.assert_allclose(got_value, value, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got_tangent, tangent, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_what_dask_cannot_run_raises(case, computations):
    if case.id in NEEDS_SCIPY:
        pytest.importorskip("scipy")
    error, text = NOT_ON_DASK[case.id]
    directions = _directions(case)
    with pytest.raises(error, match=text and re.escape(text)):
        _jvp(case, [lazy(a) for a in case.args], [lazy(u) for u in directions])
    assert computations.scalars_only()


def test_jacobians_with_dask_data_are_lazy(computations):
    def scores(w, X):
        return np.tanh(X[:4] @ w) * np.sum(X @ w)

    jac = astgrad.jacobian(scores)(W, chunked(X))
    jac_forward = astgrad.jacfwd(scores)(W, chunked(X))
    assert isinstance(jac, da.Array) and isinstance(jac_forward, da.Array) and jac.shape == (4, FEATURES)
    expected = astgrad.jacobian(scores)(W, X)
    computed = dask.compute(jac, jac_forward)
    assert len(computations) == 1
    np.testing.assert_allclose(computed[0], expected, rtol=1e-10)
    np.testing.assert_allclose(computed[1], expected, rtol=1e-10)


#: hvp of the corpus's scalar functions: what Dask cannot run in the gradient's jvp, as for gradients
HVP_NOT_ON_DASK = {
    "reshape_transpose": (NotImplementedError, None),
    "split_pieces": (TypeError, "Dask does not implement numpy.split"),
    "fancy_index_with_repeats": (TypeError, "positions"),  # the gradient's scatter, which hvp differentiates
    "determinant": (TypeError, "Dask does not implement numpy.linalg.det"),
    # computed on numpy since the container helpers and gradient_tuple have table entries; Dask refuses them
    "cholesky_logdet": (ValueError, "All chunks must be a square matrix"),
    "gram_eigenvalues": (TypeError, "Dask does not implement numpy.linalg.eigh"),
}
SCALAR = [c for c in ON_ARRAYS if not isinstance(c.wrt, tuple) and np.ndim(c.f(*c.args)) == 0
          and not np.iscomplexobj(c.f(*c.args)) and not any(np.iscomplexobj(a) for a in c.args)]


@pytest.mark.sweep(4)
@pytest.mark.parametrize("case", SCALAR, ids=[c.id for c in SCALAR])
def test_corpus_hvps_on_dask_are_numpys_and_lazy(case, computations):
    (v,) = _directions(case)
    args = [lazy(a) for a in case.args]
    try:
        expected = astgrad.hvp(case.f, case.wrt)(*case.args, v)
    except Exception as refusal:  # refused for numpy arrays: refused alike for Dask arrays
        with pytest.raises(type(refusal)):
            astgrad.hvp(case.f, case.wrt)(*args, lazy(v))
        return
    if case.id in HVP_NOT_ON_DASK:
        error, text = HVP_NOT_ON_DASK[case.id]
        with pytest.raises(error, match=text and re.escape(text)):
            astgrad.hvp(case.f, case.wrt)(*args, lazy(v))
        assert computations.scalars_only()
        return
    got = astgrad.hvp(case.f, case.wrt)(*args, lazy(v))
    assert computations.scalars_only(), f"computed more than conditions: {computations}"
    assert isinstance(got, da.Array) and got.shape == np.shape(v)
    np.testing.assert_allclose(got.compute(), expected, rtol=1e-9, atol=1e-11)
