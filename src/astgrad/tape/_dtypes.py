"""Tensor dtypes, sizes and PyTorch's type-promotion rules, over numpy dtypes."""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["DType", "Size", "as_numpy_dtype", "from_numpy_dtype", "result_dtype", "default_float", "default_complex",
           "get_default_dtype", "set_default_dtype", "c_type_name"]


class DType:
    """A dtype as PyTorch prints it (``torch.float32``), backed by a numpy dtype.

    numpy accepts it wherever it takes a dtype, through its ``dtype``
    attribute, so ``np.zeros(3, dtype=t.dtype)`` works on a Tensor's dtype.
    """

    __slots__ = ("name", "dtype", "is_floating_point", "is_complex", "is_signed", "itemsize")

    def __init__(self, name: str, np_dtype):
        self.name = name
        self.dtype = np.dtype(np_dtype)
        self.is_floating_point = self.dtype.kind == "f"
        self.is_complex = self.dtype.kind == "c"
        self.is_signed = self.dtype.kind in "fic"
        self.itemsize = self.dtype.itemsize

    def __repr__(self) -> str:
        return f"torch.{self.name}"

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        if isinstance(other, DType):
            return self.dtype == other.dtype
        try:
            return self.dtype == np.dtype(other)
        except TypeError:
            return NotImplemented

    def __hash__(self) -> int:
        return hash(self.dtype)

    def __reduce__(self):
        return (from_numpy_dtype, (self.dtype,))


float16 = DType("float16", np.float16)
float32 = DType("float32", np.float32)
float64 = DType("float64", np.float64)
int8 = DType("int8", np.int8)
int16 = DType("int16", np.int16)
int32 = DType("int32", np.int32)
int64 = DType("int64", np.int64)
uint8 = DType("uint8", np.uint8)
bool_ = DType("bool", np.bool_)
complex64 = DType("complex64", np.complex64)
complex128 = DType("complex128", np.complex128)



class _WithoutNumpyType(DType):
    """A PyTorch dtype numpy has no type for (``bfloat16``): it has its name, and no tensor can have it."""

    def __init__(self, name: str, itemsize: int):
        self.name = name
        self.dtype = None
        self.is_floating_point, self.is_complex, self.is_signed = True, False, True
        self.itemsize = itemsize

    def __eq__(self, other) -> bool:
        return other is self

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self):
        return self.name  # pickled as the module-level name

    def refuse(self):
        raise TypeError(f"astgrad tensors cannot hold torch.{self.name}: numpy has no {self.name} type; use "
                        "torch.float32 (or torch.float16) instead")


bfloat16 = _WithoutNumpyType("bfloat16", 2)

_BY_NUMPY = {d.dtype: d for d in (float16, float32, float64, int8, int16, int32, int64, uint8, bool_,
                                  complex64, complex128)}


def from_numpy_dtype(np_dtype) -> DType:
    np_dtype = np.dtype(np_dtype)
    try:
        return _BY_NUMPY[np_dtype]
    except KeyError:
        raise TypeError(f"astgrad tensors do not support the numpy dtype {np_dtype}") from None


def as_numpy_dtype(dtype) -> np.dtype | None:
    """A numpy dtype from a DType, a numpy dtype, a Python type or ``None``."""
    if dtype is None:
        return None
    if isinstance(dtype, DType):
        if isinstance(dtype, _WithoutNumpyType):
            dtype.refuse()
        return dtype.dtype
    if dtype is float:
        return np.dtype(np.float64)
    if dtype is int:
        return np.dtype(np.int64)
    if dtype is bool:
        return np.dtype(np.bool_)
    return np.dtype(dtype)


_C_TYPE_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
                 "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
                 "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def c_type_name(dtype) -> str:
    """The C++ name PyTorch's messages give a dtype (``long int`` for int64)."""
    return _C_TYPE_NAMES.get(np.dtype(dtype).name, np.dtype(dtype).name)


_default_float = [float32.dtype]  # set_default_dtype changes it for every thread, as in PyTorch


def default_float() -> np.dtype:
    """The dtype of Python floats in new tensors (float32 unless ``set_default_dtype`` changed it)."""
    return _default_float[0]


def default_complex() -> np.dtype:
    """The dtype of Python complex numbers in new tensors: complex128 beside a float64 default, else complex64."""
    return np.dtype(np.complex128) if _default_float[0] == np.float64 else np.dtype(np.complex64)


def get_default_dtype() -> DType:
    return from_numpy_dtype(default_float())


def set_default_dtype(d) -> None:
    """Make ``d`` (a floating-point dtype) the dtype of Python floats in new tensors."""
    np_dtype = as_numpy_dtype(d)
    if np_dtype is None or np_dtype.kind != "f":
        raise TypeError("only floating-point types are supported as the default type")
    _default_float[0] = np_dtype


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``torch.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"torch.Size([{', '.join(str(int(n)) for n in self)}])"

    __str__ = __repr__

    def numel(self) -> int:
        count = 1
        for n in self:
            count *= int(n)
        return count


# ------------------------------------------------------------------ promotion

_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _scalar_category(value) -> int:
    if isinstance(value, (bool, np.bool_)):
        return 0
    if isinstance(value, numbers.Integral):
        return 1
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        return 3
    return 2


def result_dtype(operands) -> np.dtype:
    """The dtype PyTorch gives an operation over ``operands``.

    Operands are numpy arrays (with ``ndim`` telling dimensioned from 0-d)
    or Python/numpy scalars.  Dimensioned tensors take priority over 0-d
    ones, which take priority over scalars, unless a lower-priority group
    holds a higher category (bool < integer < float < complex): then that
    group's dtype applies, and for scalars the default dtype of the category.
    """
    groups: list[list[np.dtype]] = [[], [], []]
    scalar_cat = -1
    for op in operands:
        if isinstance(op, np.ndarray):
            groups[0 if op.ndim else 1].append(op.dtype)
        elif isinstance(op, (numbers.Number, np.generic)):
            scalar_cat = max(scalar_cat, _scalar_category(op))
    best_cat = max([_CATEGORY[d.kind] for g in groups[:2] for d in g] + [scalar_cat])
    for group in groups[:2]:
        in_cat = [d for d in group if _CATEGORY[d.kind] == best_cat]
        if in_cat:
            return np.result_type(*in_cat)
    return {0: np.dtype(np.bool_), 1: np.dtype(np.int64), 2: default_float(), 3: default_complex()}[best_cat]
