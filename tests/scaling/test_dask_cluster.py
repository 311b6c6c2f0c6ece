"""Generated gradients computed by a dask.distributed cluster (a LocalCluster in this process)."""

import numpy as np
import pytest

import astgrad

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        yield client


def mlp_loss(W1, b1, w2, X, y):
    hidden = np.tanh(X @ W1 + b1)
    return np.mean((hidden @ w2 - y) ** 2)


def test_a_cluster_computes_the_gradients_numpy_gives(client):
    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((400, 6)), rng.standard_normal(400)
    W1, b1, w2 = rng.standard_normal((6, 4)), rng.standard_normal(4), rng.standard_normal(4)
    grad = astgrad.grad(mlp_loss, (0, 1, 2))
    expected = grad(W1, b1, w2, X, y)
    lazy = grad(W1, b1, w2, da.from_array(X, chunks=(100, 6)), da.from_array(y, chunks=100))
    assert all(isinstance(g, da.Array) for g in lazy)
    got = client.compute(list(lazy), sync=True)
    for g, want in zip(got, expected):
        np.testing.assert_allclose(g, want, rtol=1e-12)
    hidden = np.tanh(X @ W1 + b1)  # the closed form of the last layer's gradient
    np.testing.assert_allclose(got[2], 2 * hidden.T @ (hidden @ w2 - y) / len(y), rtol=1e-12)


def test_chunked_parameters_come_back_chunked_from_the_cluster(client):
    rng = np.random.default_rng(4)
    X = da.from_array(rng.standard_normal((300, 5)), chunks=(100, 5))
    W = da.from_array(rng.standard_normal((5, 3)), chunks=(5, 3))

    def frobenius(W, X):
        return np.sum((X @ W) ** 2)

    dW, dX = astgrad.grad(frobenius, (0, 1))(W, X)
    assert dW.chunks == W.chunks and dX.chunks == X.chunks
    dW, dX = client.compute([dW, dX], sync=True)
    Xn, Wn = X.compute(), W.compute()
    np.testing.assert_allclose(dW, 2 * Xn.T @ Xn @ Wn, rtol=1e-12)
    np.testing.assert_allclose(dX, 2 * Xn @ Wn @ Wn.T, rtol=1e-12)
