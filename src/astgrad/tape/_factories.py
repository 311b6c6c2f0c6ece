"""Creating tensors: ``tensor``, ``ones``, ``randn``, ... and the random seed."""

from __future__ import annotations

import warnings

import numpy as np

from . import _modes
from ._device import check_device
from ._dtypes import as_numpy_dtype, default_complex, default_float
from ._record import is_tensor, plain_constant
from ._tensor import FLOAT_ONLY, Tensor
COPY_CONSTRUCT_WARNING = (
    "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
    "sourceTensor.detach().clone().requires_grad_(True), rather than torch.tensor(sourceTensor)."
)

_generator = np.random.default_rng()

RANDOM_REFUSED = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                  "'different' randomness flags on vmap or perform the randomness operation out of vmap")
GENERATOR_REFUSED = ("astgrad: vmap(randomness='same') cannot give every example the same draws from an explicit "
                     "generator=; draw from the default generator (torch.manual_seed) instead")


class Generator:
    """A random generator (``torch.Generator()``), or the one ``manual_seed`` returns; it holds a numpy generator.

    ``generator=`` arguments (``randn``, ``randperm``, ``random_split``) draw
    from it: seeded, the draws repeat, but they are numpy's, not PyTorch's.
    """

    def __init__(self, device=None, *, rng=None, seed: int | None = None):
        check_device(device)
        self._seed = seed
        self._rng = np.random.default_rng(seed) if rng is None else rng

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def initial_seed(self):
        return self._seed


Generator.__module__ = "torch._C"


def manual_seed(seed: int) -> Generator:
    """Seed the generator behind ``randn``/``rand`` (numpy's, so values differ from PyTorch's)."""
    global _generator
    _generator = np.random.default_rng(int(seed))
    return Generator(rng=_generator, seed=int(seed))


def _rng(generator):
    """The numpy generator a draw uses, once the active vmap's ``randomness`` allows the draw (module _examples)."""
    mode = _modes._state.randomness
    if mode is not None:
        if mode == "error":
            raise RuntimeError(RANDOM_REFUSED)
        if mode == "same" and generator is not None:
            raise RuntimeError(GENERATOR_REFUSED)
    return generator._rng if generator is not None else _generator


def generator_state():
    """The default generator's state, for ``set_generator_state`` to put back."""
    return _generator.bit_generator.state


def set_generator_state(state) -> None:
    _generator.bit_generator.state = state


def _leaf(data: np.ndarray, requires_grad: bool):
    if requires_grad and data.dtype.kind not in "fc":
        raise RuntimeError(FLOAT_ONLY)
    return Tensor._make(data, bool(requires_grad))


def _infer_array(data, dtype) -> np.ndarray:
    """numpy data for ``tensor(data)``: Python floats (complex numbers) take the default dtype, numpy keeps its own."""
    np_dtype = as_numpy_dtype(dtype)
    if isinstance(data, (np.ndarray, np.generic)):
        return np.array(plain_constant(data) if isinstance(data, np.ma.MaskedArray) else data,
                        dtype=np_dtype, copy=True)  # np.array gives a plain array of an np.matrix's numbers
    array = np.array(_nested_arrays(data), dtype=np_dtype)
    if np_dtype is None and array.dtype in (np.float64, np.complex128) and not _holds_numpy_double(data):
        array = array.astype(default_float() if array.dtype == np.float64 else default_complex())
    if array.dtype.kind == "U" or array.dtype == object:
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    return array


def _nested_arrays(value):
    if is_tensor(value):
        return value._data
    if isinstance(value, (list, tuple)):
        return [_nested_arrays(v) for v in value]
    return value


def _holds_numpy_double(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_holds_numpy_double(v) for v in value)
    return ((is_tensor(value) and value._data.dtype in (np.float64, np.complex128))
            or isinstance(value, (np.float64, np.complex128)))


def tensor(data, dtype=None, device=None, requires_grad: bool = False, pin_memory=False):
    """A new leaf tensor holding a copy of ``data``."""
    check_device(device)
    if is_tensor(data):
        warnings.warn(COPY_CONSTRUCT_WARNING, UserWarning, stacklevel=2)
        array = np.array(data._data, dtype=as_numpy_dtype(dtype), copy=True)
    else:
        array = _infer_array(data, dtype)
    return _leaf(array, requires_grad)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing its memory where it already is one (or a numpy array) of ``dtype``."""
    check_device(device)
    if is_tensor(data) and (dtype is None or as_numpy_dtype(dtype) == data._data.dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or as_numpy_dtype(dtype) == data.dtype):
        return Tensor._make(plain_constant(data))
    return tensor(data, dtype=dtype)


def from_numpy(array: np.ndarray):
    """A tensor sharing ``array``'s memory: writes to either show in both."""
    return Tensor._make(plain_constant(array))


def _shape(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(int(n) for n in size)


def _filled(size, value, dtype, requires_grad):
    np_dtype = as_numpy_dtype(dtype) or default_float()
    return _leaf(np.full(_shape(size), value, dtype=np_dtype), requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of ones of shape ``size`` (``ones(2, 3)`` or ``ones((2, 3))``), in the default dtype unless ``dtype``."""
    check_device(device)
    return _filled(size, 1, dtype, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of zeros of shape ``size``, in the default dtype unless ``dtype``."""
    check_device(device)
    return _filled(size, 0, dtype, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of shape ``size``; its values are zeros here (PyTorch leaves them unset)."""
    check_device(device)
    return _filled(size, 0, dtype, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of shape ``size`` filled with ``fill_value`` (a bool or int value gives bool or int64, as PyTorch's)."""
    check_device(device)
    if dtype is None and isinstance(fill_value, bool):
        dtype = np.bool_
    elif dtype is None and isinstance(fill_value, int):
        dtype = np.int64
    return _filled((size,), fill_value, dtype, requires_grad)


def _like(t, value, dtype, requires_grad):
    source = t._data if is_tensor(t) else np.asarray(t)
    np_dtype = as_numpy_dtype(dtype) or source.dtype
    return _leaf(np.full(source.shape, value, dtype=np_dtype), requires_grad)


def ones_like(t, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of ones with ``t``'s shape and, unless ``dtype``, its dtype."""
    check_device(device)
    return _like(t, 1, dtype, requires_grad)


def zeros_like(t, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of zeros with ``t``'s shape and, unless ``dtype``, its dtype."""
    check_device(device)
    return _like(t, 0, dtype, requires_grad)


def full_like(t, fill_value, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf filled with ``fill_value``, with ``t``'s shape and, unless ``dtype``, its dtype."""
    check_device(device)
    return _like(t, fill_value, dtype, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf ``n`` by ``m`` (default ``n``) with ones on the diagonal."""
    check_device(device)
    return _leaf(np.eye(n, m, dtype=as_numpy_dtype(dtype) or default_float()), requires_grad)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of ``start, start + step, ...`` below ``end`` (``arange(n)`` counts from 0); int64 when all are ints."""
    check_device(device)
    if end is None:
        start, end = 0, start
    values = (start, end, step)
    np_dtype = as_numpy_dtype(dtype)
    if np_dtype is None:
        np_dtype = np.dtype(np.int64) if all(isinstance(v, int) for v in values) else default_float()
    return _leaf(np.arange(start, end, step).astype(np_dtype), requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of ``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    check_device(device)
    np_dtype = as_numpy_dtype(dtype) or default_float()
    return _leaf(np.linspace(start, end, int(steps)).astype(np_dtype), requires_grad)


def randn(*size, dtype=None, device=None, requires_grad: bool = False, generator=None):
    """A new leaf of standard normal samples of shape ``size`` from the generator ``manual_seed`` seeds."""
    check_device(device)
    rng = _rng(generator)
    np_dtype = as_numpy_dtype(dtype) or default_float()
    return _leaf(rng.standard_normal(_shape(size)).astype(np_dtype), requires_grad)


def rand(*size, dtype=None, device=None, requires_grad: bool = False, generator=None):
    """A new leaf of uniform samples in [0, 1) of shape ``size`` from the generator ``manual_seed`` seeds."""
    check_device(device)
    rng = _rng(generator)
    np_dtype = as_numpy_dtype(dtype) or default_float()
    return _leaf(rng.random(_shape(size)).astype(np_dtype), requires_grad)


def randint(low, high=None, size=(), dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of random integers in [``low``, ``high``) (``randint(high, size=...)`` starts at 0)."""
    check_device(device)
    if high is None:
        low, high = 0, low
    np_dtype = as_numpy_dtype(dtype) or np.dtype(np.int64)
    return _leaf(_rng(None).integers(low, high, size=tuple(size)).astype(np_dtype), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf holding 0, ..., n - 1 in a random order (numpy's draw: not PyTorch's order)."""
    check_device(device)
    np_dtype = as_numpy_dtype(dtype) or np.dtype(np.int64)
    return _leaf(_rng(generator).permutation(int(n)).astype(np_dtype), requires_grad)


def randn_like(t, dtype=None, device=None, requires_grad: bool = False):
    """A new leaf of standard normal samples with ``t``'s shape and dtype."""
    return randn(*t.shape, dtype=dtype or t.dtype, device=device, requires_grad=requires_grad)
