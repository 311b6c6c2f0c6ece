"""Forward mode: the ways a tangent could come out wrong without an error, each checked against a reference.

Broadcasting (a tangent smaller than the result), a tangent left over from
an earlier value (a loop, a break, a branch that made the value constant),
tangents that start in a later iteration, calls, recursion, several
outputs, raises, refusals shared with the reverse engine.
"""

import numpy as np
import pytest

import astgrad
from _numeric import directional

X = np.array([0.3, -0.2, 0.5])
B = np.array([0.7, -0.4, 1.1, 0.2])
M = np.arange(12.0).reshape(3, 4) / 10


def _numeric(f, args, wrt, directions):
    def along(t):
        moved = list(args)
        for i, u in zip(wrt, directions):
            moved[i] = args[i] + t * u
        return np.sum(f(*moved))
    return directional(along, 0.0, 1.0)


def check(f, *args, wrt=(0,), level=None):
    directions = [np.linspace(-1.0, 1.0, np.size(args[i])).reshape(np.shape(args[i])) + 0.3 for i in wrt]
    jf = astgrad.jvp(f, wrt if len(wrt) > 1 else wrt[0], optimize=level)
    value, tangent = jf(*args, tuple(directions) if len(wrt) > 1 else directions[0])
    np.testing.assert_allclose(value, f(*args), rtol=1e-12)
    assert np.shape(tangent) == np.shape(value)
    np.testing.assert_allclose(np.sum(tangent), _numeric(f, args, wrt, directions), rtol=1e-6, atol=1e-8)
    return jf, tangent


def add_row(m, b):
    return np.sum(m + b)  # only b moves: its tangent must be spread over the 3 rows


def subtract_row(m, b):
    return np.sum(m - b) + np.sum(np.maximum(m, b))


def broadcast_copy(b):
    return np.sum(np.broadcast_to(b, (3, 4)) * M)


@pytest.mark.parametrize("f", [add_row, subtract_row])
@pytest.mark.parametrize("level", [0, 1, 2])
def test_a_tangent_smaller_than_the_result_is_spread_over_it(f, level):
    _, tangent = check(f, M, B, wrt=(1,), level=level)
    assert tangent != pytest.approx(0.0)


def test_broadcast_to_spreads_the_tangent():
    check(broadcast_copy, B)


def made_constant_before_break(x):
    y = x * 2.0
    for i in range(3):
        y = y * x
        if i == 1:
            y = np.ones(3)  # constant from here on: its tangent is zero, not the last one computed
            break
    return np.sum(y * y)


def made_constant_in_a_branch(x, flag):
    y = np.sin(x)
    if flag:
        y = np.ones(3)
    return np.sum(y * x)


def starts_in_a_later_iteration(x):
    s = np.zeros(3)
    for i in range(4):
        if i > 1:
            s = s + x * i
    return np.sum(s * s)


def while_accumulates(x):
    s = 0.0
    k = 0
    while k < 5:
        s = s + np.sum(np.sin(x * k))
        if s > 2.5:
            break
        k = k + 1
    return s


def test_a_value_made_constant_before_a_break_has_no_tangent():
    _, tangent = check(made_constant_before_break, X)
    assert tangent == 0.0  # y is ones when the loop breaks: its tangent is no longer y's of the last iteration


@pytest.mark.parametrize("flag", [True, False])
def test_a_value_made_constant_in_a_branch_has_no_tangent(flag):
    check(made_constant_in_a_branch, X, flag)


def test_a_tangent_that_starts_in_a_later_iteration():
    check(starts_in_a_later_iteration, X)


def test_while_with_break():
    check(while_accumulates, X)


def inner(a, b, scale=2.0):
    return np.tanh(a * b) * scale


def calls(x, y):
    return np.sum(inner(x, y) + inner(y, x, scale=0.5) + inner(X, y))


def power(x, n):
    if n == 0:
        return x * 0.0 + 1.0
    return x * power(x, n - 1)


def test_calls_with_keywords_and_constants():
    jf, _ = check(calls, X, X[::-1] + 1.0, wrt=(0,))
    check(calls, X, X[::-1] + 1.0, wrt=(0, 1))
    assert "def jvp_inner" in jf.source


def test_recursion():
    jf, tangent = check(power, 1.3, 4)
    assert tangent == pytest.approx(4 * 1.3 ** 3 * -0.7)  # the direction check() gives a number is -0.7


def several_outputs(x):
    return np.sin(x) * x, np.sum(x), [x * 2.0, 3.0]


def test_the_tangent_has_the_structure_of_the_value():
    u = np.array([1.0, 0.0, -1.0])
    value, tangent = astgrad.jvp(several_outputs)(X, u)
    assert isinstance(tangent, tuple) and isinstance(tangent[2], list)
    np.testing.assert_allclose(tangent[0], (np.cos(X) * X + np.sin(X)) * u)
    assert tangent[1] == pytest.approx(0.0)
    np.testing.assert_allclose(tangent[2][0], 2.0 * u)
    assert tangent[2][1] == 0.0


def constant_output(x, y):
    return y * 2.0


def test_an_output_that_does_not_depend_on_wrt_has_a_zero_tangent():
    value, tangent = astgrad.jvp(constant_output)(X, X, np.ones(3))
    np.testing.assert_array_equal(tangent, np.zeros(3))


def raises(x):
    if np.sum(x) > 10:
        raise ValueError("too big")
    return np.sum(x * x)


def test_a_raise_runs_as_in_the_function():
    check(raises, X)
    with pytest.raises(ValueError, match="too big"):
        astgrad.jvp(raises)(X + 10, np.ones(3))


def writes_into_argument(x):
    x += 1.0
    return np.sum(x)


def test_a_write_into_the_callers_array_is_refused_as_in_reverse_mode():
    with pytest.raises(astgrad.TransformError, match="caller's array") as info:
        astgrad.jvp(writes_into_argument)
    assert info.value.lineno == writes_into_argument.__code__.co_firstlineno + 1


@astgrad.primitive
def reverse_only(x):
    return x * 3.0


astgrad.defvjp(reverse_only, lambda g, ans, x: 3.0 * g)


def uses_reverse_only(x):
    return np.sum(reverse_only(x))


def test_a_primitive_without_a_forward_rule_is_refused_at_its_line():
    with pytest.raises(astgrad.TransformError, match="no forward rule") as info:
        astgrad.jvp(uses_reverse_only)
    assert info.value.lineno == uses_reverse_only.__code__.co_firstlineno + 1
    assert "defjvp" in str(info.value)


def test_a_tangent_of_another_shape_is_refused():
    with pytest.raises(ValueError, match="shape"):
        astgrad.jvp(raises)(X, np.ones(2))


def test_float32_stays_float32():
    x = X.astype(np.float32)
    _, tangent = astgrad.jvp(lambda x: np.sin(x) * 2.0)(x, np.ones(3, np.float32))
    assert tangent.dtype == np.float32


def test_cached_and_rebuilt_when_a_callee_changes():
    global inner
    first = astgrad.jvp(calls)
    assert astgrad.jvp(calls) is first
    saved = inner
    try:
        inner = lambda a, b, scale=2.0: a * b * scale  # noqa: E731
        _, tangent = first(X, X, np.ones(3))
        assert tangent == pytest.approx(np.sum(2.0 * X + 0.5 * X))  # x moves inner(x, y) and inner(y, x)
    finally:
        inner = saved


def test_keywords_take_the_general_path_with_the_same_numbers():
    jf = astgrad.jvp(calls)
    u = np.array([1.0, -1.0, 2.0])
    positional = jf(X, X + 1.0, u)
    keywords = jf(X, u, y=X + 1.0)
    np.testing.assert_array_equal(positional[1], keywords[1])
    listed = jf(X, X + 1.0, [1.0, -1.0, 2.0])  # a list where an array goes: the general path
    np.testing.assert_array_equal(positional[1], listed[1])


def test_show_prints_each_forward_stage():
    normal = astgrad.show(calls, mode="jvp", stage="normalize")
    assert "calls after normalize" in normal and "jvp_" not in normal
    forward = astgrad.show(calls, mode="jvp", stage="forward", optimize=0)
    assert "def jvp_calls(x, y, dx)" in forward
    assert astgrad.show(calls, mode="jvp") == astgrad.jvp(calls).source
    with pytest.raises(ValueError, match="optimize=1"):
        astgrad.show(calls, mode="jvp", stage="dead_code", optimize=0)
    with pytest.raises(ValueError, match="forward mode"):
        astgrad.show(calls, mode="jvp", stage="reverse")


def test_the_command_line_shows_a_jvp(capsys):
    from astgrad._cli import main
    main(["show", f"{__file__}:calls", "--mode", "jvp"])
    assert "def jvp_calls(x, y, dx)" in capsys.readouterr().out


def layer(p, x):
    W, b = p
    return np.tanh(x @ W + b)


def net(params, x):
    h = x
    for p in params["layers"]:
        h = layer(p, h)
    return np.sum(h * h) * params["scale"]


def _tree(rng):
    return {"layers": [(rng.standard_normal((3, 4)), rng.standard_normal(4)),
                       (rng.standard_normal((4, 2)), rng.standard_normal(2))], "scale": 1.5}


def _plus(a, b, s):
    if isinstance(a, dict):
        return {k: _plus(a[k], b[k], s) for k in a}
    if isinstance(a, (list, tuple)):
        return type(a)(_plus(p, q, s) for p, q in zip(a, b))
    return a + s * b


def test_a_tree_argument_takes_a_tangent_of_its_structure():
    rng = np.random.default_rng(5)
    params, direction, x = _tree(rng), _tree(rng), rng.standard_normal((5, 3))
    jf = astgrad.jvp(net)
    value, tangent = jf(params, x, direction)
    assert value == pytest.approx(net(params, x))
    numeric = directional(lambda t: net(_plus(params, direction, t), x), 0.0, 1.0)
    assert tangent == pytest.approx(numeric, rel=1e-6)
    source = jf._tree_variants[frozenset({"params"})].source
    assert source.count("def jvp_layer") == 1  # the loop's first guess (no tangent for h) left no variant behind
    with pytest.raises(ValueError, match="structure"):
        jf(params, x, {"layers": direction["layers"][:1], "scale": 0.7})


def names_like_generated_ones(x, dx):
    zero_tangent = 2.0
    tangent_of = x * dx
    s = 0.0
    for i in range(2):
        s = s + np.sum(tangent_of * zero_tangent + x)
    return s + np.sum(np.broadcast_to(dx, (2, 3)) * x)


@pytest.mark.parametrize("wrt", [0, 1])
def test_user_names_like_the_generated_ones_keep_their_meaning(wrt):
    jf, _ = check(names_like_generated_ones, X, X + 1.0, wrt=(wrt,))
    assert "dx_2" in jf.source and "zero_tangent_2(" in jf.source if wrt == 0 else True


def dict_items(x):
    d = {}
    d["a"] = x * 2
    d["b"] = np.sin(x)
    d["a"] = d["a"] * x
    return np.sum(d["a"] * d["b"])


def list_items(x):
    lst = [x, x * 2, 3.0]
    lst[1] = np.sin(lst[0]) * x
    lst[2] = x
    return np.sum(lst[1] * lst[2])


def nested_items(x):
    a = [[x * 1.0, x * 1.0], [2 * x, 1.0]]
    a[1][0] = x * x
    m = np.zeros((2, 3))
    m[0] = x
    m[1, 2] = x[0] * 3
    return np.sum(a[1][0] * a[0][1]) + np.sum(m * m)


def keyed_by_step(x):
    d = {}
    for k in range(3):
        d[k] = x * k
    s = 0.0
    for k in range(3):
        s = s + np.sum(d[k] * d[k])
    return s


@pytest.mark.parametrize("f", [dict_items, list_items, nested_items, keyed_by_step])
def test_item_assignment_into_arrays_lists_and_dicts(f):
    jf, _ = check(f, X)
    assert "setitem(" in jf.source or "put(" in jf.source  # the same write of the tangents
