"""vmap over the corpus: each function batched over its first array argument gives the loop's numbers, or refuses.

Refusing (a TransformError at the user's line, or a TypeError for a gradient
whose code vmap does not batch) is allowed; a number that differs from
``np.stack([f(x_i, ...) for x_i in xs])`` is not, nor is any other error
where the loop runs.  The same for per-example gradients, ``vmap(grad(f))``
against a loop of ``grad(f)``.
"""

import numpy as np
import pytest

import astgrad
from astgrad.rules.batching import Unbatchable

from .functions import CASES

EXAMPLES = 3


def batched_arguments(case):
    """The case's arguments with its first float array stacked EXAMPLES times (nudged apart), and the in_axes."""
    args = list(case.args)
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and a.ndim >= 1:
            steps = np.linspace(-1e-3, 1e-3, EXAMPLES).reshape((EXAMPLES,) + (1,) * a.ndim)
            args[i] = a[None] + steps * (1.0 + np.abs(a[None]))
            return args, tuple(0 if j == i else None for j in range(len(args)))
    return None, None


def looped(f, args, in_axes):
    results = [f(*[a[k] if ax == 0 else a for a, ax in zip(args, in_axes)]) for k in range(EXAMPLES)]
    if isinstance(results[0], tuple):
        return tuple(np.stack(parts) for parts in zip(*results))
    return np.stack(results)


def same(batched, expected):
    if isinstance(expected, tuple):
        assert isinstance(batched, tuple) and len(batched) == len(expected)
        for b, e in zip(batched, expected):
            same(b, e)
        return
    assert np.shape(batched) == np.shape(expected)
    np.testing.assert_allclose(batched, expected, rtol=1e-10, atol=1e-12)


CORPUS = [c for c in CASES if batched_arguments(c)[0] is not None]


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_vmap_of_a_corpus_function_matches_a_loop_or_refuses(case):
    args, in_axes = batched_arguments(case)
    expected = looped(case.f, args, in_axes)
    try:
        batched = astgrad.vmap(case.f, in_axes=in_axes)(*args)
    except (astgrad.TransformError, Unbatchable):
        return  # refused: never a number
    same(batched, expected)


@pytest.mark.parametrize("case", CORPUS, ids=[c.id for c in CORPUS])
def test_per_example_gradients_of_a_corpus_function_match_a_loop_or_refuse(case):
    args, in_axes = batched_arguments(case)
    gradient = astgrad.grad(case.f, wrt=case.wrt)
    try:
        expected = looped(gradient, args, in_axes)
    except (TypeError, ValueError) as error:  # no gradient for one example (an output not a number): none for a batch
        with pytest.raises((type(error), astgrad.TransformError)):  # the same error, or vmap refusing the code
            astgrad.vmap(gradient, in_axes=in_axes)(*args)
        return
    try:
        batched = astgrad.vmap(gradient, in_axes=in_axes)(*args)
    except (astgrad.TransformError, Unbatchable, TypeError) as refusal:
        assert not isinstance(refusal, TypeError) or "vmap" in str(refusal)
        return
    same(batched, expected)
