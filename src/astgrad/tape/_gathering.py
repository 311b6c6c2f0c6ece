"""Operations with several outputs whose backward runs once: ``autograd.Function`` returning a tuple.

The tape's nodes have one output each.  Such an operation is recorded as
one node holding the backward (its output a 0-d box, never shown), and one
node per output that passes the output's gradient to it, tagged with the
output's position (``OutputGradients``).  The engine adds what reaches the
first node like any gradients, and runs it once, after every output node
reached in the pass, as for any node with several consumers.
"""

from __future__ import annotations

import numpy as np

from ._graph import attach_node
from ._modes import _state
from ._record import edge_of, unwrap
from ._tensor import Tensor


class OutputGradients:
    """The gradients of an operation's outputs gathered so far (``None``: none reached that output yet)."""

    __slots__ = ("grads",)

    def __init__(self, grads: list):
        self.grads = grads

    @classmethod
    def one(cls, index: int, count: int, g) -> np.ndarray:
        """Output ``index``'s gradient, boxed in a 0-d object array (the shape and dtype its node checks)."""
        grads: list = [None] * count
        grads[index] = g
        box = np.empty((), dtype=object)
        box[()] = cls(grads)
        return box

    def __add__(self, other):
        if isinstance(other, np.ndarray):
            other = other.item()
        if not isinstance(other, OutputGradients) or len(other.grads) != len(self.grads):
            return NotImplemented
        return OutputGradients([b if a is None else a if b is None else a + b
                                for a, b in zip(self.grads, other.grads)])

    __radd__ = __add__

    def complete(self, outputs) -> tuple:
        """One gradient per output: zeros (of the output's shape and dtype) for those that got none."""
        taped = any(isinstance(g, Tensor) for g in self.grads)
        out = []
        for g, like in zip(self.grads, outputs):
            if g is None:
                zeros = np.zeros_like(like._data)
                g = Tensor._make(zeros) if taped else zeros
            out.append(g)
        return tuple(out)


def record_gathering(name: str, fn, args, slots, rule):
    """The node that runs ``rule``'s backward once for all outputs, as the output of a hidden tensor.

    ``None`` when nothing is recorded (grad mode off, or no slot has an edge).
    """
    if not _state.enabled:
        return None
    edges, mask = [], 0
    for slot in slots:
        value = args[slot[0]] if len(slot) == 1 else args[slot[0]][slot[1]]
        edge = edge_of(value)
        if edge[0] is not None:
            mask |= 1 << slot[0]
        edges.append(edge)
    if not mask:
        return None
    box = np.empty((), dtype=object)
    result = Tensor._make(box)
    return attach_node(result, rule, name, args, {}, slots, tuple(edges), [unwrap(a) for a in args], mask)
