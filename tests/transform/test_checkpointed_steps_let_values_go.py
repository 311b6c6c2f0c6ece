"""A checkpointed loop's steps let each value go once the step has read it, as the user's Python does.

The generated steps bind every intermediate to a name; run again in the
reverse sweep, or in the forward sweep between kept states, they set a name
to None after the statement that last reads it, where nothing after the step
reads it: not the next step (it is written first there), not the code after
the loop (or its adjoint), not the step's own adjoint.  Where that cannot be
shown (a value of the last step read after the loop, by a closure too) the
name is kept, and the gradient is still the unmarked loop's.  The stencil of
issue 32's S1 then holds, with the loop marked, at most 4 times the primal's
peak at the benchmark's size and s + 4 arrays against the primal's 3 on large
ones.
"""

import numpy as np
import pytest

import astgrad
from _memory import peak
from _numeric import numeric_grad

X = np.linspace(-1.0, 1.0, 7)
P = np.linspace(0.5, 1.5, 7)


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


@pytest.mark.parametrize("s", (2, 3, 4))
def test_the_heat_stencil_at_the_benchmarks_size_stays_under_four_times_the_primals_peak(s):
    """S1's 200 points and 400 steps: arrays of 1.6 kB, so the call's own objects count too (4.0x to 4.8x while
    the steps held their intermediates to the next step)."""
    u = np.linspace(0.0, 1.0, 200) ** 2
    gradient = astgrad.grad(heat, wrt=(0, 1))
    gradient(0.1, u, 400, s)
    primal = peak(lambda: heat_plain(0.1, u, 400, s))
    assert peak(lambda: gradient(0.1, u, 400, s)) <= 4 * primal


def test_on_large_arrays_the_stencil_holds_s_plus_four_arrays():
    """The s states, the state stepped, its gradient and a step's two temporaries, against the primal's 3 (the
    state and two temporaries); s + 8 while each step held its intermediates to the next."""
    u = np.linspace(0.0, 1.0, 20000) ** 2
    gradient = astgrad.grad(heat, wrt=(0, 1))
    gradient(0.1, u, 3, 2)
    primal = peak(lambda: heat_plain(0.1, u, 40, 2))
    for s in (2, 4):
        assert peak(lambda: gradient(0.1, u, 40, s)) <= (s + 4.5) / 3 * primal, s


# -- where a step's value is read after the step: kept ------------------------------------------------------------

def read_after(x, p, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x) + np.sum(z * x)  # the last step's z, read after the loop


def read_after_plain(x, p, n, s):
    for _ in range(n):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x) + np.sum(z * x)


def read_after_segments(x, p, n, s):
    for _ in astgrad.checkpointed(range(n)):
        z = np.tanh(x * p)
        x = x + 0.1 * z
    return np.sum(x * x) + np.sum(z * x)


def read_by_a_closure(x, p, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        z = np.tanh(x * p)
        twice = lambda: z * 2.0  # noqa: E731  (reads the last step's z when called after the loop)
        x = x + 0.1 * z
    return np.sum(x * x) + np.sum(twice() * x)


def read_by_a_closure_plain(x, p, n, s):
    for _ in range(n):
        z = np.tanh(x * p)
        twice = lambda: z * 2.0  # noqa: E731
        x = x + 0.1 * z
    return np.sum(x * x) + np.sum(twice() * x)


def called_later_in_the_step(x, p, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        z = np.tanh(x * p)
        scaled = lambda w: w * z  # noqa: E731  (reads z when called, after z's last read by name)
        y = x * 0.5
        x = x + 0.1 * scaled(y)
    return np.sum(x * x)


def called_later_in_the_step_plain(x, p, n, s):
    for _ in range(n):
        z = np.tanh(x * p)
        scaled = lambda w: w * z  # noqa: E731
        y = x * 0.5
        x = x + 0.1 * scaled(y)
    return np.sum(x * x)


def unneeded_loop(x, p, n, s):
    c = 0.0
    for i in astgrad.checkpointed(range(n), snapshots=s):  # nothing of it reaches the gradient: run as written
        step = i * 0.5
        c = c + step
    return np.sum(x * p) * c + step


def unneeded_loop_plain(x, p, n, s):
    c = 0.0
    for i in range(n):
        step = i * 0.5
        c = c + step
    return np.sum(x * p) * c + step


def read_before(x, p, n, s):
    z = np.sin(x)
    w = z * p  # its adjoint reads the z of before the loop, which every step overwrites
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        z = np.cos(x) * p
        x = x * 0.9 + z * 0.1
    return np.sum(x * x) + np.sum(w * w)


def read_before_plain(x, p, n, s):
    z = np.sin(x)
    w = z * p
    for _ in range(n):
        z = np.cos(x) * p
        x = x * 0.9 + z * 0.1
    return np.sum(x * x) + np.sum(w * w)


def shape_read(x, p, n, s):
    y = np.sin(x)
    w = y * p  # its adjoint reads the y of before the loop
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        y = x[:, None] * 0.9  # each step's adjoint reads only its shape (y + p broadcasts): its saves, shapes
        x = x + 0.1 * np.sum(np.tanh(y + p), axis=1)
    return np.sum(x * x) + np.sum(w * w)


def shape_read_segments(x, p, n, s):
    y = np.sin(x)
    w = y * p
    for _ in astgrad.checkpointed(range(n)):
        y = x[:, None] * 0.9
        x = x + 0.1 * np.sum(np.tanh(y + p), axis=1)
    return np.sum(x * x) + np.sum(w * w)


def shape_read_plain(x, p, n, s):
    y = np.sin(x)
    w = y * p
    for _ in range(n):
        y = x[:, None] * 0.9
        x = x + 0.1 * np.sum(np.tanh(y + p), axis=1)
    return np.sum(x * x) + np.sum(w * w)


def state_read_before(x, p, n, s):
    w = np.sin(x) * p  # its adjoint reads the x of before the loop, the loop's state, popped last
    for _ in astgrad.checkpointed(range(n)):
        x = x * 0.9 + 0.1 * p  # the step's adjoint reads nothing of x: only the pops give it back
    return np.sum(x * x) + np.sum(w * w)


def state_read_before_plain(x, p, n, s):
    w = np.sin(x) * p
    for _ in range(n):
        x = x * 0.9 + 0.1 * p
    return np.sum(x * x) + np.sum(w * w)


def state_read_before_binomial(x, p, n, s):
    w = np.sin(x) * p
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        x = x * 0.9 + 0.1 * p
    return np.sum(x * x) + np.sum(w * w)


PAIRS = [(read_after, read_after_plain), (read_after_segments, read_after_plain),
         (read_by_a_closure, read_by_a_closure_plain), (called_later_in_the_step, called_later_in_the_step_plain),
         (unneeded_loop, unneeded_loop_plain),
         (read_before, read_before_plain), (shape_read, shape_read_plain), (shape_read_segments, shape_read_plain),
         (state_read_before, state_read_before_plain), (state_read_before_binomial, state_read_before_plain)]


@pytest.mark.parametrize("marked, plain", PAIRS, ids=[m.__name__ for m, _ in PAIRS])
def test_a_value_read_after_the_step_is_kept(marked, plain):
    """And a step run again saves what its adjoint reads: a value the adjoint pops but does not read is not
    saved, unless it is the loop's state, whose value from before the loop the adjoint of the code before it
    reads; the other names come back from before the loop whole."""
    got, want = astgrad.grad(marked, wrt=(0, 1)), astgrad.grad(plain, wrt=(0, 1))
    for n, s in ((1, 2), (7, 2), (13, 3)):
        for g, w in zip(got(X.copy(), P.copy(), n, s), want(X.copy(), P.copy(), n, s)):
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    dx = got(X.copy(), P.copy(), 7, 2)[0]
    np.testing.assert_allclose(dx, numeric_grad(plain, (X.copy(), P.copy(), 7, 2), 0), rtol=1e-5, atol=1e-7)
