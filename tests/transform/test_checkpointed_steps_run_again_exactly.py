"""A checkpointed loop's steps, run again in the reverse sweep, compute what they computed.

The stencils (an item write ``u[1:-1] = ...``, ``np.roll`` with two
states, an upwind ``np.where``) and loops that could run differently the
second time (a ``while`` inside, a helper writing into an array it made, a
global read) give the gradient of the same loop unmarked to 1e-12.  And
the binomial schedule's memory: a stencil's gradient with two states stays
under 4 times the primal's peak, whatever the steps.
"""

import numpy as np
import pytest

import astgrad
from _memory import peak
from _numeric import numeric_grad

U = np.sin(np.linspace(0.0, 3.0, 12)) + 0.3


def heat(k, u, n, s):
    u = u.copy()
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        u[1:-1] = u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def heat_plain(k, u, n, s):
    u = u.copy()
    for _ in range(n):
        u[1:-1] = u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def wave(k, u, n, s):
    u = u.reshape(3, 4)
    before = u
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        after = 2 * u - before + k * lap
        before = u
        u = after
    return np.sum(u ** 2)


def wave_plain(k, u, n, s):
    u = u.reshape(3, 4)
    before = u
    for _ in range(n):
        lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        after = 2 * u - before + k * lap
        before = u
        u = after
    return np.sum(u ** 2)


def burgers(k, u, n, s):
    u = u.copy()
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead)
        u[1:-1] = u[1:-1] - 0.1 * advect + k * (ahead - back)
    return np.sum(u ** 2)


def burgers_plain(k, u, n, s):
    u = u.copy()
    for _ in range(n):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead)
        u[1:-1] = u[1:-1] - 0.1 * advect + k * (ahead - back)
    return np.sum(u ** 2)


def relax(k, u, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        sweeps = 0
        while np.max(np.abs(u)) > 0.5 and sweeps < 3:  # the test reads the state: its trips depend on the step
            u = u * (1 - k)
            sweeps = sweeps + 1
        u = u + 0.1
    return np.sum(u ** 2)


def relax_plain(k, u, n, s):
    for _ in range(n):
        sweeps = 0
        while np.max(np.abs(u)) > 0.5 and sweeps < 3:
            u = u * (1 - k)
            sweeps = sweeps + 1
        u = u + 0.1
    return np.sum(u ** 2)


def laplacian(u):
    out = np.zeros_like(u)  # its own array: written, not the caller's
    out[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    return out


WEIGHTS = np.linspace(0.5, 1.5, 12)


def helper(k, u, n, s):
    history = np.zeros((n, u.shape[0]))  # defined outside the loop, an item written each step
    for t in astgrad.checkpointed(range(n), snapshots=s):
        u = u + k * laplacian(u) * WEIGHTS  # a global read, never written
        history[t] = u * u
    return np.sum(history) + np.sum(u)


def helper_plain(k, u, n, s):
    history = np.zeros((n, u.shape[0]))
    for t in range(n):
        u = u + k * laplacian(u) * WEIGHTS
        history[t] = u * u
    return np.sum(history) + np.sum(u)


PAIRS = [(heat, heat_plain), (wave, wave_plain), (burgers, burgers_plain), (relax, relax_plain),
         (helper, helper_plain)]


@pytest.mark.parametrize("marked, plain", PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_the_gradient_is_the_unmarked_loops(marked, plain):
    got, want = astgrad.grad(marked, wrt=(0, 1)), astgrad.grad(plain, wrt=(0, 1))
    for n, s in ((0, 2), (1, 2), (7, 2), (13, 3)):
        for g, w in zip(got(0.2, U.copy(), n, s), want(0.2, U.copy(), n, s)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    assert float(marked(0.2, U.copy(), 7, 2)) == float(plain(0.2, U.copy(), 7, 2))


def test_a_stencils_gradient_is_central_differences():
    du = astgrad.grad(burgers, wrt=1)(0.2, U.copy(), 7, 2)
    np.testing.assert_allclose(du, numeric_grad(burgers_plain, (0.2, U.copy(), 7, 2), 1), rtol=1e-5, atol=1e-7)


def test_a_stencils_gradient_with_two_states_stays_under_four_times_the_primals_peak():
    """Large arrays, so that the count of arrays decides: about 10 arrays at the peak against the primal's 3
    (14 while the reverse sweep held the last step's dead values: the bound fails then)."""
    u = np.linspace(0.0, 1.0, 20000) ** 2
    gradient = astgrad.grad(heat, wrt=(0, 1))
    gradient(0.1, u, 3, 2)
    primal = peak(lambda: heat_plain(0.1, u, 40, 2))
    for n in (3, 40):
        assert peak(lambda: gradient(0.1, u, n, 2)) <= 4 * primal
