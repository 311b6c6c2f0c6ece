"""Remove what the generated function computes but never uses.

Dead-store elimination over a generated function: an assignment to a name
that nothing reads is dropped when its value has no side effects (a pop
from the stack stays, as a bare ``_stack.pop()``); ``if`` statements left
with empty branches collapse; reverse loops with empty bodies disappear.
Runs to a fixed point, so chains of dead temporaries go too.

``unbind`` then writes a primal temporary that is read once, by the next
statement, into that statement: ``h = np.tanh(t2 + b1)`` instead of
``t1 = t2 + b1`` and ``h = np.tanh(t1)``, so the array is freed as soon as
it has been used instead of living until the gradient returns.
"""

from __future__ import annotations

from . import compat
from .compat import gast

_PURE_BUILTINS = {"range", "len", "min", "reversed", "float", "abs", "tuple"}


def optimize(fn_def, ns, keep=()):
    while True:
        reads = _reads(fn_def)
        changed = [False]
        fn_def.body = _sweep(fn_def.body, reads | set(keep), ns, changed) or [compat.make("Pass")]
        if not changed[0]:
            return fn_def


def _reads(tree):
    return {n.id for n in compat.walk(tree) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _sweep(stmts, reads, ns, changed):
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and _dead(s, reads):
            changed[0] = True
            if not _pure(s.value, ns):
                out.append(compat.expr_stmt(s.value))
            continue
        if isinstance(s, gast.If):
            s.body = _sweep(s.body, reads, ns, changed)
            s.orelse = _sweep(s.orelse, reads, ns, changed)
            if _empty(s.body) and _empty(s.orelse):
                changed[0] = True
                if not _pure(s.test, ns):
                    out.append(compat.expr_stmt(s.test))
                continue
            if _empty(s.orelse):
                s.orelse = []
            if _empty(s.body):  # if c: pass / else: ...  ->  if not c: ...
                s.test = compat.make("UnaryOp", op=gast.Not(), operand=s.test)
                s.body, s.orelse = s.orelse, []
        elif isinstance(s, (gast.For, gast.While)):
            s.body = _sweep(s.body, reads, ns, changed) or [compat.make("Pass")]
            if isinstance(s, gast.For) and _empty(s.body) and _pure(s.iter, ns) \
                    and s.target.id not in reads:
                changed[0] = True
                continue
        out.append(s)
    if out and _empty(out) and not any(isinstance(s, gast.Pass) for s in out):
        out.append(compat.make("Pass"))  # only comments left: still a block
    return out


def _empty(stmts):
    """Nothing but ``pass`` and comment markers (``__comment_3__``)."""
    return all(isinstance(s, gast.Pass) or _is_marker(s) for s in stmts)


def _is_marker(stmt):
    return isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Name) \
        and stmt.value.id.startswith("__comment_")


def _dead(stmt, reads):
    targets = stmt.targets[0]
    names = [targets] if isinstance(targets, gast.Name) else list(getattr(targets, "elts", []))
    return names and all(isinstance(n, gast.Name) and n.id not in reads for n in names)


def _pure(expr, ns) -> bool:
    """No side effects: names, constants, operators and known pure calls."""
    for node in compat.walk(expr):
        if isinstance(node, gast.Call):
            func = node.func
            root = func
            while isinstance(root, gast.Attribute):
                root = root.value
            if not isinstance(root, gast.Name):
                return False
            if root.id == "_stack":
                return False
            obj = ns.globals.get(root.id)
            if root.id in ns.pure or root.id in _PURE_BUILTINS:
                continue
            if getattr(obj, "__name__", "") in ("numpy", "math") and not _random(func):
                continue
            return False
        elif isinstance(node, (gast.Yield, gast.Await, gast.NamedExpr)):
            return False
    return True


def _random(func) -> bool:
    return any(isinstance(n, gast.Attribute) and n.attr == "random" for n in compat.walk(func))


def unbind(fn_def, primal, temps, ns):
    """Write single-use temporaries of the ``primal`` statements into the statement that reads them."""
    loads = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name):
            key = "load" if isinstance(n.ctx, gast.Load) else "store"
            loads.setdefault(n.id, {"load": 0, "store": 0})[key] += 1
    once = {name for name, c in loads.items() if name in temps and c["load"] == 1 and c["store"] == 1}
    ids = {id(s) for s in primal}
    fn_def.body = [s for s in _unbind_block(fn_def.body, once, ns, ids)]
    return fn_def


def _unbind_block(stmts, once, ns, ids):
    out = []
    for s in stmts:
        if ids is not None and id(s) not in ids:
            out.append(s)
            continue
        if isinstance(s, (gast.For, gast.While)):
            s.body = _unbind_block(s.body, once, ns, None)
        elif isinstance(s, gast.If):
            s.body = _unbind_block(s.body, once, ns, None)
            s.orelse = _unbind_block(s.orelse, once, ns, None)
        prev = out[-1] if out else None
        name = _single_target(prev)
        if name in once and isinstance(s, gast.Assign) and _pure(prev.value, ns) and _pure(s.value, ns) \
                and (ids is None or id(prev) in ids):
            uses = [n for n in compat.walk(s.value) if isinstance(n, gast.Name) and n.id == name]
            if len(uses) == 1:
                value = prev.value
                s.value = _replace_name(s.value, name, value)
                out[-1] = s
                continue
        out.append(s)
    return out


def _single_target(stmt):
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
        return stmt.targets[0].id
    return None


def _replace_name(tree, name, value):
    if isinstance(tree, gast.Name) and tree.id == name:
        return value
    for field, child in gast.iter_fields(tree):
        if isinstance(child, gast.AST):
            setattr(tree, field, _replace_name(child, name, value))
        elif isinstance(child, list):
            setattr(tree, field, [_replace_name(c, name, value) if isinstance(c, gast.AST) else c for c in child])
    return tree


def shapes_on_stack(fn_def, adjoint, shape_helper, keep_shape):
    """Push ``keep_shape(t)`` instead of ``t`` where the ``adjoint`` statements read ``t`` only as ``shape(t)``.

    ``t5 = h @ Wh`` in a loop is saved for ``unbroadcast(dt4, shape(t5))``:
    the stack then holds its shape, not the array.
    """
    shape_reads, other_reads = set(), set()
    for stmt in adjoint:
        inside = set()
        for n in compat.walk(stmt):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == shape_helper \
                    and len(n.args) == 1 and isinstance(n.args[0], gast.Name):
                inside.add(id(n.args[0]))
                shape_reads.add(n.args[0].id)
        for n in compat.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in inside:
                other_reads.add(n.id)
    only = shape_reads - other_reads
    if not only:
        return fn_def
    adjoint_ids = {id(stmt) for stmt in adjoint}
    pushes = (n for stmt in fn_def.body if id(stmt) not in adjoint_ids for n in compat.walk(stmt))
    for n in pushes:
        if not isinstance(n, gast.Call) or len(n.args) != 1:
            continue
        func, arg = n.func, n.args[0]
        if isinstance(func, gast.Attribute) and func.attr == "append" and isinstance(func.value, gast.Name) \
                and func.value.id == "_stack" and isinstance(arg, gast.Name) and arg.id in only:
            n.args = [compat.call(compat.name(keep_shape), [arg])]
    return fn_def


def drop_arrays(fn_def, primal, adjoint, helpers, temps):
    """Keep only the shape of a primal temporary the ``adjoint`` reads only for its shape.

    After the last primal statement that reads ``t2`` (``h = np.tanh(t2 +
    b1)``) comes ``t2 = only_shape(t2)``: the array is freed, and the
    adjoint's ``shape(t2)``, ``t2.shape`` and ``t2.size`` read the shape.
    ``helpers`` names ``shape``, ``size`` and ``only_shape`` in the module.
    """
    shape_fn, size_fn, keep_fn = helpers
    stores, meta, other = {}, {}, set()
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    adjoint_ids = {id(s) for s in adjoint}
    primal_ids = {id(s) for s in primal}
    for stmt in fn_def.body:
        if id(stmt) in primal_ids:
            continue
        inside = {}
        for n in compat.walk(stmt) if id(stmt) in adjoint_ids else ():
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id == shape_fn \
                    and len(n.args) == 1 and isinstance(n.args[0], gast.Name):
                inside[id(n.args[0])] = None
            elif isinstance(n, gast.Attribute) and n.attr in ("shape", "size") and isinstance(n.value, gast.Name):
                inside[id(n.value)] = n
        for n in compat.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                if id(n) in inside:
                    meta.setdefault(n.id, []).append(inside[id(n)])
                else:
                    other.add(n.id)
    top = [s for s in fn_def.body if id(s) in primal_ids]
    assigned = {}
    for i, s in enumerate(top):
        name = _single_target(s)
        if name is not None and isinstance(s.value, gast.BinOp):  # arithmetic and @: the arrays that are large
            assigned.setdefault(name, i)
    chosen = sorted(name for name in meta if name not in other and name in temps
                    and stores.get(name) == 1 and name in assigned)
    if not chosen:
        return fn_def
    after = {}
    read = [{n.id for n in compat.walk(s) if isinstance(n, gast.Name)} for s in top]
    for name in chosen:
        last = max(i for i, names in enumerate(read) if name in names)
        after.setdefault(id(top[last]), []).append(name)
    replacements = {id(node): node for name in chosen for node in meta[name] if node is not None}

    def replace(node):
        if id(node) in replacements:
            fn = shape_fn if node.attr == "shape" else size_fn
            return compat.call(compat.name(fn), [node.value])
        return None
    from .inline import rewrite
    for stmt in adjoint:
        rewrite(stmt, replace)
    body = []
    for s in fn_def.body:
        body.append(s)
        for name in after.get(id(s), ()):
            body.append(compat.assign(name, compat.call(compat.name(keep_fn), [compat.name(name)])))
    fn_def.body = body
    return fn_def


def drop_unread_saves(fn_def, adjoint, keep_shape):
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
            name = _pop_target(n)
            if name is not None:
                popped.add(name)
    unread = popped - loads
    if not unread:
        return fn_def

    def keep(stmt):
        if _pop_target(stmt) in unread:
            return False
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call):
            call = stmt.value
            func = call.func
            if isinstance(func, gast.Attribute) and func.attr == "append" and isinstance(func.value, gast.Name) \
                    and func.value.id == "_stack" and len(call.args) == 1:
                arg = call.args[0]
                if isinstance(arg, gast.Call) and isinstance(arg.func, gast.Name) and arg.func.id == keep_shape \
                        and len(arg.args) == 1:
                    arg = arg.args[0]
                if isinstance(arg, gast.Name) and arg.id in unread:
                    return False
        return True

    def sweep(stmts):
        out = []
        for s in stmts:
            if not keep(s):
                continue
            for field in ("body", "orelse"):
                if isinstance(getattr(s, field, None), list) and getattr(s, field):
                    setattr(s, field, sweep(getattr(s, field)) or [compat.make("Pass")])
            out.append(s)
        return out
    fn_def.body = sweep(fn_def.body)
    return fn_def


def _pop_target(stmt):
    """``name`` for a statement ``name = _stack.pop()``, else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.Call) and isinstance(stmt.value.func, gast.Attribute) \
            and stmt.value.func.attr == "pop" and isinstance(stmt.value.func.value, gast.Name) \
            and stmt.value.func.value.id == "_stack" and not stmt.value.args:
        return stmt.targets[0].id
    return None


def release(fn_def, keep=(), numbers=(), small=()):
    """``del`` each array after the top-level statement that last reads it.

    A Python local holds its array until the function returns; a gradient
    written by hand drops (or overwrites) an array once it is used up, and
    so does the generated code.  Only names a top-level assignment binds
    before that statement are released (they are surely bound there), never
    ``keep`` (the parameters) or the stack.  Names that surely hold numbers
    (computed from ``numbers``, the float seed, and literals) or only a
    shape (assigned a call of one of ``small``: ``size`` and ``only_shape``)
    are left alone, as are names last copied (``dx = dy``) or only assigned:
    freeing them saves nothing.
    """
    body = fn_def.body
    last, bound, values, loaded = {}, {}, {}, []
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
    scalar = set(numbers)
    changed = True
    while changed:
        changed = False
        for name, assigned in values.items():
            if name not in scalar and all(value is not None and _numeric(value, scalar, small[:1])
                                          for value in assigned):
                scalar.add(name)
                changed = True
    tiny = {name for name, assigned in values.items()
            if assigned and all(isinstance(v, gast.Call) and isinstance(v.func, gast.Name) and v.func.id in small
                                or isinstance(v, gast.Name) and v.id in small for v in assigned)}
    after = {}
    for name, i in last.items():
        if name in keep or name in scalar or name in tiny or name == "_stack" or name not in bound \
                or bound[name] > i or isinstance(body[i], gast.Return) or name not in loaded[i] \
                or _copies(body[i], name):
            continue
        after.setdefault(i, []).append(name)
    if not after:
        return fn_def
    out = []
    for i, s in enumerate(body):
        out.append(s)
        if i in after:
            out.append(compat.make("Delete", targets=[compat.name(n, store=False) for n in sorted(after[i])]))
    for node in out:
        if isinstance(node, gast.Delete):
            for t in node.targets:
                t.ctx = gast.Del()
    fn_def.body = out
    return fn_def


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


def _numeric(value, scalar, counts=()) -> bool:
    """An expression of literals, names holding numbers and ``size(...)`` calls: a number itself."""
    if isinstance(value, gast.Constant):
        return isinstance(value.value, (int, float)) and not isinstance(value.value, bool)
    if isinstance(value, gast.Name):
        return value.id in scalar
    if isinstance(value, gast.UnaryOp):
        return _numeric(value.operand, scalar, counts)
    if isinstance(value, gast.BinOp):
        return _numeric(value.left, scalar, counts) and _numeric(value.right, scalar, counts)
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
    stores = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    loads = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
            loads[n.id] = loads.get(n.id, 0) + 1

    def block(stmts):
        out = list(stmts)
        i = 0
        while i < len(out):
            s = out[i]
            for field in ("body", "orelse"):
                if isinstance(getattr(s, field, None), list) and getattr(s, field):
                    setattr(s, field, block(getattr(s, field)))
            copy = _copy_of(s)
            if copy is not None and copy[0] in candidates and stores.get(copy[0]) == 1 and copy[0] != copy[1]:
                if _propagate(out, i, *copy, loads):
                    del out[i]
                    continue
            i += 1
        return [s for s in out if not (_copy_of(s) and _copy_of(s)[0] == _copy_of(s)[1])] or [compat.make("Pass")]
    fn_def.body = block(fn_def.body)
    return fn_def


def _copy_of(stmt):
    """``(a, b)`` for ``a = b`` between two names."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.Name):
        return stmt.targets[0].id, stmt.value.id
    return None


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
    if any(isinstance(s, gast.While) and any(_is_pop(n) for n in compat.walk(s.test)) for s in body):
        return fn_def  # popped once per trip
    pushes = [i for i, s in enumerate(body) if _push_value(s) is not None]
    pops = [(i, n) for i, s in enumerate(body) for n in _top_level_pops(s)]
    if not pushes or len(pushes) != len(pops):
        return fn_def
    taken = {n.id for n in compat.walk(fn_def) if isinstance(n, gast.Name)}
    replace = {}
    remove = set()
    for push, (pop_at, pop) in zip(pushes, reversed(pops)):
        if pop_at <= push:
            return fn_def
        value = _push_value(body[push])
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
    from .inline import rewrite
    for s in fn_def.body:
        rewrite(s, lambda node: replace.get(id(node)))
    return fn_def


def _push_value(stmt):
    """``v`` for ``_stack.append(v)``."""
    if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and len(stmt.value.args) == 1:
        func = stmt.value.func
        if isinstance(func, gast.Attribute) and func.attr == "append" and isinstance(func.value, gast.Name) \
                and func.value.id == "_stack":
            return stmt.value.args[0]
    return None


def _is_pop(node) -> bool:
    return isinstance(node, gast.Call) and not node.args and isinstance(node.func, gast.Attribute) \
        and node.func.attr == "pop" and isinstance(node.func.value, gast.Name) and node.func.value.id == "_stack"


def _top_level_pops(stmt):
    """``_stack.pop()`` calls ``stmt`` makes once: not inside the body of a loop or branch."""
    if isinstance(stmt, (gast.For, gast.While, gast.If)):
        head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
        return [] if isinstance(stmt, gast.While) else [n for n in compat.walk(head) if _is_pop(n)]
    return [n for n in compat.walk(stmt) if _is_pop(n)]
