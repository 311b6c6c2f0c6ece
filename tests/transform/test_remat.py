"""Rematerialisation: saved elementwise values recomputed in the adjoint, never a stale operand."""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad

X = np.array([0.3, -0.2, 0.5])


def chain_in_loop(x, n):
    total = 0.0
    for _ in range(n):
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
        total = total + x
    return np.sum(total)


def operand_reassigned_before_read(x, n):
    y = x
    for _ in range(n):
        a = 0.5 * y
        y = np.sin(y)
        b = a * y          # a's operand y changed since a was computed
        y = b + y
    return np.sum(y)


def chain_through_add(x, n):
    y = x
    for _ in range(n):
        a = y * 2.0
        t = a + 1.0       # add's adjoint does not read a
        y = np.cos(y)
        y = t * y         # reads t after y changed
    return np.sum(y)


def loop_carried_operand(x, n):
    a = x
    y = x
    for _ in range(n):
        t = a * y
        a = y * 0.5       # a recomputed later in the body
        y = np.sin(t) * a
    return np.sum(y)


def read_in_branch(x, n):
    y = x
    for i in range(n):
        a = y * 0.3
        if i % 2:
            y = a * y
        else:
            y = np.sin(a)
    return np.sum(y)


def parameter_reassigned(x, w, n):
    for _ in range(n):
        a = w * x
        w = w + 0.1
        x = a * x
    return np.sum(x)


def nested_loops(x, n):
    y = x
    for _ in range(n):
        a = y * 0.7
        for _ in range(2):
            y = np.tanh(y) * a
        y = y * a
    return np.sum(y)


@pytest.mark.parametrize("f", [chain_in_loop, operand_reassigned_before_read, chain_through_add,
                               loop_carried_operand, read_in_branch, nested_loops])
def test_recomputed_values_match_finite_differences(f):
    assert_grad(astgrad.grad(f), f, X, 4)


def test_parameter_reassigned():
    assert_grad(astgrad.grad(parameter_reassigned, wrt=(0, 1)), parameter_reassigned, X, X * 0.5, 3,
                wrt=(0, 1))


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_scalar_loop_saves_only_the_overwritten_value():
    source = astgrad.grad(chain_in_loop).source
    for name in ("t5", "t7", "t8"):  # 0.1 * x, 0.01 * x * x, 0.01 * x
        assert f"_stack.append({name})" not in source
    # the statement's adjoint is one expression of the restored x (fusion), nothing to recompute
    reverse = source.split("for _ in reversed")[1]
    assert "dx = dx * (0.9 * np.cos(x) + 0.2 * x - 0.03 * x * x)" in reverse
    assert "t5 = " not in reverse
