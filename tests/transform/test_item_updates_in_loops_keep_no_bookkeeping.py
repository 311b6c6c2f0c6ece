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


def _check(f, pairs, level):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks and kinds
        got = g(LOG_K.copy(), C0.copy(), pairs)
        np.testing.assert_allclose(got[0], gradient(lambda x: f(x, C0.copy(), pairs), LOG_K.copy()), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], gradient(lambda x: f(LOG_K.copy(), x, pairs), C0.copy()), rtol=1e-6, atol=1e-8)
    return g


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [reactions, rows, counted, growing], ids=lambda f: f.__name__)
def test_gradients_match_differences(f, level):
    _check(f, PAIRS, level)


def test_the_reaction_loop_keeps_no_bookkeeping():
    source = _check(reactions, PAIRS, 2).source
    inner = source[source.index("for i in range"):source.index("rates = t")]
    assert "in_place" not in source and "array_kind" not in source
    assert "only_shape" not in inner and "only_shape(rates)" not in source
    loop = source[source.index("for i in reversed"):]
    assert "dt6 = dt13 * t10" in loop and "dt8 = dt6 * t7" in loop  # c[pairs[i, 0]] is a number: no unbroadcast


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
