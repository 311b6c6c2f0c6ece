"""Gradient time and peak memory against rows: generated gradients on Dask, hand-written Dask, numpy in memory.

    python benchmarks/dask_scaling.py                    # 1e5 to 2e7 rows (about 15 minutes on 2 cores)
    python benchmarks/dask_scaling.py --quick            # 1e5 and 3e5 rows: a smoke run
    python benchmarks/dask_scaling.py --rows 1e6,1e7 --repeat 5 --svg docs/dask_scaling.svg

The loss is the example's (examples/dask_logistic_regression.py): the mean
logistic loss of a linear model, 50 features.  Four systems compute its
value and gradient:

* **generated, Dask**: ``astgrad.value_and_grad(loss)`` called with Dask
  arrays, computed on a LocalCluster (one worker, two threads, in the
  measuring process);
* **hand-written, Dask**: the closed form ``X.T @ (sigmoid(X @ w) - y) / n``
  written with Dask arrays, computed the same way;
* **generated, numpy** and **hand-written, numpy**: the same with the data
  in memory as numpy arrays (up to ``--numpy-max-rows``).

For Dask the data is generated chunk by chunk inside each computation and
never held whole, so the times include drawing the random numbers; for
numpy the data is drawn once, before timing.  Each measurement runs in a
fresh process, round robin over the systems ``--repeat`` times: time is the
median (graph building included for Dask), peak memory the largest peak
resident size above the process's size once the data (numpy) or the cluster
(Dask) was ready and warm.  Before timing,
each system's gradient on the first rows is checked against numpy's.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
if (HERE.parent / "src" / "astgrad").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402

import astgrad  # noqa: E402

SYSTEMS = ("generated-dask", "hand-dask", "generated-numpy", "hand-numpy")
TITLES = {"generated-dask": "generated, Dask", "hand-dask": "hand-written, Dask",
          "generated-numpy": "generated, numpy", "hand-numpy": "hand-written, numpy"}
FULL_ROWS = (100_000, 300_000, 1_000_000, 3_000_000, 10_000_000, 20_000_000)
QUICK_ROWS = (100_000, 300_000)


def loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z)


def hand_written(w, X, y):
    """The loss and its gradient as a person writes them: one pass, ``X.T @ (sigmoid(z) - y) / n``."""
    z = X @ w
    n = z.shape[0]
    value = (np.logaddexp(0.0, z) - y * z).sum() / n
    return value, X.T @ (1.0 / (1.0 + np.exp(-z)) - y) / n


def dask_data(rows, features, chunk_rows, seed=0):
    import dask.array as da
    rng = da.random.default_rng(seed)
    X = rng.standard_normal((rows, features), chunks=(chunk_rows, features))
    y = (X @ np.linspace(-1.0, 1.0, features) + rng.logistic(size=rows, chunks=chunk_rows) > 0).astype(np.float64)
    return X, y


def numpy_data(rows, features, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((rows, features))
    y = (X @ np.linspace(-1.0, 1.0, features) + rng.logistic(size=rows) > 0).astype(np.float64)
    return X, y


def peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kilobytes on Linux


def current_rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def measure(system, rows, options) -> dict:
    """Time and peak memory of one system at one size, in this (fresh) process."""
    w = np.linspace(0.1, -0.1, options.features)
    generated = astgrad.value_and_grad(loss)
    function = generated if system.startswith("generated") else hand_written
    if system.endswith("numpy"):
        X, y = numpy_data(rows, options.features)
        check = _check(function, w, X[:10_000], y[:10_000])
        run = lambda: function(w, X, y)  # noqa: E731
        cluster = client = None
    else:
        import dask
        from dask.distributed import Client, LocalCluster
        cluster = LocalCluster(n_workers=1, threads_per_worker=options.threads, processes=False,
                               dashboard_address=None)
        client = Client(cluster)
        X, y = dask_data(rows, options.features, min(options.chunk_rows, rows))
        Xs, ys = dask.compute(X[:10_000], y[:10_000])
        check = _check(lambda *a: dask.compute(*function(*a)), w, X[:10_000], y[:10_000], Xs, ys)
        run = lambda: client.compute(list(function(w, X, y)), sync=True)  # noqa: E731
    warm = lambda: function(w, X[:10_000], y[:10_000])  # noqa: E731
    if client is not None:
        client.compute(list(warm()), sync=True)  # the transform, the cluster's first tasks
    else:
        warm()
    base = current_rss()
    times = []
    for _ in range(options.repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    out = {"system": system, "rows": rows, "seconds": statistics.median(times), "times": times,
           "peak_bytes": max(0, peak_rss() - base), "check": check}
    if client is not None:
        client.close()
        cluster.close()
    return out


def _check(function, w, X, y, X_np=None, y_np=None) -> float:
    """The largest difference between ``function``'s gradient on these rows and numpy's hand-written one."""
    X_np = X if X_np is None else X_np
    y_np = y if y_np is None else y_np
    value, grad = function(w, X, y)
    want_value, want = hand_written(w, X_np, y_np)
    error = max(float(np.max(np.abs(np.asarray(grad) - want))), abs(float(value) - want_value))
    if not error < 1e-10:
        raise AssertionError(f"gradient differs from numpy's by {error}")
    return error


def run_in_a_fresh_process(system, rows, options) -> dict:
    command = [sys.executable, __file__, "--one", system, "--rows", str(rows), "--repeat", "1",
               "--features", str(options.features), "--chunk-rows", str(options.chunk_rows),
               "--threads", str(options.threads)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        return {"system": system, "rows": rows, "error": (done.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def fmt_seconds(s):
    return f"{s * 1e3:.0f} ms" if s < 1 else f"{s:.2f} s"


def fmt_bytes(n):
    return f"{n / 2 ** 20:.0f} MiB" if n < 2 ** 30 else f"{n / 2 ** 30:.2f} GiB"


def table(results, rows_list) -> str:
    lines = ["| rows | " + " | ".join(TITLES[s] for s in SYSTEMS) + " | generated / hand-written, Dask |",
             "|---|" + "---|" * (len(SYSTEMS) + 1)]
    for rows in rows_list:
        cells = []
        for system in SYSTEMS:
            r = results.get((system, rows))
            if r is None:
                cells.append("not run")
            elif "error" in r:
                cells.append(f"failed: {r['error'][:40]}")
            else:
                cells.append(f"{fmt_seconds(r['seconds'])}, {fmt_bytes(r['peak_bytes'])}")
        a, b = results.get(("generated-dask", rows)), results.get(("hand-dask", rows))
        ratio = f"x{a['seconds'] / b['seconds']:.2f}" if a and b and "seconds" in a and "seconds" in b else ""
        lines.append(f"| {rows:,} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines)


def svg(results, rows_list) -> str:
    """A log-log plot of time against rows, one line per system (no plotting library needed)."""
    width, height, left, bottom, top, right = 640, 360, 70, 40, 20, 170
    points = {s: [(r, results[(s, r)]["seconds"]) for r in rows_list
                  if "seconds" in results.get((s, r), {})] for s in SYSTEMS}
    xs = [r for p in points.values() for r, _ in p]
    ys = [t for p in points.values() for _, t in p]
    if not xs:
        return ""
    lx0, lx1 = np.log10(min(xs)), np.log10(max(xs)) + 1e-9
    ly0, ly1 = np.floor(np.log10(min(ys))), np.ceil(np.log10(max(ys))) + 1e-9

    def at(r, t):
        x = left + (np.log10(r) - lx0) / (lx1 - lx0) * (width - left - right)
        y = height - bottom - (np.log10(t) - ly0) / (ly1 - ly0) * (height - top - bottom)
        return f"{x:.1f},{y:.1f}"

    colours = {"generated-dask": "#1f77b4", "hand-dask": "#ff7f0e", "generated-numpy": "#2ca02c",
               "hand-numpy": "#d62728"}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="12"><rect width="100%" height="100%" fill="white"/>']
    for decade in range(int(ly0), int(np.ceil(ly1)) + 1):
        y = at(xs[0], 10.0 ** decade).split(",")[1]
        out.append(f'<line x1="{left}" y1="{y}" x2="{width - right}" y2="{y}" stroke="#ddd"/>'
                   f'<text x="{left - 6}" y="{y}" text-anchor="end" dy="4">{fmt_seconds(10.0 ** decade)}</text>')
    for r in rows_list:
        x = at(r, 10.0 ** ly0).split(",")[0]
        out.append(f'<text x="{x}" y="{height - bottom + 16}" text-anchor="middle">{r:.0e}</text>')
    out.append(f'<text x="{(width - right + left) / 2}" y="{height - 6}" text-anchor="middle">rows (50 features)'
               f'</text><text x="14" y="{height / 2}" transform="rotate(-90 14 {height / 2})" '
               f'text-anchor="middle">time per value and gradient</text>')
    for i, system in enumerate(SYSTEMS):
        if points[system]:
            path = " ".join(at(r, t) for r, t in points[system])
            out.append(f'<polyline fill="none" stroke="{colours[system]}" stroke-width="2" points="{path}"/>')
        out.append(f'<line x1="{width - right + 12}" y1="{top + 10 + 18 * i}" x2="{width - right + 32}" '
                   f'y2="{top + 10 + 18 * i}" stroke="{colours[system]}" stroke-width="2"/>'
                   f'<text x="{width - right + 38}" y="{top + 14 + 18 * i}">{TITLES[system]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1e5 and 3e5 rows, 2 repeats")
    parser.add_argument("--rows", help="comma-separated row counts (1e5,1e6 works); default 1e5 to 2e7")
    parser.add_argument("--repeat", type=int, help="timed runs per measurement (default 3, quick 2)")
    parser.add_argument("--features", type=int, default=50)
    parser.add_argument("--chunk-rows", type=int, default=250_000, help="rows per Dask chunk (default 250,000)")
    parser.add_argument("--threads", type=int, default=2, help="threads of the one Dask worker (default 2)")
    parser.add_argument("--numpy-max-rows", type=float, default=5e6,
                        help="largest size numpy holds in memory (default 5e6: 2 GB of data)")
    parser.add_argument("--svg", help="write the time plot to this file")
    parser.add_argument("--one", choices=SYSTEMS, help=argparse.SUPPRESS)  # the child process
    options = parser.parse_args(argv)
    options.repeat = options.repeat or (2 if options.quick else 3)
    return options


def main(argv=None):
    options = parse_args(argv)
    if options.one:
        print(json.dumps(measure(options.one, int(float(options.rows)), options)))
        return
    rows_list = [int(float(r)) for r in options.rows.split(",")] if options.rows else \
        list(QUICK_ROWS if options.quick else FULL_ROWS)
    print(f"<!-- {options.features} features, Dask chunks of {options.chunk_rows:,} rows, one worker with "
          f"{options.threads} threads (processes=False), {options.repeat} timed runs, BLAS single-threaded -->")
    results = {}
    for rows in rows_list:
        systems = [s for s in SYSTEMS if not (s.endswith("numpy") and rows > options.numpy_max_rows)]
        runs = {s: [] for s in systems}
        for _ in range(options.repeat):  # round robin: load on the machine falls on every system alike
            for system in systems:
                runs[system].append(run_in_a_fresh_process(system, rows, options))
        for system in systems:
            failed = [r for r in runs[system] if "error" in r]
            results[(system, rows)] = r = failed[0] if failed else {
                "seconds": statistics.median(x["seconds"] for x in runs[system]),
                "peak_bytes": max(x["peak_bytes"] for x in runs[system])}
            print(f"<!-- {system} {rows:,}: {r.get('error') or fmt_seconds(r['seconds'])}, "
                  f"{r.get('peak_bytes', 0) / 2 ** 20:.0f} MiB -->", flush=True)
    print("\n## Time and peak memory per value and gradient\n")
    print(table(results, rows_list))
    if options.svg:
        Path(options.svg).write_text(svg(results, rows_list))
        print(f"\n<!-- plot written to {options.svg} -->")


if __name__ == "__main__":
    main()
