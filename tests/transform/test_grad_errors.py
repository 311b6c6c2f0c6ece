"""Unsupported input fails at transform time, located, with a way out."""

import numpy as np
import pytest

import astgrad

HERE = __file__


def uses_try(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return y


def uses_yield(x):
    yield x * 2
    return x


COUNTER = 0


def writes_global(x):
    global COUNTER
    COUNTER = 1
    return x * 2


def defines_class(x):
    class Box:
        pass
    return x * 2


def defines_function(x):
    def helper(v):
        return v * 2
    return helper(x)


async def is_async(x):
    return x * 2


def no_rule(x):
    y = x * 2
    return np.sum(np.i0(y))


def unknown_method(x):
    return np.sum(x.cumprod_custom())


def unknown_attribute(x):
    return np.sum(x.flat)


def calls_local(x):
    fn = np.sin if x.ndim else np.cos  # (a parameter is called as the function it holds in each call)
    return fn(x) * 2


def calls_computed(x):
    return getattr(np, "sin")(x) * 2  # noqa: B009 (a function the transform cannot name)


def walrus(x):
    if (y := x * 2) > 1:
        return y
    return x


def star_args(*xs):
    return xs[0]


def loop_else(x):
    for i in range(3):
        x = x * 2
    else:
        x = x + 1
    return x


def returns_nothing(x):
    x = x * 2


def deletes(x):
    y = x * 2
    del y
    return x


def with_open(x):
    with open("file") as fh:
        fh.read()
    return x


CASES = [
    (uses_try, "try/except", "Move the try/except"),
    (uses_yield, "generators", "Return a list"),
    (writes_global, "global statements", "Return the value"),
    (defines_class, "class definitions", "module level"),
    (defines_function, "nested function", "module level"),
    (is_async, "async", "plain"),
    (no_rule, "no gradient rule for numpy.i0", "astgrad.defvjp(numpy.i0"),
    (unknown_method, ".cumprod_custom()", "numpy function"),
    (unknown_attribute, ".flat", "numpy function"),
    (calls_local, "calling a local variable (fn)", "module-level"),
    (calls_computed, "calling a function computed in the body (getattr(np, 'sin'))", "by its name"),
    (walrus, ":=", "own statement"),
    (star_args, "*args", "named parameters"),
    (loop_else, "else clauses on loops", "flag"),
    (returns_nothing, "returns nothing", "Return the value"),
    (deletes, "del", "assign None"),
    (with_open, "`with ... as name` is not supported", "Drop `as name`"),
]


@pytest.mark.parametrize("f, message, hint", CASES, ids=[c[0].__name__ for c in CASES])
def test_located_error_with_a_hint(f, message, hint):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(f)
    err = info.value
    text = str(err)
    assert message in text and hint in text
    assert err.filename == HERE
    first_line = f.__code__.co_firstlineno
    assert first_line <= err.lineno <= first_line + 6
    shown, caret = text.splitlines()[1:3]
    assert shown.strip() and caret.strip() == "^"
    # the caret sits under the reported column of the reported source line
    assert caret.index("^") - 4 == err.col
    with open(HERE) as fh:
        assert fh.read().splitlines()[err.lineno - 1].rstrip() == shown[4:].rstrip()


def test_error_points_at_the_call_without_a_rule():
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(no_rule)
    assert info.value.lineno == no_rule.__code__.co_firstlineno + 2
    assert str(info.value).splitlines()[0].endswith("no gradient rule for numpy.i0")


def test_rule_free_calls_are_fine_on_constants():
    def constant_use(x):
        k = np.sum(np.i0(np.arange(3.0)))
        return np.sum(x * k)
    assert_k = np.sum(np.i0(np.arange(3.0)))
    np.testing.assert_allclose(astgrad.grad(constant_use)(np.ones(2)), [assert_k, assert_k])


def test_registering_a_rule_makes_the_call_differentiable(isolated_rules):
    @astgrad.primitive
    def cube(v):
        return v ** 3

    astgrad.defvjp(cube, lambda g, ans, v: g * 3 * v * v)

    def uses_cube(x):
        return np.sum(cube(x))
    np.testing.assert_allclose(astgrad.grad(uses_cube)(np.array([1.0, 2.0])), [3.0, 12.0])
