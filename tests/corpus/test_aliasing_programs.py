"""Differential test of writes through shared memory: plain numpy, the generated gradient, finite differences.

Programs come from ``aliasing_programs.py`` (views, aliases, lists, augmented assignment, ``out=``,
in-place methods, in branches and loops).  Each one must either be refused when transformed, with a
``TransformError``, or transform and then give numpy's own value, leave the caller's arrays as numpy
leaves them, and give the gradient central finite differences give.  A transformed program whose
numbers differ is the bug this test exists for.  The default run is derandomized (the same programs
every time, a few seconds); ``--runslow`` adds a fresh random run of 1500.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import astgrad
from _numeric import gradient

from .aliasing_programs import aliasing_programs
from .programs import fresh_run, load

X = np.array([0.37, -0.65, 1.13, 0.21])
Y = np.array([0.93, 0.43, -0.42, -1.07])
_counter = itertools.count()


def _call(f, x, y):
    with np.errstate(all="ignore"):
        return float(f(x.copy(), y.copy()))


def _numeric(f, eps):
    """Central differences wrt x and y, every evaluation on fresh copies (numpy may write into them)."""
    return [gradient(lambda x: _call(f, x, Y), X, eps), gradient(lambda y: _call(f, X, y), Y, eps)]


def check_program(source, directory):
    """Refused at transform time, or numpy's value, numpy's effect on the arguments and the true gradient."""
    f = load(source, directory, f"astgrad_aliasing_program_{next(_counter)}").f
    x, y = X.copy(), Y.copy()
    try:
        with np.errstate(all="ignore"):
            expected = f(x, y)
    except (ValueError, TypeError, IndexError):  # numpy itself refuses (a read-only view, say)
        assume(False)
    assume(bool(np.isfinite(expected)))
    try:
        gradient = astgrad.value_and_grad(f, wrt=(0, 1))
    except astgrad.TransformError:
        return "refused"
    xs, ys = X.copy(), Y.copy()
    with np.errstate(all="ignore"):
        value, (gx, gy) = gradient(xs, ys)
    context = f"\n\nprogram:\n{source}"
    np.testing.assert_array_equal(x, xs, err_msg="numpy changed the caller's x; the transform did not" + context)
    np.testing.assert_array_equal(y, ys, err_msg="numpy changed the caller's y; the transform did not" + context)
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, err_msg="value" + context)
    coarse, fine = _numeric(f, 1e-5), _numeric(f, 1e-6)
    # a kink (sort's order, a branch) within a step has no derivative to compare with
    assume(all(np.allclose(a, b, rtol=1e-3, atol=1e-5) for a, b in zip(coarse, fine)))
    np.testing.assert_allclose(gx, fine[0], rtol=1e-4, atol=1e-5, err_msg="d/dx" + context)
    np.testing.assert_allclose(gy, fine[1], rtol=1e-4, atol=1e-5, err_msg="d/dy" + context)
    return "transformed"


COMMON = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.filter_too_much])


@settings(max_examples=40, derandomize=True, **COMMON)
@given(source=aliasing_programs())
def test_random_aliasing_programs_are_exact_or_refused(source, tmp_path_factory):
    note(source)
    check_program(source, tmp_path_factory.mktemp("aliasing", numbered=True))


@pytest.mark.slow
@settings(max_examples=1500, **fresh_run(**COMMON))
@given(source=aliasing_programs())
def test_many_random_aliasing_programs_are_exact_or_refused(source, tmp_path_factory):
    note(source)
    check_program(source, tmp_path_factory.mktemp("aliasing", numbered=True))
