"""Devices: PyTorch's ``torch.device``, with the CPU the only one there is.

Tutorials name a device everywhere (``device=device``, ``.to(device)``,
``torch.cuda.is_available()``); the tape runs on numpy, so ``"cpu"`` is
accepted wherever a device goes and every other device type PyTorch knows
fails as PyTorch's CPU-only build fails when it is asked to allocate there.
A misspelt type fails at ``device(...)`` with PyTorch's message.
"""

from __future__ import annotations

import threading

__all__ = ["device", "check_device", "get_default_device", "set_default_device"]

#: the device types PyTorch's parser accepts, in the order its message lists them
_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve", "fpga", "maia", "xla",
          "lazy", "vulkan", "mps", "meta", "hpu", "mtia", "privateuseone")

CUDA_MISSING = "Torch not compiled with CUDA enabled"


class device:
    """``torch.device('cpu')``, ``torch.device('cuda:0')``, ``torch.device('cuda', 1)``: a type and an optional index."""

    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):  # noqa: A002  (PyTorch's parameter name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device(): argument 'type' (position 1) must be str, not torch.device")
            self._type: str = type._type
            self._index: int | None = type._index
            return
        if isinstance(type, int) and not isinstance(type, bool):  # torch.device(0): the first accelerator
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if not isinstance(type, str):
            raise TypeError(f"device() received an invalid combination of arguments - got ({_type_name(type)}), "
                            "but expected one of:\n * (torch.device device)\n * (str type, int index = -1)")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise TypeError(f"device(): argument 'index' (position 2) must be int, not {_type_name(index)}")
        name, colon, given = type.partition(":")
        if name not in _TYPES:
            if name.strip() in _TYPES:
                raise RuntimeError(f"Invalid device string: '{type}'")
            raise RuntimeError(f"Expected one of {', '.join(_TYPES)} device type at start of device string: {type}")
        if colon:
            if not given.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
            index = int(given)
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        self._type, self._index = name, index

    @property
    def type(self) -> str:
        return self._type

    @property
    def index(self):
        return self._index

    def __repr__(self) -> str:
        if self._index is None:
            return f"device(type='{self._type}')"
        return f"device(type='{self._type}', index={self._index})"

    def __str__(self) -> str:
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __eq__(self, other) -> bool:
        return isinstance(other, device) and (self._type, self._index) == (other._type, other._index)

    def __hash__(self) -> int:
        return hash((self._type, self._index))

    def __reduce__(self):
        return device, (self._type, self._index)


device.__module__ = "torch"


def _type_name(value) -> str:
    return type(value).__name__


CPU = device("cpu")

_default = threading.local()  # PyTorch keeps the default device per thread


def get_default_device() -> device:
    """The device factories use when none is given: the CPU unless ``set_default_device`` chose another."""
    return getattr(_default, "device", CPU)


def set_default_device(where) -> None:
    """Make ``where`` the device factories use when none is given (``None`` means the CPU again).

    As in PyTorch, choosing a device that is not there is accepted here and
    fails at the first tensor made on it.
    """
    _default.device = CPU if where is None else as_device(where)


def as_device(where) -> device:
    return where if isinstance(where, device) else device(where)


def check_device(where=None) -> device:
    """The CPU, when ``where`` (or the default device, for ``None``) is one; PyTorch's error otherwise."""
    chosen = get_default_device() if where is None else as_device(where)
    if chosen.type == "cpu":
        return CPU
    if chosen.type == "cuda":
        raise AssertionError(CUDA_MISSING)
    raise NotImplementedError(
        f"Could not run 'aten::empty.memory_format' with arguments from the '{_backend_name(chosen.type)}' backend. "
        "astgrad's tensors live in numpy arrays, on the CPU only: use device='cpu'.")


def _backend_name(kind: str) -> str:
    return {"mps": "MPS", "xpu": "XPU", "hip": "HIP", "meta": "Meta", "xla": "XLA", "hpu": "HPU", "mtia": "MTIA",
            "ipu": "IPU", "privateuseone": "PrivateUse1", "lazy": "Lazy", "vulkan": "Vulkan", "ve": "VE",
            "maia": "MAIA"}.get(kind, kind.upper())
