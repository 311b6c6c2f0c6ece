"""Differential test of numpy's write doors: plain numpy, the generated gradient, finite differences.

Programs come from ``door_programs.py`` (every door of ``astgrad.transform.front.numpy_writes`` into
arguments, locals, views, globals, closures, defaults, what a call returns and a property, in the
function, in branches and loops, and in helpers).  Each must be refused at its own file's line (a
``TransformError`` when transformed, or astgrad's ``TypeError`` when it runs, before anything was
written), or give numpy's own value, leave the arguments, globals, closures and defaults as numpy
leaves them, and give the gradient central finite differences give (and ``jvp`` its product with a
direction, or a located refusal).  The default run is derandomized
(the same programs every time, a few seconds); ``--runslow`` adds a fresh random run of 1000.
"""

import itertools
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, note, settings

import astgrad
from _numeric import gradient

from .door_programs import door_programs
from .programs import fresh_run, load

X = np.array([0.37, -0.65, 1.13, 0.21])
Y = np.array([0.93, 0.43, -0.42, -1.07])
_counter = itertools.count()


def _run(module, x, y):
    module.reset()
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # np.maximum(a, b, out) by position
        return float(module.f(x.copy(), y.copy()))


def _located(error, filename) -> bool:
    return filename in str(error) + "\n".join(getattr(error, "__notes__", []))


def check_program(source, directory, steps=(1e-5, 1e-6), rtol=1e-4, jvp_rtol=1e-8):
    """Refused at the program's line, or numpy's value, numpy's effects and the true gradient.

    ``steps`` are the coarse and fine steps of the central differences (a kink within one of them, where
    they disagree, is skipped), ``rtol`` the gradient's tolerance and ``jvp_rtol`` that of ``jvp`` against
    ``<grad, direction>`` (both wider where a program rounds to float32).
    """
    name = f"astgrad_door_program_{next(_counter)}"
    module = load(source, directory, name)
    x, y = X.copy(), Y.copy()
    module.reset()
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            expected = float(module.f(x, y))
    except (ValueError, TypeError, IndexError, NameError):  # numpy refuses (a shape), exec misses a closure
        assume(False)
    assume(bool(np.isfinite(expected)))
    after = module.state()
    module.reset()
    context = f"\n\nprogram:\n{source}"
    xs, ys = X.copy(), Y.copy()
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            value, (gx, gy) = astgrad.value_and_grad(module.f, wrt=(0, 1))(xs, ys)
    except (astgrad.TransformError, TypeError) as error:
        if isinstance(error, TypeError) and not str(error).startswith("astgrad:"):
            raise
        assert _located(error, f"{name}.py"), f"refused, but not at the program's line: {error}{context}"
        unchanged = module.state()
        module.reset()
        for now, before in zip(unchanged, module.state()):
            np.testing.assert_array_equal(now, before, err_msg="refused after writing" + context)
        return "refused"
    np.testing.assert_array_equal(x, xs, err_msg="numpy changed the caller's x; the transform did not" + context)
    np.testing.assert_array_equal(y, ys, err_msg="numpy changed the caller's y; the transform did not" + context)
    for ours, numpys in zip(module.state(), after):
        np.testing.assert_allclose(ours, numpys, rtol=1e-12, err_msg="globals, closure or default" + context)
    np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12, err_msg="value" + context)
    coarse, fine = ([gradient(lambda v: _run(module, v, Y), X, step), gradient(lambda v: _run(module, X, v), Y, step)]
                    for step in steps)
    # a kink (sort's order, a clip, a branch) within a step has no derivative to compare with
    assume(all(np.allclose(a, b, rtol=10 * rtol, atol=1e-5) for a, b in zip(coarse, fine)))
    np.testing.assert_allclose(gx, fine[0], rtol=rtol, atol=1e-5, err_msg="d/dx" + context)
    np.testing.assert_allclose(gy, fine[1], rtol=rtol, atol=1e-5, err_msg="d/dy" + context)
    _check_forward(module, name, gx, gy, context, jvp_rtol)
    return "transformed"


def _check_forward(module, name, gx, gy, context, rtol):
    """Forward mode reads the same doors: ``jvp`` gives ``<grad f, (u, w)>`` or is refused at the program's line."""
    u, w = np.array([0.3, -0.1, 0.5, 0.2]), np.array([-0.4, 0.6, 0.1, 0.3])
    module.reset()
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            _, tangent = astgrad.jvp(module.f, wrt=(0, 1))(X.copy(), Y.copy(), (u, w))
    except (astgrad.TransformError, TypeError) as error:
        if isinstance(error, TypeError) and not str(error).startswith("astgrad:"):
            raise
        assert _located(error, f"{name}.py"), f"jvp refused, but not at the program's line: {error}{context}"
        return
    np.testing.assert_allclose(tangent, gx @ u + gy @ w, rtol=rtol, atol=1e-10, err_msg="jvp" + context)


COMMON = dict(deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.filter_too_much])


@settings(max_examples=60, derandomize=True, **COMMON)
@given(source=door_programs())
def test_random_writes_through_numpys_doors_are_exact_or_refused(source, tmp_path_factory):
    note(source)
    check_program(source, tmp_path_factory.mktemp("doors", numbered=True))


@pytest.mark.slow
@settings(max_examples=1000, **fresh_run(**COMMON))
@given(source=door_programs())
def test_many_random_writes_through_numpys_doors_are_exact_or_refused(source, tmp_path_factory):
    note(source)
    check_program(source, tmp_path_factory.mktemp("doors", numbered=True))
