"""A value with a tangent passed to a user function through ``*args`` or ``**kwargs``.

Reverse mode refused such a callee (its signature cannot be differentiated),
but the forward sweep bound the call's parameters by name only: ``args``
held a tuple of atoms, which it did not count as carrying a tangent, so the
call got no tangent at all: jvp of ``np.sum(helper(x))`` with
``helper(*args)`` returned 0 where 1.797 is right. It is refused now, at the
call, in jvp as in grad.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError


def helper(*args):
    return np.sin(args[0]) * 2.0


def through_star_args(x):
    return np.sum(helper(x))


def helper_keywords(a=None, **kwargs):
    return np.sin(kwargs["b"]) * 2.0


def through_star_kwargs(x):
    return np.sum(helper_keywords(b=x))


def inactive_star_args(x):
    return np.sum(np.sin(x) * helper(np.ones(2)))


@pytest.mark.parametrize("fn", [through_star_args, through_star_kwargs])
def test_a_tangent_through_star_parameters_is_refused(fn):
    x, t = np.array([0.7, 1.3]), np.array([1.0, 0.5])
    with pytest.raises(UnsupportedSyntaxError, match=r"carries a tangent through its parameter (args|kwargs)"):
        astgrad.jvp(fn)(x, t)
    with pytest.raises(astgrad.TransformError):
        astgrad.grad(fn)(x)


def test_star_parameters_given_only_constants_still_run():
    x, t = np.array([0.7, 1.3]), np.array([1.0, 0.5])
    value, tangent = astgrad.jvp(inactive_star_args)(x, t)
    assert value == pytest.approx(inactive_star_args(x))
    assert tangent == pytest.approx(np.sum(np.cos(x) * t * 2.0 * np.sin(1.0)))
