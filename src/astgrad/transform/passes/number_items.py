"""``np.array([a, b])``'s gradient cut into its items without ``_like``'s search: ``number_items(g, 2)``.

The rule of ``np.array(items)`` gives each item ``np.reshape(g[i],
np.shape(item))``, found by ``_like`` walking the list (a list or tuple
item is cut again); a right-hand side ``np.array([p[0] * y[0] - ...,
...])`` pays that walk and two calls of ``np.reshape`` through numpy's
dispatch on every call (S2: four calls a step).  Where the list is proven
a list of numbers, ``number_items(g, k)`` computes the same list with the
method ``np.reshape`` calls on an array's items.

Proven on the normal form, never guessed: the list is a name bound once, by
a list literal of ``k`` items each of rank 0 (front/ranks.py: a number or a
0-d array, never a list or a tuple), not a parameter, read by nothing but
``np.array``/``np.asarray`` (nothing appends to it or writes into it
through another name), and no statement kept as written reads it.  The
numpy backend's (Numba compiles ``_like`` as it is), at optimize=2 only:
``number_items`` has no derivative rule, and a hessian differentiates the
optimize=1 adjoint.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import Op, binding_sites, walk_ops
from ..ir.trees import rewrite
from ...rules import sequences

#: the functions whose rules cut their gradient with ``_like`` of their argument
_READERS = (np.array, np.asarray)


def cut_number_items(fn_def, body, params, ranks, ns) -> bool:
    """Rewrite ``_like(g, lst)`` in ``fn_def`` (in place) for each ``lst`` of ``body`` proven a list of numbers."""
    likes = [n for n in gast.walk(fn_def) if _like_of(n, ns) is not None]
    if not likes:
        return False
    sites, exposed = binding_sites(body)
    counts: dict = {}
    for name in {_like_of(n, ns) for n in likes}:
        bound = sites.get(name, [])
        if name in exposed or name in params or len(bound) != 1 or not isinstance(bound[0], Op):
            continue
        pack = bound[0]
        if pack.kind != "pack" or not pack.sequence or pack.kwargs \
                or any((ranks.atom_rank(a) or (None,))[0] != 0 for a in pack.args):
            continue
        readers = [op for op in walk_ops(body) if any(isinstance(n, gast.Name) and n.id == name
                                                      for a in (*op.args, *op.kwargs.values()) for n in gast.walk(a))]
        if all(op.kind == "prim" and any(op.fn is fn for fn in _READERS) for op in readers):
            counts[name] = len(pack.args)
    if not counts:
        return False
    helper = ns.helper(runtime.number_items)

    def replace(node):
        name = _like_of(node, ns)
        if name in counts:
            return compat.call(compat.name(helper), [node.args[0], compat.const(counts[name])])
        return None
    fn_def.body = [rewrite(stmt, replace) for stmt in fn_def.body]
    return True


def _like_of(node, ns):
    """``lst`` where ``node`` is ``_like(g, lst)`` of a name; else None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and len(node.args) == 2 \
            and not node.keywords and ns.globals.get(node.func.id) is sequences._like \
            and isinstance(node.args[1], gast.Name):
        return node.args[1].id
    return None


def unpack_number_items(fn_def, ns) -> bool:
    """``x0, x1 = number_items(g, 2)`` for ``t, = gradient_tuple(number_items(g, 2), 1, (0,), r)`` followed by
    ``x0 = part(t, 0)`` and ``x1 = part(t, 1)`` (in place, in every block), where ``t`` is read nowhere else.

    ``gradient_tuple`` of a list is the 1-tuple of it, and ``part`` of a list item that is not None is the item:
    ``number_items`` gives ``k`` arrays, so the unpacking binds the same values, without three calls a cut.
    Where the function tests nothing with ``is_zero`` but its seed at its start (passes/computed_seeds.py), the
    items are numpy numbers (``number_scalars``): the same values, whose arithmetic skips the array machinery
    (``is_zero``, which the items never reach, is the one reader that tells a zero number from a 0-d array).
    """
    params = {a.id for a in fn_def.args.args}
    tests = [n for n in gast.walk(fn_def) if _calls(n, ns, runtime.is_zero)]
    seeded = [n for s in fn_def.body if isinstance(s, gast.If) and len(s.body) == 1 and not s.orelse
              and isinstance(s.body[0], gast.Return) for n in gast.walk(s.test) if n in tests
              and len(n.args) == 1 and isinstance(n.args[0], gast.Name) and n.args[0].id in params]
    helper = runtime.number_scalars if len(tests) == len(seeded) else None
    uses: dict = {}
    for n in gast.walk(fn_def):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Del):
            uses[n.id] = uses.get(n.id, 0) + 1
    cut: set = set()

    def block(stmts):
        k = 0
        while k < len(stmts):
            stmt = stmts[k]
            for _, _, inside in compat.own_blocks(stmt):
                block(inside)
            found = _cut(stmt, ns)
            if found is not None:
                t, g, count = found
                parts = [_part_of(s, t, ns) for s in stmts[k + 1:k + 1 + count]]
                targets = [p[0] for p in parts if p is not None]
                if len(targets) == count and len(set(targets)) == count and t not in targets \
                        and sorted(p[1] for p in parts) == list(range(count)) and uses.get(t) == 1 + count:
                    ordered = [name for name, _ in sorted(parts, key=lambda p: p[1])]
                    items = stmt.value.args[0]
                    if helper is not None:
                        items.func = compat.name(ns.helper(helper))
                    stmts[k:k + 1 + count] = [compat.assign(ordered, items)]
                    cut.add(t)
            k += 1

    block(fn_def.body)
    if cut:
        for n in gast.walk(fn_def):
            if isinstance(n, gast.Delete):
                n.targets = [x for x in n.targets if not (isinstance(x, gast.Name) and x.id in cut)]
        fn_def.body = _without_empty_deletes(fn_def.body)
    return bool(cut)


def _cut(stmt, ns):
    """``(t, g, k)`` of ``t, = gradient_tuple(number_items(g, k), 1, (0,), rule)``; else None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Tuple)
            and len(stmt.targets[0].elts) == 1 and isinstance(stmt.targets[0].elts[0], gast.Name)):
        return None
    call = stmt.value
    if not (_calls(call, ns, runtime.gradient_tuple) and len(call.args) == 4 and not call.keywords):
        return None
    items, count, needed = call.args[0], call.args[1], call.args[2]
    if not (_calls(items, ns, runtime.number_items) and len(items.args) == 2 and not items.keywords
            and isinstance(items.args[1], gast.Constant) and type(items.args[1].value) is int
            and isinstance(count, gast.Constant) and count.value == 1 and isinstance(needed, gast.Tuple)):
        return None
    return stmt.targets[0].elts[0].id, items.args[0], items.args[1].value


def _part_of(stmt, t, ns):
    """``(x, i)`` of ``x = part(t, i)`` with ``i`` a literal int; else None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
        return None
    call = stmt.value
    if not (_calls(call, ns, sequences.part) and len(call.args) == 2 and not call.keywords
            and isinstance(call.args[0], gast.Name) and call.args[0].id == t
            and isinstance(call.args[1], gast.Constant) and type(call.args[1].value) is int):
        return None
    return stmt.targets[0].id, call.args[1].value


def _calls(node, ns, fn) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and ns.globals.get(node.func.id) is fn


def _without_empty_deletes(stmts):
    out = []
    for stmt in stmts:
        if isinstance(stmt, gast.Delete) and not stmt.targets:
            continue
        for _, field, inside in compat.own_blocks(stmt):
            setattr(stmt, field, _without_empty_deletes(inside) or [compat.make("Pass")])
        out.append(stmt)
    return out
