"""Constant folding of inlined rules: the parts of an expression known when the code is generated.

``y == 0`` for a literal ``y``, ``x ** 1``, ``np.where(True, a, b)``, a
reduction helper over every axis: rules are written for any argument, and
folding drops the cases that the operation at hand cannot reach.
"""

from __future__ import annotations

import operator

import numpy as np

from ...rules import _support, batching
from ..ir import compat
from .. import runtime
from ..ir.compat import gast


_BINOPS = {gast.Add: operator.add, gast.Sub: operator.sub, gast.Mult: operator.mul,
           gast.Div: operator.truediv, gast.Pow: operator.pow}
_CMPOPS = {gast.Eq: operator.eq, gast.NotEq: operator.ne, gast.Lt: operator.lt, gast.LtE: operator.le,
           gast.Gt: operator.gt, gast.GtE: operator.ge, gast.Is: operator.is_, gast.IsNot: operator.is_not}


def _const(node):
    return isinstance(node, gast.Constant)


def fold(node, ns):
    """Evaluate the parts of an expression that are constant."""
    def visit(n):
        fields = n.__dict__
        for field, value in list(fields.items()):
            if value.__class__ is list:
                fields[field] = [visit(v) if isinstance(v, _AST) else v for v in value]
            elif isinstance(value, _AST):
                fields[field] = visit(value)
        return _fold_node(n, ns) if n.__class__ in _FOLDABLE else n
    return visit(node)


_AST = gast.AST
_FOLDABLE = {gast.BinOp, gast.Compare, gast.UnaryOp, gast.BoolOp, gast.IfExp, gast.Call, gast.Subscript}


def _fold_node(n, ns):
    try:
        if isinstance(n, gast.BinOp) and _const(n.left) and _const(n.right) and type(n.op) in _BINOPS:
            value = _BINOPS[type(n.op)](n.left.value, n.right.value)
            if isinstance(value, (int, float)) and abs(value) < 1e15:
                return compat.const(value)
        if isinstance(n, gast.BinOp) and isinstance(n.op, gast.Pow) and _const(n.right) and n.right.value == 1:
            return n.left
        if isinstance(n, gast.Compare) and len(n.ops) == 1 and _const(n.left) and _const(n.comparators[0]) \
                and type(n.ops[0]) in _CMPOPS:
            return compat.const(bool(_CMPOPS[type(n.ops[0])](n.left.value, n.comparators[0].value)))
        if isinstance(n, gast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (gast.Is, gast.IsNot)) \
                and isinstance(n.left, (gast.Tuple, gast.List)) and _const(n.comparators[0]) \
                and n.comparators[0].value is None:  # a display is never None (and `(1, 0) is None` warns)
            return compat.const(isinstance(n.ops[0], gast.IsNot))
        if isinstance(n, gast.UnaryOp) and _const(n.operand):
            if isinstance(n.op, gast.Not):
                return compat.const(not n.operand.value)
            value = n.operand.value
            if isinstance(n.op, gast.USub) and type(value) in (int, float):  # -1 is a constant: `-1 is None` folds
                return compat.const(-value)
        if isinstance(n, gast.BoolOp) and _const(n.values[0]):
            first = bool(n.values[0].value)
            decided = (not first) if isinstance(n.op, gast.And) else first
            if decided:
                return compat.const(first)
            rest = n.values[1:]
            return rest[0] if len(rest) == 1 else compat.make("BoolOp", op=n.op, values=rest)
        if isinstance(n, gast.IfExp) and _const(n.test):
            return n.body if n.test.value else n.orelse
        if isinstance(n, gast.Call) and not n.keywords:
            folded = _fold_reduction_helper(n, ns)
            if folded is not None:
                return folded
            if _names(n.func, ns) is tuple and len(n.args) == 1 and isinstance(n.args[0], gast.Call) \
                    and _names(n.args[0].func, ns) is range and not n.args[0].keywords \
                    and all(_const(a) and type(a.value) is int for a in n.args[0].args) and len(n.args[0].args) <= 3:
                numbers = range(*[a.value for a in n.args[0].args])  # tuple(range(1)): the axes (0,)
                if len(numbers) <= 32:
                    return compat.tuple_([compat.const(i) for i in numbers])
        if isinstance(n, gast.Subscript) and isinstance(n.value, gast.Tuple) and isinstance(n.ctx, gast.Load) \
                and _const(n.slice) and type(n.slice.value) is int and -len(n.value.elts) <= n.slice.value \
                < len(n.value.elts):  # (0, None)[1]: a batching rule's bdims
            return n.value.elts[n.slice.value]
        if isinstance(n, gast.Call) and not n.keywords and _names(n.func, ns) in batching.FOLDABLE \
                and all(_literal(a) for a in n.args):  # batch_axis(0): 1
            return _as_node(_names(n.func, ns)(*[_value(a) for a in n.args]))
        if isinstance(n, gast.Call) and _is_np_where(n.func, ns) and len(n.args) == 3 and _const(n.args[0]) \
                and isinstance(n.args[0].value, bool):
            return n.args[1] if n.args[0].value else n.args[2]
    except Exception:  # folding is an optimisation; leave anything odd alone
        return n
    return n


def _literal(node) -> bool:
    """A number, None, or a tuple display of numbers and Nones (a batching rule's bdims)."""
    if isinstance(node, gast.Tuple):
        return all(_const(e) and (type(e.value) is int or e.value is None) for e in node.elts)
    return _const(node) and (node.value is None or type(node.value) is int)


def _value(node):
    return tuple(e.value for e in node.elts) if isinstance(node, gast.Tuple) else node.value


def _as_node(value):
    return compat.tuple_([compat.const(v) for v in value]) if isinstance(value, tuple) else compat.const(value)


def _fold_reduction_helper(n, ns):
    """A reduction over every axis: ``expand_reduced(g, s, None, k)`` is
    ``filled(g, s)`` (``np.broadcast_to``) and ``reduced_count(x.shape, None)`` is ``x.size``."""
    fn = ns.globals.get(n.func.id) if isinstance(n.func, gast.Name) else None
    if fn is None or len(n.args) < 2 or not _const(n.args[2] if len(n.args) > 2 else n.args[1]):
        return None
    if fn is _support.expand_reduced and len(n.args) == 4 and n.args[2].value is None and _const(n.args[3]):
        name = ns.bind(runtime.filled, "filled")
        ns.pure.add(name)
        return compat.call(compat.name(name), n.args[:2])
    if fn is _support.reduced_count and len(n.args) == 2 and n.args[1].value is None \
            and isinstance(n.args[0], gast.Call) and isinstance(n.args[0].func, gast.Name) \
            and ns.globals.get(n.args[0].func.id) is runtime.shape and len(n.args[0].args) == 1:
        return compat.call(compat.name(ns.helper(runtime.size)), n.args[0].args)
    return None


def _names(func, ns):
    """The object a plain name in the generated module stands for, or None."""
    return ns.globals.get(func.id) if isinstance(func, gast.Name) else None


def _is_np_where(func, ns):
    return isinstance(func, gast.Attribute) and func.attr == "where" and isinstance(func.value, gast.Name) \
        and ns.globals.get(func.value.id) is np


def fold_stmt(stmt, ns):
    if not isinstance(stmt, gast.If):
        return fold(stmt, ns)
    stmt.test = fold(stmt.test, ns)  # the branches are folded statement by statement below
    if _const(stmt.test):
        return [fold_stmt(s, ns) for s in (stmt.body if stmt.test.value else stmt.orelse)]
    stmt.body = flatten([fold_stmt(s, ns) for s in stmt.body])
    stmt.orelse = flatten([fold_stmt(s, ns) for s in stmt.orelse])
    return stmt


def flatten(stmts):
    out = []
    for s in stmts:
        if isinstance(s, list):
            out += flatten(s)
        else:
            out.append(s)
    return out
