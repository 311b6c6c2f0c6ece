"""Time the gradient of a loop that appends to a list, at growing lengths.

    python benchmarks/list_appends.py                  # 1000, 2000, 4000, 8000 steps
    python benchmarks/list_appends.py --steps 8000 --repeat 5

The function builds ``hs`` by ``hs.append(...)``, reading ``hs[-1]`` in the
loop, then reads the list again by iteration and by index: the pattern of an
RNN kept in a list.  A linear adjoint costs the same per step at every
length (the last column stays flat); one that copies the list per step
doubles it with each doubling of the length.  The generated gradient is
checked against the hand-written one before it is timed, and the taped
Tensor is timed beside it.
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

import numpy as np  # noqa: E402

import astgrad  # noqa: E402


def appends(x, steps):
    hs = [x]
    for _ in range(steps):
        hs.append(np.sin(hs[-1]) * 0.9 + 0.1 * hs[-1])
    total = 0.0
    for h in hs:
        total = total + np.sum(h * h)
    return total + np.sum(hs[steps // 2])


def appends_grad(x, steps):
    hs = [x]
    for _ in range(steps):
        hs.append(np.sin(hs[-1]) * 0.9 + 0.1 * hs[-1])
    g = 2 * hs[-1]
    for t in range(steps - 1, -1, -1):
        g = g * (0.9 * np.cos(hs[t]) + 0.1) + 2 * hs[t] + (1.0 if t == steps // 2 else 0.0)
    return g


def _best(run, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="1000,2000,4000,8000", help="comma-separated loop lengths")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    x = np.array([0.3, -0.2, 0.5])
    grad = astgrad.grad(appends)
    print("| steps | generated | per step | taped | per step |")
    print("|---|---|---|---|---|")
    for steps in [int(s) for s in options.steps.split(",")]:
        got = grad(x, steps)
        want = appends_grad(x, steps)
        if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
            sys.exit(f"generated gradient differs from the hand-written one at {steps} steps: {got} != {want}")
        generated, _ = _best(lambda steps=steps: grad(x, steps), options.repeat)

        def taped(steps=steps):
            t = astgrad.tensor(x, requires_grad=True)
            appends(t, steps).backward()
        tape, _ = _best(taped, options.repeat)
        print(f"| {steps} | {generated * 1e3:.1f} ms | {generated / steps * 1e6:.1f} us "
              f"| {tape * 1e3:.1f} ms | {tape / steps * 1e6:.1f} us |")


if __name__ == "__main__":
    main()
