"""Shared test configuration: the gradcheck fixture, isolated_rules, the --runslow and --optimize-level flags.

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


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
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
def isolated_rules():
    """Rules registered by a test disappear after it (the table is shared)."""
    saved = dict(_registry._TABLE)
    yield
    _registry._TABLE.clear()
    _registry._TABLE.update(saved)
    _registry.changed()  # gradients built against the test's rules are out of date
