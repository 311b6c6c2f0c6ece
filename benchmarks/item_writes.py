"""Peak memory and time of gradients of loops that write into arrays: a heat equation and ``y[i] += ...``.

    python benchmarks/item_writes.py                       # 500 steps on 1000 points; 2000 items
    python benchmarks/item_writes.py --steps 2000 --points 1000 --items 4000 --repeat 5

``heat`` updates ``u[1:-1]`` in place each step (the explicit 1-D heat
equation); ``heat_energy`` also sums ``u * u`` after each step, so the
reverse sweep reads every step's ``u`` (the hand-written adjoint keeps all
states); ``running_sum`` reads ``y`` after each ``y[i] = ...``;
``accumulate`` writes ``y[i] += ...`` once per item, then reads
the whole ``y``.  A gradient that saves the array before each write keeps
steps x points (items x items) numbers; one that saves only what the
reverse sweep reads keeps a shape per step, or the overwritten values
where the reverse sweep reads the old array.  Each level's gradient is
checked against the hand-written one before it is measured.  Peak memory
is tracemalloc's peak over one call, above what was allocated before it;
time the best of ``--repeat`` calls.
"""

from __future__ import annotations

import argparse
import functools
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


def heat(u, k, steps):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def heat_grad(u, k, steps):
    u = u.copy()
    for _ in range(steps):
        u[1:-1] = u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2])
    g = 2 * u
    for _ in range(steps):  # the step is linear: its transpose, steps times
        inner = g[1:-1].copy()
        g[1:-1] -= 2 * k * inner
        g[2:] += k * inner
        g[:-2] += k * inner
    return g


def heat_energy(u, k, steps):
    u = u.copy()
    energy = 0.0
    for _ in range(steps):
        u[1:-1] = u[1:-1] + k * (u[2:] - 2 * u[1:-1] + u[:-2])
        energy = energy + np.sum(u * u)  # reads each step's u: the reverse sweep needs every state back
    return energy


def heat_energy_grad(u, k, steps):
    states = [u.copy()]
    for _ in range(steps):
        v = states[-1].copy()
        v[1:-1] = v[1:-1] + k * (v[2:] - 2 * v[1:-1] + v[:-2])
        states.append(v)
    g = np.zeros_like(u)
    for t in range(steps, 0, -1):
        g = g + 2 * states[t]
        inner = g[1:-1].copy()
        g[1:-1] -= 2 * k * inner
        g[2:] += k * inner
        g[:-2] += k * inner
    return g


def accumulate(x, w):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] += w * x[i] * x[i]
    return np.sum(y * y)


def accumulate_grad(x, w):
    y = w * x * x
    return 2 * y * 2 * w * x


def running_sum(x, w):
    y = np.zeros(x.shape[0])
    s = 0.0
    for i in range(x.shape[0]):
        y[i] = w * x[i] * x[i]
        s = s + np.sum(y * x)  # reads y after each write: the reverse sweep needs each step's y back
    return s


def running_sum_grad(x, w):
    n = x.shape[0]
    return 3 * w * (n - np.arange(n)) * x * x  # s = sum_j (n - j) w x_j^3


def _best(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _peak(run):
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    u, x = rng.random(options.points), rng.random(options.items)
    cases = [(f"heat {options.steps} steps x {options.points} points", heat, heat_grad, (u, 0.1, options.steps)),
             (f"heat, energy read each step, {options.steps} x {options.points}", heat_energy, heat_energy_grad,
              (u, 0.1, options.steps)),
             (f"y[i] = ..., y read each step, {options.items} items", running_sum, running_sum_grad, (x, 0.5)),
             (f"y[i] += ... over {options.items} items", accumulate, accumulate_grad, (x, 0.5))]
    print("| program | system | peak memory | time |")
    print("|---|---|---|---|")
    for title, f, hand, args in cases:
        want = hand(*args)
        systems = [("primal", f), ("hand-written", hand)]
        systems += [(f"generated, optimize={level}", astgrad.grad(f, optimize=level)) for level in (0, 1, 2)]
        for name, run in systems:
            if name.startswith("generated"):
                got = run(*args)
                if not np.allclose(got, want, rtol=1e-9, atol=1e-12):
                    sys.exit(f"{name} differs from the hand-written gradient of {f.__name__}")
            call = functools.partial(run, *args)
            peak = _peak(call)
            best = _best(call, options.repeat)
            print(f"| {title} | {name} | {peak / 1e6:.2f} MB | {best * 1e3:.1f} ms |")


if __name__ == "__main__":
    main()
