"""A compiled gradient checked against the numpy backend's and against central differences."""

import numpy as np

import _numeric
import astgrad


def agrees_with_numpy_and_differences(fn, args, wrt=(0, 1), backend="numba"):
    """The ``backend`` gradient of ``fn`` in ``wrt`` has the numpy backend's shapes and values (1e-12) and
    central differences' values; returns the compiled gradient (its ``.source`` for the caller to read)."""
    gradient = astgrad.grad(fn, wrt=wrt, backend=backend)
    got = gradient(*args)
    want = astgrad.grad(fn, wrt=wrt)(*args)
    for i, g, w in zip(wrt, got, want):
        assert np.shape(g) == np.shape(w)
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=0)
        np.testing.assert_allclose(g, _numeric.numeric_grad(fn, list(args), i), rtol=1e-6, atol=1e-9)
    return gradient
