"""Second derivatives of code that keeps its values in dicts and lists it builds, writes by key and iterates.

A hessian is forward mode over the generated gradient, so each helper that
gradient calls for containers needs a forward rule: the keys a
``for k, v in d.items()`` loop reads (none: they are no numbers), a write
``d[k] = v`` into a dict the function made (the same write into the
tangent), and the gradients split by that write (linear in the gradient).
Before, these raised "no gradient rule for list", "put is a helper of
astgrad's own" or "replacing_gradient ... has no derivative rule".  Each
hessian and hvp is checked against central differences of the generated
gradient, which is itself checked against central differences of f.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.8, -1.3, 1.7, 0.4])
V = np.array([0.5, 2.0, -1.0, 0.25])


def dict_filled_by_key(x):
    d = {}
    d["a"] = np.sin(x)
    d["b"] = d["a"] * x
    return np.sum(d["a"] * d["b"]) + np.sum(d["b"] ** 2)


def dict_items_loop(x):
    d = {"a": np.sin(x), "b": x ** 3}
    s = 0.0
    for _, v in d.items():
        s = s + np.sum(v * x)
    return s


def dict_values_loop_after_writes(x):
    state = {"u": x, "w": np.exp(x)}
    for step in range(3):
        state["u"] = state["u"] + 0.1 * state["w"] * np.cos(state["u"])
        state["w"] = state["w"] * 0.9
    total = 0.0
    for v in state.values():
        total = total + np.sum(v ** 2)
    return total


def list_written_by_position(x):
    parts = [x, x ** 2, np.sin(x)]
    parts[1] = parts[0] * parts[2]
    parts[0] = np.exp(parts[1])
    return np.sum(parts[0] + parts[1] * parts[2])


def _energy(d, x):
    return np.sum(d["k"] * x ** 2) + np.sum(np.cos(d["m"] * x))


def dict_passed_to_a_helper(x):
    d = {"k": np.tanh(x), "m": x * 2.0}
    return _energy(d, x)


def keys_from_a_loop(x):
    d = {}
    for i in range(3):
        d[i] = x * (i + 1.0)
    return np.sum(d[0] * d[1] * d[2])


CASES = [dict_filled_by_key, dict_items_loop, dict_values_loop_after_writes, list_written_by_position,
         dict_passed_to_a_helper, keys_from_a_loop]


def _differences_of_the_gradient(f):
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X.copy()), gradient(f, X), rtol=1e-6, atol=1e-7)
    return np.array([gradient(lambda p, i=i: g(p)[i], X) for i in range(X.size)])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hessian_matches_differences_of_the_gradient(f):
    expected = _differences_of_the_gradient(f)
    np.testing.assert_allclose(astgrad.hessian(f)(X.copy()), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_hvp_matches_differences_of_the_gradient(f):
    expected = _differences_of_the_gradient(f) @ V
    np.testing.assert_allclose(astgrad.hvp(f)(X.copy(), V), expected, rtol=1e-5, atol=1e-5)


# -- the Jacobian of the generated gradient, by reverse mode over it ---------
# A gradient that saves values on a stack is differentiated again by forward
# mode; its vjp took only a number as the seed, so jacobian(grad(f)), which
# asks one vjp per row, raised "the gradient of f is one number" for a
# gradient that returns an array.


def products_of_neighbours(v):
    y = np.zeros(4)
    for i in range(1, 4):
        y[i] = v[i] * v[i - 1]
    return np.sum(y * y)


@pytest.mark.parametrize("f", CASES + [products_of_neighbours], ids=lambda f: f.__name__)
def test_jacobian_of_the_gradient_is_the_hessian(f):
    expected = _differences_of_the_gradient(f)
    np.testing.assert_allclose(astgrad.jacobian(astgrad.grad(f))(X.copy()), expected, rtol=1e-5, atol=1e-5)


def test_vjp_of_the_gradient_takes_a_seed_of_its_shape():
    f = products_of_neighbours
    expected = V @ _differences_of_the_gradient(f)
    np.testing.assert_allclose(astgrad.vjp(astgrad.grad(f))(X.copy(), V), expected, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"the seed has shape \(3,\) but the gradient of .* has shape \(4,\)"):
        astgrad.vjp(astgrad.grad(f))(X.copy(), V[:3])


# -- np.array of a nested list: its gradient is a list of lists, whose rows the gradient's code adds up ---------
# Reverse mode over that code added the rows' gradients with +, which raised (0.0 + a list) or, for two lists,
# would join them: a wrong length, never a sum.


def nested_array(x):
    m = np.array([[x[0], x[1]], [x[1] * x[0], 2.0 * x[2]]])
    return np.sum(m * m) + np.sum(np.sin(m) * x[3])


def nested_rows_shared(x):
    row = [x[0] * x[1], x[2]]
    m = np.array([row, [x[3], x[0]], row])
    return np.sum(m ** 3)


@pytest.mark.parametrize("f", [nested_array, nested_rows_shared], ids=lambda f: f.__name__)
def test_reverse_over_reverse_of_a_nested_list_matches_differences_of_the_gradient(f):
    expected = _differences_of_the_gradient(f)
    np.testing.assert_allclose(astgrad.jacrev(astgrad.grad(f))(X.copy()), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(astgrad.jacobian(astgrad.grad(f))(X.copy()), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(astgrad.vjp(astgrad.grad(f), wrt=0)(X.copy(), V), V @ expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(astgrad.hessian(f)(X.copy()), expected, rtol=1e-5, atol=1e-5)
