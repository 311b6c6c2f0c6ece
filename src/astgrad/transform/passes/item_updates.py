"""The adjoint of ``a[i] = a[i] + v`` passes a's gradient through: no zero written, no value added back.

``rates[i] += k[i] * ...`` (``a[i] op= v`` reads the item, then writes it)
has three adjoint statements for ``a``:

* ``da = setitem(g, i, 0)``: the write's, a copy of ``g`` zeroed at ``i``;
* ``w = written(g, i)``: the gradient of the value written, ``g[i]`` (with
  numpy's last write kept where ``i`` names a place twice);
* ``da = da + scatter(w, shape(a), i)``: the read's, the item's gradient,
  which ``a[i] + v`` passes on unchanged, added back at ``i``.

Together they give ``g`` itself, whatever the index: zeros at ``i`` plus
``g`` at ``i`` as the write kept it, and ``0 + x`` is ``x`` exactly.  So the
first becomes ``da = g`` and the third goes: a loop over reactions no longer
copies the gradient and adds into it on every trip.

The statements must be those three, in one block, in that order, with
nothing between them that rebinds ``da``, ``g``, ``w`` or a name of the
index, or reads ``da`` (which would see the zeros), but other gradients
added into ``da`` the same way (``y[i] = y[i] + y[i] * v`` reads the item
twice: a sum, in any order); ``w`` is the written
value's gradient as the rule gives it (a write into an array of integers
keeps ``through_cast``, and does not match).  Before the level-2 passes,
which write gradients in place: the adjoint here binds new values only.
After it ``da`` is ``g``'s array, and ``w`` may be a view of it (a slice);
those passes write into an array only where no other name reaches it:
``written(g, i)`` passes ``g`` on (inplace.py), and accumulate.py adds into
``da`` in place only where no such view is live, so neither adds into
``da`` while ``w`` may read it.
"""

from __future__ import annotations

from ..ir import compat
from ..ir.compat import gast
from ...rules import _extra
from .accumulate import _scatter_added
from .cleanup import propagate_copies
from .inplace import _callee


def pass_items_through(fn_def, ns) -> bool:
    """Rewrite every such triple in ``fn_def``'s blocks; whether any was found.

    Where ``g`` is the copy ``g = da`` just before (``dt14 = drates``), the
    first statement goes too, and ``g`` is read through (cleanup.propagate_copies).
    """
    copies: set[str] = set()
    for node, field, stmts in compat.statement_blocks(fn_def):
        kept = _through(stmts, ns, copies)
        if kept is not stmts:
            setattr(node, field, kept)
    if copies:
        propagate_copies(fn_def, copies)
    return bool(copies)


def _through(stmts, ns, copies):
    """``stmts`` with each triple rewritten (a new list), or ``stmts`` itself where there is none; the names
    ``g`` of the triples go into ``copies``."""
    gone: set[int] = set()
    for j, first in enumerate(stmts):
        zeroed = _call_of(first, _extra.setitem, 3, ns)
        if zeroed is None or not _zero(zeroed.args[2]) or not isinstance(zeroed.args[0], gast.Name):
            continue
        d, g, index = first.targets[0].id, zeroed.args[0].id, zeroed.args[1]
        if d == g:
            continue
        fixed = {g} | {n.id for n in compat.walk(index) if isinstance(n, gast.Name)}
        w = None
        for k in range(j + 1, len(stmts)):
            stmt = stmts[k]
            value = _call_of(stmt, _extra.written, 2, ns)
            if w is None and value is not None and _same(value.args[0], zeroed.args[0]) \
                    and _same(value.args[1], index):
                w = stmt.targets[0].id
                if w in fixed or w == d:
                    break
                continue
            added = _scatter_added(stmt, ns)
            if added is not None and stmt.targets[0].id == d and (w is None or not _same(added.args[0], compat.name(w))
                                                                 or not _same(added.args[2], index)):
                if fixed & _names(stmt)[0]:
                    break
                continue  # another gradient added into da (the item read twice): it adds the same either way
            if w is not None and added is not None and stmt.targets[0].id == d:
                before = stmts[j - 1] if j else None
                if isinstance(before, gast.Assign) and _same(before.value, compat.name(d)) \
                        and len(before.targets) == 1 and _same(before.targets[0], compat.name(g, store=True)):
                    gone.add(id(first))  # g = da; da = g
                else:
                    first.value = compat.name(g)
                gone.add(id(stmt))
                copies.add(g)
                break
            stored, loaded = _names(stmt)
            if stored & (fixed | {d} | ({w} if w else set())) or d in loaded:
                break
    return [s for s in stmts if id(s) not in gone] if gone else stmts


def _call_of(stmt, fn, arity, ns):
    """The call in ``x = fn(...)`` of ``arity`` positional arguments (``x`` a name), else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.Call) and not stmt.value.keywords and len(stmt.value.args) == arity \
            and _callee(stmt.value.func, ns) is fn:
        return stmt.value
    return None


def _zero(node) -> bool:
    return isinstance(node, gast.Constant) and type(node.value) in (int, float) and node.value == 0


def _same(a, b) -> bool:
    return gast.dump(a) == gast.dump(b)


def _names(stmt):
    """The names ``stmt`` (nested statements too) binds, and those it reads."""
    stored: set[str] = set()
    loaded: set[str] = set()
    for n in compat.walk(stmt):
        if isinstance(n, gast.Name):
            (loaded if isinstance(n.ctx, gast.Load) else stored).add(n.id)
    return stored, loaded
