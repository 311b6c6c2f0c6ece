"""The taped Tensor's time over PyTorch eager's, finely interleaved.

    python benchmarks/tape_vs_torch.py                  # W1 and W5, 9 rounds
    python benchmarks/tape_vs_torch.py --only W1 --rounds 21
    python benchmarks/tape_vs_torch.py --ops            # small-tensor operations, one by one
    python benchmarks/tape_vs_torch.py --against ../main/src   # also another checkout's tape, in the same rounds

Each round alternates 100 times between ten taped gradients and ten PyTorch
gradients of the same workload (``benchmarks/systems.py`` prepares both, as
``run.py`` does) and sums the thread's CPU time of each side: both see the
same load, so the ratio moves far less than the two times do on a shared
machine.  Prints, per workload, the median times and the median, lowest and
highest ratio (taped / PyTorch) over the rounds.  ``--ops`` measures the
operations a tutorial uses, one at a time on 4x4 float32 tensors that require
grad (``import astgrad.torch as torch`` against ``torch``), and one small
backward pass, the same way.

``--against SRC`` imports the astgrad package under ``SRC`` (another
checkout's ``src``, say main's) as a second taped side, ``astgrad_against``,
and runs its ten calls in the same rounds: a change to the tape is then
measured before and after under the same load, where two runs minutes apart
see different loads (and PyTorch slows more than the tape under load, so even
their ratios move).  Each side's gradients are checked equal first.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import statistics
import sys
import time
import warnings
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


def load_against(src: str):
    """The astgrad package under ``src``, imported as ``astgrad_against`` beside this checkout's ``astgrad``."""
    root = Path(src).resolve() / "astgrad"
    spec = importlib.util.spec_from_file_location("astgrad_against", root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    if spec is None or spec.loader is None:
        sys.exit(f"no astgrad package under {src}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["astgrad_against"] = module
    with warnings.catch_warnings():  # its rules warn that they are not astgrad's own: a name check, nothing more
        warnings.simplefilter("ignore")
        spec.loader.exec_module(module)
        importlib.import_module("astgrad_against.torch")
    return module


def workload_calls(key: str, libraries: list) -> list:
    """One gradient of workload ``key`` per side: each taped library given, then PyTorch."""
    workload = WORKLOADS[key]
    args = workload.make_inputs("full")
    calls = []
    for lib in libraries:
        inputs, seed = (list(args[:-1]), args[-1]) if workload.vjp else (list(args), None)
        leaves = [lib.tensor(np.asarray(inputs[i], dtype=np.float64), dtype=np.float64, requires_grad=True)
                  for i in workload.wrt]
        for i, leaf in zip(workload.wrt, leaves):
            inputs[i] = leaf
        calls.append(systems._backward_runner(workload.fn, inputs, leaves,
                                              None if seed is None else lib.tensor(seed, dtype=np.float64)))
    calls.append(systems.prepare("torch", workload, args))
    first = systems.as_numpy(calls[0]())
    for call in calls[1:]:
        for mine, theirs in zip(first, systems.as_numpy(call())):
            np.testing.assert_allclose(mine, theirs, rtol=1e-12, atol=1e-12)
    return calls


def small_operations(libraries: list) -> dict:
    """``{name: [call per side]}``: one operation each on 4x4 float32 tensors that require grad."""
    import torch as pytorch

    array = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)
    sides: dict = {}
    for lib in [*(importlib.import_module(f"{lib.__name__}.torch") for lib in libraries), pytorch]:
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
            sides.setdefault(name, []).append(call)
    return sides


def interleave(calls: list, rounds: int) -> tuple[list[float], list[list[float]]]:
    """Each call's median time (seconds per call), alternating ten at a time, and per round each one's
    time over the last call's (PyTorch's)."""
    for _ in range(300):  # warm every side: caches, plans, PyTorch's dispatch
        for call in calls:
            call()
    clock = time.thread_time_ns
    times: list[list[float]] = [[] for _ in calls]
    ratios: list[list[float]] = [[] for _ in calls[:-1]]
    taped = len(calls) - 1
    # the side that runs right after PyTorch's is slower (15-20% on W1: PyTorch's code leaves the caches cold),
    # so the taped sides take turns at it: each follows PyTorch equally often
    orders = [[(start + k) % taped for k in range(taped)] + [taped] for start in range(taped)]
    for _ in range(rounds):
        spent = [0] * len(calls)
        for i in range(100):
            for side in orders[i % taped]:
                call = calls[side]
                t0 = clock()
                for _ in range(10):
                    call()
                spent[side] += clock() - t0
        for side, total in enumerate(spent):
            times[side].append(total / 1000 * 1e-9)
        for side, ratio in enumerate(ratios):
            ratio.append(spent[side] / spent[-1])
    return [statistics.median(t) for t in times], ratios


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="W1,W5", help="workloads, comma-separated (default W1,W5)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds of 1000 gradients per side (default 9)")
    parser.add_argument("--ops", action="store_true", help="small-tensor operations instead of workloads")
    parser.add_argument("--against", metavar="SRC", help="another checkout's src: its tape as a second side")
    options = parser.parse_args(argv)
    try:
        systems.prepare("torch", WORKLOADS["W1"], WORKLOADS["W1"].make_inputs("test"))
    except systems.Unavailable as why:
        sys.exit(f"PyTorch is needed: {why}")
    import astgrad

    libraries = [astgrad] + ([load_against(options.against)] if options.against else [])
    header = f"| {'operation' if options.ops else 'workload'} | astgrad taped | "
    rule = "|---|---|"
    if options.against:
        header += "against | "
        rule += "---|"
    header += "PyTorch eager | taped / PyTorch: median (lowest-highest) |"
    rule += "---|---|"
    if options.against:
        header += " against / PyTorch | taped / against |"
        rule += "---|---|"
    print(header)
    print(rule)
    if options.ops:
        runs = ((f"`{name}`", calls) for name, calls in small_operations(libraries).items())
    else:
        runs = ((key, workload_calls(key, libraries)) for key in (k.strip().upper() for k in options.only.split(",")))
    for key, calls in runs:
        medians, ratios = interleave(calls, options.rounds)
        cells = [key, *(f"{m * 1e6:.1f} µs" for m in medians)]
        cells += [f"{statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f})" for r in ratios]
        if options.against:
            mine = [a / b for a, b in zip(ratios[0], ratios[1])]
            cells.append(f"{statistics.median(mine):.3f} ({min(mine):.3f}-{max(mine):.3f})")
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
