"""Scientific numpy programs (issues 29 and 32): astgrad's gradient over the primal, beside jax.jit, HIPS autograd, the tape.

Fourteen programs as people write them with numpy and scipy (a 1-D heat
equation updating ``u[1:-1]`` in place, an RK4 integrator taking the
right-hand side as an argument, velocity Verlet with ``+=``, a 2-D wave
stencil with ``np.roll``, a Gaussian-process likelihood with
``cho_factor``/``cho_solve``, a Kalman filter, Black-Scholes with
``norm.cdf``, a GLM with ``gammaln``, a mixture with ``logsumexp``, a
pairwise potential with its diagonal masked after ``1 / sqrt(r2)``; and
issue 32's simulations from simulations.py: a reaction network writing
``rates[i] += ...``, a pendulum stepped ``while t < T``, a Monte-Carlo
Asian call, an upwind Burgers solver).  For each, ``astgrad.grad`` is the
reference; every other system's gradient is checked against it
(``CHECK_RTOL``, relative to the largest entry) before anything is timed,
and a system that cannot run the program or disagrees is reported with the
reason, not timed.  The systems beside the primal and ``astgrad.grad``:

* ``astgrad numba``: ``astgrad.grad(f, backend="numba")``; a refusal is
  reported with its message.  Its first call (the transform and Numba's
  compile) is reported apart, measured in new processes for each program
  (``--first-call KEY``; the median of three, ``--first-calls``) with
  Numba's disk cache off, after one small
  gradient has paid Numba's start-up: what a user's first gradient of the
  program costs.  (In this process a program's helpers compiled for an
  earlier program are compiled already.)  With ``--kept-helpers``, also
  that first call once astgrad's helpers are kept on disk by an earlier
  process and the program's own code is not: a new program's first call on a
  machine where a gradient was compiled before.
* ``hand-written``: a reverse sweep written by hand in numpy
  (simulations.py ``ADJOINTS``: S1, S2, S3, S4, S11, S12, S14).  With
  ``--hand-numba``, also each one's first call compiled by ``numba.njit``
  as written (S2's with its right-hand side and VJP jitted), measured as
  astgrad's Numba first call is: the compile a user writing the adjoint for
  Numba pays on the same machine, beside astgrad's; where Numba cannot
  compile it, its reason.
* ``jax.jit``: ``jax.jit(jax.grad(port))`` with x64 enabled, the program
  ported to ``jax.numpy``/``jax.scipy``; the first call (trace and compile)
  is reported apart.  ``jax_loops`` says per program whether its loop is a
  Python loop unrolled under jit or ``lax.fori_loop``/``lax.scan``.
* HIPS autograd: the program's own source with ``np`` (and the scipy names)
  rebound to ``autograd.numpy``/``autograd.scipy``; it cannot run item
  assignment, which is reported as such.
* the tape: the program run on ``astgrad.Tensor`` arguments, ``.backward()``.

After the times, the peak memory of one call of each system (tracemalloc;
jax.jit's buffers are XLA's, not Python's, and are not measured) and issue
32's targets, each met or not with its numbers.  With ``--snapshots 2 3 4``,
also the stencils' (S1, S4, S14) peak memory with their loop marked
``astgrad.checkpointed(range(steps), snapshots=s)`` (checkpointing.py's
copies, each gradient checked against the unmarked one) beside the unmarked
gradient's, and the memory target for each s.

Usage: ``python benchmarks/scientific.py [--quick] [--repeat 9] [--cpu-time] [--only S1,S11] [--no-fresh]
[--first-calls 3] [--kept-helpers] [--hand-numba] [--snapshots 2]``
or ``python benchmarks/run.py --scientific``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from typing import Callable  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
if (pathlib.Path(__file__).resolve().parent.parent / "src" / "astgrad").is_dir():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))

from scipy.linalg import cho_factor, cho_solve  # noqa: E402
from scipy.special import gammaln, logsumexp  # noqa: E402
from scipy.stats import norm  # noqa: E402

import astgrad  # noqa: E402
from simulations import (ADJOINTS, RHS_VJPS, asian_call, asian_inputs, burgers, burgers_inputs,  # noqa: E402
                         jax_burgers, jax_pendulum, jax_reaction, pendulum, pendulum_inputs, reaction_inputs,
                         reaction_network, rk4_fit_adjoint)

CHECK_RTOL = 1e-6
COLUMNS = ["primal", "astgrad.grad", "astgrad numba", "hand-written", "tape", "jax.jit", "HIPS autograd"]
#: the programs of issue 32's suite (heat, RK4, N-body as Verlet, reaction network, wave, while, Monte-Carlo, Burgers)
ISSUE_32 = ("S1", "S2", "S3", "S4", "S11", "S12", "S13", "S14")
#: the stencils, whose gradient's peak memory issue 32 holds to 4x the primal's
STENCILS = ("S1", "S4", "S14")
#: the note of a program with no adjoint written by hand: a blank cell, not a footnote
NOT_WRITTEN = "none written"


# ------------------------------------------------------------------ the programs

def heat(kappa, u0, steps):
    """Explicit finite differences for u_t = kappa u_xx, the ends held, the interior written in place."""
    u = u0.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


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


def ode_fit(p, f, t, observed):
    return np.sum((rk4(f, np.array([1.0, 0.5]), t, p) - observed) ** 2)


def total_energy(pos, vel, mass):
    return 0.5 * np.sum(mass * vel ** 2) + 0.5 * np.sum(pos ** 2)


def verlet(vel0, pos0, mass, dt, steps):
    """Velocity Verlet on a harmonic chain, the state updated with ``+=``; the energy drift and a moment."""
    pos, vel = pos0.copy(), vel0.copy()
    e0 = total_energy(pos, vel, mass)
    acc = -pos / mass
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = -pos / mass
        vel += 0.5 * dt * acc
    return (total_energy(pos, vel, mass) - e0) ** 2 + np.sum(pos * vel)


def wave(c, u0, steps):
    """The 2-D wave equation on a periodic grid, the laplacian from four np.roll's."""
    u_prev = u0
    u = u0
    for _ in range(steps):
        lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        u_next = 2 * u - u_prev + c * lap
        u_prev = u
        u = u_next
    return np.sum(u ** 2)


def gp_log_likelihood(log_length, log_noise, points, targets):
    length, noise = np.exp(log_length), np.exp(log_noise)
    sq = (points[:, None] - points[None, :]) ** 2
    K = np.exp(-sq / (2 * length ** 2)) + noise * np.eye(len(points))
    c, lower = cho_factor(K)
    alpha = cho_solve((c, lower), targets)
    log_det = 2 * np.sum(np.log(np.diag(c)))
    return -0.5 * targets @ alpha - 0.5 * log_det - 0.5 * len(points) * np.log(2 * np.pi)


def kalman(q, r, zs, F, H):
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


def black_scholes(spot, strike, rate, vol, maturity):
    d1 = (np.log(spot / strike) + (rate + vol ** 2 / 2) * maturity) / (vol * np.sqrt(maturity))
    d2 = d1 - vol * np.sqrt(maturity)
    return np.sum(spot * norm.cdf(d1) - strike * np.exp(-rate * maturity) * norm.cdf(d2))


def glm(beta, log_r, X, counts):
    """The negative log-likelihood of a negative-binomial regression with a log link."""
    mu = np.exp(X @ beta)
    r = np.exp(log_r)
    ll = (gammaln(counts + r) - gammaln(r) - gammaln(counts + 1)
          + r * np.log(r / (r + mu)) + counts * np.log(mu / (r + mu)))
    return -np.sum(ll)


def mixture(means, log_scales, logits, data):
    log_weights = logits - logsumexp(logits)
    z = (data[:, None] - means[None, :]) / np.exp(log_scales)[None, :]
    per_component = log_weights[None, :] - 0.5 * z ** 2 - log_scales[None, :] - 0.5 * np.log(2 * np.pi)
    return np.sum(logsumexp(per_component, axis=1))


def coulomb(x, q):
    d = x[:, None, :] - x[None, :, :]
    r2 = np.sum(d ** 2, axis=-1)
    inv_r = 1 / np.sqrt(r2)
    inv_r[r2 == 0] = 0
    return 0.5 * np.sum(q[:, None] * q[None, :] * inv_r)


# ------------------------------------------------------------------ inputs

def _heat_inputs(size, rng):
    n, steps = {"test": (12, 10), "full": (200, 400)}[size]
    x = np.linspace(0.0, 1.0, n)
    return 0.2, np.sin(np.pi * x) + 0.1 * rng.standard_normal(n), steps


def _ode_inputs(size, rng):
    n = {"test": 9, "full": 201}[size]
    t = np.linspace(0.0, 4.0, n)
    observed = rk4(lotka_volterra, np.array([1.0, 0.5]), t, np.array([1.1, 0.4, 0.3, 0.9])) + 0.01
    return np.array([1.0, 0.5, 0.35, 0.8]), lotka_volterra, t, observed


def _verlet_inputs(size, rng):
    n, steps = {"test": (3, 5), "full": (100, 300)}[size]
    return rng.standard_normal(n), rng.standard_normal(n), rng.uniform(0.5, 2.0, n), 0.05, steps


def _wave_inputs(size, rng):
    n, steps = {"test": (6, 4), "full": (64, 100)}[size]
    grid = np.linspace(-1.0, 1.0, n)
    return 0.1, np.exp(-8 * (grid[:, None] ** 2 + grid[None, :] ** 2)), steps


def _gp_inputs(size, rng):
    n = {"test": 8, "full": 200}[size]
    points = np.sort(rng.uniform(-2, 2, n))
    return 0.2, -1.5, points, np.sin(points) + 0.1 * rng.standard_normal(n)


def _kalman_inputs(size, rng):
    steps = {"test": 6, "full": 100}[size]
    F = np.array([[1.0, 0.1, 0.0], [0.0, 1.0, 0.1], [0.0, 0.0, 1.0]])
    H = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    return 0.3, 0.5, rng.normal(size=(steps, 2)), F, H


def _bs_inputs(size, rng):
    n = {"test": 3, "full": 10_000}[size]
    return rng.uniform(80.0, 120.0, n), 100.0, 0.03, 0.25, 1.5


def _glm_inputs(size, rng):
    n, d = {"test": (20, 3), "full": (2000, 10)}[size]
    X = rng.standard_normal((n, d)) / np.sqrt(d)
    return 0.1 * rng.standard_normal(d), 0.4, X, rng.poisson(3.0, n).astype(float)


def _mixture_inputs(size, rng):
    n, k = {"test": (30, 2), "full": (2000, 5)}[size]
    data = np.concatenate([rng.normal(-1.0, 0.5, n // 2), rng.normal(1.5, 0.8, n - n // 2)])
    return np.linspace(-1.0, 1.5, k), -0.3 * np.ones(k), 0.1 * rng.standard_normal(k), data


def _coulomb_inputs(size, rng):
    n = {"test": 5, "full": 100}[size]
    return rng.normal(size=(n, 3)), rng.uniform(0.5, 1.5, n)


# ------------------------------------------------------------------ JAX ports

def _jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    return jax


def _jax_heat(jnp, lax, steps):
    def port(kappa, u0):
        def body(_, u):
            return u.at[1:-1].set(u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2]))
        return jnp.sum(lax.fori_loop(0, steps, body, u0) ** 2)
    return port


def _jax_ode(jnp, lax, t, observed):
    def rhs(t, y, p):
        return jnp.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    def port(p):
        def step(y, ti):
            t0, h = ti
            k1 = rhs(t0, y, p)
            k2 = rhs(t0 + h / 2, y + h / 2 * k1, p)
            k3 = rhs(t0 + h / 2, y + h / 2 * k2, p)
            k4 = rhs(t0 + h, y + h * k3, p)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
            return y, y
        y0 = jnp.array([1.0, 0.5])
        _, ys = lax.scan(step, y0, (t[:-1], jnp.diff(t)))
        return jnp.sum((jnp.concatenate([y0[None], ys]) - observed) ** 2)
    return port


def _jax_verlet(jnp, lax, mass, dt, steps):
    def energy(pos, vel):
        return 0.5 * jnp.sum(mass * vel ** 2) + 0.5 * jnp.sum(pos ** 2)

    def port(vel0, pos0):
        def body(_, state):
            pos, vel, acc = state
            vel = vel + 0.5 * dt * acc
            pos = pos + dt * vel
            acc = -pos / mass
            return pos, vel + 0.5 * dt * acc, acc
        pos, vel, _ = lax.fori_loop(0, steps, body, (pos0, vel0, -pos0 / mass))
        return (energy(pos, vel) - energy(pos0, vel0)) ** 2 + jnp.sum(pos * vel)
    return port


def _jax_wave(jnp, lax, steps):
    def port(c, u0):
        def body(_, state):
            u_prev, u = state
            lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
            return u, 2 * u - u_prev + c * lap
        return jnp.sum(lax.fori_loop(0, steps, body, (u0, u0))[1] ** 2)
    return port


def _jax_kalman(jnp, lax, zs, F, H):
    def port(q, r):
        n = F.shape[0]
        Q, R = q * jnp.eye(n), r * jnp.eye(H.shape[0])

        def step(carry, z):
            x, P, ll = carry
            x = F @ x
            P = F @ P @ F.T + Q
            y = z - H @ x
            S = H @ P @ H.T + R
            K = P @ H.T @ jnp.linalg.inv(S)
            ll = ll - 0.5 * (y @ jnp.linalg.solve(S, y) + jnp.linalg.slogdet(S)[1])
            return (x + K @ y, P - K @ H @ P, ll), None
        return lax.scan(step, (jnp.zeros(n), jnp.eye(n), 0.0), zs)[0][2]
    return port


def _jax_coulomb(jnp):
    def port(x, q):
        d = x[:, None, :] - x[None, :, :]
        r2 = jnp.sum(d ** 2, axis=-1)
        diagonal = r2 == 0
        inv_r = jnp.where(diagonal, 0.0, 1 / jnp.sqrt(jnp.where(diagonal, 1.0, r2)))  # the "double where"
        return 0.5 * jnp.sum(q[:, None] * q[None, :] * inv_r)
    return port


def _rebound(fn, **names):
    """``fn`` with some of its globals replaced: the same source on another library."""
    return types.FunctionType(fn.__code__, dict(fn.__globals__, **names), fn.__name__, fn.__defaults__,
                              fn.__closure__)


def _jax_scipy_names():
    import jax.numpy as jnp
    import jax.scipy.linalg as jla
    import jax.scipy.special as jsp
    import jax.scipy.stats as jst
    return {"np": jnp, "cho_factor": jla.cho_factor, "cho_solve": jla.cho_solve, "gammaln": jsp.gammaln,
            "logsumexp": jsp.logsumexp, "norm": jst.norm}


def _autograd_names():
    import autograd.numpy as anp
    import autograd.scipy.linalg as ala
    import autograd.scipy.special as asp
    import autograd.scipy.stats as ast
    return {"np": anp, "cho_factor": ala.cho_factor, "cho_solve": ala.cho_solve, "gammaln": asp.gammaln,
            "logsumexp": asp.logsumexp, "norm": ast.norm}


# ------------------------------------------------------------------ the table of programs

@dataclass(frozen=True)
class Program:
    key: str
    title: str
    fn: Callable
    wrt: tuple
    inputs: Callable
    #: how the jax.jit port is written: "source" (the program's own source on jax.numpy/jax.scipy) or a note
    jax_loops: str = "no loop: the program's own source on jax.numpy/jax.scipy"
    #: the item assignment in the program, which HIPS autograd cannot run ("" if none)
    writes: str = ""

    def make_inputs(self, size, seed=0):
        return tuple(self.inputs(size, np.random.default_rng(seed)))


PROGRAMS = {p.key: p for p in [
    Program("S1", "1-D heat, u[1:-1] = ..., 200 points x 400 steps", heat, (0, 1), _heat_inputs,
            "lax.fori_loop, u.at[1:-1].set", writes="u[1:-1] = ..."),
    Program("S2", "RK4 taking f (Lotka-Volterra), 200 steps", ode_fit, (0,), _ode_inputs, "lax.scan"),
    Program("S3", "velocity Verlet with +=, 100 bodies x 300 steps", verlet, (0, 1), _verlet_inputs,
            "lax.fori_loop"),
    Program("S4", "2-D wave, np.roll stencil, 64x64 x 100 steps", wave, (0, 1), _wave_inputs, "lax.fori_loop"),
    Program("S5", "GP log-likelihood, cho_factor/cho_solve, n=200", gp_log_likelihood, (0, 1), _gp_inputs),
    Program("S6", "Kalman filter log-likelihood, 100 steps, 3-d state", kalman, (0, 1), _kalman_inputs,
            "lax.scan over the observations"),
    Program("S7", "Black-Scholes with norm.cdf, 10^4 options", black_scholes, (0, 3), _bs_inputs),
    Program("S8", "negative-binomial GLM with gammaln, 2000x10", glm, (0, 1), _glm_inputs),
    Program("S9", "Gaussian mixture with logsumexp, 2000 x 5", mixture, (0, 1, 2), _mixture_inputs),
    Program("S10", "pairwise 1/r, diagonal masked, 100 particles", coulomb, (0, 1), _coulomb_inputs,
            "no loop; the mask as the \"double where\" (as written, jax.grad is NaN on the diagonal)",
            writes="inv_r[r2 == 0] = 0"),
    Program("S11", "reaction network, rates[i] += ..., 12 reactions x 300 steps", reaction_network, (0, 1),
            reaction_inputs, "lax.fori_loop, the reactions unrolled, rates.at[i].add", writes="rates[i] += ..."),
    Program("S12", "damped pendulum, while t < T, 10^4 steps", pendulum, (0, 1, 2), pendulum_inputs,
            "lax.fori_loop over the step count, counted before tracing (jax.grad cannot reverse a while_loop)"),
    Program("S13", "Monte-Carlo Asian call, 10^4 paths x 50 steps", asian_call, (0, 1), asian_inputs,
            "the program's own source, its 50 steps unrolled under jit"),
    Program("S14", "upwind Burgers, u[1:-1] = ..., 200 points x 400 steps", burgers, (0, 1), burgers_inputs,
            "lax.fori_loop, u.at[1:-1].set", writes="u[1:-1] = ..."),
]}


# ------------------------------------------------------------------ the systems, checked

class Refused(Exception):
    """A system that cannot run a program, with the reason."""


def _one_line(exc):
    text = " ".join(str(exc).split()).replace(str(pathlib.Path(__file__).resolve().parent.parent) + "/", "")
    return f"{type(exc).__name__}: " + (text if len(text) < 400 else text[:397] + "...")


def _jax_runner(program, args, first_calls):
    jax = _jax()
    import jax.numpy as jnp
    from jax import lax
    fn = program.fn
    if fn is heat:
        port, traced = _jax_heat(jnp, lax, args[2]), args[:2]
    elif fn is ode_fit:
        port, traced = _jax_ode(jnp, lax, jnp.asarray(args[2]), jnp.asarray(args[3])), args[:1]
    elif fn is verlet:
        port, traced = _jax_verlet(jnp, lax, jnp.asarray(args[2]), args[3], args[4]), args[:2]
    elif fn is wave:
        port, traced = _jax_wave(jnp, lax, args[2]), args[:2]
    elif fn is kalman:
        port, traced = _jax_kalman(jnp, lax, *(jnp.asarray(a) for a in args[2:])), args[:2]
    elif fn is coulomb:
        port, traced = _jax_coulomb(jnp), args
    elif fn is reaction_network:
        port, traced = jax_reaction(jnp, lax, args[2], jnp.asarray(args[3]), *args[4:]), args[:2]
    elif fn is pendulum:
        port, traced = jax_pendulum(jnp, lax, *args[3:]), args[:3]
    elif fn is burgers:
        port, traced = jax_burgers(jnp, lax, *args[2:]), args[:2]
    else:
        port, traced = _rebound(fn, **_jax_scipy_names()), args
    traced = [jnp.asarray(a, dtype=jnp.float64) for a in traced]
    gradient = jax.jit(jax.grad(port, argnums=program.wrt))
    start = time.perf_counter()
    jax.block_until_ready(gradient(*traced))
    first_calls["jax.jit"] = time.perf_counter() - start
    return lambda: jax.block_until_ready(gradient(*traced))


def _numba_runner(program, args, first_calls):
    """astgrad's gradient compiled by Numba; its first call (the transform and Numba's compile) reported apart."""
    gradient = astgrad.grad(program.fn, wrt=program.wrt, backend="numba")
    start, cpu = time.perf_counter(), time.process_time()
    gradient(*args)
    first_calls["astgrad numba"] = time.perf_counter() - start
    first_calls["astgrad numba CPU"] = time.process_time() - cpu  # the process's: Numba compiles in this thread
    return lambda: gradient(*args)


def fresh_first_call(key, size, cache="0", hand=False):
    """(wall, CPU) seconds of the Numba gradient's first call of program ``key`` in a new process, or the reason
    it has none: Numba's start-up paid first, nothing else compiled before it, the disk cache ``cache``
    (``ASTGRAD_NUMBA_CACHE``: off by default).  ``hand``: the first call of its hand-written adjoint compiled by
    Numba instead (``numba_adjoint``), the compile a user writing the adjoint for Numba pays."""
    command = [sys.executable, str(pathlib.Path(__file__).resolve()), "--first-call-hand" if hand else "--first-call",
               key]
    done = subprocess.run(command + (["--quick"] if size == "test" else []), capture_output=True, text=True,
                          env=dict(os.environ, ASTGRAD_NUMBA_CACHE=cache), timeout=900)
    if done.returncode:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def median_first_call(measure, times):
    """The median (by CPU time) of ``times`` first calls ``measure()`` made, each in a new process; the first
    failure's reason where one failed."""
    runs = []
    for _ in range(max(times, 1)):
        run = measure()
        if isinstance(run, str):
            return run
        runs.append(run)
    return sorted(runs, key=lambda run: run[1])[len(runs) // 2]


def kept_helpers_first_call(key, size):
    """``fresh_first_call`` once astgrad's helpers are kept on disk and the program's own code is not: a first
    process fills an empty cache, the program's files are removed, and a second process is measured (a new
    program's first call on a machine where any gradient was compiled before)."""
    with tempfile.TemporaryDirectory(prefix="astgrad-kept-") as cache:
        first = fresh_first_call(key, size, cache)
        if isinstance(first, str):
            return first
        for path in pathlib.Path(cache).iterdir():
            if path.name != "helpers":
                shutil.rmtree(path) if path.is_dir() else path.unlink()
        return fresh_first_call(key, size, cache)


def _first_call(key, size):
    """``--first-call``: print the wall and CPU seconds of program ``key``'s Numba gradient's first call."""
    import run
    _warm_up(run)
    program = PROGRAMS[key]
    args = program.make_inputs(size)
    gradient = astgrad.grad(program.fn, wrt=program.wrt, backend="numba")
    start, cpu = time.perf_counter(), time.process_time()
    gradient(*args)
    print(time.perf_counter() - start, time.process_time() - cpu)


def numba_adjoint(program, args):
    """``program``'s hand-written adjoint compiled by ``numba.njit`` as written, and the arguments it takes
    (S2's: its core, with the right-hand side and its VJP jitted); raises ``Refused`` where none is written."""
    import numba
    adjoint = ADJOINTS.get(program.fn.__name__)
    if adjoint is None:
        raise Refused(NOT_WRITTEN)
    if program.fn is ode_fit:
        p, f, t, observed = args
        return numba.njit(rk4_fit_adjoint), (p, numba.njit(f), numba.njit(RHS_VJPS[f.__name__]), t, observed)
    return numba.njit(adjoint), args


def _first_call_hand(key, size):
    """``--first-call-hand``: print the wall and CPU seconds of program ``key``'s hand-written adjoint's first call
    under Numba, after the same start-up as ``_first_call``; exit with Numba's reason where it cannot compile it,
    or where its gradient differs from astgrad's."""
    import run
    _warm_up(run)
    program = PROGRAMS[key]
    args = program.make_inputs(size)
    compiled, compiled_args = numba_adjoint(program, args)
    start, cpu = time.perf_counter(), time.process_time()
    try:
        got = compiled(*compiled_args)
    except Exception as exc:  # Numba's typing errors: the reason is the line after "Failed in ... pipeline"
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()]
        reason = lines[1] if len(lines) > 1 and lines[0].startswith("Failed in") else lines[0] if lines else ""
        raise SystemExit(f"Numba cannot compile it: {reason}") from None
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    want = astgrad.grad(program.fn, wrt=program.wrt)(*args)
    differs = _compare(got, tuple(np.asarray(w, dtype=np.float64) for w in (want if isinstance(want, tuple) else (want,))))
    if differs:
        raise SystemExit(f"the hand-written adjoint under Numba: {differs}")
    print(wall, cpu)


def _hand_runner(program, args):
    adjoint = ADJOINTS.get(program.fn.__name__)
    if adjoint is None:
        raise Refused(NOT_WRITTEN)
    return lambda: adjoint(*args)


def _autograd_runner(program, args):
    import autograd
    names = _autograd_names()
    fn = _rebound(program.fn, **names)
    args = list(args)
    if program.fn is ode_fit:  # the right-hand side is the program's too: on autograd.numpy as well
        args[1] = _rebound(args[1], **names)
    if program.fn is verlet:
        fn = _rebound(program.fn, **names, total_energy=_rebound(total_energy, **names))
    gradient = autograd.grad(lambda *ws: fn(*_with(args, program.wrt, ws)), argnum=tuple(range(len(program.wrt))))
    at = tuple(args[i] for i in program.wrt)
    return lambda: gradient(*at)


def _with(args, wrt, values):
    out = list(args)
    for i, v in zip(wrt, values):
        out[i] = v
    return out


def _tape_runner(program, args):
    def run():
        leaves = [astgrad.tensor(np.asarray(args[i], dtype=np.float64), requires_grad=True) for i in program.wrt]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            program.fn(*_with(args, program.wrt, leaves)).backward()
        lost = [i for i, leaf in zip(program.wrt, leaves) if leaf.grad is None]
        if lost:  # a Tensor written into a numpy array (S11's rates[i] += ...) becomes a float, off the tape
            raise RuntimeError(f"no gradient reached argument {lost[0]} (its .grad is None): the result does not "
                               "depend on it through the tape" + "".join(f"; it warned: {w.message}" for w in caught[:1]))
        return tuple(leaf.grad.numpy() for leaf in leaves)
    return run


def _compare(got, want):
    got = tuple(np.asarray(g, dtype=np.float64) for g in (got if isinstance(got, (tuple, list)) else (got,)))
    if len(got) != len(want):
        return f"{len(got)} gradients for {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"gradient {i} has shape {g.shape}, astgrad's {w.shape}"
        scale = max(float(np.max(np.abs(w))), 1e-300)
        error = float(np.max(np.abs(g - w))) / scale
        if not error <= CHECK_RTOL:
            return f"gradient {i} differs from astgrad's by {error:.1e} (relative to its largest entry)"
    return ""


def central_differences(program, args, step=1e-3):
    """d f / d args[i] for each i in ``wrt``, one element at a time: the reference when astgrad refuses.

    Fourth-order central differences with a step relative to each entry, so
    that the rounding of a large sum (S7's ten thousand prices) stays far
    below the check's tolerance.
    """
    out = []
    for i in program.wrt:
        at = np.array(args[i], dtype=np.float64)
        grad = np.empty_like(at)
        for index in np.ndindex(at.shape):
            h = step * max(1.0, abs(float(at[index])))
            values = []
            for k in (2, 1, -1, -2):
                point = at.copy()
                point[index] += k * h
                values.append(float(program.fn(*_with(args, (i,), (point if at.ndim else float(point),)))))
            grad[index] = (-values[0] + 8 * values[1] - 8 * values[2] + values[3]) / (12 * h)
        out.append(grad)
    return tuple(out)


#: the peers, each a maker of a zero-argument gradient from (program, args, a dict of first-call seconds)
PEER_MAKERS = {"astgrad numba": _numba_runner,
               "hand-written": lambda program, args, _: _hand_runner(program, args),
               "tape": lambda program, args, _: _tape_runner(program, args),
               "jax.jit": _jax_runner,
               "HIPS autograd": lambda program, args, _: _autograd_runner(program, args)}


def systems(program, size, peers=tuple(PEER_MAKERS)):
    """name -> a zero-argument call, each gradient checked against astgrad's; name -> why a system has none.

    When astgrad refuses the program (the reason is a note), the peers are
    checked against central differences of the program instead.  Also
    returns the reference gradient and the first-call seconds of jax.jit
    (trace and compile) and of astgrad's Numba backend (transform and
    compile), by system.
    """
    args = program.make_inputs(size)
    runners = {"primal": lambda: program.fn(*args)}
    notes, first_calls = {}, {}
    try:
        gradient = astgrad.grad(program.fn, wrt=program.wrt)
        reference = tuple(np.asarray(g, dtype=np.float64) for g in gradient(*args))
        runners["astgrad.grad"] = lambda: gradient(*args)
    except Exception as exc:
        notes["astgrad.grad"] = "refused: " + _one_line(exc)
        reference = central_differences(program, args)
    for name in peers:
        try:
            run = PEER_MAKERS[name](program, args, first_calls)
            got = run()
        except ImportError as exc:
            notes[name] = f"not installed ({exc})"
            continue
        except Refused as exc:
            notes[name] = str(exc)
            continue
        except astgrad.TransformError as exc:
            notes[name] = "refused: " + _one_line(exc)
            continue
        except Exception as exc:
            cannot = (f"cannot do item assignment (`{program.writes}`); it stops at "
                      if name == "HIPS autograd" and program.writes else "cannot run it: ")
            notes[name] = cannot + _one_line(exc)
            continue
        problem = _compare(got, reference)
        if problem:
            notes[name] = "fails: " + problem + ("" if "astgrad.grad" in runners else
                                                 " (astgrad refused: checked against central differences)")
            continue
        runners[name] = run
    return runners, notes, reference, first_calls


# ------------------------------------------------------------------ timing and the table

def _seconds(s):
    return f"{s * 1e6:.1f} µs" if s < 1e-3 else f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.2f} s"


def _round_robin(run, runners, repeat, sample_seconds):
    """name -> median seconds per call; every repeat calls each runner once, in a rotating order."""
    loops = {name: run.inner_loops(call, sample_seconds) for name, call in runners.items()}
    samples = {name: [] for name in runners}
    order = list(runners)
    for r in range(repeat):
        shift = r % len(order)
        for name in order[shift:] + order[:shift]:
            samples[name].append(run.time_once(runners[name], loops[name]))
    return {name: float(np.median(values)) for name, values in samples.items()}


def _ratio(r):
    return f"x{r:.1f}" if r >= 1 else f"x{r:.2f}"


def _bytes(n):
    return f"{n / 2 ** 20:.2f} MB" if n >= 2 ** 20 else f"{n / 2 ** 10:.1f} kB"


def _geomean(values):
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def peaks(run, runners):
    """name -> bytes at the peak of one call (tracemalloc) above what was allocated before it; jax.jit left out."""
    return {name: run.peak_memory(call) for name, call in runners.items() if name != "jax.jit"}


def _warm_up(run):
    """Pay the transformer's and Numba's start-up before the first program, so no program's first call carries it."""
    run._warm_up_transformer()
    try:
        def warm(x):
            return np.sum(np.sin(x) * x)
        astgrad.grad(warm, backend="numba")(np.ones(3))
    except ImportError:
        pass


def targets(results, keys):
    """Issue 32's targets, each a line: met or not, with the numbers; ``results``: key -> (medians, notes, firsts, peaks)."""
    suite = [k for k in ISSUE_32 if k in keys]
    lines = [f"Issue 32's targets on its suite ({', '.join(suite)}):"]

    def ratios(name, over, among):
        return {k: results[k][0][name] / results[k][0][over] for k in among
                if name in results[k][0] and over in results[k][0]}

    numpy_ratio = ratios("astgrad.grad", "primal", suite)
    g = _geomean(list(numpy_ratio.values()))
    missing = [k for k in suite if k not in numpy_ratio]
    lines.append(f"* numpy backend, gradient/primal geometric mean <= 3.0: {g:.2f} over {len(numpy_ratio)} programs"
                 + (f" (no gradient: {', '.join(missing)})" if missing else "")
                 + (": met" if g <= 3.0 and not missing else ": not met"))
    hand = ratios("astgrad.grad", "hand-written", keys)
    if hand:
        g, worst = _geomean(list(hand.values())), max(hand, key=hand.get)
        lines.append(f"* numpy backend / hand-written adjoint, geometric mean <= 1.3: {g:.2f}"
                     f" ({', '.join(f'{k} {r:.2f}' for k, r in hand.items())}): {'met' if g <= 1.3 else 'not met'}")
        lines.append(f"* no program above 2x its hand-written adjoint: worst {worst} at {hand[worst]:.2f}: "
                     + ("met" if hand[worst] <= 2 else "not met"))
    compiled = [k for k in suite if "astgrad numba" in results[k][0]]
    lines.append(f"* Numba backend compiles every program: {len(compiled)} of {len(suite)}"
                 + (f", refused: {', '.join(k for k in suite if k not in compiled)}" if len(compiled) < len(suite) else "")
                 + (": met" if len(compiled) == len(suite) else ": not met"))
    both = [k for k in compiled if "jax.jit" in results[k][0]]
    if both:
        numba = _geomean(list(ratios("astgrad numba", "primal", both).values()))
        jax = _geomean(list(ratios("jax.jit", "primal", both).values()))
        lines.append(f"* Numba gradient/primal geometric mean <= jax.jit's, on the {len(both)} programs both run "
                     f"({', '.join(both)}): {numba:.3g} against {jax:.3g}: "
                     + ("not met" if numba > jax else "met" if len(both) == len(suite) else
                        "met there, not on the suite (not all compile)"))
    fresh = all(isinstance(results[k][2].get("astgrad numba fresh"), tuple) for k in compiled)
    firsts = {k: results[k][2]["astgrad numba fresh"] if fresh else
              (results[k][2]["astgrad numba"], results[k][2].get("astgrad numba CPU", float("nan"))) for k in compiled}
    if firsts:
        slow = [k for k, (wall, cpu) in firsts.items() if (cpu if fresh else wall) >= 3]
        lines.append("* Numba first call (transform and compile) under 3 s each, "
                     + ("in a new process each, CPU (wall): " if fresh else "wall (CPU): ")
                     + ", ".join(f"{k} {cpu:.2f} s ({wall:.2f} s)" if fresh else f"{k} {wall:.2f} s ({cpu:.2f} s)"
                                 for k, (wall, cpu) in firsts.items())
                     + (f": not met ({', '.join(slow)})" if slow else ": met where it compiles"))
    by_hand = {k: results[k][2]["hand-written numba"] for k in compiled if "hand-written numba" in results[k][2]}
    if by_hand and fresh:
        lines.append("  a hand-written adjoint compiled by Numba, its first call the same way, CPU (astgrad's over it): "
                     + ", ".join(f"{k} {t[1]:.2f} s ({firsts[k][1] / t[1]:.2f}x)" if isinstance(t, tuple) else
                                 f"{k} none (Numba cannot compile it as written)" for k, t in by_hand.items()))
    kept = {k: results[k][2]["astgrad numba kept helpers"] for k in compiled
            if isinstance(results[k][2].get("astgrad numba kept helpers"), tuple)}
    if kept:
        slow = [k for k, (wall, cpu) in kept.items() if cpu >= 3]
        lines.append("  the same with astgrad's helpers kept on disk (any gradient compiled before on the machine), "
                     "CPU (wall): " + ", ".join(f"{k} {cpu:.2f} s ({wall:.2f} s)" for k, (wall, cpu) in kept.items())
                     + (f": over 3 s: {', '.join(slow)}" if slow else ": all under 3 s"))
    over_hips = {k: results[k][3]["astgrad.grad"] / results[k][3]["HIPS autograd"] for k in suite
                 if "HIPS autograd" in results[k][3] and "astgrad.grad" in results[k][3]}
    if over_hips:
        bad = [k for k, r in over_hips.items() if r > 2]
        lines.append("* peak memory of one gradient <= 2x HIPS autograd's where it runs: "
                     + ", ".join(f"{k} {r:.2f}x" for k, r in over_hips.items()) + (": met" if not bad else ": not met"))
    over_primal = {k: results[k][3]["astgrad.grad"] / max(results[k][3]["primal"], 1) for k in STENCILS
                   if k in keys and "astgrad.grad" in results[k][3]}
    if over_primal:
        bad = [k for k, r in over_primal.items() if r > 4]
        lines.append("* peak memory of one gradient <= 4x the primal's on the stencils: "
                     + ", ".join(f"{k} {r:.0f}x" for k, r in over_primal.items()) + (": met" if not bad else ": not met"))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated programs, e.g. S1,S5")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="the test sizes, a smoke run")
    parser.add_argument("--cpu-time", action="store_true", help="time samples by the process's CPU time, all its threads (jax.jit computes on a worker thread)")
    parser.add_argument("--no-fresh", action="store_true",
                        help="report the Numba first calls made in this process, not each in a new process")
    parser.add_argument("--first-calls", type=int, default=3, metavar="N",
                        help="each Numba first call measured in N new processes, the median reported (default 3)")
    parser.add_argument("--kept-helpers", action="store_true",
                        help="also each Numba first call in a new process with astgrad's helpers kept on disk")
    parser.add_argument("--hand-numba", action="store_true",
                        help="also the first call of each hand-written adjoint compiled by Numba, in new processes")
    parser.add_argument("--first-call", metavar="KEY", help=argparse.SUPPRESS)  # the new process's part
    parser.add_argument("--first-call-hand", metavar="KEY", help=argparse.SUPPRESS)  # the same, hand-written
    parser.add_argument("--snapshots", type=int, nargs="*", default=[],
                        help="also the stencils' gradient memory with the loop marked checkpointed(range(steps), "
                             "snapshots=s), for each s given (checkpointing.py's copies)")
    options = parser.parse_args(argv)
    size = "test" if options.quick else "full"
    if options.first_call:
        _first_call(options.first_call, size)
        return
    if options.first_call_hand:
        _first_call_hand(options.first_call_hand, size)
        return
    import run  # run.py's inner_loops, time_once, peak_memory; its clock is set here, as run.py's --cpu-time sets it
    run._clock = run.cpu_clock if options.cpu_time else time.perf_counter
    keys = [k.strip().upper() for k in options.only.split(",")] if options.only else list(PROGRAMS)
    _warm_up(run)
    print(f"## Scientific programs: median seconds per call over {options.repeat} round-robin repeats, "
          f"{'CPU time of the process (all its threads)' if options.cpu_time else 'wall time'} (ratio to the primal)\n")
    print("| program | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    footnotes, results = [], {}

    def cell(key, name, notes, text):
        if text is not None:
            return text
        if notes.get(name) == NOT_WRITTEN:
            return "-"
        footnotes.append(f"[{len(footnotes) + 1}] {key} {name}: {notes.get(name, 'not run')}")
        return f"[{len(footnotes)}]"

    for key in keys:
        program = PROGRAMS[key]
        with np.errstate(divide="ignore", invalid="ignore"):  # S10: 1 / sqrt(0) on the diagonal, then masked
            runners, notes, _, first_calls = systems(program, size)
            medians = _round_robin(run, runners, options.repeat, 0.002 if options.quick else 0.02)
            peak = peaks(run, runners)
        if "astgrad numba" in runners and not options.no_fresh:
            first_calls["astgrad numba fresh"] = median_first_call(lambda key=key: fresh_first_call(key, size),
                                                                   options.first_calls)
            if options.kept_helpers:
                first_calls["astgrad numba kept helpers"] = median_first_call(
                    lambda key=key: kept_helpers_first_call(key, size), options.first_calls)
        if options.hand_numba and notes.get("hand-written") != NOT_WRITTEN:
            first_calls["hand-written numba"] = median_first_call(
                lambda key=key: fresh_first_call(key, size, hand=True), options.first_calls)
        results[key] = (medians, notes, first_calls, peak)
        cells = []
        for name in COLUMNS:
            text = None
            if name in medians:
                text = _seconds(medians[name]) + ("" if name == "primal" else
                                                  f" ({_ratio(medians[name] / medians['primal'])})")
            cells.append(cell(key, name, notes, text))
        print(f"| {key} {program.title} | " + " | ".join(cells) + " |", flush=True)
    print()
    for note in footnotes:
        print(note)
    print("\nFirst calls, not in the table: jax.jit's trace and XLA compile; astgrad numba's transform and Numba "
          "compile, in this process (Numba's start-up paid before the first program, each program's helpers "
          "compiled for those before it reused) and in a new process for the program alone (its disk cache off).\n")
    fresh = [] if options.no_fresh else [("astgrad numba fresh", "new process")]
    if options.kept_helpers and not options.no_fresh:
        fresh.append(("astgrad numba kept helpers", "helpers kept"))
    if options.hand_numba:
        fresh.append(("hand-written numba", "hand-written adjoint under Numba, new process"))
    print("| program | jax.jit | astgrad numba | astgrad numba, CPU time |"
          + "".join(f" {title} | {title}, CPU time |" for _, title in fresh) + "\n|---|---|---|---|"
          + "---|---|" * len(fresh))
    failed = []
    for key in keys:
        firsts = results[key][2]
        cells = [_seconds(firsts[n]) if n in firsts else "-" for n in ("jax.jit", "astgrad numba", "astgrad numba CPU")]
        for name, title in fresh:
            measured = firsts.get(name)
            cells += [_seconds(t) for t in measured] if isinstance(measured, tuple) else ["-", "-"]
            if isinstance(measured, str):
                failed.append(f"{key}, {title}: {measured}")
        print(f"| {key} | " + " | ".join(cells) + " |")
    if failed:
        print("\nNo first call: " + "; ".join(failed) + ".")
    print("\nJAX ports: " + "; ".join(f"{k} {PROGRAMS[k].jax_loops}" for k in keys if "jax.jit" in results[k][0]) + ".")
    memory_columns = [c for c in COLUMNS if c != "jax.jit"]
    print("\n## Peak memory of one call (tracemalloc, above what was allocated before it; ratio to the primal)\n")
    print("| program | " + " | ".join(memory_columns) + " |")
    print("|---" * (len(memory_columns) + 1) + "|")
    for key in keys:
        peak = results[key][3]
        print(f"| {key} | " + " | ".join(
            "-" if name not in peak else _bytes(peak[name]) + ("" if name == "primal" else
                                                                f" ({_ratio(peak[name] / max(peak['primal'], 1))})")
            for name in memory_columns) + " |")
    print("\njax.jit's memory is not comparable: XLA's buffers are not Python allocations, tracemalloc sees none.\n")
    marked = _marked_memory(keys, options.snapshots, size)
    for line in targets(results, keys) + marked:
        print(line)


def _marked_memory(keys, snapshots, size) -> list:
    """The stencils' peak memory with the loop marked ``checkpointed(range(steps), snapshots=s)`` beside the
    unmarked gradient's, printed as a table; the lines of the target it meets or not (none without
    ``snapshots``)."""
    stencils = [k for k in STENCILS if k in keys]
    if not snapshots or not stencils:
        return []
    import checkpointing  # its marked copies of S1, S4 and S14, each checked against the unmarked gradient
    names = ["gradient"] + [f"snapshots={s}" for s in snapshots]
    print("## The stencils' peak memory with the loop marked `astgrad.checkpointed(range(steps), snapshots=s)` "
          "(ratio to the primal)\n")
    print("| program | primal | unmarked gradient | " + " | ".join(names[1:]) + " |")
    print("|---" * (len(names) + 2) + "|")
    worst = {s: {} for s in snapshots}
    for key in stencils:
        peak = checkpointing.stencil_peaks(key, snapshots, size, PROGRAMS)
        print(f"| {key} | {_bytes(peak['primal'])} | " + " | ".join(
            f"{_bytes(peak[n])} ({_ratio(peak[n] / max(peak['primal'], 1))})" for n in names) + " |")
        for s in snapshots:
            worst[s][key] = peak[f"snapshots={s}"] / max(peak["primal"], 1)
    print()
    return [f"* peak memory of one gradient <= 4x the primal's on the stencils, loop marked with snapshots={s}: "
            + ", ".join(f"{k} {r:.2f}x" for k, r in by_key.items())
            + (": met" if all(r <= 4 for r in by_key.values()) else ": not met") for s, by_key in worst.items()]


if __name__ == "__main__":
    main()
