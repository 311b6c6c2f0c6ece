"""Writes through shared memory in forward mode: refused where grad refuses them, else exact.

The programs of ``aliasing_programs.py`` (views, aliases, lists, augmented
assignment, ``out=``, in-place methods, in branches and loops): ``jvp``
shares the front end's aliasing check with ``grad``, so it refuses exactly
what ``grad`` refuses; a program it transforms gives numpy's value, leaves
the caller's arrays as numpy leaves them, and a tangent equal to the
directional central difference.
"""

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, note, settings

import astgrad
from _numeric import directional

from .aliasing_programs import aliasing_programs
from .programs import fresh_run, load
from .test_aliasing_programs import COMMON, X, Y

U = np.array([0.6, -0.3, 0.74, 0.1])
V = np.array([-0.2, 0.5, 0.3, -0.8])
_counter = itertools.count()


def _along(f, t):
    with np.errstate(all="ignore"):
        return float(f(X + t * U, Y + t * V))


@settings(max_examples=40, derandomize=True, **COMMON)
@given(source=aliasing_programs())
def test_aliasing_programs_in_forward_mode_are_refused_as_in_reverse_mode_or_exact(source, tmp_path_factory):
    check_program(source, tmp_path_factory)


@pytest.mark.slow
@settings(max_examples=1500, **fresh_run(**COMMON))
@given(source=aliasing_programs())
def test_many_aliasing_programs_in_forward_mode(source, tmp_path_factory):
    check_program(source, tmp_path_factory)


def check_program(source, tmp_path_factory):
    note(source)
    f = load(source, tmp_path_factory.mktemp("jvp_aliasing", numbered=True), f"astgrad_jvp_alias_{next(_counter)}").f
    x, y = X.copy(), Y.copy()
    try:
        with np.errstate(all="ignore"):
            expected = f(x, y)
    except (ValueError, TypeError, IndexError):
        assume(False)
    assume(bool(np.isfinite(expected)))
    try:
        astgrad.grad(f, wrt=(0, 1))
        reverse_refuses = False
    except astgrad.TransformError:
        reverse_refuses = True
    try:
        f_jvp = astgrad.jvp(f, wrt=(0, 1))
    except astgrad.TransformError:
        assert reverse_refuses, f"jvp refuses what grad transforms\n\nprogram:\n{source}"
        return
    assert not reverse_refuses, f"jvp transforms what grad refuses\n\nprogram:\n{source}"
    xs, ys = X.copy(), Y.copy()
    with np.errstate(all="ignore"):
        value, tangent = f_jvp(xs, ys, (U, V))
    np.testing.assert_array_equal(x, xs, err_msg=f"caller's x\n\nprogram:\n{source}")
    np.testing.assert_array_equal(y, ys, err_msg=f"caller's y\n\nprogram:\n{source}")
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, err_msg=f"value\n\nprogram:\n{source}")
    coarse = directional(lambda t: _along(f, t), 0.0, 1.0, 1e-5)
    fine = directional(lambda t: _along(f, t), 0.0, 1.0, 1e-6)
    assume(np.isclose(coarse, fine, rtol=1e-3, atol=1e-5))  # a kink within a step has no derivative
    np.testing.assert_allclose(tangent, fine, rtol=1e-4, atol=1e-5, err_msg=f"tangent\n\nprogram:\n{source}")
