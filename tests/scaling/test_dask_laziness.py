"""Generated gradients of Dask arrays are Dask graphs: nothing computes until asked, except a condition.

The adversarial cases: a helper that turns a Dask array into numpy (a
silent ``np.asarray``, a numpy buffer written with a Dask value, a numpy
function Dask lacks) would still give the right number, only by computing
the whole array at once; the ``computations`` fixture counts every
computation, so each of those fails here.
"""

import subprocess
import sys

import numpy as np
import pytest

import astgrad

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

RNG = np.random.default_rng(15)
ROWS, FEATURES = 600, 5
X = RNG.standard_normal((ROWS, FEATURES))
Y = (RNG.random(ROWS) < 0.5).astype(float)
W = RNG.standard_normal(FEATURES) * 0.3


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def logistic_gradient(w, X, y):
    """The closed form: X^T (sigmoid(Xw) - y) / n."""
    return X.T @ (1.0 / (1.0 + np.exp(-(X @ w))) - y) / len(y)


def chunked(value, rows=100):
    return da.from_array(value, chunks=(rows,) + value.shape[1:])


def test_nothing_computes_before_compute(computations):
    dw, dX = astgrad.grad(logistic_loss, (0, 1))(chunked(W, 5), chunked(X), chunked(Y))
    value, dw2 = astgrad.value_and_grad(logistic_loss)(W, chunked(X), chunked(Y))
    assert len(computations) == 0
    assert dw.chunks == ((5,),) and dX.chunks == chunked(X).chunks
    got = dask.compute(dw, dX, value, dw2)
    assert len(computations) == 1
    np.testing.assert_allclose(got[0], logistic_gradient(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(got[1], np.outer(1.0 / (1.0 + np.exp(-(X @ W))) - Y, W) / ROWS, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(got[2], logistic_loss(W, X, Y), rtol=1e-12)
    np.testing.assert_allclose(got[3], got[0], rtol=1e-12)


def test_numpy_parameters_with_dask_data_get_lazy_gradients(computations):
    dw = astgrad.grad(logistic_loss)(W, chunked(X), chunked(Y))
    assert isinstance(dw, da.Array) and dw.shape == W.shape and dw.dtype == np.float64
    assert len(computations) == 0
    np.testing.assert_allclose(dw.compute(), logistic_gradient(W, X, Y), rtol=1e-12)


def test_a_number_parameter_gets_a_lazy_number(computations):
    def scaled(s, X):
        return np.sum(np.tanh(s * X))

    ds = astgrad.grad(scaled)(0.3, chunked(X))
    assert isinstance(ds, da.Array) and ds.shape == ()
    assert len(computations) == 0
    np.testing.assert_allclose(ds.compute(), np.sum(X / np.cosh(0.3 * X) ** 2), rtol=1e-12)


def test_vjp_with_a_dask_seed(computations):
    def rowwise(X, w):
        return np.sin(X) @ w

    seed = chunked(RNG.standard_normal(ROWS))
    dX = astgrad.vjp(rowwise)(chunked(X), W, seed)
    assert len(computations) == 0 and dX.chunks == chunked(X).chunks
    np.testing.assert_allclose(dX.compute(), np.cos(X) * np.outer(seed.compute(), W), rtol=1e-12)


def branchy(x):
    if np.sum(x) > 0:
        y = np.sin(x) * x
    else:
        y = x ** 3
    return np.sum(y)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_a_data_dependent_branch_computes_only_its_condition(computations, sign):
    x = np.abs(X[:, 0]) * sign
    dx = astgrad.grad(branchy)(chunked(x))
    assert computations, "the condition must be computed to choose the branch"
    assert all(len(values) == 1 and np.ndim(values[0]) == 0 and np.asarray(values[0]).dtype == bool
               for values in computations), computations  # one boolean each time: the condition, nothing else
    assert isinstance(dx, da.Array)
    expected = np.cos(x) * x + np.sin(x) if sign > 0 else 3 * x ** 2
    np.testing.assert_allclose(dx.compute(), expected, rtol=1e-12)


def test_a_while_loop_on_a_dask_reduction_computes_its_condition_each_trip(computations):
    def doubling(x):
        y = x
        while np.max(np.abs(y)) < 100.0:
            y = y * 2.0
        return np.sum(y)

    x = chunked(X[:, 0])
    dx = astgrad.grad(doubling)(x)
    trips = int(np.ceil(np.log2(100.0 / np.max(np.abs(X[:, 0])))))
    assert computations.scalars_only() and len(computations) >= trips + 1
    np.testing.assert_allclose(dx.compute(), np.full(ROWS, 2.0 ** trips))


def test_a_shape_of_unknown_size_is_refused(computations):
    def positive_mean(x):
        return np.mean(x[x > 0])  # its seed divides by the count of the selection, unknown until computed

    with pytest.raises(ValueError, match=r"unknown size.*compute_chunk_sizes") as info:
        astgrad.grad(positive_mean)(chunked(X[:, 0]))
    assert any("positive_mean" in note and "return np.mean(x[x > 0])" in note for note in info.value.__notes__)
    assert computations.scalars_only()


def test_a_gradient_written_at_lazy_positions_is_refused(computations):
    def positive_squares(x):
        return np.sum(x[x > 0] ** 2)

    with pytest.raises(TypeError, match=r"positions that are themselves a Dask array.*np\.where") as info:
        astgrad.grad(positive_squares)(chunked(X[:, 0]))
    assert any("return np.sum(x[x > 0] ** 2)" in note for note in info.value.__notes__)
    assert computations.scalars_only()


def test_np_where_instead_of_a_mask_works(computations):
    def positive_squares(x):
        return np.sum(np.where(x > 0, x, 0.0) ** 2)

    dx = astgrad.grad(positive_squares)(chunked(X[:, 0]))
    assert len(computations) == 0
    np.testing.assert_allclose(dx.compute(), 2 * np.maximum(X[:, 0], 0.0), rtol=1e-12)


def test_a_function_dask_lacks_is_an_error_naming_it_not_a_computation(computations):
    def sorted_weights(x):
        return np.sum(np.sort(x) * np.arange(4.0))

    with pytest.raises(TypeError, match=r"Dask does not implement numpy\.sort"):
        astgrad.grad(sorted_weights)(da.from_array(np.array([0.3, -1.0, 2.0, 0.5]), chunks=2))
    assert len(computations) == 0


def test_a_rule_dask_cannot_run_is_named(computations, isolated_rules):
    @astgrad.primitive
    def spread_sum(x):
        return np.sum(x)

    @astgrad.defvjp(spread_sum)
    def spread_sum_rule(g, ans, x):
        return _full_like_numpy(x, g)

    def f(x):
        return spread_sum(x * 2.0)

    with pytest.raises(TypeError, match=r"Dask does not implement numpy\.size, which _full_like_numpy") as info:
        astgrad.grad(f)(chunked(X[:, 0]))
    assert len(computations) == 0
    note = "\n".join(info.value.__notes__)  # the rule is inlined: the note names the call whose gradient it is
    assert "while computing the gradient of" in note and "return spread_sum(x * 2.0)" in note


def _full_like_numpy(x, g):
    return g * np.ones(np.size(x))  # np.size: not in Dask


def test_a_repeated_position_is_refused_not_computed(computations):
    def gathered(x):
        return np.sum(x[np.array([0, 2, 2])] ** 2)

    with pytest.raises(TypeError, match="positions"):
        astgrad.grad(gathered)(chunked(X[:, 0]))
    assert len(computations) == 0


def test_gradients_of_list_items_stay_lazy(computations):
    def rows(x):
        first, second, third = x
        return np.sum(first * third) + np.sum(x[0]) + np.sum(x[1])

    x = chunked(X[:3], 2)
    dx = astgrad.grad(rows)(x)
    assert len(computations) == 0 and dx.chunks == x.chunks
    expected = np.stack([X[2] + 1.0, np.ones(FEATURES), X[0]])
    np.testing.assert_allclose(dx.compute(), expected, rtol=1e-12)


def test_without_dask_in_use_nothing_imports_it(tmp_path):
    script = tmp_path / "numpy_only.py"
    script.write_text("import sys, numpy as np, astgrad\n"
                      "f = lambda x: np.sum(np.sin(x))\n"
                      "astgrad.grad(f)(np.ones(3)), astgrad.grad(f)([1.0, 2.0]), astgrad.value_and_grad(f)(x=np.ones(3))\n"
                      "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')], 'dask imported'\n")
    subprocess.run([sys.executable, str(script)], check=True, env=_env())


def _env():
    import os
    env = dict(os.environ)
    src = os.path.join(os.path.dirname(astgrad.__file__), os.pardir)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(src), env.get("PYTHONPATH", "")])
    return env
