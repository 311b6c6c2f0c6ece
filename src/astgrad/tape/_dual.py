"""Forward-mode differentiation on the tape: dual tensors (``torch.autograd.forward_ad``).

Inside a ``dual_level`` a tensor may carry a tangent (``make_dual``).  Every
operation recorded through ``apply_op`` then also computes its output's
tangent with the forward rules of the shared table (``tangent_of_call``: the
sum of ``jvp_for(i)(t, ans, *args, **kwargs)`` over the arguments that have
one), so the tape and the generated ``astgrad.jvp`` use the same formulas.
Outside a level ``apply_op`` pays one check of a module flag.

A tangent belongs to the level it was made in: it is stored with the
level's token and read only while that level is active, so leaving the
level drops every tangent at once, as PyTorch does.  What cannot be exact is
refused with an error: a second (nested) level, as in PyTorch; in-place
operations that involve a tangent; ``backward`` inside a level
(forward-over-reverse); tangents of another dtype or that require grad.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ..rules import lookup
from ..rules._forward import tangent_of_call
from . import _modes, _record
from ._record import unwrap
from ._tensor import Tensor

NO_LEVEL = ("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.")
NESTED = "Nested forward mode AD is not supported at the moment"
INPLACE_REFUSED = ("astgrad: in-place operations on dual tensors (or with a dual operand) are not supported by "
                   "forward-mode AD; write the out-of-place form (y = x * 2 rather than x.mul_(2))")
BACKWARD_REFUSED = ("astgrad: backward() and autograd.grad() inside forward_ad.dual_level() are not supported "
                    "(forward-over-reverse); compute the gradient outside the level")

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__module__ = "torch.autograd.forward_ad"


class _Level:
    """The token of one active dual level; tangents made in it are stored with it."""

    __slots__ = ()


_active = _modes.dual_level  # the active level's token, or None


def level_active() -> bool:
    return _active[0] is not None


def enter_dual_level() -> int:
    """Enter the one dual level; a second one is refused, as in PyTorch."""
    if _active[0] is not None:
        raise RuntimeError(NESTED)
    _active[0] = _Level()
    _record._dual = True
    return 0


def exit_dual_level(*, level=None) -> None:
    """Leave the level: every tangent made in it is dropped."""
    _active[0] = None
    _record._dual = False


def tangent_of(tensor) -> Tensor | None:
    """The tangent ``tensor`` carries in the active level, or ``None``."""
    entry = getattr(tensor, "_tangent", None) if isinstance(tensor, Tensor) else None
    if entry is None or entry[0] is not _active[0]:
        return None
    return entry[1]


def make_dual(tensor, tangent, *, level=None) -> Tensor:
    """A tensor sharing ``tensor``'s storage that carries ``tangent`` in the active level."""
    if _active[0] is None:
        raise RuntimeError(NO_LEVEL)
    for name, value in (("primal", tensor), ("tangent", tangent)):
        if not isinstance(value, Tensor):
            raise AttributeError(f"'{type(value).__name__}' object has no attribute 'is_floating_point'")
        if value._data.dtype.kind not in "fc":
            raise ValueError(f"Expected {name} to be floating point or complex, but got: {value.dtype}")
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    if tangent._data.dtype != tensor._data.dtype:
        raise TypeError(f"astgrad: the tangent's dtype ({tangent.dtype}) differs from the primal's ({tensor.dtype}); "
                        "PyTorch keeps both and mixes them in later operations, astgrad does not: cast the tangent "
                        "with tangent.to(primal.dtype)")
    if tensor._requires_grad or tangent._requires_grad:
        raise RuntimeError("astgrad: make_dual of a tensor or tangent that requires grad is not supported (forward "
                           "and reverse mode together); pass x.detach() and compute gradients outside the level")
    if tangent_of(tangent) is not None:
        raise RuntimeError("astgrad: a tangent that is itself a dual tensor (forward-over-forward) is not supported")
    dual = Tensor._make(tensor._data, False, tensor._version_counter)
    dual._tangent = (_active[0], tangent)
    return dual


def set_tangent(tensor: Tensor, tangent, what: str) -> None:
    """Give ``tensor`` (a result) the tangent a user's rule computed, checked like ``make_dual``'s."""
    if not isinstance(tangent, Tensor):
        raise TypeError(f"astgrad: {what} is a {type(tangent).__name__}; return a Tensor or None")
    if tangent.shape != tensor.shape or tangent._data.dtype != tensor._data.dtype:
        raise RuntimeError(f"astgrad: {what} has shape {list(tangent.shape)} and dtype {tangent.dtype}, where the "
                           f"output has shape {list(tensor.shape)} and dtype {tensor.dtype}")
    tensor._tangent = (_active[0], Tensor._make(tangent._data))


def unpack_dual(tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)``: the primal a tensor without the tangent, sharing storage; ``tangent`` or ``None``."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not {type(tensor).__name__}")
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = Tensor._make(tensor._data, tensor._requires_grad, tensor._version_counter)
    primal._grad_fn = tensor._grad_fn
    primal._acc_ref = tensor._acc_ref
    return UnpackedDualTensor(primal, tangent)


def forward_op(name, fn, args, kwargs, slots, promote, rule, impl):
    """``apply_op`` inside a dual level: record as usual, then give the result its tangent."""
    forwarding = _record._forwarding
    forwarding.inside = True  # the ordinary path, once (per thread: other threads keep their tangents)
    try:
        result = _record.apply_op(name, fn, args, kwargs, slots=slots, promote=promote, rule=rule, impl=impl)
    finally:
        forwarding.inside = False
    if kwargs:
        for key, value in kwargs.items():
            if _carries_tangent(value):
                raise RuntimeError(f"astgrad: forward-mode AD: the keyword argument {key}= of {name} carries a tangent, "
                                   "which the tape does not propagate; pass it positionally")
    tangents = _tangents(args, slots)
    if tangents is None:
        return result
    out = result._data
    if out.dtype.kind not in "fc":  # integer and bool outputs carry no tangent
        return result
    if rule is None:
        rule = lookup(fn)
    if rule.vjp is None:  # floor, round, sign: piecewise constant
        tangent = np.zeros_like(out)
    else:
        raw_args = [unwrap(a) for a in args]
        raw_kwargs = {k: unwrap(v) for k, v in kwargs.items()} if kwargs else {}
        try:
            tangent = tangent_of_call(rule, tangents, out, raw_args, raw_kwargs)
        except LookupError as error:
            raise RuntimeError(f"astgrad: forward-mode AD through {name}: {error}") from None
        tangent = np.array(tangent, dtype=out.dtype) if tangent is not None else np.zeros_like(out)
    result._tangent = (_active[0], Tensor._make(tangent))
    return result


def constant_result(result, args, kwargs):
    """A non-differentiable function's result (``apply_nondiff``): a floating one of dual inputs moves by zero."""
    if result._data.dtype.kind in "fc" and (_carries_tangent(args) or kwargs and _carries_tangent(list(kwargs.values()))):
        result._tangent = (_active[0], Tensor._make(np.zeros_like(result._data)))
    return result


def _carries_tangent(value) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_carries_tangent(v) for v in value)
    return tangent_of(value) is not None


def _tangents(args, slots) -> list | None:
    """The tangent of each positional argument (arrays; a list argument's a list), or ``None`` when none has one.

    Only the positions that are differentiated (``slots``, by default every
    tensor and every tensor in a list argument) are read; a tangent anywhere
    else would be dropped, so it is refused.
    """
    tangents: list = [None] * len(args)
    found = False
    if slots is None:
        slots = tuple((i,) if not isinstance(a, (list, tuple)) else (i, j)
                      for i, a in enumerate(args) for j in (range(len(a)) if isinstance(a, (list, tuple)) else (0,)))
    read = set()
    for slot in slots:
        i = slot[0]
        if len(slot) == 1:
            t = tangent_of(args[i])
            if t is not None:
                tangents[i] = t._data
                found = True
            read.add(i)
        else:
            items = args[i]
            t = tangent_of(items[slot[1]])
            if t is not None:
                if tangents[i] is None:
                    tangents[i] = [None] * len(items)
                tangents[i][slot[1]] = t._data
                found = True
            read.add(i)
    for i, a in enumerate(args):
        if i not in read and _carries_tangent(a):
            raise RuntimeError(f"astgrad: forward-mode AD: argument {i} carries a tangent where the operation "
                               "takes none (an index or a shape); use a tensor without a tangent there")
    if not found:
        return None
    for i, t in enumerate(tangents):
        if isinstance(t, list):  # joining needs every part: an item without a tangent moves by zero
            tangents[i] = [np.zeros_like(unwrap(item)) if part is None else part for item, part in zip(args[i], t)]
    return tangents


_record._forward_op, _record._constant_result = forward_op, constant_result
