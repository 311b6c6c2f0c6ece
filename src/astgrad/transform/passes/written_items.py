"""``written(g, i)`` is ``g[i]`` where ``i`` is surely a Python int: no call in a loop over reactions.

The gradient of the value written by ``a[i] = v`` is ``written(g, i)``:
``g[i]``, where numpy kept the write, which matters only for an index that
names one place twice (an array or list of integers: numpy keeps the last
write and the earlier ones move nothing).  A Python int names one place,
and then ``written`` reads ``g[i]`` whatever ``g`` is (an array, a view of
a row, a Dask array); a number ``g`` has no item, and both raise.  A loop
of ``rates[i] += ...`` pays the call (a primitive, with its tests) on every
trip of its reverse sweep, 0.3 µs against 0.06 µs for the subscript.

Surely a Python int, proven on the generated function, never guessed: a
literal int, or the target of ``for i in range(...)`` (or
``reversed(range(...))``, the reverse sweep's) read in that loop's body,
which rebinds it nowhere; and ``np.s_[1:-1]`` of literal slices and ints (a
stencil's write), whose places are named once each too. A name rebound in
the loop, a counter, an index read from an array (a numpy integer is one
place too, but an index read from an array may be an array), a list or a
tuple of names keep the call.

It runs last, on the code the other passes made, so none of them sees a
subscript where they decided about ``written`` (the in-place passes let a
gradient escape into it as into any call), and for the numpy backend only:
Numba compiles the call.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from ...rules import _extra
from .inplace import _callee


def read_written_items(fn_def, ns):
    """``fn_def`` with each ``written(g, i)`` of a Python int ``i`` written ``g[i]`` (in place)."""
    _Walk(ns).block(fn_def.body, frozenset())
    return fn_def


class _Walk:
    def __init__(self, ns):
        self.ns = ns

    def block(self, stmts, ints):
        for stmt in stmts:
            self.statement(stmt, ints)
            ints = ints - _stored(stmt)

    def statement(self, stmt, ints):
        if isinstance(stmt, gast.For):
            self.expressions(stmt.iter, ints)
            inside = ints - _stored(stmt)  # a name the loop rebinds is not known in it: the next trip reads it
            target = stmt.target.id if isinstance(stmt.target, gast.Name) else None
            if target is not None and self.counts(stmt.iter) and not any(target in _stored(s) for s in stmt.body):
                inside = inside | {target}
            self.block(stmt.body, inside)
            self.block(stmt.orelse, ints - _stored(stmt))
            return
        if isinstance(stmt, gast.While):
            inside = ints - _stored(stmt)
            self.expressions(stmt.test, inside)
            self.block(stmt.body, inside)
            self.block(stmt.orelse, inside)
            return
        if isinstance(stmt, gast.If):
            self.expressions(stmt.test, ints)
            self.block(stmt.body, ints)
            self.block(stmt.orelse, ints)
            return
        if isinstance(stmt, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.Expr, gast.Return)):
            self.expressions(stmt, ints)
        # anything else (try, with, a nested function) is left as it is

    def counts(self, node) -> bool:
        """Whether ``node`` is ``range(...)`` or ``reversed(range(...))``: every value a Python int."""
        if not (isinstance(node, gast.Call) and not node.keywords):
            return False
        fn = _callee(node.func, self.ns)
        if fn is builtins.reversed and len(node.args) == 1:
            return self.counts(node.args[0])
        return fn is builtins.range and 1 <= len(node.args) <= 3 and not any(
            isinstance(a, gast.Starred) for a in node.args)

    def expressions(self, node, ints):
        def replace(n):
            if isinstance(n, gast.Call) and len(n.args) == 2 and not n.keywords \
                    and _callee(n.func, self.ns) is _extra.written \
                    and (_an_int(n.args[1], ints) or _slices(n.args[1], self.ns)):
                return compat.make("Subscript", value=n.args[0], slice=n.args[1], ctx=gast.Load())
            return None
        _replaced(node, replace)


def _replaced(node, fn):
    """Replace, inside ``node`` (not ``node`` itself), every subtree ``fn`` gives a replacement for."""
    for field, value in gast.iter_fields(node):
        if isinstance(value, list):
            for k, item in enumerate(value):
                if isinstance(item, gast.AST):
                    new = fn(item)
                    if new is not None:
                        value[k] = new
                    _replaced(value[k], fn)
        elif isinstance(value, gast.AST):
            new = fn(value)
            if new is not None:
                setattr(node, field, new)
            _replaced(getattr(node, field), fn)


def _an_int(index, ints) -> bool:
    if isinstance(index, gast.Constant):
        return type(index.value) is int
    return isinstance(index, gast.Name) and index.id in ints


def _slices(index, ns) -> bool:
    """Whether ``index`` is ``np.s_[...]`` of slices and literal ints (``np.s_[1:-1]``): places named once each."""
    if not (isinstance(index, gast.Subscript) and isinstance(index.value, gast.Attribute) and index.value.attr == "s_"
            and _callee(index.value.value, ns) is np):
        return False
    return _literal_places(index.slice)


def _literal_places(index) -> bool:
    """Whether the index ``index`` (what ``[...]`` holds) is slices of literal ints and literal ints, per axis."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    return all(isinstance(p, gast.Slice) and all(b is None or _literal_int(b) for b in (p.lower, p.upper, p.step))
               or _literal_int(p) for p in parts)


def _literal_int(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) is int


def _stored(stmt) -> frozenset:
    """The names ``stmt`` (with everything inside it) binds or deletes."""
    return frozenset(n.id for n in compat.walk(stmt) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load))
