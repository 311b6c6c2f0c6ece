"""Forward mode by source transformation: every jvp value checked against independent references.

Each corpus function and random program: the tangent ``jvp(f)(*args, u)``
equals the directional derivative by central differences (J u), and
``<grad f, u>`` from the reverse engine (for a scalar ``f``, ``<w, J u>``
with ``w = 1`` equals ``<J^T w, u>``).  The value equals ``f(*args)``.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, example, given, note, settings

import astgrad
from _numeric import directional

from .functions import CASES
from .programs import fresh_run, load, programs
from .test_programs import ANGLE_OF_1E8, X, Y, _angles_bounded, _differences_settle, _differences_trusted

RNG = np.random.default_rng(77)


def _direction(value):
    if np.iscomplexobj(value):
        return RNG.standard_normal(np.shape(value)) + 1j * RNG.standard_normal(np.shape(value))
    if isinstance(value, (float, int)) and not isinstance(value, bool):
        return float(RNG.standard_normal())
    return RNG.standard_normal(np.shape(value))


def _positions(f, wrt):
    import inspect
    names = list(inspect.signature(f).parameters)
    items = wrt if isinstance(wrt, tuple) else (wrt,)
    return [names.index(w) if isinstance(w, str) else w for w in items]


def _moved(args, positions, directions, t):
    moved = list(args)
    for p, u in zip(positions, directions):
        moved[p] = args[p] + t * u
    return moved


def check_jvp(f, args, wrt, rtol=1e-5, atol=1e-6):
    positions = _positions(f, wrt)
    directions = [_direction(args[p]) for p in positions]
    tangents = tuple(directions) if isinstance(wrt, tuple) else directions[0]
    value, tangent = astgrad.jvp(f, wrt)(*args, tangents)
    np.testing.assert_allclose(value, f(*args), rtol=1e-12, atol=1e-12)
    numeric = directional(lambda t: np.real(np.sum(f(*_moved(args, positions, directions, t)))), 0.0, 1.0)
    np.testing.assert_allclose(np.real(np.sum(tangent)), numeric, rtol=rtol, atol=atol)
    return tangent, directions


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_corpus_tangent_is_the_directional_derivative(case):
    args = [a.copy() if isinstance(a, np.ndarray) else a for a in case.args]
    tangent, directions = check_jvp(case.f, args, case.wrt)
    if np.ndim(tangent) == 0 and not np.iscomplexobj(tangent):  # <w, J u> == <J^T w, u> with w = 1
        grads = astgrad.grad(case.f, case.wrt)(*args)
        grads = grads if isinstance(case.wrt, tuple) else (grads,)
        reverse = sum(np.real(np.sum(np.conj(g) * u)) for g, u in zip(grads, directions))
        np.testing.assert_allclose(tangent, reverse, rtol=1e-9, atol=1e-10)


_counter = itertools.count()


_SETTINGS = dict(deadline=None, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@settings(max_examples=25, derandomize=True, **_SETTINGS)
@given(source=programs())
@example(source=ANGLE_OF_1E8)
def test_random_programs_tangents(source, tmp_path_factory):
    check_program(source, tmp_path_factory)


def test_differences_that_settle_can_still_miss_an_oscillation(tmp_path):
    """cos of 1e8: differences agree at two steps and are 15% off; jvp matches the complex step."""
    module = load(ANGLE_OF_1E8, tmp_path, "astgrad_jvp_angle_of_1e8")
    u, v = np.array([0.6, -0.3, 0.74]), np.array([-0.2, 0.5, 0.3])
    _, tangent = astgrad.jvp(module.f, (0, 1))(X, Y, (u, v))
    h = 1e-30  # every operation of f is analytic: Im f(x + i h u) / h is its derivative to rounding
    complex_step = np.imag(module.f(X + 1j * h * u, Y + 1j * h * v)) / h
    np.testing.assert_allclose(tangent, complex_step, rtol=1e-12)
    numeric = directional(lambda t: np.sum(module.f(X + t * u, Y + t * v)), 0.0, 1.0)
    assert abs(numeric - tangent) > 0.1 * abs(tangent)
    assert _differences_settle(module.f) and not _angles_bounded(module) and not _differences_trusted(module)


@pytest.mark.slow
@settings(max_examples=500, **fresh_run(**_SETTINGS))
@given(source=programs())
def test_many_random_programs_tangents(source, tmp_path_factory):
    check_program(source, tmp_path_factory)


def check_program(source, tmp_path_factory):
    """The tangent equals <grad f, (u, v)> from the reverse engine, always; and central differences
    wherever they can referee (see ``_differences_trusted``)."""
    note(source)
    module = load(source, tmp_path_factory.mktemp("jvp_programs", numbered=True), f"astgrad_jvp_{next(_counter)}")
    with np.errstate(all="ignore"):
        value = module.f(X, Y)
    assume(bool(np.all(np.isfinite(value))))
    try:
        jf = astgrad.jvp(module.f, (0, 1))
    except astgrad.TransformError as exc:
        assert "shares memory" in str(exc), f"{exc}\n\nprogram:\n{source}"
        return
    u, v = np.array([0.6, -0.3, 0.74]), np.array([-0.2, 0.5, 0.3])
    with np.errstate(all="ignore"):
        _, tangent = jf(X, Y, (u, v))
        gx, gy = astgrad.grad(module.f, (0, 1))(X, Y)
    reverse = gx @ u + gy @ v
    assert np.isclose(tangent, reverse, rtol=1e-9, atol=1e-9), f"{tangent} != {reverse}\n\nprogram:\n{source}"
    if _differences_trusted(module):
        with np.errstate(all="ignore"):
            numeric = directional(lambda t: np.sum(module.f(X + t * u, Y + t * v)), 0.0, 1.0)
        assert np.isclose(tangent, numeric, rtol=1e-4, atol=1e-5), f"{tangent} != {numeric}\n\nprogram:\n{source}"
