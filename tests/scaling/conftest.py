"""Fixtures for the Dask tests: a scheduler that records every computation."""

import numpy as np
import pytest


class Computations(list):
    """What Dask computed, in order: each entry the values one computation returned (flattened)."""

    def scalars_only(self) -> bool:
        """Whether every value computed is one number (a condition), never a chunk of an array."""
        return all(np.ndim(value) == 0 for values in self for value in values)


def _flatten(result):
    if isinstance(result, (list, tuple)):
        return [v for item in result for v in _flatten(item)]
    return [result]


@pytest.fixture
def computations():
    """The synchronous scheduler, recording each computation: ``len(computations)`` is how many ran."""
    dask = pytest.importorskip("dask")
    found = Computations()

    def recording(graph, keys, **kwargs):
        result = dask.get(graph, keys, **kwargs)
        found.append(_flatten(result))
        return result

    with dask.config.set(scheduler=recording):
        yield found
