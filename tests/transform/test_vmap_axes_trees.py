"""``in_axes`` and ``out_axes`` as trees (tuples, lists and dicts, as JAX reads them): a prefix of the
arguments' and result's structure, shared subtrees, and a clear error for a mismatched tree."""

from __future__ import annotations

import numpy as np
import pytest

import astgrad

RNG = np.random.default_rng(12)
PARAMS = {"W": RNG.normal(size=(3, 2)), "b": RNG.normal(size=2), "extra": (RNG.normal(size=2), 0.5)}
X = RNG.normal(size=(5, 3))
A = RNG.normal(size=(5, 2))
C = RNG.normal(size=2)


def model(params, x, pair):
    a, c = pair
    scale, shift = params["extra"]
    return np.tanh(x @ params["W"] + params["b"]) * a * shift + c + scale


def _loop(in_x=0):
    return np.stack([model(PARAMS, X[i], (A[i], C)) for i in range(5)])


@pytest.mark.parametrize("in_axes", [
    ({"W": None, "b": None, "extra": (None, None)}, 0, [0, None]),
    (None, 0, (0, None)),
    ({"W": None, "b": None, "extra": None}, 0, (0, None)),
])
def test_a_tree_of_in_axes_matches_a_loop(in_axes):
    np.testing.assert_allclose(astgrad.vmap(model, in_axes=in_axes)(PARAMS, X, (A, C)), _loop(), rtol=1e-12)


@pytest.mark.parametrize("in_axes, message", [
    (({"W": None}, 0, (0, None)), r"in_axes is not a tree prefix .* a dict with keys \['W'\] for params, which is a "
                                  r"dict with keys \['W', 'b', 'extra'\]"),
    (((None, None), 0, (0, None)), "a tuple of 2 for params, which is a dict"),
    ((None, 0, (0, None, 0)), "a tuple of 3 for pair, which is a tuple of 2"),
    (({"W": None, "b": None, "extra": (None,)}, 0, (0, None)), r"a tuple of 1 for params\['extra'\]"),
    ((None, (0,), (0, None)), "a tuple of 1 for x, which is a ndarray"),
    (({"W": 0, "b": None, "extra": None}, 0, (0, None)), "a batch axis to an array inside a dict"),
])
def test_a_mismatched_or_unbatchable_tree_is_a_clear_error(in_axes, message):
    with pytest.raises(ValueError, match=message):
        astgrad.vmap(model, in_axes=in_axes)(PARAMS, X, (A, C))


def two(x):
    return x * 2.0, x + 1.0


def test_out_axes_as_a_tree_and_its_errors():
    first, second = astgrad.vmap(two, out_axes=[1, 0])(X)
    np.testing.assert_allclose(first, (X * 2.0).T)
    np.testing.assert_allclose(second, X + 1.0)
    for out_axes, message in ((((1, 0), 0), r"out_axes\[0\] is a tuple of 2, where the result holds an array"),
                              ({"a": 0}, "a dict with keys"), ((0, 0, 0), "for a tuple of 2 arrays")):
        with pytest.raises(ValueError, match=message):
            astgrad.vmap(two, out_axes=out_axes)(X)
    with pytest.raises(TypeError, match="out_axes entries are ints"):
        astgrad.vmap(two, out_axes=(0, None))
    with pytest.raises(TypeError, match="for a dict argument, write in_axes"):
        astgrad.vmap(two, in_axes={"x": 0})
