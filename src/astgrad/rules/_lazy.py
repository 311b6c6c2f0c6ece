"""What the rules need to keep a lazy (Dask) array lazy and chunked.

Dask arrays dispatch numpy's functions (NEP 13/18), so most rules run on
them unchanged.  What does not follow by itself: a shape read for later
(``np.shape``) forgets the chunking, so a gradient spread over it
(``filled``) would come back as one chunk of the whole size; a numpy array
made from a shape (``np.zeros``) and then written with a Dask value would
compute that value at once; and a shape of unknown size (``nan``, after
boolean indexing) has nothing to spread a gradient over.  ``ChunkedShape``
keeps the chunks with the shape, the helpers here use them, and nothing
here imports Dask unless a Dask array is already in hand.
"""

from __future__ import annotations

import math
import sys

__all__ = ["ChunkedShape", "chunked_shape", "is_lazy", "spread", "zeros"]


class ChunkedShape(tuple):
    """The shape of a Dask array: the tuple it is (it compares, indexes and hashes as one), and its ``chunks``."""

    chunks: tuple

    def __new__(cls, shape, chunks):
        out = super().__new__(cls, shape)
        out.chunks = chunks
        return out


def is_lazy(value) -> bool:
    """Whether ``value`` is a Dask array (False at once when Dask was never imported).

    The exact type: ``isinstance`` against Dask's Array takes a microsecond
    for anything else, which numpy code calling the runtime helpers would pay.
    """
    module = sys.modules.get("dask.array")
    return module is not None and type(value) is module.Array


def chunked_shape(value):
    """A Dask array's shape with its chunks; a located refusal for a shape of unknown size."""
    shape = value.shape
    if any(math.isnan(n) for n in shape):
        raise ValueError(f"astgrad: a Dask array of unknown size (shape {shape}, as boolean indexing or an "
                         f"unknown-length result makes) is read for its shape, which a gradient needs; call "
                         f".compute_chunk_sizes() on it, or write the selection with np.where")
    return ChunkedShape(shape, value.chunks)


def spread(g, shape):
    """``np.broadcast_to(g, shape)`` as a Dask array chunked as ``shape`` (a ChunkedShape) says."""
    import dask.array as da
    if type(shape) is not ChunkedShape:
        return da.broadcast_to(g, tuple(shape))
    chunks = shape.chunks
    g = da.asarray(g)
    if g.ndim:  # its own axes must be chunked as the result's (or be of size 1)
        own = chunks[len(chunks) - g.ndim:]
        g = g.rechunk(tuple((1,) if n == 1 else c for n, c in zip(g.shape, own)))
    return da.broadcast_to(g, tuple(shape), chunks=chunks)


def zeros(shape, dtype=float):
    """Lazy zeros of ``shape``, chunked as it says when it is a ChunkedShape."""
    import dask.array as da
    return da.zeros(tuple(shape), dtype=dtype, chunks=shape.chunks if type(shape) is ChunkedShape else "auto")


def scatter(g, shape, index):
    """Lazy zeros of ``shape`` with ``g`` added at ``index``: what ``np.add.at`` does, which Dask lacks.

    Dask writes (``out[index] = g``) instead of adding, the same where no
    position is indexed twice: basic indexes, boolean masks, one integer
    array without repeats.  Repeats, several integer arrays and indexes
    that are themselves Dask arrays are refused, the last with the advice of np.where.
    """
    import numpy as np
    parts = index if isinstance(index, tuple) else (index,)
    arrays = [i for i in parts if isinstance(i, (list, np.ndarray)) or is_lazy(i)]
    if any(is_lazy(i) for i in arrays):
        raise TypeError(f"astgrad: this gradient adds values into a Dask array at positions that are themselves a "
                        f"Dask array ({_brief(index)}: a mask or indexes computed from a Dask array, as in "
                        f"x[x > 0]); Dask cannot write at positions it has not computed. Write the selection with "
                        f"np.where (np.where(x > 0, x, 0.0)), or compute the positions first")
    if len(arrays) > 1 or arrays and not _distinct(arrays[0], parts, shape):
        raise TypeError(f"astgrad: this gradient adds values into a Dask array at the positions {_brief(index)} "
                        f"(the rule scatter, which the gradients of indexing, np.take, np.diag and others use); Dask "
                        f"writes lazily only where slices, a boolean mask or one integer array without repeats "
                        f"pick the positions (docs/scaling.md)")
    probe = np.broadcast_to(np.empty((), np.int8), tuple(shape))  # no memory: shapes only
    kept = tuple(i for i in parts if i is not None)  # Dask does not write through np.newaxis
    g = np.reshape(np.broadcast_to(g, probe[index].shape), probe[kept].shape)
    out = zeros(shape, np.result_type(g, 0.0) if np.result_type(g).kind in "biu" else np.result_type(g))
    out[kept] = g
    return out


def _distinct(array, parts, shape) -> bool:
    """Whether the one integer (or boolean) array in ``parts`` names no position twice."""
    import numpy as np
    array = np.asarray(array)
    if array.dtype.kind == "b":
        return True
    at = next(i for i, part in enumerate(parts) if part is array or isinstance(part, (list, np.ndarray)))
    if any(part is Ellipsis for part in parts[:at]):
        axis = len(shape) - 1 - sum(part is not None for part in parts[at + 1:])
    else:
        axis = sum(part is not None for part in parts[:at])
    size = shape[axis]
    flat = array.ravel() % size if size else array.ravel()
    return np.unique(flat).size == flat.size


def _brief(index) -> str:
    text = repr(index)
    return text if len(text) < 60 else text[:57] + "..."


def from_numpy(a):
    """A numpy array as a Dask array of one chunk."""
    import dask.array as da
    return da.from_array(a, chunks=-1)


def rows(parts, shape):
    """A Dask array of ``shape`` whose rows are ``parts`` (zeros for a None): the gradient of ``a, b = x``."""
    import dask.array as da
    row = ChunkedShape(shape[1:], shape.chunks[1:]) if type(shape) is ChunkedShape else tuple(shape[1:])
    return da.stack([zeros(row) if part is None else spread(part, row) for part in parts])
