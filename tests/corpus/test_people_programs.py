"""Programs written as people write them, differentiated as written.

A character-level RNN in the style of the well-known minimal numpy one
(dicts keyed by time step, one-hot inputs built by nested item assignment,
a tanh hidden state, a softmax cross-entropy, a validation ``raise``), and a
two-layer network in the style of course assignments (layer functions
returning ``(out, cache)``, a backward function per layer, parameters and
settings in dicts).  Each gradient is compared with the program's own
hand-written backward pass and with central finite differences, and the
tape runs the same source.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

VOCAB, HIDDEN = 5, 4
RNG = np.random.default_rng(7)
WXH = RNG.standard_normal((HIDDEN, VOCAB)) * 0.3
WHH = RNG.standard_normal((HIDDEN, HIDDEN)) * 0.3
WHY = RNG.standard_normal((VOCAB, HIDDEN)) * 0.3
BH = RNG.standard_normal((HIDDEN, 1)) * 0.1
BY = RNG.standard_normal((VOCAB, 1)) * 0.1
HPREV = RNG.standard_normal((HIDDEN, 1)) * 0.5
INPUTS = [0, 3, 1, 4, 4, 2]
TARGETS = [3, 1, 4, 4, 2, 0]
RNN_ARGS = (INPUTS, TARGETS, HPREV, WXH, WHH, WHY, BH, BY)


# -- a character-level RNN ---------------------------------------------------------

def rnn_loss(inputs, targets, hprev, Wxh, Whh, Why, bh, by):
    """The loss of one sequence; hprev is the hidden state before it."""
    if len(inputs) != len(targets):
        raise ValueError("inputs and targets must have the same length")
    xs, hs, ys, ps = {}, {}, {}, {}
    hs[-1] = np.copy(hprev)
    loss = 0
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))  # encode in 1-of-k
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys[t] = np.dot(Why, hs[t]) + by  # unnormalized log probabilities for next chars
        ps[t] = np.exp(ys[t]) / np.sum(np.exp(ys[t]))  # probabilities for next chars
        loss += -np.log(ps[t][targets[t], 0])  # softmax (cross-entropy loss)
    return loss


def rnn_loss_and_state(inputs, targets, hprev, Wxh, Whh, Why, bh, by):
    hs = {}
    hs[-1] = np.copy(hprev)
    loss = 0.0
    for t in range(len(inputs)):
        x = np.zeros((VOCAB, 1))
        x[inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, x) + np.dot(Whh, hs[t - 1]) + bh)
        y = np.dot(Why, hs[t]) + by
        loss = loss - (y[targets[t], 0] - np.log(np.sum(np.exp(y))))
    return loss, hs[len(inputs) - 1]


def rnn_backward(inputs, targets, hprev, Wxh, Whh, Why, bh, by):
    """The hand-written backward pass: gradients of hprev, Wxh, Whh, Why, bh, by."""
    xs, hs, ps = {}, {}, {}
    hs[-1] = np.copy(hprev)
    for t in range(len(inputs)):
        xs[t] = np.zeros((VOCAB, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(np.dot(Wxh, xs[t]) + np.dot(Whh, hs[t - 1]) + bh)
        ys = np.dot(Why, hs[t]) + by
        ps[t] = np.exp(ys) / np.sum(np.exp(ys))
    dWxh, dWhh, dWhy = np.zeros_like(Wxh), np.zeros_like(Whh), np.zeros_like(Why)
    dbh, dby = np.zeros_like(bh), np.zeros_like(by)
    dhnext = np.zeros_like(hs[0])
    for t in reversed(range(len(inputs))):
        dy = np.copy(ps[t])
        dy[targets[t]] -= 1  # backprop into y
        dWhy += np.dot(dy, hs[t].T)
        dby += dy
        dh = np.dot(Why.T, dy) + dhnext  # backprop into h
        dhraw = (1 - hs[t] * hs[t]) * dh  # backprop through tanh
        dbh += dhraw
        dWxh += np.dot(dhraw, xs[t].T)
        dWhh += np.dot(dhraw, hs[t - 1].T)
        dhnext = np.dot(Whh.T, dhraw)
    return dhnext, dWxh, dWhh, dWhy, dbh, dby


WRT = (2, 3, 4, 5, 6, 7)


def test_the_rnn_as_written_matches_its_backward_pass_and_finite_differences():
    got = astgrad.grad(rnn_loss, wrt=WRT)(*RNN_ARGS)
    want = rnn_backward(*RNN_ARGS)
    for g, w, i in zip(got, want, WRT):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(g, numeric_grad(rnn_loss, RNN_ARGS, i), rtol=1e-6, atol=1e-8)


def test_the_rnn_value_and_its_hidden_state_as_aux():
    (loss, h), grads = astgrad.value_and_grad(rnn_loss_and_state, wrt=WRT, has_aux=True)(*RNN_ARGS)
    assert np.isclose(loss, rnn_loss(*RNN_ARGS), rtol=1e-13)
    assert h.shape == (HIDDEN, 1)
    for g, w in zip(grads, rnn_backward(*RNN_ARGS)):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-13)


def test_the_rnn_validation_raises_the_users_error():
    with pytest.raises(ValueError, match="same length"):
        astgrad.grad(rnn_loss, wrt=WRT)(INPUTS, TARGETS[:-1], *RNN_ARGS[2:])


def test_the_tape_runs_the_same_rnn():
    tensors = [astgrad.tensor(a, requires_grad=True) for a in RNN_ARGS[2:]]
    rnn_loss(INPUTS, TARGETS, *tensors).backward()
    for t, w in zip(tensors, rnn_backward(*RNN_ARGS)):
        np.testing.assert_allclose(t.grad.numpy(), w, rtol=1e-10, atol=1e-13)


# -- a two-layer network of layer functions ------------------------------------------

def affine_forward(x, w, b):
    out = x.reshape(x.shape[0], -1).dot(w) + b
    cache = (x, w, b)
    return out, cache


def affine_backward(dout, cache):
    x, w, b = cache
    dx = dout.dot(w.T).reshape(x.shape)
    dw = x.reshape(x.shape[0], -1).T.dot(dout)
    db = np.sum(dout, axis=0)
    return dx, dw, db


def relu_forward(x):
    out = np.maximum(0, x)
    cache = x
    return out, cache


def relu_backward(dout, cache):
    x = cache
    return dout * (x > 0)


def affine_relu_forward(x, w, b):
    a, fc_cache = affine_forward(x, w, b)
    out, relu_cache = relu_forward(a)
    cache = (fc_cache, relu_cache)
    return out, cache


def softmax_loss(x, y):
    shifted = x - np.max(x, axis=1, keepdims=True)
    log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    n = x.shape[0]
    loss = -np.sum(log_probs[np.arange(n), y]) / n
    dx = np.exp(log_probs)
    dx[np.arange(n), y] -= 1
    dx /= n
    return loss, dx


SETTINGS = {"reg": 0.0, "steps": 0}


def two_layer_loss(params, X, y, reg=0.1):
    SETTINGS["reg"] = reg  # the last regularisation used, for a progress report
    SETTINGS["steps"] += 1
    hidden, cache1 = affine_relu_forward(X, params["W1"], params["b1"])
    scores, cache2 = affine_forward(hidden, params["W2"], params["b2"])
    loss, _ = softmax_loss(scores, y)
    loss += 0.5 * reg * (np.sum(params["W1"] * params["W1"]) + np.sum(params["W2"] * params["W2"]))
    return loss


def two_layer_backward(params, X, y, reg=0.1):
    hidden, (fc1, relu1) = affine_relu_forward(X, params["W1"], params["b1"])
    scores, cache2 = affine_forward(hidden, params["W2"], params["b2"])
    _, dscores = softmax_loss(scores, y)
    grads = {}
    dhidden, grads["W2"], grads["b2"] = affine_backward(dscores, cache2)
    _, grads["W1"], grads["b1"] = affine_backward(relu_backward(dhidden, relu1), fc1)
    grads["W1"] += reg * params["W1"]
    grads["W2"] += reg * params["W2"]
    return grads


def _net():
    rng = np.random.default_rng(11)
    params = {"W1": rng.standard_normal((6, 5)) * 0.5, "b1": rng.standard_normal(5) * 0.1,
              "W2": rng.standard_normal((5, 3)) * 0.5, "b2": rng.standard_normal(3) * 0.1}
    return params, rng.standard_normal((8, 2, 3)), rng.integers(0, 3, 8)


def test_layer_functions_returning_caches_match_their_backward_functions():
    params, X, y = _net()
    steps = SETTINGS["steps"]
    got = astgrad.grad(two_layer_loss)(params, X, y)
    assert SETTINGS["steps"] == steps + 1 and SETTINGS["reg"] == 0.1
    want = two_layer_backward(params, X, y)
    assert set(got) == set(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-10, atol=1e-13)
        numeric = numeric_grad(lambda p: two_layer_loss(dict(params, **{key: p}), X, y), (params[key],), 0)
        np.testing.assert_allclose(got[key], numeric, rtol=1e-6, atol=1e-8)


def pair(x):
    a = x * 2.0
    return a, a


def adds_into_a_returned_array(x):
    p, q = pair(x)
    p += 1.0  # numpy writes into the array q names too
    return np.sum(q * x)


def test_adding_into_an_array_a_function_returned_raises_when_it_runs():
    # loss += reg above is exact because loss is a number when it runs; an array there may be shared
    assert np.isclose(adds_into_a_returned_array(np.ones(3)), 9.0)
    with pytest.raises(TypeError, match="p = p \\+ 1.0") as info:
        astgrad.grad(adds_into_a_returned_array)(np.ones(3))
    assert "test_people_programs.py" in "".join(info.value.__notes__)
