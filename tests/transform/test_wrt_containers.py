"""wrt arguments that are dicts, lists and tuples of arrays (pytrees): the gradient comes back in their structure.

Each value is checked against finite differences (tests/_numeric.py's
tree_gradient varies one leaf at a time) and, for the MLPs, against a
gradient written by hand.  The adversarial cases: one array under two keys,
a key chosen at run time, key order, leaves that carry no gradient, empty
containers, a tuple where a list was, one gradient object called with
several structures, and Python's own meaning of ``+``, ``*`` and ``for`` on
containers.
"""

import os
import sys

import numpy as np
import pytest

import astgrad

sys.path.insert(0, os.path.dirname(os.path.dirname(__file__)))
from _numeric import tree_gradient  # noqa: E402

RNG = np.random.default_rng(18)
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal((5, 2))


def assert_tree_close(got, expected, rtol=1e-6, atol=1e-7):
    """Same structure (container types, keys in order), close leaves, ``None`` where expected."""
    assert type(got) is type(expected), (type(got), type(expected))
    if isinstance(expected, dict):
        assert list(got) == list(expected)
        for key in expected:
            assert_tree_close(got[key], expected[key], rtol, atol)
    elif isinstance(expected, (list, tuple)):
        assert len(got) == len(expected)
        for a, b in zip(got, expected):
            assert_tree_close(a, b, rtol, atol)
    elif expected is None:
        assert got is None
    else:
        assert np.shape(got) == np.shape(expected)
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol)


def dict_params():
    return {"W1": RNG.standard_normal((3, 4)), "b1": RNG.standard_normal(4),
            "W2": RNG.standard_normal((4, 2)), "b2": RNG.standard_normal(2)}


def layer_params():
    return [(RNG.standard_normal((3, 4)), RNG.standard_normal(4)), (RNG.standard_normal((4, 2)), RNG.standard_normal(2))]


# -- the MLPs of the issue, against finite differences and by hand -----------------


def mlp_dict(params, X, y):
    h = np.tanh(X @ params["W1"] + params["b1"])
    out = h @ params["W2"] + params["b2"]
    return np.mean((out - y) ** 2)


def mlp_layers(layers, X, y):
    h = X
    for W, b in layers[:-1]:
        h = np.tanh(h @ W + b)
    W, b = layers[-1]
    return np.mean((h @ W + b - y) ** 2)


def by_hand(W1, b1, W2, b2, X, y):
    h = np.tanh(X @ W1 + b1)
    d_out = 2 * (h @ W2 + b2 - y) / y.size
    d_h = d_out @ W2.T * (1 - h ** 2)
    return X.T @ d_h, d_h.sum(0), h.T @ d_out, d_out.sum(0)


def test_an_mlp_with_dict_parameters():
    params = dict_params()
    got = astgrad.grad(mlp_dict)(params, X, Y)
    assert_tree_close(got, tree_gradient(lambda p: mlp_dict(p, X, Y), params), rtol=1e-5, atol=1e-7)
    dW1, db1, dW2, db2 = by_hand(params["W1"], params["b1"], params["W2"], params["b2"], X, Y)
    assert_tree_close(got, {"W1": dW1, "b1": db1, "W2": dW2, "b2": db2})


def test_an_mlp_with_a_list_of_layer_tuples():
    layers = layer_params()
    got = astgrad.grad(mlp_layers)(layers, X, Y)
    assert_tree_close(got, tree_gradient(lambda p: mlp_layers(p, X, Y), layers), rtol=1e-5, atol=1e-7)
    dW1, db1, dW2, db2 = by_hand(*layers[0], *layers[1], X, Y)
    assert_tree_close(got, [(dW1, db1), (dW2, db2)])


def loop_by_index(layers, X):
    h = X
    for i in range(len(layers)):
        h = np.tanh(h @ layers[i][0] + layers[i][1])
    return np.sum(h)


def test_indexing_by_position_and_len():
    layers = layer_params()
    got = astgrad.grad(loop_by_index)(layers, X)
    assert_tree_close(got, tree_gradient(lambda p: loop_by_index(p, X), layers), rtol=1e-5, atol=1e-7)


def nested(tree):
    inner = tree["layers"][1]
    return np.sum(tree["scale"] * inner["w"] ** 2) + np.sum(tree["layers"][0] * inner["w"])


def test_nested_dicts_lists_and_floats():
    tree = {"scale": 1.5, "layers": [np.arange(3.0), {"w": np.array([0.5, -1.0, 2.0]), "unused": np.ones(2)}]}
    got = astgrad.grad(nested)(tree)
    assert type(got["scale"]) is float
    assert_tree_close(got, tree_gradient(nested, tree))


# -- one array under two keys: each key is its own input ----------------------------


def product_of_keys(d):
    return np.sum(d["a"] * d["b"] ** 2)


def test_one_array_under_two_keys_gets_the_partial_derivative_of_each():
    a = np.array([1.0, 2.0, 3.0])
    got = astgrad.grad(product_of_keys)({"a": a, "b": a})
    assert_tree_close(got, {"a": a ** 2, "b": 2 * a * a})  # by hand: partials, not their sum
    assert_tree_close(got, tree_gradient(product_of_keys, {"a": a, "b": a}))
    assert got["a"] is not got["b"] and not np.shares_memory(got["a"], got["b"])


def sum_of_keys(d):
    return np.sum(d["a"] + d["b"])


def test_two_gradients_that_were_one_array_are_returned_as_two():
    got = astgrad.grad(sum_of_keys)({"a": np.ones(3), "b": np.ones(3)})
    assert not np.shares_memory(got["a"], got["b"])
    got["a"] += 1.0
    np.testing.assert_allclose(got["b"], np.ones(3))


# -- keys and structure read when the gradient runs -----------------------------------


def chosen_key(params, name, x):
    return np.sum(params[name] * x) + np.sum(params["b"] ** 2)


def test_a_key_held_in_a_variable():
    params = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, -1.0])}
    x = np.array([0.5, 4.0])
    g = astgrad.grad(chosen_key)
    assert_tree_close(g(params, "a", x), {"a": x, "b": 2 * params["b"]})
    assert_tree_close(g(params, "b", x), {"a": np.zeros(2), "b": x + 2 * params["b"]})


def test_key_order_follows_each_call():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    g = astgrad.grad(product_of_keys)
    first = g({"a": a, "b": b})
    second = g({"b": b, "a": a})
    assert list(first) == ["a", "b"] and list(second) == ["b", "a"]
    for got in (first, second):
        np.testing.assert_allclose(got["a"], b ** 2)
        np.testing.assert_allclose(got["b"], 2 * a * b)


def first_layer(layers, x):
    return np.sum(np.tanh(x @ layers[0][0] + layers[0][1]))


def test_one_gradient_called_with_several_structures():
    g = astgrad.grad(first_layer)
    x = X[0]
    for layers in (layer_params(), layer_params()[:1], tuple(layer_params()),
                   [[RNG.standard_normal((3, 2)), RNG.standard_normal(2)]],
                   {0: (RNG.standard_normal((3, 2)), RNG.standard_normal(2))}):
        assert_tree_close(g(layers, x), tree_gradient(lambda p: first_layer(p, x), layers))
    stacked = RNG.standard_normal((2, 3, 3))  # an array where the lists were: the array's own code
    np.testing.assert_allclose(g(stacked, x), tree_gradient(lambda p: first_layer(p[0], x), [stacked])[0])


def test_a_tuple_and_a_list_with_the_same_contents():
    items = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    g = astgrad.grad(product_of_positions)
    as_list, as_tuple = g(items), g(tuple(items))
    assert type(as_list) is list and type(as_tuple) is tuple
    assert_tree_close(as_list, [items[1] ** 2, 2 * items[0] * items[1]])
    assert_tree_close(as_tuple, (items[1] ** 2, 2 * items[0] * items[1]))


def product_of_positions(items):
    return np.sum(items[0] * items[1] ** 2)


# -- leaves without a gradient, empty containers -------------------------------------------


def uses_some_leaves(p, x):
    return np.sum(p["w"] * x) * p["n"] + np.sum(p["ints"] * x)


def test_leaves_that_carry_no_gradient_get_none_and_numbers_get_floats():
    p = {"w": np.array([1.0, 2.0]), "n": 3, "ints": np.array([1, 2]), "name": "relu", "off": None,
         "flag": True, "unread": np.zeros(2)}
    x = np.array([0.5, -1.0])
    got = astgrad.grad(uses_some_leaves)(p, x)
    assert_tree_close(got, {"w": 3 * x, "n": float(np.sum(p["w"] * x)), "ints": x, "name": None, "off": None,
                            "flag": None, "unread": np.zeros(2)})
    assert type(got["n"]) is float and got["ints"].dtype == np.float64


def scaled_sum(layers, x):
    for w in layers:
        x = x * w
    return np.sum(x)


@pytest.mark.parametrize("empty", [[], (), {}])
def test_empty_containers(empty):
    if isinstance(empty, dict):
        got, dx = astgrad.grad(lambda d, x: np.sum(x * 2.0), wrt=(0, 1))(empty, np.ones(2))
    else:
        got, dx = astgrad.grad(scaled_sum, wrt=(0, 1))(empty, np.ones(2))
    assert got == empty and type(got) is type(empty)
    np.testing.assert_allclose(dx, 2.0 * np.ones(2) if isinstance(empty, dict) else np.ones(2))


# -- what Python does to containers, and no rule follows ----------------------------------


def joined(layers):
    return np.sum(np.array(layers + layers))


def repeated_item(layers):
    pair = layers[0] * 2
    return np.sum(np.array(pair))


def joined_items(layers):
    both = layers[0] + layers[1]
    return np.sum(np.array(both) ** 2)


def over_a_dict(d):
    total = 0.0
    for v in d:
        total = total + np.sum(v)
    return total


def test_joining_a_container_parameter_is_refused_where_it_is_written():
    with pytest.raises(astgrad.TransformError, match="join or repeat lists") as info:
        astgrad.grad(joined)([np.ones(2), np.ones(2)])
    assert "test_wrt_containers.py" in str(info.value) and "layers + layers" in str(info.value)


def test_repeating_an_item_that_is_a_tuple_raises_when_it_runs():
    np.testing.assert_allclose(astgrad.grad(repeated_item)([np.ones(2), np.ones(2)])[0], [2.0, 2.0])
    with pytest.raises(TypeError, match=r"pair = layers\[0\] \* 2.*repeats"):
        astgrad.grad(repeated_item)([(np.ones(2), np.ones(2))])


def test_joining_two_items_that_are_tuples_raises_when_it_runs():
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    assert_tree_close(astgrad.grad(joined_items)([a, b]), [2 * (a + b), 2 * (a + b)])
    with pytest.raises(TypeError, match=r"both = layers\[0\] \+ layers\[1\].*joins"):
        astgrad.grad(joined_items)([(a, b), (b, a)])


def test_iterating_a_dict_is_refused_when_it_runs():
    # Python gives the keys; {0: a, 1: b} would otherwise be read as a list of its values
    with pytest.raises(TypeError, match="iterates over a dict"):
        astgrad.grad(over_a_dict)({0: np.ones(2), 1: np.ones(2)})
    assert_tree_close(astgrad.grad(over_a_dict)([np.ones(2), np.ones(3)]), [np.ones(2), np.ones(3)])


def rescale_in_place(params):
    params["W1"] = params["W1"] * 2
    return np.sum(params["W1"])


def test_a_dict_changed_in_the_body_is_refused():
    with pytest.raises(astgrad.TransformError, match="would change the caller's"):
        astgrad.grad(rescale_in_place)({"W1": np.ones(2)})


# -- called functions, other entry points, Tensors ------------------------------------------


def dense(p, x):
    return np.tanh(x @ p["W"] + p["b"])


def two_dense(params, x):
    return np.sum(dense(params["first"], dense(params["first"], x) @ params["mix"]) ** 2)


def test_containers_passed_to_called_functions():
    params = {"first": {"W": RNG.standard_normal((3, 3)), "b": RNG.standard_normal(3)},
              "mix": RNG.standard_normal((3, 3))}
    got = astgrad.grad(two_dense)(params, X)
    assert_tree_close(got, tree_gradient(lambda p: two_dense(p, X), params), rtol=1e-5, atol=1e-7)


def test_value_and_grad_vjp_and_several_wrt():
    params = dict_params()
    value, got = astgrad.value_and_grad(mlp_dict)(params, X, Y)
    assert value == pytest.approx(mlp_dict(params, X, Y))
    assert_tree_close(got, astgrad.grad(mlp_dict)(params, X, Y))
    dparams, dX = astgrad.grad(mlp_dict, wrt=(0, 1))(params, X, Y)
    assert_tree_close(dparams, got)
    np.testing.assert_allclose(dX, tree_gradient(lambda x: mlp_dict(params, x, Y), [X])[0], rtol=1e-5, atol=1e-7)
    seed = RNG.standard_normal(2)
    vjp = astgrad.vjp(lambda p: p["W2"][0] * p["b2"])(params, seed)
    assert_tree_close(vjp, {"W1": np.zeros((3, 4)), "b1": np.zeros(4),
                            "W2": np.vstack([seed * params["b2"], np.zeros((3, 2))]),
                            "b2": seed * params["W2"][0]})


def test_tensors_inside_containers_get_tensor_gradients():
    params = dict_params()
    tensors = {k: astgrad.tensor(v, requires_grad=True) for k, v in params.items()}
    got = astgrad.grad(mlp_dict)(tensors, X, Y)
    assert all(isinstance(v, astgrad.Tensor) for v in got.values())
    assert_tree_close({k: v.numpy() for k, v in got.items()}, astgrad.grad(mlp_dict)(params, X, Y))


def enumerated(layers, x):
    total = 0.0
    for i, layer in enumerate(layers):
        total = total + (i + 1) * np.sum(layer["w"] * x)
    for layer, scale in zip(layers, [2.0, 3.0]):
        total = total + scale * np.sum(layer["w"] ** 2)
    return total


def test_enumerate_zip_and_named_tuples():
    import collections
    layers = [{"w": np.array([1.0, 2.0])}, {"w": np.array([-1.0, 0.5])}]
    x = np.array([0.5, 2.0])
    got = astgrad.grad(enumerated)(layers, x)
    assert_tree_close(got, [{"w": x + 4 * layers[0]["w"]}, {"w": 2 * x + 6 * layers[1]["w"]}])
    Layer = collections.namedtuple("Layer", "W b")
    net = [Layer(RNG.standard_normal((3, 2)), RNG.standard_normal(2))]
    got = astgrad.grad(first_layer)(net, X[0])
    assert type(got[0]) is Layer
    np.testing.assert_allclose(got[0].b, tree_gradient(lambda b: first_layer([(net[0].W, b)], X[0]), net[0].b))


@pytest.mark.optimize(2)  # compares source with what the default level writes
def test_the_source_shows_the_code_for_containers_once_it_ran():
    g = astgrad.grad(mlp_dict, wrt=(0, 2))  # a gradient of its own, not called before
    assert "holding dicts" not in g.source
    g(dict_params(), X, Y)
    source = g.source
    assert "with respect to params, y (params holding dicts, lists or tuples)." in source
    assert "dparams = {'b2': " in source and "dparams = accumulate(dparams, {'W1': " in source


def returns_a_dict(p):
    return {"a": p["w"] * 2.0}


def test_a_vjp_of_a_function_returning_a_dict_is_refused():
    # np.shape of a dict is (), so a seed 1.0 would have passed for it and given a zero gradient
    with pytest.raises(TypeError, match="a dict stands where an array is read"):
        astgrad.vjp(returns_a_dict)({"w": np.ones(2)}, 1.0)


def loss_and_parts(params, X, y):
    loss = mlp_dict(params, X, y)
    return loss, {"loss": loss, "W1": params["W1"]}


def test_has_aux_with_container_arguments_and_auxiliary_dicts():
    params = dict_params()
    got, aux = astgrad.grad(loss_and_parts, has_aux=True)(params, X, Y)
    assert_tree_close(got, astgrad.grad(mlp_dict)(params, X, Y))
    assert aux["loss"] == pytest.approx(mlp_dict(params, X, Y)) and aux["W1"] is params["W1"]


def l2_by_items(params, lam):
    total = 0.0
    for name, W in params.items():
        total = total + lam * np.sum(W ** 2)
    return total


def sines_by_values(params):
    return sum([np.sum(np.sin(w)) for w in params.values()])


def cubes_by_keys(params):
    total = 0.0
    for k in params.keys():
        total = total + np.sum(params[k] ** 3)
    return total


def test_loops_over_items_values_and_keys():
    p = {"W": np.array([1.0, 2.0]), "b": np.array([0.5]), "nested": [np.array([0.3])]}
    q = {k: v for k, v in p.items() if k != "nested"}
    assert_tree_close(astgrad.grad(l2_by_items)(q, 0.1), {"W": 0.2 * q["W"], "b": 0.2 * q["b"]})
    assert_tree_close(astgrad.grad(sines_by_values)(q), {"W": np.cos(q["W"]), "b": np.cos(q["b"])})
    assert_tree_close(astgrad.grad(cubes_by_keys)(q), tree_gradient(cubes_by_keys, q))
    with pytest.raises(TypeError):  # ** on a list item: numpy's error, as when the function runs alone
        astgrad.grad(cubes_by_keys)(p)


def test_a_container_gradient_is_never_cut_short_padded_or_dropped():
    from astgrad.api.gradient import _finish
    two = [np.ones(2), np.ones(2)]
    for grad, original in [([np.ones(2)] * 3, two), (np.ones((3, 2)), two), ({"c": np.ones(2)}, {"a": np.ones(2)}),
                           (np.ones(2), {"a": np.ones(2)}), (1.5, two)]:
        with pytest.raises(RuntimeError, match="please report"):
            _finish(grad, original)
    assert_tree_close(_finish(0.0, {"a": np.ones(2)}), {"a": np.zeros(2)})  # nothing flowed: zeros
    assert_tree_close(_finish(None, (1.0, "s")), (0.0, None))
