"""Scientific numpy as people write it, differentiated as written.

A velocity Verlet integrator that measures its energy drift with a user
function called before the state is updated in place, a Runge-Kutta
integrator that takes the right-hand side as an argument, a pairwise
potential whose diagonal is masked after ``1 / sqrt(r2)``, and a Kalman
filter's log-likelihood.  Each gradient is compared with central finite
differences and, where JAX is installed, with ``jax.grad`` of a port.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad


def _close_to_differences(fn, args, wrt=(0,), rtol=1e-6, atol=1e-8):
    got = astgrad.grad(fn, wrt=wrt)(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])
    got = got if len(wrt) > 1 else (got,)
    for g, i in zip(got, wrt):
        np.testing.assert_allclose(g, numeric_grad(fn, args, i), rtol=rtol, atol=atol)
    return got


# -- velocity Verlet with an energy check ------------------------------------------

def total_energy(pos, vel, mass):
    return 0.5 * np.sum(mass * vel ** 2) + 0.5 * np.sum(pos ** 2)


def verlet_drift(vel0, pos0, mass, dt):
    """The energy drift of a harmonic chain: ``e0`` is a number a user function returned, so it shares no
    memory with ``vel``, which ``vel += ...`` changes later."""
    pos, vel = pos0.copy(), vel0.copy()
    e0 = total_energy(pos, vel, mass)
    acc = -pos / mass
    for _ in range(5):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = -pos / mass
        vel += 0.5 * dt * acc
    return (total_energy(pos, vel, mass) - e0) ** 2 + np.sum(pos * vel)


def test_a_number_a_user_function_returned_shares_no_memory_with_what_is_written_later():
    args = (np.array([0.3, -0.2, 0.5]), np.array([1.0, 0.4, -0.7]), np.array([1.0, 2.0, 0.5]), 0.1)
    _close_to_differences(verlet_drift, args, wrt=(0, 1))


def _tail(v):
    return v[1:]


def an_array_returned_before_the_write(vel0):
    vel = vel0.copy()
    e0 = _tail(vel)  # a view of vel: numpy's e0 sees the write
    vel += 1.0
    return np.sum(e0 * vel)


def test_an_array_a_user_function_returned_is_refused_when_it_may_share_memory():
    with pytest.raises(TypeError, match=r"`e0 = _tail\(vel\)` gives a ndarray, which may share memory with vel"):
        astgrad.grad(an_array_returned_before_the_write)(np.ones(3))
