"""A slice read again before anything can write or rebind its array reads the view already made.

S14's step reads ``u[1:-1]`` six times (``t1 = u[1:-1]`` ... ``t14 =
u[1:-1]``), each a new view of the same memory.  Where ``t1 = u[S]`` and a
later ``t4 = u[S]`` (the same name ``u``, the same index of literal slices
and ints) are in one block with nothing between that rebinds ``u`` or
``t1``, or could write into an array, the second is ``t4 = t1``: a view of
a numpy array is its memory, so ``t1`` and a new view read the same
numbers, now and after any later write into ``u`` (which changes both); a
copy (a Dask array, a list's slice) has the values ``u[S]`` had, and
nothing between changed them.  ``t4`` keeps its own saves and pops: only
the value bound changes (to one equal to it), so the reverse sweep reads
what it read.  Where ``t4`` is neither saved nor read but later in the
block, with ``t1`` not bound anew before its last read, the code reads
``t1`` there and ``t4 = t1`` goes: the item-write passes then see ``t1``
read for its values, not bound to another name (which would end their
proofs and make the write copy).

"Could write into an array": any call but a ufunc or ``np.where`` (no
keywords, so no ``out=``) and the stack's ``append``, any store into an
item or attribute, any augmented assignment; everything else between is
an assignment to a name of arithmetic on names and reads.  Both names are
temporaries the transform made.  It runs after ``read_through_copies``,
which would read ``t1`` where ``t4`` is and so move the saves' values.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from .inplace import _callee
from .written_items import _literal_places


def share_slice_views(fn_def, ns, temps) -> bool:
    """Rewrite every such read in ``fn_def``'s blocks; whether any was."""
    shared: list = []  # (block, t4 = t1) for each read rewritten
    for _, _, stmts in compat.statement_blocks(fn_def):
        _block(stmts, ns, temps, shared)
    if not shared:
        return False
    stores: Counter = Counter()
    loads: Counter = Counter()
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name):
            (loads if isinstance(n.ctx, gast.Load) else stores)[n.id] += 1
    for stmts, stmt in shared:
        _read_through(stmts, stmt, stores, loads)
    return True


def _read_through(stmts, stmt, stores, loads) -> None:
    """Read ``t1`` where ``t4`` is and drop ``t4 = t1`` where ``t4`` is bound there alone (never saved nor
    popped) and read only later in the block, with ``t1`` bound anew nowhere up to its last read; then the
    item-write passes see ``t1`` read for its values, as before, not bound to another name."""
    t4, t1 = stmt.targets[0].id, stmt.value.id
    at = stmts.index(stmt)
    if stores[t4] != 1:
        return
    reading = [j for j in range(at + 1, len(stmts)) for n in compat.walk(stmts[j])
               if isinstance(n, gast.Name) and n.id == t4 and isinstance(n.ctx, gast.Load)]
    if len(reading) != loads[t4] or any(isinstance(n, gast.Name) and n.id == t1 and not isinstance(n.ctx, gast.Load)
                                        for j in range(at + 1, (reading[-1] if reading else at) + 1)
                                        for n in compat.walk(stmts[j])):
        return
    for j in set(reading):
        for n in compat.walk(stmts[j]):
            if isinstance(n, gast.Name) and n.id == t4:
                n.id = t1
    loads[t1] += loads[t4]
    del stmts[at]


def _block(stmts, ns, temps, shared) -> None:
    seen: dict = {}  # dump of u[S] -> (u, the temporary bound to it)
    for stmt in stmts:
        read = _slice_read(stmt, temps)
        if read is not None:
            target, base, key = read
            if key in seen:
                stmt.value = compat.name(seen[key][1])
                shared.append((stmts, stmt))
        if not _writes_nothing(stmt, ns):
            seen.clear()
            continue
        bound = {n.id for n in compat.walk(stmt) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
        for k in [k for k, (u, t) in seen.items() if bound & {u, t}]:
            del seen[k]
        if read is not None and read[2] not in seen and target != base:
            seen[read[2]] = (base, target)


def _slice_read(stmt, temps):
    """``(t, u, key)`` for ``t = u[S]`` of a temporary ``t``, a name ``u`` and literal slices and ints ``S``."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
            and stmt.targets[0].id in temps):
        return None
    value = stmt.value
    if not (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Name) and _literal_places(value.slice)):
        return None
    return stmt.targets[0].id, value.value.id, gast.dump(value)


def _writes_nothing(stmt, ns) -> bool:
    """Whether ``stmt`` surely writes into no array: see the module docstring."""
    if isinstance(stmt, gast.Expr):
        call = stmt.value
        return isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and call.func.attr == "append" \
            and isinstance(call.func.value, gast.Name) and call.func.value.id == ns.stack \
            and all(_writes_nothing_in(a, ns) for a in call.args)
    if not (isinstance(stmt, gast.Assign) and all(isinstance(t, gast.Name) for t in stmt.targets)):
        return False
    return _writes_nothing_in(stmt.value, ns)


def _writes_nothing_in(expr, ns) -> bool:
    for n in compat.walk(expr):
        if isinstance(n, gast.Call):
            fn = _callee(n.func, ns)
            if n.keywords or not (isinstance(fn, np.ufunc) or fn is np.where):
                return False
        elif isinstance(n, (gast.NamedExpr, gast.Lambda, gast.Await, gast.Yield, gast.YieldFrom)):
            return False
    return True
