"""Shared test configuration: the gradcheck fixture, isolated_rules and the --runslow flag."""

import pytest

from astgrad.rules import _registry

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


@pytest.fixture
def isolated_rules():
    """Rules registered by a test disappear after it (the table is shared)."""
    saved = dict(_registry._TABLE)
    yield
    _registry._TABLE.clear()
    _registry._TABLE.update(saved)
    _registry.changed()  # gradients built against the test's rules are out of date
