"""An item write into an array only its name holds writes in place: ``rates[i] += v`` copies ``rates`` no more.

The normal form writes ``a[i] = v`` as ``t = setitem(a, i, v); a = t``,
which copies ``a`` (another name may hold the array, or a view of it, and
must not see the write).  In a loop over reactions that copy is most of
the primal's cost.  This pass writes ``t = setitem_into(a, i, v)`` instead
(``runtime.setitem_into``: into ``a`` itself where it is a writeable numpy
array, else the copy) where it proves, from the generated function, that
the array ``a`` holds is reached through ``a`` alone whenever the write
runs (``owns``):

* every binding of ``a`` makes a new array (``np.zeros(n)``, ``np.ones``,
  ``np.empty``, ``np.full``), binds ``None`` (before the loop) or is the pair ``t = setitem(a, i, v); a = t``
  itself, with ``t`` read nowhere else: ``a`` is no parameter, no loop
  target, never a copy of another name (``a = b`` shares ``b``'s array);
* every other read of ``a`` reads values only (arithmetic, a ufunc, ``@``,
  a reduction, ``shape(a)``), or is ``a[j]`` with as many integers as
  ``a`` has axes (the ranks given at call time prove it): a number, never
  a view.  A read that may keep the array or a view of it (``b = a``,
  ``a[1:]``, ``a[j]`` of a row, a push on the stack, a call, a return)
  makes the proof fail, and the write copies as before.

The value written is computed before the write, so reading ``a`` in it
(``rates[i] + v``) sees the old entries either way.

Two more cases prove it (a stencil, ``u = u0.copy()`` then
``u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])`` in a loop):

* ``t = a[s]`` (a view, maybe) where ``t`` is read for its values alone
  and is dead at every write (read again only after it is bound anew: the
  liveness of passes/accumulate.py); the write's own value may read it;
* ``a = p``, one binding outside any loop, of a name ``p`` (the parameter
  ``u0``, whose copy the optimiser reads through): it becomes
  ``a = copied(p)``, one copy a call where each write in the loop made one.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ...rules import _extra
from .accumulate import _Liveness
from .inplace import _callee, _fate, _parents

_MAKERS = (np.zeros, np.ones, np.empty, np.full)


def write_items_in_place(fn_def, ns, ranks):
    """Rewrite the proven item writes of ``fn_def`` (see the module's doc); ``ranks``: the Analysis' Ranks."""
    pairs = _pairs(fn_def, ns)
    if not pairs:
        return fn_def
    parent = _parents(fn_def)
    live = _Liveness(fn_def)
    into = None
    for array, writes in pairs.items():
        copy = _owns(fn_def, array, writes, parent, ns, ranks, live)
        if copy is False:
            continue
        into = into or ns.bind(runtime.setitem_into, "setitem_into")
        for call in writes:
            call.func = compat.name(into)
        if copy is not None:
            copy.value = compat.call(compat.name(ns.helper(runtime.copied)), [copy.value])
    return fn_def


def _pairs(fn_def, ns) -> dict:
    """``{a: [setitem call, ...]}`` for each ``t = setitem(a, i, v)`` followed by ``a = t``, ``t`` read once."""
    loads: dict = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1
    found: dict = {}
    for _, _, stmts in compat.statement_blocks(fn_def):
        for first, second in zip(stmts, stmts[1:]):
            call = _setitem_call(first, ns)
            if call is None or not (isinstance(second, gast.Assign) and len(second.targets) == 1
                                    and isinstance(second.targets[0], gast.Name)
                                    and isinstance(second.value, gast.Name)):
                continue
            target, array = first.targets[0].id, call.args[0].id
            if second.value.id == target and second.targets[0].id == array and loads.get(target) == 1:
                found.setdefault(array, []).append(call)
    return found


def _setitem_call(stmt, ns):
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.Call) and _callee(stmt.value.func, ns) is _extra.setitem \
            and len(stmt.value.args) == 3 and not stmt.value.keywords and isinstance(stmt.value.args[0], gast.Name):
        return stmt.value
    return None


def _owns(fn_def, array, writes, parent, ns, ranks, live):
    """False where the writes into ``array`` may not go in place; else the statement ``a = p`` to copy, or None."""
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    if array in params or array not in ranks.locals:
        return False
    written = {id(call.args[0]) for call in writes}
    write_stmts = [parent[id(call)] for call in writes]
    pair_stores = {id(stmt.targets[0]) for stmt in write_stmts}  # t of t = setitem(a, ...)
    in_loops = {id(n) for loop in compat.walk(fn_def) if isinstance(loop, (gast.For, gast.While))
                for n in compat.walk(loop)}
    copy = None
    for n in compat.walk(fn_def):
        if not isinstance(n, gast.Name) or n.id != array:
            continue
        if isinstance(n.ctx, gast.Del):
            continue
        if isinstance(n.ctx, gast.Store):
            if _made_or_paired(n, parent, ns, pair_stores):
                continue
            stmt = parent.get(id(n))
            if copy is not None or id(n) in in_loops or not _bound_to_a_name(stmt, n):
                return False
            copy = stmt  # a = p: copied once, before the writes
        elif id(n) not in written and not _reads_values(n, parent, ns, ranks) \
                and not _dead_view(n, parent, ns, live, write_stmts):
            return False
    if copy is not None and not any(id(stmt) in in_loops for stmt in write_stmts):
        return False  # a write outside loops copies once either way
    return copy


def _bound_to_a_name(stmt, store) -> bool:
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is store \
        and isinstance(stmt.value, gast.Name)


def _dead_view(name, parent, ns, live, write_stmts) -> bool:
    """``t = a[s]``: ``t``, maybe a view of ``a``, read for its values alone and dead after every write of ``a``."""
    up = parent.get(id(name))
    stmt = parent.get(id(up))
    if not (isinstance(up, gast.Subscript) and up.value is name and isinstance(stmt, gast.Assign)
            and stmt.value is up and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
        return False
    view = stmt.targets[0].id
    if any(view in live.after(write) for write in write_stmts):
        return False
    root = stmt
    while parent.get(id(root)) is not None:
        root = parent[id(root)]
    return all(_fate(n, parent, ns) == "used" for n in compat.walk(root)
               if isinstance(n, gast.Name) and n.id == view and isinstance(n.ctx, gast.Load))


def _made_or_paired(store, parent, ns, pair_stores) -> bool:
    """``a = np.zeros(n)`` (a new array), or ``a = t`` of a pair."""
    stmt = parent.get(id(store))
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and stmt.targets[0] is store):
        return False
    value = stmt.value
    if isinstance(value, gast.Call) and any(_callee(value.func, ns) is fn for fn in _MAKERS) \
            or isinstance(value, gast.Constant) and value.value is None:  # the generated code's rates = None
        return True
    if not isinstance(value, gast.Name):
        return False
    # a = t: only where t = setitem(a, ...) comes just before, in the same block
    holder = parent.get(id(stmt))
    for field in ("body", "orelse"):
        block = getattr(holder, field, None) or []
        at = next((k for k, s in enumerate(block) if s is stmt), None)
        if at:
            before = block[at - 1]
            return isinstance(before, gast.Assign) and id(before.targets[0]) in pair_stores \
                and before.targets[0].id == value.id
    return False


def _reads_values(name, parent, ns, ranks) -> bool:
    """Whether this read of the array takes values from it only, never a reference that may outlive it."""
    up = parent.get(id(name))
    if isinstance(up, gast.Subscript) and up.value is name:  # a number, or a slice read for its values
        return _scalar_index(up.slice, name.id, ranks) or _fate(up, parent, ns) == "used"
    return _fate(name, parent, ns) == "used"


def _scalar_index(index, array, ranks) -> bool:
    """``a[i]``, ``a[i, 0]``: as many integers (a Python int counter, an int literal) as ``a`` has axes."""
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    if ranks.rank(array) != len(parts):
        return False
    for part in parts:
        if isinstance(part, gast.Constant) and type(part.value) is int:
            continue
        if isinstance(part, gast.Name) and part.id in ranks.locals and ranks.value.get(part.id) == (0, True):
            continue
        return False
    return True
