"""Appends in place to lists that only the function's own code sees.

The normalizer writes ``lst.append(v)`` as ``t = append(lst, v); lst = t``:
a new list per append, and the adjoint pops the old one off the stack.  In
a loop of n appends that copies n * n items and keeps n lists alive.

For a list no other name, call, container or ``return`` can see, this pass
emits the append as ``t = grow(lst, v)`` (``lst.append(v)``, what Python
runs; the op keeps ``append`` and its rule) and the reverse sweep, instead of saving and restoring the old list,
pops the item off again (``lst.pop()``) where the adjoint passes the append:
so at every point of the adjoint ``lst`` holds the items it held there in
the primal, as before, at the cost of one item per append.

A list counts as private when every statement that names it is one of:
its definition by a list literal (``lst = []``, ``[a, b]``) or by an append
or item assignment of its own (``lst = t``), an append to it, a read of an
item (``lst[i]``, ``a, b = lst``), a rule-table call that reads it
(``np.stack(lst)``, ``sum(lst)``) and an inactive call such as ``len(lst)``.
A copy (``other = lst``), an append of it into another list, a call of a
user function, a ``return`` or an opaque call keeps the functional append.
"""

from __future__ import annotations

from ...rules import setitem
from ...rules.sequences import append, grow
from ..ir import compat
from .. import runtime
from ..ir.compat import gast
from ..ir.nodes import For, If, Op, Raw, While, atom_names, op_reads, walk_statements


def grow_in_place(body, ret, params, ns) -> set:
    """Rewrite the appends to private lists; return the ids of their ``lst = t`` ops (restored by a pop)."""
    ops = [s for s in walk_statements(body) if isinstance(s, Op)]
    pairs = {}  # id of the append op -> the following ``lst = t`` op
    for block in _blocks(body):
        for op, then in zip(block, block[1:]):
            if _writes_own(op) and isinstance(then, Op) and then.kind == "copy" and then.targets == [op.args[0].id] \
                    and then.args[0].id == op.targets[0]:
                pairs[id(op)] = then
    lists = {op.args[0].id for op in ops if id(op) in pairs and op.fn is append}
    shut_out = set(params) | set(atom_names(ret))
    for s in walk_statements(body):
        shut_out |= _seen_elsewhere(s, lists, pairs)
    grown = set()
    for op in ops:
        if id(op) in pairs and op.fn is append and op.args[0].id not in shut_out:
            op.expr = compat.call(compat.name(ns.bind(grow, "grow")), [compat.clone(a) for a in op.args])
            grown.add(id(pairs[id(op)]))
    return grown


def _writes_own(op) -> bool:
    """``t = append(lst, v)`` or ``t = setitem(lst, i, v)``: a new version of the list ``lst``."""
    return isinstance(op, Op) and op.kind == "prim" and op.fn in (append, setitem) and bool(op.args) \
        and isinstance(op.args[0], gast.Name)


def _blocks(stmts):
    yield stmts
    for s in stmts:
        if isinstance(s, If):
            yield from _blocks(s.body)
            yield from _blocks(s.orelse)
        elif isinstance(s, For):
            yield from _blocks(s.body)
        elif isinstance(s, While):
            yield from _blocks(s.cond)
            yield from _blocks(s.body)


def _seen_elsewhere(s, lists, pairs) -> set:
    """The names of ``lists`` that statement ``s`` may let another name, call or container see."""
    if isinstance(s, For):
        return lists & set(atom_names(s.iter))
    if isinstance(s, Raw):
        return lists & {n.id for n in gast.walk(s.stmt) if isinstance(n, gast.Name)}
    if not isinstance(s, Op):
        return set()
    reads = lists & (set(op_reads(s)) | set(atom_names(s.expr)))
    bad = set()
    for t in lists & set(s.targets):
        made = s.kind == "pack" and s.sequence or s.kind == "nondiff" and isinstance(s.expr, gast.List)
        if not made and not (s.kind == "copy" and any(p is s for p in pairs.values())):
            bad.add(t)
    if s.kind == "prim" and s.fn in (append, setitem):
        first = s.args[0].id if isinstance(s.args[0], gast.Name) else None
        return bad | {n for n in reads if n != first or n in _names(s.args[1:])}
    if s.kind == "prim" or s.kind == "unpack" or s.kind == "nondiff" and isinstance(s.expr, gast.Call):
        return bad  # reads items or makes a new value: numpy keeps no reference to a list it is given
    return bad | reads


def _names(atoms) -> set:
    return {n for a in atoms for n in atom_names(a)}


def pop_item(name):
    """``lst.pop()``: the adjoint's undoing of an append in place, where others restore a saved value."""
    return compat.expr_stmt(compat.call(compat.attr(compat.name(name), "pop")))


def add_item(sweep, items, grad, live, out) -> bool:
    """``dlst = add_item(dlst, g, lst, i)`` for a read ``lst[i]`` when ``dlst`` holds a gradient already.

    The item's gradient goes into the list's in place (``runtime.add_item``),
    so reads in a loop stay linear.  False where ``accumulate`` must do it.
    """
    if items.id not in sweep.sequences or items.id not in live or isinstance(grad, gast.Dict):
        return False
    d = sweep.adj(items.id)
    out.append(compat.assign(d, compat.call(sweep.helper(runtime.add_item), [compat.name(d)] + grad.args)))
    sweep.maybe_zero.discard(items.id)
    return True


def set_item(sweep, op, g, needed, live, out) -> None:
    """The adjoint of ``t = setitem(items, i, v)`` where ``items`` is a list or dict, or may be one (an item
    of a dict: ``d["a"][1] = v``), which a helper tells apart from an array when it runs."""
    items, index, value = op.args
    if items.id in sweep.sequences:
        grads = [compat.call(sweep.helper(helper), [compat.name(g), compat.clone(index)])
                 for helper in (runtime.replacing_gradient, runtime.replaced_gradient)]  # value's first:
    else:
        temps = [sweep.names.temp(), sweep.names.temp()]
        out.append(compat.assign(temps, compat.call(sweep.helper(runtime.set_item_gradients),
                                                    [compat.name(g)] + compat.clone([items, index, value]))))
        grads = [compat.name(t) for t in reversed(temps)]
    for i, grad in zip((2, 0), grads):  # replaced_gradient may take g's dict for the container's
        if i in needed:
            sweep.accumulate(op.args[i], grad, live, out, may_zero=True)
