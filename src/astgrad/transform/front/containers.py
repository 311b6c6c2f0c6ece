"""Parameters that hold dicts, lists or tuples of arrays (pytrees), as ``wrt`` arguments.

``grad`` transforms a function again the first time a ``wrt`` argument is a
container (api: one variant per set of such parameters).  That variant
knows the parameter is a container but not its structure, which it reads
when it runs: ``params["W1"]`` gives ``dparams`` the key ``"W1"``
(``sequence_gradient``), and an item of a container (``W, b = layers[0]``,
``for W, b in layers``) may be an array or a container itself, so its own
items' gradients are told apart at run time (``getitem_gradient``).

Python's meaning of an operation on a container differs from numpy's on
an array in two places, and neither has a gradient rule: ``+`` and ``*``
join and repeat lists and tuples, and ``for k in d`` gives a dict's keys.
On a parameter known to be a container they are refused when the function
is transformed; on an item that may be one, a check runs before them.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ..runtime import attributes, checks
from ..ir import compat
from .. import runtime
from ..ir.compat import gast
from ..ir.nodes import Op, Raw, branches, walk_ops
from ..runtime.origins import ORIGIN

#: set on the ``xs[i]`` that a ``for v in xs`` loop becomes (normalize), so that a dict is refused there
ITERATED = "astgrad_iterated"


def prepare(normalizer, trees) -> None:
    """Before normalising: the parameters ``trees`` hold containers (lists' rules: no ``+``, ``*``, ``.append``)."""
    normalizer.sequences.update(trees)


def mark(plan, trees, maybe, ns) -> None:
    """After normalising: the plan's containers, what may be one, and checks before operations on those.

    ``trees`` surely hold containers (the caller's arguments); ``maybe`` may
    hold one (a called function's parameter given an item of a container).
    The items of what a called function returns (``out, cache = layer(x)``)
    may be containers too, and a dict literal's name is one.
    """
    plan.trees, plan.tree_items = set(trees), set()
    objects = set(trees) | set(maybe) | items_of(plan.body, set(trees) | set(maybe))
    _fields_named_t(plan.body, objects)
    plan.maybe_sequences.update(op.args[0].id for op in walk_ops(plan.body)  # obj.w: obj's gradient is a list
                                if op.kind == "prim" and op.fn is attributes.attribute and isinstance(op.args[0], gast.Name))
    plan.maybe_sequences.update(items_of(plan.body, set(plan.maybe_sequences)))
    dicts = {t for op in walk_ops(plan.body) if op.kind == "pack" and isinstance(op.expr, gast.Dict)
             for t in op.targets}
    plan.dicts = dicts
    if trees or maybe:
        plan.sequences.update(trees)
        plan.tree_items = set(maybe) | items_of(plan.body, set(trees) | set(maybe))
        plan.maybe_sequences.update(plan.tree_items)
    plan.maybe_sequences.update(items_of(plan.body, dicts))  # d["layers"][1]
    joined = plan.trees | plan.tree_items
    iterated = joined | dicts | plan.maybe_sequences
    if joined or iterated:
        plan.body = _checked(plan.body, joined, iterated, plan, ns)


def _fields_named_t(body, objects) -> None:
    """``p.T`` on what may be a dataclass or a named tuple: its field ``T``, read as any attribute (an array's
    transpose then too: ``attributes.attribute_gradient`` tells them apart when it runs)."""
    transpose = getattr(rules.find(np.transpose), "fn", np.transpose)
    for op in walk_ops(body):
        if op.kind == "prim" and op.fn is transpose and isinstance(op.expr, gast.Attribute) and op.expr.attr == "T" \
                and len(op.args) == 1 and isinstance(op.args[0], gast.Name) and op.args[0].id in objects:
            op.fn, op.args = attributes.attribute, [op.args[0], compat.const("T")]


def passed(plan, bound, active) -> tuple:
    """``(trees, maybe)``: the parameters of a called function, among ``active``, given (items of) containers."""
    def given(names):
        return tuple(p for p in active if isinstance(bound[p], gast.Name) and bound[p].id in names)
    built = plan.sequences | plan.dicts  # made here: a dict literal, a list grown (not what a call returned)
    return given(plan.trees), given(plan.tree_items | (built - plan.trees))


def items_of(body, trees) -> set:
    """Names holding an item of a container in ``trees`` (``W = params["W1"]``, ``W, b = layers[0]``), or of those."""
    found: set = set()
    while True:
        grown = set(found)
        for op in walk_ops(body):
            sources = {a.id for a in op.args[:1] if isinstance(a, gast.Name)}
            if sources & (trees | found) and (op.kind in ("unpack", "copy") or
                                              op.kind == "prim" and op.fn in (rules.getitem, attributes.attribute)):
                grown.update(op.targets)
        if grown == found:
            return found
        found = grown


def _checked(stmts, joined, iterated, plan, ns) -> list:
    out = []
    for s in stmts:
        if isinstance(s, Op):
            out += _checks(s, joined, iterated, plan, ns)
        for block in branches(s):
            block[:] = _checked(block, joined, iterated, plan, ns)
        out.append(s)
    return out


def _checks(op, joined, iterated, plan, ns) -> list:
    """``not_joined(x, ...)`` before ``x + y`` or ``x * y`` (``x`` in ``joined``) and ``not_a_dict(xs, ...)``
    before a loop's ``xs[i]`` (``xs`` in ``iterated``)."""
    found = []
    if op.kind == "prim" and op.fn in (np.add, np.multiply) and isinstance(op.expr, gast.BinOp):
        maybe = [a.id for a in op.args if isinstance(a, gast.Name) and a.id in joined]
        if op.fn is np.multiply or len(maybe) == 2:  # + joins two sequences only; tuple + array is numpy's
            found += [_check(plan, ns, op, checks.not_joined, name, "+" if op.fn is np.add else "*")
                      for name in maybe]
    elif op.kind == "prim" and op.fn is rules.getitem and getattr(op.node, ITERATED, False) \
            and isinstance(op.args[0], gast.Name) and op.args[0].id in iterated:
        found.append(_check(plan, ns, op, checks.not_a_dict, op.args[0].id, ""))
    return found


def _check(plan, ns, op, helper, name, symbol):
    call = compat.call(compat.name(ns.helper(helper)),
                       [compat.name(name), compat.const(f"{op.text.strip()}"), compat.const(symbol)])
    stmt = compat.expr_stmt(call)
    setattr(stmt, ORIGIN, (plan.source.filename, op.line, op.text, False))
    return Raw(stmt, op.line, op.text)


def item_gradient(plan, helper, g, items, index):
    """The gradient of ``items`` from ``g`` flowing into ``items[index]``, ``items`` a list, tuple or dict.

    For a parameter that holds a container and a key written as a string,
    the gradient reads as what it is: ``{'W1': dt3}``.
    """
    if items.id in plan.trees and isinstance(index, gast.Constant) and isinstance(index.value, str):
        return compat.make("Dict", keys=[compat.clone(index)], values=[compat.name(g)])
    return compat.call(helper(runtime.sequence_gradient), [compat.name(g), compat.clone(items), compat.clone(index)])


def pack_index(op, i):
    """Item ``i`` of a pack as its gradient is indexed: the position, or the key of a dict literal."""
    if isinstance(op.expr, gast.Dict):
        return compat.clone(op.expr.keys[i])
    return compat.const(i)


def dict_view_loop(n, s, assigned):
    """``for k, v in d.items()`` as ``for k in list(d): v = d[k]`` (``.values()``, ``.keys()`` alike), or None.

    The loop then reads each value by its key, an item whose gradient goes
    back to that key; the keys are a list that carries no gradient.  ``d``
    is read once, before the loop, as Python's view is made once.
    """
    it = s.iter
    if not (isinstance(it, gast.Call) and isinstance(it.func, gast.Attribute) and not it.args
            and not it.keywords and it.func.attr in ("keys", "values", "items")):
        return None
    view, target = it.func.attr, s.target
    if view == "items" and not (isinstance(target, gast.Tuple) and len(target.elts) == 2):
        return None
    base = n.atomize(it.func.value)
    base = n.pinned(base, assigned)
    keys = n.temp()
    n.emit([keys], "nondiff", compat.call(compat.name(n.ns.helper(runtime.keys_of)), [base]), it)
    loc = dict(lineno=s.lineno, col_offset=s.col_offset)
    if view == "keys":
        return compat.make("For", target=target, iter=compat.name(keys), body=s.body, orelse=[], **loc)
    key = target.elts[0] if view == "items" else compat.make("Name", id=n.temp_local("key"), ctx=gast.Store(),
                                                              annotation=None, type_comment=None)
    value = target.elts[1] if view == "items" else target
    read = compat.make("Subscript", value=compat.clone(base), ctx=gast.Load(),
                       slice=compat.make("Name", id=key.id, ctx=gast.Load(), annotation=None, type_comment=None),
                       **loc)
    first = compat.make("Assign", targets=[value], value=read, **loc)
    return compat.make("For", target=key, iter=compat.name(keys), body=[first] + list(s.body), orelse=[], **loc)


def copies_of_sequences(body, sequences, maybe_sequences) -> None:
    """A name bound to a list or tuple (``q = parts``) may hold one: its items' gradients are read as a
    sequence's at run time (an array's gradient of parts numpy would stack, or cannot, is no list's)."""
    copies = [op for op in walk_ops(body) if op.kind == "copy" and op.args and isinstance(op.args[0], gast.Name)]
    found = True
    while found:
        found = False
        for op in copies:
            if (op.args[0].id in sequences or op.args[0].id in maybe_sequences) \
                    and not set(op.targets) <= maybe_sequences | sequences:
                maybe_sequences.update(op.targets)
                found = True
