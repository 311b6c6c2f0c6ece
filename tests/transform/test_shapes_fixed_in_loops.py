"""A value saved in a loop only for its shape is not saved when that shape cannot change from trip to trip;
a gradient between numbers is not un-broadcast.

``t5 = xs[t] @ Wx`` has one shape on every trip (passes/fixed_shapes.py),
so the adjoint reads the last value's shape instead of popping one per
trip.  Every program here has a loop whose adjoint reads shapes; in the
adversarial ones the shape does change (a slice that shrinks, an array
that grows, a reduction, a broadcast that widens on the first trip, a name
rebound in one branch, an alias), and the gradient must still be the
derivative: each is checked against central differences at every level.
Numbers meet arrays too (passes/number_unbroadcasts.py drops
``unbroadcast`` only where both sides are surely of rank 0).
What is saved is pinned by tests/golden/specialised_rnn.py.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(11)


def rnn(W, xs, h0):
    h = h0
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W + h)
    return np.sum(h ** 2)


def widening(W, xs, h0):
    h = h0  # 1-d: the first trip broadcasts it to xs[t] @ W's 2-d shape
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] @ W + h * 0.5)
    return np.sum(h ** 2)


def shrinking(x, c):
    total = 0.0
    while x.size > 1:
        z = x * c
        total = total + np.sum(z * x)
        x = x[1:]
    return total


def growing(x, w):
    s = 0.0
    for i in range(3):
        x = np.concatenate([x, np.sin(x[-1:])])
        s = s + np.sum((x + w) ** 2)
    return s


def reducing(x, b):
    total = 0.0
    while np.ndim(x) > 0:
        total = total + np.sum(np.sin(x) * b)
        x = np.sum(x, axis=0)
    return total


def one_branch(x, b):
    s = 0.0
    for i in range(4):
        y = x * 2.0
        if i % 2 == 1:
            y = y[:, None] * x
        s = s + np.sum((y + b) ** 2)
    return s


def alias(x, w):
    a = x
    s = 0.0
    for i in range(3):
        t = a * w
        s = s + np.sum(t * t)
        a = t[1:]
        w = w[1:]
    return s


def counter_slice(x, b):
    s = 0.0
    for i in range(4):
        t = x[i:] + b
        s = s + np.sum(t ** 2)
    return s


def mask(x, c):
    s = 0.0
    for i in range(3):
        t = x[x > c * i] + c
        s = s + np.sum(t ** 2)
    return s


def int_index(x, w, k):
    s = 0.0
    for i in range(3):
        t = x[k] * w + x[i]
        s = s + np.sum(np.sin(t))
    return s


def pendulum(length, theta):
    omega = 0.0
    for i in range(20):
        omega = omega - 0.1 * (9.81 / length * np.sin(theta) + 0.3 * omega)
        theta = theta + 0.1 * omega
    return theta ** 2 + 0.1 * omega ** 2


def scalar_meets_array(a, v):
    s = 0.0
    for i in range(3):
        a = a * 0.9 + 0.1
        s = s + np.sum(a * v) + a * a  # a's gradient from an array's: summed back to a number
    return s


def scalar_becomes_array(a, v):
    for i in range(3):
        a = np.sin(a) + 0.5 * a  # a number on the first trip, v's shape after it
        a = a * v if i == 1 else a
    return np.sum(a * a)


def leapfrog(vel0, pos0, mass):
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / mass  # bound before the loop and in it: the broadcast of the same two shapes each time
    for _ in range(4):
        vel += 0.05 * acc
        pos += 0.1 * vel
        acc = -pos / mass
        vel += 0.05 * acc
    return np.sum(pos * vel) + np.sum(vel ** 2)


def number_grows(w, x):
    h = 0.0  # a number: ``h += ...`` rebinds it to the array on the first trip
    for i in range(3):
        h += w * x
        h = np.sin(h)
    return np.sum(h ** 2)


def product_widens(h0, w):
    h = h0  # (3,), and h * w is (2, 3): h's shape changes on the first trip
    for i in range(3):
        h = np.sin(h * w)
    return np.sum(h ** 2)


def other_divisor(p, m):
    acc = p / m  # (3,) here, (3, 3) in the loop: the same operands, one of them widened
    s = 0.0
    for i in range(3):
        s = s + np.sum(np.cos(acc) * p)
        acc = p / m[:, None] * 0.5
    return s + np.sum(acc)


def single_precision(v0, a):
    v = v0.astype(np.float32).copy()  # v += float64 is cast back to float32 on every trip
    for i in range(3):
        v += 0.5 * a * v
    return np.sum(v * a)


PROGRAMS = {
    "rnn": (rnn, lambda: (RNG.standard_normal((3, 4)) * 0.5, RNG.standard_normal((5, 2, 3)), np.zeros((2, 4)))),
    "widening": (widening, lambda: (RNG.standard_normal((3, 4)) * 0.5, RNG.standard_normal((4, 2, 3)),
                                    RNG.standard_normal(4) * 0.3)),
    "shrinking": (shrinking, lambda: (RNG.standard_normal(5), 1.3)),
    "growing": (growing, lambda: (RNG.standard_normal(4), 0.7)),
    "reducing": (reducing, lambda: (RNG.standard_normal((3, 2, 2)), 0.9)),
    "one_branch": (one_branch, lambda: (RNG.standard_normal(3), RNG.standard_normal(3))),
    "alias": (alias, lambda: (RNG.standard_normal(5), RNG.standard_normal(5))),
    "counter_slice": (counter_slice, lambda: (RNG.standard_normal(6), 0.4)),
    "mask": (mask, lambda: (RNG.standard_normal(8), 0.2)),
    "pendulum": (pendulum, lambda: (1.3, 0.4)),
    "scalar_meets_array": (scalar_meets_array, lambda: (0.7, RNG.standard_normal(4))),
    "scalar_becomes_array": (scalar_becomes_array, lambda: (0.7, RNG.standard_normal(4))),
    "int_index": (int_index, lambda: (RNG.standard_normal((4, 3)), RNG.standard_normal(3), 2)),
    "leapfrog": (leapfrog, lambda: (RNG.standard_normal(4), RNG.standard_normal(4), RNG.uniform(1, 2, 4))),
    "number_grows": (number_grows, lambda: (RNG.standard_normal(3), RNG.standard_normal(3))),
    "product_widens": (product_widens, lambda: (RNG.standard_normal(3), RNG.standard_normal((2, 3)))),
    "other_divisor": (other_divisor, lambda: (RNG.standard_normal(3), RNG.uniform(1, 2, 3))),
}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_gradient_matches_central_differences(name, level):
    fn, make = PROGRAMS[name]
    args = make()
    wrt = (0, 1)
    got = astgrad.grad(fn, wrt=wrt, optimize=level)(*args)
    for index, value in zip(wrt, got):
        def at(v, index=index):
            trial = list(args)
            trial[index] = v
            return fn(*trial)
        expected = gradient(at, args[index])
        assert np.shape(value) == np.shape(expected)
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
def test_augmented_assignment_that_casts_back_to_single_precision(level):
    """``v += 0.5 * a * v`` on float32 ``v``: numpy casts each step's result back; its shape and gradient hold."""
    args = (RNG.standard_normal(3), RNG.standard_normal(3))
    got = astgrad.grad(single_precision, wrt=(0, 1), optimize=level)(*args)
    for index, value in enumerate(got):
        def at(v, index=index):
            trial = list(args)
            trial[index] = v
            return single_precision(*trial)
        np.testing.assert_allclose(value, gradient(at, args[index], eps=1e-3), rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("level", LEVELS)
def test_a_second_call_with_other_shapes_gets_their_gradient(level):
    """The shape read is the call's own: a gradient reused for arrays of other sizes (same ranks) is right."""
    g = astgrad.grad(rnn, wrt=0, optimize=level)
    for steps, batch in ((2, 3), (5, 1), (0, 2)):
        args = (RNG.standard_normal((3, 4)) * 0.5, RNG.standard_normal((steps, batch, 3)), np.zeros((batch, 4)))
        expected = gradient(lambda W: rnn(W, *args[1:]), args[0])
        np.testing.assert_allclose(g(*args), expected, rtol=1e-5, atol=1e-6)



def aliases(x, y):
    a = x
    b = a
    for i in range(2):
        b = np.sin(b) * y
    return np.sum(b)


def alias_read_twice(x, y):
    a = x
    return np.sum(a * 2.0) + np.sum(np.cos(a) * y)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("fn", [aliases, alias_read_twice])
def test_gradients_that_are_copies_of_one_value(fn, level):
    """``db = ...; dx = db; return dx`` named ``dx`` throughout (through a loop too) changes no value."""
    args = (RNG.standard_normal(3), RNG.standard_normal(3))
    got = astgrad.grad(fn, wrt=(0, 1), optimize=level)(*args)
    for index, value in enumerate(got):
        def at(v, index=index):
            trial = list(args)
            trial[index] = v
            return fn(*trial)
        np.testing.assert_allclose(value, gradient(at, args[index]), rtol=1e-6, atol=1e-7)
