"""Saves of arrays written in loops, by what the reverse sweep reads of them (optimize=2).

``restored_unread`` finds the names whose restored value the reverse sweep
reads only for its shape (``shapes_on_stack`` then pushes the shape);
``overwritten_on_stack`` saves what an item or slice write overwrote, where
the old array is read, instead of the array.
"""

from __future__ import annotations

from ..ir import compat
from ..ir.tagged import POP, kind, pushed, shape_kept, shape_of
from ..ir.compat import gast


def overwritten_on_stack(fn_def, is_setitem, save, restore, keep_shape=None, meta_helpers=(), dtype_readers=()):
    """Push what a write overwrote, not the array: ``save(y, i)`` before ``y = setitem(y, i, v)``.

    ``t6 = setitem(y, i, t1); _stack.append(y); y = t6`` in a loop saved all
    of ``y`` for each write; the push becomes ``_stack.append(save(y, i))``
    (the values at ``i``) and every pop of ``y`` ``y = restore(y, <pop>)``,
    which writes them back into a copy of the ``y`` the reverse sweep holds
    then: the array right after the write, since the sweep undoes every
    assignment of ``y`` in reverse.  A name with any other save (its shape
    only, a pop of another form) keeps whole saves.  ``is_setitem(name)``
    says whether ``name`` is the runtime's ``setitem``; ``save`` and
    ``restore`` name the helpers.

    Where the reverse sweep reads the restored ``y`` only for its shape and
    dtype (``shape(y)``, and ``through_cast(g, y)``, the gradient of a write
    into an integer array: ``dtype_readers`` names it), nothing overwritten
    is kept: every push of ``y`` is ``keep_shape(y)`` (also one with other
    saves of ``y``) and the pops are left as they are (``meta_helpers``: the
    names of ``shape`` and ``size``).
    """
    found: dict = {}  # name -> [(push statement, index expression)]
    other_pushes = set()
    whole: dict = {}  # name -> every push statement that saves it whole

    def scan(stmts):
        for i, s in enumerate(stmts):
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list):
                    scan(inner)
            value = pushed(s)
            if value is None:
                continue
            if not isinstance(value, gast.Name):
                kept = shape_kept(value)
                if kept is not None:
                    other_pushes.add(kept.id)
                continue
            name, write = value.id, stmts[i - 1] if i else None
            whole.setdefault(name, []).append(s)
            after = stmts[i + 1] if i + 1 < len(stmts) else None
            if isinstance(write, gast.Assign) and len(write.targets) == 1 and isinstance(write.targets[0], gast.Name) \
                    and isinstance(write.value, gast.Call) and isinstance(write.value.func, gast.Name) \
                    and is_setitem(write.value.func.id) and len(write.value.args) == 3 and not write.value.keywords \
                    and isinstance(write.value.args[0], gast.Name) and write.value.args[0].id == name \
                    and isinstance(after, gast.Assign) and len(after.targets) == 1 \
                    and isinstance(after.targets[0], gast.Name) and after.targets[0].id == name \
                    and isinstance(after.value, gast.Name) and after.value.id == write.targets[0].id:
                found.setdefault(name, []).append((s, write.value.args[1]))
            else:
                other_pushes.add(name)
    scan(fn_def.body)
    pops: dict = {}
    odd: set = set()
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Assign) and any(kind(v) == POP for v in compat.walk(n.value)):
            names = {t.id for target in n.targets for t in compat.walk(target) if isinstance(t, gast.Name)}
            if len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) and kind(n.value) == POP:
                pops.setdefault(n.targets[0].id, []).append(n)
            else:
                odd |= names
    unread = restored_unread(fn_def, set(found) - odd, meta_helpers, dtype_readers) if keep_shape is not None \
        else set()
    for name in unread:  # every save of it, the write's and any other (before np.zeros rebinds it, say)
        for push in whole[name]:
            push.value.args = [shape_of(keep_shape, compat.name(name))]
    for name in set(found) - other_pushes - odd - unread:
        for push, index in found[name]:
            push.value.args = [compat.call(compat.name(save), [compat.name(name), compat.clone(index)])]
        for pop in pops.get(name, ()):
            pop.value = compat.call(compat.name(restore), [compat.name(name), pop.value])
    return fn_def


def restored_unread(fn_def, names, shape_helpers, dtype_readers=()) -> set:
    """Those of ``names`` whose every pop (``u = <pop>``) is followed, on every path, by no read of ``u``
    but ``shape(u)`` before ``u`` is bound again (or ``through_cast(g, u)``, which reads its dtype, where
    ``dtype_readers`` names it: the shape kept instead, ``Shaped``, has the dtype too).

    ``u[1:-1] = ...`` in a loop saves ``u`` for the reverse sweep, which reads
    the restored ``u`` only as ``shape(u)``; ``2 * u`` in the adjoint of the
    return reads the final ``u``, before any pop.  Such a save needs only the
    shape, so a loop of n writes keeps n shapes instead of n arrays.  A
    backward liveness from the first top-level statement that pops (loops to
    a fixed point); a statement it does not model there (``break``, ``try``,
    ...) keeps every save.
    """
    if not names:
        return set()
    live_after_pop: dict = {}
    unknown: set = set()

    def reads(node):
        inside = {id(n.args[0]) for n in compat.walk(node)
                  if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in shape_helpers
                  and len(n.args) == 1 and isinstance(n.args[0], gast.Name)}
        inside |= {id(n.args[1]) for n in compat.walk(node)
                   if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in dtype_readers
                   and len(n.args) == 2 and not n.keywords and isinstance(n.args[1], gast.Name)}
        return {n.id for n in compat.walk(node)
                if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in inside}

    def bound(target):
        if isinstance(target, gast.Name):
            return {target.id}
        if isinstance(target, (gast.Tuple, gast.List)):
            return set().union(*(bound(t) for t in target.elts))
        return set()

    class Unknown(Exception):
        pass

    def block(stmts, live):
        for stmt in reversed(stmts):
            live = statement(stmt, live)
        return live

    def statement(stmt, live):
        if isinstance(stmt, gast.Assign):
            killed = set().union(*(bound(t) for t in stmt.targets))
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) and kind(stmt.value) == POP:
                live_after_pop.setdefault(stmt.targets[0].id, set()).update(live)
            elif any(kind(n) == POP for n in compat.walk(stmt.value)):
                unknown.update(killed)  # restored in a form not followed here: keeps its saves
            return (live - killed) | reads(stmt)  # a subscript target reads its array: it is not killed
        if isinstance(stmt, gast.For):
            if stmt.orelse:
                raise Unknown
            head = set(live)
            while True:
                new = live | (block(stmt.body, head) - bound(stmt.target))
                if new <= head:
                    return head | reads(stmt.iter)
                head |= new
        if isinstance(stmt, gast.While):
            if stmt.orelse:
                raise Unknown
            head = set(live) | reads(stmt.test)
            while True:
                new = block(stmt.body, head)
                if new <= head:
                    return head
                head |= new
        if isinstance(stmt, gast.If):
            return block(stmt.body, live) | block(stmt.orelse, live) | reads(stmt.test)
        if isinstance(stmt, gast.Return):
            return reads(stmt)
        if isinstance(stmt, gast.Delete):
            return live - set().union(*(bound(t) for t in stmt.targets)) | reads(stmt)
        if isinstance(stmt, (gast.Expr, gast.AugAssign, gast.AnnAssign, gast.Pass, gast.Assert)):
            return live | reads(stmt)  # an augmented or annotated target is read, never killed: conservative
        raise Unknown  # break, continue, try, with, a nested def: not modelled

    body = fn_def.body
    first = next((i for i, stmt in enumerate(body) if any(kind(n) == POP for n in compat.walk(stmt))), len(body))
    try:
        block(body[first:], set())  # what runs before the first pop (the primal, its breaks) reads no popped value
    except Unknown:
        return set()
    return {n for n in names if n in live_after_pop and n not in live_after_pop[n] and n not in unknown}
