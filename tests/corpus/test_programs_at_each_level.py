"""Random programs with loop-local names, differentiated at every optimisation level.

The programs of ``programs.py`` with ``loop_locals``: a ``for`` body may bind a name of its own
(pushed each trip, so rematerialisation may recompute it instead) and read the loop index after an
inner loop rebinds it.  Each is checked three ways at the default level (``check_program``:
generated, taped, finite differences where they can referee), then the gradients of levels 0 and
1 must equal the tape's to rounding.  Two wrong gradients with no error lived exactly there (a
recomputed value read before its operand's pop, a loop index rebound by the body).  The default run
is derandomized (the same programs every time); ``--runslow`` adds a fresh random run.
"""

import numpy as np
import pytest
from hypothesis import given, note, settings

import astgrad

from .programs import fresh_run, programs
from .test_programs import COMMON, X, Y, check_program


def check_every_level(source, directory):
    module, report = check_program(source, directory)
    if "generated" not in report.gradients:  # a located refusal (see check_program): refused at every level
        return
    expected = report.gradients["taped"]
    for level in (0, 1):
        with np.errstate(all="ignore"):
            got = astgrad.grad(module.f, wrt=(0, 1), optimize=level)(X, Y)
        for g, e, name in zip(got, expected, "xy"):
            np.testing.assert_allclose(g, e, rtol=1e-7, atol=1e-9,
                                       err_msg=f"d/d{name} at optimize={level} vs the tape\n\nprogram:\n{source}")


@settings(max_examples=40, derandomize=True, **COMMON)
@given(source=programs(loop_locals=True))
def test_programs_with_loop_locals_agree_at_every_level(source, tmp_path_factory):
    note(source)
    check_every_level(source, tmp_path_factory.mktemp("levels", numbered=True))


@pytest.mark.slow
@settings(max_examples=500, **fresh_run(**COMMON))
@given(source=programs(loop_locals=True))
def test_many_programs_with_loop_locals_agree_at_every_level(source, tmp_path_factory):
    note(source)
    check_every_level(source, tmp_path_factory.mktemp("levels", numbered=True))
