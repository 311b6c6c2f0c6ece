"""Dict literals, and containers returned by called functions, inside a differentiated function.

``{"W": w, "b": b}`` carries its values' gradients back by key; a layer
function may return ``(out, cache)`` with a dict cache.  Each value is
checked against finite differences (tests/_numeric.py) and, where short,
against a gradient written by hand.  Adversarial: a repeated key or a key
held in a variable (Python keeps the last value, or the key may change),
and iterating a dict, which Python does over its keys.
"""

import os
import sys

import numpy as np
import pytest

import astgrad
from astgrad.check import check_grads

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _numeric import gradient  # noqa: E402

RNG = np.random.default_rng(3)
W = RNG.standard_normal((3, 2))
X = RNG.standard_normal((4, 3))


def read_back(x):
    d = {"a": x, "b": 2 * x}
    return np.sum(d["a"] * d["b"])


def test_a_dict_literal_gives_its_values_their_gradients():
    x = np.array([1.0, -2.0, 0.5])
    np.testing.assert_allclose(astgrad.grad(read_back)(x), 4 * x)  # d/dx 2 x^2, by hand
    np.testing.assert_allclose(astgrad.grad(read_back)(x), gradient(read_back, x), rtol=1e-6)


def affine_forward(x, W):
    out = x @ W
    cache = {"x": x, "W": W, "out": out}
    return np.tanh(out), cache


def uses_the_cache(x, W):
    h, cache = affine_forward(x, W)
    return np.sum(h ** 2) + np.sum(cache["out"] * cache["x"][:, :2])


def test_a_layer_returning_out_and_a_cache_dict():
    got_x, got_w = astgrad.grad(uses_the_cache, wrt=(0, 1))(X, W)
    np.testing.assert_allclose(got_x, gradient(lambda v: uses_the_cache(v, W), X), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(got_w, gradient(lambda v: uses_the_cache(X, v), W), rtol=1e-5, atol=1e-8)
    out = X @ W  # by hand
    d_out = 2 * np.tanh(out) * (1 - np.tanh(out) ** 2) + X[:, :2]
    dx_direct = np.zeros_like(X)
    dx_direct[:, :2] = out
    np.testing.assert_allclose(got_x, d_out @ W.T + dx_direct, rtol=1e-10)
    np.testing.assert_allclose(got_w, X.T @ d_out, rtol=1e-10)


def returns_a_dict(x):
    return {"loss": np.sum(x ** 2), "x": x}


def reads_the_returned_dict(x):
    result = returns_a_dict(x)
    return result["loss"] * 3.0 + np.sum(result["x"])


def test_a_dict_returned_by_a_called_function():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(astgrad.grad(reads_the_returned_dict)(x), 6 * x + 1)


def nested_literals(x):
    d = {"layers": [x, 2 * x], "pair": (x, 3.0)}
    return np.sum(d["layers"][1] * d["pair"][0]) * d["pair"][1]


def branch_built(x, flag):
    if flag:
        d = {"a": x}
    else:
        d = {"a": 3 * x}
    return np.sum(d["a"] ** 2)


def test_nested_literals_and_branches():
    x = np.array([1.0, 3.0])
    np.testing.assert_allclose(astgrad.grad(nested_literals)(x), 12 * x)
    np.testing.assert_allclose(astgrad.grad(branch_built)(x, True), 2 * x)
    np.testing.assert_allclose(astgrad.grad(branch_built)(x, False), 18 * x)


def params_built_inside(W1, b1, X):
    params = {"W1": W1, "b1": b1}
    h = np.tanh(X @ params["W1"] + params["b1"])
    return np.mean(h ** 2)


def test_both_engines_agree_on_a_dict_built_inside():
    report = check_grads(params_built_inside, W, np.ones(2), X, wrt=(0, 1))
    assert set(report.gradients) == {"generated", "taped", "numeric"}


# -- refused, or run as written where nothing carries a gradient --------------------------


def repeated_key(x):
    d = {"a": x, "a": 2 * x}  # noqa: F601
    return np.sum(d["a"])


def key_in_a_variable(x, k):
    d = {k: x}
    return np.sum(d[k])


def test_a_repeated_or_variable_key_on_values_with_gradients_is_refused():
    with pytest.raises(astgrad.TransformError, match="the key .a. appears twice") as info:
        astgrad.grad(repeated_key)
    assert "test_containers_built_in_the_body.py" in str(info.value)
    with pytest.raises(astgrad.TransformError, match="keys must be strings or integers written as literals"):
        astgrad.grad(key_in_a_variable)


def configuration(x, name):
    base = {"n": 2}
    settings = {name: 3.0, **base}
    return np.sum(x * settings[name]) * settings["n"]


def test_a_dict_without_gradients_runs_as_written():
    np.testing.assert_allclose(astgrad.grad(configuration)(np.array([1.0, 2.0]), "scale"), [6.0, 6.0])


def loop_over_a_dict(x):
    d = {0: x, 1: 2 * x}
    total = 0.0
    for v in d:  # Python gives the keys 0 and 1: the value is 1.0, the gradient zero
        total = total + np.sum(v)
    return total


def loop_over_a_returned_dict(x):
    total = 0.0
    for v in returns_a_dict(x):
        total = total + np.sum(v)
    return total


def test_iterating_a_dict_is_refused_when_it_runs():
    with pytest.raises(TypeError, match="iterates over a dict"):
        astgrad.grad(loop_over_a_dict)(np.ones(2))
    with pytest.raises(TypeError, match="iterates over a dict"):
        astgrad.grad(loop_over_a_returned_dict)(np.ones(2))


def items_of_a_literal(x):
    d = {"a": x, "b": 3 * x}
    total = 0.0
    for key, value in d.items():
        total = total + np.sum(value ** 2)
    return total


def test_looping_over_a_literal_by_items():
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(astgrad.grad(items_of_a_literal)(x), 20 * x)  # d/dx (x^2 + 9 x^2), by hand


# -- a container built here and passed to a called function ------------------
# The callee learns from the call that its parameter holds a dict or list,
# as it does for a parameter the caller was given; before, a dict built in
# the body reached the callee's adjoint as if it were an array.

def _sum_over_items(d, x):
    s = 0.0
    for _, v in d.items():
        s = s + np.sum(v * x)
    return s


def _first_two(items, x):
    return np.sum(items[0] * x + items[1] ** 2)


def _nested(d, x):
    return np.sum(d["in"]["a"] * d["b"] * x)


def _by_key(d, x):
    return np.sum(d["a"] * x + d["b"])


def dict_literal_to_callee(x):
    return _by_key({"a": np.sin(x), "b": x ** 2}, x)


def named_dict_to_callee(x):
    d = {"a": np.sin(x), "b": x ** 2}
    return _by_key(d, x)


def dict_iterated_in_callee(x):
    d = {"a": np.sin(x), "b": x ** 2}
    return _sum_over_items(d, x)


def dict_filled_by_key(x):
    d = {}
    d["a"] = np.sin(x)
    d["b"] = np.cos(x) * x
    return _sum_over_items(d, x)


def nested_dict_to_callee(x):
    d = {"in": {"a": np.exp(x)}, "b": x}
    return _nested(d, x)


def list_grown_to_callee(x):
    items = []
    for i in range(3):
        items.append(x * (i + 1.0))
    return _first_two(items, x)


def tuple_to_callee(x):
    return _first_two((np.sin(x), x ** 2), x)


def dict_by_two_names(x):
    d = {"a": np.sin(x), "b": x ** 2}
    e = d
    return _sum_over_items(e, x) + _first_two([d["a"], e["b"]], x)


def dict_read_after_the_call(x):
    d = {"a": np.sin(x), "b": x ** 2}
    return _by_key(d, x) * np.sum(d["a"])


BUILT_AND_PASSED = [dict_literal_to_callee, named_dict_to_callee, dict_iterated_in_callee, dict_filled_by_key,
                    nested_dict_to_callee, list_grown_to_callee, tuple_to_callee, dict_by_two_names,
                    dict_read_after_the_call]


@pytest.mark.parametrize("optimize", [0, 1, 2])
@pytest.mark.parametrize("fn", BUILT_AND_PASSED, ids=lambda f: f.__name__)
def test_a_container_built_here_reaches_a_callee_with_its_gradient(fn, optimize):
    x = np.linspace(0.1, 1.0, 4)
    np.testing.assert_allclose(astgrad.grad(fn, optimize=optimize)(x), gradient(fn, x), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("fn", BUILT_AND_PASSED, ids=lambda f: f.__name__)
def test_a_container_built_here_reaches_a_callee_in_forward_mode(fn):
    x = np.linspace(0.1, 1.0, 4)
    v = np.array([0.3, -1.0, 0.5, 2.0])
    _, tangent = astgrad.jvp(fn)(x, v)
    np.testing.assert_allclose(tangent, gradient(fn, x) @ v, rtol=1e-6)


def _writes_the_dict(d, x):
    d["c"] = d["a"] * 2.0
    return np.sum(d["c"] * x)


def callee_writes_a_dict_built_here(x):
    d = {"a": np.sin(x)}
    return _writes_the_dict(d, x) + np.sum(d["c"])


def test_a_callee_writing_into_a_dict_built_here_is_refused_at_its_line():
    with pytest.raises(astgrad.TransformError, match=r"d\['c'\] = \.\.\. would change the caller's d"):
        astgrad.grad(callee_writes_a_dict_built_here)(np.linspace(0.1, 1.0, 4))
