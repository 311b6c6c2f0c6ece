"""The last passes over a generated function: copies read through, saves kept in locals.

Each case checks the generated source for what should be gone and the
gradient against central differences.
"""

import astor
import gast
import numpy as np
import pytest

import astgrad
from astgrad.transform.passes.cleanup import propagate_copies

from _numeric import assert_grad

X = np.array([0.3, -0.2, 0.5])


def doubling(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_a_while_loop_at_the_top_keeps_its_trip_count_in_a_local():
    g = astgrad.vjp(doubling)
    assert "_stack" not in g.source
    assert "for _ in range(_trips):" in g.source
    assert "dy = dy * 2" in g.source  # no dt4 = dy copy in between
    seed = np.array([0.1, 1.0, 1e-4])
    y = doubling(X)
    np.testing.assert_allclose(g(X, seed), seed * (y / X))


def branch(x):
    if np.sum(x) > 0:
        y = np.sin(x) * x
    else:
        y = x ** 3
    return np.sum(y)


@pytest.mark.optimize(2)  # reads the source level 2 writes
@pytest.mark.parametrize("x", [X, -X])
def test_a_branch_at_the_top_tests_its_condition_again(x):
    g = astgrad.grad(branch)
    assert "_stack" not in g.source
    assert_grad(g, branch, x)


def loop_with_break(x):
    s = 0.0
    for i in range(10):
        s = s + x * i
        if i >= 4:
            break
    return np.sum(s * s)


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_a_saved_loop_variable_becomes_a_local():
    g = astgrad.grad(loop_with_break)
    assert "_stack.append(i)" not in g.source
    assert_grad(g, loop_with_break, X)


def saves_in_a_loop(x, n):
    for _ in range(n):
        x = np.sin(x) * x
    return np.sum(x)


def test_pushes_inside_loops_stay_on_the_stack():
    g = astgrad.grad(saves_in_a_loop)
    assert "_stack.append(x)" in g.source and "_stack.pop()" in g.source
    assert_grad(g, saves_in_a_loop, X, 3)


def copies(x, n):
    total = 0.0
    for _ in range(n):
        x = x * 0.5 + np.cos(x)
        total = total + x
    return total


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_adjoint_copies_are_read_through():
    g = astgrad.grad(copies)
    body = g.source.split("for _ in reversed")[1]
    assert "dtotal = " not in body  # was dt = dtotal; dtotal = dt
    assert g(0.3, 4) == pytest.approx((copies(0.3 + 1e-6, 4) - copies(0.3 - 1e-6, 4)) / 2e-6, rel=1e-6)


def returned_copy(x):
    y = x + 2
    return np.sum(y * 3)


def test_the_returned_gradient_keeps_its_name():
    g = astgrad.grad(returned_copy)
    assert g.source.rstrip().endswith("return dx")
    np.testing.assert_allclose(g(X), np.full(3, 3.0))


def accumulated_result(x, n):
    total = 0.0
    for _ in range(n):
        x = np.sin(x) * 0.9
        total = total + x   # only the gradient is asked for: total itself is never needed
    return total


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_a_value_that_only_feeds_itself_is_not_computed():
    g = astgrad.grad(accumulated_result)
    primal = g.source.split("grad of line")[0].split("\n", 2)[2]  # below the def line (seed dtotal)
    assert "total" not in primal
    assert g(0.4, 5) == pytest.approx(
        (accumulated_result(0.4 + 1e-6, 5) - accumulated_result(0.4 - 1e-6, 5)) / 2e-6, rel=1e-6)
    value, grad = astgrad.value_and_grad(accumulated_result)(0.4, 5)
    assert value == pytest.approx(accumulated_result(0.4, 5))  # kept when the value is asked for


def _copied_then_rebound(source):
    """``source`` after cleanup.propagate_copies with ``da`` an adjoint temporary, as lines."""
    fn_def = gast.parse(source).body[0]
    return astor.to_source(gast.gast_to_ast(propagate_copies(fn_def, {"da"}))).strip().splitlines()


def test_a_copy_rebound_from_itself_at_once_reads_the_copied_name():
    lines = _copied_then_rebound("def f(b, c):\n    da = b\n    da = g(da, c) + da\n    return da\n")
    assert lines[1:] == ["    da = g(b, c) + b", "    return da"]


def test_a_copy_read_between_or_rebound_twice_is_kept():
    kept = "def f(b):\n    da = b\n    h(da)\n    da = g(da)\n    return da\n"
    assert "    da = b" in _copied_then_rebound(kept)
    thrice = "def f(b):\n    da = b\n    da = g(da)\n    da = g(da)\n    return da\n"
    assert "    da = b" in _copied_then_rebound(thrice)
