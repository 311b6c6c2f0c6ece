"""A gradient is never out of date.

The transformer reads some things once and builds them into the generated
code: the function's code and defaults, the callees it transforms through,
the rule it inlines for each primitive (and the globals that rule reads), and
every name that resolves to a function, class or module.  Each test changes
one of them after the gradient was built and called, then asks the same
gradient object (its fast positional path), ``grad(f)`` again, and an
independent reference (a closed form, finite differences or the tape).
A stale gradient would return the old number without an error.
"""

import types

import numpy as np
import pytest

import astgrad
from astgrad.api import gradient
from _numeric import numeric_grad

X = np.array([0.3, -1.2, 2.0])


def _same_everywhere(g, f, expected, *args):
    args = args or (X,)
    np.testing.assert_allclose(g(*args), expected, rtol=1e-12)  # the object built before the change
    np.testing.assert_allclose(astgrad.grad(f)(*args), expected, rtol=1e-12)  # and a new request


def _tape(f, x):
    t = astgrad.tensor(x, requires_grad=True)
    f(t).backward()
    return t.grad.numpy()


# -- rules -------------------------------------------------------------------


def cube_raw(x):
    return x ** 3


def cube_vjp_wrong(g, ans, x):
    return g * 3 * x


def cube_vjp(g, ans, x):
    return g * 3 * x ** 2


def sum_of_cubes(x):
    return np.sum(cube(x))


cube = None  # the primitive, made inside each test


def test_a_rule_registered_again_reaches_a_gradient_built_before(isolated_rules, monkeypatch):
    primitive = astgrad.primitive(cube_raw)
    monkeypatch.setitem(globals(), "cube", primitive)
    astgrad.defvjp(primitive, cube_vjp_wrong)  # a mistake the user then corrects
    g = astgrad.grad(sum_of_cubes)
    np.testing.assert_allclose(g(X), 3 * X)
    astgrad.defvjp(primitive, cube_vjp)
    np.testing.assert_allclose(_tape(sum_of_cubes, X), 3 * X ** 2)
    _same_everywhere(g, sum_of_cubes, 3 * X ** 2)
    assert astgrad.grad(sum_of_cubes) is g  # transformed again in place


def clipped(x):
    return np.clip(x, -1.0, 1.0)


def straight_through(g, ans, x):
    return g


def sum_clipped(x):
    return np.sum(clipped(x) * 2.0)


def test_a_rule_given_to_a_function_transformed_through_reaches_a_gradient_built_before(isolated_rules):
    g = astgrad.grad(sum_clipped)
    np.testing.assert_allclose(g(X), np.where(np.abs(X) < 1, 2.0, 0.0))
    astgrad.defvjp(clipped, straight_through)  # from now on clipped is a primitive with this rule
    _same_everywhere(g, sum_clipped, np.full_like(X, 2.0))
    astgrad.defnondiff(clipped)
    _same_everywhere(g, sum_clipped, np.zeros_like(X))


SLOPE = 0.0


def leaky_raw(x):
    return np.where(x > 0, x, 0.0)


def leaky_vjp(g, ans, x):
    return g * np.where(x > 0, 1.0, SLOPE)  # a global the rule reads: the tape reads it at backward


def sum_leaky(x):
    return np.sum(leaky(x))


leaky = None


def test_a_global_an_inlined_rule_reads_is_read_again(isolated_rules, monkeypatch):
    primitive = astgrad.primitive(leaky_raw)
    monkeypatch.setitem(globals(), "leaky", primitive)
    astgrad.defvjp(primitive, leaky_vjp)
    g = astgrad.grad(sum_leaky)
    assert "SLOPE" in g.source or "0.0" in g.source  # inlined, not called
    np.testing.assert_allclose(g(X), (X > 0).astype(float))
    monkeypatch.setitem(globals(), "SLOPE", 0.25)
    expected = np.where(X > 0, 1.0, 0.25)
    np.testing.assert_allclose(_tape(sum_leaky, X), expected)
    _same_everywhere(g, sum_leaky, expected)


# -- defaults ----------------------------------------------------------------


def scaled_default(x, a=2.0):
    return np.sum(x * a)


def scaled_keyword(x, *, a=2.0):
    return np.sum(x * a)


def inner_default(x, a=2.0):
    return x * a


def outer(x):
    return np.sum(inner_default(x) * x)


def test_replaced_defaults_are_the_defaults_that_run(monkeypatch):
    g = astgrad.grad(scaled_default)
    np.testing.assert_allclose(g(X), np.full_like(X, 2.0))
    monkeypatch.setattr(scaled_default, "__defaults__", (5.0,))
    assert scaled_default(np.ones(1)) == 5.0
    _same_everywhere(g, scaled_default, np.full_like(X, 5.0))
    np.testing.assert_allclose(g(X), numeric_grad(scaled_default, (X,), 0), rtol=1e-6)


def test_more_defaults_than_the_source_has(monkeypatch):
    g = astgrad.grad(scaled_default, wrt=1)
    monkeypatch.setattr(scaled_default, "__defaults__", (X, 3.0))  # x gets a default too
    assert g() == pytest.approx(np.sum(X))
    assert g(X) == pytest.approx(np.sum(X))
    np.testing.assert_allclose(astgrad.grad(scaled_default)(X * 2), np.full_like(X, 3.0))


def test_a_keyword_only_default_changed_in_place(monkeypatch):
    g = astgrad.grad(scaled_keyword)
    np.testing.assert_allclose(g(X), np.full_like(X, 2.0))
    monkeypatch.setitem(scaled_keyword.__kwdefaults__, "a", 5.0)  # the same dict, changed
    _same_everywhere(g, scaled_keyword, np.full_like(X, 5.0))


def test_a_callee_s_defaults(monkeypatch):
    g = astgrad.grad(outer)
    np.testing.assert_allclose(g(X), 4 * X)
    monkeypatch.setattr(inner_default, "__defaults__", (5.0,))
    _same_everywhere(g, outer, 10 * X)


# -- code --------------------------------------------------------------------


def inner_code(x):
    return x * 2.0


def calls_inner_code(x):
    return np.sum(inner_code(x) * x)


def test_a_callee_s_code_replaced(monkeypatch):
    g = astgrad.grad(calls_inner_code)
    np.testing.assert_allclose(g(X), 4 * X)
    monkeypatch.setattr(inner_code, "__code__", (lambda x: x * x).__code__)
    _same_everywhere(g, calls_inner_code, 3 * X ** 2)


def test_code_with_other_parameters_is_read_again(monkeypatch):
    def f(x, y):
        return np.sum(x * y * y)
    g = astgrad.grad(f, wrt=1)
    np.testing.assert_allclose(g(X, X + 1), 2 * X * (X + 1))
    f.__code__ = (lambda y, x: np.sum(x * y * y)).__code__  # the names swap places
    np.testing.assert_allclose(g(X, X + 1), X ** 2)  # wrt=1 is now x: d/dx of x * y * y at y = X
    np.testing.assert_allclose(g(X, X + 1), numeric_grad(f, (X, X + 1), 1), rtol=1e-6)


# -- names resolved at transform time ----------------------------------------


DTYPE = np.float32


def cast_and_square(x):
    y = x.astype(DTYPE)
    return np.sum(y * y)


def test_a_class_bound_to_a_global_is_read_again(monkeypatch):
    g = astgrad.grad(cast_and_square)
    x = np.array([1.1, 2.3])
    np.testing.assert_allclose(g(x), 2 * x, rtol=1e-6)  # through float32
    monkeypatch.setitem(globals(), "DTYPE", np.float64)
    _same_everywhere(g, cast_and_square, 2 * x, x)  # exact in float64, not float32's 1e-8 off


def sum_abs(x):
    return np.sum(abs(x))


def test_a_global_that_shadows_a_builtin_later(monkeypatch):
    g = astgrad.grad(sum_abs)
    np.testing.assert_allclose(g(X), np.sign(X))
    monkeypatch.setitem(globals(), "abs", np.square)  # the module now calls np.square
    assert sum_abs(X) == pytest.approx(np.sum(X ** 2))
    _same_everywhere(g, sum_abs, 2 * X)


# -- what is read live needs no new transform ---------------------------------


W = np.array([1.0, 2.0, 3.0])
config = types.ModuleType("config")
config.scale = 2.0


def weighted(x):
    return np.sum(x * W * config.scale)


def test_data_globals_and_module_attributes_are_read_at_call_time(monkeypatch):
    g = astgrad.grad(weighted)
    np.testing.assert_allclose(g(X), 2 * W)
    generated, before = g._generated, W
    monkeypatch.setitem(globals(), "W", W * 10)
    monkeypatch.setattr(config, "scale", 0.5)
    np.testing.assert_allclose(g(X), 0.5 * 10 * before)
    assert g._generated is generated  # no new transform for data


def test_one_change_one_transform(monkeypatch):
    def inner(x, a=2.0):
        return x * a

    def f(x):
        return np.sum(inner(x) * x)
    built = []
    build = gradient.build
    monkeypatch.setattr(gradient, "build", lambda *a, **k: built.append(a[0]) or build(*a, **k))
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X), 4 * X)
    monkeypatch.setattr(inner, "__defaults__", (3.0,))
    for _ in range(3):
        np.testing.assert_allclose(g(X), 6 * X)
        assert astgrad.grad(f) is g
    assert len(built) == 2


# -- the cache belongs to one function ----------------------------------------


def base(x):
    return np.sum(x * x)


def _wrapping(k):
    def wrapper(x):
        return base(x) * k
    wrapper.__dict__.update(base.__dict__)  # what functools.wraps does to the dict: base's cache too
    return wrapper


def test_wrappers_sharing_code_and_a_copied_dict_get_their_own_gradients():
    np.testing.assert_allclose(astgrad.grad(base)(X), 2 * X)
    two, three = _wrapping(2.0), _wrapping(3.0)
    assert two.__code__ is three.__code__
    np.testing.assert_allclose(astgrad.grad(two)(X), 4 * X)
    np.testing.assert_allclose(astgrad.grad(three)(X), 6 * X)
    np.testing.assert_allclose(astgrad.grad(base)(X), 2 * X)


def unrelated_raw(x):
    return x


def test_a_registration_elsewhere_costs_one_transform_and_changes_nothing(isolated_rules, monkeypatch):
    def f(x):
        return np.sum(np.sin(x) * x)
    built = []
    build = gradient.build
    monkeypatch.setattr(gradient, "build", lambda *a, **k: built.append(a[0]) or build(*a, **k))
    g = astgrad.grad(f)
    before = g(X)
    made = len(built)  # the general adjoint, and the one specialised for X (a float array)
    assert made == 2
    astgrad.defvjp(astgrad.primitive(unrelated_raw), straight_through)  # the table's version moves on
    for _ in range(3):
        np.testing.assert_array_equal(g(X), before)
    assert len(built) == 2 * made  # each once more
    np.testing.assert_allclose(before, np.cos(X) * X + np.sin(X))
