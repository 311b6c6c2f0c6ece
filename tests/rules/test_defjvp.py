"""``astgrad.defjvp``: forward rules join the entry of their reverse rule, and a tangent is never dropped."""

import numpy as np
import pytest

import astgrad
from astgrad import rules


@astgrad.primitive
def scale_shift(x, s, shift):
    return x * s + shift


def scale_shift_vjp(g, ans, x, s, shift):
    return g * s, g * x, g


def test_decorator_registers_each_argument_beside_the_reverse_rule(isolated_rules):
    astgrad.defvjp(scale_shift, scale_shift_vjp)

    @astgrad.defjvp(scale_shift)
    def along_x(t, ans, x, s, shift):
        return t * s

    @astgrad.defjvp(scale_shift, argnum=1)
    def along_s(t, ans, x, s, shift):
        return x * t

    entry = rules.lookup(scale_shift)
    assert entry.vjp is scale_shift_vjp and entry.jvp_for(0) is along_x and entry.jvp_for(1) is along_s
    x, s = np.array([1.0, 2.0]), np.array([3.0, -1.0])
    ans = scale_shift(x, s, 0.5)
    out = rules.tangent_of_call(entry, [np.array([1.0, 1.0]), np.array([0.5, 2.0]), None], ans, (x, s, 0.5), {})
    np.testing.assert_allclose(out, [3.0 + 0.5, -1.0 + 4.0])  # s * dx + x * ds, by hand


def test_a_tangent_without_a_forward_rule_raises_instead_of_vanishing(isolated_rules):
    astgrad.defvjp(scale_shift, scale_shift_vjp)
    astgrad.defjvp(scale_shift, lambda t, ans, x, s, shift: t * s)
    entry = rules.lookup(scale_shift)
    x = np.ones(2)
    with pytest.raises(LookupError, match=r"argument 2, which has a tangent.*defjvp"):
        rules.tangent_of_call(entry, [None, None, np.ones(2)], scale_shift(x, 2.0, x), (x, 2.0, x), {})


def test_a_new_reverse_rule_takes_the_old_forward_rules_with_it(isolated_rules):
    """Forward rules written for one reverse rule may disagree with its replacement: forward mode asks again."""
    before = rules.generation()
    astgrad.defvjp(scale_shift, scale_shift_vjp)
    astgrad.defjvp(scale_shift, lambda t, ans, x, s, shift: t * s, None, lambda t, ans, x, s, shift: t)
    jvps = rules.lookup(scale_shift).jvps
    astgrad.defvjp(scale_shift, scale_shift_vjp)  # the same rule again (a module reloaded): kept
    assert rules.lookup(scale_shift).jvps == jvps
    astgrad.defvjp(scale_shift, lambda g, ans, x, s, shift: (g * s, None, g))
    entry = rules.lookup(scale_shift)
    assert not entry.has_jvp
    with pytest.raises(LookupError, match="no forward rule for its argument 0"):
        rules.tangent_of_call(entry, [np.ones(2), None, None], np.ones(2), (np.ones(2), 1.0, 0.0), {})
    astgrad.defjvp(scale_shift, lambda t, ans, x, s, shift: s * t)
    assert rules.lookup(scale_shift).vjp is not scale_shift_vjp and rules.lookup(scale_shift).jvp_for(1) is None
    assert rules.generation() > before  # code built against the old entries is out of date


def test_a_forward_rule_needs_the_entry_of_a_reverse_rule(isolated_rules):
    @astgrad.primitive
    def lonely(x):
        return x

    with pytest.raises(TypeError, match=r"no reverse rule; register it with astgrad.defvjp"):
        astgrad.defjvp(lonely, lambda t, ans, x: t)
    with pytest.raises(TypeError, match="must be callable"):
        astgrad.defjvp(np.sin, 3.0)


def test_absent_tangents_skip_their_rule_and_the_result_is_broadcast_once():
    entry = rules.lookup(np.add)
    x, y = np.array([1.0, 2.0, 3.0]), np.zeros((2, 3))
    out = rules.tangent_of_call(entry, [np.array([1.0, 2.0, 3.0]), None], x + y, (x, y), {})
    assert out.shape == (2, 3)
    np.testing.assert_array_equal(out, [[1.0, 2.0, 3.0]] * 2)
    assert rules.tangent_of_call(entry, [None, None], x + y, (x, y), {}) is None


def test_a_variadic_primitive_tells_its_rule_the_position():
    """np.einsum's operands are ``*operands``: one rule serves every position, in both of einsum's forms."""
    entry = rules.lookup(np.einsum)
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    ta, tb = np.ones((2, 3)), np.full((3, 4), 2.0)
    out = rules.tangent_of_call(entry, [None, ta, tb], a @ b, ("ij,jk->ik", a, b), {})
    np.testing.assert_allclose(out, ta @ b + a @ tb)
    sublist = rules.tangent_of_call(entry, [ta, None, tb, None], a @ b, (a, [0, 1], b, [1, 2]), {})
    np.testing.assert_allclose(sublist, ta @ b + a @ tb)


def test_several_outputs_get_a_tangent_each_and_none_where_there_is_none():
    a = np.array([[2.0, 0.5], [0.3, 3.0]])
    entry = rules.lookup(np.linalg.slogdet)
    sign, logdet = rules.tangent_of_call(entry, [np.eye(2)], np.linalg.slogdet(a), (a,), {})
    assert sign is None
    np.testing.assert_allclose(logdet, np.trace(np.linalg.inv(a)))  # d log|det a| along I is tr(a^-1)
