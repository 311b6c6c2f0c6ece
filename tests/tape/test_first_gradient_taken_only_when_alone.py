"""A leaf's first gradient becomes its ``.grad`` without a copy only where nothing else holds that array.

PyTorch steals the buffer of a leaf's first gradient when nothing else
holds it; the tape does the same (engine ``_alone``: an array that owns its
memory, is writeable, and that no one else refers to).  A ``.grad`` that
shared memory with a seed, another leaf's ``.grad``, a gradient a hook kept
or a retained one would give a wrong number later without an error (the
next accumulation writes into both), so each such case is checked to get a
copy, with its numbers after a second backward.
"""

import sys

import numpy as np

import astgrad.torch as tape
from astgrad.tape import _engine

X = np.array([[0.3, -1.2], [2.0, 0.7]])


def _leaf(values=X):
    return tape.tensor(values.copy(), requires_grad=True)


def _wrapper_holds() -> int:
    """The references a Python function passing its argument on adds to it (two before Python 3.11's frames)."""
    a = np.empty(1)

    def direct(v):
        return sys.getrefcount(v)

    def wrapped(v):
        return direct(v)
    return wrapped(a) - direct(a)


def _taken(monkeypatch):
    """The answers ``_alone`` gives during the test (told of the wrapper's own references to the array)."""
    answers: list = []
    alone, holds = _engine._alone, _wrapper_holds()

    def recording(grad):
        answers.append(alone(grad, holders=holds))
        return answers[-1]
    monkeypatch.setattr(_engine, "_alone", recording)
    return answers


def test_the_tutorials_gradient_is_taken_without_a_copy(monkeypatch):
    answers = _taken(monkeypatch)
    x = _leaf()
    ((x + 2) * (x + 2) * 3).mean().backward()
    assert answers == [True]
    np.testing.assert_allclose(x.grad.numpy(), (X + 2) * 6 / 4)
    ((x + 2) * (x + 2) * 3).mean().backward()  # accumulated into the array it took
    np.testing.assert_allclose(x.grad.numpy(), (X + 2) * 12 / 4)


def test_a_seed_given_to_a_leaf_is_copied(monkeypatch):
    answers = _taken(monkeypatch)
    x = _leaf()
    seed = tape.tensor(np.ones((2, 2)))
    x.backward(seed)
    assert answers == [False] and not np.shares_memory(x.grad.numpy(), seed.numpy())
    x.backward(seed)
    np.testing.assert_array_equal(seed.numpy(), np.ones((2, 2)))
    np.testing.assert_array_equal(x.grad.numpy(), 2 * np.ones((2, 2)))


def test_a_seed_passed_through_unchanged_is_copied():
    x = _leaf()
    seed = tape.tensor(np.full((2, 2), 0.5))
    (x + 1).backward(seed)  # the rule of + returns the seed's array itself
    assert not np.shares_memory(x.grad.numpy(), seed.numpy())
    (x + 1).backward(seed)
    np.testing.assert_array_equal(seed.numpy(), np.full((2, 2), 0.5))
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 2)))


def test_one_array_for_two_leaves_is_copied_for_the_first(monkeypatch):
    answers = _taken(monkeypatch)
    x, y = _leaf(), _leaf(X * 2)
    (x + y).sum().backward()  # the rule of + gives both the same array: the second takes it once the first copied
    assert answers == [False, True]
    assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 4.0))
    np.testing.assert_array_equal(y.grad.numpy(), np.ones((2, 2)))


def test_a_gradient_a_hook_kept_or_a_retained_one_is_copied():
    x = _leaf()
    kept = []
    x.register_hook(lambda g: kept.append(g))
    (x * 2).sum().backward()
    assert not np.shares_memory(x.grad.numpy(), kept[0].numpy())
    x2 = _leaf()
    y = x2 + 0.5
    y.retain_grad()
    (y * 1).sum().backward()
    assert not np.shares_memory(x2.grad.numpy(), y.grad.numpy())
    (x * 2).sum().backward()
    np.testing.assert_array_equal(kept[0].numpy(), np.full((2, 2), 2.0))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((2, 2), 4.0))


def test_a_gradient_that_is_a_view_is_copied(monkeypatch):
    answers = _taken(monkeypatch)
    x = _leaf(np.arange(4.0))
    x.reshape(2, 2).sum().backward()  # reshape's rule gives a view of the gradient it was given
    assert answers == [False] or x.grad.numpy().base is None
    np.testing.assert_array_equal(x.grad.numpy(), np.ones(4))
