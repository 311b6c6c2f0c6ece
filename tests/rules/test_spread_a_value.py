"""One helper spreads a gradient over a shape, for both engines and the generated code.

``expand_reduced`` (the rules), ``unbroadcast`` (a gradient of lower rank)
and the generated ``filled(g, shape)`` (the transformer folds
``expand_reduced(g, s, None, k)`` into it) must agree value for value and
dtype for dtype, on both sides of the size threshold.
"""

import numpy as np
import pytest

from astgrad.rules import _support
from astgrad.transform import runtime

VALUES = [1.5, 2, np.float32(2.5), np.float64(-1.0), np.array(3.0), np.array(0.5, dtype=np.float32),
          np.array(1 + 2j), np.array([1.0, 2.0, 3.0])]
SHAPES = [(), (3,), (2, 3), (_support.SMALL + 1,)]


def test_the_generated_code_and_the_rules_call_the_same_helper():
    assert runtime.filled is _support.filled
    assert runtime.SMALL is _support.SMALL


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_spread_value_has_the_values_of_broadcast_to(value, shape):
    if np.ndim(value) and shape[-1:] != np.shape(value):
        pytest.skip("does not broadcast")
    got = _support.filled(value, shape)
    expected = np.broadcast_to(value, shape)
    assert got.shape == shape
    np.testing.assert_array_equal(got, expected)
    assert np.asarray(got).dtype == (np.float64 if type(value) in (int, float) else np.asarray(value).dtype)
    via_reduction = _support.expand_reduced(value, shape, None, False)
    np.testing.assert_array_equal(via_reduction, got)
    assert via_reduction.dtype == got.dtype


def test_a_bool_is_not_taken_for_a_number_to_spread():
    got = _support.filled(True, (2,))
    assert got.dtype == np.bool_
    assert not got.flags.writeable  # a view, as broadcast_to gives


def test_small_spreads_are_new_arrays_and_large_ones_views():
    small = _support.filled(2.0, (_support.SMALL,))
    assert small.flags.writeable and small.base is None
    large = _support.filled(2.0, (_support.SMALL + 1,))
    assert not large.flags.writeable
    np.testing.assert_array_equal(large, 2.0)
