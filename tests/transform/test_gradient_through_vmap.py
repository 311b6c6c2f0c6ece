"""Derivatives of a function that calls a vmapped function: grad, value_and_grad, jvp and jacobians through
``astgrad.vmap(g)(...)``, against the same function with the vmap written as a loop (finite differences and
astgrad's own gradient of the loop), and against the tape's ``torch.func.vmap``; what is refused, and where.
"""

import sys

import numpy as np
import pytest

import astgrad
from astgrad.api import vmapped
from _numeric import directional, numeric_grad

RNG = np.random.default_rng(11)


def layer(x, w, s):
    return np.tanh(x @ w) * s + np.sum(x ** 2) * s


def looped(X, W, s, in_axis=0, out_axis=0):
    """``vmap(layer, in_axes=(in_axis, None, None), out_axes=out_axis)(X, W, s)`` as a Python loop."""
    return np.stack([layer(np.take(X, i, axis=in_axis), W, s) for i in range(X.shape[in_axis])], axis=out_axis)


def loss_named(X, W, s):
    return np.sum(shared_layer(X, W, s) ** 2)


shared_layer = astgrad.vmap(layer, in_axes=(0, None, None))


def loss_written(X, W, s):
    return np.sum(astgrad.vmap(layer, in_axes=(1, None, None), out_axes=1)(X, W, s) ** 2)


def loss_positional_axes(X, W, s):
    return np.sum(astgrad.vmap(layer, (1, None, None), 1)(X, W, s) ** 2)


def loss_loop(X, W, s, in_axis=0, out_axis=0):
    return np.sum(looped(X, W, s, in_axis, out_axis) ** 2)


def loss_loop_axis1(X, W, s):
    return np.sum(np.stack([layer(X[:, i], W, s) for i in range(X.shape[1])], axis=1) ** 2)


CASES = [(loss_named, 0), (loss_written, 1), (loss_positional_axes, 1)]


def arguments(axis):
    X = RNG.standard_normal((5, 4) if axis == 0 else (4, 5))
    return X, RNG.standard_normal((4, 3)) * 0.5, 0.7


@pytest.mark.parametrize("loss,axis", CASES)
def test_gradient_of_every_argument_matches_the_loop(loss, axis):
    X, W, s = arguments(axis)
    got = astgrad.grad(loss, (0, 1, 2))(X, W, s)
    reference = lambda X, W, s: loss_loop(X, W, s, axis, axis)  # noqa: E731
    for k, value in enumerate(got):
        np.testing.assert_allclose(value, numeric_grad(reference, (X, W, s), k), rtol=1e-6, atol=1e-7)
    assert isinstance(got[2], float)  # a number shared by every example: the sum of its gradients, a number


def test_gradient_matches_astgrad_gradient_of_the_loop():
    X, W, s = arguments(1)
    got = astgrad.grad(loss_written, (0, 1, 2))(X, W, s)
    expected = astgrad.grad(loss_loop_axis1, (0, 1, 2))(X, W, s)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_value_and_grad():
    X, W, s = arguments(0)
    value, gradient = astgrad.value_and_grad(loss_named, 1)(X, W, s)
    assert np.isclose(value, loss_loop(X, W, s))
    np.testing.assert_allclose(gradient, numeric_grad(loss_loop, (X, W, s), 1), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("loss,axis", CASES)
@pytest.mark.parametrize("k", [0, 1, 2])
def test_jvp_along_each_argument(loss, axis, k):
    args = arguments(axis)
    tangent = RNG.standard_normal(np.shape(args[k])) if k < 2 else 1.3
    value, got = astgrad.jvp(loss, k)(*args, tangent)

    def along(v):
        return loss_loop(*(v if i == k else a for i, a in enumerate(args)), axis, axis)

    assert np.isclose(value, loss(*args))
    assert np.isclose(got, directional(along, args[k], tangent), rtol=1e-6, atol=1e-7)


def batched_value(X, W, s):
    return astgrad.vmap(layer, in_axes=(1, None, None), out_axes=1)(X, W, s)


@pytest.mark.parametrize("jacobian", [astgrad.jacobian, astgrad.jacrev, astgrad.jacfwd])
def test_jacobians_of_the_batched_value(jacobian):
    X, W, s = arguments(1)
    got = jacobian(batched_value, 1)(X, W, s)
    assert got.shape == (3, 5) + W.shape
    for index in np.ndindex(3, 5):
        expected = numeric_grad(lambda X, W, s: looped(X, W, s, 1, 1)[index], (X, W, s), 1)
        np.testing.assert_allclose(got[index], expected, rtol=1e-6, atol=1e-7)


def recurrent(x, w):
    h = x
    for _ in range(3):
        h = np.sin(h * w)
    return h


def loss_recurrent(X, w):
    return np.sum(astgrad.vmap(recurrent, in_axes=(0, None))(X, w) ** 2)


def test_a_pullback_the_sweep_does_not_batch_runs_per_example():
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    got = astgrad.grad(loss_recurrent, (0, 1))(X, w)
    reference = lambda X, w: np.sum(np.stack([recurrent(x, w) for x in X]) ** 2)  # noqa: E731
    for k in range(2):
        np.testing.assert_allclose(got[k], numeric_grad(reference, (X, w), k), rtol=1e-6, atol=1e-7)
    made = [v for per in vmapped._MADE.values() for key, v in per.items() if key[0] == "vjp" and "w" in key[1]
            and v[0].function.__name__.endswith("recurrent")]
    assert made and all(batched is None for _, batched in made)  # the loop ran: its gradient saves on a stack


def test_the_batched_pullback_is_one_call():
    X, W, s = arguments(0)
    astgrad.grad(loss_named, (0, 1))(X, W, s)
    made = [v for per in vmapped._MADE.values() for key, v in per.items() if key[0] == "vjp"
            and v[0].function.__name__.endswith("layer")]
    assert made and all(batched is not None for _, batched in made)


def rebound(x, w):
    return np.sin(x) * w


def calls_rebound(X, w):
    return np.sum(astgrad.vmap(rebound, in_axes=(0, None))(X, w))


def cosine(x, w):
    return np.cos(x) * w


def test_rebinding_the_vmapped_function_remakes_the_caller(monkeypatch):
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    df = astgrad.grad(calls_rebound, 1)
    np.testing.assert_allclose(df(X, w), np.sum(np.sin(X), axis=0))
    monkeypatch.setitem(globals(), "rebound", cosine)
    np.testing.assert_allclose(df(X, w), np.sum(np.cos(X), axis=0))


rebound_vmap = astgrad.vmap(rebound, in_axes=(0, None))


def calls_rebound_vmap(X, w):
    return np.sum(rebound_vmap(X, w))


def test_rebinding_the_vmapped_name_remakes_the_caller(monkeypatch):
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    df = astgrad.grad(calls_rebound_vmap, 1)
    np.testing.assert_allclose(df(X, w), np.sum(np.sin(X), axis=0))
    monkeypatch.setitem(globals(), "rebound_vmap", astgrad.vmap(cosine, in_axes=(0, None)))
    np.testing.assert_allclose(df(X, w), np.sum(np.cos(X), axis=0))


def closes_over_lambda(X, w):
    return np.sum(astgrad.vmap(lambda x: x * w)(X))


def keywords_given(X, w):
    return np.sum(astgrad.vmap(recurrent, in_axes=(0, None))(X, w=w))


AXES = (0, None)


def axes_by_name(X, w):
    return np.sum(astgrad.vmap(recurrent, in_axes=AXES)(X, w))


per_example_gradients = astgrad.vmap(astgrad.grad(recurrent))


def vmapped_gradient(X, w):
    return np.sum(per_example_gradients(X, w))


@pytest.mark.parametrize("f,message", [
    (closes_over_lambda, "batches a function defined or computed in the body"),
    (keywords_given, "takes every argument by position"),
    (axes_by_name, "is a literal"),
    (vmapped_gradient, "per-example second derivative"),
])
def test_refused_at_the_call(f, message):
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    with pytest.raises(astgrad.TransformError, match=message) as caught:
        astgrad.grad(f, (0, 1))(X, w)
    assert f"{__file__}:" in str(caught.value)


def list_argument(X, w):
    return np.sum(astgrad.vmap(recurrent, in_axes=(0, None))(X, [w[0], w[1], w[2]]))


@pytest.mark.parametrize("f,message", [(list_argument, "its argument w is a list")])
def test_refused_when_the_rule_runs(f, message):
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    with pytest.raises(TypeError, match=message):
        astgrad.grad(f, (0, 1))(X, w)


def writes_its_argument(x, w):
    x[0] = 0.0
    return x * w


def test_a_write_into_an_argument_raises():
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    with pytest.raises((ValueError, astgrad.TransformError)):
        astgrad.grad(lambda X, w: np.sum(astgrad.vmap(writes_its_argument, in_axes=(0, None))(X, w)), 1)(X, w)


def hessian_by_differences(i, j, args):
    """d grad(loss_loop_axis1, i) / d args[j] by central differences of astgrad's gradient of the loop."""
    gradient = astgrad.grad(loss_loop_axis1, i)
    eps, x = 1e-6, args[j]
    out = np.zeros(np.shape(args[i]) + np.shape(x))
    for index in np.ndindex(np.shape(x)):
        up, down = np.array(x, dtype=float), np.array(x, dtype=float)
        up[index] += eps
        down[index] -= eps
        if np.ndim(x) == 0:
            up, down = float(up), float(down)
        at = [list(args), list(args)]
        at[0][j], at[1][j] = up, down
        out[(...,) + index] = (gradient(*at[0]) - gradient(*at[1])) / (2 * eps)
    return out


def test_hessian_forward_over_reverse():
    args = arguments(1)
    H = astgrad.hessian(loss_written, (0, 1, 2))(*args)
    for i in range(3):
        for j in range(3):
            np.testing.assert_allclose(H[i][j], hessian_by_differences(i, j, args), rtol=1e-5, atol=1e-6)


def test_hvp_and_jvp_of_the_gradient():
    args = arguments(1)
    v = RNG.standard_normal(args[1].shape)
    expected = np.tensordot(hessian_by_differences(1, 1, args), v, 2)
    np.testing.assert_allclose(astgrad.hvp(loss_written, 1)(*args, v), expected, rtol=1e-5, atol=1e-6)
    _, tangent = astgrad.jvp(astgrad.grad(loss_written, 1), 1)(*args, v)
    np.testing.assert_allclose(tangent, expected, rtol=1e-5, atol=1e-6)


def test_grad_of_grad_goes_forward_over_reverse():
    args = arguments(1)
    got = astgrad.grad(astgrad.grad(loss_written, 2), 2)(*args)
    assert np.isclose(got, hessian_by_differences(2, 2, args), rtol=1e-5, atol=1e-6)


def test_the_tape_agrees():
    torch = pytest.importorskip("astgrad.torch")
    func = sys.modules.get("astgrad.torch.func") or pytest.importorskip("astgrad.torch.func")
    X, W, s = arguments(0)
    tX, tW = torch.tensor(X, requires_grad=True), torch.tensor(W, requires_grad=True)

    def taped_layer(x, w):
        return torch.tanh(x @ w) * s + torch.sum(x ** 2) * s

    (func.vmap(taped_layer, in_dims=(0, None))(tX, tW) ** 2).sum().backward()
    got = astgrad.grad(loss_named, (0, 1))(X, W, s)
    np.testing.assert_allclose(got[0], tX.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got[1], tW.grad.numpy(), rtol=1e-10, atol=1e-12)


# -- a vmapped function calling a vmapped function ------------------------------------------------------------


def sine(x, w):
    return np.sin(x) * w


def inner_columns(xs, w):
    return astgrad.vmap(sine, in_axes=(1, None), out_axes=1)(xs, w)


def inner_pairs(xs, ws):
    return astgrad.vmap(sine, in_axes=(0, 0), out_axes=-1)(xs, ws)


def inner_shared_point(x, ws):
    return astgrad.vmap(sine, in_axes=(None, 0))(x, ws)


def outer_loop(fn, in_axes, args):
    size = next(np.shape(a)[axis] for a, axis in zip(args, in_axes) if axis is not None)
    return np.stack([fn(*(a if axis is None else np.take(a, i, axis=axis) for a, axis in zip(args, in_axes)))
                     for i in range(size)])


@pytest.mark.parametrize("fn,in_axes,shapes", [
    (inner_columns, (0, None), [(5, 3, 4), (3,)]),
    (inner_columns, (2, None), [(3, 4, 5), (3,)]),
    (inner_columns, (None, 0), [(3, 4), (5, 3)]),
    (inner_pairs, (0, 0), [(5, 4, 3), (5, 4, 3)]),
    (inner_pairs, (1, None), [(4, 5, 3), (4, 3)]),
    (inner_shared_point, (0, None), [(5, 3), (4, 3)]),
    (inner_shared_point, (None, 1), [(3,), (4, 5, 3)]),
])
def test_nested_vmap_matches_the_loop(fn, in_axes, shapes):
    args = [RNG.standard_normal(shape) for shape in shapes]
    got = astgrad.vmap(fn, in_axes=in_axes)(*args)
    expected = outer_loop(fn, in_axes, args)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def nested_loss(XX, w):
    return np.sum(astgrad.vmap(inner_columns, in_axes=(0, None))(XX, w) ** 2)


def nested_loss_looped(XX, w):
    return np.sum(np.stack([np.stack([sine(X[:, j], w) for j in range(X.shape[1])], axis=1) for X in XX]) ** 2)


def test_gradient_through_nested_vmaps():
    XX, w = RNG.standard_normal((5, 3, 4)), RNG.standard_normal(3)
    got = astgrad.grad(nested_loss, (0, 1))(XX, w)
    for k in range(2):
        np.testing.assert_allclose(got[k], numeric_grad(nested_loss_looped, (XX, w), k), rtol=1e-6, atol=1e-7)


# -- a vmapped function returning a tuple ------------------------------------------------------------------------


def returns_pair(x, w):
    return x * w, np.sin(x) * np.sum(w * w)


def unpacked_pair(X, w):
    a, b = astgrad.vmap(returns_pair, in_axes=(0, None))(X, w)
    return np.sum(a ** 2 + b)


def unpacked_pair_looped(X, w):
    items = [returns_pair(x, w) for x in X]
    return np.sum(np.stack([a for a, _ in items]) ** 2 + np.stack([b for _, b in items]))


def indexed_pair(X, w):
    return np.sum(astgrad.vmap(returns_pair, in_axes=(0, None), out_axes=1)(X, w)[1] * w[0])


def indexed_pair_looped(X, w):
    return np.sum(np.stack([returns_pair(x, w)[1] for x in X], axis=1) * w[0])


@pytest.mark.parametrize("loss,loop", [(unpacked_pair, unpacked_pair_looped), (indexed_pair, indexed_pair_looped)])
def test_gradient_jvp_and_hessian_through_a_vmapped_tuple(loss, loop):
    X, w = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
    got = astgrad.grad(loss, (0, 1))(X, w)
    for k, expected in enumerate(astgrad.grad(loop, (0, 1))(X, w)):
        np.testing.assert_allclose(got[k], expected, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(got[k], numeric_grad(loop, (X, w), k), rtol=1e-6, atol=1e-7)
    v = RNG.standard_normal(3)
    np.testing.assert_allclose(astgrad.jvp(loss, 1)(X, w, v)[1], directional(lambda u: loop(X, u), w, v),
                               rtol=1e-6, atol=1e-7)
    gradient = astgrad.grad(loop, 1)
    expected = np.stack([(gradient(X, w + 1e-6 * e) - gradient(X, w - 1e-6 * e)) / 2e-6 for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(astgrad.hessian(loss, 1)(X, w), expected, rtol=1e-5, atol=1e-6)


# -- per-example gradients of a function that calls a vmapped function ---------------------------------------------


def calls_rows(X, w):
    return np.sum(astgrad.vmap(sine, in_axes=(0, None))(X, w) ** 2)


def calls_columns(X, w):
    return np.sum(astgrad.vmap(sine, in_axes=(1, None), out_axes=1)(X, w) * X)


def calls_pairs(X, W):
    return np.sum(astgrad.vmap(sine, in_axes=(0, 0))(X, W) ** 3)


@pytest.mark.parametrize("loss,wrt,outer_axes,shapes", [
    (calls_rows, 1, (0, None), [(5, 4, 3), (3,)]),
    (calls_rows, 0, (None, 0), [(4, 3), (5, 3)]),
    (calls_columns, (0, 1), (2, None), [(3, 4, 5), (3,)]),
    (calls_pairs, (0, 1), (0, 0), [(5, 4, 3), (5, 4, 3)]),
    (calls_pairs, 1, (None, 1), [(4, 3), (4, 5, 3)]),
])
def test_per_example_gradients_through_a_vmapped_call_match_the_loop(loss, wrt, outer_axes, shapes):
    args = [RNG.standard_normal(shape) for shape in shapes]
    got = astgrad.vmap(astgrad.grad(loss, wrt), in_axes=outer_axes)(*args)
    gradient = astgrad.grad(loss, wrt)
    expected = outer_loop(gradient, outer_axes, args) if not isinstance(wrt, tuple) else tuple(
        outer_loop(lambda *a, k=k: gradient(*a)[k], outer_axes, args) for k in range(len(wrt)))
    for g, e in zip(got if isinstance(wrt, tuple) else (got,), expected if isinstance(wrt, tuple) else (expected,)):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-10, atol=1e-12)
    example = [a if axis is None else np.take(a, 0, axis=axis) for a, axis in zip(args, outer_axes)]
    first = wrt[0] if isinstance(wrt, tuple) else wrt
    np.testing.assert_allclose((got[0] if isinstance(wrt, tuple) else got)[0],
                               numeric_grad(loss, example, first), rtol=1e-6, atol=1e-7)
