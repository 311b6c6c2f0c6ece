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


def times_minus_one(v):
    return v * -1


def scaled_sine(v):
    return 2.0 * np.sin(v)


@pytest.mark.parametrize("f", [times_minus_one, scaled_sine])
@pytest.mark.parametrize("seed", [[1.0, 2.0, 3.0], (1.0, 2.0, 3.0)], ids=["list", "tuple"])
def test_a_list_seed_for_an_array_output_is_refused_saying_to_pass_an_array(f, seed):
    # numpy would read a list seed as a Python list: [1.0] * -1 is [], [1.0] * 2 repeats it, 2.0 * [1.0] raises
    with pytest.raises(TypeError, match=r"the seed is a (list|tuple) where .* returns an array.*np\.asarray\(seed\)"):
        astgrad.vjp(f, wrt=0)(X.copy(), seed)
    _, vjp_fn = astgrad.vjp(f, X)
    with pytest.raises(TypeError, match=r"the cotangent is a (list|tuple) where .* returns an array.*np\.asarray"):
        vjp_fn(seed)
    expected = astgrad.vjp(f, wrt=0)(X.copy(), np.asarray(seed))  # the array it asks for
    np.testing.assert_allclose(expected, gradient(lambda v: np.sum(f(v) * np.asarray(seed)), X), rtol=1e-6)
    np.testing.assert_allclose(vjp_fn(np.asarray(seed))[0], expected, rtol=1e-12)


def numbers_pair(v):
    return (np.sum(v), np.sum(v * v))


def test_a_tuple_or_list_seed_of_numbers_for_a_tuple_of_numbers_still_works():
    for seed in ((1.0, 2.0), [1.0, 2.0]):
        np.testing.assert_allclose(astgrad.vjp(numbers_pair, wrt=0)(X.copy(), seed), 1.0 + 2.0 * 2 * X, rtol=1e-12)
        _, vjp_fn = astgrad.vjp(numbers_pair, X)
        np.testing.assert_allclose(vjp_fn(tuple(seed))[0], 1.0 + 2.0 * 2 * X, rtol=1e-12)
