"""``torch.save`` and ``torch.load``: a file of astgrad's own, a pickle behind a header line.

The file is not PyTorch's (a zip archive of storages): PyTorch cannot read
what ``save`` writes and ``load`` refuses what PyTorch wrote, each with an
error, never with a wrong tensor.  What loads is astgrad's: tensors are
astgrad tensors on the CPU, models astgrad modules.

``load`` unpickles only tensors, numbers, strings, ``None`` and the
containers of them (dicts, ``OrderedDict``, lists, tuples, sets) by default,
as PyTorch does since 2.6 (``weights_only=True``): a state dict, an
optimizer's state dict, a checkpoint dict.  Unpickling anything else runs
code the file names, so a whole model needs ``weights_only=False``, which
should be given only for files you trust.
"""

from __future__ import annotations

import collections
import io
import os
import pickle
from typing import Any

import numpy as np

from ..tape import Size, check_device, device, float32, tensor
from .nn.parameter import Parameter

__all__ = ["save", "load"]

HEADER = b"astgrad.torch.save 1\n"
PYTORCH_FILE = (
    "astgrad.torch.load: {name} was written by PyTorch's torch.save (a zip archive), which astgrad cannot read. "
    "In PyTorch, save the tensors as numpy arrays (np.savez(path, **{{k: v.numpy() for k, v in "
    "state_dict.items()}})) and make astgrad tensors of them with torch.tensor"
)
NOT_OURS = "astgrad.torch.load: {name} was not written by astgrad.torch.save (its first bytes are {start!r})"
WEIGHTS_ONLY = (
    "Weights only load failed. astgrad.torch.load with weights_only=True (the default, as in PyTorch) reads "
    "tensors, numbers, strings and containers of them; this file holds {what}. If you trust the file, load it "
    "with weights_only=False (unpickling can run code the file names)."
)


def _reduced(value, protocol: int = 2) -> Any:
    """The function pickle calls to rebuild ``value`` (read from its ``__reduce_ex__``, not from a private name)."""
    return value.__reduce_ex__(protocol)[0]


_WEIGHTS: list[Any] = [
    collections.OrderedDict, collections.Counter, collections.defaultdict, Size, Parameter,
    _reduced(tensor(0.0)), _reduced(float32), np.dtype, np.ndarray, _reduced(np.zeros(1)), _reduced(np.zeros(1), 5),
    _reduced(np.float64(0)),
]
ALLOWED = ({(obj.__module__, obj.__qualname__) for obj in _WEIGHTS} | {("_codecs", "encode")}
           | {(module, name) for module in ("builtins", "__builtin__")  # protocol 2 names builtins the old way
              for name in ("set", "frozenset", "complex", "slice", "bytearray")})


class _WeightsUnpickler(pickle.Unpickler):
    """An unpickler that imports nothing but what tensors and plain containers are rebuilt with."""

    def find_class(self, module: str, name: str):
        if (module, name) not in ALLOWED:
            raise pickle.UnpicklingError(WEIGHTS_ONLY.format(what=f"{module}.{name}"))
        return super().find_class(module, name)


def save(obj, f, pickle_module=pickle, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Write ``obj`` (a state dict, a checkpoint dict, a tensor, a model) to the path or binary file ``f``."""
    data = HEADER + pickle_module.dumps(obj, protocol=pickle_protocol)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as file:
            file.write(data)
    else:
        f.write(data)


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None, mmap: bool | None = None,
         **pickle_load_args):
    """What ``save`` wrote to ``f`` (a path or a binary file), its tensors astgrad's on the CPU.

    ``map_location`` may name the CPU (``"cpu"``, ``torch.device("cpu")``,
    a dict or a function mapping locations): the CPU is where everything
    loads.  ``weights_only`` is True unless given (see the module's text).
    """
    _check_location(map_location)
    if mmap:
        raise ValueError("astgrad.torch.load: mmap=True is not supported; the file is read into memory")
    if isinstance(f, (str, os.PathLike)):
        name = repr(os.fspath(f))
        with open(f, "rb") as file:
            data = file.read()
    else:
        name = "the file"
        data = f.read()
    if not data.startswith(HEADER):
        if data.startswith(b"PK\x03\x04"):
            raise RuntimeError(PYTORCH_FILE.format(name=name))
        raise RuntimeError(NOT_OURS.format(name=name, start=data[:len(HEADER)]))
    body = data[len(HEADER):]
    if weights_only is False:
        return (pickle_module or pickle).loads(body, **pickle_load_args)
    if pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    return _WeightsUnpickler(io.BytesIO(body), **pickle_load_args).load()


def _check_location(map_location) -> None:
    """Every tensor is on the CPU: a location must be the CPU (a function cannot move a storage elsewhere)."""
    if map_location is None or callable(map_location) and not isinstance(map_location, (str, device)):
        return
    locations = map_location.values() if isinstance(map_location, dict) else [map_location]
    for location in locations:
        check_device(location)
