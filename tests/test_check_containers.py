"""check_grads with dicts, lists and tuples of arrays: generated, taped and numeric compared leaf by leaf.

On the tape each leaf becomes its own Tensor inside the container, so the
user's function runs unchanged in all three methods.  The table names each
leaf as Python indexes it (``params['W1']``), and a wrong rule used by one
leaf fails that leaf's rows.
"""

import numpy as np
import pytest

import astgrad
from astgrad.check import GradientMismatch, check_grads

RNG = np.random.default_rng(7)
X = RNG.standard_normal((6, 3))
Y = RNG.standard_normal((6, 2))


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


def dict_params():
    return {"W1": RNG.standard_normal((3, 4)), "b1": RNG.standard_normal(4),
            "W2": RNG.standard_normal((4, 2)), "b2": RNG.standard_normal(2)}


def test_an_mlp_with_dict_parameters_agrees_in_three_methods():
    report = check_grads(mlp_dict, dict_params(), X, Y)
    assert set(report.gradients) == {"generated", "taped", "numeric"} and not report.skipped
    names = [row[0] for row in report.rows]
    assert names == [n for n in ["params['W1']", "params['b1']", "params['W2']", "params['b2']"] for _ in range(3)]
    assert "| params['b1'] | generated vs taped |" in str(report)


def test_an_mlp_with_a_list_of_layer_tuples_agrees_in_three_methods():
    layers = [(RNG.standard_normal((3, 4)), RNG.standard_normal(4)),
              (RNG.standard_normal((4, 2)), RNG.standard_normal(2))]
    report = check_grads(mlp_layers, layers, X, Y, wrt=(0, 1))
    assert set(report.gradients) == {"generated", "taped", "numeric"}
    assert {row[0] for row in report.rows} == {"layers[0][0]", "layers[0][1]", "layers[1][0]", "layers[1][1]", "X"}
    assert report.ok


def test_the_tape_runs_the_function_on_tensors_inside_the_container():
    params = dict_params()
    tensors = {k: astgrad.tensor(v, requires_grad=True) for k, v in params.items()}
    mlp_dict(tensors, astgrad.tensor(X), astgrad.tensor(Y)).backward()
    expected = astgrad.grad(mlp_dict)(params, X, Y)
    for key in params:
        np.testing.assert_allclose(tensors[key].grad.numpy(), expected[key], rtol=1e-10)


@astgrad.primitive
def leaky_scale(x):
    return 2.0 * x


astgrad.defvjp(leaky_scale, lambda g, ans, x: 2.1 * g)  # 5% too large


def uses_wrong_rule_on_one_leaf(p):
    return np.sum(p["good"] ** 2) + np.sum(leaky_scale(p["bad"]) ** 2)


def test_a_wrong_rule_fails_the_rows_of_the_leaf_that_uses_it():
    p = {"good": np.array([1.0, -2.0]), "bad": np.array([0.5, 1.5]), "name": "skipped"}
    with pytest.raises(GradientMismatch) as info:
        check_grads(uses_wrong_rule_on_one_leaf, p)
    bad = {row[0] for row in info.value.report.rows if not row[-1]}
    assert bad == {"p['bad']"}
    assert all(row[0] != "p['name']" for row in info.value.report.rows)  # a string has no gradient to compare


def test_a_float_leaf_skips_the_tape_and_is_compared_by_the_others():
    report = check_grads(lambda p: p["scale"] * np.sum(p["w"] ** 2), {"scale": 1.5, "w": np.ones(3)})
    assert "taped" in report.skipped and "Python float" in report.skipped["taped"]
    assert {row[0] for row in report.rows} == {"p['scale']", "p['w']"}


def test_the_gradcheck_fixture_takes_containers(gradcheck):
    gradcheck(mlp_dict, dict_params(), X, Y)


def test_large_leaves_use_the_directional_test():
    params = {"W": RNG.standard_normal((20, 15)), "b": RNG.standard_normal(15)}
    report = check_grads(lambda p: np.sum(np.tanh(X[:, :1] * p["b"]) @ p["W"].T), params)
    assert report.directional and report.ok
