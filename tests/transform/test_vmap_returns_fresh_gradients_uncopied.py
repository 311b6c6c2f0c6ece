"""vmap(grad(f)) returns a per-example gradient the generated code made as it is, without copying it, where
nothing else holds it (values.returned.handed_over); anything shared (an argument, a global, a view, another
gradient) is still copied, so a returned gradient never shares memory with anything the caller has."""

import numpy as np
import pytest

import astgrad
import astgrad.api.batched as batched
from astgrad.values import returned

RNG = np.random.default_rng(0)
X = RNG.standard_normal((5, 3))
Y = RNG.standard_normal((5, 3))
W = RNG.standard_normal((3, 4))
G = RNG.standard_normal(3)


def mlp(W, x):
    return np.sum(np.tanh(x @ W) ** 2)


def product(x, y):
    return np.sum(x * y)


def with_global(x):
    return np.sum(x * G)


def linear(w, x):
    return x @ w


def total(x):
    return np.sum(x)


def test_a_lone_array_is_handed_over_and_anything_held_elsewhere_is_not():
    kept = np.ones(3)
    based = np.ones((2, 3))
    viewed = np.ones(3)
    view = viewed[1:]
    frozen = np.ones(3)
    frozen.flags.writeable = False
    pairs = returned.handed_over([np.ones(3), kept, based[0], viewed, frozen, 1.0, [np.ones(2)]])
    assert [sole for _, sole in pairs] == [True, False, False, False, False, False, False]
    assert view.base is viewed


def test_the_probe_counts_as_handed_over_reads():
    # a fresh array in a list only the caller holds: taken out, it is the only reference
    assert returned.handed_over([np.zeros(2)])[0][1]


@pytest.fixture
def seen(monkeypatch):
    calls = []
    finish = returned.finish_examples

    def spy(g, original, is_batched, size, sole=False):
        out = finish(g, original, is_batched, size, sole)
        calls.append(out is g)
        return out
    monkeypatch.setattr(batched, "finish_examples", spy)
    return calls


def _loop(f, wrt, in_axes, args):
    rows = []
    for i in range(len(X)):
        example = [a[i] if axis == 0 else a for a, axis in zip(args, in_axes)]
        rows.append(astgrad.grad(f, wrt=wrt)(*example))
    return [np.stack([r[k] for r in rows]) for k in range(len(wrt))]


@pytest.mark.parametrize("f, wrt, in_axes, args", [
    (mlp, (0,), (None, 0), (W, X)),
    (product, (0, 1), (0, 0), (X, Y)),
    (with_global, (0,), (0,), (X,)),
    (linear, (0, 1), (None, 0), (G, X)),
    (total, (0,), (0,), (X,)),
], ids=["mlp", "product", "with_global", "linear", "total"])
def test_returned_gradients_share_memory_with_nothing_and_match_a_loop(seen, f, wrt, in_axes, args):
    before = [a.copy() for a in args]
    out = astgrad.vmap(astgrad.grad(f, wrt=wrt), in_axes=in_axes)(*args)
    for got, want in zip(out, _loop(f, wrt, in_axes, args)):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
    for k, g in enumerate(out):
        others = [a for a in (*args, G, W) if isinstance(a, np.ndarray)] + [o for j, o in enumerate(out) if j != k]
        assert not any(np.shares_memory(g, o) for o in others)
        g[...] = 7.0  # writing into a returned gradient changes nothing the caller had
    for a, b in zip(args, before):
        np.testing.assert_array_equal(a, b)
    if f is mlp:
        assert seen == [True]  # the (5, 3, 4) weight gradient came back uncopied


def test_one_array_returned_for_two_gradients_is_never_handed_over():
    def twice(box):
        value = box.pop()
        pairs = returned.handed_over([value, value])
        return pairs
    a = np.ones(3)
    pairs = twice([a])
    assert [sole for _, sole in pairs] == [False, False]  # `a` is still held here
    fresh = returned.handed_over([np.ones(3)] * 2)
    assert [sole for _, sole in fresh] == [False, False]  # the list, then the first pair, still hold it
