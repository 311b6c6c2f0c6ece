"""A reverse loop adds an item's gradient as ``d[i] += g`` where ``d`` is proven a float64 array; else as before.

passes/item_adds.py tests ``d`` once before the loop (a writeable float64
array of the shape ``add_at`` is given) and ``g``'s type on every trip,
where ``d`` is bound and read in the loop by its ``add_at`` statements
alone and the index is surely an integer.  The programs where that fails
(float32 arguments, a float32 gradient meeting float64 items, an index
array, the gradient read elsewhere in the loop, a view or a subclass given
as argument, a write into integers, a loop of no trip) are checked against
central differences, or against optimize=0 where float32 rounds, at every
level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(47)
C0 = RNG.uniform(0.5, 1.5, 4)
LOG_K = 0.3 * RNG.standard_normal(5)
PAIRS = RNG.integers(0, 4, (5, 2))


def network(log_k, c0, pairs):
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(3):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
        c = c + 0.1 * (rates[:4] - rates[1:])
    return np.sum(c * np.arange(len(c)))


def uncopied(log_k, c0, pairs):
    """``c`` is the argument itself until the first step rebinds it (a view given as argument, say)."""
    k = np.exp(log_k)
    c = c0
    for _ in range(2):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
        c = c + 0.1 * (rates[:4] - rates[1:])
    return np.sum(c * c)


def by_rows(log_k, c0, pairs):
    """``c[pairs[i]]``: an index array (a place may repeat), whose gradient ``add_at`` adds at both places."""
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(2):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * np.sum(c[pairs[i]] ** 2)
        c = c + 0.1 * (rates[:4] - rates[1:])
    return np.sum(c * np.arange(len(c)))


def read_whole(log_k, c0, pairs):
    """The loop also reads all of ``c`` (``np.sum(c)``): its gradient is added in the loop another way."""
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(2):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * np.sum(c)
        c = c + 0.1 * (rates[:4] - rates[1:])
    return np.sum(c * np.arange(len(c)))


def into_integers(log_k, c0, pairs):
    """``n[i] += v`` into integers (numpy truncates, no gradient goes through) beside a float item's."""
    k = np.exp(log_k)
    n = np.zeros(len(k), dtype=np.int64)
    total = 0.0
    for i in range(len(k)):
        n[i] += 3.7 * c0[pairs[i, 0]]
        total = total + n[i] * k[i] + c0[pairs[i, 1]] * k[i]
    return total


def no_trips(log_k, c0, pairs):
    """The reactions' loop of no trip, counted at run time: the test before it reads a gradient still 0.0."""
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(2):
        rates = np.zeros(len(k))
        for i in range(len(pairs) - len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
        c = c + 0.1 * (rates[:4] - rates[1:]) + c ** 2 * 0.01
    return np.sum(c * np.arange(len(c)))


def _check(f, level, log_k=LOG_K, c0=C0):
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks and kinds
        got = g(log_k.copy(), c0, PAIRS.copy())
        want0 = gradient(lambda x: f(x, c0.copy(), PAIRS.copy()), log_k.copy())
        want1 = gradient(lambda x: f(log_k.copy(), x, PAIRS.copy()), np.array(c0, dtype=np.float64))
        np.testing.assert_allclose(got[0], want0, rtol=2e-6, atol=1e-8)
        np.testing.assert_allclose(got[1], want1, rtol=2e-6, atol=1e-8)
    return g


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [network, uncopied, by_rows, read_whole, into_integers, no_trips],
                         ids=lambda f: f.__name__)
def test_gradients_match_differences(f, level):
    _check(f, level)


def _inner(source):
    loop = source[source.index("for _ in reversed"):]
    loop = loop[loop.index("for i in reversed"):loop.index("return")]
    return "\n".join(line for line in loop.splitlines() if not line.lstrip().startswith("#"))


def test_the_reaction_loop_adds_in_place_with_the_numbers_of_optimize_1():
    g = _check(network, 2)
    inner = _inner(g.source)
    assert inner.count("] += dt") == 3 and "adds_items(" in g.source
    low = astgrad.grad(network, wrt=(0, 1), optimize=1)(LOG_K, C0, PAIRS)
    for a, b in zip(g(LOG_K, C0, PAIRS), low):  # the same sums in the same order: the same bits
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("f", [by_rows, read_whole], ids=lambda f: f.__name__)
def test_an_index_array_or_a_gradient_read_elsewhere_keeps_the_call(f):
    source = _check(f, 2).source
    inner = _inner(source)
    assert "dc0 = add_at(dc0," in inner and "dc0[" not in inner  # dk's adds, at the counter i, are rewritten


@pytest.mark.parametrize("level", LEVELS)
def test_a_view_given_as_argument(level):
    view = RNG.uniform(0.5, 1.5, 8)[::2]
    _check(uncopied, level, c0=view)


@pytest.mark.parametrize("level", LEVELS)
def test_a_subclass_given_as_argument(level):
    class Marked(np.ndarray):
        pass
    _check(network, level, c0=C0.copy().view(Marked))


@pytest.mark.parametrize("level", (1, 2))
def test_float32_arguments_give_the_numbers_of_optimize_0(level):
    """float32 concentrations and rates: the gradients are float32 arrays, ``adds_items`` says no, add_at adds."""
    args = (LOG_K.astype(np.float32), C0.astype(np.float32), PAIRS)
    want = astgrad.grad(network, wrt=(0, 1), optimize=0)(*args)
    g = astgrad.grad(network, wrt=(0, 1), optimize=level)
    for _ in range(2):
        got = g(*args)
        for a, b in zip(got, want):
            assert a.dtype == b.dtype
            np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("level", LEVELS)
def test_a_float32_cotangent_meeting_float64_items(level):
    """A vjp whose seed is float32: the gradient of ``c`` starts float32, and float64 items added into it make
    it float64 (add_at upcasts, as numpy's sum would), where ``+=`` would round each sum to float32."""
    def states(log_k, c0, pairs):
        k = np.exp(log_k)
        c = c0.copy()
        for _ in range(2):
            rates = np.zeros(len(k))
            for i in range(len(k)):
                rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
            c = c + 0.1 * (rates[:4] - rates[1:])
        return c
    seed = np.array([0.3, -1.1, 2.0, 0.7], dtype=np.float32)
    got = astgrad.vjp(states, wrt=(0, 1), optimize=level)(LOG_K, C0, PAIRS, seed)
    want0 = gradient(lambda x: float(states(x, C0, PAIRS) @ seed.astype(np.float64)), LOG_K.copy())
    want1 = gradient(lambda x: float(states(LOG_K, x, PAIRS) @ seed.astype(np.float64)), C0.copy())
    np.testing.assert_allclose(got[0], want0, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], want1, rtol=2e-6, atol=1e-7)
