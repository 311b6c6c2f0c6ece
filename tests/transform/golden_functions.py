"""Functions whose generated adjoints are kept as golden files in tests/golden/.

Editing this file moves line numbers into the generated comments: regenerate
the golden files afterwards (ASTGRAD_REGEN_GOLDEN=1 pytest tests/transform/test_golden.py).
"""

import numpy as np


def straight_line(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def broadcasting(a, row):
    return np.sum((a + row) * row / (1.0 + a * a))


def branch(x):
    if np.sum(x) > 0:
        y = np.sin(x) * x
    else:
        y = x ** 3
    return np.sum(y)


def for_loop(x, n):
    y = x
    for i in range(n):
        y = y * x + np.sin(y)
    return np.sum(y)


def while_loop(x):
    y = x
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return np.sum(y)


def with_break(x):
    s = 0.0
    for i in range(10):
        s = s + np.sum(x * i)
        if s > 5:
            break
    return s


def inner(a, b):
    return a * np.exp(b)


def nested_call(x, y):
    z = inner(x, y) + inner(y, x)
    return np.sum(z)


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def methods(w, v):
    h = np.tanh(w @ v)
    return h.T.dot(h).sum() + h.mean(axis=0).max() + w.reshape(-1)[2] ** 2


def elementwise(x, w):
    return np.sin(x) * w


def indexing(x):
    return np.sum(x[1:, ::2]) + x[0, 1] * x[1, 0]


def several_returns(x):
    s = np.sum(x)
    if s > 0.5:
        return s * s
    return -s


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def scalar_loop(x, n):
    total = 0.0
    for _ in range(n):
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
        total = total + x
    return total


def mlp(W1, b1, W2, X, Y):
    h = np.tanh(X @ W1 + b1)
    return np.mean((h @ W2 - Y) ** 2)


def rnn(Wx, Wh, b, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ Wx + h @ Wh + b)
    return np.mean(h ** 2)


def batched_layer(x, W, b):
    h = np.tanh(x @ W + b)
    p = np.exp(h - np.max(h))
    return p / p.sum() + 0.1 * x[0]


def stencil(u):
    return np.roll(u, 1) + np.roll(u, -1) - 2 * u


def diffusion(c, u, steps):
    for _ in range(steps):
        u = u + c * stencil(u)
    return np.sum(u ** 2)


def leapfrog(vel0, pos0, mass):
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / mass
    for _ in range(10):
        vel += 0.05 * acc
        pos += 0.1 * vel
        acc = -pos / mass
        vel += 0.05 * acc
    return np.sum(pos * vel)


def heat_source(kappa, u0, source):
    u = u0.copy()
    for _ in range(10):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2]) + source
    return np.sum(u ** 2)
