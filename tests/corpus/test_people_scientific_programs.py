"""Scientific numpy as people write it, differentiated as written.

A velocity Verlet integrator that measures its energy drift with a user
function called before the state is updated in place, a Runge-Kutta
integrator that takes the right-hand side as an argument, a pairwise
potential whose diagonal is masked after ``1 / sqrt(r2)``, a Kalman
filter's log-likelihood, and finite-difference PDEs (a periodic 2-D
reaction-diffusion stencil of ``np.roll`` and a 1-D heat equation whose
boundary is written back each step).  Each gradient is compared with
central finite differences and, where JAX is installed, with ``jax.grad``
of a port (in float64 inside the test only: ``jax.enable_x64``).
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad


def _close_to_differences(fn, args, wrt=(0,), rtol=1e-6, atol=1e-8):
    got = astgrad.grad(fn, wrt=wrt)(*[np.copy(a) if isinstance(a, np.ndarray) else a for a in args])  # a tuple
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


# -- a Kalman filter's log-likelihood -----------------------------------------------

def kalman_log_likelihood(q, r, zs, F, H):
    """The gain ``K`` of the last step reaches nothing: its adjoint is the zero the reverse sweep writes
    where a path has no gradient, which the matmul rule must be skipped for, not given."""
    n = F.shape[0]
    x = np.zeros(n)
    P = np.eye(n)
    Q = q * np.eye(n)
    R = r * np.eye(H.shape[0])
    ll = 0.0
    for k in range(zs.shape[0]):
        x = F @ x
        P = F @ P @ F.T + Q
        y = zs[k] - H @ x
        S = H @ P @ H.T + R
        K = P @ H.T @ np.linalg.inv(S)
        ll = ll - 0.5 * (y @ np.linalg.solve(S, y) + np.linalg.slogdet(S)[1])
        x = x + K @ y
        P = P - K @ H @ P
    return ll


def _kalman_data():
    rng = np.random.default_rng(0)
    F = np.array([[1.0, 0.1], [0.0, 1.0]])
    H = np.array([[1.0, 0.0]])
    return rng.normal(size=(6, 1)), F, H


def test_kalman_filter_log_likelihood():
    zs, F, H = _kalman_data()
    _close_to_differences(kalman_log_likelihood, (0.3, 0.5, zs, F, H), wrt=(0, 1))


def test_kalman_filter_log_likelihood_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def port(q, r, zs, F, H):
        n = F.shape[0]
        x, P = jnp.zeros(n), jnp.eye(n)
        ll = 0.0
        for k in range(zs.shape[0]):
            x = F @ x
            P = F @ P @ F.T + q * jnp.eye(n)
            y = zs[k] - H @ x
            S = H @ P @ H.T + r * jnp.eye(H.shape[0])
            K = P @ H.T @ jnp.linalg.inv(S)
            ll = ll - 0.5 * (y @ jnp.linalg.solve(S, y) + jnp.linalg.slogdet(S)[1])
            x = x + K @ y
            P = P - K @ H @ P
        return ll

    zs, F, H = _kalman_data()
    with jax.enable_x64(True):
        want = jax.grad(port, argnums=(0, 1))(0.3, 0.5, zs, F, H)
    got = astgrad.grad(kalman_log_likelihood, wrt=(0, 1))(0.3, 0.5, zs, F, H)
    np.testing.assert_allclose(got, [float(w) for w in want], rtol=1e-10)


# -- a Runge-Kutta integrator that takes the right-hand side ------------------------

def rk4(f, y0, t, p):
    ys = [y0]
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = ys[i]
        k1 = f(t[i], y, p)
        k2 = f(t[i] + h / 2, y + h / 2 * k1, p)
        k3 = f(t[i] + h / 2, y + h / 2 * k2, p)
        k4 = f(t[i] + h, y + h * k3, p)
        ys.append(y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.stack(ys)


def lotka_volterra(t, y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def fit_residual(p, f, t, observed):
    """A parameter fit of an ODE model: the right-hand side is an argument, as integrators take it."""
    return np.sum((rk4(f, np.array([1.0, 0.5]), t, p) - observed) ** 2)


def _ode_data():
    t = np.linspace(0.0, 2.0, 9)
    observed = rk4(lotka_volterra, np.array([1.0, 0.5]), t, np.array([1.1, 0.4, 0.3, 0.9])) + 0.01
    return t, observed


def test_runge_kutta_taking_the_right_hand_side():
    t, observed = _ode_data()
    p = np.array([1.0, 0.5, 0.35, 0.8])
    _close_to_differences(fit_residual, (p, lotka_volterra, t, observed))


def test_runge_kutta_taking_the_right_hand_side_matches_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def rhs(t, y, p):
        return jnp.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    def port(p, t, observed):
        ys = [jnp.array([1.0, 0.5])]
        for i in range(len(t) - 1):
            h, y = t[i + 1] - t[i], ys[i]
            k1 = rhs(t[i], y, p)
            k2 = rhs(t[i] + h / 2, y + h / 2 * k1, p)
            k3 = rhs(t[i] + h / 2, y + h / 2 * k2, p)
            k4 = rhs(t[i] + h, y + h * k3, p)
            ys.append(y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
        return jnp.sum((jnp.stack(ys) - observed) ** 2)

    t, observed = _ode_data()
    p = np.array([1.0, 0.5, 0.35, 0.8])
    with jax.enable_x64(True):
        want = jax.grad(port)(p, t, observed)
    np.testing.assert_allclose(astgrad.grad(fit_residual)(p, lotka_volterra, t, observed), want, rtol=1e-10)


# -- a pairwise potential with the diagonal masked -----------------------------------

def coulomb_energy(x, q):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d ** 2, axis=-1)
    inv_r = 1 / np.sqrt(r2)
    inv_r[r2 == 0] = 0  # no self-interaction: the adjoint there is structurally zero
    return 0.5 * np.sum(q[:, None] * q[None, :] * inv_r)


def _charges():
    rng = np.random.default_rng(3)
    return rng.normal(size=(5, 3)), rng.uniform(0.5, 1.5, 5)


def test_pairwise_potential_with_the_diagonal_masked():
    x, q = _charges()
    with np.errstate(divide="ignore", invalid="ignore"):
        got = _close_to_differences(coulomb_energy, (x, q), wrt=(0, 1))
    assert all(np.all(np.isfinite(g)) for g in got)


def test_pairwise_potential_matches_jax_with_the_double_where():
    """JAX gives NaN for the port as written; with the input masked too (the "double where") it gives
    the derivative astgrad gives the program as written."""
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def port(x, q):
        d = x[:, None, :] - x[None, :, :]
        r2 = jnp.sum(d ** 2, axis=-1)
        diagonal = r2 == 0
        inv_r = jnp.where(diagonal, 0.0, 1 / jnp.sqrt(jnp.where(diagonal, 1.0, r2)))
        return 0.5 * jnp.sum(q[:, None] * q[None, :] * inv_r)

    x, q = _charges()
    with np.errstate(divide="ignore", invalid="ignore"):
        got = astgrad.grad(coulomb_energy, wrt=(0, 1))(x, q)
    with jax.enable_x64(True):
        want = jax.grad(port, argnums=(0, 1))(x, q)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)


# -- finite-difference PDEs: a periodic stencil and a boundary written each step -----------

def reaction_diffusion(u0, diffusion, rate, target):
    """Explicit Euler steps of u_t = D (u_xx + u_yy) + k u (1 - u) on a periodic grid, fitted to a target."""
    u = u0.copy()
    for _ in range(6):
        laplacian = (np.roll(u, 1, axis=0) + np.roll(u, -1, axis=0) + np.roll(u, 1, axis=1)
                     + np.roll(u, -1, axis=1) - 4 * u)
        u = u + 0.1 * (diffusion * laplacian + rate * u * (1 - u))
    return np.sum((u - target) ** 2)


def heat_with_fixed_ends(u0, alpha, left):
    """The 1-D heat equation, the interior updated in place and the ends written back each step."""
    u = u0.copy()
    for _ in range(8):
        u[1:-1] = u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])
        u[0] = left
        u[-1] = 0.0
    return np.sum(u ** 2) + np.sum(u[1:] * u[:-1])


def _grid():
    rng = np.random.default_rng(5)
    return rng.uniform(0.2, 0.8, (5, 4)), rng.uniform(0.2, 0.8, (5, 4))


def test_a_periodic_reaction_diffusion_stencil():
    u0, target = _grid()
    _close_to_differences(reaction_diffusion, (u0, 0.3, 0.7, target), wrt=(0, 1, 2))


def test_a_heat_equation_with_its_ends_written_each_step():
    u0 = np.random.default_rng(6).uniform(0.0, 1.0, 7)
    _close_to_differences(heat_with_fixed_ends, (u0, 0.2, 0.4), wrt=(0, 1, 2))


def test_the_pdes_match_jax():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def diffusion_port(u0, diffusion, rate, target):
        u = u0
        for _ in range(6):
            laplacian = (jnp.roll(u, 1, axis=0) + jnp.roll(u, -1, axis=0) + jnp.roll(u, 1, axis=1)
                         + jnp.roll(u, -1, axis=1) - 4 * u)
            u = u + 0.1 * (diffusion * laplacian + rate * u * (1 - u))
        return jnp.sum((u - target) ** 2)

    def heat_port(u0, alpha, left):
        u = u0
        for _ in range(8):
            u = u.at[1:-1].set(u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2]))
            u = u.at[0].set(left).at[-1].set(0.0)
        return jnp.sum(u ** 2) + jnp.sum(u[1:] * u[:-1])

    u0, target = _grid()
    line = np.random.default_rng(6).uniform(0.0, 1.0, 7)
    with jax.enable_x64(True):
        want_diffusion = jax.grad(diffusion_port, argnums=(0, 1, 2))(u0, 0.3, 0.7, target)
        want_heat = jax.grad(heat_port, argnums=(0, 1, 2))(line, 0.2, 0.4)
    got = astgrad.grad(reaction_diffusion, wrt=(0, 1, 2))(u0.copy(), 0.3, 0.7, target)
    for g, w in zip(got, want_diffusion):
        np.testing.assert_allclose(g, w, rtol=1e-10)
    got = astgrad.grad(heat_with_fixed_ends, wrt=(0, 1, 2))(line.copy(), 0.2, 0.4)
    for g, w in zip(got, want_heat):
        np.testing.assert_allclose(g, w, rtol=1e-10)
