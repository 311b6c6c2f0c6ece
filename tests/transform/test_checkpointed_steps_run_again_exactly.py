"""A checkpointed loop's steps, run again in the reverse sweep, compute what they computed: or are refused.

The stencils (an item write ``u[1:-1] = ...``, ``np.roll`` with two
states, an upwind ``np.where``) and loops that could run differently the
second time (a ``while`` inside, a helper writing into an array it made, a
global read) give the gradient of the same loop unmarked to 1e-12; a step
that writes state its call does not return (a global list a helper appends
to and the body reads, an argument written, an attribute set) or draws
random numbers in a helper is refused at the user's line, before anything
runs.  And the binomial schedule's memory: a stencil's gradient with two
states stays under 4 times the primal's peak, whatever the steps.
"""

import linecache

import numpy as np
import pytest

import astgrad
from _memory import peak
from astgrad.transform.runtime import reruns
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


LOG: list = []


def log_step():
    LOG.append(1)


def appends_to_a_global(k, u, n):
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        log_step()
        u = u * (k * len(LOG))  # run again, the steps would read a longer list: another gradient
    return np.sum(u)


def appends_in_square_root_segments(k, u, n):
    for _ in astgrad.checkpointed(range(n)):
        log_step()
        u = u * (k * len(LOG))
    return np.sum(u)


def logged(u, k):
    log_step()
    return u * (k * len(LOG))


def checkpointed_call_that_appends(k, u, n):
    for _ in range(n):
        u = astgrad.checkpoint(logged)(u, k)
    return np.sum(u)


def set_first(buffer, value):
    buffer[0] = value
    return value


def writes_an_argument(k, u, n):
    seen = np.zeros(2)
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        set_first(seen, seen[0] + 1.0)
        u = u * k * seen[0]
    return np.sum(u)


class Clock:
    def __init__(self):
        self.ticks = 0

    def tick(self):
        self.ticks += 1
        return self.ticks


CLOCK = Clock()


def sets_an_attribute(k, u, n):
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        u = u * k * CLOCK.tick()
    return np.sum(u)


def alias_append():
    log = LOG  # a local name for the global list: still the global list
    log.append(1)


def appends_through_an_alias(k, u, n):
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        alias_append()
        u = u * (k * len(LOG))
    return np.sum(u)


def jitter():
    return np.random.normal()


def draws_in_a_helper(k, u, n):
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        u = u * k * jitter()  # run as written (no gradient flows into jitter): still run again
    return np.sum(u)


@pytest.mark.parametrize("fn, why, line", [
    (appends_to_a_global, "calls LOG.append(...)", "log_step()"),
    (appends_in_square_root_segments, "calls LOG.append(...)", "log_step()"),
    (checkpointed_call_that_appends, "calls LOG.append(...)", "astgrad.checkpoint(logged)"),
    (writes_an_argument, "writes into buffer[0]", "set_first(seen"),
    (sets_an_attribute, "writes into self.ticks", "CLOCK.tick()"),
    (appends_through_an_alias, "calls log.append(...)", "alias_append()"),
    (draws_in_a_helper, "draws random numbers", "jitter()")], ids=lambda v: getattr(v, "__name__", None))
def test_a_step_that_would_run_differently_again_is_refused_before_it_runs(fn, why, line):
    LOG.clear()
    ticks = CLOCK.ticks
    with pytest.raises(astgrad.TransformError) as caught:
        astgrad.grad(fn, wrt=(0, 1))(0.9, U.copy(), 4)
    text = str(caught.value)
    assert why in text and line in text and "test_checkpointed_steps_run_again_exactly.py" in text, text
    assert LOG == [] and CLOCK.ticks == ticks


SCALE = 1.0
FACTORS = np.ones(2)


def rescale():
    global SCALE
    SCALE = SCALE * 1.1


def rebinds_a_global_it_reads(k, u, n):
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        rescale()
        u = u * k * SCALE
    return np.sum(u)


def writes_a_global_array(k, u, n):
    for _ in astgrad.checkpointed(range(n), snapshots=2):
        FACTORS[0] = FACTORS[0] * 1.1
        u = u * k * FACTORS[0]
    return np.sum(u)


def test_a_global_the_loop_changes_and_reads_is_refused():
    """A global rebound by a callee and read by the body; a global array the body writes into and reads."""
    with pytest.raises(astgrad.TransformError, match="rescale"):
        astgrad.grad(rebinds_a_global_it_reads, wrt=(0, 1))(0.9, U.copy(), 4)
    with pytest.raises(TypeError, match="does not own"):
        astgrad.grad(writes_a_global_array, wrt=(0, 1))(0.9, U.copy(), 4)
    assert SCALE == 1.0 and list(FACTORS) == [1.0, 1.0]


def test_a_helper_without_source_is_read_from_its_bytecode():
    """No source to read which object it writes: any in-place method call is refused."""
    namespace: dict = {"LOG": LOG}
    exec("def log_step():\n    LOG.append(1)\n", namespace)
    assert reruns.state_writes(namespace["log_step"]) is not None
    exec("def pure(x):\n    return x * 2\n", namespace)
    assert reruns.state_writes(namespace["pure"]) is None
    assert reruns.state_writes(laplacian) is None and reruns.state_writes(alias_append) is not None


def test_lines_that_are_not_the_helpers_source_are_not_trusted():
    """linecache holds other lines under the helper's file name (another string compiled under that name, as
    Python 3.13 gives ``<string>`` a blank line): its bytecode is read instead, and its write refused."""
    filename = "<astgrad-test-other-lines>"
    linecache.cache[filename] = (0, None, ["def log_step():\n", "    return 1\n"], filename)
    try:
        namespace: dict = {"LOG": LOG}
        exec(compile("def log_step():\n    LOG.append(1)\n", filename, "exec"), namespace)
        assert reruns.state_writes(namespace["log_step"]) is not None
    finally:
        linecache.cache.pop(filename, None)


def test_a_stencils_gradient_with_two_states_stays_under_four_times_the_primals_peak():
    """Large arrays, so that the count of arrays decides: about 10 arrays at the peak against the primal's 3
    (14 while the reverse sweep held the last step's dead values: the bound fails then)."""
    u = np.linspace(0.0, 1.0, 20000) ** 2
    gradient = astgrad.grad(heat, wrt=(0, 1))
    gradient(0.1, u, 3, 2)
    primal = peak(lambda: heat_plain(0.1, u, 40, 2))
    for n in (3, 40):
        assert peak(lambda: gradient(0.1, u, n, 2)) <= 4 * primal
