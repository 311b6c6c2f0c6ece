"""A product computed again from the same operands, with nothing between that could change them, computed once.

S13's reverse step reads ``ds = unbroadcast(dt13 * t3, shape(s))`` and
then ``dt5 = unbroadcast(dt13 * t3 * s, shape(t5))``: Python multiplies
left to right, so the second computes ``dt13 * t3`` again (an array of
10^4 paths) before multiplying by ``s``.  Here it is bound once,
``t = dt13 * t3``, before the first statement, and both read ``t``: the
same operation on the same operands gives the same numbers, so nothing is
reassociated and no rounding changes.

Proven, never guessed, within one block of the generated function:

* the expression is ``a op b`` (``+``, ``-``, ``*``, ``/``) of two names,
  or a name and a number literal; the names are not bound anew from the
  first statement (its own targets included) up to the last statement
  rewritten;
* it is the first thing the first statement computes (the operands of a
  call or an operator before it are only names and literals), so binding
  it one line earlier raises what the statement raised, where it raised;
* every statement from the first to the last rewritten surely writes into
  no array (slice_views.py's test: assignments to names of arithmetic,
  ufuncs and ``np.where`` without keywords, and the runtime's ``shape``,
  ``unbroadcast`` and ``summed``, which read their operands and return one
  of them or a new value): the operands hold the values they held;
* a later statement reads it only as an operand of an operator (``t *
  s``), never as a value bound or returned as it is: the one array ``t``
  names is then reached, after the block, by at most the first statement's
  result, as the value computed there was, and nothing can write into it
  through another name.

Otherwise the code stays as written.  It runs for the numpy backend
only, last but for the slices' constants (the Numba backend compiles
the code as the other passes left it), in every function made.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from .. import runtime
from ..ir.trees import is_marker
from .inplace import _callee

_OPS = (gast.Add, gast.Sub, gast.Mult, gast.Div)
#: the runtime's helpers a statement between may call: each reads its operands and writes into none
_READERS = (runtime.shape, runtime.unbroadcast, runtime.summed)


def share_products(fn_def, ns, names) -> bool:
    """Compute each such product once in ``fn_def``'s blocks (in place); whether any was."""
    changed = False
    for _, _, stmts in compat.statement_blocks(fn_def):
        changed |= _block(stmts, ns, names)
    return changed


def _block(stmts, ns, names) -> bool:
    changed = False
    k = 0
    while k < len(stmts):
        first = stmts[k]
        product = _first_computed(first) if _writes_nothing(first, ns) else None
        if product is None:
            k += 1
            continue
        operands = {n.id for n in (product.left, product.right) if isinstance(n, gast.Name)}
        key = gast.dump(product)
        later = []  # the statements after the first whose reads of the product are rewritten
        bound = _stored(first)
        for stmt in stmts[k + 1:]:
            if operands & bound or not _writes_nothing(stmt, ns):
                break
            if _occurs(stmt, key):
                if not _only_operand(stmt, key):
                    break
                later.append(stmt)
            bound = bound | _stored(stmt)
        if not later:
            k += 1
            continue
        t = names.temp()
        for stmt in [first] + later:
            _replace(stmt, key, t)
        stmts.insert(k, compat.assign(t, product))
        changed = True
        k += 2
    return changed


def _first_computed(stmt):
    """The product ``a op b`` (names and number literals) that ``stmt`` computes first, or None."""
    if not (isinstance(stmt, gast.Assign) and all(isinstance(t, gast.Name) for t in stmt.targets)):
        return None
    node = stmt.value
    while True:
        if isinstance(node, gast.BinOp):
            if isinstance(node.op, _OPS) and _atom(node.left) and _atom(node.right) \
                    and (isinstance(node.left, gast.Name) or isinstance(node.right, gast.Name)):
                return node
            if _atom(node.left):
                return None  # the left operand is read as it is: the first computation is this operator
            node = node.left
        elif isinstance(node, gast.UnaryOp):
            node = node.operand
        elif isinstance(node, gast.Call):
            if not (isinstance(node.func, gast.Name) or isinstance(node.func, gast.Attribute)
                    and isinstance(node.func.value, gast.Name)) or not node.args \
                    or isinstance(node.args[0], gast.Starred):
                return None
            node = node.args[0]
        else:
            return None


def _atom(node) -> bool:
    return isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) \
        or isinstance(node, gast.Constant) and type(node.value) in (int, float)


def _writes_nothing(stmt, ns) -> bool:
    """Whether ``stmt`` surely writes into no array: an assignment to names of arithmetic, reads, ufuncs and
    ``np.where`` (no keywords, no ``out`` among the arguments) and the runtime's readers; a comment."""
    if is_marker(stmt):
        return True
    if not (isinstance(stmt, gast.Assign) and all(isinstance(t, gast.Name) for t in stmt.targets)):
        return False
    for n in compat.walk(stmt.value):
        if isinstance(n, gast.Call):
            fn = _callee(n.func, ns)
            if n.keywords or any(isinstance(a, gast.Starred) for a in n.args) \
                    or not (isinstance(fn, np.ufunc) and len(n.args) <= fn.nin or fn is np.where
                            or any(fn is reader for reader in _READERS)):
                return False
        elif isinstance(n, (gast.NamedExpr, gast.Lambda, gast.Await, gast.Yield, gast.YieldFrom)):
            return False
    return True


def _stored(stmt) -> set:
    return {n.id for n in compat.walk(stmt) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}


def _occurs(stmt, key) -> bool:
    return any(isinstance(n, gast.BinOp) and gast.dump(n) == key for n in compat.walk(stmt))


def _only_operand(stmt, key) -> bool:
    """Whether every occurrence of the product in ``stmt`` is an operand of an operator (a new value is made)."""
    for n in compat.walk(stmt):
        if isinstance(n, gast.BinOp):
            parts = [n.left, n.right]
        elif isinstance(n, gast.UnaryOp):
            parts = [n.operand]
        elif isinstance(n, gast.Compare):
            parts = [n.left, *n.comparators]
        else:
            parts = [v for value in n.__dict__.values()
                     for v in (value if isinstance(value, list) else [value]) if isinstance(v, gast.AST)]
            if any(isinstance(p, gast.BinOp) and gast.dump(p) == key for p in parts):
                return False
    return True


def _replace(stmt, key, t) -> None:
    """Read ``t`` for every occurrence of the product in ``stmt``."""
    for n in compat.walk(stmt):
        for field, value in list(n.__dict__.items()):
            if isinstance(value, gast.BinOp) and gast.dump(value) == key:
                setattr(n, field, compat.name(t))
            elif isinstance(value, list):
                for i, v in enumerate(value):
                    if isinstance(v, gast.BinOp) and gast.dump(v) == key:
                        value[i] = compat.name(t)
