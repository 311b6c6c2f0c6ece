"""Scientific numpy programs (issue 29): astgrad's gradient over the primal, beside jax.jit, HIPS autograd, the tape.

Ten programs as people write them with numpy and scipy (a 1-D heat equation
updating ``u[1:-1]`` in place, an RK4 integrator taking the right-hand side as
an argument, velocity Verlet with ``+=``, a 2-D wave stencil with ``np.roll``,
a Gaussian-process likelihood with ``cho_factor``/``cho_solve``, a Kalman
filter, Black-Scholes with ``norm.cdf``, a GLM with ``gammaln``, a mixture with
``logsumexp``, a pairwise potential with its diagonal masked after
``1 / sqrt(r2)``).  For each, ``astgrad.grad`` is the reference; every peer's
gradient is checked against it (``CHECK_RTOL``, relative to the largest
entry) before anything is timed, and a peer that cannot run the program or
disagrees is reported with the reason, not timed.  The peers:

* ``jax.jit``: ``jax.jit(jax.grad(port))`` with x64 enabled, the program
  ported to ``jax.numpy``/``jax.scipy``; the first call (trace and compile)
  is reported apart.  ``JAX_LOOPS`` says per program whether its loop is a
  Python loop unrolled under jit or ``lax.fori_loop``/``lax.scan``.
* HIPS autograd: the program's own source with ``np`` (and the scipy names)
  rebound to ``autograd.numpy``/``autograd.scipy``; it cannot run item
  assignment, which is reported as such.
* the tape: the program run on ``astgrad.Tensor`` arguments, ``.backward()``.

Usage: ``python benchmarks/scientific.py [--quick] [--repeat 9] [--cpu-time]``
or ``python benchmarks/run.py --scientific``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import types  # noqa: E402
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

CHECK_RTOL = 1e-6
COLUMNS = ["primal", "astgrad.grad", "tape", "jax.jit", "HIPS autograd"]


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
]}


# ------------------------------------------------------------------ the systems, checked

class Refused(Exception):
    """A system that cannot run a program, with the reason."""


def _one_line(exc):
    text = " ".join(str(exc).split()).replace(str(pathlib.Path(__file__).resolve().parent.parent) + "/", "")
    return f"{type(exc).__name__}: " + (text if len(text) < 400 else text[:397] + "...")


def _jax_runner(program, args, compile_seconds):
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
    else:
        port, traced = _rebound(fn, **_jax_scipy_names()), args
    traced = [jnp.asarray(a, dtype=jnp.float64) for a in traced]
    gradient = jax.jit(jax.grad(port, argnums=program.wrt))
    start = time.perf_counter()
    jax.block_until_ready(gradient(*traced))
    compile_seconds[program.key] = time.perf_counter() - start
    return lambda: jax.block_until_ready(gradient(*traced))


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
        program.fn(*_with(args, program.wrt, leaves)).backward()
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


#: the peers, each a maker of a zero-argument gradient from (program, args, jax.jit's compile seconds)
PEER_MAKERS = {"tape": lambda program, args, _: _tape_runner(program, args),
               "jax.jit": _jax_runner,
               "HIPS autograd": lambda program, args, _: _autograd_runner(program, args)}


def systems(program, size, peers=tuple(PEER_MAKERS)):
    """name -> a zero-argument call, each gradient checked against astgrad's; name -> why a system has none.

    When astgrad refuses the program (the reason is a note), the peers are
    checked against central differences of the program instead.  Also
    returns the reference gradient and jax.jit's first-call seconds.
    """
    args = program.make_inputs(size)
    runners = {"primal": lambda: program.fn(*args)}
    notes, compile_seconds = {}, {}
    try:
        gradient = astgrad.grad(program.fn, wrt=program.wrt)
        reference = tuple(np.asarray(g, dtype=np.float64) for g in gradient(*args))
        runners["astgrad.grad"] = lambda: gradient(*args)
    except Exception as exc:
        notes["astgrad.grad"] = "refused: " + _one_line(exc)
        reference = central_differences(program, args)
    for name in peers:
        try:
            run = PEER_MAKERS[name](program, args, compile_seconds)
            got = run()
        except ImportError as exc:
            notes[name] = f"not installed ({exc})"
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
    return runners, notes, reference, compile_seconds


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated programs, e.g. S1,S5")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="the test sizes, a smoke run")
    parser.add_argument("--cpu-time", action="store_true", help="time samples by the thread's CPU time")
    options = parser.parse_args(argv)
    import run  # run.py's inner_loops and time_once; its clock is set here, as run.py's --cpu-time sets it
    run._clock = time.thread_time if options.cpu_time else time.perf_counter
    keys = [k.strip().upper() for k in options.only.split(",")] if options.only else list(PROGRAMS)
    size = "test" if options.quick else "full"
    print(f"## Scientific programs: median seconds per call over {options.repeat} round-robin repeats, "
          f"{'CPU time of the timing thread' if options.cpu_time else 'wall time'} (ratio to the primal)\n")
    print("| program | " + " | ".join(COLUMNS) + " |")
    print("|---" * (len(COLUMNS) + 1) + "|")
    footnotes, compiles = [], []
    for key in keys:
        program = PROGRAMS[key]
        with np.errstate(divide="ignore", invalid="ignore"):  # S10: 1 / sqrt(0) on the diagonal, then masked
            runners, notes, _, compile_seconds = systems(program, size)
            medians = _round_robin(run, runners, options.repeat, 0.002 if options.quick else 0.02)
        cells = []
        for name in COLUMNS:
            if name in medians:
                r = medians[name] / medians["primal"]
                ratio = "" if name == "primal" else f" (x{r:.1f})" if r >= 1 else f" (x{r:.2f})"
                cells.append(_seconds(medians[name]) + ratio)
            else:
                footnotes.append(f"[{len(footnotes) + 1}] {key} {name}: {notes.get(name, 'not run')}")
                cells.append(f"[{len(footnotes)}]")
        print(f"| {key} {program.title} | " + " | ".join(cells) + " |", flush=True)
        if key in compile_seconds:
            compiles.append(f"{key} {_seconds(compile_seconds[key])} ({program.jax_loops})")
    print()
    for note in footnotes:
        print(note)
    print("\njax.jit's first call (trace and XLA compile), not in the table: " + "; ".join(compiles) + ".")


if __name__ == "__main__":
    main()
