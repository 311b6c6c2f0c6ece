"""Named tuples, dataclasses and registered classes as ``wrt`` arguments: fields read as attributes.

The gradient comes back as an object of the argument's class whose fields
are the fields' gradients; a field that carries none (a string, a Python
int) keeps its value.  The reference is central finite differences on each
field (tests/_numeric.tree_gradient), and for the network a backward pass
written by hand.
"""

import dataclasses
from collections import namedtuple

import numpy as np
import pytest

import astgrad
from tests._numeric import directional, tree_gradient

RNG = np.random.default_rng(30)


@dataclasses.dataclass
class Dense:
    W: np.ndarray
    b: np.ndarray
    activation: str = "tanh"
    scale: int = 2


@dataclasses.dataclass(frozen=True)
class Frozen:
    W: np.ndarray
    T: np.ndarray  # a field named T: the field, never a transpose


@dataclasses.dataclass(slots=True)
class Slotted:
    w: np.ndarray
    c: float


@dataclasses.dataclass
class Model:
    params: dict
    first: Dense


Pair = namedtuple("Pair", "w b")


class Registered:
    """A class of its own: its children are (w, b); ``size`` goes through aux."""

    def __init__(self, w, b, size):
        self.w, self.b, self.size = w, b, size

    @property
    def weights(self):  # returns a child: its gradient goes to w
        return self.w

    @property
    def doubled(self):  # computes: no child to give its gradient to
        return 2.0 * self.w


astgrad.register_pytree(Registered, lambda r: ((r.w, r.b), r.size), lambda size, children: Registered(*children, size))


def dense(layer, x):
    h = x @ layer.W + layer.b
    if layer.activation == "tanh":
        return np.tanh(h) * layer.scale
    return h


def mlp(layers, x):
    h = x
    for layer in layers:
        h = dense(layer, h)
    return np.sum(h ** 2)


def _close(got, expected):
    """Field by field: arrays and numbers compared, anything else equal."""
    if dataclasses.is_dataclass(expected):
        assert type(got) is type(expected)
        for f in dataclasses.fields(expected):
            _close(getattr(got, f.name), getattr(expected, f.name))
    elif isinstance(expected, dict):
        assert type(got) is dict and list(got) == list(expected)
        for k in expected:
            _close(got[k], expected[k])
    elif isinstance(expected, (list, tuple)):
        assert type(got) is type(expected) and len(got) == len(expected)
        for a, b in zip(got, expected):
            _close(a, b)
    elif expected is None:
        assert got is None
    elif isinstance(expected, (str, int)) and not isinstance(expected, bool):
        assert got == expected and type(got) is type(expected)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)


def _layers():
    return [Dense(RNG.normal(size=(3, 4)), RNG.normal(size=4)),
            Dense(RNG.normal(size=(4, 2)), RNG.normal(size=2), activation="identity", scale=5)]


def test_a_list_of_dataclass_layers_through_a_called_function_against_a_hand_written_backward():
    layers, x = _layers(), RNG.normal(size=(5, 3))
    got = astgrad.grad(mlp)(layers, x)
    # by hand: h1 = 2 tanh(x W1 + b1), out = h1 W2 + b2 (identity), loss = sum(out ** 2)
    (l1, l2) = layers
    a1 = np.tanh(x @ l1.W + l1.b)
    h1 = 2 * a1
    out = h1 @ l2.W + l2.b
    dout = 2 * out
    dW2, db2 = h1.T @ dout, dout.sum(0)
    dpre1 = (dout @ l2.W.T) * 2 * (1 - a1 ** 2)
    dW1, db1 = x.T @ dpre1, dpre1.sum(0)
    expected = [Dense(dW1, db1, "tanh", 2), Dense(dW2, db2, "identity", 5)]
    _close(got, expected)
    _close(got, tree_gradient(lambda t: mlp(t, x), layers))


def test_named_tuple_fields_positions_and_unpacking_add_up():
    def f(p):
        w, b = p
        return np.sum(p.w * w * p[1] * np.sin(b))
    p = Pair(RNG.normal(size=3), RNG.normal(size=3))
    got = astgrad.grad(f)(p)
    assert type(got) is Pair
    _close(got, tree_gradient(f, p))


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_frozen_slotted_and_nested_dataclasses(optimize):
    def f(frozen, slotted, model, x):
        y = np.sum(np.sin(x @ frozen.W) * frozen.T) + slotted.c * np.sum(slotted.w ** 3)
        return y + np.sum(model.params["V"] * dense(model.first, x)) * model.params["k"]
    frozen = Frozen(RNG.normal(size=(3, 2)), RNG.normal(size=(5, 2)))
    slotted = Slotted(RNG.normal(size=2), 0.7)
    model = Model({"V": RNG.normal(size=4), "k": 1.5, "name": "m"}, Dense(RNG.normal(size=(3, 4)), RNG.normal(size=4)))
    x = RNG.normal(size=(5, 3))
    got = astgrad.grad(f, wrt=(0, 1, 2), optimize=optimize)(frozen, slotted, model, x)
    _close(got[0], tree_gradient(lambda t: f(t, slotted, model, x), frozen))
    _close(got[1], tree_gradient(lambda t: f(frozen, t, model, x), slotted))
    _close(got[2], tree_gradient(lambda t: f(frozen, slotted, t, x), model))
    assert got[2].params["name"] is None  # a dict's string leaf: None, as before
    assert got[2].first.activation == "tanh" and got[2].first.scale == 2  # an object's: kept


def test_a_field_named_T_of_an_item_is_the_field_and_an_array_items_T_the_transpose():
    def f(items):
        return np.sum(items[0].T * items[1].T[0])
    items = [Frozen(RNG.normal(size=(2, 3)), RNG.normal(size=3)), RNG.normal(size=(3, 2))]
    got = astgrad.grad(f)(items)
    _close(got, tree_gradient(f, items))


def test_two_fields_holding_one_array_get_one_partial_each_and_two_arguments_one_object_each_theirs():
    a = RNG.normal(size=3)
    p = Pair(a, a)

    def f(p):
        return np.sum(p.w * p.b ** 2)
    _close(astgrad.grad(f)(p), Pair(a ** 2, 2 * a * a))

    def g(p, q):
        return np.sum(p.w * q.b ** 2)
    got = astgrad.grad(g, wrt=(0, 1))(p, p)
    _close(got, (Pair(a ** 2, 0 * a), Pair(0 * a, 2 * a * a)))


def test_a_registered_class_gets_its_gradient_through_unflatten_and_a_property_returning_a_child_counts():
    def f(r, x):
        return np.sum(np.tanh(r.weights * x + r.b) ** 2) * r.size
    r, x = Registered(RNG.normal(size=3), RNG.normal(size=3), 3), RNG.normal(size=3)
    got = astgrad.grad(f)(r, x)
    assert type(got) is Registered and got.size == 3
    eps_w = [directional(lambda t: f(Registered(r.w + t * e, r.b, 3), x), 0.0, 1.0) for e in np.eye(3)]
    eps_b = [directional(lambda t: f(Registered(r.w, r.b + t * e, 3), x), 0.0, 1.0) for e in np.eye(3)]
    np.testing.assert_allclose(got.w, eps_w, rtol=1e-6)
    np.testing.assert_allclose(got.b, eps_b, rtol=1e-6)


def test_what_is_no_child_is_refused_where_it_runs():
    def computed(r):
        return np.sum(r.doubled ** 2)

    class Looked:
        def __init__(self, d):
            self.d = d

        def __getattr__(self, key):
            return self.__dict__["d"][key]
    astgrad.register_pytree(Looked, lambda o: ([o.d], None), lambda aux, children: Looked(*children))

    def looked(o):
        return np.sum(o.w ** 2)

    class Unregistered(Registered):  # a subclass is not registered with its base
        pass

    def plain(r):
        return np.sum(r.w ** 2)
    cases = [(computed, Registered(np.ones(2), np.ones(2), 1), "not one of its children"),
             (looked, Looked({"w": np.ones(2)}), "not one of its children"),
             (plain, Unregistered(np.ones(2), np.ones(2), 1), "register it with astgrad.register_pytree")]
    for f, arg, message in cases:
        with pytest.raises(TypeError, match=message) as info:
            astgrad.grad(f)(arg)
        assert any(f.__code__.co_filename in note for note in getattr(info.value, "__notes__", []))


def test_indexing_or_unpacking_an_object_whose_children_are_not_its_items_is_refused():
    class Bag:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __getitem__(self, i):
            return (self.b, self.a)[i]  # the reverse of its children's order

        def __iter__(self):
            return iter((self.b, self.a))
    astgrad.register_pytree(Bag, lambda o: ((o.a, o.b), None), lambda aux, children: Bag(*children))

    def indexed(bag):
        return np.sum(bag[0] * 2 * bag.a)

    def unpacked(bag):
        first, second = bag
        return np.sum(first * 2 * second ** 2)
    for f in (indexed, unpacked):
        with pytest.raises(TypeError, match="read its parts as attributes"):
            astgrad.grad(f)(Bag(np.ones(2), 3 * np.ones(2)))


def test_an_attribute_of_an_array_is_pythons_error_located():
    def f(x):
        return np.sum(x.real_part)
    with pytest.raises(AttributeError, match="real_part") as info:
        astgrad.grad(f)(np.ones(3))
    assert any("return np.sum(x.real_part)" in note for note in info.value.__notes__)


def test_writing_a_field_of_the_argument_through_a_global_is_refused():
    shared = Dense(np.ones(3), np.zeros(3))

    def f(p):
        shared.W = shared.W * 2.0
        return np.sum(p.W)
    with pytest.raises(TypeError, match="`shared.W = ...` writes into the differentiated argument p"):
        astgrad.grad(f)(shared)


def test_tensors_inside_a_dataclass_come_back_as_tensors_equal_to_backward():
    layers, x = _layers(), RNG.normal(size=(5, 3))
    taped = [Dense(astgrad.tensor(layer.W, requires_grad=True), astgrad.tensor(layer.b, requires_grad=True),
                   layer.activation, layer.scale) for layer in layers]
    mlp(taped, astgrad.tensor(x)).backward()
    got = astgrad.grad(mlp)(taped, x)
    for g, t in zip(got, taped):
        assert isinstance(g.W, astgrad.Tensor)
        np.testing.assert_allclose(g.W.detach().numpy(), t.W.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(g.b.detach().numpy(), t.b.grad.numpy(), rtol=1e-12)


def test_forward_mode_hessian_and_check_grads_of_a_dataclass():
    def f(layer, x):
        return np.sum(np.tanh(x @ layer.W + layer.b) ** 2)
    layer, x = Dense(RNG.normal(size=(3, 2)), RNG.normal(size=2)), RNG.normal(size=(4, 3))
    v = Dense(RNG.normal(size=(3, 2)), RNG.normal(size=2))
    _, tangent = astgrad.jvp(f)(layer, x, v)
    along = directional(lambda t: f(Dense(layer.W + t * v.W, layer.b + t * v.b), x), 0.0, 1.0)
    np.testing.assert_allclose(tangent, along, rtol=1e-6)
    hv = astgrad.hvp(f)(layer, x, v)
    step = 1e-5
    up = astgrad.grad(f)(Dense(layer.W + step * v.W, layer.b + step * v.b), x)
    down = astgrad.grad(f)(Dense(layer.W - step * v.W, layer.b - step * v.b), x)
    np.testing.assert_allclose(hv.W, (up.W - down.W) / (2 * step), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(hv.b, (up.b - down.b) / (2 * step), rtol=1e-5, atol=1e-8)
    report = astgrad.check_grads(f, layer, x)
    assert report.ok and {row[0] for row in report.rows} == {"layer.W", "layer.b"}


def test_tree_utilities_round_trip_objects():
    model = Model({"V": np.ones(2), "k": 1.5}, Dense(np.ones((2, 2)), np.zeros(2)))
    found, structure = astgrad.tree_flatten(model)
    assert [type(v).__name__ for v in found] == ["ndarray", "float", "ndarray", "ndarray", "str", "int"]
    again = astgrad.tree_unflatten(structure, found)
    assert type(again) is Model and again.params["V"] is model.params["V"] and again.first.activation == "tanh"
    doubled = astgrad.tree_map(lambda v: v * 2, Registered(np.ones(2), 3.0, 7))
    assert type(doubled) is Registered and doubled.size == 7 and doubled.b == 6.0
    np.testing.assert_array_equal(doubled.w, [2.0, 2.0])
    with pytest.raises(ValueError, match="6 leaves"):
        astgrad.tree_unflatten(structure, found[:-1])
    assert astgrad.tree_flatten(Pair(1.0, 2.0))[1] != astgrad.tree_flatten((1.0, 2.0))[1]
    with pytest.raises(TypeError, match="container already"):
        astgrad.register_pytree(Dense, lambda o: ((), None), lambda a, c: None)


@dataclasses.dataclass(frozen=True)
class Checked:
    W: np.ndarray

    def __post_init__(self):  # would refuse a gradient's negative entries: the gradient never runs it
        if np.any(self.W < 0):
            raise ValueError("W must be nonnegative")


class Reversed:
    """Children in the other order than the attributes are written: (b, w)."""

    def __init__(self, w, b):
        self.w, self.b = w, b


astgrad.register_pytree(Reversed, lambda r: ((r.b, r.w), None), lambda aux, children: Reversed(children[1], children[0]))


def test_the_gradient_object_is_made_without_init_and_children_are_placed_by_identity():
    def f(c):
        return np.sum(np.sin(c.W) * 3.0)
    c = Checked(np.array([0.5, 2.0, 3.0]))
    got = astgrad.grad(f)(c)
    assert type(got) is Checked and np.any(got.W < 0)
    np.testing.assert_allclose(got.W, 3.0 * np.cos(c.W), rtol=1e-12)

    def g(r):
        return np.sum(r.w ** 2 * r.b)
    r = Reversed(RNG.normal(size=3), RNG.normal(size=3))
    got = astgrad.grad(g)(r)
    np.testing.assert_allclose(got.w, 2 * r.w * r.b, rtol=1e-12)
    np.testing.assert_allclose(got.b, r.w ** 2, rtol=1e-12)


def test_an_int_field_used_in_the_computation_is_passed_through_and_the_rest_exact():
    def f(layer, x):
        return np.sum(dense(layer, x)) * layer.scale
    layer, x = Dense(RNG.normal(size=(3, 2)), RNG.normal(size=2), scale=4), RNG.normal(size=(2, 3))
    got = astgrad.grad(f)(layer, x)
    assert got.scale == 4 and type(got.scale) is int
    _close(got, tree_gradient(lambda t: f(t, x), layer))
