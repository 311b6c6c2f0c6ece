"""The eight benchmark workloads of issue 7, each with a hand-written and an expert gradient.

Every workload is a plain module-level numpy function, written the way a
person would write it, so that the source transformer can read it and the
taped Tensor can run it through numpy's protocols.  Next to it sit two
gradients written with numpy:

* the *hand-written* one, a careful literal transcription of the reverse
  sweep (the reference every other system is checked against and timed
  against);
* the *expert* one, written the way someone who knows numpy well writes it:
  where the reverse sweep is a Python loop whose work can be vectorised, it
  is (W2's linear reverse recurrence becomes a cumulative product over the
  saved iterates, W8's per-step weight products one matrix product over all
  steps).  Where the hand-written gradient is already what an expert writes
  (W1, W3-W7), the expert entry is that same function.

and a maker of inputs for three sizes: ``"test"`` (tiny, for the test
suite), ``"quick"`` (a smoke run) and ``"full"`` (the sizes the issue names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


# ---------------------------------------------------------------- W1 tutorial

def tutorial(x):
    y = x + 2
    z = y * y * 3
    return np.mean(z)


def tutorial_grad(x):
    return (x + 2) * (6.0 / x.size)


def tutorial_inputs(size, rng):
    return (np.ones((2, 2)) + 0.1 * rng.standard_normal((2, 2)),)


# ---------------------------------------------------------- W2 scalar loop

def scalar_loop(x, steps):
    total = 0.0
    for _ in range(steps):
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
        total = total + x
    return total


def scalar_loop_grad(x, steps):
    xs = []
    for _ in range(steps):
        xs.append(x)
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
    g = 0.0
    for x in reversed(xs):
        g = (g + 1.0) * (0.9 * np.cos(x) + 0.2 * x - 0.03 * x * x)
    return g


def scalar_loop_expert(x, steps):
    # The primal is a non-linear recurrence: its iterates need the Python loop.
    xs = np.empty(steps)
    for t in range(steps):
        xs[t] = x
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
    # The reverse sweep g = (g + 1) * a_t, from t = steps-1 down to 0, is
    # linear in g: unrolled, g = a_0 + a_0 a_1 + ... + a_0 ... a_{n-1}.
    a = 0.9 * np.cos(xs) + 0.2 * xs - 0.03 * xs * xs
    return float(np.sum(np.cumprod(a)))


def scalar_loop_inputs(size, rng):
    steps = {"test": 20, "quick": 100, "full": 1000}[size]
    return (0.5, steps)


# ---------------------------------------------------------------- W3/W4 MLP

def mlp_loss(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 - Y) ** 2)


def mlp_loss_grad(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    r = h @ W2
    r -= Y
    r *= 2.0 / r.size
    dW2 = h.T @ r
    dh = r @ W2.T
    h *= h
    np.subtract(1.0, h, out=h)
    dh *= h
    return X.T @ dh, dh.sum(axis=0), dW2


def _mlp_inputs(batch, n_in, n_hidden, n_out, rng):
    W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b1 = 0.1 * rng.standard_normal(n_hidden)
    W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    X = rng.standard_normal((batch, n_in))
    Y = rng.standard_normal((batch, n_out))
    return W1, b1, W2, X, Y


def mlp_small_inputs(size, rng):
    dims = {"test": (4, 5, 6, 3), "quick": (32, 64, 64, 10), "full": (32, 64, 64, 10)}[size]
    return _mlp_inputs(*dims, rng)


def mlp_large_inputs(size, rng):
    dims = {"test": (6, 7, 8, 3), "quick": (64, 128, 128, 10), "full": (512, 1024, 1024, 10)}[size]
    return _mlp_inputs(*dims, rng)


# ------------------------------------------------- W5 while-loop (vjp, seed)

def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


def doubling_vjp(x, seed):
    y = x * 2
    scale = 2.0
    while np.linalg.norm(y) < 1000:
        y = y * 2
        scale *= 2.0
    return seed * scale


def doubling_inputs(size, rng):
    return rng.standard_normal(3), np.array([0.1, 1.0, 0.0001])


# --------------------------------------------------------- W6 elementwise

def elementwise(x):
    return np.sum(np.exp(np.sin(x)) * x ** 2)


def elementwise_grad(x):
    g = np.cos(x)
    g *= x
    g += 2.0
    g *= x
    g *= np.exp(np.sin(x))
    return g


def elementwise_inputs(size, rng):
    n = {"test": 7, "quick": 10_000, "full": 1_000_000}[size]
    return (rng.standard_normal(n),)


# ------------------------------------------------ W7 softmax cross-entropy

def softmax_xent(W, X, Y):
    logits = X @ W
    m = np.max(logits, axis=1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (logits - lse), axis=1))


def softmax_xent_grad(W, X, Y):
    logits = X @ W
    logits -= np.max(logits, axis=1, keepdims=True)
    p = np.exp(logits, out=logits)
    p /= np.sum(p, axis=1, keepdims=True)
    p *= np.sum(Y, axis=1, keepdims=True)
    p -= Y
    p /= X.shape[0]
    return X.T @ p


def softmax_xent_inputs(size, rng):
    batch, n_in, n_classes = {"test": (5, 4, 3), "quick": (64, 128, 100), "full": (256, 512, 100)}[size]
    W = 0.1 * rng.standard_normal((n_in, n_classes))
    X = rng.standard_normal((batch, n_in))
    Y = np.eye(n_classes)[rng.integers(0, n_classes, batch)]
    return W, X, Y


# ------------------------------------------------------------- W8 tanh RNN

def rnn(Wx, Wh, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.mean(h ** 2)


def rnn_grad(Wx, Wh, b, xs, h0):
    hs = [h0]
    for t in range(xs.shape[0]):
        hs.append(np.tanh(xs[t] @ Wx + hs[-1] @ Wh + b))
    dWx = np.zeros_like(Wx)
    dWh = np.zeros_like(Wh)
    db = np.zeros_like(b)
    dh = hs[-1] * (2.0 / hs[-1].size)
    for t in range(xs.shape[0] - 1, -1, -1):
        h = hs[t + 1]
        dz = dh * (1.0 - h * h)
        dWx += xs[t].T @ dz
        dWh += hs[t].T @ dz
        db += dz.sum(axis=0)
        dh = dz @ Wh.T
    return dWx, dWh, db


def rnn_expert(Wx, Wh, b, xs, h0):
    steps, batch, n_in = xs.shape
    hs = np.empty((steps + 1,) + h0.shape)
    hs[0] = h0
    pre = (xs.reshape(steps * batch, n_in) @ Wx).reshape(steps, batch, -1)  # every step's in one product
    pre += b
    for t in range(steps):
        np.tanh(pre[t] + hs[t] @ Wh, out=hs[t + 1])
    # Only dh needs the loop; the weight gradients are one product over all steps.
    dz = np.empty_like(pre)
    dh = hs[-1] * (2.0 / hs[-1].size)
    for t in range(steps - 1, -1, -1):
        h = hs[t + 1]
        np.multiply(dh, 1.0 - h * h, out=dz[t])
        dh = dz[t] @ Wh.T
    dz2 = dz.reshape(steps * batch, -1)
    dWx = xs.reshape(steps * batch, n_in).T @ dz2
    dWh = hs[:-1].reshape(steps * batch, -1).T @ dz2
    return dWx, dWh, dz2.sum(axis=0)


def rnn_inputs(size, rng):
    steps, batch, n_in, n_hidden = {"test": (4, 3, 2, 5), "quick": (10, 16, 64, 128),
                                    "full": (50, 16, 64, 128)}[size]
    Wx = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    Wh = rng.standard_normal((n_hidden, n_hidden)) / np.sqrt(n_hidden)
    b = 0.1 * rng.standard_normal(n_hidden)
    xs = rng.standard_normal((steps, batch, n_in))
    h0 = np.zeros((batch, n_hidden))
    return Wx, Wh, b, xs, h0


# ------------------------------------------------------------------ table

@dataclass(frozen=True)
class Workload:
    """One benchmark: the function, what it is differentiated with respect to, and its reference."""

    key: str
    title: str
    fn: Callable
    wrt: tuple
    hand: Callable
    inputs: Callable
    vjp: bool = False
    expert: Callable | None = None  # None: the hand-written gradient is already the expert's

    def expert_grads(self, *args):
        """The expert's gradient as a tuple, one entry per ``wrt`` position."""
        out = (self.expert or self.hand)(*args)
        return out if isinstance(out, tuple) else (out,)

    def make_inputs(self, size="full", seed=0):
        """The arguments (for a vjp, the seed last) for ``size`` test, quick or full."""
        args = self.inputs(size, np.random.default_rng(seed))
        return tuple(args)

    def hand_grads(self, *args):
        """The hand-written gradient as a tuple, one entry per ``wrt`` position."""
        out = self.hand(*args)
        return out if isinstance(out, tuple) else (out,)


WORKLOADS = {w.key: w for w in [
    Workload("W1", "tutorial mean(3(x+2)^2), x 2x2", tutorial, (0,), tutorial_grad, tutorial_inputs),
    Workload("W2", "1000-step scalar loop", scalar_loop, (0,), scalar_loop_grad, scalar_loop_inputs,
             expert=scalar_loop_expert),
    Workload("W3", "MLP loss 32x64x64x10", mlp_loss, (0, 1, 2), mlp_loss_grad, mlp_small_inputs),
    Workload("W4", "MLP loss 512x1024x1024x10", mlp_loss, (0, 1, 2), mlp_loss_grad, mlp_large_inputs),
    Workload("W5", "while-loop doubling, vjp", doubling, (0,), doubling_vjp, doubling_inputs, vjp=True),
    Workload("W6", "sum(exp(sin x) x^2), 1e6", elementwise, (0,), elementwise_grad, elementwise_inputs),
    Workload("W7", "softmax cross-entropy 256x512x100", softmax_xent, (0,), softmax_xent_grad,
             softmax_xent_inputs),
    Workload("W8", "tanh RNN, 50 steps, H128 D64 B16", rnn, (0, 1, 2), rnn_grad, rnn_inputs,
             expert=rnn_expert),
]}


def directional_derivative_error(workload, args, grads, directions=2, seed=1):
    """Largest relative gap between <grad, v> and a central difference along random ``v``.

    Cheap enough for the full sizes (two function calls per direction), where
    a full finite-difference gradient of a million inputs is not.
    """
    rng = np.random.default_rng(seed)
    args = list(args)
    seed_value = args.pop() if workload.vjp else None

    def value(point):
        out = workload.fn(*point)
        return float(np.sum(out * seed_value)) if workload.vjp else float(out)

    worst = 0.0
    for _ in range(directions):
        vs = [rng.standard_normal(np.shape(args[i])) for i in workload.wrt]
        eps = 1e-6
        plus, minus = list(args), list(args)
        for i, v in zip(workload.wrt, vs):
            plus[i] = args[i] + eps * v
            minus[i] = args[i] - eps * v
        numeric = (value(plus) - value(minus)) / (2 * eps)
        analytic = sum(float(np.sum(np.asarray(g) * v)) for g, v in zip(grads, vs))
        worst = max(worst, abs(numeric - analytic) / max(1e-8, abs(analytic), abs(numeric)))
    return worst
