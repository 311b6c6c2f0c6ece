"""Central finite differences in float64: the independent reference."""

import numpy as np


def numeric_grad(f, args, index, eps=1e-6, kwargs=None):
    """d f(*args) / d args[index] by central differences (f scalar-valued)."""
    kwargs = kwargs or {}
    args = list(args)
    x = args[index]

    def at(value):
        trial = list(args)
        trial[index] = value
        return float(np.sum(f(*trial, **kwargs)))

    if isinstance(x, float):
        return (at(x + eps) - at(x - eps)) / (2 * eps)
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[idx] += eps
        down[idx] -= eps
        out[idx] = (at(up) - at(down)) / (2 * eps)
    return out


def assert_grad(gradient_fn, f, *args, wrt=(0,), rtol=1e-5, atol=1e-6):
    """Compare a generated gradient with finite differences for each wrt position."""
    got = gradient_fn(*args)
    got = got if len(wrt) > 1 else (got,)
    for value, index in zip(got, wrt):
        expected = numeric_grad(f, args, index)
        assert np.shape(value) == np.shape(expected), (np.shape(value), np.shape(expected))
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol)
