"""In-place tensor operations.

An in-place op runs the out-of-place op on a snapshot of the tensor and
writes the result back into the same storage: views and ``detach()`` results
see the change, the version counter moves on, and the tensor's history
becomes the new node (or, for a view, the base's history gets a
``CopySlices`` node).
"""

from __future__ import annotations

import numpy as np

from .. import rules
from . import _dual, _modes, _record
from ._modes import is_grad_enabled
from ._record import apply_op, unwrap
from ._tensor import Tensor, TensorMethodsBase, extends

LEAF_INPLACE = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF_INPLACE = "a view of a leaf Variable that requires grad is being used in an in-place operation."


@extends(Tensor)
class InplaceMethods(TensorMethodsBase):
    """In-place operations of :class:`Tensor`."""

    # -------------------------------------------------------------- in-place

    def _inplace(self, compute):
        """Apply ``compute`` to a snapshot of this tensor and write the result back.

        The tensor keeps its identity and storage (views and ``detach()``
        results see the change); its history becomes the new node and its
        version counter moves on.
        """
        _modes.check_write(self)  # inside a looping vmap's example (module _examples)
        recording = is_grad_enabled()  # the other operand may bring history (zeros(3).add_(x))
        if is_grad_enabled() and self._requires_grad and self._grad_fn is None:
            raise RuntimeError(LEAF_INPLACE)
        base = self._base
        if is_grad_enabled() and base is not None and base._requires_grad and base._grad_fn is None:
            raise RuntimeError(VIEW_OF_LEAF_INPLACE)
        if recording:
            snapshot = Tensor._make(self._data, self._requires_grad)
            snapshot._grad_fn = self._grad_fn
            snapshot._acc_ref = self._acc_ref
        else:
            snapshot = self.detach()
        result = compute(snapshot)
        if _record._dual and any(_dual.tangent_of(t) is not None for t in (self, base, result)):
            raise RuntimeError(_dual.INPLACE_REFUSED)  # views and the base would keep stale tangents
        if result._grad_fn is not None:
            snapshot._data = self._data.copy()  # a node may have saved the values about to be overwritten
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
        def zeroed(t):
            out = apply_op("ZeroBackward0", np.multiply, (t, 0), slots=((0,),))  # the node: a gradient of zeros
            out._data[...] = 0  # t * 0 is NaN where t is NaN or infinite, and -0 where t is negative
            return out

        return self._inplace(zeroed)

    def fill_(self, value):
        if _record._dual and _dual.tangent_of(value) is not None:
            raise RuntimeError(_dual.INPLACE_REFUSED)  # the value is unwrapped below: its tangent would be lost
        value = unwrap(value)

        def filled(t):
            out = apply_op("FillBackward2", np.multiply, (t, 0), slots=((0,),))
            out._data[...] = value
            return out

        return self._inplace(filled)

    def copy_(self, src):
        return self._inplace(
            lambda t: apply_op("CopyBackwards", rules.setitem, (t, Ellipsis, src), slots=((0,), (2,))),
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


def _scalar_type_name(dtype) -> str:
    return {"f": "Float", "c": "ComplexFloat", "i": "Long", "b": "Bool", "u": "Byte"}[np.dtype(dtype).kind]
