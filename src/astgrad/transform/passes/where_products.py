"""The adjoint of ``np.where(c, a * x, b * y)`` multiplies inside one ``np.where``: no mask, no cleaning.

``np.where``'s rule gives the operand taken where ``c`` holds the gradient
``w = np.where(c, g, 0)`` and, for its structural zeros (structural.py),
the mask ``m = unselected(w, c, True, None)`` (``~c``, of ``w``'s shape);
the rule of ``a * x`` before it then gives ``cleaned(m, w * x)``: ``w * x``
with zeros where ``c`` does not hold, whatever ``x`` is there (an infinite
``x`` would make ``0 * x`` NaN).  Where ``x`` surely has ``c``'s shape
(same_shapes.py, or a number), that is ``np.where(c, g * x, 0)`` exactly:
``g * x`` where ``c`` holds, a zero of its dtype elsewhere, of the shape
``w * x`` has (which is the mask's, so ``cleaned`` did clean); likewise
``np.where(c, 0, g)`` with ``unselected(w, c, False, None)``.  An upwind
step (S14) loses two ``np.where``, two masks and four ``cleaned`` a trip.

The three statements must be in one block, in that order, with nothing
between them that rebinds ``c``, ``g``, ``w`` or ``m``; ``x`` is read where
``cleaned`` is.  Where ``x``'s shape is not proven (it might broadcast
``w * x`` past the mask's shape, where ``cleaned`` leaves the product as
it is) the code stays.  ``w`` and ``m``, read no more, are dead code.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from ..runtime import structural
from .inplace import _callee


def select_products(fn_def, shapes, ns) -> bool:
    """Rewrite every such ``cleaned`` in ``fn_def``'s blocks; whether any was.

    A mask no statement reads any more goes, and then its ``w`` if nothing reads it either:
    ``unselected(w, c, taken, None)`` of ``w = np.where(c, ...)`` cannot raise (``c`` broadcasts to ``w``'s
    shape, and np.where read it as booleans), and ``np.where(c, g * x, 0)`` raises wherever
    ``np.where(c, g, 0)`` would (``x`` has ``c``'s shape); dead code, which keeps a call that may raise,
    would keep both.
    """
    made: dict = {}  # id(m = unselected(...)) -> (m, (id(w = np.where(...)), w)), for every mask matched
    changed = False
    for _, _, stmts in compat.statement_blocks(fn_def):
        changed |= _block(stmts, shapes, ns, made)
    if not changed:
        return False
    unread = _unread(fn_def, {key: m for key, (m, _) in made.items()})
    _drop(fn_def, unread)
    _drop(fn_def, _unread(fn_def, dict(w for key, (_, w) in made.items() if key in unread)))
    return True


def _unread(fn_def, made) -> set:
    """The keys of ``made`` (id of a statement -> the name it binds) whose name no statement reads."""
    read = {n.id for n in compat.walk(fn_def) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    return {key for key, name in made.items() if name not in read}


def _drop(fn_def, unread) -> None:
    for node, field, stmts in compat.statement_blocks(fn_def):
        if any(id(s) in unread for s in stmts):
            setattr(node, field, [s for s in stmts if id(s) not in unread] or [compat.make("Pass")])


def _block(stmts, shapes, ns, made) -> bool:
    wheres: dict = {}  # w -> (c, g, taken) for w = np.where(c, g, 0) (taken) or np.where(c, 0, g)
    where_stmts: dict = {}  # w -> its statement
    used: set = set()  # the masks a rewrite read
    mine: dict = {}  # made's entries for this block
    masks: dict = {}  # m -> w for m = unselected(w, c, taken, None) of such a w
    changed = False
    for stmt in stmts:
        if isinstance(stmt, (gast.For, gast.While, gast.If, gast.Try, gast.With)):
            wheres.clear()
            masks.clear()
            continue
        for n in compat.walk(stmt):
            if isinstance(n, gast.Call) and _callee(n.func, ns) is structural.cleaned:
                found = _rewritten(n, wheres, masks, shapes, ns)
                if found is not None:
                    used.add(n.args[0].id)
                    n.func, n.args, n.keywords = found.func, found.args, found.keywords
                    changed = True
        bound = {n.id for n in compat.walk(stmt) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
        for w in [w for w, (c, g, _) in wheres.items() if bound & {w, c, g}]:
            del wheres[w]
        for m in [m for m, w in masks.items() if m in bound or w not in wheres]:
            del masks[m]
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
            target = stmt.targets[0].id
            where = _where(stmt.value, ns)
            if where is not None and target not in where[:2]:
                wheres[target] = where
                where_stmts[target] = stmt
            mask = _mask(stmt.value, ns)
            if mask is not None and mask[0] in wheres and wheres[mask[0]][0] == mask[1] \
                    and wheres[mask[0]][2] == mask[2]:
                masks[target] = mask[0]
                mine[id(stmt)] = (target, (id(where_stmts[mask[0]]), mask[0]))
    made.update((key, found) for key, found in mine.items() if found[0] in used)  # the others are left as they are
    return changed


def _where(value, ns):
    """``(c, g, taken)`` for ``np.where(c, g, 0)`` (taken: True) or ``np.where(c, 0, g)`` of names c and g."""
    if not (isinstance(value, gast.Call) and _callee(value.func, ns) is np.where and len(value.args) == 3
            and not value.keywords and all(isinstance(a, gast.Name) or _zero(a) for a in value.args)
            and isinstance(value.args[0], gast.Name)):
        return None
    _, yes, no = value.args
    if isinstance(yes, gast.Name) and _zero(no):
        return (value.args[0].id, yes.id, True)
    if isinstance(no, gast.Name) and _zero(yes):
        return (value.args[0].id, no.id, False)
    return None


def _mask(value, ns):
    """``(w, c, taken)`` for ``unselected(w, c, taken, None)`` of names and a literal ``taken``."""
    if not (isinstance(value, gast.Call) and _callee(value.func, ns) is structural.unselected
            and len(value.args) == 4 and not value.keywords):
        return None
    w, c, taken, before = value.args
    if isinstance(w, gast.Name) and isinstance(c, gast.Name) and isinstance(taken, gast.Constant) \
            and type(taken.value) is bool and isinstance(before, gast.Constant) and before.value is None:
        return (w.id, c.id, taken.value)
    return None


def _rewritten(call, wheres, masks, shapes, ns):
    """``np.where(c, g * x, 0)`` (or ``np.where(c, 0, g * x)``) for ``cleaned(m, w * x)``; else None."""
    if len(call.args) != 2 or call.keywords or not isinstance(call.args[0], gast.Name) \
            or call.args[0].id not in masks:
        return None
    w = masks[call.args[0].id]
    product = call.args[1]
    if not (isinstance(product, gast.BinOp) and isinstance(product.op, gast.Mult)):
        return None
    c, g, taken = wheres[w]
    if isinstance(product.left, gast.Name) and product.left.id == w:
        other, left = product.right, True
    elif isinstance(product.right, gast.Name) and product.right.id == w:
        other, left = product.left, False
    else:
        return None
    if not (_number(other) or isinstance(other, gast.Name) and other.id != w
            and shapes.holds_shape_of(other.id, c, strict=True)):
        return None
    factor = compat.make("BinOp", left=compat.name(g) if left else other, op=gast.Mult(),
                         right=other if left else compat.name(g))
    zero = compat.const(0)
    np_where = compat.attr(compat.name(ns.bind(np, "np")), "where")
    return compat.call(np_where, [compat.name(c), factor, zero] if taken else [compat.name(c), zero, factor])


def _zero(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) in (int, float) and node.value == 0


def _number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)
