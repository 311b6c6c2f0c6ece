"""``rates[i] += v`` in a loop, as a reaction network writes it: what is proven keeps no bookkeeping, the rest stays.

``np.zeros(len(k))`` has rank 1 and one shape in the call, an item write
keeps both, ``c[idx[i, 0]]`` drops an axis when ``idx`` holds integers
(told at call time), and an element of an array of floats is a numpy
number, which ``+=`` rebinds: the loop calls no ``array_kind``/``in_place``
and saves no shape of ``rates`` (front/ranks.py, passes/fixed_shapes.py,
passes/number_updates.py).  The adversarial programs look the same where a
proof fails (a row, not an element; an index array of booleans, which adds
an axis; a shape that changes): each is checked against central
differences, at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(32)
C0 = RNG.uniform(0.5, 1.5, 4)
LOG_K = 0.3 * RNG.standard_normal(5)
PAIRS = RNG.integers(0, 4, (5, 2))


def reactions(log_k, c0, pairs):
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(3):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
        c = c + 0.1 * (rates[:4] - rates[1:])
    return np.sum(c * c)


def rows(log_k, c0, pairs):
    """``acc[i] += ...`` on a row: a view numpy writes into (``in_place`` stays)."""
    acc = np.zeros((len(log_k), 2))
    for i in range(len(log_k)):
        acc[i] += np.exp(log_k[i]) * c0[pairs[i]]
    return np.sum(acc ** 2)


def counted(log_k, c0, pairs):
    """A Python int counter ``n += 1`` beside a float total."""
    n = 0
    total = 0.0
    for i in range(len(log_k)):
        n += 1
        total += n * log_k[i] * c0[pairs[i, 0]]
    return total


def growing(log_k, c0, pairs):
    """``np.zeros(n)`` of an ``n`` that changes from trip to trip: no one shape."""
    total = 0.0
    for n in range(1, 4):
        rates = np.zeros(n)
        for i in range(n):
            rates[i] += np.exp(log_k[i]) * c0[pairs[i, 0]]
        total = total + np.sum(rates * rates) * n
    return total


def repeated(log_k, c0, pairs):
    """``y[[0, 0, 1]] += v``: numpy keeps the last write at a repeated place (the read and the write cancel all the
    same: the gradient of y passes through)."""
    y = np.zeros(len(c0))
    y[:] = c0
    for i in range(2):
        y[[0, 0, 1]] += np.exp(log_k[:3]) * y[2]
    return np.sum(y * y)


def twice(log_k, c0, pairs):
    """``y[i] = y[i] + y[i] * v``: the item read twice."""
    y = np.zeros(len(c0))
    y[:] = c0
    for i in range(len(c0)):
        y[i] = y[i] + y[i] * log_k[i]
    return np.sum(y * y * y)


def elsewhere(log_k, c0, pairs):
    """``y[i] = y[i - 1] + v``, ``y[i] = z[i] + v``: the read is of another place or another array."""
    y = np.zeros(len(c0))
    y[:] = c0
    z = np.ones(len(c0))
    for i in range(1, len(c0)):
        y[i] = y[i - 1] + log_k[i]
        z[i] = y[i] + z[i - 1] * log_k[i]
    return np.sum(y * z)


def into_integers(log_k, c0, pairs):
    """``n[i] += v`` into an array of integers: numpy truncates what it writes, no gradient goes through."""
    n = np.zeros(len(c0), dtype=np.int64)
    total = 0.0
    for i in range(len(c0)):
        n[i] += 3.7 * c0[i]
        total = total + n[i] * log_k[i] + c0[i] * log_k[i]
    return total


def _check(f, pairs, level):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks and kinds
        got = g(LOG_K.copy(), C0.copy(), pairs)
        np.testing.assert_allclose(got[0], gradient(lambda x: f(x, C0.copy(), pairs), LOG_K.copy()), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], gradient(lambda x: f(LOG_K.copy(), x, pairs), C0.copy()), rtol=1e-6, atol=1e-8)
    return g


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [reactions, rows, counted, growing, repeated, twice, elsewhere, into_integers],
                         ids=lambda f: f.__name__)
def test_gradients_match_differences(f, level):
    _check(f, PAIRS, level)


def test_the_reaction_loop_keeps_no_bookkeeping():
    source = _check(reactions, PAIRS, 2).source
    inner = source[source.index("for i in range"):source.index("rates = t")]
    assert "in_place" not in source and "array_kind" not in source
    assert "only_shape" not in inner and "only_shape(rates)" not in source
    loop = source[source.index("for i in reversed"):]
    assert "setitem(" not in loop and "drates =" not in loop  # the write's zero and the read's add cancel (item_updates)
    assert "dt6 = dt13 * t10" in loop and "dt8 = dt6 * t7" in loop  # c[pairs[i, 0]] is a number: no unbroadcast


def test_the_read_and_the_write_of_an_item_cancel():
    """``y[i] = y[i] + y[i] * v`` into an array of floats: ``dy`` passes through (checked against differences
    above), the item's other gradient added into it."""
    source = _check(twice, PAIRS, 2).source
    loop = source[source.index("reversed"):]
    loop = loop[:loop.index("del ")]
    assert "setitem(d" not in loop and loop.count("_at(dy, ") == 1, loop


def test_a_row_is_written_in_place():
    assert "in_place(" in _check(rows, PAIRS, 2).source


def test_an_index_array_of_booleans_is_not_an_integer():
    """``c[flags[i, 0]]`` with booleans adds an axis (numpy reads True as a mask of one): after a call with
    integers, the same function called with booleans gets an adjoint of its own, and the right numbers."""
    _check(reactions_of_flags, PAIRS, 2)
    g = _check(reactions_of_flags, PAIRS > 1, 2)
    assert "integer pairs" not in g.source and "a 2-d pairs" in g.source.splitlines()[0]


def reactions_of_flags(log_k, c0, pairs):
    k = np.exp(log_k)
    total = 0.0
    for i in range(len(k)):
        total = total + np.sum(k[i] * c0[pairs[i, 0]] * c0[pairs[i, 1]])
    return total


def test_the_signature_says_which_arrays_hold_integers():
    g = astgrad.grad(reactions, wrt=(0, 1))
    g(LOG_K, C0, PAIRS)
    assert "a 2-d integer pairs" in g.source.splitlines()[0]
