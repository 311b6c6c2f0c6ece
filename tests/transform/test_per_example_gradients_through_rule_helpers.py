"""Per-example gradients (``vmap(grad(f))``) through reverse rules whose helpers take ``*args`` or ``**kwargs``.

The losses' ``_per_element``, ``np.meshgrid``'s, ``np.broadcast_arrays``',
``np.gradient``'s and the builtins' ``max``/``min`` reverse rules batch by
rules of their own (rules/batching_rule_helpers.py); ``np.linalg.lstsq``'s
through ``pinv``'s rule, ``np.linalg.eig``'s through its check of the
eigenvectors' condition.  Each against a Python loop of ``grad`` over the
examples: a batched argument beside a shared one, the batch axis last
(``in_axes=-1``), the gradients' batch axis moved (``out_axes=1``), and a
batch of one.
"""

import numpy as np
import pytest

import astgrad
from astgrad.rules.losses import huber_loss, smooth_l1_loss

RNG = np.random.default_rng(21)


def huber(x, t):
    return huber_loss(x * x, t, "mean", 0.5) + smooth_l1_loss(np.sin(x), t, "sum")


def grid(x, y):
    gx, gy = np.meshgrid(x, y)
    a, b = np.broadcast_arrays(x, np.reshape(y[:1], (1,)))
    return np.sum(gx * gy ** 2) + np.sum(a * b) + max(np.sum(x), np.sum(y)) + np.sum(np.gradient(x * y[: x.size]))


def least_squares(a, b):
    return np.sum(np.linalg.lstsq(a, b, rcond=None)[0] ** 2)


def eigenvalues(a, b):
    return np.sum(np.real(np.linalg.eigvals(a + b * np.eye(3))) ** 2)


CASES = [(huber, (4,), (4,)), (grid, (4,), (5,)), (least_squares, (5, 3), (5,)), (eigenvalues, (3, 3), ())]


def _draw(shape, size):
    if shape == (3, 3):  # an eigenproblem with distinct real eigenvalues: a symmetric matrix plus a small skew
        m = RNG.normal(size=(size, 3, 3))
        return m + np.swapaxes(m, 1, 2) + 0.1 * (m - np.swapaxes(m, 1, 2)) + np.array([0.0, 3.0, 6.0]) * np.eye(3)
    return RNG.normal(size=(size,) + shape)


def _loop(f, args, axes, size):
    g = astgrad.grad(f, wrt=(0, 1))
    return [g(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, axes)]) for k in range(size)]


@pytest.mark.parametrize("size", [3, 1])
@pytest.mark.parametrize("f, first, second", CASES, ids=[c[0].__name__ for c in CASES])
def test_per_example_gradients_match_a_loop_of_grad(f, first, second, size):
    x, y = _draw(first, size), _draw(second, size)
    for axes in [(0, 0), (0, None), (None, 0), (-1, 0)]:
        args = [a[0] if ax is None else np.moveaxis(a, 0, -1) if ax == -1 else a for a, ax in zip((x, y), axes)]
        looped = _loop(f, args, axes, size)
        for out_axes in (0, 1):
            if out_axes == 1 and any(np.ndim(g) == 0 for g in looped[0]):
                continue  # a scalar example's gradient has no second axis
            batched = astgrad.vmap(astgrad.grad(f, wrt=(0, 1)), in_axes=axes, out_axes=out_axes)(*args)
            for i, part in enumerate(batched):
                expected = np.moveaxis(np.stack([r[i] for r in looped]), 0, out_axes)
                assert np.shape(part) == expected.shape
                np.testing.assert_allclose(part, expected, rtol=1e-9, atol=1e-11)
