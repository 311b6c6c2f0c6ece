"""Layers as objects: methods calling methods, weights read as attributes, differentiated as written.

``self.layer1.forward(X)`` calls the function the class of ``self.layer1``
holds; astgrad knows it where the receiver says its class (``self`` in a
method, what ``__init__`` stores in ``self.layer1``, a global object) and
checks, where the call runs, that the function that runs is that one.
The references: each layer's ``backward`` written by hand, central finite
differences, and the tape's ``backward()``.
"""

import dataclasses

import numpy as np
import pytest

import astgrad
from tests._numeric import gradient

RNG = np.random.default_rng(2)


class Dense:
    def __init__(self, W, b):
        self.W = W
        self.b = b

    def forward(self, x):
        return x @ self.W + self.b

    def backward(self, x, dout):
        """By hand: (dW, db, dx)."""
        return x.T @ dout, dout.sum(axis=0), dout @ self.W.T


class ReLU:
    def forward(self, x):
        return np.maximum(x, 0.0)

    def backward(self, x, dout):
        return dout * (x > 0)


class TwoLayerNet:
    def __init__(self, W1, b1, W2, b2):
        self.layer1 = Dense(W1, b1)
        self.activation = ReLU()
        self.layer2 = Dense(W2, b2)

    def scores(self, X):
        h = self.layer1.forward(X)
        return self.layer2.forward(self.activation.forward(h))

    def loss(self, X, y):
        return np.mean((self.scores(X) - y) ** 2)

    def backward(self, X, y):
        """By hand, through each layer's backward: (dW1, db1, dW2, db2, dX)."""
        h = self.layer1.forward(X)
        a = self.activation.forward(h)
        scores = self.layer2.forward(a)
        dscores = 2.0 * (scores - y) / scores.size
        dW2, db2, da = self.layer2.backward(a, dscores)
        dW1, db1, dX = self.layer1.backward(X, self.activation.backward(h, da))
        return dW1, db1, dW2, db2, dX


def _net_children(net):
    return (net.layer1, net.activation, net.layer2), None


def _net(aux, children):
    net = TwoLayerNet.__new__(TwoLayerNet)
    net.layer1, net.activation, net.layer2 = children
    return net


astgrad.register_pytree(Dense, lambda d: ((d.W, d.b), None), lambda aux, children: Dense(*children))
astgrad.register_pytree(ReLU, lambda r: ((), None), lambda aux, children: ReLU())
astgrad.register_pytree(TwoLayerNet, _net_children, _net)


def _problem():
    net = TwoLayerNet(RNG.normal(size=(3, 5)), RNG.normal(size=5), RNG.normal(size=(5, 2)), RNG.normal(size=2))
    return net, RNG.normal(size=(6, 3)), RNG.normal(size=(6, 2))


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_a_bound_loss_method_through_layer_objects_against_the_hand_written_backward(optimize):
    net, X, y = _problem()
    dX = astgrad.grad(net.loss, optimize=optimize)(X, y)
    np.testing.assert_allclose(dX, net.backward(X, y)[4], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dX, gradient(lambda v: net.loss(v, y), X), rtol=1e-6, atol=1e-8)


def test_the_network_object_as_the_argument_gets_its_gradient_in_its_structure():
    net, X, y = _problem()
    got = astgrad.grad(TwoLayerNet.loss)(net, X, y)
    dW1, db1, dW2, db2, _ = net.backward(X, y)
    assert type(got) is TwoLayerNet and type(got.layer1) is Dense and type(got.activation) is ReLU
    for value, expected in ((got.layer1.W, dW1), (got.layer1.b, db1), (got.layer2.W, dW2), (got.layer2.b, db2)):
        np.testing.assert_allclose(value, expected, rtol=1e-10, atol=1e-12)
    W = net.layer2.W
    np.testing.assert_allclose(got.layer2.W, gradient(lambda v: _with(net, v).loss(X, y), W), rtol=1e-6, atol=1e-8)


def _with(net, W2):
    return TwoLayerNet(net.layer1.W, net.layer1.b, W2, net.layer2.b)


def test_the_tape_runs_the_same_methods_on_tensors():
    net, X, y = _problem()
    taped = TwoLayerNet(*(astgrad.tensor(v, requires_grad=True) for v in
                          (net.layer1.W, net.layer1.b, net.layer2.W, net.layer2.b)))
    taped.loss(astgrad.tensor(X), astgrad.tensor(y)).backward()
    got = astgrad.grad(TwoLayerNet.loss)(net, X, y)
    np.testing.assert_allclose(taped.layer1.W.grad.numpy(), got.layer1.W, rtol=1e-10)
    np.testing.assert_allclose(taped.layer2.b.grad.numpy(), got.layer2.b, rtol=1e-10)


class Scaled(Dense):
    def forward(self, x):
        return 3.0 * (x @ self.W) + self.b


def test_the_method_that_runs_is_the_one_differentiated_or_the_call_is_refused():
    net, X, y = _problem()
    loss = astgrad.grad(net.loss)
    loss(X, y)
    net.layer2 = Scaled(net.layer2.W, net.layer2.b)  # a subclass overriding forward
    with pytest.raises(TypeError, match="calls Scaled.forward here") as info:
        loss(X, y)
    assert any("self.layer2.forward(" in note for note in info.value.__notes__)
    net.layer2 = Dense(net.layer2.W, net.layer2.b)
    net.layer2.forward = lambda x: x @ net.layer2.W  # a function stored on the instance
    with pytest.raises(TypeError, match="the gradient was made for Dense.forward"):
        loss(X, y)


def test_a_method_replaced_on_its_class_is_transformed_again():
    net, X, y = _problem()
    grad = astgrad.grad(net.loss)
    before = grad(X, y)
    original = ReLU.forward
    try:
        ReLU.forward = lambda self, x: np.tanh(x)
        after = grad(X, y)
        np.testing.assert_allclose(after, gradient(lambda v: net.loss(v, y), X), rtol=1e-6, atol=1e-8)
        assert not np.allclose(before, after)
    finally:
        ReLU.forward = original


model = Dense(RNG.normal(size=(3, 2)), RNG.normal(size=2))


def uses_a_global_model(x):
    return np.sum(np.tanh(model.forward(x)))


def test_a_global_objects_method():
    x = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(astgrad.grad(uses_a_global_model)(x), gradient(uses_a_global_model, x), rtol=1e-6)


def test_a_receiver_whose_class_is_unknown_is_refused_with_the_form_that_works():
    def loss(layer, x):
        return np.sum(layer.forward(x))

    with pytest.raises(astgrad.TransformError, match=r"Dense.forward|TheClass.forward\(layer, ...\)"):
        astgrad.grad(loss, wrt=1)

    def explicit(layer, x):
        return np.sum(np.tanh(Dense.forward(layer, x)))
    x = RNG.normal(size=(4, 3))
    np.testing.assert_allclose(astgrad.grad(explicit, wrt=1)(model, x), gradient(lambda v: explicit(model, v), x),
                               rtol=1e-6)


def test_forward_mode_and_hessian_vector_products_through_the_methods():
    net, X, y = _problem()
    v = RNG.normal(size=X.shape)
    _, tangent = astgrad.jvp(net.loss)(X, y, v)
    np.testing.assert_allclose(tangent, np.sum(net.backward(X, y)[4] * v), rtol=1e-10)
    direction = astgrad.tree_map(lambda a: RNG.normal(size=np.shape(a)), net)
    hv = astgrad.hvp(TwoLayerNet.loss)(net, X, y, direction)
    step = 1e-5

    def moved(sign):
        leaves, structure = astgrad.tree_flatten(net)
        along = astgrad.tree_flatten(direction)[0]
        return astgrad.tree_unflatten(structure, [a + sign * step * d for a, d in zip(leaves, along)])
    up = astgrad.grad(TwoLayerNet.loss)(moved(1.0), X, y)
    down = astgrad.grad(TwoLayerNet.loss)(moved(-1.0), X, y)
    for got, a, b in zip(astgrad.tree_flatten(hv)[0], astgrad.tree_flatten(up)[0], astgrad.tree_flatten(down)[0]):
        np.testing.assert_allclose(got, (a - b) / (2 * step), rtol=1e-5, atol=1e-7)


@dataclasses.dataclass
class Regression:
    layer: Dense  # the field's class: self.layer.forward(x) is Dense.forward
    bias: float

    def predict(self, x):
        return self.layer.forward(x) + self.bias


def regression_loss(model: Regression, x, y):  # the annotation: model.predict(x) is Regression.predict
    return np.mean((model.predict(x) - y) ** 2)


def test_annotated_parameters_and_dataclass_fields_say_the_class():
    model = Regression(Dense(RNG.normal(size=(3, 2)), RNG.normal(size=2)), 0.3)
    x, y = RNG.normal(size=(5, 3)), RNG.normal(size=(5, 2))
    got = astgrad.grad(regression_loss)(model, x, y)
    assert type(got) is Regression and type(got.layer) is Dense
    dout = 2.0 * (model.predict(x) - y) / y.size
    dW, db, _ = model.layer.backward(x, dout)
    np.testing.assert_allclose(got.layer.W, dW, rtol=1e-10)
    np.testing.assert_allclose(got.layer.b, db, rtol=1e-10)
    np.testing.assert_allclose(got.bias, dout.sum(), rtol=1e-10)
    model.layer = Scaled(model.layer.W, model.layer.b)  # not what the field says: refused where it runs
    with pytest.raises(TypeError, match="calls Scaled.forward here"):
        astgrad.grad(regression_loss)(model, x, y)
