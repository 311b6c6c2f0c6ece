"""A rule's return value is read the same way by both engines, whatever expression produces it.

A tuple is one gradient per positional argument; anything else is the first
argument's gradient.  The generated engine splits a literal tuple while
transforming; a value that may be a tuple only when it runs (a helper's
result, a local name) is split when it runs.  The adversarial case: a rule
returning ``_both(g, x, y)`` used to give x the whole tuple (summed by
unbroadcasting) and y a zero, without an error.
"""

import numpy as np
import pytest

import astgrad

from _numeric import numeric_grad

X = np.array([0.3, 0.7, -1.1])
Y = np.array([1.5, -2.0, 0.4])


def pair(x, y):  # made a primitive inside each test, with the rule under test
    return x * y + np.sin(x)


def single(x):
    return x * x * x


def loss_pair(x, y):
    return np.sum(pair(x, y) * Y)


def loss_single(x):
    return np.sum(single(x) * Y)


def _both(g, x, y):
    return g * (y + np.cos(x)), g * x


def _cube_only(g, x):
    return (3 * g * x * x,)


def _first_only(g, x, y):
    return (g * (y + np.cos(x)),)


def _via_local(g, ans, x, y):
    grads = _both(g, x, y)
    return grads


def _via_helper(g, ans, x, y):
    return _both(g, x, y)


def _via_starred(g, ans, x, y):
    return (*_both(g, x, y),)


def _via_concatenation(g, ans, x, y):
    return _first_only(g, x, y) + (g * x,)


def _via_branch(g, ans, x, y):
    if np.ndim(x) == 0:
        return g * y, g * x
    return _both(g, x, y)


def _register(monkeypatch, name, fn, rule):
    primitive = astgrad.primitive(fn)
    astgrad.defvjp(primitive, rule)
    monkeypatch.setitem(globals(), name, primitive)


def _tape(loss, *values):
    tensors = [astgrad.tensor(v, requires_grad=True) for v in values]
    loss(*tensors).backward()
    return [t.grad.detach().numpy() for t in tensors]


@pytest.mark.parametrize("rule", [_via_helper, _via_local, _via_starred, _via_concatenation, _via_branch])
def test_a_tuple_built_at_run_time_gives_each_argument_its_gradient(isolated_rules, monkeypatch, rule):
    _register(monkeypatch, "pair", pair, rule)
    dx, dy = astgrad.grad(loss_pair, wrt=(0, 1))(X, Y)
    np.testing.assert_allclose(dx, Y * (Y + np.cos(X)), rtol=1e-12)  # closed form
    np.testing.assert_allclose(dy, Y * X, rtol=1e-12)
    np.testing.assert_allclose(dx, numeric_grad(loss_pair, (X, Y), 0), rtol=1e-6)
    np.testing.assert_allclose(dy, numeric_grad(loss_pair, (X, Y), 1), rtol=1e-6, atol=1e-9)
    tape_dx, tape_dy = _tape(loss_pair, X, Y)
    np.testing.assert_allclose(dx, tape_dx, rtol=1e-12)
    np.testing.assert_allclose(dy, tape_dy, rtol=1e-12)


def test_one_argument_of_two_differentiated(isolated_rules, monkeypatch):
    _register(monkeypatch, "pair", pair, _via_helper)
    np.testing.assert_allclose(astgrad.grad(loss_pair, wrt=1)(X, Y), Y * X, rtol=1e-12)
    np.testing.assert_allclose(astgrad.grad(loss_pair, wrt=0)(X, Y), Y * (Y + np.cos(X)), rtol=1e-12)


def _cube_via_helper(g, ans, x):
    return _cube_only(g, x)


def _cube_literal_one_tuple(g, ans, x):
    return (3 * g * x * x,)


@pytest.mark.parametrize("rule", [_cube_via_helper, _cube_literal_one_tuple])
def test_a_one_tuple_is_the_single_argument_s_gradient(isolated_rules, monkeypatch, rule):
    _register(monkeypatch, "single", single, rule)
    got = astgrad.grad(loss_single)(X)
    np.testing.assert_allclose(got, 3 * X * X * Y, rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(loss_single, (X,), 0), rtol=1e-6)
    np.testing.assert_allclose(got, _tape(loss_single, X)[0], rtol=1e-12)


def _short_via_helper(g, ans, x, y):
    return _first_only(g, x, y)


def test_a_tuple_without_a_needed_gradient_is_an_error_not_a_zero(isolated_rules, monkeypatch):
    _register(monkeypatch, "pair", pair, _short_via_helper)
    with pytest.raises(RuntimeError, match=r"returned no gradient for argument 1, which requires grad") as info:
        astgrad.grad(loss_pair, wrt=(0, 1))(X, Y)
    assert any("return np.sum(pair(x, y) * Y)" in note for note in info.value.__notes__)  # the user's line
    with pytest.raises(RuntimeError, match=r"returned no gradient for argument 1, which requires grad"):
        _tape(loss_pair, X, Y)
    # only x differentiated: the tuple has its gradient
    np.testing.assert_allclose(astgrad.grad(loss_pair, wrt=0)(X, Y), Y * (Y + np.cos(X)), rtol=1e-12)


def test_a_single_value_returned_through_a_helper_is_the_first_argument_s(isolated_rules, monkeypatch):
    def first(g, ans, x, y):
        return _first_only(g, x, y)[0]
    _register(monkeypatch, "pair", pair, first)
    np.testing.assert_allclose(astgrad.grad(loss_pair)(X, Y), Y * (Y + np.cos(X)), rtol=1e-12)


def _literal_none(g, ans, x, y):
    return g * (y + np.cos(x)), None


def _literal_short(g, ans, x, y):
    return (g * (y + np.cos(x)),)


def _literal_none_in_a_branch(g, ans, x, y):
    if np.ndim(x) == 5:
        return g * (y + np.cos(x)), g * x
    return g * (y + np.cos(x)), None


@pytest.mark.parametrize("rule", [_literal_none, _literal_short, _literal_none_in_a_branch])
def test_a_literal_tuple_without_a_needed_gradient_is_an_error_not_a_zero(isolated_rules, monkeypatch, rule):
    _register(monkeypatch, "pair", pair, rule)
    with pytest.raises(RuntimeError, match=r"returned no gradient for argument 1, which requires grad") as info:
        astgrad.grad(loss_pair, wrt=(0, 1))(X, Y)
    assert any("return np.sum(pair(x, y) * Y)" in note for note in info.value.__notes__)
    with pytest.raises(RuntimeError, match=r"returned no gradient for argument 1, which requires grad"):
        _tape(loss_pair, X, Y)
    np.testing.assert_allclose(astgrad.grad(loss_pair, wrt=0)(X, Y), Y * (Y + np.cos(X)), rtol=1e-12)
