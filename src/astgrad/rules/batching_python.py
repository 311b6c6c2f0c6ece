"""Batching rules (``astgrad.vmap``) of Python's own functions: ``math``'s, the builtins ``sum``, ``max``, ``min``
and ``items + [item]``.

``math.sin(x)`` of a batched ``x`` is ``np.sin`` of the examples, each a
number: in float64 whatever ``x`` holds (``math`` computes in Python
floats), and raising where ``math`` raises for some example (a domain or
range error: ``math.log(0.0)``, ``math.exp(1000.0)``, ``math.sin(inf)``,
where numpy would give ``-inf``, ``inf`` or ``nan``).  An example that is
not a number is refused: ``math`` takes numbers only (write ``np.sin``).

The builtins loop over an example's items, or over the items of a list
whose every item is batched: ``sum`` adds them in order; ``max`` and
``min`` keep the first item and replace it by each later one that compares
greater (smaller), which leaves a NaN in first place and skips the others
(numpy's ``np.max`` would spread every NaN).  An example whose items are
arrays is refused for ``max`` and ``min`` (Python compares them, which
numpy refuses as ambiguous).
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ._registry import defbatch
from .batching import JOINS, aligned_operands, broadcast_batch, listed, unbatchable
from .sequences import append

__all__: list = []


# -- math's functions of one number -----------------------------------------------------------

def math_examples(x, name):
    """The examples of the batched ``x``, each a number, as float64 (what ``math`` computes in); refused where an
    example is not a real number."""
    if np.ndim(x) != 1:
        unbatchable(f"math.{name} of an example that is not a number (math takes numbers only: write np.{name})")
    kind = np.result_type(x).kind
    if kind == "c":
        raise TypeError(f"must be real number, not complex (math.{name} of a complex example)")
    if kind not in "biuf":
        unbatchable(f"math.{name} of examples that are not numbers")
    return np.asarray(x, dtype=np.float64)


def as_math(out, x, overflow):
    """``out`` (numpy's value of a math function at the examples ``x``), or math's error where some example gets a
    NaN from a number (a domain error) or an infinity from a finite number (``overflow``: a range error, else a
    domain error, as ``math.log(0.0)``)."""
    if np.any(np.isnan(out) & ~np.isnan(x)):
        raise ValueError("math domain error (for some example of astgrad.vmap)")
    if np.any(np.isinf(out) & np.isfinite(x)):
        raise (OverflowError("math range error") if overflow else ValueError("math domain error"))
    return out


def _one_number(ufunc, name, overflow=False):
    def rule(bdims, x):
        x = math_examples(x, name)
        with np.errstate(all="ignore"):
            out = ufunc(x)
        return as_math(out, x, overflow)
    rule.__name__ = f"math_{name}_batched"
    return rule


for _fn, _ufunc, _overflow in ((math.sin, np.sin, False), (math.cos, np.cos, False), (math.tan, np.tan, False),
                               (math.exp, np.exp, True), (math.sqrt, np.sqrt, False), (math.tanh, np.tanh, False)):
    defbatch(_fn, _one_number(_ufunc, _fn.__name__, _overflow))


@defbatch(math.log)
def math_log_batched(bdims, x, *base):
    if len(base) > 1:
        raise TypeError(f"log expected at most 2 arguments, got {1 + len(base)}")
    values = [math_examples(v, "log") if b is not None else np.float64(v) for v, b in zip((x, *base), bdims)]
    with np.errstate(all="ignore"):
        logs = [as_math(np.log(v), v, False) for v in values]
    if not base:
        return logs[0]
    if np.any(logs[1] == 0.0):
        raise ZeroDivisionError("float division by zero (math.log with base 1, for some example)")
    return logs[0] / logs[1]


# -- the builtins sum, max and min: over an example's items, or a list's batched items ------------

def _items_of(bdims, iterable, name):
    """The batched items ``sum``, ``max`` or ``min`` goes over: a list's (each aligned to the largest rank of one
    example's), or the items along each example's first axis (``x[:, 0]``, ``x[:, 1]``, ...)."""
    if isinstance(iterable, (list, tuple)):
        return list(aligned_operands((0,) * len(iterable), *iterable))
    if bdims[0] is None:
        unbatchable(f"{name} of a value every example shares, with a start that differs from example to example")
    if np.ndim(iterable) < 2:
        unbatchable(f"{name} of an example that is a number (Python iterates over it, which raises)")
    return None  # an array of examples: the rules reduce along its axis 1


@defbatch(builtins.sum)
def sum_batched(bdims, iterable, start=0):
    if len(bdims) > 1 and bdims[1] is not None:
        unbatchable("sum with a start that differs from example to example (add it after the sum)")
    items = _items_of(bdims, iterable, "sum")
    if items is None:
        total = np.sum(iterable, axis=1)
        return total + start if not (type(start) is int and start == 0) else total
    total = start
    for item in items:
        total = total + item
    return total


def _first_extreme(bdims, args, name, later):
    """``max``/``min`` of each example, Python's way: the first item kept unless a later one compares ``later``."""
    if len(args) > 1:  # max(a, b, ...): the arguments are the items
        items = list(aligned_operands(bdims, *args))
        if any(np.ndim(i) > 1 for i, b in zip(items, bdims) if b is not None) \
                or any(np.ndim(i) > 0 for i, b in zip(items, bdims) if b is None):
            unbatchable(f"{name} of arrays (Python compares them, which numpy refuses as ambiguous)")
        size = next(len(i) for i, b in zip(items, bdims) if b is not None)
        items = [i if b is not None else np.broadcast_to(i, (size,)) for i, b in zip(items, bdims)]
    elif not args:
        raise TypeError(f"{name} expected at least 1 argument, got 0")
    else:
        items = _items_of(bdims, args[0], name)
        if items is None:
            x = args[0]
            if np.ndim(x) > 2:
                unbatchable(f"{name} of an example with more than one axis (Python compares its rows, which numpy "
                            f"refuses as ambiguous): reduce with np.{name}")
            if np.shape(x)[1] == 0:
                raise ValueError(f"{name}() iterable argument is empty")
            first = x[:, 0]
            rest = (np.fmax if name == "max" else np.fmin).reduce(x, axis=1)
            return np.where(np.isnan(first), first, rest) if np.result_type(x).kind in "fc" else rest
        if not items:
            raise ValueError(f"{name}() iterable argument is empty")
        if any(np.ndim(i) > 1 for i in items):
            unbatchable(f"{name} of a list of arrays (Python compares them, which numpy refuses as ambiguous)")
    out = items[0]
    for item in items[1:]:
        out = np.where(later(item, out), item, out)
    return out


@defbatch(builtins.max)
def max_batched(bdims, *args):
    return _first_extreme(bdims, args, "max", np.greater)


@defbatch(builtins.min)
def min_batched(bdims, *args):
    return _first_extreme(bdims, args, "min", np.less)


# -- items + [item] (a comprehension's list, a list grown in a loop) -------------------------------

@defbatch(append)
@listed
def append_batched(bdims, items, item):
    """Every item of the new list with the batch axis: a shared list's items given it, a batched array's rows
    (``list(x)`` of each example) taken along its second axis."""
    size = len(item) if bdims[1] is not None else len(items) if not isinstance(items, (list, tuple)) \
        else len(items[0])
    if bdims[0] is None:
        parts = [broadcast_batch(v, size) for v in items]
    elif isinstance(items, (list, tuple)):
        parts = list(items)
    elif np.ndim(items) < 2:
        unbatchable("items + [item] of examples that are numbers (Python iterates over them, which raises)")
    else:
        parts = list(np.moveaxis(items, 0, 1))
    return parts + [item if bdims[1] is not None else broadcast_batch(item, size)]


JOINS.update({builtins.sum, builtins.max, builtins.min})  # a list of batched items is theirs to go over
