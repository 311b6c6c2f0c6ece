"""Differential test of what numpy gives no derivative, narrower dtypes and odd types, mixed into float code.

Programs come from ``kind_programs.py``: calls the table declares non-differentiable or integer-valued
(a piecewise constant factor, or an index), float values written into int, bool, float32 and complex
arrays by every door, and ``np.matrix``, masked arrays, ndarray subclasses, ``Fraction``, ``Decimal``,
0-d arrays, numpy scalars and Python ints as arguments, globals and closure values.  Each must be refused
at its own file's line, or give numpy's own value and the gradient central differences of numpy's own
run give, in ``grad`` and in ``jvp`` (``test_door_programs.check_program``).  The default run is
derandomized (the same programs every time); ``--runslow`` draws 300 fresh ones of each kind.
"""

import pytest
from hypothesis import given, note, settings

from .kind_programs import dtype_programs, nondiff_programs, type_programs
from .programs import fresh_run
from .test_door_programs import COMMON, check_program

KINDS = {"nondiff": nondiff_programs, "dtype": dtype_programs, "type": type_programs}


def _check(source, tmp_path_factory):
    note(source)
    # float32 rounds each value to 6e-8 relative: a step of 1e-5 would difference rounding noise, and
    # grad and jvp round at different places
    steps, rtol, jvp_rtol = ((1e-3, 1e-4), 1e-3, 1e-6) if "float32" in source else ((1e-5, 1e-6), 1e-4, 1e-8)
    check_program(source, tmp_path_factory.mktemp("kinds", numbered=True), steps, rtol, jvp_rtol)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_random_programs_of_each_kind_are_exact_or_refused(kind, tmp_path_factory):
    @settings(max_examples=25, derandomize=True, **COMMON)
    @given(source=KINDS[kind]())
    def run(source):
        _check(source, tmp_path_factory)

    run()


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_many_random_programs_of_each_kind_are_exact_or_refused(kind, tmp_path_factory):
    @settings(max_examples=300, **fresh_run(**COMMON))
    @given(source=KINDS[kind]())
    def run(source):
        _check(source, tmp_path_factory)

    run()
