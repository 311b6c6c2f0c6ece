"""The peers' forward mode and hessians: HIPS autograd, JAX (eager and jax.jit) and PyTorch's torch.func.

Each peer is written in its own idiom.  HIPS autograd runs the workload's
numpy source with ``np`` rebound to ``autograd.numpy`` (how autograd is
used); JAX eager and torch.func rebind ``np`` the same way
(``systems._rebind_np``), so Python loops run op by op.  For ``jax.jit`` the
loops are written as JAX asks for them (``lax.fori_loop``, ``lax.while_loop``,
``lax.scan``: ``JAX_LOOPS``); a Python loop would be unrolled, and W5's
data-dependent ``while`` cannot be traced at all.  Arguments that are Python
ints (W2's trip count) are bound before ``jax.jit``, as static.

None of the peers is a dependency: a peer that cannot be imported is
``systems.Unavailable`` (a blank column and a note), never a failure.
``round_robin`` times a dict of runners side by side in one process.
Every peer runs on one thread, as the other systems do.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

# XLA's CPU backend runs on one thread like every other system here (BLAS and torch are set to one too)
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import workloads
from systems import Unavailable, _import, _rebind_np, _torch_numpy

#: the peer columns, in the order the tables show them
PEERS = ["HIPS autograd", "jax (eager)", "jax.jit", "torch.func"]


def _jax():
    jax = _import("jax")
    jax.config.update("jax_enable_x64", True)
    return jax, _import("jax.numpy"), _import("jax.lax")


# ------------------------------------------------- jax.jit: loops in JAX's idiom

def _jax_scalar_loop(jnp, lax):
    def scalar_loop(x, steps):
        def body(_, carry):
            x, total = carry
            x = jnp.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
            return x, total + x
        return lax.fori_loop(0, steps, body, (x, jnp.zeros_like(x)))[1]
    return scalar_loop


def _jax_doubling(jnp, lax):
    def doubling(x):
        return lax.while_loop(lambda y: jnp.linalg.norm(y) < 1000, lambda y: y * 2, x * 2)
    return doubling


def _jax_rnn(jnp, lax):
    def rnn(Wx, Wh, b, xs, h0):
        def step(h, x):
            return jnp.tanh(x @ Wx + h @ Wh + b), None
        h, _ = lax.scan(step, h0, xs)
        return jnp.mean(h ** 2)
    return rnn


#: workload function -> its hand-written JAX version for jax.jit (the others are their numpy source on jnp)
JAX_LOOPS = {workloads.scalar_loop: _jax_scalar_loop, workloads.doubling: _jax_doubling, workloads.rnn: _jax_rnn}


def _jit_source(fn, jnp, lax):
    return JAX_LOOPS[fn](jnp, lax) if fn in JAX_LOOPS else _rebind_np(fn, jnp)


# ------------------------------------------------------------------ jvp

def _split(args, wrt):
    """(a function of the wrt values building the full argument list, the wrt values)."""
    def full(values):
        out = list(args)
        for i, v in zip(wrt, values):
            out[i] = v
        return out
    return full, tuple(args[i] for i in wrt)


def jvp_runners(workload, args, tangents):
    """peer -> a zero-argument jvp returning (value, tangent) as numpy, or the Unavailable raised making it.

    ``args`` are the workload's arguments (no seed), ``tangents`` one per
    ``wrt`` position.  Also returns peer -> seconds of jax.jit's first call
    (trace and compile).
    """
    makers = {"HIPS autograd": _autograd_jvp, "jax (eager)": _jax_eager_jvp, "jax.jit": _jax_jit_jvp,
              "torch.func": _torch_jvp}
    runners, compile_seconds = {}, {}
    for peer, make in makers.items():
        try:
            runners[peer] = make(workload, list(args), tuple(tangents), compile_seconds)
        except Unavailable as exc:
            runners[peer] = exc
    return runners, compile_seconds


def _autograd_jvp(workload, args, tangents, _):
    autograd = _import("autograd")
    fn = _rebind_np(workload.fn, _import("autograd.numpy"))
    full, at = _split(args, workload.wrt)
    if len(at) == 1:
        jvp = autograd.make_jvp(lambda w: fn(*full((w,))), 0)
        return lambda: jvp(at[0])(tangents[0])
    jvp = autograd.make_jvp(lambda ws: fn(*full(ws)), 0)
    return lambda: jvp(at)(tangents)


def _jax_eager_jvp(workload, args, tangents, _):
    jax, jnp, _lax = _jax()
    fn = _rebind_np(workload.fn, jnp)
    args = [a if isinstance(a, int) else jnp.asarray(a) for a in args]
    full, at = _split(args, workload.wrt)
    tangents = tuple(jnp.asarray(t) for t in tangents)

    def run():
        return jax.block_until_ready(jax.jvp(lambda *ws: fn(*full(ws)), at, tangents))
    return run


def _jax_jit_jvp(workload, args, tangents, compile_seconds):
    jax, jnp, lax = _jax()
    fn = _jit_source(workload.fn, jnp, lax)
    static = {i: a for i, a in enumerate(args) if isinstance(a, int)}
    traced = [i for i in range(len(args)) if i not in static]

    def jvp(values, tangents):
        full = {**static, **dict(zip(traced, values))}
        point = [full[i] for i in range(len(args))]
        full_of, at = _split(point, workload.wrt)
        return jax.jvp(lambda *ws: fn(*full_of(ws)), at, tangents)
    jitted = jax.jit(jvp)
    values = tuple(jnp.asarray(args[i]) for i in traced)
    tangents = tuple(jnp.asarray(t) for t in tangents)
    start = time.perf_counter()
    jax.block_until_ready(jitted(values, tangents))
    compile_seconds["jax.jit"] = time.perf_counter() - start
    return lambda: jax.block_until_ready(jitted(values, tangents))


def _torch_jvp(workload, args, tangents, _):
    torch = _import("torch")
    torch.set_num_threads(1)
    fn = _rebind_np(workload.fn, _torch_numpy(torch))

    def tensor(value):
        return torch.tensor(np.asarray(value, dtype=np.float64), dtype=torch.float64)
    args = [a if isinstance(a, int) else tensor(a) for a in args]
    full, at = _split(args, workload.wrt)
    tangents = tuple(tensor(t) for t in tangents)
    return lambda: torch.func.jvp(lambda *ws: fn(*full(ws)), at, tangents)


# ------------------------------------------------------------------ hessian

def hessian_runners(losses, w, X, y):
    """peer -> a zero-argument hessian in ``w`` of the loss ``(w, X, y)``, or Unavailable; and compile times.

    ``losses`` maps "autograd", "jax" and "torch" to a function that, given
    the library's numpy namespace (``autograd.numpy``, ``jax.numpy``,
    ``torch``), returns the loss written in that library's idiom.
    """
    runners, compile_seconds = {}, {}
    try:
        autograd = _import("autograd")
        hips_loss = losses["autograd"](_import("autograd.numpy"))
        hips_hessian = autograd.hessian(lambda w: hips_loss(w, X, y))
        runners["HIPS autograd"] = lambda: hips_hessian(w)
    except Unavailable as exc:
        runners["HIPS autograd"] = exc
    try:
        jax, jnp, _lax = _jax()
        jax_loss = losses["jax"](jnp)
        Xj, yj, wj = jnp.asarray(X), jnp.asarray(y), jnp.asarray(w)
        eager = jax.hessian(jax_loss)
        runners["jax (eager)"] = lambda: jax.block_until_ready(eager(wj, Xj, yj))
        jitted = jax.jit(jax.hessian(jax_loss))
        start = time.perf_counter()
        jax.block_until_ready(jitted(wj, Xj, yj))
        compile_seconds["jax.jit"] = time.perf_counter() - start
        runners["jax.jit"] = lambda: jax.block_until_ready(jitted(wj, Xj, yj))
    except Unavailable as exc:
        runners["jax (eager)"] = runners["jax.jit"] = exc
    try:
        torch = _import("torch")
        torch.set_num_threads(1)
        torch_loss = losses["torch"](torch)
        Xt, yt, wt = (torch.tensor(np.asarray(a, dtype=np.float64)) for a in (X, y, w))
        torch_hessian = torch.func.hessian(torch_loss)
        runners["torch.func"] = lambda: torch_hessian(wt, Xt, yt)
    except Unavailable as exc:
        runners["torch.func"] = exc
    return runners, compile_seconds


# ------------------------------------------------------------------ timing

def round_robin(runners, repeat, sample_seconds=0.02):
    """name -> median seconds per call; every repeat calls each runner once, in a rotating order."""
    from run import inner_loops, time_once  # run.py sets BLAS's thread counts when imported: only when timing
    loops = {name: inner_loops(run, sample_seconds) for name, run in runners.items()}
    samples = {name: [] for name in runners}
    order = list(runners)
    for r in range(repeat):
        shift = r % len(order)
        for name in order[shift:] + order[:shift]:
            samples[name].append(time_once(runners[name], loops[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def as_array(value):
    """A peer's array (numpy, jax, torch) as a float64 numpy array."""
    if hasattr(value, "detach"):
        value = value.detach().numpy()
    return np.asarray(value, dtype=np.float64)
