"""A write into a global's dict or list that IS (or is inside) a differentiated argument.

The write runs as written, so the function reads the new value, while the
gradient was counted for the argument's old one: ``P["W"] = zeros`` then
``params["W"] * 3`` with ``params is P`` is 0 for every W (finite differences
of the function as it runs at P give 0) and the gradient was 3.  Each such
write is refused when it runs, naming the user's line; the same write into
an object that is no part of a differentiated argument runs as before.
"""

import numpy as np
import pytest

import astgrad
from tests._numeric import gradient

P = {"W": np.ones(2)}
NESTED = {"a": {"W": np.ones(2)}}
L = [np.ones(2), np.ones(2)]
C = {"k": 2.0}


def overwrite(params):
    P["W"] = np.zeros(2)
    return np.sum(params["W"] * 3.0)


def overwrite_nested(params):
    NESTED["a"]["W"] = np.zeros(2)
    return np.sum(params["W"] * 3.0)


def overwrite_list(xs):
    L[0] = np.zeros(2)
    return np.sum(xs[0] * xs[1])


def reset():
    P["W"] = np.zeros(2)


def overwrite_via_callee(params):
    reset()
    return np.sum(params["W"] * 3.0)


def fd_in_place(f, tree, key):
    """d f(tree) / d tree[key], varying tree[key] in place: the global and the argument stay one object."""
    original = tree[key]

    def at(value):
        tree[key] = value
        try:
            return f(tree)
        finally:
            tree[key] = original
    return gradient(at, original.copy())


@pytest.fixture(autouse=True)
def fresh_globals():
    P["W"] = np.ones(2)
    NESTED["a"] = {"W": np.ones(2)}
    L[:] = [np.ones(2), np.ones(2)]
    C["k"] = 2.0
    yield


def test_the_true_gradient_is_zero():
    np.testing.assert_allclose(fd_in_place(overwrite, P, "W"), np.zeros(2), atol=1e-8)


@pytest.mark.parametrize("make", [astgrad.grad, astgrad.value_and_grad])
def test_write_into_the_argument_through_a_global_is_refused(make):
    with pytest.raises(TypeError, match=r"P\[\.\.\.\] = \.\.\..*argument params"):
        make(overwrite)(P)
    with pytest.raises(TypeError, match=r"line \d+|overwrite"):
        make(overwrite)(P)


def test_error_names_the_users_line():
    with pytest.raises(TypeError) as info:
        astgrad.grad(overwrite)(P)
    text = "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])
    assert 'P["W"] = np.zeros(2)' in text and "argument params" in text


def test_vjp_refused():
    with pytest.raises(TypeError, match="argument params"):
        astgrad.vjp(overwrite)(P, 1.0)


def test_nested_container_of_the_argument_refused():
    with pytest.raises(TypeError, match="argument params"):
        astgrad.grad(overwrite_nested)(NESTED["a"])
    # the argument holds NESTED["a"] as an item: a write into it is a write into the argument
    with pytest.raises(TypeError, match="argument"):
        astgrad.grad(lambda_free_outer)({"inner": NESTED["a"]})


def lambda_free_outer(params):
    NESTED["a"]["W"] = np.zeros(2)
    return np.sum(params["inner"]["W"] * 3.0)


def test_list_argument_refused():
    with pytest.raises(TypeError, match="argument xs"):
        astgrad.grad(overwrite_list)(L)


def test_write_in_a_callee_refused():
    with pytest.raises(TypeError, match="argument params"):
        astgrad.grad(overwrite_via_callee)(P)


def reset_given(p):
    p["W"] = np.zeros(2)


def overwrite_via_callee_given_the_global(params):
    reset_given(P)
    return np.sum(params["W"] * 3.0)


def test_write_in_a_callee_given_the_global_refused():
    with pytest.raises(TypeError, match="params"):
        astgrad.grad(overwrite_via_callee_given_the_global)(P)


def test_jvp_refused():
    with pytest.raises(TypeError, match="argument params"):
        astgrad.jvp(overwrite)(P, {"W": np.ones(2)})


def test_other_objects_run_as_before():
    """A write into a global that is no part of the argument: the gradient is the argument's, 3."""
    value, g = astgrad.value_and_grad(overwrite)({"W": np.ones(2)})
    assert value == 6.0
    np.testing.assert_allclose(g["W"], [3.0, 3.0])
    assert (P["W"] == 0).all()  # the write ran


def scaled(x, config):
    C["k"] = 5.0
    return np.sum(x * config["k"])


def test_write_into_a_non_differentiated_argument_is_a_constant():
    """C is the non-differentiated argument config: the function reads the new value, 5, as a constant."""
    x = np.array([1.0, 2.0])
    value, g = astgrad.value_and_grad(scaled)(x, C)
    assert value == 15.0
    C["k"] = 2.0
    np.testing.assert_allclose(g, gradient(lambda v: scaled(v, C), x))
    np.testing.assert_allclose(g, [5.0, 5.0])


def test_hvp_refused():
    with pytest.raises(TypeError, match="argument params"):
        astgrad.hvp(overwrite)(P, {"W": np.ones(2)})


def test_a_refusal_leaves_nothing_behind():
    """Nothing is set per call: after a refused call, the same gradient on another dict is exact."""
    g = astgrad.grad(overwrite)
    with pytest.raises(TypeError, match="argument params"):
        g(P)
    np.testing.assert_allclose(g({"W": np.ones(2)})["W"], [3.0, 3.0])


def test_each_thread_sees_its_own_gradients():
    """A gradient running on another thread with P as its argument does not refuse this thread's write."""
    import threading
    started, done, seen = threading.Event(), threading.Event(), []

    def held(params):
        started.set()
        done.wait(5)
        return np.sum(params["W"])

    worker = threading.Thread(target=lambda: seen.append(astgrad.grad(held)(P)))
    worker.start()
    started.wait(5)
    try:
        g = astgrad.grad(overwrite)({"W": np.ones(2)})
    finally:
        done.set()
        worker.join()
    np.testing.assert_allclose(g["W"], [3.0, 3.0])
    np.testing.assert_allclose(seen[0]["W"], [1.0, 1.0])
