"""A gradient adds in place (``add_at``) after a view of it was read, once that view is dead (passes/accumulate.py).

``u[1:-1] = u[1:-1] + v`` in a loop: the reverse step reads the write's
gradient as a view of ``du`` (``dt1 = written(du, np.s_[1:-1])``) and then
adds the slices' gradients into ``du``.  Where ``dt1`` is read no more, the
adds go into ``du`` itself; where it is read again (or passed to the add
itself, which overlaps it), the first add copies (``added_at``).  A wrong
choice gives a wrong number without an error, so each program is checked
against central differences at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
U = np.random.default_rng(11).random(7) + 0.5


def heat(u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def view_read_after_an_add(u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + (u[:-2] + u[2:] * 0.3)
    return np.sum(u ** 2)


def view_added_into_an_overlapping_slice(u0):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + (u[2:] * 0.3 + u[:-2])
    return np.sum(u ** 2)


def two_writes_a_step(u0):
    u = u0.copy()
    for _ in range(3):
        u[1:] = u[1:] + u[:-1]
        u[:-1] = u[:-1] + 0.5 * u[1:]
    return np.sum(u ** 2)


def in_a_branch(u0):
    u = u0.copy()
    for k in range(4):
        if k % 2:
            u[1:-1] = u[1:-1] + (u[:-2] + u[2:] * 0.3)
        else:
            u[1:-1] = u[1:-1] + 0.1 * u[2:] * u[:-2]
    return np.sum(u ** 2)


def view_kept_across_trips(u0):
    u = u0.copy()
    kept = u[:2] * 1.0
    for _ in range(3):
        u[1:-1] = u[1:-1] + 0.4 * u[2:] * kept[0]
        kept = u[:2] * u[1:3]
    return np.sum(u ** 2) + np.sum(kept)


PROGRAMS = [heat, view_read_after_an_add, view_added_into_an_overlapping_slice, two_writes_a_step, in_a_branch,
            view_kept_across_trips]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, level):
    given = U.copy()
    got = astgrad.grad(f, optimize=level)(given)
    np.testing.assert_allclose(got, gradient(f, U.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(given, U)


def _reverse_loop(f):
    g = astgrad.grad(f)
    g(U.copy())
    return g.source.split("reversed(range(")[1]


def test_the_heat_step_adds_into_its_gradient_after_reading_the_written_slice():
    step = _reverse_loop(heat)
    # the slice is read through ``written`` or, where its index is proven to name each place once, directly
    assert ("written(du0, np.s_[1:-1])" in step or "du0[np.s_[1:-1]]" in step) and "added_at" not in step


@pytest.mark.parametrize("f", [view_read_after_an_add, view_added_into_an_overlapping_slice, two_writes_a_step],
                         ids=lambda f: f.__name__)
def test_a_live_view_makes_the_first_add_copy(f):
    assert "added_at(du0" in _reverse_loop(f)
