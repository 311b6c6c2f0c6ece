"""Shared test configuration: the gradcheck fixture, isolated_rules, the --runslow and --optimize-level flags.

A test marked ``sweep(n)`` runs over many cases (every table entry, every corpus program): the default run
keeps one case in n, a choice that depends only on the case's id (the same cases on every machine and every
run), and at least one case of each test; ``--runslow`` runs every case.

The tests compile Numba gradients without LLVM's optimisation passes (``NUMBA_OPT=0``, set here before
anything imports Numba; an ``NUMBA_OPT`` already in the environment is kept): those passes were half of
the whole default run's Numba compile time and change no number (Numba compiles without fast-math).
tests/backends/test_numba_optimised.py compiles at Numba's own default level, in a process of its own.
The Numba backend's disk cache goes to a directory of the run's own (``ASTGRAD_NUMBA_CACHE``, removed at
the end), so every run compiles, and reads back only what it compiled itself.
"""

import atexit
import os
import shutil
import tempfile
import zlib

os.environ.setdefault("NUMBA_OPT", "0")
if "ASTGRAD_NUMBA_CACHE" not in os.environ:
    os.environ["ASTGRAD_NUMBA_CACHE"] = tempfile.mkdtemp(prefix="astgrad-numba-")
    atexit.register(shutil.rmtree, os.environ["ASTGRAD_NUMBA_CACHE"], True)

import pytest  # noqa: E402

from astgrad.rules import _registry  # noqa: E402

# The installed package registers the plugin through its entry point; this
# line makes the fixture available when the tests run from a source tree.
pytest_plugins = ["astgrad.pytest_plugin", "pytester"]


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the slow, exhaustive tests (marked 'slow')")
    parser.addoption("--optimize-level", type=int, default=None, choices=(0, 1, 2),
                     help="the optimisation level of every generated gradient made without optimize= "
                          "(default 2); every level must give the same gradients")


def pytest_configure(config):
    level = config.getoption("--optimize-level")
    if level is not None:
        from astgrad.api import gradient
        gradient._set_default_level(level)


def _kept_by_the_sweep(items, named=()):
    """The items the default run keeps: those not marked sweep(n), one in n of each marked test's cases, and a
    case ``named`` on the command line (``pytest "tests/x.py::test_y[case]"`` runs that case)."""
    kept, left_out, seen = [], [], set()
    for item in items:
        marker = item.get_closest_marker("sweep")
        if marker is None or any(name.endswith(item.nodeid) or item.nodeid.endswith(name) for name in named):
            kept.append(item)
            continue
        test = (item.path, getattr(item, "originalname", item.name))
        if zlib.crc32(item.nodeid.encode()) % marker.args[0] == 0:
            kept.append(item)
            seen.add(test)
        else:
            left_out.append(item)
    for item in left_out:  # a test none of whose cases the hash chose keeps its first
        test = (item.path, getattr(item, "originalname", item.name))
        if test not in seen:
            seen.add(test)
            kept.append(item)
    order = {id(item): position for position, item in enumerate(items)}
    kept.sort(key=lambda item: order[id(item)])
    return kept


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    kept = _kept_by_the_sweep(items, [arg.replace(os.sep, "/") for arg in config.args if "::" in arg])
    if len(kept) < len(items):
        chosen = {id(item) for item in kept}
        config.hook.pytest_deselected(items=[item for item in items if id(item) not in chosen])
        items[:] = kept
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(autouse=True)
def _optimize_level(request):
    """A test marked ``optimize(n)`` pins the source of level n: it runs there under any --optimize-level."""
    marker = request.node.get_closest_marker("optimize")
    if marker is None:
        yield
        return
    from astgrad.api import gradient
    saved = gradient._default_level
    gradient._set_default_level(marker.args[0])
    yield
    gradient._default_level = saved


@pytest.fixture
def frozen_heap():
    """Everything alive before the test is set aside (gc.freeze), so the test's gc.collect walks only what
    the test made: late in a whole run the heap holds thousands of tests' objects, and one full collection
    took seconds. A frozen object still keeps alive what it refers to, as it would unfrozen."""
    import gc
    gc.freeze()
    yield
    gc.unfreeze()


@pytest.fixture
def isolated_rules():
    """Rules registered by a test disappear after it (the table is shared)."""
    saved = dict(_registry._TABLE)
    yield
    _registry._TABLE.clear()
    _registry._TABLE.update(saved)
    _registry.changed()  # gradients built against the test's rules are out of date
