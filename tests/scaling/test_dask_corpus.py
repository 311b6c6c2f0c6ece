"""The corpus with Dask arrays for its arrays: the gradients numpy gives, lazily, computing nothing but conditions.

Every array argument becomes a Dask array of a few chunks (each axis cut in
two).  The generated gradient must return Dask arrays with the argument's
chunks, compute nothing while it builds them except the one-number
conditions of data-dependent control flow, and give numpy's gradients once
computed.  What Dask cannot run is listed with the error that says so: a
case that starts working must be moved out of the list.
"""

import re

import numpy as np
import pytest

import astgrad

from corpus.functions import CASES

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

#: case id -> (error, text it names): Dask lacks the function, or cannot run the user's line with these chunks
NOT_ON_DASK = {
    "clip_keywords": (TypeError, "a_max"),  # dask's clip has no a_min/a_max keywords
    "split_pieces": (TypeError, "Dask does not implement numpy.split"),
    "fancy_index_with_repeats": (TypeError, "one integer array without repeats"),
    "reshape_transpose": (NotImplementedError, None),  # dask reshapes only chunks that split evenly
    "shape_methods": (NotImplementedError, None),
    "inverse_and_solve": (ValueError, "square"),  # dask's lu needs square chunks
    "cholesky_logdet": (ValueError, "square"),
    "determinant": (TypeError, "Dask does not implement numpy.linalg.det"),
    "gram_eigenvalues": (TypeError, "Dask does not implement numpy.linalg.eigh"),
}
NEEDS_SCIPY = {"inverse_and_solve", "cholesky_logdet"}
ON_ARRAYS = [c for c in CASES if any(isinstance(a, np.ndarray) and a.ndim for a in c.args)]
RUNNABLE = [c for c in ON_ARRAYS if c.id not in NOT_ON_DASK]
REFUSED = [c for c in ON_ARRAYS if c.id in NOT_ON_DASK]


def lazy(value):
    """An array as a Dask array with each axis in two chunks; anything else as it is."""
    if isinstance(value, np.ndarray) and value.ndim:
        return da.from_array(value, chunks=tuple(max(1, (n + 1) // 2) for n in value.shape))
    return value


def gradients(case, args):
    """The case's gradients; for an array output, its vjp with a seed of ones (a Dask seed for Dask arguments)."""
    if np.ndim(case.f(*case.args)) == 0:
        out = astgrad.grad(case.f, case.wrt)(*args)
    else:
        seed = np.ones(np.shape(case.f(*case.args)))
        seed = lazy(seed) if any(isinstance(a, da.Array) for a in args) else seed
        out = astgrad.vjp(case.f, wrt=case.wrt)(*args, seed)
    return out if isinstance(case.wrt, tuple) else (out,)


@pytest.mark.sweep(3)
@pytest.mark.parametrize("case", RUNNABLE, ids=[c.id for c in RUNNABLE])
def test_gradients_on_dask_are_numpys_and_lazy(case, computations):
    expected = gradients(case, case.args)
    args = [lazy(a) for a in case.args]
    got = gradients(case, args)
    assert computations.scalars_only(), f"computed more than conditions: {computations}"
    built = len(computations)
    positions = case.wrt if isinstance(case.wrt, tuple) else (case.wrt,)
    for g, position in zip(got, positions):
        arg = args[position]
        assert isinstance(g, da.Array), type(g)
        if isinstance(arg, da.Array):
            assert g.chunks == arg.chunks
            assert g.dtype == np.float64
    values = dask.compute(*got)
    assert len(computations) == built + 1  # one computation, asked for here
    for value, want in zip(values, expected):
        np.testing.assert_allclose(value, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", REFUSED, ids=[c.id for c in REFUSED])
def test_what_dask_cannot_run_raises(case, computations):
    if case.id in NEEDS_SCIPY:
        pytest.importorskip("scipy")  # dask.array.linalg imports it first: without it, that ImportError
    error, text = NOT_ON_DASK[case.id]
    with pytest.raises(error, match=text and re.escape(text)):
        gradients(case, [lazy(a) for a in case.args])
    assert computations.scalars_only()
