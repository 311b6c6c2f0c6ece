"""The taped Tensor's time over PyTorch eager's, finely interleaved.

    python benchmarks/tape_vs_torch.py                  # W1 and W5, 9 rounds
    python benchmarks/tape_vs_torch.py --only W1 --rounds 21

Each round alternates 100 times between ten taped gradients and ten PyTorch
gradients of the same workload (``benchmarks/systems.py`` prepares both, as
``run.py`` does) and sums the thread's CPU time of each side: both see the
same load, so the ratio moves far less than the two times do on a shared
machine.  Prints, per workload, the median times and the median, lowest and
highest ratio (taped / PyTorch) over the rounds.
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

import systems  # noqa: E402
from workloads import WORKLOADS  # noqa: E402


def measure(key: str, rounds: int) -> tuple[float, float, list[float]]:
    """Median taped and PyTorch times (seconds per gradient) and each round's ratio."""
    workload = WORKLOADS[key]
    args = workload.make_inputs("full")
    taped = systems.prepare("taped", workload, args)
    torch = systems.prepare("torch", workload, args)
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
    options = parser.parse_args(argv)
    try:
        systems.prepare("torch", WORKLOADS["W1"], WORKLOADS["W1"].make_inputs("test"))
    except systems.Unavailable as why:
        sys.exit(f"PyTorch is needed: {why}")
    print("| workload | astgrad taped | PyTorch eager | taped / PyTorch: median (lowest-highest) |")
    print("|---|---|---|---|")
    for key in (k.strip().upper() for k in options.only.split(",")):
        taped, torch, ratios = measure(key, options.rounds)
        print(f"| {key} | {taped * 1e6:.1f} µs | {torch * 1e6:.1f} µs | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) |")


if __name__ == "__main__":
    main()
