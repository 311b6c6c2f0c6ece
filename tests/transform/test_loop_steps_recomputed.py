"""A loop's step ``h = t[i + 1] - t[i]`` (and ``h / 2``) is recomputed in the reverse trip, not pushed every trip.

core/remat.py recomputes, at optimize=2, a value the adjoint reads from
operands it restores anyway; in the body of a ``for`` loop over ``range``
the counter is one (the reverse loop binds it trip by trip), and so is an
item ``t[i]`` of a parameter that nothing binds and that is read only by
indexing and ``len`` (no call, alias or write can reach it).  Where the
proof must fail the value stays saved and the number is right at every
level (central differences): ``t`` written or rebound in the loop, the
counter rebound, a checkpointed loop, a ``while`` loop; with int and float32
``t`` and a strided view.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def stepper(c, t, y0):
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = y + h / 2 * np.sin(c * y)
    return np.sum(y ** 2)


def written(c, t, y0):
    t = t.copy()
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = y + h / 2 * np.sin(c * y)
        t[i + 1] = t[i + 1] * 1.5  # the next step reads the item written
    return np.sum(y ** 2)


def rebound(c, t, y0):
    y = y0
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = y + h / 2 * np.sin(c * y)
        t = t * 1.5  # after the step's last reader: the reverse trip would see the last t
    return np.sum(y ** 2)


def counter_rebound(c, t, y0):
    y = y0
    for i in range(len(t) - 1):
        i = len(t) - 2 - i  # the steps backwards: the reverse loop's counter is not this i
        h = t[i + 1] - t[i]
        y = y + h / 2 * np.sin(c * y)
    return np.sum(y ** 2)


def checkpointed(c, t, y0):
    y = y0
    for i in astgrad.checkpointed(range(len(t) - 1), every=2):
        h = t[i + 1] - t[i]
        y = y + h / 2 * np.sin(c * y)
    return np.sum(y ** 2)


def in_while(c, t, y0):
    y = y0
    i = 0
    while i < len(t) - 1:
        h = t[i + 1] - t[i]
        y = y + h / 2 * np.sin(c * y)
        i = i + 1
    return np.sum(y ** 2)


def _check(fn, args, level, rtol=1e-6):
    gradient = astgrad.grad(fn, optimize=level)
    got = gradient(*(a.copy() if isinstance(a, np.ndarray) else a for a in args))

    def reference(c, t, y0):
        return fn(c, t.astype(np.float64), y0.astype(np.float64))

    np.testing.assert_allclose(got, numeric_grad(reference, args, 0), rtol=rtol, atol=1e-8)
    return gradient.source


T = np.array([0.0, 0.1, 0.25, 0.3, 0.5, 0.8])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("t", [T, np.array([0, 1, 3, 4]), T.astype(np.float32), np.repeat(T, 2)[::2]],
                         ids=["float", "int", "float32", "view"])
def test_a_step_is_recomputed_not_pushed(level, t):
    rtol = 2e-3 if t.dtype == np.float32 else 1e-6
    source = _check(stepper, (0.7, t, np.array([0.3, 0.5])), level, rtol)
    if level == 2:
        assert source.count(" = _stack.pop()") == 1, source  # y's alone: the step and its half recomputed


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("fn", [written, rebound, counter_rebound, checkpointed, in_while])
def test_a_step_that_may_change_stays_saved(level, fn):
    source = _check(fn, (0.7, T, np.array([0.3, 0.5])), level)
    if level == 2 and fn is not checkpointed:
        assert source.count(" = _stack.pop()") >= 2, source  # the step's half (or the step) popped too
