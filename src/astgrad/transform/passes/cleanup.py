"""The last passes over a generated function: what a careful person would tidy by hand.

``drop_unread_saves`` stops saving values no adjoint statement reads any
more; ``propagate_copies`` reads ``b`` where the adjoint wrote ``a = b``
(``rename_into_returned`` names ``b`` ``a`` where ``a`` is returned);
``unstack`` keeps values saved outside every loop in locals instead of on
``_stack``; ``release`` deletes each array after its last read, so the
generated gradient holds no more memory than it needs.
"""

from __future__ import annotations

from ..ir import tagged, compat
from ..ir.tagged import is_pop, popped_into, pushed, shape_kept
from ..ir.compat import gast
from ..ir.trees import is_marker
from ..ir.trees import rewrite


def drop_unread_saves(fn_def, adjoint):
    """Stop saving a name no ``adjoint`` statement reads: its pushes and its pops go together.

    The analysis saves what the rules read; a group of elementwise operations
    written as one expression (``fusion``) may read less, which leaves
    ``_stack.append(t4)`` / ``t4 = _stack.pop()`` pairs whose value nothing uses.
    Every pop of ``t4`` matches a push of ``t4``, so dropping all of both
    keeps the other pushes and pops matched.
    """
    loads = {n.id for stmt in adjoint for n in compat.walk(stmt)
             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    popped = set()
    for stmt in adjoint:
        for n in compat.walk(stmt):
            name = popped_into(n)
            if name is not None:
                popped.add(name)
    unread = popped - loads
    if not unread:
        return fn_def
    return drop_saves_of(fn_def, unread)


def drop_saves_of(fn_def, names):
    """``fn_def`` without the pushes of ``names`` (``_stack.append(t4)``, ``_stack.append(only_shape(t4))``)
    and their pops (``t4 = _stack.pop()``), in every block; a block left empty holds ``pass``."""

    def keep(stmt):
        if popped_into(stmt) in names:
            return False
        value = pushed(stmt)
        value = shape_kept(value) or value  # _stack.append(only_shape(t4))
        return not (isinstance(value, gast.Name) and value.id in names)

    def sweep(stmts):
        out = []
        for s in stmts:
            if not keep(s):
                continue
            for _, field, inside in compat.own_blocks(s):
                setattr(s, field, sweep(inside) or [compat.make("Pass")])
            out.append(s)
        return out
    fn_def.body = sweep(fn_def.body)
    return fn_def


def release(fn_def, keep=(), numbers=(), small=()):
    """``del`` each array after the top-level statement that last reads it.

    A Python local holds its array until the function returns; a gradient
    written by hand drops (or overwrites) an array once it is used up, and
    so does the generated code.  Only names a top-level assignment binds
    before that statement are released (they are surely bound there), never
    ``keep`` (the parameters and the stack).  Names that surely hold numbers
    (computed from ``numbers``, the float seed, and literals) or only a
    shape (assigned a call of one of ``small``: ``size`` and ``only_shape``,
    or ``Shaped(...)`` where its operands are floats)
    are left alone, as are names last copied (``dx = dy``) or only assigned,
    and names last read by the last statement that computes anything:
    freeing them saves nothing.
    """
    body = fn_def.body
    last: dict = {}
    bound: dict = {}
    values: dict = {}
    loaded: list = []
    for i, s in enumerate(body):
        loaded.append(set())
        for n in compat.walk(s):
            if isinstance(n, gast.Name):
                last[n.id] = i
                if isinstance(n.ctx, gast.Load):
                    loaded[i].add(n.id)
        for t, value in _assignments(s):
            bound.setdefault(t, i)
            values.setdefault(t, []).append(value)
    scalar = surely_numbers(body, numbers, small[:1])
    tiny = {name for name, assigned in values.items()  # Shaped(...) if floats(...) else x + v: a shape on floats
            if assigned and all(isinstance(v, gast.IfExp) and _call_of(v.body, small) or _call_of(v, small)
                                or isinstance(v, gast.Name) and v.id in small for v in assigned)}
    # past the last statement that computes anything, the return frees everything anyway
    end = len(body)
    while end and (isinstance(body[end - 1], gast.Return) or _copy_of(body[end - 1]) is not None
                   or is_marker(body[end - 1])):
        end -= 1
    after: dict = {}
    for name, i in last.items():
        if name in keep or name in scalar or name in tiny or name not in bound \
                or bound[name] > i or i >= end - 1 or name not in loaded[i] or _copies(body[i], name):
            continue
        after.setdefault(i, []).append(name)
    if not after:
        return fn_def
    out = []
    for i, s in enumerate(body):
        out.append(s)
        if i in after:
            out.append(tagged.release(sorted(after[i])))
    for node in out:
        if tagged.kind(node) == tagged.RELEASE:
            for t in node.targets:
                t.ctx = gast.Del()
    fn_def.body = out
    return fn_def


def _call_of(value, names) -> bool:
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id in names


def surely_numbers(body, numbers=(), counts=()):
    """Names every top-level assignment of ``body`` gives a number: from literals, ``numbers``
    (the float seed) and calls of ``counts`` (``size``); none is assigned inside a block."""
    values: dict = {}
    for s in body:
        for t, value in _assignments(s):
            values.setdefault(t, []).append(value)
    nested = {n.id for s in body if isinstance(s, (gast.For, gast.While, gast.If)) for n in compat.walk(s)
              if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
    scalar = set(numbers)
    changed = True
    while changed:
        changed = False
        for name, assigned in values.items():
            if name not in scalar and name not in nested and all(
                    value is not None and numeric(value, scalar, counts) for value in assigned):
                scalar.add(name)
                changed = True
    return scalar


def _assignments(stmt):
    """``(name, value)`` for every name ``stmt`` binds at its top level (value None when not one expression)."""
    if isinstance(stmt, gast.Assign):
        for t in stmt.targets:
            if isinstance(t, gast.Name):
                yield t.id, stmt.value
            else:
                for n in getattr(t, "elts", []):
                    if isinstance(n, gast.Name):
                        yield n.id, None


def numeric(value, scalar, counts=()) -> bool:
    """An expression of literals, names holding numbers and ``size(...)`` calls: a number itself."""
    if isinstance(value, gast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if isinstance(value, gast.Name):
        return value.id in scalar
    if isinstance(value, gast.UnaryOp):
        return numeric(value.operand, scalar, counts)
    if isinstance(value, gast.BinOp):
        return numeric(value.left, scalar, counts) and numeric(value.right, scalar, counts)
    return isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id in counts


def _copies(stmt, name) -> bool:
    """``stmt`` is ``other = name``: the value lives on under another name."""
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Name) and stmt.value.id == name


def propagate_copies(fn_def, candidates):
    """Read ``b`` where the adjoint copied it (``dt4 = dy``) and drop the copy.

    ``a = b`` for a name ``a`` of ``candidates`` (adjoint temporaries)
    stored only there: when every read of ``a`` comes later in the same
    block and ``b`` is not assigned before the last of them (that statement
    may assign it: its value is read first, and ``b = a`` becomes ``b = b``,
    which goes), the reads of ``a`` become reads of ``b``.
    """
    stores: dict = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    loads: dict = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1

    def block(stmts):
        out = list(stmts)
        i = 0
        while i < len(out):
            s = out[i]
            for _, field, inside in compat.own_blocks(s):
                setattr(s, field, block(inside))
            copy = _copy_of(s)
            if copy is not None and copy[0] in candidates and stores.get(copy[0]) == 2 and copy[0] != copy[1] \
                    and (moved := _rebinds_from(out[i + 1:i + 2], *copy)):  # a = b; a = f(a) becomes a = f(b)
                stores[copy[0]] = 1
                loads[copy[0]] -= moved
                loads[copy[1]] = loads.get(copy[1], 0) + moved
                del out[i]
                continue
            if copy is not None and copy[0] in candidates and stores.get(copy[0]) == 1 and copy[0] != copy[1]:
                if _propagate(out, i, *copy, loads):
                    del out[i]
                    continue
            i += 1
        return [s for s in out if not ((c := _copy_of(s)) and c[0] == c[1])] or [compat.make("Pass")]
    fn_def.body = block(fn_def.body)
    return fn_def


def rename_into_returned(fn_def, candidates):
    """``a = b`` before ``return a`` with ``b`` read no more: ``b`` is named ``a`` from the start, the copy goes.

    ``dy = 6 * dz * y; dx = dy; return dx`` becomes ``dx = 6 * dz * y;
    return dx``.  Only for ``b`` among ``candidates`` (names the adjoint
    assigns), not a parameter, never in a comprehension or lambda (a scope
    of its own), and an ``a`` that nothing else names: renaming ``b`` is
    then a change of name alone.
    """
    body = fn_def.body
    if not body or not isinstance(body[-1], gast.Return):
        return fn_def
    returned = {n.id for n in compat.walk(body[-1]) if isinstance(n, gast.Name)}
    params = {a.id for a in compat.walk(fn_def.args) if isinstance(a, gast.Name)}
    scoped = {n.id for s in body for node in compat.walk(s) if isinstance(node, (gast.Lambda, gast.ListComp, gast.SetComp,
                                                                                 gast.DictComp, gast.GeneratorExp))
              for n in compat.walk(node) if isinstance(n, gast.Name)}
    counts: dict = {}
    for s in body:
        for n in compat.walk(s):
            if isinstance(n, gast.Name):
                counts[n.id] = counts.get(n.id, 0) + 1
    renamed: dict = {}
    for j, s in enumerate(body[:-1]):
        copy = _copy_of(s)
        if copy is None:
            continue
        a, b = copy
        later = sum(1 for t in body[j + 1:] for n in compat.walk(t) if isinstance(n, gast.Name) and n.id == b)
        if a in returned and a != b and b in candidates and b not in params | scoped | returned | set(renamed) \
                and a not in params | scoped and not later \
                and counts.get(a, 0) == 1 + sum(1 for n in compat.walk(body[-1]) if isinstance(n, gast.Name) and n.id == a):
            renamed[b] = a
    if not renamed:
        return fn_def
    for s in body:
        for n in compat.walk(s):
            if isinstance(n, gast.Name) and n.id in renamed:
                n.id = renamed[n.id]
    fn_def.body = [s for s in body if not ((c := _copy_of(s)) and c[0] == c[1])]
    return fn_def


def _copy_of(stmt) -> tuple[str, str] | None:
    """``(a, b)`` for ``a = b`` between two names."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.Name):
        return stmt.targets[0].id, stmt.value.id
    return None


def _rebinds_from(following, a, b) -> int:
    """How many reads of ``a`` ``following`` has, when it is one ``a = f(a)``; those then read ``b``.

    The value is computed before ``a`` is bound again, so it reads the copy,
    which is ``b``: ``b`` is not assigned in between.
    """
    if len(following) != 1:
        return 0
    stmt = following[0]
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
            and stmt.targets[0].id == a):
        return 0
    reads = [n for n in compat.walk(stmt.value) if isinstance(n, gast.Name) and n.id == a]
    if not reads or any(isinstance(n, (gast.Lambda, gast.NamedExpr)) or _comprehension(n)
                        for n in compat.walk(stmt.value)):
        return 0
    for n in reads:
        n.id = b
    return len(reads)


def _comprehension(node) -> bool:
    return isinstance(node, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp))


def _propagate(stmts, i, a, b, loads) -> bool:
    found, last = 0, None
    for j in range(i + 1, len(stmts)):
        here = sum(1 for n in compat.walk(stmts[j]) if isinstance(n, gast.Name) and n.id == a
                   and isinstance(n.ctx, gast.Load))
        if here:
            found += here
            last = j
    if last is None or found != loads.get(a, 0):
        return False  # read elsewhere (another block, a loop around this one): keep the copy
    for j in range(i + 1, last + 1):
        s = stmts[j]
        if _copy_of(s) == (b, a):
            continue  # b = a becomes b = b
        assigns_b = any(isinstance(n, gast.Name) and n.id == b and not isinstance(n.ctx, gast.Load)
                        for n in compat.walk(s))
        if assigns_b and (j < last or not isinstance(s, gast.Assign)):
            return False
    for j in range(i + 1, last + 1):
        for n in compat.walk(stmts[j]):
            if isinstance(n, gast.Name) and n.id == a and isinstance(n.ctx, gast.Load):
                n.id = b
    return True


def unstack(fn_def):
    """Keep what the function's top level saves in locals, not on ``_stack``.

    A value pushed outside every loop is popped outside every loop, once:
    the k-th such pop from the end matches the k-th such push (pushes and
    pops inside loops and calls balance among themselves).  Each pair
    becomes a read of the pushed name when nothing assigns it in between
    (``if t1:`` instead of ``if _stack.pop():``), or a local
    ``_saved_n = value``.  Without pushes left, ``_stack = []`` goes too.
    """
    body = fn_def.body
    if any(isinstance(s, gast.While) and any(is_pop(n) for n in compat.walk(s.test)) for s in body):
        return fn_def  # popped once per trip
    pushes = [i for i, s in enumerate(body) if pushed(s) is not None]
    pops = [(i, n) for i, s in enumerate(body) for n in _top_level_pops(s)]
    if not pushes or len(pushes) != len(pops):
        return fn_def
    taken = {n.id for n in compat.walk(fn_def) if isinstance(n, gast.Name)}
    replace = {}
    remove = set()
    for push, (pop_at, pop) in zip(pushes, reversed(pops)):
        if pop_at <= push:
            return fn_def
        value = pushed(body[push])
        between = [n for s in body[push + 1:pop_at] for n in compat.walk(s)]
        if isinstance(value, gast.Name) and not any(
                isinstance(n, gast.Name) and n.id == value.id and not isinstance(n.ctx, gast.Load) for n in between):
            remove.add(push)
            replace[id(pop)] = compat.name(value.id)
        else:
            k = 1
            while f"_saved{k}" in taken:
                k += 1
            taken.add(f"_saved{k}")
            body[push] = compat.assign(f"_saved{k}", value)
            replace[id(pop)] = compat.name(f"_saved{k}")
    bare = {i for i, s in enumerate(body) if isinstance(s, gast.Expr) and id(s.value) in replace}
    fn_def.body = [s for i, s in enumerate(body) if i not in remove and i not in bare]
    for s in fn_def.body:
        rewrite(s, lambda node: replace.get(id(node)))
    return fn_def


def _top_level_pops(stmt):
    """``_stack.pop()`` calls ``stmt`` makes once: not inside the body of a loop or branch."""
    if isinstance(stmt, (gast.For, gast.While, gast.If)):
        head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
        return [] if isinstance(stmt, gast.While) else [n for n in compat.walk(head) if is_pop(n)]
    return [n for n in compat.walk(stmt) if is_pop(n)]
