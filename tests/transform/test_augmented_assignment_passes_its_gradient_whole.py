"""``x op= v``'s gradient reaches ``x op v`` without un-broadcasting (front/ranks.py ``keeps_shape``).

The normal form writes ``x += v`` as ``t = x + v; x = in_place(t, array_kind(x), '+')``.
``in_place`` returns ``t`` itself, or ``t`` cast to ``x``'s dtype where it
has ``x``'s shape, or raises numpy's error: so ``t``'s gradient is ``x``'s
after the write, whatever the ranks, and the adjoint's
``unbroadcast(dx, shape(t))`` is the identity.  Where that would not hold
the gradient must still be right or the call must raise as numpy does: a
number ``x`` rebound to an array, a value that would grow ``x``, float32
meeting float64, an int array, a view argument. Each is checked against
central differences at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(7)
V = RNG.standard_normal(5)
P = RNG.standard_normal(5)
MASS = RNG.uniform(0.5, 2.0, 5)


def verlet(vel0, pos0):
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / MASS
    for _ in range(4):
        vel += 0.025 * acc
        pos += 0.05 * vel
        acc = -pos / MASS
        vel += 0.025 * acc
    return np.sum(pos * vel) + np.sum(vel ** 2)


def number_made_array(x):
    total = 0.0
    for i in range(3):
        total += x * i  # a number: += rebinds it to the array
    return np.sum(total ** 2)


def row_broadcast_into(x):
    acc = np.zeros((2, 5))
    for _ in range(2):
        acc += x * x  # x of (5,) broadcast into (2, 5): x's gradient is summed back, the write's is not
    return np.sum(acc * acc)


def float32_state(x):
    y = np.zeros(5, dtype=np.float32)
    for _ in range(3):
        y += 0.5 * x  # float32 += float64: cast back to float32 each step
    return float(np.sum(y ** 2))


def view_argument(x):
    y = x[1:]
    z = y * 1.0
    for _ in range(3):
        z += 0.5 * y
    return np.sum(z ** 2)


@pytest.mark.parametrize("level", LEVELS)
def test_verlet_with_augmented_assignments(level):
    got = astgrad.grad(verlet, wrt=(0, 1), optimize=level)(V.copy(), P.copy())
    np.testing.assert_allclose(got[0], gradient(lambda v: verlet(v, P.copy()), V.copy()), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], gradient(lambda p: verlet(V.copy(), p), P.copy()), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [number_made_array, row_broadcast_into, view_argument], ids=lambda f: f.__name__)
def test_where_the_shape_is_not_the_argument_s(f, level):
    got = astgrad.grad(f, optimize=level)(V.copy())
    np.testing.assert_allclose(got, gradient(f, V.copy()), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_float32_meeting_float64(level):
    got = astgrad.grad(float32_state, optimize=level)(V.copy())
    np.testing.assert_allclose(got, gradient(float32_state, V.copy(), eps=1e-3), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("level", LEVELS)
def test_a_value_that_would_grow_the_array_raises_as_numpy_does(level):
    def grows(x):
        y = x[:1] * 1.0
        y += x  # (1,) += (5,): numpy refuses
        return np.sum(y)

    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        grows(V.copy())
    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        astgrad.grad(grows, optimize=level)(V.copy())


@pytest.mark.parametrize("level", LEVELS)
def test_an_int_array_takes_a_float_as_numpy_does(level):
    def into_ints(x, k):
        j = k.copy()
        j += x  # an int array += floats: numpy's casting error
        return np.sum(j)

    with pytest.raises(TypeError, match="Cannot cast"):
        astgrad.grad(into_ints, optimize=level)(V.copy(), np.arange(5))


def test_the_verlet_adjoint_un_broadcasts_no_augmented_value():
    g = astgrad.grad(verlet, wrt=(0, 1))
    g(V.copy(), P.copy())
    assert "unbroadcast(dvel0, shape(" not in g.source and "unbroadcast(dpos0, shape(" not in g.source
