"""Peak memory and time of a long loop's gradient, with and without checkpointing.

    python benchmarks/checkpointing.py                          # 1k, 10k and 100k steps on 100 entries
    python benchmarks/checkpointing.py --steps 1000 10000 --size 100 --repeat 3

The loop updates a small state (a vector of ``--size`` entries) once per
step: ``x = x + h * tanh(W x + p)``, a residual network's layers or an
explicit integrator.  ``saved`` is the ordinary gradient, which keeps what
every step's reverse sweep reads (memory grows as the steps); ``loop
checkpointed`` marks the loop ``astgrad.checkpointed(range(n))``, which
keeps the state once every ~sqrt(n) steps and runs each segment forward
again (memory grows as sqrt(n), time about one more forward run);
``binomial`` marks it ``astgrad.checkpointed(range(n), snapshots=s)``,
which keeps at most s states and reverses one step at a time on
Griewank's binomial schedule (memory s states and one step's saves, time
growing as the repetitions t with C(s + t, s) >= n); ``call saved`` calls
the step as a function, and ``call checkpointed``
wraps it in ``astgrad.checkpoint``, which keeps each step's arguments
only (memory still grows as the steps, by less).  Each gradient is checked
against its saved twin's (rtol 1e-12) before it is measured.  Peak memory is tracemalloc's peak over one call above what was
allocated before it; time the best of ``--repeat`` rounds in which each system runs once, and its ratio to
the first system's (the saved gradient) measured in the same rounds.

``--stencils`` measures issue 32's stencils instead (scientific.py's S1
heat, S4 wave and S14 Burgers at their full sizes), each loop marked
``astgrad.checkpointed(range(steps), snapshots=s)`` in a copy of its
source: the primal's peak, the unmarked gradient's and the marked one's
for each s, each over the primal's, and each gradient's time over the
unmarked gradient's, side by side in the same rounds.

    python benchmarks/checkpointing.py --stencils --snapshots 2 3 4 --repeat 5 --cpu-time
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import sys
import time
import tracemalloc
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

HERE = Path(__file__).resolve().parent
if (HERE.parent / "src" / "astgrad").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402

import astgrad  # noqa: E402


def layer(x, W, p):
    return x + 0.01 * np.tanh(W @ x + p)


def saved(x, W, p, n):
    for _ in range(n):
        x = x + 0.01 * np.tanh(W @ x + p)
    return np.sum(x * x)


def loop_checkpointed(x, W, p, n):
    for _ in astgrad.checkpointed(range(n)):
        x = x + 0.01 * np.tanh(W @ x + p)
    return np.sum(x * x)


def loop_binomial(x, W, p, n, s):
    for _ in astgrad.checkpointed(range(n), snapshots=s):
        x = x + 0.01 * np.tanh(W @ x + p)
    return np.sum(x * x)


def call_saved(x, W, p, n):
    for _ in range(n):
        x = layer(x, W, p)
    return np.sum(x * x)


def call_checkpointed(x, W, p, n):
    for _ in range(n):
        x = astgrad.checkpoint(layer)(x, W, p)
    return np.sum(x * x)


def heat_checkpointed(kappa, u0, steps, s):
    """scientific.py's heat (S1), its loop marked."""
    u = u0.copy()
    for _ in astgrad.checkpointed(range(steps), snapshots=s):
        u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def wave_checkpointed(c, u0, steps, s):
    """scientific.py's wave (S4), its loop marked."""
    u_prev = u0
    u = u0
    for _ in astgrad.checkpointed(range(steps), snapshots=s):
        lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        u_next = 2 * u - u_prev + c * lap
        u_prev = u
        u = u_next
    return np.sum(u ** 2)


def burgers_checkpointed(nu, u0, dx, dt, steps, s):
    """simulations.py's burgers (S14), its loop marked."""
    u = u0.copy()
    for _ in astgrad.checkpointed(range(steps), snapshots=s):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    return np.sum(u ** 2) * dx


STENCILS = {"S1": heat_checkpointed, "S4": wave_checkpointed, "S14": burgers_checkpointed}


def stencil_calls(key, snapshots, size="full", programs=None):
    """``{"primal": ..., "gradient": ..., "snapshots=s": ...}``: calls of the stencil ``key`` (scientific.py's
    inputs of ``size``; ``programs``: its PROGRAMS, imported when None), each marked gradient checked against
    the unmarked one (rtol 1e-12) first."""
    if programs is None:
        sys.path.insert(0, str(HERE))
        import scientific
        programs = scientific.PROGRAMS
    program = programs[key]
    args = program.make_inputs(size)
    plain = astgrad.grad(program.fn, wrt=program.wrt)
    calls = {"primal": functools.partial(program.fn, *args), "gradient": functools.partial(plain, *args)}
    want = plain(*args)
    for s in snapshots:
        g = astgrad.grad(STENCILS[key], wrt=program.wrt)
        call = calls[f"snapshots={s}"] = functools.partial(g, *args, s)
        for a, b in zip(call(), want):
            if not np.allclose(a, b, rtol=1e-12, atol=0):
                sys.exit(f"{key} with snapshots={s} differs from the unmarked gradient")
    for call in calls.values():  # warm: a second call may make a variant specialised on what the first saw
        call()
    return calls


def stencil_peaks(key, snapshots, size="full", programs=None):
    """The peak memory of each of ``stencil_calls`` (bytes, as scientific.py measures: run.peak_memory)."""
    sys.path.insert(0, str(HERE))
    import run
    return {name: run.peak_memory(call) for name, call in stencil_calls(key, snapshots, size, programs).items()}


def measure_stencils(snapshots=(2, 3, 4), repeat=3):
    """``[(key, system, peak / primal's, seconds / the unmarked gradient's)]``; each marked gradient checked
    against the unmarked one (rtol 1e-12) first."""
    sys.path.insert(0, str(HERE))
    import run
    out = []
    for key in STENCILS:
        calls = stencil_calls(key, snapshots)
        peaks = {name: run.peak_memory(call) for name, call in calls.items()}  # as scientific.py measures
        best = {name: math.inf for name in calls}
        for _ in range(repeat):
            for name, call in calls.items():
                best[name] = min(best[name], best_seconds(call, 1))
        out += [(key, name, peaks[name] / peaks["primal"], best[name] / best["gradient"]) for name in calls]
    return out


def _sqrt_states(n):
    return math.isqrt(max(n - 1, 0)) + 1  # as many states as the square-root segments keep


#: (name, function, the name of the saved gradient it must equal, its arguments after n as a function of n)
SYSTEMS = (("saved", saved, "saved", None), ("loop checkpointed", loop_checkpointed, "saved", None),
           ("binomial, sqrt(n) states", loop_binomial, "saved", lambda n: (_sqrt_states(n),)),
           ("binomial, 10 states", loop_binomial, "saved", lambda n: (10,)),
           ("call saved", call_saved, "call saved", None), ("call checkpointed", call_checkpointed, "call saved", None))


def peak_bytes(run) -> int:
    """Bytes allocated at the peak of one call of ``run`` above what was allocated before it."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


#: the clock of every timed call: wall time, or with --cpu-time the process's CPU time
_clock = time.perf_counter


def best_seconds(run, repeat) -> float:
    times = []
    for _ in range(repeat):
        start = _clock()
        run()
        times.append(_clock() - start)
    return min(times)


def problem(size, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(size), rng.standard_normal((size, size)) / math.sqrt(size), rng.standard_normal(size)


def measure(steps, size=100, repeat=1, systems=SYSTEMS, level=2):
    """``[(system, steps, peak bytes, seconds)]``, each gradient checked against its saved twin's first
    (the same operations in the same order: a step written inline and one called differ by rounding)."""
    x, W, p = problem(size)
    calls, peaks = {}, {}
    results = {}
    for name, f, twin, more in systems:
        g = astgrad.grad(f, wrt=("x", "p"), optimize=level)
        call = calls[name] = functools.partial(g, x, W, p, steps, *(more(steps) if more else ()))
        got = results[name] = call()
        for a, b in zip(got, results[twin]):
            if not np.allclose(a, b, rtol=1e-12, atol=1e-15):
                sys.exit(f"{name} differs from the gradient of {twin} at {steps} steps")
        peaks[name] = peak_bytes(call)
    # timed in rounds, each system once per round, so that a busy machine slows them alike
    best = {name: math.inf for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            best[name] = min(best[name], best_seconds(call, 1))
    return [(name, steps, peaks[name], best[name]) for name in calls]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--only", nargs="+", help="the systems to measure (by name); saved twins are added")
    parser.add_argument("--stencils", action="store_true", help="S1, S4 and S14 marked with snapshots=s instead")
    parser.add_argument("--snapshots", type=int, nargs="+", default=[2, 3, 4], help="the s of --stencils")
    parser.add_argument("--cpu-time", action="store_true", help="time by the process's CPU time, not wall time "
                        "(on a machine others load)")
    options = parser.parse_args(argv)
    global _clock
    _clock = time.process_time if options.cpu_time else time.perf_counter
    if options.stencils:
        print("| program | system | peak / primal's | time / unmarked gradient's |")
        print("|---|---|---|---|")
        for key, name, memory, seconds in measure_stencils(options.snapshots, options.repeat):
            print(f"| {key} | {name} | {memory:.2f}x | {seconds:.2f}x |", flush=True)
        return
    systems = SYSTEMS
    if options.only:
        wanted = set(options.only) | {twin for name, _, twin, _ in SYSTEMS if name in options.only}
        systems = tuple(row for row in SYSTEMS if row[0] in wanted)
    print("| steps | system | peak memory | time | time / first system's |")
    print("|---|---|---|---|---|")
    for steps in options.steps:
        rows = measure(steps, options.size, options.repeat, systems)
        for name, n, peak, seconds in rows:
            print(f"| {n} | {name} | {peak / 1e6:.2f} MB | {seconds * 1e3:.0f} ms | {seconds / rows[0][3]:.2f}x |",
                  flush=True)


if __name__ == "__main__":
    main()
