"""Count how often a first ``grad(f)(x)`` moves between astgrad's modules.

    python benchmarks/module_switches.py            # the two-line function below
    python benchmarks/module_switches.py --top 15   # and the busiest pairs of modules

A profiler hook sees every Python call made while the gradient of a two-line
function is built and run for the first time (transform, compile, call).  A
*switch* is a call from a function of one astgrad module into a function of
another (a generator counts once, when it starts: the profiler also reports
each resumption as a call, which would count a walk over a tree once per
node it yields); the report gives the number of switches, the number of distinct
modules they touch, and the same two counts with modules grouped by the
subpackage they live in (``astgrad.transform.front``, ``astgrad.rules``, ...),
which is the unit a reader follows when tracing a call.  The numbers are
deterministic for a given source tree, so two checkouts can be compared
side by side (run the script with each one's ``src`` on ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import collections
import inspect
import sys

import numpy as np


def two_lines(x):
    y = np.sin(x) * x
    return np.sum(y)


_GENERATOR = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _group(module: str) -> str:
    """``astgrad.transform.front.normalize`` -> ``astgrad.transform.front``; ``astgrad.api`` stays."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "transform":
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def count(fn, *args) -> tuple[collections.Counter, set]:
    """Switches ``{(caller module, callee module): n}`` and modules touched while running ``fn(*args)``."""
    switches: collections.Counter = collections.Counter()
    touched: set = set()
    started: set = set()  # generator frames already counted (kept alive here, so ids are not reused)

    def hook(frame, event, arg):
        if event != "call":
            return
        callee = frame.f_globals.get("__name__", "")
        if not callee.startswith("astgrad"):
            return
        if frame.f_code.co_flags & _GENERATOR:
            if frame in started:
                return  # resumed, not called
            started.add(frame)
        touched.add(callee)
        back = frame.f_back
        while back is not None and not back.f_globals.get("__name__", "").startswith("astgrad"):
            back = back.f_back  # through numpy, gast, astor: the astgrad module that called in
        caller = back.f_globals.get("__name__", "") if back is not None else ""
        if caller and caller != callee:
            switches[(caller, callee)] += 1

    sys.setprofile(hook)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
    return switches, touched


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=0, help="also list the N busiest pairs of modules")
    options = parser.parse_args(argv)
    import astgrad  # imported here: module loading is not what is counted

    x = np.linspace(0.1, 1.0, 5)
    switches, touched = count(lambda: astgrad.grad(two_lines)(x))
    grouped: collections.Counter = collections.Counter()
    for (a, b), n in switches.items():
        if _group(a) != _group(b):
            grouped[(_group(a), _group(b))] += n
    print(f"astgrad {astgrad.__file__}")
    print(f"modules touched: {len(touched)}; switches between modules: {sum(switches.values())}")
    print(f"subpackages touched: {len({_group(m) for m in touched})}; "
          f"switches between subpackages: {sum(grouped.values())}")
    for (a, b), n in switches.most_common(options.top):
        print(f"  {n:5d}  {a} -> {b}")


if __name__ == "__main__":
    main()
