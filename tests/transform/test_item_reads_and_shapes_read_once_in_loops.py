"""A reverse loop reads ``g[i]``, not ``written(g, i)``, and ``shape(x)`` once before it, where proven; else as before.

passes/written_items.py reads the gradient of a written item as ``g[i]``
where ``i`` is surely a Python int (a ``range`` counter the loop never
rebinds, a literal) or ``np.s_[...]`` of literal slices; passes/invariant_shapes.py
binds ``shape(x)`` before the outermost loop that can neither rebind ``x``
nor reshape an array.  The adversarial programs look the same where a
proof fails (an index repeated, an index rebound in the loop, an alias of
the written array, a view given as argument, float32 meeting float64, a
write into integers, a loop that runs no trip): each is checked against
central differences at every level.
"""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(33)
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


def no_trips(log_k, c0, pairs):
    """The network over no step (counted at run time): the shapes read before the reverse loops are of
    placeholders, and nothing reads them."""
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(len(pairs) - len(k)):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
        c = c + 0.1 * (rates[:4] - rates[1:])
    return np.sum(c * np.arange(len(c)))


def repeated(log_k, c0, pairs):
    """``y[[0, 0, 1]] = v``: numpy keeps the last write at a repeated place; the first moves nothing."""
    y = np.zeros(len(c0))
    y[:] = c0
    for i in range(2):
        y[[0, 0, 1]] = np.exp(log_k[:3]) * y[2 + i]
    return np.sum(y * y * np.arange(1, 5))


def rebound(log_k, c0, pairs):
    """The loop's counter rebound in it: ``i`` is still an int, but not the ``range``'s, and the proof is by name."""
    y = np.zeros(len(c0))
    for i in range(len(c0)):
        i = (3 * i + 1) % len(c0)
        y[i] = y[i] + np.exp(log_k[i]) * c0[i]
    return np.sum(y * y)


def aliased(log_k, c0, pairs):
    """``rates`` and a second name of its array, made after the writes, read in the next step's loop."""
    total = 0.0
    for _ in range(2):
        rates = np.zeros(len(log_k))
        for i in range(len(log_k)):
            rates[i] += np.exp(log_k[i]) * c0[pairs[i, 0]]
        same = rates
        for i in range(len(log_k)):
            total = total + same[i] * rates[i] * c0[pairs[i, 1]]
    return total


def aliased_before(log_k, c0, pairs):
    """The second name made before the writes: astgrad refuses it (a reason, never a number that is wrong)."""
    rates = np.zeros(len(log_k))
    same = rates
    for i in range(len(log_k)):
        rates[i] += np.exp(log_k[i]) * c0[pairs[i, 0]]
        same[i] += c0[pairs[i, 1]] * rates[i]
    return np.sum(rates * rates)


def into_rows(log_k, rows):
    """A view given as argument (a strided one), copied, its rows written; a row of the gradient is a view too."""
    out = rows.copy()
    for i in range(rows.shape[0]):
        out[i] = out[i] * np.exp(log_k[i]) + rows[i][::-1] * log_k[i]
    return np.sum(out * out)


def mixed_precision(log_k, c0, pairs):
    """Items of float32 written with float64 values, and float64 items written with float32 ones."""
    low = np.zeros(len(log_k), dtype=np.float32)
    high = np.zeros(len(log_k))
    for i in range(len(log_k)):
        low[i] += np.exp(log_k[i]) * c0[pairs[i, 0]]
        high[i] += low[i] * np.float32(1.5) + c0[pairs[i, 1]]
    return np.sum(high * high) + np.sum(low)


def into_integers(log_k, c0, pairs):
    """``n[i] += v`` into an array of integers: numpy truncates what it writes, no gradient goes through."""
    n = np.zeros(len(c0), dtype=np.int64)
    total = 0.0
    for i in range(len(c0)):
        n[i] += 3.7 * c0[i]
        total = total + n[i] * log_k[i] + c0[i] * log_k[i]
    return total


def stencil(log_k, c0, pairs):
    """``u[1:-1] = ...``: the written slice's gradient read as ``du[np.s_[1:-1]]``."""
    u = c0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + 0.2 * (u[2:] - 2 * u[1:-1] + u[:-2]) * np.exp(log_k[0])
    return np.sum(u ** 2)


def _check(f, level, third=PAIRS):
    # float32 items round what is written to about 1e-7: wider differences, and a tolerance to match
    eps, rtol = (1e-3, 1e-3) if f is mixed_precision else (1e-6, 2e-6)
    g = astgrad.grad(f, wrt=(0, 1), optimize=level)
    for _ in range(2):  # the general adjoint, then the one specialised on the arguments' ranks and kinds
        got = g(LOG_K.copy(), C0.copy(), third.copy())
        want0 = gradient(lambda x: f(x, C0.copy(), third.copy()), LOG_K.copy(), eps)
        want1 = gradient(lambda x: f(LOG_K.copy(), x, third.copy()), C0.copy(), eps)
        np.testing.assert_allclose(got[0], want0, rtol=rtol, atol=1e-8)
        np.testing.assert_allclose(got[1], want1, rtol=rtol, atol=1e-8)
    return g


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", [network, no_trips, repeated, rebound, aliased, mixed_precision, into_integers, stencil],
                         ids=lambda f: f.__name__)
def test_gradients_match_differences(f, level):
    _check(f, level)


def test_an_alias_made_before_the_writes_is_refused():
    with pytest.raises(astgrad.TransformError, match="shares memory with rates"):
        _check(aliased_before, 2)


@pytest.mark.parametrize("level", LEVELS)
def test_a_view_given_as_argument(level):
    view = RNG.standard_normal((6, 2))[::2]  # a view with a step, of 3 rows
    g = astgrad.grad(into_rows, wrt=(0, 1), optimize=level)
    for _ in range(2):
        got = g(LOG_K[:3].copy(), view)
        np.testing.assert_allclose(got[0], gradient(lambda x: into_rows(x, view), LOG_K[:3].copy()), rtol=2e-6)
        np.testing.assert_allclose(got[1], gradient(lambda x: into_rows(LOG_K[:3], x), view.copy()), rtol=2e-6)


def _reverse(source):
    return source[source.index("for _ in reversed"):]


def test_the_reaction_loop_reads_items_and_shapes_once():
    source = _check(network, 2).source
    loop = _reverse(source)
    inner = loop[loop.index("for i in reversed"):]
    assert "written(" not in source and "= drates[i]" in inner
    assert "shape(" not in inner  # shape(c) and shape(k) read before the loop over reactions
    outer = loop[:loop.index("for i in reversed")]
    assert "shape(c)" in outer  # c is popped on every step: read again on every step, before the inner loop


def test_a_stencil_reads_the_written_slice_of_its_gradient():
    assert "written(" not in _check(stencil, 2).source


@pytest.mark.parametrize("f", [repeated, rebound], ids=lambda f: f.__name__)
def test_an_index_that_may_name_a_place_twice_keeps_the_call(f):
    assert "written(" in _check(f, 2).source


def test_a_name_rebound_in_the_loop_keeps_its_shape_read_in_it():
    """``pos`` is popped on every trip of leapfrog's reverse loop: ``shape(pos)`` stays in it."""
    def leapfrog(vel0, pos0, mass):
        pos, vel = pos0.copy(), vel0.copy()
        acc = -pos / mass
        for _ in range(4):
            vel += 0.05 * acc
            pos += 0.1 * vel
            acc = -pos / mass
        return np.sum(pos * vel) + np.sum(pos ** 3)
    args = (RNG.standard_normal(3), RNG.standard_normal(3), RNG.uniform(1, 2, 3))
    g = astgrad.grad(leapfrog, wrt=(0, 1, 2))
    got = g(*args)
    for n in range(3):
        want = gradient(lambda x: leapfrog(*(x if j == n else a for j, a in enumerate(args))), args[n].copy())
        np.testing.assert_allclose(got[n], want, rtol=2e-6, atol=1e-8)
    loop = _reverse(g.source)
    loop = loop[:loop.index("del ")]
    assert "shape(pos)" in loop and "shape(mass)" not in loop  # mass is never rebound: its shape is read once


def _scaled(x, s):
    return x * s


def calling(log_k, c0, pairs):
    """The reverse loop calls a function of the user's (its backward half), which could do anything."""
    c = c0.copy()
    for _ in range(3):
        c = _scaled(c, np.exp(log_k[0])) + c[::-1]
    return np.sum(c ** 2)


def test_a_loop_calling_a_function_of_the_users_reads_shapes_in_it():
    loop = _reverse(_check(calling, 2).source)
    assert "shape(log_k)" in loop[:loop.index("return")]

