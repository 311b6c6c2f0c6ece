"""What called functions and loops save (issue 32): gradient time over the primal and peak memory, two trees side by side.

The programs of scientific.py whose gradients go through called functions
or loops (S1 heat, S2 RK4 taking f, S3 Verlet, S4 wave, S6 Kalman), W5 of
workloads.py (a while loop, vjp), and the wave stencil with its laplacian
in a helper function (``wave_helper``): the program where a callee's saves
matter most.  Each is measured in a fresh process per tree, the trees
alternating, so that two checkouts of astgrad (``--trees old/src new/src``)
are compared on one machine at one time:

* time: CPU seconds (one thread), the best of ``--repeat`` rounds of the gradient, over the best of
  the primal's, each round a loop long enough to be timed;
* memory: the peak of one gradient above what was allocated before it
  (tracemalloc), beside the primal's.

Usage: ``python benchmarks/callee_saves.py --trees /path/old/src src [--size full] [--repeat 7]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
KEYS = ("S1", "S2", "S3", "S4", "S4h", "S6", "W5")


def laplacian(u):
    return np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u


def wave_helper(c, u0, steps):
    """scientific.py's wave, the stencil in a called function."""
    u_prev = u0
    u = u0
    for _ in range(steps):
        u_next = 2 * u - u_prev + c * laplacian(u)
        u_prev = u
        u = u_next
    return np.sum(u ** 2)


def program(key, size):
    """``(function, wrt, args, vjp)`` of the program ``key``."""
    sys.path.insert(0, str(HERE))
    import scientific
    import workloads
    if key == "W5":
        w = workloads.WORKLOADS[key]
        return w.fn, w.wrt, w.inputs(size, np.random.default_rng(0)), True
    if key == "S4h":
        p = scientific.PROGRAMS["S4"]
        return wave_helper, p.wrt, p.make_inputs(size), False
    p = scientific.PROGRAMS[key]
    return p.fn, p.wrt, p.make_inputs(size), False


clock = time.process_time  # CPU seconds: the machine is shared, and these programs run on one thread


def best_seconds(call, repeat):
    """The best over ``repeat`` rounds of one call's seconds, a round running it enough times for 0.2 s."""
    n, start = 1, clock()
    call()
    while clock() - start < 0.2 and n < 10_000:
        n *= 2
        start = clock()
        for _ in range(n):
            call()
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        for _ in range(n):
            call()
        best = min(best, (clock() - start) / n)
    return best


def peak_bytes(call):
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def measure(key, size, repeat):
    """One program in this process (astgrad imported from the path first on sys.path)."""
    import astgrad
    fn, wrt, args, vjp = program(key, size)
    if vjp:
        *args, seed = args
        pullback = astgrad.vjp(fn, wrt=wrt[0] if len(wrt) == 1 else wrt)
        gradient = lambda: pullback(*args, seed)  # noqa: E731
    else:
        grad = astgrad.grad(fn, wrt=wrt[0] if len(wrt) == 1 else wrt)
        gradient = lambda: grad(*args)  # noqa: E731
    primal = lambda: fn(*args)  # noqa: E731
    result = gradient()
    flat = np.concatenate([np.ravel(np.asarray(g, dtype=float)) for g in
                           (result if isinstance(result, tuple) else (result,))])
    return {"primal": best_seconds(primal, repeat), "gradient": best_seconds(gradient, repeat),
            "primal_peak": peak_bytes(primal), "peak": peak_bytes(gradient), "values": flat.tolist(),
            "astgrad": astgrad.__file__}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", nargs="+", default=[str(HERE.parent / "src")],
                        help="src directories of astgrad checkouts, compared side by side")
    parser.add_argument("--size", default="full", choices=("test", "quick", "full"))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--keys", nargs="+", default=list(KEYS))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:
        print(json.dumps(measure(options.one, options.size, options.repeat)))
        return
    size = {"quick": "test"}.get(options.size, options.size) if options.size == "quick" else options.size
    print(f"{'program':8}" + "".join(f"{'ratio ' + str(i):>10}{'peak MB ' + str(i):>12}" for i in
                                     range(len(options.trees))) + f"{'primal MB':>11}  same gradient")
    for key in options.keys:
        rows = []
        for tree in options.trees:
            env = dict(os.environ, PYTHONPATH=str(pathlib.Path(tree).resolve()))
            out = subprocess.run([sys.executable, __file__, "--one", key, "--size", size, "--repeat",
                                  str(options.repeat)], env=env, capture_output=True, text=True, check=True)
            rows.append(json.loads(out.stdout))
        same = all(np.allclose(r["values"], rows[0]["values"], rtol=1e-10, atol=0) for r in rows)
        print(f"{key:8}" + "".join(f"{r['gradient'] / r['primal']:>10.2f}{r['peak'] / 1e6:>12.3f}" for r in rows)
              + f"{rows[0]['primal_peak'] / 1e6:>11.3f}  {'yes' if same else 'NO'}", flush=True)


if __name__ == "__main__":
    main()
