"""Gradients added at one index of one gradient are summed first, then added once.

A slice read several times in a step (S14 reads ``u[1:-1]`` five times for
its values) has as many adjoint statements ``du = du + scatter(dt_k,
shape(u), np.s_[1:-1])``, each a helper's call (``add_at`` at level 2) and
an add into ``du``'s slice.  A person adds the summed seeds once.  Where
two such statements name the same gradient ``du``, the same shape and the
same index (the same expressions), the earlier goes and the later adds
``scatter(dt_1 + dt_2, ...)``: ``scatter`` is linear in what it adds
(zeros with ``g`` written at ``i``, or ``np.add.at`` where ``i`` may repeat
a place), and a sum of gradients is one in any order (its rounding
aside).  Where each of ``dt_1`` and ``dt_2`` fits the index's slot as
numpy's write broadcasts, so does their sum; where one does not, neither
does the sum: an error either way.

Between the two statements nothing may rebind ``du``, a name of ``dt_1``,
of the shape or of the index, nor read ``du`` (which would miss ``dt_1``),
except other statements ``du = du + scatter(...)``, which only add into it
(any index: the sum is the same in any order); the shape and the index
make no call, so evaluated later they are the same values.  The adjoint is
in one block, before the level-2 passes write anything in place: only
rebinding changes a value here.

A sum the merge makes of ``a = np.where(c, 0, x)`` and ``b = np.where(c, y, 0)``
(the two operands of an upwind ``np.where``, after where_products.py),
``a + b``, is ``np.where(c, y, x)``, exactly for every float (NaN and
infinities included): at each place one term is ``0``, and ``v + 0`` is
``v`` (a ``-0.0`` becomes ``0.0``); the shapes broadcast the same, the
dtypes promote the same (the ``0`` is a Python int), and it raises where
the two would (``c``, ``x`` and ``y`` do not broadcast).  ``b``'s statement
becomes it, and ``a``'s goes, where ``c`` and ``x``'s names are not rebound
from ``a``'s statement to ``b``'s, and each of ``a``, ``b`` is read by the
sum alone.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from .accumulate import _scatter_added
from .inplace import _callee
from .item_updates import _names


def sum_scatters(fn_def, ns) -> bool:
    """Merge every such pair in ``fn_def``'s blocks; whether any was."""
    merged: list = []  # (block, the merged statement) for each merge
    for node, field, stmts in compat.statement_blocks(fn_def):
        kept = _block(stmts, ns, merged)
        if kept is not stmts:
            setattr(node, field, kept)
    if not merged:
        return False
    reads = Counter(n.id for n in compat.walk(fn_def) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load))
    for stmts, stmt in merged:
        call = _scatter_added(stmt, ns)
        call.args[0] = _shorter(call.args[0], stmts, stmts.index(stmt), reads, ns)
    for stmts in {id(stmts): stmts for stmts, _ in merged}.values():
        stmts[:] = [s for s in stmts if not isinstance(s, gast.Pass)] or [compat.make("Pass")]
    return True


def _block(stmts, ns, merged):
    """``stmts`` without the earlier statement of each pair (a new list; ``stmts`` itself where none)."""
    pending: dict = {}  # (du, shape, index) -> (position, its names: du's and those it must keep)
    gone: set = set()
    for k, stmt in enumerate(stmts):
        call = _scatter_added(stmt, ns)
        target = stmt.targets[0].id if call is not None else None
        if call is not None and not all(_pure(n, ns) for a in call.args[1:] for n in compat.walk(a)):
            call = None
        stored, loaded = _names(stmt)
        for key, (j, kept) in list(pending.items()):
            if call is not None and target == key[0]:
                if not stored & kept - {target}:
                    continue  # another add into du: only adds, reads du as its accumulator
            if stored & kept or key[0] in loaded:
                del pending[key]
        if call is None:
            continue
        key = (target, gast.dump(call.args[1]), gast.dump(call.args[2]))
        if key in pending:
            j = pending[key][0]
            earlier = _scatter_added(stmts[j], ns)
            call.args[0] = compat.make("BinOp", left=earlier.args[0], op=gast.Add(), right=call.args[0])
            gone.add(j)
            merged[:] = [(block, s) for block, s in merged if s is not stmts[j]] + [(stmts, stmt)]
        pending[key] = (k, {target} | {n.id for a in call.args for n in compat.walk(a) if isinstance(n, gast.Name)})
    if not gone:
        return stmts
    kept_stmts = [s for i, s in enumerate(stmts) if i not in gone]
    merged[:] = [(kept_stmts if block is stmts else block, s) for block, s in merged]
    return kept_stmts


def _shorter(value, stmts, at, reads, ns):
    """``value`` (a sum the merge made, read at ``stmts[at]``) with the module docstring's identity."""
    if not (isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)):
        return value
    value.left = _shorter(value.left, stmts, at, reads, ns)
    left, right = value.left, value.right
    if isinstance(left, gast.Name) and isinstance(right, gast.Name) and _one_where(left.id, right.id, stmts, at,
                                                                                  reads, ns):
        return compat.name(right.id)
    return value


def _one_where(a, b, stmts, at, reads, ns) -> bool:
    """Rewrite ``b = np.where(c, y, 0)`` into ``b = np.where(c, y, x)`` for ``a = np.where(c, 0, x)`` (or the
    mirror), both read only by the sum at ``stmts[at]``; whether it did."""
    if a == b or reads[a] != 1 or reads[b] != 1:
        return False
    first, second = _bound(a, stmts, at), _bound(b, stmts, at)
    if first is None or second is None or first >= second:
        return False
    one, other = _where(stmts[first].value, ns), _where(stmts[second].value, ns)
    if one is None or other is None or one[2] == other[2] or gast.dump(one[0]) != gast.dump(other[0]):
        return False
    if not isinstance(one[0], gast.Name) or _rebound({one[0].id} | _loads(one[1]), stmts, first + 1, second + 1) \
            or _rebound({a}, stmts, first + 1, at):
        return False
    taken, left = (other[1], one[1]) if other[2] else (one[1], other[1])
    stmts[second].value.args[1:] = [taken, left]
    stmts[first] = compat.make("Pass")  # it raises only where b's np.where now does: c, x and y do not broadcast
    return True


def _bound(name, stmts, at):
    """The position of ``name = ...``, the last statement binding ``name`` before ``stmts[at]``, where it binds
    only ``name``; else None."""
    for j in range(at - 1, -1, -1):
        stored, _ = _names(stmts[j])
        if name in stored:
            stmt = stmts[j]
            if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
                    and stored == {name}:
                return j
            return None
    return None


def _where(value, ns):
    """``(c, x, taken)`` for ``np.where(c, x, 0)`` (taken: True) or ``np.where(c, 0, x)``, else None."""
    if not (isinstance(value, gast.Call) and _callee(value.func, ns) is np.where and len(value.args) == 3
            and not value.keywords):
        return None
    c, yes, no = value.args
    if _zero(no) and not _zero(yes):
        return (c, yes, True)
    if _zero(yes) and not _zero(no):
        return (c, no, False)
    return None


def _pure(node, ns) -> bool:
    """Whether ``node`` is no call, or a call of a side-effect-free helper (``shape(u)``)."""
    return not isinstance(node, gast.Call) or isinstance(node.func, gast.Name) and node.func.id in ns.pure


def _zero(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) is int and node.value == 0


def _rebound(names, stmts, start, stop) -> bool:
    return any(_names(stmts[j])[0] & names for j in range(start, stop))


def _loads(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name)}
