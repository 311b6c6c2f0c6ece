"""The taped Tensor's time over PyTorch eager's, finely interleaved.

    python benchmarks/tape_vs_torch.py                  # W1 and W5, 9 rounds
    python benchmarks/tape_vs_torch.py --only W1 --rounds 21
    python benchmarks/tape_vs_torch.py --ops            # small-tensor operations, one by one

Each round alternates 100 times between ten taped gradients and ten PyTorch
gradients of the same workload (``benchmarks/systems.py`` prepares both, as
``run.py`` does) and sums the thread's CPU time of each side: both see the
same load, so the ratio moves far less than the two times do on a shared
machine.  Prints, per workload, the median times and the median, lowest and
highest ratio (taped / PyTorch) over the rounds.  ``--ops`` measures the
operations a tutorial uses, one at a time on 4x4 float32 tensors that require
grad (``import astgrad.torch as torch`` against ``torch``), and one small
backward pass, the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

HERE = Path(__file__).resolve().parent
if (HERE.parent / "src" / "astgrad").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
import systems  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def measure(key: str, rounds: int) -> tuple[float, float, list[float]]:
    """Median taped and PyTorch times (seconds per gradient) and each round's ratio."""
    workload = WORKLOADS[key]
    args = workload.make_inputs("full")
    return interleave(systems.prepare("taped", workload, args), systems.prepare("torch", workload, args), rounds)


def small_operations() -> dict:
    """``{name: (taped call, PyTorch call)}``: one operation each on 4x4 float32 tensors that require grad."""
    import torch as pytorch

    import astgrad.torch as taped_torch

    array = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    pairs: dict = {}
    for side, lib in enumerate((taped_torch, pytorch)):
        x = lib.tensor(array, requires_grad=True)
        y = lib.tensor(array * 2, requires_grad=True)
        calls = {
            "x + y": lambda x=x, y=y: x + y,
            "x * y": lambda x=x, y=y: x * y,
            "x * 2": lambda x=x: x * 2,
            "x @ y": lambda x=x, y=y: x @ y,
            "x.sum()": lambda x=x: x.sum(),
            "x ** 2": lambda x=x: x ** 2,
            "relu(x)": lambda x=x, lib=lib: lib.relu(x),
            "sigmoid(x)": lambda x=x, lib=lib: lib.sigmoid(x),
            "tanh(x)": lambda x=x, lib=lib: lib.tanh(x),
            "x[0]": lambda x=x: x[0],
            "(x * y).sum().backward()": lambda x=x, y=y: (x * y).sum().backward(),
        }
        for name, call in calls.items():
            pairs.setdefault(name, [None, None])[side] = call
    return pairs


def interleave(taped, torch, rounds: int) -> tuple[float, float, list[float]]:
    """Median times of the two calls (seconds per call), alternating ten at a time, and each round's ratio."""
    for _ in range(300):  # warm both: caches, plans, PyTorch's dispatch
        taped()
        torch()
    clock = time.thread_time_ns
    taped_times, torch_times, ratios = [], [], []
    for _ in range(rounds):
        a = b = 0
        for _ in range(100):
            t0 = clock()
            for _ in range(10):
                taped()
            t1 = clock()
            for _ in range(10):
                torch()
            a += t1 - t0
            b += clock() - t1
        taped_times.append(a / 1000 * 1e-9)
        torch_times.append(b / 1000 * 1e-9)
        ratios.append(a / b)
    return statistics.median(taped_times), statistics.median(torch_times), ratios


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="W1,W5", help="workloads, comma-separated (default W1,W5)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of 1000 gradients per side (default 9)")
    parser.add_argument("--ops", action="store_true", help="small-tensor operations instead of workloads")
    options = parser.parse_args(argv)
    try:
        systems.prepare("torch", WORKLOADS["W1"], WORKLOADS["W1"].make_inputs("test"))
    except systems.Unavailable as why:
        sys.exit(f"PyTorch is needed: {why}")
    print(f"| {'operation' if options.ops else 'workload'} | astgrad taped | PyTorch eager | "
          "taped / PyTorch: median (lowest-highest) |")
    print("|---|---|---|---|")
    if options.ops:
        runs = ((f"`{name}`", lambda pair=pair: interleave(*pair, options.rounds))
                for name, pair in small_operations().items())
    else:
        runs = ((key, lambda key=key: measure(key, options.rounds))
                for key in (k.strip().upper() for k in options.only.split(",")))
    for key, run in runs:
        taped, torch, ratios = run()
        print(f"| {key} | {taped * 1e6:.1f} µs | {torch * 1e6:.1f} µs | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |")


if __name__ == "__main__":
    main()
