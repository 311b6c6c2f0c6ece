"""Fixtures for the taped-engine tests (helpers are in _taped.py)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
