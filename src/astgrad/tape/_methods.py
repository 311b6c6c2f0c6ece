"""Tensor operations: operators, math, reductions, shapes, indexing, in-place.

Each method names its PyTorch node and sends the numpy primitive whose rule
differentiates it to ``apply_op``.  Methods accept PyTorch's keywords
(``dim``, ``keepdim``) and numpy's (``axis``, ``keepdims``), so one function
body runs on arrays and on Tensors.
"""

from __future__ import annotations

import collections
import warnings

import numpy as np

from .. import rules
from ._dtypes import as_numpy_dtype
from ._modes import is_grad_enabled
from ._record import apply_nondiff, apply_op, is_tensor, unwrap

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."
T_WARNING = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
    "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
    "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor. (Triggered "
    "internally at /__w/pytorch/pytorch/aten/src/ATen/native/TensorShape.cpp:4314.)"
)

max_result = collections.namedtuple("max", ["values", "indices"])
min_result = collections.namedtuple("min", ["values", "indices"])
for _nt in (max_result, min_result):
    _nt.__module__ = "torch.return_types"
    _nt.__repr__ = lambda self: (
        f"torch.return_types.{type(self).__name__}(\nvalues={self.values!r},\nindices={self.indices!r})"
    )


def _axis(dim, axis):
    """One reduction axis argument from PyTorch's ``dim`` or numpy's ``axis``."""
    value = axis if dim is None else dim
    if isinstance(value, list):
        value = tuple(value)
    return value


def _sizes(args):
    """``f(2, 3)`` and ``f((2, 3))`` both mean the shape (2, 3)."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _check_mean_dtype(t) -> None:
    if t._data.dtype.kind not in "fc":
        name = {"i": "Long", "b": "Bool", "u": "Byte"}.get(t._data.dtype.kind, str(t._data.dtype))
        if t._data.dtype == np.int32:
            name = "Int"
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or "
            f"complex dtype. Got: {name}"
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


class TensorMethods:
    """Operations of :class:`Tensor`; mixed into it."""

    __slots__ = ()

    # -------------------------------------------------------------- operators

    def __add__(self, other):
        return apply_op("AddBackward0", np.add, (self, other), promote=True)

    __radd__ = __add__

    def __sub__(self, other):
        return apply_op("SubBackward0", np.subtract, (self, other), promote=True)

    def __rsub__(self, other):
        if is_tensor(other):
            return other.__sub__(self)
        return apply_op("RsubBackward1", np.subtract, (other, self), slots=((1,),), promote=True)

    def __mul__(self, other):
        return apply_op("MulBackward0", np.multiply, (self, other), promote=True)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return apply_op("DivBackward0", np.divide, (self, other), promote=True)

    def __rtruediv__(self, other):
        if is_tensor(other):
            return other.__truediv__(self)
        return apply_op("MulBackward0", np.divide, (other, self), slots=((1,),), promote=True)

    def __floordiv__(self, other):
        return apply_op("FloorDivide", np.floor_divide, (self, other), promote=True)

    def __rfloordiv__(self, other):
        return apply_op("FloorDivide", np.floor_divide, (other, self), promote=True)

    def __mod__(self, other):
        return apply_op("RemainderBackward0", np.remainder, (self, other), promote=True)

    def __pow__(self, exponent):
        if is_tensor(exponent) or isinstance(exponent, np.ndarray):
            return apply_op("PowBackward1", np.power, (self, exponent), promote=True)
        return apply_op("PowBackward0", np.power, (self, exponent), slots=((0,),), promote=True)

    def __rpow__(self, base):
        if is_tensor(base):
            return base.__pow__(self)
        return apply_op("PowBackward2", np.power, (base, self), slots=((1,),), promote=True)

    def __matmul__(self, other):
        return self.matmul(other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __neg__(self):
        return apply_op("NegBackward0", np.negative, (self,))

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    def __invert__(self):
        return apply_op("BitwiseNot", np.invert, (self,))

    def __and__(self, other):
        return apply_op("BitwiseAnd", np.logical_and if self._data.dtype == bool else np.bitwise_and,
                        (self, other))

    def __or__(self, other):
        return apply_op("BitwiseOr", np.logical_or if self._data.dtype == bool else np.bitwise_or,
                        (self, other))

    def __eq__(self, other):
        return apply_op("Eq", np.equal, (self, other))

    def __ne__(self, other):
        return apply_op("Ne", np.not_equal, (self, other))

    def __lt__(self, other):
        return apply_op("Lt", np.less, (self, other))

    def __le__(self, other):
        return apply_op("Le", np.less_equal, (self, other))

    def __gt__(self, other):
        return apply_op("Gt", np.greater, (self, other))

    def __ge__(self, other):
        return apply_op("Ge", np.greater_equal, (self, other))

    __hash__ = object.__hash__

    def eq(self, other):
        return self == other

    def ne(self, other):
        return self != other

    def lt(self, other):
        return self < other

    def le(self, other):
        return self <= other

    def gt(self, other):
        return self > other

    def ge(self, other):
        return self >= other

    def add(self, other, *, alpha=1):
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other, *, alpha=1):
        return self - (other * alpha if alpha != 1 else other)

    def mul(self, other):
        return self * other

    def div(self, other):
        return self / other

    def pow(self, exponent):
        return self ** exponent

    def neg(self):
        return -self

    # ---------------------------------------------------------- elementwise

    def _unary(self, name, fn):
        return apply_op(name, fn, (self,), promote=True)

    def exp(self):
        return self._unary("ExpBackward0", np.exp)

    def log(self):
        return self._unary("LogBackward0", np.log)

    def log1p(self):
        return self._unary("Log1PBackward0", np.log1p)

    def expm1(self):
        return self._unary("Expm1Backward0", np.expm1)

    def sin(self):
        return self._unary("SinBackward0", np.sin)

    def cos(self):
        return self._unary("CosBackward0", np.cos)

    def tan(self):
        return self._unary("TanBackward0", np.tan)

    def tanh(self):
        return self._unary("TanhBackward0", np.tanh)

    def sigmoid(self):
        return self._unary("SigmoidBackward0", rules.sigmoid)

    def relu(self):
        return self._unary("ReluBackward0", rules.relu)

    def softmax(self, dim, dtype=None):
        source = self if dtype is None else self.to(dtype)
        return apply_op("SoftmaxBackward0", rules.softmax, (source, dim), slots=((0,),))

    def log_softmax(self, dim, dtype=None):
        source = self if dtype is None else self.to(dtype)
        return apply_op("LogSoftmaxBackward0", rules.log_softmax, (source, dim), slots=((0,),))

    def abs(self):
        return self._unary("AbsBackward0", np.absolute)

    def sqrt(self):
        return self._unary("SqrtBackward0", np.sqrt)

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def square(self):
        return apply_op("PowBackward0", np.power, (self, 2), slots=((0,),), promote=True)

    def reciprocal(self):
        return self._unary("ReciprocalBackward0", np.reciprocal)

    def sign(self):
        return self._unary("SignBackward0", np.sign)

    def floor(self):
        return self._unary("FloorBackward0", np.floor)

    def ceil(self):
        return self._unary("CeilBackward0", np.ceil)

    def round(self):
        return self._unary("RoundBackward0", np.round)

    def clamp(self, min=None, max=None):
        if is_tensor(min) or is_tensor(max):
            bounds = tuple((i,) for i, bound in ((1, min), (2, max)) if is_tensor(bound))
            return apply_op("ClampBackward0", np.clip, (self, min, max), slots=((0,),) + bounds, promote=True)
        if min is None and max is None:
            raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
        return apply_op("ClampBackward1", np.clip, (self, min, max), slots=((0,),), promote=True)

    def clip(self, min=None, max=None):
        return self.clamp(min, max)

    def maximum(self, other):
        return apply_op("MaximumBackward0", np.maximum, (self, other), promote=True)

    def minimum(self, other):
        return apply_op("MinimumBackward0", np.minimum, (self, other), promote=True)

    # ----------------------------------------------------------- reductions

    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        axis = _axis(dim, axis)
        keep = bool(keepdims if keepdims is not None else keepdim)
        name = "SumBackward0" if axis is None else "SumBackward1"
        out = apply_op(name, np.sum, (self,), {"axis": axis, "keepdims": keep})
        return out if dtype is None else out.to(dtype)

    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        if dtype is None:
            _check_mean_dtype(self)
        source = self if dtype is None else self.to(dtype)
        axis = _axis(dim, axis)
        keep = bool(keepdims if keepdims is not None else keepdim)
        name = "MeanBackward0" if axis is None else "MeanBackward1"
        return apply_op(name, np.mean, (source,), {"axis": axis, "keepdims": keep})

    def prod(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        keep = bool(keepdims if keepdims is not None else keepdim)
        return apply_op("ProdBackward0", np.prod, (self,), {"axis": _axis(dim, axis), "keepdims": keep})

    def var(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None, ddof=None,
            keepdims=None):
        ddof = ddof if ddof is not None else (correction if correction is not None else int(bool(unbiased)))
        keep = bool(keepdims if keepdims is not None else keepdim)
        return apply_op("VarBackward0", np.var, (self,), {"axis": _axis(dim, axis), "ddof": ddof, "keepdims": keep})

    def std(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None, ddof=None,
            keepdims=None):
        ddof = ddof if ddof is not None else (correction if correction is not None else int(bool(unbiased)))
        keep = bool(keepdims if keepdims is not None else keepdim)
        return apply_op("StdBackward0", np.std, (self,), {"axis": _axis(dim, axis), "ddof": ddof, "keepdims": keep})

    def _extreme(self, dim, keepdim, axis, keepdims, other, largest):
        kind = "Max" if largest else "Min"
        if is_tensor(other) or isinstance(other, np.ndarray):
            return apply_op(f"{kind}imumBackward0", np.maximum if largest else np.minimum, (self, other),
                            promote=True)
        if axis is not None:  # numpy's spelling: values only, ties shared as in np.max
            keep = bool(keepdims)
            return apply_op(f"A{kind.lower()}Backward0", np.max if largest else np.min, (self,),
                            {"axis": _axis(None, axis), "keepdims": keep})
        if dim is None:
            return apply_op(f"{kind}Backward1", np.max if largest else np.min, (self,))
        keep = bool(keepdim)
        values = apply_op(f"{kind}Backward0", rules.max_along if largest else rules.min_along, (self,),
                          {"axis": dim, "keepdims": keep})
        find = np.argmax if largest else np.argmin
        indices = apply_nondiff(find, (self,), {"axis": dim, "keepdims": keep})
        return (max_result if largest else min_result)(values, indices)

    def max(self, dim=None, keepdim=False, *, axis=None, keepdims=False, other=None):
        if is_tensor(dim) or isinstance(dim, np.ndarray):
            dim, other = None, dim
        return self._extreme(dim, keepdim, axis, keepdims, other, True)

    def min(self, dim=None, keepdim=False, *, axis=None, keepdims=False, other=None):
        if is_tensor(dim) or isinstance(dim, np.ndarray):
            dim, other = None, dim
        return self._extreme(dim, keepdim, axis, keepdims, other, False)

    def amax(self, dim=(), keepdim=False):
        return apply_op("AmaxBackward0", np.max, (self,), {"axis": _axis(dim or None, None), "keepdims": keepdim})

    def amin(self, dim=(), keepdim=False):
        return apply_op("AminBackward0", np.min, (self,), {"axis": _axis(dim or None, None), "keepdims": keepdim})

    def argmax(self, dim=None, keepdim=False, *, axis=None):
        return apply_nondiff(np.argmax, (self,), {"axis": _axis(dim, axis), "keepdims": keepdim})

    def argmin(self, dim=None, keepdim=False, *, axis=None):
        return apply_nondiff(np.argmin, (self,), {"axis": _axis(dim, axis), "keepdims": keepdim})

    def norm(self, p="fro", dim=None, keepdim=False):
        order = 2 if p in ("fro", None) else p
        return apply_op("LinalgVectorNormBackward0", rules.vector_norm, (self,),
                        {"ord": order, "axis": _axis(dim, None), "keepdims": keepdim})

    def all(self, dim=None, keepdim=False, *, axis=None):
        return apply_nondiff(np.all, (self,), {"axis": _axis(dim, axis), "keepdims": keepdim})

    def any(self, dim=None, keepdim=False, *, axis=None):
        return apply_nondiff(np.any, (self,), {"axis": _axis(dim, axis), "keepdims": keepdim})

    def cumsum(self, dim=None, *, axis=None):
        return apply_op("CumsumBackward0", np.cumsum, (self,), {"axis": _axis(dim, axis)})

    # -------------------------------------------------------------- products

    def matmul(self, other):
        return _matmul(self, other)

    def mm(self, other):
        if self._data.ndim != 2:
            raise RuntimeError("self must be a matrix")
        if np.ndim(unwrap(other)) != 2:
            raise RuntimeError("mat2 must be a matrix")
        return _matmul(self, other)

    def mv(self, vec):
        return _matmul(self, vec)

    def dot(self, other):
        if self._data.ndim == 1 and np.ndim(unwrap(other)) == 1:
            return _matmul(self, other)
        return apply_op("MmBackward0", np.dot, (self, other))

    def outer(self, other):
        return apply_op("MulBackward0", np.outer, (self, other))

    # ------------------------------------------------------------ shape ops

    def reshape(self, *shape, order="C"):
        """A view when the layout allows (``ViewBackward0``), else a copy (``UnsafeViewBackward0``)."""
        shape = _sizes(shape)
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
        if self._data.ndim <= 1:
            return self
        shape = self._data.shape
        start, end = start_dim % len(shape), end_dim % len(shape)
        merged = int(np.prod(shape[start:end + 1]))
        return self.reshape(shape[:start] + (merged,) + shape[end + 1:])

    def ravel(self):
        return self.reshape(-1)

    def t(self):
        if self._data.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {self._data.ndim}D")
        return self._view_op("TBackward0", np.transpose, (self,))

    @property
    def T(self):
        if self._data.ndim != 2:
            from ._tensor import _warn_once

            _warn_once("T", T_WARNING)
        return self._view_op("PermuteBackward0", np.transpose, (self,))

    @property
    def mT(self):
        return self._view_op("TransposeBackward0", np.swapaxes, (self, -2, -1), slots=((0,),))

    def transpose(self, dim0, dim1):
        return self._view_op("TransposeBackward0", np.swapaxes, (self, dim0, dim1), slots=((0,),))

    swapaxes = transpose

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

    def to(self, dtype=None, *args, **kwargs):
        if isinstance(dtype, str) or dtype is None:  # a device: nothing to move
            dtype = kwargs.get("dtype", args[0] if args else None)
            if dtype is None:
                return self
        np_dtype = as_numpy_dtype(dtype)
        if np_dtype == self._data.dtype:
            return self
        return apply_op("ToCopyBackward0", rules.astype, (self, np_dtype), slots=((0,),))

    def astype(self, dtype, copy=True):
        out = self.to(dtype)
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
        out = apply_op(name, fn, args, kwargs, slots=slots or ((0,),))
        if np.shares_memory(out._data, self._data):
            out._version_counter = self._version_counter
            out._base = self._base if self._base is not None else self
        return out

    # ------------------------------------------------------------- indexing

    def __getitem__(self, index):
        index = _unwrap_index(index)
        out = apply_op(_index_node_name(index), rules.getitem, (self, index), slots=((0,),))
        if _is_basic_index(index) and np.shares_memory(out._data, self._data):
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
        self._inplace(lambda t: apply_op("CopySlices", rules.setitem, (t, index, value), slots=((0,), (2,))),
                      setitem_value=value)

    # -------------------------------------------------------------- in-place

    def _inplace(self, compute, setitem_value=None):
        """Apply ``compute`` to a snapshot of this tensor and write the result back.

        The tensor keeps its identity and storage (views and ``detach()``
        results see the change); its history becomes the new node and its
        version counter moves on.
        """
        from ._tensor import Tensor

        recording = is_grad_enabled()  # the other operand may bring history (zeros(3).add_(x))
        if is_grad_enabled() and self._requires_grad and self._grad_fn is None:
            raise RuntimeError(LEAF_INPLACE)
        base = self._base
        if is_grad_enabled() and base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_INPLACE)
        if recording:
            snapshot = Tensor._make(self._data.copy(), self._requires_grad)
            snapshot._grad_fn = self._grad_fn
            snapshot._acc_ref = self._acc_ref
        else:
            snapshot = self.detach()
        result = compute(snapshot)
        if result._data.dtype.kind in "fc" and self._data.dtype.kind not in "fc":
            raise RuntimeError(
                f"result type {_scalar_type_name(result._data.dtype)} can't be cast to the desired output "
                f"type {_scalar_type_name(self._data.dtype)}"
            )
        self._data[...] = result._data
        self._version_counter.value += 1
        if recording and result._grad_fn is not None:
            result._grad_fn._rebind_output(self._version_counter)
            before = (self._grad_fn, None if base is None else base._grad_fn)
            if base is not None:
                self._rebase_view(base, result)
            else:
                self._grad_fn = result._grad_fn
                self._requires_grad = True
            _move_retained_grad(self, before[0])
            if base is not None:
                _move_retained_grad(base, before[1])
        return self

    def _rebase_view(self, base, result):
        """History for an in-place write through a view: CopySlices on the base."""
        if self._view_index is None:
            raise RuntimeError(
                "astgrad: in-place operations on reshaped, transposed or nested views of a tensor that is "
                "recorded for gradients are not supported; apply the operation to the base tensor instead"
            )
        from ._tensor import Tensor

        before = Tensor._make(base._data.copy(), base._requires_grad)
        before._grad_fn, before._acc_ref = base._grad_fn, base._acc_ref
        before._data[self._view_index] = 0  # the slice's old values are overwritten
        merged = apply_op("CopySlices", rules.setitem, (before, self._view_index, result), slots=((0,), (2,)))
        base._grad_fn, base._requires_grad = merged._grad_fn, True
        view = apply_op("AsStridedBackward0", rules.getitem, (base, self._view_index), slots=((0,),))
        self._grad_fn, self._requires_grad = view._grad_fn, True

    def add_(self, other, *, alpha=1):
        return self._inplace(lambda t: t.add(other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return self._inplace(lambda t: t.sub(other, alpha=alpha))

    def mul_(self, other):
        return self._inplace(lambda t: t * other)

    def div_(self, other):
        return self._inplace(lambda t: t / other)

    def pow_(self, exponent):
        return self._inplace(lambda t: t ** exponent)

    def exp_(self):
        return self._inplace(lambda t: t.exp())

    def neg_(self):
        return self._inplace(lambda t: -t)

    def relu_(self):
        return self._inplace(lambda t: t.relu())

    def sigmoid_(self):
        return self._inplace(lambda t: t.sigmoid())

    def tanh_(self):
        return self._inplace(lambda t: t.tanh())

    def clamp_(self, min=None, max=None):
        return self._inplace(lambda t: t.clamp(min, max))

    def zero_(self):
        return self._inplace(lambda t: apply_op("ZeroBackward0", np.multiply, (t, 0), slots=((0,),)))

    def fill_(self, value):
        value = unwrap(value)

        def filled(t):
            out = apply_op("FillBackward2", np.multiply, (t, 0), slots=((0,),))
            out._data[...] = value
            return out

        return self._inplace(filled)

    def copy_(self, src):
        return self._inplace(
            lambda t: apply_op("CopyBackwards", rules.setitem, (t, Ellipsis, src), slots=((0,), (2,))),
            setitem_value=src,
        )

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)


def _move_retained_grad(tensor, old_grad_fn) -> None:
    """After an in-place op, ``retain_grad`` follows the tensor to its new node, as in PyTorch."""
    if tensor._retains_grad and old_grad_fn is not tensor._grad_fn:
        retained = old_grad_fn.metadata.pop("_retained", None) if old_grad_fn is not None else None
        if retained is not None:
            tensor._grad_fn.metadata["_retained"] = retained


def _matmul(a, b):
    a_dim, b_dim = np.ndim(unwrap(a)), np.ndim(unwrap(b))
    if a_dim == 0 or b_dim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a_dim}D and {b_dim}D")
    a_shape, b_shape = np.shape(unwrap(a)), np.shape(unwrap(b))
    if a_dim == 1 and b_dim == 1:
        if a_shape != b_shape:
            raise RuntimeError(
                f"inconsistent tensor size, expected tensor [{a_shape[0]}] and src [{b_shape[0]}] to have "
                f"the same number of elements, but got {a_shape[0]} and {b_shape[0]} elements respectively"
            )
        name = "DotBackward0"
    elif a_dim == 2 and b_dim == 2:
        if a_shape[1] != b_shape[0]:
            raise RuntimeError(
                f"mat1 and mat2 shapes cannot be multiplied ({a_shape[0]}x{a_shape[1]} and "
                f"{b_shape[0]}x{b_shape[1]})"
            )
        name = "MmBackward0"
    elif a_dim == 2 and b_dim == 1:
        if a_shape[1] != b_shape[0]:
            raise RuntimeError(f"size mismatch, got input ({a_shape[0]}), mat ({a_shape[0]}x{a_shape[1]}), "
                               f"vec ({b_shape[0]})")
        name = "MvBackward0"
    elif a_dim == 1 and b_dim == 2:
        if a_shape[0] != b_shape[0]:
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied (1x{a_shape[0]} and "
                               f"{b_shape[0]}x{b_shape[1]})")
        name = "SqueezeBackward4"
    else:
        if a_shape[-1] != b_shape[-2 if b_dim > 1 else -1]:
            rows = int(np.prod(a_shape[:-1]))
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a_shape[-1]} and "
                               f"{'x'.join(str(n) for n in b_shape[-2:])})")
        name = "UnsafeViewBackward0"
    return apply_op(name, np.matmul, (a, b), promote=True)


def _unwrap_index(index):
    if isinstance(index, tuple):
        return tuple(_unwrap_index(i) for i in index)
    if is_tensor(index):
        return index._data
    return index


def _scalar_type_name(dtype) -> str:
    return {"f": "Float", "c": "ComplexFloat", "i": "Long", "b": "Bool", "u": "Byte"}[np.dtype(dtype).kind]
