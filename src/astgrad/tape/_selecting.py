"""Tensor methods that cut, pick and rearrange, and the ``new_*`` factories.

``split``, ``chunk``, ``unbind`` and ``narrow`` return views (sharing storage
and version counter, as indexing does); ``gather``, ``masked_fill``, ``sort``,
``topk``, ``tril``/``triu``, ``repeat`` and ``flip`` record one node each,
named as PyTorch names it, whose backward is a numpy rule of the shared
table (``take_along_axis``, ``where``, ``tril``, ``tile``, ``flip``).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np

from ._device import check_device
from ._dtypes import c_type_name
from ._factories import empty, full, tensor
from ._methods import _sizes, return_type
from ._modes import _state
from ._record import apply_nondiff, apply_op, is_tensor
from ._tensor import Tensor, TensorMethodsBase, extends

sort_result, topk_result = return_type("sort"), return_type("topk")

NEW_TENSOR_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor(sourceTensor)."
)
NUMPY_SORT_REFUSED = ("astgrad: ndarray.sort() sorts in place, which the tape cannot record; write np.sort(a) "
                      "(a sorted copy) instead")


def _dim(dim, ndim: int) -> int:
    """``dim`` made non-negative; PyTorch's IndexError when the tensor has no such dimension."""
    n = max(ndim, 1)
    dim = int(dim)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _along(dim: int, start: int, stop: int) -> tuple:
    """The basic index of ``start:stop`` along ``dim``."""
    return (slice(None),) * dim + (slice(start, stop),)


def _ordering(data: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """Indices sorting ``data`` along ``dim``, ties in their original order (also when descending)."""
    if not descending:
        return np.argsort(data, axis=dim, kind="stable")
    if data.dtype.kind == "b":
        key = ~data
    elif data.dtype.kind == "u":
        key = np.iinfo(data.dtype).max - data
    else:
        key = -data
    return np.argsort(key, axis=dim, kind="stable")


@extends(Tensor)
class SelectionMethods(TensorMethodsBase):
    """Cutting, picking and rearranging methods of :class:`Tensor`."""

    if TYPE_CHECKING:  # Tensor's, from the module of indexing methods
        def _indexed(self, name: str, index) -> Tensor: ...

    # ---------------------------------------------------------------- pieces

    def _pieces(self, name: str, dim: int, sizes) -> tuple:
        pieces, start = [], 0
        for n in sizes:
            pieces.append(self._indexed(name, _along(dim, start, start + n)))
            start += n
        return tuple(pieces)

    def split(self, split_size_or_sections, dim=0):
        """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or of the listed sizes."""
        if self._data.ndim == 0:
            raise RuntimeError("split expects at least a 1-dimensional tensor")
        dim = _dim(dim, self._data.ndim)
        size = self._data.shape[dim]
        if isinstance(split_size_or_sections, (list, tuple)):
            sizes = [int(n) for n in split_size_or_sections]
            if sum(sizes) != size or any(n < 0 for n in sizes):
                raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's "
                                   f"size at dimension {dim}), but got split_sizes={sizes}")
            return self._pieces("SplitWithSizesBackward0", dim, sizes)
        step = int(split_size_or_sections)
        if step < 0:
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={step}")
        if step == 0 and size != 0:
            raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {size}")
        sizes = [min(step, size - start) for start in range(0, size, step)] if size else [0]
        return self._pieces("SplitBackward0", dim, sizes)

    def chunk(self, chunks, dim=0):
        """At most ``chunks`` pieces of equal size (the last may be smaller), as ``split`` makes them."""
        chunks = int(chunks)
        if self._data.ndim == 0:
            raise RuntimeError("chunk expects at least a 1-dimensional tensor")
        if chunks <= 0:
            raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
        dim = _dim(dim, self._data.ndim)
        size = self._data.shape[dim]
        return self.split(-(-size // chunks) if size else 0, dim)

    def unbind(self, dim=0):
        """The slices along ``dim``, each without that dimension (``UnbindBackward0``)."""
        if self._data.ndim == 0:
            raise IndexError("Dimension specified as 0 but tensor has no dimensions")
        dim = _dim(dim, self._data.ndim)
        return tuple(self._indexed("UnbindBackward0", (slice(None),) * dim + (i,))
                     for i in range(self._data.shape[dim]))

    def narrow(self, dim, start, length):
        """``length`` entries from ``start`` along ``dim``: a view (``SliceBackward0``)."""
        if self._data.ndim == 0:
            raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
        dim = _dim(dim, self._data.ndim)
        size = self._data.shape[dim]
        start, length = int(start), int(length)
        if length < 0:
            raise RuntimeError("narrow(): length must be non-negative.")
        if not -size <= start <= size:
            raise IndexError(f"start out of range (expected to be in range of [{-size}, {size}], but got {start})")
        start = start + size if start < 0 else start
        if start + length > size:
            raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
        return self._indexed("SliceBackward0", _along(dim, start, start + length))

    # -------------------------------------------------------------- picking

    def gather(self, dim, index, *, sparse_grad=False):
        """``out[i][j] = self[i][index[i][j]]`` for ``dim=1`` (``GatherBackward0``)."""
        positions = index._data if is_tensor(index) else np.asarray(index)
        if positions.dtype != np.int64:
            raise RuntimeError("gather(): Expected dtype int64 for index")
        ndim = self._data.ndim
        if positions.ndim != ndim and not (ndim == 0 and positions.ndim <= 1):
            raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
        dim = _dim(dim, ndim)
        if ndim == 0:
            return self.reshape(1).gather(0, positions.reshape(-1)).reshape(positions.shape)
        for d in range(ndim):
            if d != dim and positions.shape[d] > self._data.shape[d]:
                raise RuntimeError(f"Size does not match at dimension {d} expected index {list(positions.shape)} to "
                                   f"be no larger than self {list(self._data.shape)} apart from dimension {dim}")
        size = self._data.shape[dim]
        outside = (positions < 0) | (positions >= size)
        if np.any(outside):
            raise RuntimeError(f"index {int(positions[outside].flat[0])} is out of bounds for dimension {dim} with "
                               f"size {size}")
        source: Tensor = self
        if any(positions.shape[d] < self._data.shape[d] for d in range(ndim) if d != dim):
            source = self._indexed("SliceBackward0", tuple(slice(None) if d == dim else slice(0, positions.shape[d])
                                                           for d in range(ndim)))
        return apply_op("GatherBackward0", np.take_along_axis, (source, positions, dim), slots=((0,),))

    def masked_fill(self, mask, value):
        """``value`` where ``mask`` is True (``MaskedFillBackward0``; 1 for a tensor value, which gets a gradient)."""
        chosen = mask._data if is_tensor(mask) else np.asarray(mask)
        if chosen.dtype != np.bool_:
            raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                               f"{c_type_name(chosen.dtype)}")
        if np.broadcast_shapes(chosen.shape, self._data.shape) != self._data.shape:
            raise RuntimeError(f"masked_fill: the mask's shape {list(chosen.shape)} does not broadcast to the "
                               f"tensor's shape {list(self._data.shape)}")
        if is_tensor(value):
            if value.ndim != 0:
                raise RuntimeError("masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                                   f"{value.ndim} dimension(s).")
            value = value.to(self.dtype)
            return apply_op("MaskedFillBackward1", np.where, (chosen, value, self), slots=((2,), (1,)))
        value = self._data.dtype.type(value)
        return apply_op("MaskedFillBackward0", np.where, (chosen, value, self), slots=((2,),))

    def masked_fill_(self, mask, value):
        """``masked_fill`` written into this tensor (its history becomes the ``MaskedFillBackward`` node)."""
        return self._inplace(lambda t: t.masked_fill(mask, value))

    def sort(self, dim=-1, descending=False, stable=False):
        """``(values, indices)`` sorted along ``dim`` (``SortBackward0``); ties keep their order."""
        if _state.numpy_methods:
            raise TypeError(NUMPY_SORT_REFUSED)
        if self._data.ndim == 0:
            return sort_result(apply_op("SortBackward0", np.copy, (self,)), apply_nondiff(np.zeros, ((), np.int64)))
        dim = _dim(dim, self._data.ndim)
        order = _ordering(self._data, dim, descending)
        values = apply_op("SortBackward0", np.take_along_axis, (self, order, dim), slots=((0,),))
        return sort_result(values, apply_nondiff(np.copy, (order,)))

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """The ``k`` largest (or smallest) entries along ``dim`` and their indices (``TopkBackward0``)."""
        dim = _dim(dim, self._data.ndim)
        size = self._data.shape[dim] if self._data.ndim else 1
        k = int(k)
        if not 0 <= k <= size:
            raise RuntimeError("selected index k out of range")
        data = self._data if self._data.ndim else self._data.reshape(1)
        order = np.take(_ordering(data, dim, largest), np.arange(k), axis=dim)
        source = self if self._data.ndim else self.reshape(1)
        values = apply_op("TopkBackward0", np.take_along_axis, (source, order, dim), slots=((0,),))
        if self._data.ndim == 0:
            return topk_result(values.reshape(()), apply_nondiff(np.zeros, ((), np.int64)))
        return topk_result(values, apply_nondiff(np.copy, (order,)))

    def tril(self, diagonal=0):
        """Entries on and below diagonal ``diagonal`` of the last two dimensions; zeros above."""
        if self._data.ndim < 2:
            raise RuntimeError("tril: input tensor must have at least 2 dimensions")
        return apply_op("TrilBackward0", np.tril, (self, int(diagonal)), slots=((0,),))

    def triu(self, diagonal=0):
        """Entries on and above diagonal ``diagonal`` of the last two dimensions; zeros below."""
        if self._data.ndim < 2:
            raise RuntimeError("triu: input tensor must have at least 2 dimensions")
        return apply_op("TriuBackward0", np.triu, (self, int(diagonal)), slots=((0,),))

    # ---------------------------------------------------------- rearranging

    def repeat(self, *sizes, **kwargs):
        """PyTorch's ``repeat`` tiles (``RepeatBackward0``); inside ``check_grads`` it is numpy's ``repeat``."""
        if _state.numpy_methods:
            return np.repeat(self, *sizes, **kwargs)
        sizes = _sizes(sizes)
        if len(sizes) < self._data.ndim:
            raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                               "of tensor")
        return apply_op("RepeatBackward0", np.tile, (self, sizes), slots=((0,),))

    def flip(self, *dims):
        """The entries in reverse order along each of ``dims`` (``FlipBackward0``)."""
        axes = [_dim(d, self._data.ndim) for d in _sizes(dims)]
        if len(set(axes)) != len(axes):
            raise RuntimeError(f"dims has duplicates, original flip dims size={len(axes)}, but unique flip dims "
                               f"size={len(set(axes))}")
        if self._data.ndim == 0:
            return apply_op("FlipBackward0", np.copy, (self,))
        return apply_op("FlipBackward0", np.flip, (self,), {"axis": tuple(axes)})

    # ------------------------------------------------------------- factories

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new leaf holding a copy of ``data``, in this tensor's dtype unless ``dtype`` is given."""
        check_device(device)
        if is_tensor(data):
            warnings.warn(NEW_TENSOR_WARNING, UserWarning, stacklevel=2)
            data = np.array(data._data)
        return tensor(data, dtype=self.dtype if dtype is None else dtype, requires_grad=requires_grad)

    def _new_dtype(self, dtype):
        return self.dtype if dtype is None else dtype

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        check_device(device)
        return full(_sizes(size), 0, dtype=self._new_dtype(dtype), requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        check_device(device)
        return full(_sizes(size), 1, dtype=self._new_dtype(dtype), requires_grad=requires_grad)

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
        check_device(device)
        return full(_sizes((size,)), fill_value, dtype=self._new_dtype(dtype), requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        check_device(device)
        return empty(_sizes(size), dtype=self._new_dtype(dtype), requires_grad=requires_grad)


__all__ = ["SelectionMethods", "sort_result", "topk_result"]
