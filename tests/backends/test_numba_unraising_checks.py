"""Under Numba, ``checked(value)`` goes where computing ``value`` provably raises nothing (lower.py
``_unraising_check``): the loss a gradient never reads, ``np.sum(u ** 2)``, is not compiled.

Where the proof fails (two arrays multiplied, which may not broadcast) the
check stays, and a mismatch raises numpy's ValueError compiled too.
"""

import numpy as np
import pytest

import astgrad

pytest.importorskip("numba")


def heat(u0, kappa, steps):
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def unused_product(x, y):
    z = x * y  # never read: computed for numpy's broadcasting error only
    return 0.5 * np.sum(x ** 2)


def _central(f, args, at, eps=1e-6):
    args = list(args)
    value = np.asarray(args[at], dtype=float)
    out = np.zeros(value.shape)
    for k in np.ndindex(value.shape):
        up, down = value.copy(), value.copy()
        up[k] += eps
        down[k] -= eps
        out[k] = (f(*args[:at], up if up.shape else float(up), *args[at + 1:])
                  - f(*args[:at], down if down.shape else float(down), *args[at + 1:])) / (2 * eps)
    return out


def test_a_loss_computed_only_for_its_check_is_not_compiled_and_the_gradient_stays():
    u0, kappa = np.sin(np.linspace(0.0, 3.0, 9)), 0.2
    gradient = astgrad.grad(heat, wrt=("u0", "kappa"), backend="numba")
    du0, dkappa = gradient(u0, kappa, 4)
    assert "checked(" not in gradient.source
    want_u0, want_kappa = astgrad.grad(heat, wrt=("u0", "kappa"))(u0, kappa, 4)
    np.testing.assert_allclose(du0, want_u0, rtol=1e-12)
    assert dkappa == pytest.approx(want_kappa, rel=1e-12)
    np.testing.assert_allclose(du0, _central(heat, (u0, kappa, 4), 0), rtol=1e-6, atol=1e-8)
    assert dkappa == pytest.approx(float(_central(heat, (u0, kappa, 4), 1)), rel=1e-6)


def test_a_check_of_two_arrays_multiplied_stays_and_raises_numpys_error():
    x, y = np.array([0.5, -1.0, 2.0]), np.array([1, 2, 3])
    gradient = astgrad.grad(unused_product, wrt="x", backend="numba")
    np.testing.assert_allclose(gradient(x, y), astgrad.grad(unused_product, wrt="x")(x, y), rtol=1e-15)
    np.testing.assert_allclose(gradient(x, y), _central(unused_product, (x, y), 0), rtol=1e-6)
    assert "checked(x * y)" in gradient.source
    with pytest.raises(ValueError):
        astgrad.grad(unused_product, wrt="x")(x, np.arange(4))
    with pytest.raises(ValueError):
        gradient(x, np.arange(4))
