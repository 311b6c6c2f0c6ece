"""Property-based tests: random programs checked three ways with check_grads.

Programs come from the grammar in ``programs.py`` (arithmetic, numpy calls
with keywords, if/for/while with data-dependent conditions, break, calls to
helper functions that call each other).  The default run is derandomized:
the same 25 programs every time, in a few seconds.  ``--runslow`` adds a
fresh random run of 500 programs; a failing program is printed in full, and
belongs in ``test_program_regressions.py``.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, note, settings

from astgrad import GradientMismatch, check_grads
from _numeric import directional

from .programs import fresh_run, load, programs

X = np.array([0.37, -0.65, 1.13])  # sums away from the grammar's thresholds
Y = np.array([0.93, 0.43, -0.42])
_counter = itertools.count()

# x grows to about 1e8 and cos(x) turns by radians within any finite-difference step
ANGLE_OF_1E8 = """import numpy as np


def f(x, y):
    for i in range(5):
        x = np.sqrt((np.sum(x) * x) * (np.sum(x) * x) + 1.0)
    v0 = (y * 0.7)
    v1 = (np.cos(x)[0] * (-v0))
    return np.sum(v1 * v1) + np.sum(x * y)
"""


def check_program(source, directory):
    """check_grads on the program's ``f`` wrt both arguments; a failure shows the program."""
    module = load(source, directory, f"astgrad_program_{next(_counter)}")
    with np.errstate(all="ignore"):
        value = module.f(X, Y)
    # a program that overflows at the sample point has no finite difference to compare with
    assume(bool(np.all(np.isfinite(value))))
    # nor has one whose value swings within a finite-difference step (sin of a 1e5 reached by x ** 3
    # three times): the generated and the taped gradients are still compared there, without the referee
    trusted = _differences_trusted(module)
    try:
        report = check_grads(module.f, X, Y, wrt=(0, 1), rtol=1e-4, atol=1e-5,
                             modes=("generated", "taped", "numeric") if trusted else ("generated", "taped"))
    except GradientMismatch as mismatch:
        raise AssertionError(f"{mismatch}\n\nprogram:\n{source}") from None
    refused = report.skipped.get("generated", "")
    # The aliasing check refuses a write in a loop to an array that a value made in an earlier
    # iteration may share (it does not tell iterations apart), and v += ... on an array a helper
    # returned when it runs: located refusals, never a number.  Any other skip is a failure.
    assert not refused or ("UnsupportedSyntaxError" in refused and "shares memory" in refused) \
        or "a called function returned" in refused, \
        f"{report.skipped}\n\nprogram:\n{source}"
    others = {k: v for k, v in report.skipped.items() if k != "generated"}
    assert others == {}, f"{others}\n\nprogram:\n{source}"
    engines = {"taped"} | ({"numeric"} if trusted else set()) | (set() if refused else {"generated"})
    assert set(report.gradients) == engines
    return module, report


def _differences_settle(f, steps=(1e-5, 1e-6), rtol=1e-3):
    """Whether central differences of ``f`` along one fixed direction agree for two step sizes."""
    direction = np.array([0.6, -0.3, 0.74]), np.array([-0.2, 0.5, 0.3])
    slopes = []
    with np.errstate(all="ignore"):
        for h in steps:
            slopes.append(directional(lambda t: np.sum(f(X + t * direction[0], Y + t * direction[1])), 0.0, 1.0, h))
    a, b = slopes
    return bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= rtol * max(abs(a), abs(b), 1.0))


class _WatchedNumpy:
    """numpy, except that sin, cos and tan remember the largest magnitude of what they were given."""

    def __init__(self):
        self.largest = []

    def __getattr__(self, name):
        function = getattr(np, name)
        if name not in ("sin", "cos", "tan"):
            return function

        def watched(a, *args, **kwargs):
            self.largest.append(float(np.max(np.abs(a))))
            return function(a, *args, **kwargs)
        return watched


def _angles_bounded(module, bound=1e3):
    """Whether every sin, cos and tan of ``module.f(X, Y)`` is taken of numbers below ``bound``.

    An angle of 1e9 that the inputs built (``x = sqrt((sum(x) * x) ** 2 + 1)`` five times) turns by
    many radians within a finite-difference step, at every step size: the differences then agree
    with each other and miss the oscillating term entirely, so agreement of two step sizes does not
    prove them right.  The program's helpers read the same module global ``np``.
    """
    watched = _WatchedNumpy()
    module.np = watched
    try:
        with np.errstate(all="ignore"):
            module.f(X, Y)
    finally:
        module.np = np
    return all(m <= bound for m in watched.largest)  # a NaN angle is not bounded either


def _differences_trusted(module):
    """Whether central differences of ``module.f`` at X, Y can referee: see the two functions above."""
    return _angles_bounded(module) and _differences_settle(module.f)


COMMON = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=25, derandomize=True, **COMMON)
@given(source=programs())
@example(source=ANGLE_OF_1E8)
def test_random_programs_agree_three_ways(source, tmp_path_factory):
    note(source)
    check_program(source, tmp_path_factory.mktemp("programs", numbered=True))


@pytest.mark.slow
@settings(max_examples=500, **fresh_run(**COMMON))
@given(source=programs())
def test_many_random_programs_agree_three_ways(source, tmp_path_factory):
    note(source)
    check_program(source, tmp_path_factory.mktemp("programs", numbered=True))
