"""Tensor shape operations and indexing.

Reshapes, transposes and basic indexing return numpy views: the result
shares storage and version counter with its base, as PyTorch's views do, and
remembers its base so an in-place write through it updates the base's
history (``_inplace``).
"""

from __future__ import annotations

import numpy as np

from .. import rules
from . import _ndarray
from ._device import check_device, device
from ._dtypes import as_numpy_dtype
from ._inplace import VIEW_OF_LEAF_INPLACE
from ._methods import _axis, _sizes
from ._modes import _state, is_grad_enabled
from ._record import FIRST, apply_op, is_tensor, unwrap
from ._tensor import Tensor, _warn_once, TensorMethodsBase, extends

T_WARNING = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
    "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
    "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor. (Triggered "
    "internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4314.)"
)


def _index_node_name(index) -> str:
    """PyTorch's node for ``t[index]``: the last index component that does work."""
    parts = index if isinstance(index, tuple) else (index,)
    if any(is_tensor(p) or isinstance(p, (list, np.ndarray)) for p in parts):
        return "IndexBackward0"
    name = "SliceBackward0"
    for p in parts:
        if p is None:
            name = "UnsqueezeBackward0"
        elif isinstance(p, (int, np.integer)):
            name = "SelectBackward0"
        elif isinstance(p, slice) and p != slice(None):
            name = "SliceBackward0"
    return name


def _is_basic_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return all(p is None or p is Ellipsis or isinstance(p, (int, np.integer, slice)) for p in parts)


def _shares(out: np.ndarray, data: np.ndarray) -> bool:
    """``np.shares_memory(out, data)`` for ``out`` made from ``data`` (``data[index]``, a transpose...), cheaply.

    An array that owns its memory, other than ``data`` itself, was made by
    the operation, so shares none (numpy's check costs a microsecond on the
    smallest arrays); a non-empty view of ``data``'s memory owner, made from
    ``data``, holds some of ``data``'s elements.  Anything else asks numpy.
    """
    base = out.base
    if base is None and out is not data:
        return False
    if out.size and (base is data or base is data.base):
        return True
    return bool(np.shares_memory(out, data))


def _unwrap_index(index):
    if isinstance(index, tuple):
        return tuple(_unwrap_index(i) for i in index)
    if is_tensor(index):
        return index._data
    return index


@extends(Tensor)
class ShapeMethods(TensorMethodsBase):
    """Shape operations and indexing of :class:`Tensor`."""

    # ------------------------------------------------------------ shape ops

    def reshape(self, *shape, order="C"):
        """A view when the layout allows (``ViewBackward0``), else a copy (``UnsafeViewBackward0``).

        numpy's ``order="F"`` (and ``"A"`` on a Fortran-ordered array) reads and
        writes the elements first index fastest: reshaping the reversed axes.
        """
        shape = _sizes(shape)
        if order not in ("C", "F", "A"):
            raise ValueError(f"reshape: order must be one of 'C', 'F', 'A', got {order!r}")
        if order == "F" or order == "A" and self._data.flags.f_contiguous and not self._data.flags.c_contiguous:
            return self.transpose().reshape(shape[::-1]).transpose()
        try:
            viewed = np.reshape(self._data, shape)
        except ValueError:
            raise RuntimeError(
                f"shape '[{', '.join(str(n) for n in shape)}]' is invalid for input of size {self._data.size}"
            ) from None
        copied = self._data.size > 1 and not np.may_share_memory(viewed, self._data)
        return self._view_op("UnsafeViewBackward0" if copied else "ViewBackward0", np.reshape, (self, shape))

    def view(self, *shape):
        if not self._data.flags.c_contiguous and self._data.size > 1:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension "
                "spans across two contiguous subspaces). Use .reshape(...) instead."
            )
        return self.reshape(*shape)

    def view_as(self, other):
        return self.reshape(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def flatten(self, start_dim=0, end_dim=-1):
        if _state.numpy_methods:
            return _ndarray.flatten(self, *(() if start_dim == 0 else (start_dim,)))
        if self._data.ndim <= 1:
            return self
        shape = self._data.shape
        start, end = start_dim % len(shape), end_dim % len(shape)
        merged = int(np.prod(shape[start:end + 1]))
        return self.reshape(shape[:start] + (merged,) + shape[end + 1:])

    def ravel(self, order="C"):
        return self.reshape(-1, order=order)

    def t(self):
        if self._data.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self._data.ndim}D")
        return self._view_op("TBackward0", np.transpose, (self,))

    @property
    def T(self):
        if self._data.ndim != 2 and not _state.numpy_methods:
            _warn_once("T", T_WARNING)
        return self._view_op("PermuteBackward0", np.transpose, (self,))

    @property
    def mT(self):
        return self._view_op("TransposeBackward0", np.swapaxes, (self, -2, -1), slots=((0,),))

    def diagonal(self, offset=0, dim1=0, dim2=1, *, axis1=None, axis2=None):
        axes = {"offset": offset, "axis1": dim1 if axis1 is None else axis1, "axis2": dim2 if axis2 is None else axis2}
        return self._view_op("DiagonalBackward0", np.diagonal, (self,), axes)

    def take(self, indices):
        """Elements at flat ``indices`` (PyTorch's ``take``, numpy's ``take`` without an axis)."""
        return apply_op("TakeBackward0", np.take, (self, unwrap(indices)), slots=((0,),))

    def swapaxes(self, dim0, dim1):
        return self._view_op("TransposeBackward0", np.swapaxes, (self, dim0, dim1), slots=((0,),))

    def transpose(self, *dims):
        """PyTorch's ``transpose(dim0, dim1)`` swaps two dimensions; numpy's
        ``transpose()`` reverses them and ``transpose(axes)`` permutes them."""
        if _state.numpy_methods:
            return _ndarray.transpose(self, *dims)
        if len(dims) == 2 and all(isinstance(d, (int, np.integer)) for d in dims):
            return self.swapaxes(*dims)
        if not dims or dims == (None,):
            return self._view_op("PermuteBackward0", np.transpose, (self,))
        return self.permute(*dims)

    def permute(self, *dims):
        dims = _sizes(dims)
        if len(dims) != self._data.ndim:
            raise RuntimeError(
                "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the "
                f"desired ordering of dimensions i.e. input.dim() = {self._data.ndim} is not equal to "
                f"len(dims) = {len(dims)}"
            )
        return self._view_op("PermuteBackward0", np.transpose, (self, dims), slots=((0,),))

    def squeeze(self, dim=None, *, axis=None):
        axis = _axis(dim, axis)
        if axis is not None:
            axes = (axis,) if not isinstance(axis, tuple) else axis
            ndim = max(self._data.ndim, 1)
            for a in axes:
                if not -ndim <= a < ndim:
                    raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], "
                                     f"but got {a})")
            axis = tuple(a for a in axes if self._data.ndim and self._data.shape[a] == 1)
            name = "SqueezeBackward1"
        else:
            name = "SqueezeBackward0"
        return self._view_op(name, np.squeeze, (self,), {"axis": axis})

    def unsqueeze(self, dim):
        return self._view_op("UnsqueezeBackward0", np.expand_dims, (self, dim), slots=((0,),))

    def expand(self, *sizes):
        sizes = _sizes(sizes)
        shape = self._data.shape
        lead = len(sizes) - len(shape)
        target = tuple(shape[i - lead] if s == -1 else s for i, s in enumerate(sizes))
        for i in range(max(lead, 0), len(target)):
            if shape[i - lead] != 1 and shape[i - lead] != target[i]:
                raise RuntimeError(
                    f"The expanded size of the tensor ({target[i]}) must match the existing size "
                    f"({shape[i - lead]}) at non-singleton dimension {i}.  Target sizes: "
                    f"[{', '.join(map(str, sizes))}].  Tensor sizes: [{', '.join(map(str, shape))}]"
                )
        return self._view_op("ExpandBackward0", np.broadcast_to, (self, target), slots=((0,),))

    def expand_as(self, other):
        return self.expand(*other.shape)

    def contiguous(self):
        if self._data.flags.c_contiguous:
            return self
        return self.clone()

    def clone(self):
        return apply_op("CloneBackward0", np.copy, (self,))

    def copy(self):
        return self.clone()

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device, dtype)``, ``to(other)``, with ``copy=True`` for a new tensor.

        The CPU is the only device: naming it moves nothing, naming another
        raises PyTorch's error for a device that is not there.
        """
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        kwargs.pop("memory_format", None)
        where, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
        if kwargs:
            raise TypeError(f"to() received an invalid combination of arguments - got an unexpected keyword "
                            f"argument '{next(iter(kwargs))}'")
        rest = list(args)
        if rest and is_tensor(rest[0]):  # to(other): other's device and dtype
            other = rest.pop(0)
            where, dtype = other.device, other.dtype
        elif rest and (isinstance(rest[0], (str, device)) or isinstance(rest[0], int) and not isinstance(rest[0], bool)):
            where = rest.pop(0)  # a string is a device, as in PyTorch (a dtype name goes to astype)
        if rest and not isinstance(rest[0], bool):
            dtype = rest.pop(0)
        if rest:  # non_blocking, copy by position
            rest.pop(0)
            if rest:
                copy = bool(rest.pop(0))
        if where is not None:
            check_device(where)
        out = self if dtype is None else self._cast(dtype)
        return out.clone() if copy and out is self else out

    def _cast(self, dtype):
        """``self`` as ``dtype``; a string is a dtype name ("i4"), never a device as for ``.to``."""
        np_dtype = as_numpy_dtype(dtype)
        if np_dtype == self._data.dtype:
            return self
        return apply_op("ToCopyBackward0", rules.astype, (self, np_dtype), slots=((0,),))

    def astype(self, dtype, copy=True):
        out = self._cast(dtype)
        return out.clone() if out is self and copy else out

    def float(self):
        return self.to(np.float32)

    def double(self):
        return self.to(np.float64)

    def half(self):
        return self.to(np.float16)

    def long(self):
        return self.to(np.int64)

    def int(self):
        return self.to(np.int32)

    def bool(self):
        return self.to(np.bool_)

    def _view_op(self, name, fn, args, kwargs=None, slots=None):
        out = apply_op(name, fn, args, kwargs, slots=slots or FIRST)
        if _shares(out._data, self._data):
            out._version_counter = self._version_counter
            out._base = self._base if self._base is not None else self
        return out

    # ------------------------------------------------------------- indexing

    def __getitem__(self, index):
        if type(index) is int:  # t[0]: the commonest index, basic, named as below
            return self._indexed("SelectBackward0", index)
        index = _unwrap_index(index)
        return self._indexed(_index_node_name(index), index)

    def _indexed(self, name, index):
        """``self[index]`` recorded as a ``name`` node; a view of ``self`` for a basic index."""
        out = apply_op(name, rules.getitem, (self, index), slots=FIRST)
        if _is_basic_index(index) and _shares(out._data, self._data):
            out._version_counter = self._version_counter
            if self._base is not None and self._view_index is not None:
                out._base, out._view_index = self._base, None
            else:
                out._base = self._base if self._base is not None else self  # never bool() a tensor
                out._view_index = index if self._base is None else None
        return out

    def __setitem__(self, index, value):
        index = _unwrap_index(index)
        if is_grad_enabled() and self._requires_grad and self._grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_INPLACE)
        self._inplace(lambda t: apply_op("CopySlices", rules.setitem, (t, index, value), slots=((0,), (2,))))
