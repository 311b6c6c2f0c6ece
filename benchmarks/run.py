"""Time the eight workloads of issue 7 on every available system, in one process.

    python benchmarks/run.py               # the full sizes (a few minutes on 2 cores)
    python benchmarks/run.py --quick       # small sizes, few repeats: a smoke run in seconds
    python benchmarks/run.py --only W1,W3 --repeat 15
    python benchmarks/run.py --jvp --hessian   # also jvp.py's and hessian.py's tables (with the peers)
    python benchmarks/run.py --only W1 --cpu-time  # on a machine others load: CPU time, not wall time
    python benchmarks/run.py --scientific --cpu-time   # only scientific.py's table (issue 29's programs)

Systems run round-robin (each repeat times every system once, in a rotating
order) so that machine noise falls on all of them alike.  Before any timing,
the hand-written gradient is checked against central differences along random
directions and every other system's gradient against the hand-written one; a
system that fails the check or cannot run a workload is reported with the
reason and not timed.  BLAS runs single-threaded for every system.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")  # jax: one thread

import argparse  # noqa: E402
import gc  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import types  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if (HERE.parent / "src" / "astgrad").is_dir():
    sys.path.insert(0, str(HERE.parent / "src"))

import numpy as np  # noqa: E402

from systems import JAX_JIT_COMPILE, NUMBA_COMPILE, SYSTEMS, TITLES, Unavailable, as_numpy, prepare  # noqa: E402
from workloads import WORKLOADS, directional_derivative_error  # noqa: E402

CHECK_RTOL = 1e-7
#: the clock of every timed sample: wall time, or with --cpu-time the process's CPU time summed over its threads
#: (jax.jit runs its compiled program on a worker thread of its own, which the calling thread's clock never sees)
_clock = time.perf_counter
HAND_FD_TOL = 1e-5


def main(argv=None):
    global _clock
    options = parse_args(argv)
    if options.scientific:
        import scientific
        scientific.main((["--quick"] if options.quick else []) + (["--cpu-time"] if options.cpu_time else [])
                        + (["--repeat", str(options.repeat)] if options.repeat else [])
                        + (["--only", options.only] if options.only else []))
        return
    if options.cpu_time:
        _clock = cpu_clock
    size = "quick" if options.quick else "full"
    repeat = options.repeat or (3 if options.quick else 9)
    sample_seconds = 0.002 if options.quick else 0.02
    keys = [k.strip().upper() for k in options.only.split(",")] if options.only else list(WORKLOADS)
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        sys.exit(f"--only: unknown workload(s) {', '.join(unknown)}; choose from {', '.join(WORKLOADS)}")

    print(header(size, repeat) + ("(CPU time of the process, all its threads, not wall time)\n" if options.cpu_time else ""))
    _warm_up_transformer()
    results = {}
    for key in keys:
        started = time.perf_counter()
        results[key] = bench_workload(WORKLOADS[key], size, repeat, sample_seconds)
        print(f"<!-- {key} done in {time.perf_counter() - started:.1f} s -->", file=sys.stderr)
    print(report(results, keys))
    if options.jvp:
        import jvp
        print()
        jvp.main((["--quick"] if options.quick else []) + ["--only", ",".join(keys), "--repeat", str(repeat)])
    if options.hessian:
        import hessian
        print()
        hessian.main(["--repeat", str(repeat)])


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (a smoke run)")
    parser.add_argument("--only", help="comma-separated workloads, e.g. W1,W3 (with --scientific: S1,S5)")
    parser.add_argument("--repeat", type=int, help="round-robin repeats per workload (default 9, quick 3)")
    parser.add_argument("--jvp", action="store_true",
                        help="also time jvp of the workloads beside HIPS autograd, JAX and torch.func (jvp.py)")
    parser.add_argument("--hessian", action="store_true",
                        help="also time the 100-parameter hessian beside the same peers (hessian.py)")
    parser.add_argument("--scientific", action="store_true",
                        help="time only the scientific programs (scientific.py): gradient over primal beside "
                             "jax.jit, HIPS autograd and the tape")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time samples by the process's CPU time over all its threads (time.process_time), which "
                             "other processes on a loaded machine disturb less than wall time; jax.jit computes "
                             "on a worker thread, every other system in the calling one")
    return parser.parse_args(argv)


def cpu_clock() -> float:
    """CPU seconds of this process, every thread's: jax dispatches a compiled call to a worker thread and the
    calling thread waits (``time.thread_time`` counted about 2% of jax.jit's work); the other systems run in the
    calling thread, where the two clocks agree."""
    return time.process_time()


def header(size, repeat):
    import astgrad
    lines = [
        f"astgrad {astgrad.__version__} benchmarks, {size} sizes, {repeat} round-robin repeats, "
        f"median seconds per gradient",
        f"Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
        f"{os.cpu_count()} cores; BLAS single-threaded (OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=MKL_NUM_THREADS=1, "
        f"torch.set_num_threads(1)); float64 everywhere",
    ]
    lines.append(f"Numba (the astgrad numba column): {_version('numba') or 'not installed'}")
    for name in ("torch", "autograd", "jax"):
        version = _version(name)
        lines.append(f"{TITLES[name]}: {version or 'not installed'}")
    return "\n".join(lines) + "\n"


def _version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:
        return None


# ---------------------------------------------------------------- measuring

class Outcome:
    """What happened to one system on one workload: a time, or the reason it has none."""

    def __init__(self, status, detail=""):
        self.status, self.detail = status, detail
        self.samples = []

    @property
    def median(self):
        return statistics.median(self.samples) if self.samples else None


def bench_workload(workload, size, repeat, sample_seconds):
    args = workload.make_inputs(size)
    reference = as_numpy(workload.hand_grads(*args))
    fd_error = directional_derivative_error(workload, args, reference)
    outcomes, runners = {}, {}
    for system in SYSTEMS:
        outcomes[system], runner = check_system(system, workload, args, reference)
        if system == "hand" and fd_error > HAND_FD_TOL:
            outcomes[system] = Outcome("fails", f"hand-written gradient differs from central differences "
                                                f"by {fd_error:.1e} (relative)")
        if outcomes[system].status == "ok":
            runners[system] = (runner, inner_loops(runner, sample_seconds))
    order = list(runners)
    for r in range(repeat):
        shift = r % len(order)
        for system in order[shift:] + order[:shift]:
            runner, loops = runners[system]
            outcomes[system].samples.append(time_once(runner, loops))
    extra = {"fd_error": fd_error}
    if "generated" in runners:
        extra["transform"] = transform_times(workload)
    for system in ("hand", "generated", "taped"):
        if system in runners:
            extra[f"peak_{system}"] = peak_memory(runners[system][0])
    return outcomes, extra


def check_system(system, workload, args, reference):
    try:
        runner = prepare(system, workload, args)
        out = runner()
    except Unavailable as exc:
        return Outcome("unavailable", str(exc)), None
    except Exception as exc:
        return Outcome("error", f"{type(exc).__name__}: {_one_line(exc)}"), None
    if system == "primal":
        return Outcome("ok"), runner
    try:
        grads = as_numpy(out)
    except Exception as exc:
        return Outcome("error", f"gradient not convertible: {type(exc).__name__}: {_one_line(exc)}"), None
    problem = compare(grads, reference)
    if problem:
        return Outcome("fails", problem), None
    return Outcome("ok"), runner


def compare(grads, reference):
    if len(grads) != len(reference):
        return f"{len(grads)} gradients for {len(reference)} inputs"
    for i, (got, want) in enumerate(zip(grads, reference)):
        if got.shape != want.shape:
            return f"gradient {i} has shape {got.shape}, expected {want.shape}"
        scale = max(float(np.max(np.abs(want))) if want.size else 0.0, 1e-300)
        error = float(np.max(np.abs(got - want))) / scale if want.size else 0.0
        if not error <= CHECK_RTOL:
            return f"gradient {i} differs from hand-written by {error:.1e} (relative to its largest entry)"
    return ""


def _one_line(exc):
    text = " ".join(str(exc).split())
    return text if len(text) < 300 else text[:297] + "..."


def inner_loops(runner, sample_seconds):
    """How many calls make one timed sample last about ``sample_seconds``."""
    start = time.perf_counter()
    runner()
    once = time.perf_counter() - start
    return max(1, min(10_000, math.ceil(sample_seconds / max(once, 1e-7))))


def time_once(runner, loops):
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = _clock()
        for _ in range(loops):
            runner()
        return (_clock() - start) / loops
    finally:
        if gc_was_enabled:
            gc.enable()


def _warm_up_transformer():
    import astgrad

    def warm(x):
        return np.sum(np.sin(x) * x)
    astgrad.grad(warm)


def transform_times(workload, copies=5):
    """Seconds for ``grad(f)`` on fresh copies of ``f`` (the transform), and again on the same ``f`` (cached)."""
    import astgrad
    wrt = workload.wrt if len(workload.wrt) > 1 else workload.wrt[0]
    make = astgrad.vjp if workload.vjp else astgrad.grad
    firsts, cached = [], []
    for _ in range(copies):
        fn = workload.fn
        fresh = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        start = time.perf_counter()
        make(fresh, wrt=wrt)
        firsts.append(time.perf_counter() - start)
        start = time.perf_counter()
        make(fresh, wrt=wrt)
        cached.append(time.perf_counter() - start)
    return statistics.median(firsts), statistics.median(cached)


def peak_memory(runner):
    """Bytes allocated at the peak of one call above what was allocated before it (tracemalloc)."""
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        result = runner()
        _, peak = tracemalloc.get_traced_memory()
        del result
    finally:
        tracemalloc.stop()
    return peak - before


# ---------------------------------------------------------------- reporting

def fmt_seconds(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def fmt_bytes(n):
    if n is None:
        return "-"
    if n < 1024 ** 2:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024 ** 2:.1f} MiB"


def report(results, keys):
    shown = [s for s in SYSTEMS if any(results[k][0][s].status != "unavailable" for k in keys)]
    missing = [s for s in SYSTEMS if s not in shown]
    lines = ["## Median time per gradient (ratio to hand-written)", ""]
    lines.append("| workload | " + " | ".join(TITLES[s] for s in shown) + " |")
    lines.append("|---" * (len(shown) + 1) + "|")
    notes = []
    for key in keys:
        outcomes, _ = results[key]
        hand = outcomes["hand"].median
        cells = []
        for system in shown:
            outcome = outcomes[system]
            if outcome.median is not None:
                ratio = f" (x{outcome.median / hand:.2f})" if hand and system != "hand" else ""
                cells.append(fmt_seconds(outcome.median) + ratio)
            else:
                cells.append(f"{outcome.status} [{len(notes) + 1}]")
                notes.append(f"[{len(notes) + 1}] {key} {TITLES[system]}: {outcome.detail}")
        lines.append(f"| {key} {WORKLOADS[key].title} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.extend(notes)
    if missing:
        lines.append("Not installed: " + ", ".join(TITLES[s] for s in missing) + ".")
    lines += ["", "## Transform time and peak memory (tracemalloc, one call)", "",
              "| workload | transform (grad(f), first) | grad(f) again (cached) | peak hand-written "
              "| peak generated (ratio) | peak taped (ratio) | hand vs central differences |",
              "|---|---|---|---|---|---|---|"]
    for key in keys:
        _, extra = results[key]
        first, again = extra.get("transform", (None, None))
        hand = extra.get("peak_hand")

        def peak(name, extra=extra, hand=hand):
            value = extra.get(f"peak_{name}")
            if value is None:
                return "-"
            return fmt_bytes(value) + (f" (x{value / hand:.2f})" if hand else "")
        lines.append(f"| {key} | {fmt_seconds(first)} | {fmt_seconds(again)} | {fmt_bytes(hand)} | "
                     f"{peak('generated')} | {peak('taped')} | {extra['fd_error']:.1e} |")
    lines += numba_compile_times(keys)
    lines += ["", "## Targets of issue 7", ""] + targets(results, keys)
    lines += ["", "## Against the expert gradient (issue 17, numpy backend)", ""] + expert_table(results, keys)
    lines += ["", "## Targets of issue 17 (Numba backend)", ""] + numba_targets(results, keys)
    return "\n".join(lines)


def _ratio(results, key, a, b):
    x, y = (results[key][0][s].median if key in results else None for s in (a, b))
    return x / y if x is not None and y else None


def _geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def expert_table(results, keys):
    """generated/expert per workload, its geometric mean, and the numpy-backend targets of issue 17."""
    lines = ["| workload | expert | astgrad generated | generated/expert | generated/hand-written |",
             "|---|---|---|---|---|"]
    gen = {k: _ratio(results, k, "generated", "expert") for k in keys}
    for key in keys:
        outcomes = results[key][0]
        hand = _ratio(results, key, "generated", "hand")
        lines.append(f"| {key} | {fmt_seconds(outcomes['expert'].median)} | {fmt_seconds(outcomes['generated'].median)}"
                     f" | {'-' if gen[key] is None else f'{gen[key]:.2f}'} | {'-' if hand is None else f'{hand:.2f}'} |")
    measured = [r for r in gen.values() if r is not None]
    lines.append("")
    if not measured:
        return lines + ["- not measured: generated/expert"]
    geo = _geometric_mean(measured)
    note = "" if len(measured) == len(WORKLOADS) else f", over {len(measured)} of 8 workloads"
    lines.append(f"- {'met' if geo <= 1.2 else 'NOT met'}: generated/expert geometric mean at most 1.2 ({geo:.2f}{note})")
    worst = max(measured)
    lines.append(f"- {'met' if worst <= 2.0 else 'NOT met'}: generated/expert at most 2.0 on each workload "
                 f"(highest {worst:.2f}, {max(gen, key=lambda k: gen[k] or 0)})")
    for key, text, limit in (("W1", "W1 per-call overhead: generated/hand-written at most 1.5", 1.5),
                             ("W6", "W6 generated/hand-written at most 1.05", 1.05)):
        r = _ratio(results, key, "generated", "hand") if key in keys else None
        lines.append(f"- not measured: {text}" if r is None else
                     f"- {'met' if r <= limit else 'NOT met'}: {text} ({r:.2f})")
    return lines


def numba_compile_times(keys):
    """The Numba backend's first call per workload: the transform and Numba's compile."""
    measured = [k for k in keys if k in NUMBA_COMPILE or k in JAX_JIT_COMPILE]
    if not measured:
        return []
    first = {}  # a workload running an earlier one's function at other sizes (W4, W3's) reuses its gradient
    for k in measured:
        first.setdefault(WORKLOADS[k].fn, k)

    def shown(table, key):
        seconds = table.get(key)
        if seconds is None:
            return "-"
        earlier = first[WORKLOADS[key].fn]
        return fmt_seconds(seconds) + ("" if earlier == key or table is not NUMBA_COMPILE else
                                       f" (the code compiled for {earlier}: arguments of the same kinds)")
    lines = ["", "## Compiles: Numba's first call (transform done) beside jax.jit's (trace and XLA)", "",
             "| workload | astgrad numba | jax.jit |", "|---|---|---|"]
    return lines + [f"| {k} | {shown(NUMBA_COMPILE, k)} | {shown(JAX_JIT_COMPILE, k)} |" for k in measured]


def numba_targets(results, keys):
    """Issue 17's targets for the Numba backend, against the numpy backend and the expert numpy gradient."""
    def line(text, key, value, limit):
        if key not in keys or value is None:
            return f"- not measured: {text}"
        return f"- {'met' if value <= limit else 'NOT met'}: {text} ({key} {value:.3f})"

    def ratio(key, a, b):
        return _ratio(results, key, a, b) if key in keys else None
    compile_w2 = NUMBA_COMPILE.get("W2")
    return [line("numba/expert at most 0.05 on the scalar loop", "W2", ratio("W2", "numba", "expert"), 0.05),
            line("numba compile of the scalar loop under 2 s (seconds)", "W2", compile_w2, 2.0),
            line("numba/generated (numpy backend) below 1 on the 2x2 tutorial", "W1", ratio("W1", "numba", "generated"),
                 0.999),
            line("numba/generated (numpy backend) at most 1.2 on the small MLP", "W3",
                 ratio("W3", "numba", "generated"), 1.2)]


def targets(results, keys):
    """One line per target of the issue: met, NOT met or not measured, with the figures behind it."""
    def median(key, system):
        return results[key][0][system].median if key in results else None

    def ratio(key, a, b):
        x, y = median(key, a), median(key, b)
        return x / y if x is not None and y else None

    lines = []

    def verdict(text, figures, limit, strict=False):
        figures = {k: v for k, v in figures.items() if k in keys}
        measured = {k: v for k, v in figures.items() if v is not None}
        if not measured:
            lines.append(f"- not measured: {text}")
            return
        ok = all(v < limit if strict else v <= limit for v in measured.values())
        word = "met" if ok and len(measured) == len(figures) else "NOT met" if not ok else "met where measured"
        shown = ", ".join(f"{k} {v:.2f}" for k, v in figures.items() if v is not None)
        gaps = [k for k, v in figures.items() if v is None]
        lines.append(f"- {word}: {text} ({shown}" + (f"; not measured: {', '.join(gaps)}" if gaps else "") + ")")

    gen = {k: ratio(k, "generated", "hand") for k in keys}
    measured = [r for r in gen.values() if r is not None]
    if measured:
        geo = math.exp(sum(math.log(r) for r in measured) / len(measured))
        note = "" if len(measured) == len(WORKLOADS) else f", over {len(measured)} of 8 workloads"
        ok = "met" if geo <= 1.3 else "NOT met"
        lines.append(f"- {ok}: generated/hand-written geometric mean at most 1.3 ({geo:.2f}{note})")
    verdict("generated/hand-written at most 2.5 on each workload", gen, 2.5)
    verdict("generated faster than PyTorch eager (time ratio < 1)",
            {k: ratio(k, "generated", "torch") for k in ("W1", "W2", "W3", "W5", "W7", "W8")}, 1.0, strict=True)
    verdict("generated within 1.5x of PyTorch eager",
            {k: ratio(k, "generated", "torch") for k in ("W4", "W6")}, 1.5)
    verdict("taped faster than PyTorch eager (time ratio < 1)",
            {k: ratio(k, "taped", "torch") for k in ("W1", "W5")}, 1.0, strict=True)
    verdict("taped at most 1.5x hand-written", {k: ratio(k, "taped", "hand") for k in ("W4", "W6")}, 1.5)
    transform = {k: results[k][1].get("transform", (None, None)) for k in keys}
    verdict("transform under 50 ms (milliseconds)",
            {k: None if t[0] is None else t[0] * 1e3 for k, t in transform.items()}, 50.0, strict=True)
    verdict("a cached grad(f) costs nothing: under 0.1 ms (milliseconds)",
            {k: None if t[1] is None else t[1] * 1e3 for k, t in transform.items()}, 0.1, strict=True)

    def peak_ratio(key):
        hand, gen_peak = results[key][1].get("peak_hand"), results[key][1].get("peak_generated")
        return gen_peak / hand if hand and gen_peak is not None else None
    verdict("peak memory generated/hand-written at most 1.3", {k: peak_ratio(k) for k in keys}, 1.3)
    return lines


if __name__ == "__main__":
    main()
