"""The registry: lookup errors, what a rule reads, and per-input specialization."""

import numpy as np
import pytest

import astgrad
from astgrad import rules

CALLS = []


def expensive(x):
    CALLS.append("expensive")
    return np.log(x)


@astgrad.primitive
def scaled_power(x, p):
    return x ** p


@astgrad.defvjp(scaled_power)
def scaled_power_vjp(g, ans, x, p):
    return g * p * x ** (p - 1), g * ans * expensive(x)


def test_the_tape_computes_only_the_gradients_an_input_needs():
    CALLS.clear()
    x = astgrad.tensor([1.0, 2.0], requires_grad=True)
    scaled_power(x, 3.0).sum().backward()
    assert x.grad.tolist() == [3.0, 12.0]
    assert CALLS == []  # the exponent's gradient (and its log) was never computed
    p = astgrad.tensor(3.0, requires_grad=True)
    scaled_power(astgrad.tensor([1.0, 2.0]), p).sum().backward()
    assert CALLS == ["expensive"]
    assert p.grad.item() == pytest.approx(8.0 * np.log(2.0))


def test_specialized_variant_keeps_defaults_and_replaces_only_unneeded_entries():
    rule = rules.lookup(np.power)
    full = rule.vjp(np.ones(2), np.array([1.0, 4.0]), np.array([1.0, 2.0]), 2.0)
    only_x = rule.specialized((True, False))(np.ones(2), np.array([1.0, 4.0]), np.array([1.0, 2.0]), 2.0)
    np.testing.assert_array_equal(only_x[0], full[0])
    assert only_x[1] is None
    assert rule.specialized((True, True)) is rule.vjp


def test_usage_tells_values_from_metadata():
    assert rules.lookup(np.sum).usage["a"] == "meta"
    assert rules.lookup(np.sin).usage["x"] == "value"
    assert rules.lookup(np.add).usage["x"] == "unused"
    assert rules.lookup(np.exp).usage["ans"] == "value"


def test_unknown_callable_names_itself_and_the_fix():
    with pytest.raises(rules.NoRuleError) as caught:
        rules.lookup(np.linalg.cond)
    message = str(caught.value)
    assert "numpy.linalg.cond" in message and "astgrad.defvjp(numpy.linalg.cond, rule)" in message
    assert "defnondiff" in message
