"""The Numba backend's cold compile on issue 32's suite: each program's first call in a fresh process.

For each program and each source tree given, a new Python process imports
astgrad from that tree, pays Numba's start-up on a one-line gradient, then
times the program's first ``astgrad.grad(..., backend="numba")`` call (the
transform and Numba's compile) in CPU seconds of the process and in wall
seconds, with the disk cache off (``ASTGRAD_NUMBA_CACHE=0``).  It counts the
functions Numba compiled on the way (its ``numba:compile`` events) and
checks the compiled gradient against the numpy backend's on the same
inputs (largest difference relative to the largest entry).  The trees
alternate program by program, so a change of the machine's load falls on
both.

Usage: ``python benchmarks/numba_compile.py [--only S1,S2] [--size test|full] [--repeat 1] [TREE ...]``
(no tree: this script's own; a tree is a checkout's root, its ``src`` is imported).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
SUITE = ("S1", "S2", "S3", "S4", "S11", "S12", "S13", "S14")


def child(key: str, size: str) -> dict:
    """Measure ``key``'s first compiled call in this process (astgrad already on sys.path)."""
    import numpy as np

    import astgrad
    from numba.core import event

    def warm(x):
        return np.sum(np.sin(x) * x)
    astgrad.grad(warm, backend="numba")(np.ones(3))  # Numba's start-up, paid by whichever compiles first
    sys.path.insert(1, str(HERE))
    import scientific  # after astgrad: the tree's astgrad stays the one imported
    program = scientific.PROGRAMS[key]
    args = program.make_inputs(size)
    gradient = astgrad.grad(program.fn, wrt=program.wrt, backend="numba")
    with event.install_recorder("numba:compile") as recorder:
        wall, cpu = time.perf_counter(), time.process_time()
        got = gradient(*args)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    compiled = sum(1 for _, e in recorder.buffer if e.is_start)
    want = astgrad.grad(program.fn, wrt=program.wrt)(*args)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    worst = 0.0
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise SystemExit(f"{key}: shape or dtype differs: {g.shape} {g.dtype} against {w.shape} {w.dtype}")
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        worst = max(worst, float(np.max(np.abs(g - w))) / scale if scale else float(np.max(np.abs(g - w), initial=0)))
    return {"cpu": cpu, "wall": wall, "compiled": compiled, "difference": worst}


def measure(tree: pathlib.Path, key: str, size: str) -> dict:
    env = dict(os.environ, ASTGRAD_NUMBA_CACHE="0", PYTHONPATH=str(tree / "src"))
    out = subprocess.run([sys.executable, __file__, "--child", key, "--size", size], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trees", nargs="*", help="checkout roots (default: this script's)")
    parser.add_argument("--only", default=",".join(SUITE))
    parser.add_argument("--size", default="test", choices=("test", "full"))
    parser.add_argument("--repeat", type=int, default=1, help="fresh processes per program and tree (the median)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.child:
        print(json.dumps(child(options.child, options.size)))
        return
    trees = [pathlib.Path(t).resolve() for t in options.trees] or [HERE.parent]
    keys = [k.strip().upper() for k in options.only.split(",") if k.strip()]
    print(f"Load average at the start: {os.getloadavg()[0]:.2f}; {options.size} sizes, "
          f"median of {options.repeat} fresh process(es)\n")
    print("| program | " + " | ".join(f"{t.name}: CPU s (wall s, functions, difference)" for t in trees) + " |")
    print("|---" * (len(trees) + 1) + "|")
    for key in keys:
        runs: dict = {t: [] for t in trees}
        for _ in range(options.repeat):
            for tree in trees:
                runs[tree].append(measure(tree, key, options.size))
        cells = []
        for tree in trees:
            good = sorted((r for r in runs[tree] if "error" in r) and [] or runs[tree], key=lambda r: r["cpu"])
            if any("error" in r for r in runs[tree]):
                cells.append(next(r["error"] for r in runs[tree] if "error" in r)[:80])
                continue
            r = good[len(good) // 2]
            cells.append(f"{r['cpu']:.2f} ({r['wall']:.2f}, {r['compiled']}, {r['difference']:.1e})")
        print(f"| {key} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nLoad average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
