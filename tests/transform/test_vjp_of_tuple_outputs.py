"""``vjp`` of a function returning parts of different shapes takes a seed of the same parts."""

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.4, -1.1, 2.0])


def array_and_number(v):
    return (v * 2, np.sum(v * v))


def three_parts(v):
    return [v[:2] * v[1:], np.sum(v * v), v]


@pytest.mark.parametrize("level", [0, 1, 2])
def test_seed_of_parts(level):
    seed = (np.array([1.0, -2.0, 0.5]), 3.0)
    expected = gradient(lambda v: np.sum(v * 2 * seed[0]) + np.sum(v * v) * seed[1], X)
    np.testing.assert_allclose(astgrad.vjp(array_and_number, optimize=level)(X.copy(), seed), expected, rtol=1e-6)
    seed3 = [np.array([1.0, 2.0]), 3.0, np.ones(3)]
    expected3 = gradient(lambda v: np.sum(v[:2] * v[1:] * seed3[0]) + np.sum(v * v) * 3.0 + np.sum(v), X)
    np.testing.assert_allclose(astgrad.vjp(three_parts, optimize=level)(X.copy(), seed3), expected3, rtol=1e-6)


@pytest.mark.parametrize("seed", [(np.ones(2), 1.0), (np.ones(3),), np.ones(3)], ids=["short part", "one part", "array"])
def test_seed_of_other_parts_is_refused(seed):
    with pytest.raises(ValueError, match=r"the seed has shape .* but array_and_number's output has shape \(\(3,\), \(\)\)"):
        astgrad.vjp(array_and_number)(X.copy(), seed)
