"""Every optimisation level gives the gradient of level 2 (the default) for the whole corpus.

Levels differ in the code they write (fusion regroups arithmetic, so values
agree to rounding, not bit for bit); a level that changed a number would be
a wrong gradient at one level or the other.  The whole test suite runs at a
level with ``pytest --optimize-level=N``.
"""

import numpy as np
import pytest

import astgrad

from .functions import CASES


def _gradients(f, args, wrt, level):
    """grad for a scalar output, else vjp with a fixed seed of the output's shape."""
    value = f(*args)
    if np.ndim(value) == 0:
        out = astgrad.grad(f, wrt=wrt, optimize=level)(*args)
    else:
        seed = np.linspace(-1.0, 2.0, np.size(value)).reshape(np.shape(value))
        out = astgrad.vjp(f, wrt=wrt, optimize=level)(*args, seed)
    return out if isinstance(wrt, tuple) else (out,)


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_each_level_gives_the_default_levels_gradient(case, level):
    expected = _gradients(case.f, case.args, case.wrt, 2)
    got = _gradients(case.f, case.args, case.wrt, level)
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert type(a) is type(b)
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
