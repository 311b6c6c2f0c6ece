"""The taped Tensor's core: its state and its autograd attributes.

Every tape module builds on this one and this one imports none of them: it
holds the tensor's state and what reads or sets it without recording
(``requires_grad``, ``grad``, ``detach``, hooks, printing, conversions,
metadata).  The modules that record operations add them to the class with
``extends``: ``_methods`` (operators, math, reductions), ``_shaping``
(views and casts), ``_selecting`` (split, gather, sort, ``new_*``...),
``_inplace`` (in-place operations), ``_numpy_protocol``
(numpy's protocols), ``_autograd`` (``backward``) and ``_copying`` (pickle,
``copy``, ``deepcopy``).  Importing any module
of the package imports them all, so the class is complete before a user
sees it.

Long: the class's slots and everything that reads or sets them without
recording (flags, hooks, printing, conversions) are one job, the state a
recorded operation starts from; what records lives in the other modules.
"""

from __future__ import annotations

import warnings
import weakref
from typing import TYPE_CHECKING

import numpy as np

from . import _dtypes, _modes
from ._device import CPU, CUDA_MISSING, check_device
from ._format import format_tensor, legacy_type_name
from ._modes import is_grad_enabled

NON_LEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
    "for more information. (Triggered internally at "
    "/__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)"
)
FLOAT_ONLY = "Only Tensors of floating point and complex dtype can require gradients"
NON_LEAF_FLAG = "you can only change requires_grad flags of leaf variables."
NON_LEAF_FLAG_HINT = (
    NON_LEAF_FLAG + " If you want to use a computed variable in a subgraph that doesn't require "
    "differentiation use var_no_grad = var.detach()."
)
NUMPY_REFUSED = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
FLOAT_OF_GRAD_WARNING = (
    "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
    "Consider using tensor.detach() first. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/generated/python_variable_methods.cpp:822.)"
)


_LEGACY_OVERLOADS = ("(*, torch.device device = None)", "(torch.Storage storage)", "(Tensor other)",
                     "(tuple of ints size, *, torch.device device = None)", "(object data, *, torch.device device = None)")


def _legacy_constructor_refusal(args: tuple, kwargs: dict) -> str:
    """PyTorch's message for ``torch.Tensor(data, requires_grad=True)`` and other keywords the legacy constructor
    lacks (``torch.tensor`` takes them); which overloads it says the keywords failed follows PyTorch 2.13's."""

    def kind(value) -> str:
        if isinstance(value, Tensor):
            return "Tensor"
        if isinstance(value, _dtypes.DType):
            return "torch.dtype"
        if isinstance(value, np.ndarray):
            return "numpy.ndarray"
        return type(value).__name__

    named = list(reversed(kwargs))  # PyTorch lists the keywords last given first
    got = [kind(a) for a in args] + [f"{k}={kind(kwargs[k])}" for k in named]
    listed = ", ".join(got) + (", " if not args else "")
    keywords = ", ".join(named)
    one = len(kwargs) == 1
    failed = (1, 2) if not args else ((0,) if one else (3, 4)) if len(args) == 1 else (3, 4) if one else ()
    lines = [f"new() received an invalid combination of arguments - got ({listed}), but expected one of:"]
    for i, overload in enumerate(_LEGACY_OVERLOADS):
        lines.append(f" * {overload}")
        if i in failed:
            lines.append(f"      didn't match because some of the keywords were incorrect: {keywords}")
    return "\n".join(lines) + "\n"


_new = object.__new__  # one global lookup, where object.__new__ is two: every operation makes a tensor


class Version:
    """A version counter shared by a tensor, its views and its ``detach()`` results.

    ``value`` starts as the class's 0, so making one runs no ``__init__``
    (every operation makes one); the first in-place write gives it its own.
    """

    value = 0


class Tensor:
    """A numpy-backed tensor that records operations for ``backward()``."""

    __slots__ = (
        "_data", "_requires_grad", "_grad_fn", "_grad", "_version_counter", "_base", "_view_index",
        "_acc_ref", "_retains_grad", "_hooks", "_tangent", "__weakref__",
    )

    if TYPE_CHECKING:  # methods the modules that record operations add with ``extends``, as used beyond them
        def __getitem__(self, index) -> Tensor: ...
        def reshape(self, *shape, order: str = "C") -> Tensor: ...
        def view_as(self, other) -> Tensor: ...
        def squeeze(self, dim=None, *, axis=None) -> Tensor: ...
        def clone(self) -> Tensor: ...
        def gather(self, dim, index, *, sparse_grad: bool = False) -> Tensor: ...
        def to(self, *args, **kwargs) -> Tensor: ...
        def _cast(self, dtype) -> Tensor: ...
        def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None: ...
        def _inplace(self, compute) -> Tensor: ...
    __array_priority__ = 1000
    _tangent: tuple  # (level, tangent), set on dual tensors only (module _dual): unset costs _make nothing

    def __init__(self, *args, **kwargs):
        """``Tensor(data)`` or ``Tensor(*sizes)``: the legacy constructor, in the default dtype."""
        if any(key != "device" for key in kwargs):  # requires_grad=, dtype=: PyTorch refuses them, never ignores
            raise TypeError(_legacy_constructor_refusal(args, kwargs))
        if "device" in kwargs:
            check_device(kwargs["device"])
        if len(args) == 1 and not isinstance(args[0], (int, np.integer)):
            data = np.array(_unwrap_nested(args[0]), dtype=_dtypes.default_float())
        else:
            data = np.empty(tuple(int(n) for n in args), dtype=_dtypes.default_float())
        self._init(data)

    def _init(self, data: np.ndarray, requires_grad: bool = False, version: Version | None = None):
        self._data = data
        self._requires_grad = requires_grad
        self._grad_fn = None
        self._grad: Tensor | None = None
        self._version_counter = version if version is not None else Version()
        self._base = None
        self._view_index = None
        self._acc_ref = None
        self._retains_grad = False
        self._hooks: tuple | list = ()  # a list once a hook is registered

    @classmethod
    def _make(cls, data: np.ndarray, requires_grad: bool = False, version: Version | None = None) -> "Tensor":
        t = _new(cls)
        t._data = data  # _init, inlined: every operation makes a tensor
        t._requires_grad = requires_grad
        t._grad_fn = None
        t._grad = None
        t._version_counter = version if version is not None else Version()
        t._base = None
        t._view_index = None
        t._acc_ref = None
        t._retains_grad = False
        t._hooks = ()  # a list once a hook is registered
        return t

    @classmethod
    def _from_node(cls, data, node) -> "Tensor":
        t = cls._make(data, True)
        t._grad_fn = node
        return t

    # ------------------------------------------------------------ attributes

    @property
    def data(self) -> "Tensor":
        return Tensor._make(self._data)

    @data.setter
    def data(self, value) -> None:
        _modes.check_write(self)
        array = _as_array(value)
        if self._requires_grad and array.dtype.kind not in "fc":
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or complex dtype"
            )
        self._data = array

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if self._grad_fn is not None:
            raise RuntimeError(NON_LEAF_FLAG if value else NON_LEAF_FLAG_HINT)
        if value and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        if self._grad_fn is not None:
            if not requires_grad:
                raise RuntimeError(NON_LEAF_FLAG_HINT)
            return self
        if requires_grad and self._data.dtype.kind not in "fc":
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self._requires_grad = bool(requires_grad)
        return self

    @property
    def grad_fn(self):
        return self._grad_fn

    @property
    def creator(self):
        """Deprecated alias of ``grad_fn`` kept for old tutorials."""
        warnings.warn(
            "Tensor.creator was renamed; use Tensor.grad_fn instead.", DeprecationWarning, stacklevel=2
        )
        return self._grad_fn

    @property
    def is_leaf(self) -> bool:
        return self._grad_fn is None

    @property
    def grad(self):
        if self._grad_fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(NON_LEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._grad = None
            return
        if not isinstance(value, Tensor):
            raise TypeError(
                f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
            )
        if value.shape != self.shape:
            raise RuntimeError(
                f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor of size "
                f"'{list(self.shape)}'. Please ensure that the gradient and the tensor are the same size"
            )
        if value._data.dtype != self._data.dtype:
            raise RuntimeError(
                f"attempting to assign a gradient with dtype '{_dtypes.c_type_name(value._data.dtype)}' to a "
                f"tensor with grad_dtype '{legacy_type_name(self._data.dtype)[6:-6]}'. The gradient must "
                "match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype with "
                "caution. Diverging the dtypes of a tensor and its gradient may break downstream systems "
                "that assume they match."
            )
        self._grad = value

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad

    def retain_grad(self) -> None:
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            return
        self._retains_grad = True
        self._grad_fn.metadata["_retained"] = weakref.ref(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when the gradient for this tensor is computed."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self._grad_fn is not None:
            hooks = self._grad_fn.pre_hook_list()
        else:
            if not isinstance(self._hooks, list):
                self._hooks = []
            hooks = self._hooks
        hooks.append(hook)
        return RemovableHandle(hooks, hook)

    @property
    def _version_value(self) -> int:
        return self._version_counter.value

    @property
    def _version(self) -> int:
        """How many in-place writes this tensor's storage has seen (shared with views)."""
        return self._version_counter.value

    @property
    def volatile(self) -> bool:
        warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
        return False

    # ------------------------------------------------------------ detaching

    def detach(self) -> "Tensor":
        """A tensor sharing data and version counter, cut from the graph."""
        t = Tensor._make(self._data, False, self._version_counter)
        return t

    def detach_(self) -> "Tensor":
        if self._base is not None and self._base._requires_grad:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, "
                "gradients are views of DDP buckets, and hence detach_() cannot be called on these "
                "gradients. To fix this error, please refer to the Optimizer.zero_grad() function in "
                "torch/optim/optimizer.py as the solution."
            )
        self._grad_fn = None
        self._requires_grad = False
        return self

    # ---------------------------------------------------------- conversions

    def numpy(self, *, force: bool = False) -> np.ndarray:
        if self._requires_grad and is_grad_enabled() and not force:
            raise RuntimeError(NUMPY_REFUSED)
        return self._data

    def __array__(self, dtype=None, copy=None):
        if self._requires_grad and is_grad_enabled():
            raise RuntimeError(NUMPY_REFUSED)
        if dtype is not None and dtype != self._data.dtype:
            return self._data.astype(dtype)
        return self._data.copy() if copy else self._data

    def item(self, *index):
        """The one element as a Python number; numpy's ``item(i)`` picks element ``i``."""
        if index:
            return self._data.item(*index)
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self) -> float:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        if self._requires_grad:
            _warn_once("float", FLOAT_OF_GRAD_WARNING)
        return float(self._data.reshape(()))

    def __int__(self) -> int:
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return int(self._data.reshape(()))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(()))

    def __bool__(self) -> bool:
        if self._data.ndim == 0:
            return bool(self._data)
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()))

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._data.shape[0]))

    __hash__ = object.__hash__

    # -------------------------------------------------------------- printing

    def __repr__(self) -> str:
        if self._grad_fn is not None:
            suffix = f"grad_fn=<{type(self._grad_fn).__name__}>"
        elif self._requires_grad:
            suffix = "requires_grad=True"
        else:
            suffix = None
        dual = getattr(self, "_tangent", None)  # (level, tangent) on a dual tensor (module _dual)
        if dual is not None and dual[0] is _modes.dual_level[0]:
            tangent = f"tangent={dual[1]}"
            return format_tensor(self._data, (suffix, tangent) if suffix else tangent)
        return format_tensor(self._data, suffix)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self._data.item(), spec)
        return format(str(self), spec)

    # ------------------------------------------------------------- metadata

    @property
    def shape(self) -> _dtypes.Size:
        return _dtypes.Size(self._data.shape)

    @property
    def size(self):
        """PyTorch's method ``size(dim=None)``; numpy's element count inside ``numpy_methods()``."""
        if _modes._state.numpy_methods:
            return int(self._data.size)
        return self._size

    def _size(self, dim: int | None = None):
        if dim is None:
            return _dtypes.Size(self._data.shape)
        return self._data.shape[dim]

    @property
    def dtype(self) -> _dtypes.DType:
        return _dtypes.from_numpy_dtype(self._data.dtype)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    def nelement(self) -> int:
        return int(self._data.size)

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return self._data.nbytes

    @property
    def device(self):
        return CPU

    @property
    def is_cuda(self) -> bool:
        return False

    def cuda(self, device=None, non_blocking=False, memory_format=None) -> "Tensor":
        """PyTorch's CPU-only build's answer: there is no CUDA here."""
        raise AssertionError(CUDA_MISSING)

    def is_floating_point(self) -> bool:
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        return self._data.dtype.kind == "c"

    def type(self, dtype=None):
        if dtype is None:
            return legacy_type_name(self._data.dtype)
        return self.to(dtype)

    def data_ptr(self) -> int:
        return self._data.__array_interface__["data"][0]

    def cpu(self) -> "Tensor":
        return self


class RemovableHandle:
    """Returned by ``register_hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks, hook):
        self._hooks, self._hook = hooks, hook

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


RemovableHandle.__module__ = "torch.utils.hooks"


_warned: set = set()


def _warn_once(key: str, message: str) -> None:
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def _unwrap_nested(value):
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, (list, tuple)):
        return [_unwrap_nested(v) for v in value]
    return value


def _as_array(value) -> np.ndarray:
    if isinstance(value, Tensor):
        return value._data
    return np.asarray(value)


Tensor.__module__ = "torch"

# what Python gives every class it defines, not methods: Python 3.13 adds __static_attributes__ and __firstlineno__
_NOT_COPIED = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__slots__",
                         "__static_attributes__", "__firstlineno__"})


def extends(cls: type):
    """Class decorator: add the decorated class's methods and attributes to ``cls``.

    How the modules that record operations give them to ``Tensor`` without
    this module importing them (they import this one).  A name ``cls``
    already has is an error, never a silent replacement; a ``__hash__`` that
    Python set to ``None`` because the class defines ``__eq__`` is not copied.
    """

    def add(methods: type) -> type:
        for name, value in vars(methods).items():
            if name in _NOT_COPIED or name == "__hash__" and value is None:
                continue
            if name in vars(cls):
                raise TypeError(f"{methods.__name__}.{name}: {cls.__name__} already has {name}")
            own = getattr(value, "__qualname__", "")
            if own.startswith(methods.__qualname__ + "."):  # a TypeError names Tensor.add
                value.__qualname__ = cls.__name__ + own[len(methods.__qualname__):]
            setattr(cls, name, value)
        return methods

    return add


if TYPE_CHECKING:  # to the type checker, a class of methods given to Tensor by ``extends`` is a Tensor
    TensorMethodsBase = Tensor
else:
    TensorMethodsBase = object
