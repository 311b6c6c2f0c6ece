"""A value the adjoint recomputes reads its operands' old values, even when its reader's statement rebinds one.

At optimize=2 ``t = x * 0.7`` in a loop is recomputed by the adjoint instead of saved.  Its reader
``x = np.sin(t) * y`` is one statement of two operations (``np.sin(t)``, then ``... * y``), whose
adjoint fusion writes as one expression followed by the pop that restores ``x``.  The recomputation
went in front of that expression, so it read the ``x`` of the end of the iteration, not the one
``t`` was made from: a wrong gradient with no error (0.05411 where 0.05244 is right).  Levels 0
and 1 were right.
"""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad


def scaled_then_rebound_in_a_loop(x, y):
    for i in range(3):
        t = x * 0.7
        x = np.sin(t) * y
    return np.sum(x * x)


def product_of_both_then_rebound_in_a_loop(x, y):
    for i in range(3):
        t = x * y
        x = np.sin(t) + y
    return np.sum(x * x)


def scaled_by_the_loop_index_then_rebound(x, y):
    for i in range(3):
        t = x * i
        x = np.sin(t) + y
    return np.sum(x * x)


def a_local_rebound_by_the_reading_statement(x, y):
    a = np.cos(x)
    for i in range(2):
        t = a * y
        a = np.sin(t) * 0.5 - y
    return np.sum(a * a)


CASES = [scaled_then_rebound_in_a_loop, product_of_both_then_rebound_in_a_loop,
         scaled_by_the_loop_index_then_rebound, a_local_rebound_by_the_reading_statement]
X = np.array([0.37, -0.65, 1.13])
Y = np.array([0.93, 0.43, -0.42])


@pytest.mark.parametrize("f", CASES)
@pytest.mark.parametrize("level", [0, 1, 2])
def test_gradient_equals_differences(f, level):
    assert_grad(astgrad.grad(f, wrt=(0, 1), optimize=level), f, X, Y, wrt=(0, 1), rtol=1e-6, atol=1e-8)


def test_the_recomputation_follows_the_pop_of_its_operand():
    """In the adjoint loop, ``t = x * 0.7`` runs after ``x = _stack.pop()`` has restored x."""
    source = astgrad.grad(scaled_then_rebound_in_a_loop, wrt=(0, 1)).source
    lines = [line.strip() for line in source[source.index("reversed(range(3))"):].splitlines()]
    assert "x = _stack.pop()" in lines and "t = x * 0.7" in lines, source
    assert lines.index("x = _stack.pop()") < lines.index("t = x * 0.7"), source
