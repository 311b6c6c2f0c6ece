"""Forward mode on the benchmark workloads: astgrad's jvp against the primal, the gradient and the peers'.

For each workload of ``workloads.py``, ``astgrad.jvp`` along a random
direction of every ``wrt`` argument, checked against the hand-written
gradient (``<grad, u>`` for a scalar function), and the same jvp by HIPS
autograd (``make_jvp``), JAX (``jax.jvp`` eager, and under ``jax.jit`` with
its first call, the trace and compile, reported apart) and PyTorch
(``torch.func.jvp``) when installed (``peers.py``), each checked against
astgrad's value and tangent.  All are timed round-robin in one process with
the primal and ``astgrad.grad``.  Usage:
``python benchmarks/jvp.py [--only W1,W3] [--repeat 9] [--quick]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))

import astgrad  # noqa: E402
import peers  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

TANGENT_RTOL = 1e-8


def systems(workload, size):
    """name -> a zero-argument call, checked: astgrad's jvp, the primal, astgrad.grad, and each peer's jvp.

    Returns the runners, notes (missing peers, compile times) and
    astgrad's tangent.  Raises AssertionError when a tangent disagrees.
    """
    rng = np.random.default_rng(0)
    args = list(workload.inputs(size, rng))
    if workload.vjp:
        args = args[:-1]
    wrt = tuple(workload.wrt)
    directions = tuple(rng.standard_normal(np.shape(args[i])) if np.ndim(args[i]) else float(rng.standard_normal())
                       for i in wrt)
    f_jvp = astgrad.jvp(workload.fn, wrt)
    value, tangent = f_jvp(*args, directions)
    if not workload.vjp:
        grads = workload.hand(*args)
        grads = grads if len(wrt) > 1 else (grads,)
        expected = sum(float(np.sum(g * u)) for g, u in zip(grads, directions))
        assert np.isclose(tangent, expected, rtol=TANGENT_RTOL, atol=1e-10), (workload.key, tangent, expected)
    runners = {"primal": lambda: workload.fn(*args), "astgrad.jvp": lambda: f_jvp(*args, directions)}
    if not workload.vjp:
        gradient = astgrad.grad(workload.fn, wrt if len(wrt) > 1 else wrt[0])
        runners["astgrad.grad"] = lambda: gradient(*args)
    found, compile_seconds = peers.jvp_runners(workload, args, directions)
    notes = []
    for peer, run in found.items():
        if isinstance(run, Exception):
            notes.append(f"{peer}: {run}")
            continue
        their_value, their_tangent = (peers.as_array(a) for a in run())
        for what, theirs, ours in (("value", their_value, value), ("tangent", their_tangent, tangent)):
            np.testing.assert_allclose(theirs, ours, rtol=TANGENT_RTOL, atol=1e-12,
                                       err_msg=f"{workload.key} {peer}: {what}")
        runners[peer] = run
    for peer, seconds in compile_seconds.items():
        notes.append(f"{workload.key} {peer}: first call (trace and compile) {seconds * 1e3:.0f} ms")
    return runners, notes, tangent


def _cell(times, name, reference):
    if name not in times:
        return "-"
    seconds = times[name]
    text = f"{seconds * 1e6:.1f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"
    return text if reference is None else f"{text} (x{seconds / reference:.2f})"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated workloads, e.g. W1,W3")
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="small sizes")
    options = parser.parse_args(argv)
    keys = [k.strip().upper() for k in options.only.split(",")] if options.only else list(WORKLOADS)
    columns = ["primal", "astgrad.jvp", "astgrad.grad", *peers.PEERS]
    print(f"## jvp along one random direction, median of {options.repeat} round-robin repeats "
          f"(ratio to astgrad.jvp)\n")
    print("| workload | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    all_notes = []
    for key in keys:
        runners, notes, _ = systems(WORKLOADS[key], "quick" if options.quick else "full")
        all_notes += [n for n in notes if n not in all_notes]
        times = peers.round_robin(runners, options.repeat, 0.002 if options.quick else 0.02)
        ours = times["astgrad.jvp"]
        cells = [_cell(times, name, None if name == "astgrad.jvp" else ours) for name in columns]
        print(f"| {key} {WORKLOADS[key].title} | " + " | ".join(cells) + " |", flush=True)
    print()
    for note in all_notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
