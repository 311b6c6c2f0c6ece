"""Shared test configuration: the gradcheck fixture and the --runslow flag."""

import pytest

# The installed package registers the plugin through its entry point; this
# line makes the fixture available when the tests run from a source tree.
pytest_plugins = ["astgrad.pytest_plugin", "pytester"]


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False,
                     help="also run the slow, exhaustive tests (marked 'slow')")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip_slow = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)
