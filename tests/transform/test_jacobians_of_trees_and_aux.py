"""``has_aux`` on jvp, jacobian, jacrev and jacfwd, and Jacobians of functions returning dicts and tuples.

JAX's conventions: ``jvp`` with aux returns ``(output, tangent, aux)``, a
Jacobian with aux ``(jacobian, aux)``; the Jacobian of a function returning
a tree has that tree's structure, each leaf holding the blocks of the
arguments (a tuple of them for a tuple ``wrt``).  Every block is checked
against central differences, the two modes against each other, and JAX
where the venv has it.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

X = np.array([0.5, 1.0, -0.3])
Y = np.array([2.0, 3.0, 0.7])


def tree_out(x, y):
    return {"a": np.sin(x) * y, "b": (x * x, np.sum(y * x))}


def with_aux(x, y):
    return np.sin(x) * y, {"count": 3, "total": np.sum(x)}


def not_a_pair(x, y):
    return np.sin(x) * y


def numeric_block(f, args, wrt, pick):
    """d pick(f(*args)) / d args[wrt] by central differences, of shape pick(out).shape + arg.shape."""
    out = pick(f(*args))
    rows = []
    for index in np.ndindex(*np.shape(out)):
        rows.append(numeric_grad(lambda *a: np.asarray(pick(f(*a)))[index], args, wrt))
    return np.array(rows).reshape(np.shape(out) + np.shape(args[wrt]))


PICKS = {"a": lambda o: o["a"], "b0": lambda o: o["b"][0], "b1": lambda o: o["b"][1]}


@pytest.mark.parametrize("transform", [astgrad.jacobian, astgrad.jacrev, astgrad.jacfwd],
                         ids=["jacobian", "jacrev", "jacfwd"])
def test_a_tree_output_gives_a_tree_of_blocks(transform):
    single = transform(tree_out)(X, Y)
    both = transform(tree_out, wrt=(0, 1))(X, Y)
    assert set(single) == {"a", "b"} and isinstance(single["b"], tuple) and len(single["b"]) == 2
    for key, block, pair in (("a", single["a"], both["a"]), ("b0", single["b"][0], both["b"][0]),
                             ("b1", single["b"][1], both["b"][1])):
        np.testing.assert_allclose(block, numeric_block(tree_out, (X, Y), 0, PICKS[key]), rtol=1e-6, atol=1e-8)
        assert isinstance(pair, tuple) and len(pair) == 2
        np.testing.assert_allclose(pair[0], block, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(pair[1], numeric_block(tree_out, (X, Y), 1, PICKS[key]), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("transform", [astgrad.jacobian, astgrad.jacfwd], ids=["jacobian", "jacfwd"])
def test_has_aux_returns_the_jacobian_of_the_output_and_the_aux(transform):
    jac, aux = transform(with_aux, has_aux=True)(X, Y)
    assert aux["count"] == 3 and aux["total"] == pytest.approx(np.sum(X))
    np.testing.assert_allclose(jac, numeric_block(with_aux, (X, Y), 0, lambda o: o[0]), rtol=1e-6, atol=1e-8)
    (jx, jy), _ = transform(with_aux, wrt=(0, 1), has_aux=True)(X, Y)
    np.testing.assert_allclose(jy, numeric_block(with_aux, (X, Y), 1, lambda o: o[0]), rtol=1e-6, atol=1e-8)
    with pytest.raises(TypeError, match="return a pair"):
        transform(not_a_pair, has_aux=True)(X, Y)


def test_jvp_with_aux_returns_output_tangent_and_aux():
    u = np.array([1.0, -2.0, 0.5])
    out, tangent, aux = astgrad.jvp(with_aux, has_aux=True)(X, Y, u)
    np.testing.assert_allclose(out, np.sin(X) * Y)
    np.testing.assert_allclose(tangent, np.cos(X) * Y * u, rtol=1e-12)
    assert aux["count"] == 3
    with pytest.raises(TypeError, match="must return a pair"):
        astgrad.jvp(not_a_pair, has_aux=True)(X, Y, u)


def test_has_aux_of_a_generated_gradient_is_refused_not_guessed():
    def loss(x):
        return np.sum(np.sin(x))

    with pytest.raises(TypeError, match="has_aux is supported for plain Python functions"):
        astgrad.jacobian(astgrad.grad(loss), has_aux=True)


def test_the_tree_jacobian_agrees_with_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def tree_jax(x, y):
        return {"a": jnp.sin(x) * y, "b": (x * x, jnp.sum(y * x))}

    ours = astgrad.jacobian(tree_out, wrt=(0, 1))(X, Y)
    theirs = jax.jacrev(tree_jax, argnums=(0, 1))(X, Y)
    for got, expected in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
        np.testing.assert_allclose(got, np.asarray(expected), rtol=1e-12, atol=1e-14)
    assert jax.tree_util.tree_structure(ours) == jax.tree_util.tree_structure(
        jax.tree_util.tree_map(np.asarray, theirs))


def logits(w, x):
    return np.tanh(x @ w)


def cross_entropy(z):
    return np.log(np.sum(np.exp(z))) - z[0]


def test_make_ggnvp_is_j_transpose_h_j_v():
    rng = np.random.default_rng(3)
    w, x = rng.normal(size=(3, 4)), rng.normal(size=3)
    J = np.array([numeric_grad(lambda w_: logits(w_, x)[k], (w,), 0) for k in range(4)]).reshape(4, 12)
    z = logits(w, x)
    p = np.exp(z) / np.sum(np.exp(z))
    H = np.diag(p) - np.outer(p, p)  # the hessian of log-sum-exp, closed form
    ggnvp = astgrad.make_ggnvp(logits, cross_entropy)(w, x)
    plain = astgrad.make_ggnvp(logits)(w, x)  # g = 0.5 * sum(y ** 2): H = I
    for _ in range(2):
        v = rng.normal(size=(3, 4))
        np.testing.assert_allclose(ggnvp(v), (J.T @ H @ J @ v.ravel()).reshape(3, 4), rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(plain(v), (J.T @ J @ v.ravel()).reshape(3, 4), rtol=1e-5, atol=1e-8)
