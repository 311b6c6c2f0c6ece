"""Forward mode on the benchmark workloads: a jvp's time against the primal's and the gradient's.

For each workload of ``workloads.py``, ``astgrad.jvp`` along a random
direction of every ``wrt`` argument, checked against the hand-written
gradient (``<grad, u>`` for a scalar function), and timed round-robin with
the primal and ``astgrad.grad`` in one process.  Usage:
``python benchmarks/jvp.py [--only W1,W3] [--repeat 9]``.
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))

import astgrad  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def _time(fn, repeat):
    loops, start = 1, time.perf_counter()
    fn()
    while time.perf_counter() - start < 0.05:
        loops *= 2
        start = time.perf_counter()
        for _ in range(loops):
            fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - start) / loops)
    return float(np.median(samples))


def bench(workload, size, repeat):
    rng = np.random.default_rng(0)
    args = list(workload.inputs(size, rng))
    if workload.vjp:
        args = args[:-1]
    wrt = tuple(workload.wrt)
    directions = tuple(rng.standard_normal(np.shape(args[i])) if np.ndim(args[i]) else float(rng.standard_normal())
                       for i in wrt)
    f_jvp = astgrad.jvp(workload.fn, wrt)
    _, tangent = f_jvp(*args, directions)
    if not workload.vjp:
        grads = workload.hand(*args)
        grads = grads if len(wrt) > 1 else (grads,)
        expected = sum(float(np.sum(g * u)) for g, u in zip(grads, directions))
        assert np.isclose(tangent, expected, rtol=1e-8, atol=1e-10), (workload.key, tangent, expected)
    primal = _time(lambda: workload.fn(*args), repeat)
    forward = _time(lambda: f_jvp(*args, directions), repeat)
    row = {"primal": primal, "jvp": forward}
    if not workload.vjp:
        gradient = astgrad.grad(workload.fn, wrt if len(wrt) > 1 else wrt[0])
        row["grad"] = _time(lambda: gradient(*args), repeat)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    options = parser.parse_args(argv)
    keys = [k.strip().upper() for k in options.only.split(",")] if options.only else list(WORKLOADS)
    print("| workload | primal | jvp | jvp / primal | grad |")
    print("|---|---|---|---|---|")
    for key in keys:
        row = bench(WORKLOADS[key], "quick" if options.quick else "full", options.repeat)
        grad = f"{row['grad'] * 1e6:.1f} us" if "grad" in row else "-"
        print(f"| {key} {WORKLOADS[key].title} | {row['primal'] * 1e6:.1f} us | {row['jvp'] * 1e6:.1f} us | "
              f"{row['jvp'] / row['primal']:.2f} | {grad} |")


if __name__ == "__main__":
    main()
