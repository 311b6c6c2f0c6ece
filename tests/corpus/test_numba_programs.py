"""Random programs under backend="numba": the numpy backend's gradient, or a refusal at the user's line.

The grammar of ``programs.py`` (loops with ``break``, ``while``, branches,
helpers calling helpers, ``np.clip``, ``np.roll``, fancy indexing...) drawn
with loop locals.  A compiled gradient must equal the numpy backend's (the
same code compiled: 1e-9 relative); where Numba cannot compile a program the
backend refuses with a TransformError naming the user's file, never a number
and never an error of the lowering's own making (a generated name left
unbound, a Python error raised while writing the Numba text).  The default
run is derandomized and small (each program compiles for about a second);
``--runslow`` draws 200 new ones.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import astgrad

from .programs import fresh_run, load, programs

pytest.importorskip("numba")

X = np.array([0.37, -0.65, 1.13])
Y = np.array([0.93, 0.43, -0.42])
_counter = itertools.count()
COMMON = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
#: words of a refusal that is the lowering's fault, not a limit of Numba's
_OWN_FAULTS = ("is not defined", "NameError", "UnboundLocalError", "KeyError", "AttributeError: 'Name'")


def check_compiled(source, directory):
    module = load(source, directory, f"astgrad_numba_program_{next(_counter)}")
    try:
        with np.errstate(all="ignore"):
            want = astgrad.grad(module.f, wrt=(0, 1))(X.copy(), Y.copy())
    except astgrad.TransformError:
        assume(False)  # refused by the transform itself: test_programs.py's business
    assume(all(np.all(np.isfinite(w)) for w in want))
    try:
        with np.errstate(all="ignore"):
            got = astgrad.grad(module.f, wrt=(0, 1), backend="numba")(X.copy(), Y.copy())
    except astgrad.TransformError as refused:
        message = str(refused)
        assert message.startswith(str(directory)) and "backend='numba'" in message, f"{message}\n\n{source}"
        assert not any(fault in message for fault in _OWN_FAULTS), f"{message}\n\n{source}"
        return "refused"
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=source)
    return "compiled"


@settings(max_examples=12, derandomize=True, **COMMON)
@given(source=programs(loop_locals=True))
def test_random_programs_compile_to_the_numpy_backends_gradient_or_are_refused(source, tmp_path_factory):
    note(source)
    check_compiled(source, tmp_path_factory.mktemp("numba_programs", numbered=True))


@pytest.mark.slow
@settings(max_examples=200, **fresh_run(**COMMON))
@given(source=programs(loop_locals=True))
def test_many_random_programs_compile_to_the_numpy_backends_gradient_or_are_refused(source, tmp_path_factory):
    note(source)
    check_compiled(source, tmp_path_factory.mktemp("numba_programs", numbered=True))
