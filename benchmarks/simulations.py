"""Simulations (issue 32) for benchmarks/scientific.py: four more programs, their JAX ports, and adjoints by hand.

The programs, as people write them with numpy: a mass-action reaction
network whose loop over reactions writes ``rates[i] += ...`` into an array
made each step, a damped pendulum stepped ``while t < T``, a Monte-Carlo
pricer of an Asian call along geometric Brownian paths, and an upwind
Burgers solver updating ``u[1:-1]`` in place.  scientific.py registers them
beside its own ten (S11-S14) and times them the same way.

The hand-written adjoints are reverse sweeps an expert writes by hand in
numpy, one per program: the forward loop saving the states it needs, then
the loop backwards, the same loop structure as the program (a loop over
reactions stays a loop over reactions; what a step's reverse needs is saved,
not recomputed: the stencils' laplacians), taking the program's arguments and
returning the gradients with respect to the program's ``wrt``.  They are
the issue's yardstick for astgrad's numpy backend; scientific.py checks
each against astgrad's gradient before timing it, and
tests/test_benchmark_scientific.py against central differences.
"""

from __future__ import annotations

import numpy as np

# ------------------------------------------------------------------ the programs


def reaction_network(log_k, c0, reactants, stoich, dt, steps):
    """Mass-action kinetics A + B -> C by explicit Euler, each reaction's rate added into a fresh array."""
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(steps):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[reactants[i, 0]] * c[reactants[i, 1]]
        c = c + dt * (stoich @ rates)
    return np.sum(c * np.arange(len(c)))


def pendulum(length, theta0, damping, dt, T):
    """A damped pendulum by semi-implicit Euler until the clock passes T: the number of steps is the loop's."""
    t = 0.0
    theta, omega = theta0, 0.0
    while t < T:
        omega = omega - dt * (9.81 / length * np.sin(theta) + damping * omega)
        theta = theta + dt * omega
        t = t + dt
    return theta ** 2 + 0.1 * omega ** 2


def asian_call(spot, vol, rate, maturity, strike, z):
    """The Monte-Carlo price of an arithmetic Asian call, geometric Brownian paths from the normals z."""
    n_paths, n_steps = z.shape
    dt = maturity / n_steps
    s = spot * np.ones(n_paths)
    total = np.zeros(n_paths)
    for j in range(n_steps):
        s = s * np.exp((rate - 0.5 * vol ** 2) * dt + vol * np.sqrt(dt) * z[:, j])
        total = total + s
    payoff = np.maximum(total / n_steps - strike, 0.0)
    return np.exp(-rate * maturity) * np.mean(payoff)


def burgers(nu, u0, dx, dt, steps):
    """Viscous Burgers, first-order upwind advection chosen by the sign of u, the ends held."""
    u = u0.copy()
    for _ in range(steps):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    return np.sum(u ** 2) * dx


# ------------------------------------------------------------------ inputs

def reaction_inputs(size, rng):
    species, reactions, steps = {"test": (4, 5, 4), "full": (10, 12, 300)}[size]
    reactants = rng.integers(0, species, (reactions, 2))
    stoich = np.zeros((species, reactions))
    for i, (a, b) in enumerate(reactants):  # A + B -> C, C another species
        stoich[a, i] -= 1
        stoich[b, i] -= 1
        stoich[(a + b + 1) % species, i] += 1
    return 0.3 * rng.standard_normal(reactions), rng.uniform(0.5, 1.5, species), reactants, stoich, 0.01, steps


def pendulum_inputs(size, rng):
    dt, T = {"test": (0.01, 0.1), "full": (0.001, 10.0)}[size]
    return 1.2, 0.8, 0.1, dt, T


def asian_inputs(size, rng):
    paths, steps = {"test": (16, 4), "full": (10_000, 50)}[size]
    return 100.0, 0.25, 0.03, 1.0, 95.0, rng.standard_normal((paths, steps))


def burgers_inputs(size, rng):
    n, steps = {"test": (10, 5), "full": (200, 400)}[size]
    x = np.linspace(0.0, 2 * np.pi, n)
    return 0.05, np.sin(x) + 0.3 + 0.05 * rng.standard_normal(n), x[1] - x[0], 0.002, steps


def clock_steps(dt, T):
    """How many times ``while t < T: t = t + dt`` runs, counted as the program counts (rounding included)."""
    t, steps = 0.0, 0
    while t < T:
        t, steps = t + dt, steps + 1
    return steps


# ------------------------------------------------------------------ JAX ports (lax loops: jax.grad cannot reverse a while)

def jax_reaction(jnp, lax, reactants, stoich, dt, steps):
    def port(log_k, c0):
        k = jnp.exp(log_k)

        def body(_, c):
            rates = jnp.zeros(len(reactants))
            for i in range(len(reactants)):  # unrolled: a dozen reactions
                rates = rates.at[i].add(k[i] * c[int(reactants[i, 0])] * c[int(reactants[i, 1])])
            return c + dt * (stoich @ rates)
        c = lax.fori_loop(0, steps, body, c0)
        return jnp.sum(c * jnp.arange(len(c0)))
    return port


def jax_pendulum(jnp, lax, dt, T):
    def port(length, theta0, damping):
        def body(_, state):
            theta, omega = state
            omega = omega - dt * (9.81 / length * jnp.sin(theta) + damping * omega)
            return theta + dt * omega, omega
        theta, omega = lax.fori_loop(0, clock_steps(dt, T), body, (theta0, 0.0 * theta0))
        return theta ** 2 + 0.1 * omega ** 2
    return port


def jax_burgers(jnp, lax, dx, dt, steps):
    def port(nu, u0):
        def body(_, u):
            back = u[1:-1] - u[:-2]
            ahead = u[2:] - u[1:-1]
            advect = jnp.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
            return u.at[1:-1].set(u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back))
        return jnp.sum(lax.fori_loop(0, steps, body, u0) ** 2) * dx
    return port


# ------------------------------------------------------------------ adjoints by hand

def heat_adjoint(kappa, u0, steps):
    """S1's gradient in (kappa, u0): each step's second difference saved forward, its transpose applied backward."""
    second = np.empty((steps, len(u0) - 2))
    u = u0.copy()
    for n in range(steps):
        second[n] = u[2:] - 2 * u[1:-1] + u[:-2]
        u[1:-1] += kappa * second[n]
    du, dkappa = 2 * u, 0.0
    for n in range(steps - 1, -1, -1):
        g = du[1:-1].copy()
        dkappa += g @ second[n]
        du[2:] += kappa * g
        du[1:-1] -= 2 * kappa * g
        du[:-2] += kappa * g
    return dkappa, du


def verlet_adjoint(vel0, pos0, mass, dt, steps):
    """S3's gradient in (vel0, pos0): each Verlet step is linear in the state, so it is reversed without saving it."""
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / mass
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = -pos / mass
        vel += 0.5 * dt * acc
    e0 = 0.5 * np.sum(mass * vel0 ** 2) + 0.5 * np.sum(pos0 ** 2)
    drift = 2 * (0.5 * np.sum(mass * vel ** 2) + 0.5 * np.sum(pos ** 2) - e0)
    dpos, dvel = drift * pos + vel, drift * mass * vel + pos
    for _ in range(steps):
        dpos -= 0.5 * dt * dvel / mass
        dvel += dt * dpos
        dpos -= 0.5 * dt * dvel / mass
    return dvel - drift * mass * vel0, dpos - drift * pos0


def wave_adjoint(c, u0, steps):
    """S4's gradient in (c, u0): U[n+1] = 2 U[n] - U[n-1] + c lap(U[n]) backwards; the periodic laplacian is symmetric."""
    def lap(u):
        return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u

    laplacians = np.empty((steps,) + u0.shape)
    u_prev = u = u0
    for n in range(steps):
        laplacians[n] = lap(u)
        u_prev, u = u, 2 * u - u_prev + c * laplacians[n]
    # lam_next: the adjoint of U[n+1], complete; lam: of U[n], so far
    lam_next, lam, dc = 2 * u, np.zeros_like(u0), 0.0
    for n in range(steps - 1, -1, -1):
        dc += np.sum(lam_next * laplacians[n])
        lam_next, lam = lam + 2 * lam_next + c * lap(lam_next), -lam_next
    return dc, lam_next + lam  # U[0] and U[-1] are both u0


def reaction_adjoint(log_k, c0, reactants, stoich, dt, steps):
    """S11's gradient in (log_k, c0): the concentrations saved forward, the loop over reactions run backward."""
    k = np.exp(log_k)
    states = np.empty((steps, len(c0)))
    c = c0.copy()
    for n in range(steps):
        states[n] = c
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[reactants[i, 0]] * c[reactants[i, 1]]
        c = c + dt * (stoich @ rates)
    dc, dk = np.arange(len(c0), dtype=np.float64), np.zeros(len(k))
    for n in range(steps - 1, -1, -1):
        c = states[n]
        drates = dt * (stoich.T @ dc)
        for i in range(len(k)):
            a, b = reactants[i, 0], reactants[i, 1]
            dk[i] += drates[i] * c[a] * c[b]
            dc[a] += drates[i] * k[i] * c[b]
            dc[b] += drates[i] * k[i] * c[a]
    return dk * k, dc


def pendulum_adjoint(length, theta0, damping, dt, T):
    """S12's gradient in (length, theta0, damping): each step's angle, sine and velocity saved forward, the steps reversed."""
    t = 0.0
    theta, omega = theta0, 0.0
    thetas, sines, omegas = [], [], []
    while t < T:
        sine = np.sin(theta)
        thetas.append(theta)
        sines.append(sine)
        omegas.append(omega)
        omega = omega - dt * (9.81 / length * sine + damping * omega)
        theta = theta + dt * omega
        t = t + dt
    dtheta, domega = 2 * theta, 0.2 * omega
    dlength = ddamping = 0.0
    pull, decay = dt * 9.81 / length, 1 - dt * damping
    for theta, sine, omega in zip(reversed(thetas), reversed(sines), reversed(omegas)):
        domega += dt * dtheta  # theta = theta + dt * omega, omega the new one
        dlength += sine * domega
        dtheta -= pull * np.cos(theta) * domega
        ddamping += omega * domega
        domega *= decay
    return pull / length * dlength, dtheta, -dt * ddamping


def burgers_adjoint(nu, u0, dx, dt, steps):
    """S14's gradient in (nu, u0): the states saved forward; each step's upwind branch, as the sign chose it, reversed."""
    states = np.empty((steps, len(u0)))
    u = u0.copy()
    for n in range(steps):
        states[n] = u
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    du, dnu, diffusion = 2 * dx * u, 0.0, dt / dx ** 2
    for n in range(steps - 1, -1, -1):
        v = states[n]
        mid, back, ahead = v[1:-1], v[1:-1] - v[:-2], v[2:] - v[1:-1]
        g = du[1:-1].copy()
        dnu += diffusion * (g @ (ahead - back))
        forward = mid > 0
        ga = -dt / dx * g  # the adjoint of advect
        # advect = mid * back where forward, mid * ahead elsewhere; then the diffusion's (ahead - back)
        dmid = ga * np.where(forward, back, ahead)
        dback = np.where(forward, ga * mid, 0.0) - nu * diffusion * g
        dahead = np.where(forward, 0.0, ga * mid) + nu * diffusion * g
        du[1:-1] += dmid + dback - dahead  # u[1:-1]'s identity is du itself; back and ahead read mid too
        du[:-2] -= dback
        du[2:] += dahead
    return dnu, du


def lotka_volterra_vjp(y, p, g):
    """The vector-Jacobian products of Lotka-Volterra's right-hand side at y: (g J_y, g J_p)."""
    y0, y1, g0, g1 = y[0], y[1], g[0], g[1]
    dy = np.array([g0 * (p[0] - p[1] * y1) + g1 * p[2] * y1, g1 * (p[2] * y0 - p[3]) - g0 * p[1] * y0])
    return dy, np.array([g0 * y0, -g0 * y0 * y1, g1 * y0 * y1, -g1 * y1])


#: a right-hand side's vector-Jacobian products written by hand, by the function's name (S2 takes f)
RHS_VJPS = {"lotka_volterra": lotka_volterra_vjp}


def ode_fit_adjoint(p, f, t, observed):
    """S2's gradient in p: RK4 forward saving each step's four stage states, each step reversed through f's VJP."""
    return (rk4_fit_adjoint(p, f, RHS_VJPS[f.__name__], t, observed),)  # one gradient: wrt is (p,)


def rk4_fit_adjoint(p, f, vjp, t, observed):
    """``ode_fit_adjoint`` with f's VJP given (no table: Numba compiles it with f and vjp jitted)."""
    y = np.array([1.0, 0.5])
    ys = np.empty((len(t), len(y)))
    stages = np.empty((len(t) - 1, 4, len(y)))
    ys[0] = y
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        k1 = f(t[i], y, p)
        stages[i, 0] = y
        stages[i, 1] = y + h / 2 * k1
        k2 = f(t[i] + h / 2, stages[i, 1], p)
        stages[i, 2] = y + h / 2 * k2
        k3 = f(t[i] + h / 2, stages[i, 2], p)
        stages[i, 3] = y + h * k3
        k4 = f(t[i] + h, stages[i, 3], p)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        ys[i + 1] = y
    dys = 2 * (ys - observed)
    dy, dp = dys[-1], np.zeros(len(p))
    for i in range(len(t) - 2, -1, -1):
        h = t[i + 1] - t[i]
        # y_next = y + h / 6 (k1 + 2 k2 + 2 k3 + k4); k4 = f(y + h k3), k3 = f(y + h/2 k2), k2 = f(y + h/2 k1)
        g4, d4 = vjp(stages[i, 3], p, h / 6 * dy)
        g3, d3 = vjp(stages[i, 2], p, h / 3 * dy + h * g4)
        g2, d2 = vjp(stages[i, 1], p, h / 3 * dy + h / 2 * g3)
        g1, d1 = vjp(stages[i, 0], p, h / 6 * dy + h / 2 * g2)
        dp += d4 + d3 + d2 + d1
        dy = dy + g4 + g3 + g2 + g1 + dys[i]
    return dp


#: the hand-written adjoint of each program that has one, by the program's function name
ADJOINTS = {"heat": heat_adjoint, "verlet": verlet_adjoint, "wave": wave_adjoint,
            "reaction_network": reaction_adjoint, "pendulum": pendulum_adjoint, "burgers": burgers_adjoint,
            "ode_fit": ode_fit_adjoint}
