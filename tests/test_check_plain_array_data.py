"""check_grads on numpy code whose data are plain arrays: ``X.dot(W)`` with ``W`` differentiated.

On the tape, an ndarray method given a Tensor converts it to an array and
loses the graph (PyTorch's ``numpy()`` refuses).  check_grads (and so the
gradcheck fixture) makes every floating-point array argument that is not
differentiated a Tensor without ``requires_grad``, so such code runs on the
tape too and all three opinions are compared.  What the tape still cannot
follow is reported skipped with its reason, never compared as a number.
"""

import numpy as np

import astgrad

RNG = np.random.default_rng(5)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((6, 3))
Y = np.array([0, 1, 1, 0, 1, 0])


def softmax_loss(W, X, y):
    scores = X.dot(W)
    shifted = scores - scores.max(axis=1, keepdims=True)
    probs = np.exp(shifted) / np.sum(np.exp(shifted), axis=1, keepdims=True)
    return -np.mean(np.log(probs[np.arange(X.shape[0]), y]))


def softmax_loss_grad(W, X, y):
    scores = X @ W
    probs = np.exp(scores - scores.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    probs[np.arange(X.shape[0]), y] -= 1
    return X.T @ probs / X.shape[0]


def test_plain_array_data_cross_checks_on_the_tape():
    x_before = X.copy()
    report = astgrad.check_grads(softmax_loss, W, X, Y)
    assert report.skipped == {}
    assert set(report.gradients) == {"generated", "taped", "numeric"}
    for mode in report.gradients:
        np.testing.assert_allclose(report.gradients[mode][0], softmax_loss_grad(W, X, Y), rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(X, x_before)


def test_the_gradcheck_fixture_does_the_same(gradcheck):
    report = gradcheck(softmax_loss, W, X, Y)
    assert set(report.gradients) == {"generated", "taped", "numeric"}


def centred_in_place(W, X):
    scores = X.dot(W)
    scores -= scores.max(axis=1, keepdims=True)  # the tape's max saved the scores it changes
    return np.sum(np.exp(scores))


def test_an_in_place_update_of_a_value_backward_needs_is_skipped_with_the_reason():
    report = astgrad.check_grads(centred_in_place, W, X)
    assert set(report.gradients) == {"generated", "numeric"}
    assert "modified by an inplace operation" in report.skipped["taped"]
