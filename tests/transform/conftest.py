"""Fixtures for the source-transformer tests."""

import pytest

from astgrad.rules import _registry


@pytest.fixture
def isolated_rules():
    """Rules registered by a test disappear after it (the table is shared)."""
    saved = dict(_registry._TABLE)
    yield
    _registry._TABLE.clear()
    _registry._TABLE.update(saved)
    _registry.changed()  # gradients built against the test's rules are out of date
