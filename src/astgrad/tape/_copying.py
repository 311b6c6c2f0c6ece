"""Pickling and copying tensors, as PyTorch's leaves pickle and copy.

The class calls itself ``torch.Tensor`` (module ``torch``), so pickle's
default, which names the class, fails without PyTorch ("import of module
'torch' failed") and with it ("not the same object as torch.Tensor").
``__reduce_ex__`` names :func:`rebuild_tensor` instead: a pickle holds the
numpy array (data and dtype) and ``requires_grad``, nothing else, and loads
as a new leaf.

What each way of copying gives, as in PyTorch:

* ``pickle``: a leaf with the data, dtype and ``requires_grad``; no
  ``.grad``, no hooks, no history (a non-leaf loads as a leaf).
* ``copy.copy``: a leaf sharing the data, with ``requires_grad``; no
  ``.grad``.  It also shares the version counter, so an in-place write
  through the copy makes a backward that saved the original raise, never
  read the new values silently.
* ``copy.deepcopy``: a leaf with its own copy of the data and of ``.grad``;
  a non-leaf is refused with PyTorch's error.

Each copy is a leaf of its own: gradients land in its ``.grad``, never in
the original's.  A subclass (``nn.Parameter``) comes back as that subclass.
"""

from __future__ import annotations

import copy

from ._tensor import Tensor, Version, TensorMethodsBase, extends

DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  "
    "If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, "
    "see https://github.com/pytorch/pytorch/pull/103001"
)


def rebuild_tensor(data, requires_grad: bool, cls: type[Tensor] = Tensor) -> Tensor:
    """The tensor a pickle holds: a new leaf of ``cls`` over ``data``."""
    return cls._make(data, bool(requires_grad))


@extends(Tensor)
class CopyMethods(TensorMethodsBase):
    def __reduce_ex__(self, protocol):
        if type(self) is Tensor:  # the class's own name (torch.Tensor) is never written
            return rebuild_tensor, (self._data, self._requires_grad)
        return rebuild_tensor, (self._data, self._requires_grad, type(self))

    def __copy__(self):
        """A leaf sharing data and version counter (like ``detach()``), with ``requires_grad``."""
        return type(self)._make(self._data, self._requires_grad, self._version_counter)

    def __deepcopy__(self, memo):
        if self._grad_fn is not None:
            raise RuntimeError(DEEPCOPY_NON_LEAF)
        if id(self) in memo:
            return memo[id(self)]
        data = copy.deepcopy(self._data, memo)  # tensors copied together that share an array still do
        counter = self._version_counter
        version = memo.get(id(counter))
        if version is None:
            version = memo[id(counter)] = Version()
            memo.setdefault(id(memo), []).append(counter)  # keeps the id from being reused meanwhile
        result = type(self)._make(data, self._requires_grad, version)
        memo[id(self)] = result
        if self._grad is not None:
            result._grad = copy.deepcopy(self._grad, memo)
        return result
