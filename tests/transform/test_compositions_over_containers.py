"""jacobian, jacfwd, hessian and hvp with respect to dicts, lists and tuples of arrays (pytrees).

The result nests as JAX nests it: ``jacobian`` gives the argument's
structure with leaves of shape ``out.shape + leaf.shape``; ``hessian`` gives
``H[a][b]`` of shape ``a.shape + b.shape`` for leaves ``a`` and ``b``.  Each
block is checked against central differences of the gradient (the lower
derivative), and against the same function written over one flat vector.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from _numeric import gradient, replaced, tree_gradient

RNG = np.random.default_rng(7)


def mlp_dict(p, x):
    h = np.tanh(p["W1"] @ x + p["b1"])
    return np.sum((p["W2"] @ h + p["b2"]) ** 2) * p["scale"]


def mlp_layers(layers, x):
    for W, b in layers:
        x = np.tanh(W @ x + b)
    return np.sum(x ** 2)


def reads_in_another_order(p):
    return np.sum(np.sin(p["b"]) * p["a"][0]) + p["a"][1] * np.sum(p["b"] ** 2)


def with_a_label(p, x):
    return np.sum(np.exp(p["w"] * x)) if p["label"] == "exp" else np.sum(p["w"] * x)


def _params_dict():
    return {"W1": RNG.standard_normal((3, 2)), "b1": RNG.standard_normal(3), "W2": RNG.standard_normal((2, 3)),
            "b2": RNG.standard_normal(2), "scale": 0.7}


def _get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def _leaves(tree, path=()):
    if isinstance(tree, dict):
        return [item for k, v in tree.items() for item in _leaves(v, path + (k,))]
    if isinstance(tree, (list, tuple)):
        return [item for i, v in enumerate(tree) for item in _leaves(v, path + (i,))]
    return [(path, tree)] if not isinstance(tree, str) else []


def _check_hessian_block(H, f, args, position):
    """H[a][b] == d(grad_a)/db, each element of grad_a differenced along b."""
    tree = args[position]
    g = astgrad.grad(f, position)

    def grad_at(value):
        moved = list(args)
        moved[position] = value
        return g(*moved)

    for path_a, a in _leaves(tree):
        for path_b, b in _leaves(tree):
            block = _get(_get(H, path_a), path_b)
            assert block.shape == np.shape(a) + np.shape(b)
            for index in np.ndindex(*np.shape(a)):
                expected = gradient(lambda v: np.asarray(_get(grad_at(replaced(tree, path_b, v)), path_a))[index], b)
                np.testing.assert_allclose(block[index], expected, rtol=1e-5, atol=1e-6)


def test_hessian_of_a_dict_matches_differences_of_the_gradient_block_by_block():
    p, x = _params_dict(), RNG.standard_normal(2)
    H = astgrad.hessian(mlp_dict)(p, x)
    assert list(H) == list(p) and all(list(H[k]) == list(p) for k in p)
    assert H["W1"]["b2"].shape == (3, 2, 2) and H["scale"]["W1"].shape == (3, 2) and H["scale"]["scale"].shape == ()
    _check_hessian_block(H, mlp_dict, (p, x), 0)


def test_hessian_of_a_dict_is_the_hessian_of_the_flat_vector_written_by_hand():
    p, x = _params_dict(), RNG.standard_normal(2)
    sizes = [np.size(v) for v in p.values()]
    ends = np.cumsum(sizes)

    def flat(v, x):
        W1 = np.reshape(v[0:6], (3, 2))
        b1 = v[6:9]
        W2 = np.reshape(v[9:15], (2, 3))
        b2 = v[15:17]
        h = np.tanh(W1 @ x + b1)
        return np.sum((W2 @ h + b2) ** 2) * v[17]

    v = np.concatenate([np.ravel(a) for a in p.values()])
    H_flat = astgrad.hessian(flat)(v, x)
    H = astgrad.hessian(mlp_dict)(p, x)
    starts = ends - sizes
    for i, a in enumerate(p):
        for j, b in enumerate(p):
            np.testing.assert_allclose(np.reshape(H[a][b], (sizes[i], sizes[j])),
                                       H_flat[starts[i]:ends[i], starts[j]:ends[j]], rtol=1e-10, atol=1e-12)


def test_hessian_of_a_list_of_layers_through_a_loop():
    layers = [(RNG.standard_normal((2, 2)), RNG.standard_normal(2)), (RNG.standard_normal((1, 2)), RNG.standard_normal(1))]
    x = RNG.standard_normal(2)
    H = astgrad.hessian(mlp_layers)(layers, x)
    assert isinstance(H, list) and isinstance(H[0], tuple) and isinstance(H[0][0], list)
    assert H[1][0][0][1].shape == (1, 2, 2)
    _check_hessian_block(H, mlp_layers, (layers, x), 0)


def test_hessian_of_keys_read_out_of_order_and_a_tuple_inside():
    p = {"a": (RNG.standard_normal(3), 0.4), "b": RNG.standard_normal(3)}
    H = astgrad.hessian(reads_in_another_order)(p)
    assert H["a"][1]["b"].shape == (3,) and H["b"]["a"][0].shape == (3, 3)
    _check_hessian_block(H, reads_in_another_order, (p,), 0)


def test_a_leaf_without_a_derivative_gets_none_and_the_others_their_blocks():
    p, x = {"w": RNG.standard_normal(3), "label": "exp"}, RNG.standard_normal(3)
    H = astgrad.hessian(with_a_label)(p, x)
    assert H["label"] is None and H["w"]["label"] is None
    np.testing.assert_allclose(H["w"]["w"], np.diag(x ** 2 * np.exp(p["w"] * x)), rtol=1e-12)
    assert astgrad.jacobian(with_a_label)(p, x)["label"] is None
    assert astgrad.jacfwd(with_a_label)(p, x)["label"] is None


def test_hessian_of_a_dict_and_an_array_nests_as_jax_does():
    p, x = _params_dict(), RNG.standard_normal(2)
    H = astgrad.hessian(mlp_dict, wrt=(0, 1))(p, x)
    assert isinstance(H, tuple) and len(H) == 2
    assert H[0]["W1"][0]["b2"].shape == (3, 2, 2) and H[0]["W1"][1].shape == (3, 2, 2)
    assert H[1][0]["b1"].shape == (2, 3) and H[1][1].shape == (2, 2)
    gx = astgrad.grad(mlp_dict, 1)
    for name, leaf in p.items():  # d(grad_x)/d p[name], against differences
        for index in np.ndindex(2):
            expected = gradient(lambda v: gx(replaced(p, (name,), v), x)[index], leaf)
            np.testing.assert_allclose(H[1][0][name][index], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(H[0]["W2"][1], np.moveaxis(H[1][0]["W2"], 0, -1), rtol=1e-10)  # symmetric


def test_hvp_along_a_dict_is_the_hessian_contracted_with_it():
    p, x = _params_dict(), RNG.standard_normal(2)
    v = {k: RNG.standard_normal(np.shape(a)) for k, a in p.items()}
    v["scale"] = 0.3
    Hv = astgrad.hvp(mlp_dict)(p, x, v)
    H = astgrad.hessian(mlp_dict)(p, x)
    assert list(Hv) == list(p)
    for a in p:
        expected = sum(np.tensordot(H[a][b], v[b], axes=np.ndim(v[b])) for b in p)
        np.testing.assert_allclose(Hv[a], expected, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="structure"):
        astgrad.hvp(mlp_dict)(p, x, {"W1": v["W1"]})


def vector_of_dict(p, x):
    return np.tanh(p["W"] @ x) * p["c"]


def test_jacobian_and_jacfwd_of_a_dict_match_differences_and_each_other():
    p, x = {"W": RNG.standard_normal((3, 2)), "c": RNG.standard_normal(3)}, RNG.standard_normal(2)
    J = astgrad.jacobian(vector_of_dict)(p, x)
    Jf = astgrad.jacfwd(vector_of_dict)(p, x)
    assert J["W"].shape == (3, 3, 2) and J["c"].shape == (3, 3)
    for i in range(3):
        expected = tree_gradient(lambda q: vector_of_dict(q, x)[i], p)
        for k in p:
            np.testing.assert_allclose(J[k][i], expected[k], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(Jf[k][i], expected[k], rtol=1e-5, atol=1e-6)
    Jp, Jx = astgrad.jacfwd(vector_of_dict, wrt=(0, 1))(p, x)
    np.testing.assert_allclose(Jp["W"], J["W"], rtol=1e-12)
    np.testing.assert_allclose(Jx, astgrad.jacobian(vector_of_dict, 1)(p, x), rtol=1e-12)


def test_complex_leaves_are_refused_with_what_to_do():
    p = {"z": np.array([1.0 + 2.0j])}
    with pytest.raises(TypeError, match=r"'p'\['z'\] is complex.*real and imaginary parts"):
        astgrad.hessian(lambda p: np.sum(np.abs(p["z"]) ** 2))(p)
    z = np.array([1.0 + 2.0j, 0.5j])
    for transformation in (astgrad.hessian, astgrad.jacfwd, astgrad.jacobian):
        with pytest.raises(TypeError, match=r"argument 'z' is complex.*wrt=\(re, im\)"):
            transformation(lambda z: np.sum(np.abs(z) ** 2))(z)
    with pytest.raises(TypeError, match="argument 'z' is complex"):  # H v of a real function of z: no one complex H
        astgrad.hvp(lambda z: np.sum(np.abs(z) ** 2))(z, z)
