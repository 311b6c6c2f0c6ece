"""``with`` blocks whose manager carries no gradient run as written.

``np.errstate``, ``warnings.catch_warnings``, ``np.printoptions`` and
``contextlib.nullcontext`` are entered and exited where Python does; the
adjoint of a block under ``np.errstate`` of constant settings runs under it
again.  An exception raised in the block exits them as Python's ``with``
does.  A manager astgrad does not know (its ``__exit__`` may change what the
adjoint reads), one that swallows exceptions, ``as`` and jumps out of the
block are refused, located.
"""

import contextlib
import warnings

import numpy as np
import pytest

import astgrad
from _numeric import gradient

X = np.array([0.3, -1.2, 0.8])


def stable_softplus(x):
    with np.errstate(over="ignore"):
        e = np.exp(x)
    return np.sum(np.where(x > 30.0, x, np.log1p(e)))


def in_a_loop_and_a_callee(x):
    total = 0.0
    for i in range(3):
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore")
            total = total + np.sum(_scaled_log(x * x + i))
    return total


def _scaled_log(v):
    with contextlib.nullcontext(), np.printoptions(precision=3):
        out = np.log(v) * 2.0
    return out


@pytest.mark.parametrize("fn", [stable_softplus, in_a_loop_and_a_callee])
def test_a_with_block_runs_as_written(fn):
    np.testing.assert_allclose(astgrad.grad(fn)(X), gradient(fn, X), rtol=1e-6, atol=1e-8)
    _, tangent = astgrad.jvp(fn)(X, np.ones(3))
    np.testing.assert_allclose(tangent, np.sum(gradient(fn, X)), rtol=1e-6)


BIG = np.full(2, 1e300)


def overflowing_under_errstate(x):
    with np.errstate(over="ignore"):
        y = np.sum(x * BIG * BIG)
    return y


def overflowing(x):
    y = np.sum(x * BIG * BIG)
    return y


def test_the_adjoint_of_a_block_runs_under_its_errstate():
    """The adjoint of ``* BIG`` overflows as the primal does: under the block's ``np.errstate`` it is
    ignored there too (the same function without the block warns, so the test can fail)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = astgrad.grad(overflowing_under_errstate)(np.ones(2))
    assert np.all(np.isposinf(got))
    with pytest.warns(RuntimeWarning, match="overflow"):
        astgrad.grad(overflowing)(np.ones(2))


def raising_in_the_block(x):
    with np.errstate(all="raise"), warnings.catch_warnings():
        warnings.simplefilter("error")
        y = np.sin(x) @ np.ones(4)
    return y


def test_an_exception_in_the_block_exits_its_managers():
    before, filters = np.geterr(), list(warnings.filters)
    with pytest.raises(ValueError, match="matmul"):
        astgrad.grad(raising_in_the_block)(X)
    assert np.geterr() == before
    assert warnings.filters == filters


class _Counting:
    depth = 0

    def __enter__(self):
        _Counting.depth += 1

    def __exit__(self, *exc):
        _Counting.depth -= 1


def a_manager_astgrad_does_not_know(x):
    with _Counting():
        y = np.sin(x) * _Counting.depth  # the adjoint, after the block, would read depth 0
    return np.sum(y)


def suppressing(x):
    with contextlib.suppress(ValueError):
        y = np.sin(x)
    return np.sum(y)


def bound_as(x):
    with warnings.catch_warnings(record=True) as caught:
        y = np.sin(x)
    return np.sum(y) + len(caught)


def returning_inside(x):
    with np.errstate(over="ignore"):
        return np.sum(np.exp(x))


@pytest.mark.parametrize("fn, message", [
    (a_manager_astgrad_does_not_know, r"`with _Counting\(\):` enters a context manager astgrad does not know"),
    (suppressing, r"`with contextlib.suppress\(...\)` goes on after the block"),
    (bound_as, r"`with ... as name` is not supported"),
    (returning_inside, r"return inside a `with` block is not supported"),
])
def test_what_a_with_block_cannot_do_is_refused_where_it_is(fn, message):
    with pytest.raises(astgrad.TransformError, match=message) as info:
        astgrad.grad(fn)
    assert info.value.lineno > fn.__code__.co_firstlineno
