"""More programs as people write them, differentiated as written.

A GRU over a dict keyed by time step, word2vec's skip-gram loss with
negative sampling (the word vectors picked by a list of indices, one of them
twice), scaled dot-product attention with a mask and a softmax over the
last axis written with in-place normalisation, and batch normalisation in
the style of course assignments, which keeps its running mean and variance
in the caller's ``bn_param`` dict.  Each gradient is compared with one
written by hand and with central finite differences.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad


def _close(got, want, fn, args, wrt):
    for g, w, i in zip(got, want, wrt):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, numeric_grad(fn, args, i), rtol=1e-6, atol=1e-8)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


# -- a GRU ---------------------------------------------------------------------------

def gru_loss(Wz, Uz, Wr, Ur, Wh, Uh, xs, h0, targets):
    hs = {}
    hs[-1] = h0
    loss = 0.0
    for t in range(len(xs)):
        x = xs[t]
        z = sigmoid(np.dot(Wz, x) + np.dot(Uz, hs[t - 1]))  # update gate
        r = sigmoid(np.dot(Wr, x) + np.dot(Ur, hs[t - 1]))  # reset gate
        h_tilde = np.tanh(np.dot(Wh, x) + np.dot(Uh, r * hs[t - 1]))
        hs[t] = (1 - z) * hs[t - 1] + z * h_tilde
        loss += 0.5 * np.sum((hs[t] - targets[t]) ** 2)
    return loss


def gru_backward(Wz, Uz, Wr, Ur, Wh, Uh, xs, h0, targets):
    hs, cache = {-1: h0}, {}
    for t in range(len(xs)):
        x, h = xs[t], hs[t - 1]
        z = sigmoid(Wz @ x + Uz @ h)
        r = sigmoid(Wr @ x + Ur @ h)
        h_tilde = np.tanh(Wh @ x + Uh @ (r * h))
        hs[t] = (1 - z) * h + z * h_tilde
        cache[t] = (x, h, z, r, h_tilde)
    grads = [np.zeros_like(W) for W in (Wz, Uz, Wr, Ur, Wh, Uh)]
    dWz, dUz, dWr, dUr, dWh, dUh = grads
    dh = np.zeros_like(h0)
    for t in reversed(range(len(xs))):
        x, h, z, r, h_tilde = cache[t]
        dh = dh + hs[t] - targets[t]
        da_h = dh * z * (1 - h_tilde ** 2)
        dWh += np.outer(da_h, x)
        dUh += np.outer(da_h, r * h)
        drh = Uh.T @ da_h
        da_r = drh * h * r * (1 - r)
        dWr += np.outer(da_r, x)
        dUr += np.outer(da_r, h)
        da_z = dh * (h_tilde - h) * z * (1 - z)
        dWz += np.outer(da_z, x)
        dUz += np.outer(da_z, h)
        dh = dh * (1 - z) + drh * r + Ur.T @ da_r + Uz.T @ da_z
    return (*grads, dh)


def test_a_gru_over_a_dict_of_steps():
    rng = np.random.default_rng(5)
    H, D, T = 4, 3, 5
    weights = [rng.standard_normal((H, D if i % 2 == 0 else H)) * 0.4 for i in range(6)]
    args = (*weights, [rng.standard_normal(D) for _ in range(T)], rng.standard_normal(H),
            [rng.standard_normal(H) for _ in range(T)])
    wrt = (0, 1, 2, 3, 4, 5, 7)
    _close(astgrad.grad(gru_loss, wrt=wrt)(*args), gru_backward(*args), gru_loss, args, wrt)


# -- word2vec: skip-gram with negative sampling ------------------------------------------

def neg_sampling_loss(center_vec, outside_vectors, outside_idx, neg_idx):
    indices = [outside_idx] + list(neg_idx)
    labels = np.array([1] + [-1 for k in range(len(neg_idx))])
    vecs = outside_vectors[indices, :]
    z = sigmoid(np.dot(vecs, center_vec) * labels)
    loss = -np.sum(np.log(z))
    return loss


def neg_sampling_grad(center_vec, outside_vectors, outside_idx, neg_idx):
    z_o = sigmoid(outside_vectors[outside_idx] @ center_vec)
    grad_center = -(1 - z_o) * outside_vectors[outside_idx]
    grad_outside = np.zeros_like(outside_vectors)
    grad_outside[outside_idx] += -(1 - z_o) * center_vec
    for k in neg_idx:
        z_k = sigmoid(-outside_vectors[k] @ center_vec)
        grad_center += (1 - z_k) * outside_vectors[k]
        grad_outside[k] += (1 - z_k) * center_vec
    return grad_center, grad_outside


def test_skip_gram_negative_sampling_with_a_repeated_word():
    rng = np.random.default_rng(6)
    args = (rng.standard_normal(4), rng.standard_normal((10, 4)), 3, [1, 5, 7, 3, 5])
    wrt = (0, 1)
    _close(astgrad.grad(neg_sampling_loss, wrt=wrt)(*args), neg_sampling_grad(*args), neg_sampling_loss, args, wrt)


# -- masked attention --------------------------------------------------------------------

def attention(Q, K, V, mask):
    d = Q.shape[-1]
    scores = Q @ K.T / np.sqrt(d)
    scores = np.where(mask, scores, -1e9)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ V


def attention_loss(Q, K, V, mask, Y):
    return np.sum(attention(Q, K, V, mask) * Y)


def attention_grad(Q, K, V, mask, Y):
    d = Q.shape[-1]
    scores = np.where(mask, Q @ K.T / np.sqrt(d), -np.inf)
    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = weights / weights.sum(axis=-1, keepdims=True)
    dweights = Y @ V.T
    dscores = weights * (dweights - np.sum(dweights * weights, axis=-1, keepdims=True))
    return dscores @ K / np.sqrt(d), dscores.T @ Q / np.sqrt(d), weights.T @ Y


def test_masked_attention_with_a_softmax_over_the_last_axis():
    rng = np.random.default_rng(8)
    mask = np.tril(np.ones((3, 5), dtype=bool), k=1)
    args = (rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2)), mask,
            rng.standard_normal((3, 2)))
    wrt = (0, 1, 2)
    got = astgrad.grad(attention_loss, wrt=wrt)(*args)
    _close(got, attention_grad(*args), attention_loss, args, wrt)
    assert np.all(got[1][4] == 0.0)  # the last key is masked for every query


# -- batch normalisation with running statistics in bn_param --------------------------------

def batchnorm_forward(x, gamma, beta, bn_param):
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    out, cache = None, None
    if mode == "train":
        sample_mean = np.mean(x, axis=0)
        sample_var = np.var(x, axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        cache = (x_hat, gamma, sample_var, eps)
        running_mean = momentum * running_mean + (1 - momentum) * sample_mean
        running_var = momentum * running_var + (1 - momentum) * sample_var
    elif mode == "test":
        x_hat = (x - running_mean) / np.sqrt(running_var + eps)
        out = gamma * x_hat + beta
    else:
        raise ValueError('Invalid forward batchnorm mode "%s"' % mode)
    bn_param["running_mean"] = running_mean  # Store the updated running means back into bn_param
    bn_param["running_var"] = running_var
    return out, cache


def batchnorm_forward_returning_stats(x, gamma, beta, bn_param):
    """As above, returning the new running statistics instead of writing them into bn_param (the
    caller stores them itself)."""
    mode = bn_param["mode"]
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    out, cache = None, None
    if mode == "train":
        sample_mean = np.mean(x, axis=0)
        sample_var = np.var(x, axis=0)
        x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
        out = gamma * x_hat + beta
        cache = (x_hat, gamma, sample_var, eps)
        running_mean = momentum * running_mean + (1 - momentum) * sample_mean
        running_var = momentum * running_var + (1 - momentum) * sample_var
    elif mode == "test":
        x_hat = (x - running_mean) / np.sqrt(running_var + eps)
        out = gamma * x_hat + beta
    else:
        raise ValueError('Invalid forward batchnorm mode "%s"' % mode)
    return out, cache, {"running_mean": running_mean, "running_var": running_var}


def batchnorm_backward(dout, cache):
    x_hat, gamma, var, eps = cache
    N = dout.shape[0]
    dbeta = np.sum(dout, axis=0)
    dgamma = np.sum(dout * x_hat, axis=0)
    dx_hat = dout * gamma
    dx = (N * dx_hat - np.sum(dx_hat, axis=0) - x_hat * np.sum(dx_hat * x_hat, axis=0)) / (N * np.sqrt(var + eps))
    return dx, dgamma, dbeta


def bn_loss(x, gamma, beta, bn_param, dout):
    out, _ = batchnorm_forward(x, gamma, beta, bn_param)
    return np.sum(out * dout)


def bn_loss_and_stats(x, gamma, beta, bn_param, dout):
    out, _, stats = batchnorm_forward_returning_stats(x, gamma, beta, bn_param)
    return np.sum(out * dout), stats


def _bn_args():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 3)) * 2.0 + 1.0
    return x, rng.standard_normal(3), rng.standard_normal(3), rng.standard_normal((6, 3))


@pytest.mark.parametrize("level", [0, 1, 2])
def test_batchnorm_writing_into_the_callers_bn_param_updates_it_as_numpy_does(level):
    x, gamma, beta, dout = _bn_args()
    bn_param, plain = {"mode": "train"}, {"mode": "train"}
    g = astgrad.grad(bn_loss, wrt=(0, 1, 2), optimize=level)
    for step in range(3):
        got = g(x + step, gamma, beta, bn_param, dout)
        bn_loss(x + step, gamma, beta, plain, dout)  # plain numpy, once a step
        assert list(bn_param) == list(plain) == ["mode", "running_mean", "running_var"]
        for key in ("running_mean", "running_var"):
            np.testing.assert_array_equal(bn_param[key], plain[key])
        _, cache = batchnorm_forward(x + step, gamma, beta, {"mode": "train"})
        loss_only = lambda x, gamma, beta, dout: bn_loss(x, gamma, beta, {"mode": "train"}, dout)  # noqa: E731
        _close(got, batchnorm_backward(dout, cache), loss_only, (x + step, gamma, beta, dout), (0, 1, 2))


def test_batchnorm_returning_its_running_statistics_matches_its_backward_pass():
    x, gamma, beta, dout = _bn_args()
    bn_param = {"mode": "train"}
    (loss, stats), got = astgrad.value_and_grad(bn_loss_and_stats, wrt=(0, 1, 2), has_aux=True)(
        x, gamma, beta, bn_param, dout)
    bn_param.update(stats)
    np.testing.assert_allclose(bn_param["running_mean"], 0.1 * x.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(bn_param["running_var"], 0.1 * x.var(axis=0), rtol=1e-14)
    _, cache = batchnorm_forward(x, gamma, beta, {"mode": "train"})
    loss_only = lambda x, gamma, beta, dout: bn_loss_and_stats(x, gamma, beta, {"mode": "train"}, dout)[0]  # noqa: E731
    _close(got, batchnorm_backward(dout, cache), loss_only, (x, gamma, beta, dout), (0, 1, 2))


def test_batchnorm_in_test_mode_reads_the_running_statistics():
    x, gamma, beta, dout = _bn_args()
    bn_param = {"mode": "test", "running_mean": x.mean(axis=0) + 0.1, "running_var": x.var(axis=0) + 0.2}
    (_, stats), got = astgrad.value_and_grad(bn_loss_and_stats, wrt=(0, 1, 2), has_aux=True)(
        x, gamma, beta, bn_param, dout)
    np.testing.assert_array_equal(stats["running_mean"], bn_param["running_mean"])
    scale = 1 / np.sqrt(bn_param["running_var"] + 1e-5)
    x_hat = (x - bn_param["running_mean"]) * scale
    np.testing.assert_allclose(got[0], dout * gamma * scale, rtol=1e-12)
    np.testing.assert_allclose(got[1], np.sum(dout * x_hat, axis=0), rtol=1e-12)
    np.testing.assert_allclose(got[2], np.sum(dout, axis=0), rtol=1e-12)


def test_an_invalid_batchnorm_mode_raises_the_users_error():
    x, gamma, beta, dout = _bn_args()
    with pytest.raises(ValueError, match="Invalid forward batchnorm mode"):
        astgrad.grad(bn_loss_and_stats, wrt=(1, 2), has_aux=True)(x, gamma, beta, {"mode": "eval"}, dout)
