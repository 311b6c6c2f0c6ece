"""The stack of generated code batched (``astgrad.vmap`` of a gradient): values with a batch axis pushed marked.

Generated code saves values on a list in its primal sweep and pops them in
its adjoint (core/reverse.py); batched, some of them carry the batch axis
and some are shared by every example (a trip count, a branch taken).  The
batching sweep (core/batching.py) pushes a batched value marked, and says
at each pop which kind it reads: a pop of the other kind raises, or, for a
shared value read as batched, gives it the batch axis.
"""

from __future__ import annotations

from ...rules.batching import Unbatchable, broadcast_batch

__all__ = ["Batched", "push_batched", "pop_batched", "pop_shared"]


class Batched:
    """A value with a batch axis (an array, or with ``items`` a tuple or list of them, or with a tuple of kinds a
    tuple whose items are each shared (None), batched (False), a tuple or list of batched arrays (True) or again a
    tuple of kinds), as pushed on a list that holds shared values too (the stack of generated code)."""

    __slots__ = ("value", "items")

    def __init__(self, value, items):
        self.value, self.items = value, items


def push_batched(stack, value, items=False):
    """``stack.append(value)`` for a ``value`` with a batch axis, marked so its pop can say it has one."""
    stack.append(Batched(value, items))
    return stack


def pop_batched(stack, size, items=False):
    """``stack.pop()`` where the batched code reads a value with a batch axis (with ``items``, a tuple or list of
    them): one every example shares (pushed unmarked) gets it (``broadcast_batch``); an error if it was pushed as
    the other kind."""
    value = stack.pop()
    if type(value) is not Batched:
        return _given_the_batch_axis(value, size, items)
    if value.items != items:
        raise Unbatchable("astgrad.vmap: the stack of the batched code gave back " + (
            "a tuple or list of values with a batch axis where it expected one array" if value.items is True else
            "an array with a batch axis where it expected a tuple or list of them" if items is True else
            "a value of another kind (an array, a tuple or list of arrays, a tuple of them) with a batch axis than "
            "the one it expected") + "; loop over the examples")
    return value.value


def _given_the_batch_axis(value, size, kind):
    """A shared ``value`` as the batched code reads a value of ``kind``: every batched part broadcast."""
    if type(kind) is not tuple:
        return broadcast_batch(value, size)
    if not isinstance(value, tuple) or len(value) != len(kind):
        raise Unbatchable("astgrad.vmap: the stack of the batched code gave back a value that is not the tuple it "
                          "expected; loop over the examples")
    return tuple(v if k is None else _given_the_batch_axis(v, size, k) for v, k in zip(value, kind))


def pop_shared(stack):
    """``stack.pop()`` where the batched code reads a value every example shares: an error if it has a batch axis."""
    value = stack.pop()
    if type(value) is Batched:
        raise Unbatchable("astgrad.vmap: the stack of the batched code gave back a value with a batch axis where it "
                          "expected one every example shares; loop over the examples")
    return value
