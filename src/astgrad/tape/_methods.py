"""Tensor operations: operators, math, reductions and products.

Each method names its PyTorch node and sends the numpy primitive whose rule
differentiates it to ``apply_op``.  Methods accept PyTorch's keywords
(``dim``, ``keepdim``) and numpy's (``axis``, ``keepdims``), so one function
body runs on arrays and on Tensors.

Long: one short method per PyTorch operation of these families, each naming
its node; shapes, indexing, in-place forms and numpy's protocols are modules
of their own.
"""

from __future__ import annotations

import collections
import operator

import numpy as np

from .. import rules
from . import _kernels, _ndarray
from ._modes import _state
from ._record import FIRST, SECOND, apply_nondiff, apply_op, compare, is_tensor, unwrap
from ._tensor import Tensor, TensorMethodsBase, extends

_NUMBERS = (int, float)  # what PyTorch's backward formulas hold as a Scalar


class _ValuesIndices(collections.namedtuple("_ValuesIndices", ["values", "indices"])):
    __slots__ = ()

    def __repr__(self) -> str:
        return f"torch.return_types.{type(self).__name__}(\nvalues={self.values!r},\nindices={self.indices!r})"


def return_type(name: str) -> type:
    """PyTorch's ``torch.return_types.NAME``: a (values, indices) named tuple, printed as PyTorch prints it."""
    return type(name, (_ValuesIndices,), {"__slots__": (), "__module__": "torch.return_types"})


max_result, min_result = return_type("max"), return_type("min")


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

@extends(Tensor)
class TensorMethods(TensorMethodsBase):
    """Operations of :class:`Tensor`."""

    # -------------------------------------------------------------- operators

    # the commonest operators pass apply_op's options by position: keywords cost every call their parsing

    def __add__(self, other):
        return apply_op("AddBackward0", np.add, (self, other), None, None, True)

    __radd__ = __add__

    def __sub__(self, other):
        return apply_op("SubBackward0", np.subtract, (self, other), None, None, True)

    def __rsub__(self, other):
        if is_tensor(other):
            return other.__sub__(self)
        return apply_op("RsubBackward1", np.subtract, (other, self), slots=SECOND, promote=True)

    def __mul__(self, other):
        if type(other) in _NUMBERS and _state.in_backward:  # a rule's number times a tensor: mul by a Scalar
            return apply_op("MulBackward1", np.multiply, (self, other), slots=FIRST, promote=True)
        return apply_op("MulBackward0", np.multiply, (self, other), None, None, True)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return apply_op("DivBackward0", np.divide, (self, other), None, None, True)

    def __rtruediv__(self, other):
        if is_tensor(other):
            return other.__truediv__(self)
        return apply_op("MulBackward0", np.divide, (other, self), slots=SECOND, promote=True)

    def __floordiv__(self, other):
        return apply_op("FloorDivide", np.floor_divide, (self, other), promote=True)

    def __rfloordiv__(self, other):
        return apply_op("FloorDivide", np.floor_divide, (other, self), promote=True)

    def __mod__(self, other):
        return apply_op("RemainderBackward0", np.remainder, (self, other), promote=True)

    def __pow__(self, exponent):
        if is_tensor(exponent) or isinstance(exponent, np.ndarray) and (exponent.ndim or not _state.in_backward):
            return apply_op("PowBackward1", np.power, (self, exponent), promote=True)
        return apply_op("PowBackward0", np.power, (self, exponent), slots=FIRST, promote=True)

    def __rpow__(self, base):
        if is_tensor(base):
            return base.__pow__(self)
        return apply_op("PowBackward2", np.power, (base, self), slots=SECOND, promote=True)

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
        return compare("Eq", np.equal, operator.eq, self, other)

    def __ne__(self, other):
        return compare("Ne", np.not_equal, operator.ne, self, other)

    def __lt__(self, other):
        return compare("Lt", np.less, operator.lt, self, other)

    def __le__(self, other):
        return compare("Le", np.less_equal, operator.le, self, other)

    def __gt__(self, other):
        return compare("Gt", np.greater, operator.gt, self, other)

    def __ge__(self, other):
        return compare("Ge", np.greater_equal, operator.ge, self, other)

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
        source = self if dtype is None else self._cast(dtype)
        return apply_op("SoftmaxBackward0", rules.softmax, (source, dim), slots=((0,),))

    def log_softmax(self, dim, dtype=None):
        source = self if dtype is None else self._cast(dtype)
        return apply_op("LogSoftmaxBackward0", rules.log_softmax, (source, dim), slots=((0,),))

    def abs(self):
        return self._unary("AbsBackward0", np.absolute)

    def sqrt(self):
        return self._unary("SqrtBackward0", np.sqrt)

    def rsqrt(self):
        return self.sqrt().reciprocal()

    def square(self):
        return apply_op("PowBackward0", np.power, (self, 2), slots=FIRST, promote=True)

    def reciprocal(self):
        return self._unary("ReciprocalBackward0", np.reciprocal)

    def sign(self):
        return self._unary("SignBackward0", np.sign)

    def floor(self):
        return self._unary("FloorBackward0", np.floor)

    def ceil(self):
        return self._unary("CeilBackward0", np.ceil)

    def round(self, decimals=0):
        if decimals == 0:
            return self._unary("RoundBackward0", np.round)
        return apply_op("RoundBackward1", np.round, (self, int(decimals)), slots=((0,),), promote=True)

    def conj(self):
        """The complex conjugate (the tensor itself when it is real, as in PyTorch)."""
        if self._data.dtype.kind != "c":
            return self
        return apply_op("ConjBackward0", np.conjugate, (self,))

    conjugate = conj

    @property
    def real(self):
        if self._data.dtype.kind != "c":
            return self
        return apply_op("RealBackward0", np.real, (self,))

    @property
    def imag(self):
        """PyTorch refuses ``imag`` of a real tensor; numpy's (in ``numpy_methods()``) is zeros."""
        if self._data.dtype.kind != "c" and not _state.numpy_methods:
            raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
        return apply_op("ImagBackward0", np.imag, (self,))

    def argsort(self, dim=-1, *, axis=None):
        return apply_nondiff(np.argsort, (self,), {"axis": dim if axis is None else axis})

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

    def _torch_sum(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        axis = _axis(dim, axis)
        keep = bool(keepdims if keepdims is not None else keepdim)
        name = "SumBackward0" if axis is None else "SumBackward1"
        source = self if dtype is None else self._cast(dtype)  # each element cast, then summed, as numpy and torch do
        return apply_op(name, np.sum, (source,), {"axis": axis, "keepdims": keep}, impl=_kernels.sum)

    def _torch_mean(self, dim=None, keepdim=False, *, dtype=None, axis=None, keepdims=None):
        if dtype is None:
            _check_mean_dtype(self)
        source = self if dtype is None else self._cast(dtype)
        axis = _axis(dim, axis)
        keep = bool(keepdims if keepdims is not None else keepdim)
        name = "MeanBackward0" if axis is None else "MeanBackward1"
        return apply_op(name, np.mean, (source,), {"axis": axis, "keepdims": keep}, impl=_kernels.mean)

    def _torch_prod(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        keep = bool(keepdims if keepdims is not None else keepdim)
        return apply_op("ProdBackward0", np.prod, (self,), {"axis": _axis(dim, axis), "keepdims": keep})

    def _torch_var(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None, ddof=None,
            keepdims=None):
        ddof = ddof if ddof is not None else (correction if correction is not None else int(bool(unbiased)))
        keep = bool(keepdims if keepdims is not None else keepdim)
        return apply_op("VarBackward0", np.var, (self,), {"axis": _axis(dim, axis), "ddof": ddof, "keepdims": keep})

    def _torch_std(self, dim=None, unbiased=True, keepdim=False, *, correction=None, axis=None, ddof=None,
            keepdims=None):
        ddof = ddof if ddof is not None else (correction if correction is not None else int(bool(unbiased)))
        keep = bool(keepdims if keepdims is not None else keepdim)
        return apply_op("StdBackward0", np.std, (self,), {"axis": _axis(dim, axis), "ddof": ddof, "keepdims": keep})

    # numpy code run on the tape for cross-checking (check_grads) gets numpy's meaning of these
    # methods; everything else gets PyTorch's (see _ndarray)

    def sum(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.sum(self, *args, **kwargs)
        return self._torch_sum(*args, **kwargs)

    def mean(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.mean(self, *args, **kwargs)
        return self._torch_mean(*args, **kwargs)

    def prod(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.prod(self, *args, **kwargs)
        return self._torch_prod(*args, **kwargs)

    def var(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.var(self, *args, **kwargs)
        return self._torch_var(*args, **kwargs)

    def std(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.std(self, *args, **kwargs)
        return self._torch_std(*args, **kwargs)

    def max(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.extreme(self, True, *args, **kwargs)
        return self._torch_max(*args, **kwargs)

    def min(self, *args, **kwargs):
        if _state.numpy_methods:
            return _ndarray.extreme(self, False, *args, **kwargs)
        return self._torch_min(*args, **kwargs)

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

    def _torch_max(self, dim=None, keepdim=False, *, axis=None, keepdims=False, other=None):
        if is_tensor(dim) or isinstance(dim, np.ndarray):
            dim, other = None, dim
        return self._extreme(dim, keepdim, axis, keepdims, other, True)

    def _torch_min(self, dim=None, keepdim=False, *, axis=None, keepdims=False, other=None):
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

    def cumprod(self, dim=None, *, axis=None):
        return apply_op("CumprodBackward0", np.cumprod, (self,), {"axis": _axis(dim, axis)})

    def trace(self, offset=0, axis1=0, axis2=1):
        return apply_op("TraceBackward0", np.trace, (self,), {"offset": offset, "axis1": axis1, "axis2": axis2})

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


def _matmul(a, b):
    a_shape = a._data.shape if isinstance(a, Tensor) else np.shape(unwrap(a))
    b_shape = b._data.shape if isinstance(b, Tensor) else np.shape(unwrap(b))
    a_dim, b_dim = len(a_shape), len(b_shape)
    if a_dim == 0 or b_dim == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a_dim}D and {b_dim}D")
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
