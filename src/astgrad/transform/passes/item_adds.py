"""``d = add_at(d, g, s, i)`` in a loop is ``d[i] += g`` where ``d`` is proven a float64 array: no call a trip.

The reverse sweep of a loop over reactions adds each item's gradient into
the gradient of the concentrations, ``dc = add_at(dc, g, shape(c), a)``,
three times a trip (passes/accumulate.py proved that no other name reaches
``dc``'s array).  ``add_at`` tests, on every call, what makes its one-line
path ``total[index] += g`` right: ``total`` a writeable numpy array of
float64 of the shape ``s``, ``index`` an integer, ``g`` a numpy float64.
A person writes ``dc[a] += g`` (0.1 µs against 0.25 µs for the call).

Of those tests, the ones about ``total`` hold on every trip once they hold
at the loop's start, proven on the generated function, never guessed:

* ``d`` is read and bound in the loop by such statements alone (no other
  read, store or ``del`` of it, in the body or the loop's header), so
  nothing else in the loop reaches its array, and the in-place add keeps
  the array, its dtype, shape and flags;
* ``s`` is a name the loop never binds nor deletes, and ``d`` and ``s`` are
  bound where the loop starts (a parameter or a plain assignment before it
  in an enclosing block, no ``del`` between), so they can be read there;
* ``i`` is a name every value of which is an integer of rank 0 (front/ranks.py:
  a ``range`` counter, an item of an array of integers indexed by as many
  integers as it has axes), or a literal int: ``d[i] += g`` adds at one place,
  as ``add_at`` does;
* ``g`` is a name (read twice, the same value).

So the test of ``d`` runs once before the loop (``adds_items(d, s)``, its
answer in a flag), and on every trip only ``type(g) is float64``:

    if flag and type(g) is float64:
        d[i] += g
    else:
        d = add_at(d, g, s, i)
        flag = adds_items(d, s)

the other way exactly as before, the flag tested again after it (``add_at``
may make a new array: a ``g`` of another dtype, a gradient that was still
the number ``0.0``).  Anything else keeps the call: a ``d`` read elsewhere
in the loop, an index that may be an array or a slice, a shape the loop
rebinds, a statement under a branch of the loop's body.  It runs last, for
the numpy backend only (Numba compiles ``add_at``).
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..runtime.origins import keep_origin
from .inplace import _callee
from .invariant_shapes import before_loops


def add_items_in_place(fn_def, ns, names, value_of):
    """``fn_def`` with the ``add_at`` statements of its loops proven to add at one place into a float64 array
    written ``d[i] += g`` behind one test a loop (in place).  ``value_of(name)``: ``(rank, integers)`` or None."""
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    before_loops(fn_def.body, frozenset(params), _Walk(ns, names, value_of).loop)
    return fn_def


class _Walk:
    def __init__(self, ns, names, value_of):
        self.ns, self.names, self.value_of = ns, names, value_of

    def loop(self, loop, bound):
        """The flags ``t = adds_items(d, s)`` to put before ``loop``, its ``add_at`` statements rewritten."""
        header = [loop.target, loop.iter] if isinstance(loop, gast.For) else [loop.test]
        stored = {n.id for s in loop.body for n in compat.walk(s) if isinstance(n, gast.Name)
                  and not isinstance(n.ctx, gast.Load)}
        stored |= {n.id for part in header for n in compat.walk(part) if isinstance(n, gast.Name)
                   and not isinstance(n.ctx, gast.Load)}
        found: dict = {}  # d -> [(position in the body, g, s, i)]
        for k, stmt in enumerate(loop.body):
            parts = self.add_at(stmt)
            if parts is not None:
                found.setdefault(parts[0], []).append((k,) + parts[1:])
        if not found:
            return []
        occurrences: dict = {}
        for part in header + loop.body:
            for n in compat.walk(part):
                if isinstance(n, gast.Name) and n.id in found:
                    occurrences[n.id] = occurrences.get(n.id, 0) + 1
        chosen = {}
        for d, sites in found.items():
            shapes = {s for _, _, s, _ in sites}
            if occurrences.get(d) != 2 * len(sites) or d not in bound or len(shapes) != 1:
                continue  # read or bound elsewhere in the loop, or added at two shapes
            s = shapes.pop()
            if s not in bound or s in stored or s == d:
                continue
            if all(self.one_place(i, d) and g != d for _, g, _, i in sites):
                chosen[d] = (self.names.temp(), s)
        if not chosen:
            return []
        checker = compat.name(self.ns.helper(runtime.adds_items))
        rewritten = {k: d for d, sites in found.items() if d in chosen for k, _, _, _ in sites}
        body = []
        for k, stmt in enumerate(loop.body):
            d = rewritten.get(k)
            if d is None:
                body.append(stmt)
                continue
            flag, s = chosen[d]
            body.append(self.in_place(stmt, d, stmt.value.args[1].id, stmt.value.args[3], flag, s, checker))
        loop.body = body
        return [compat.assign(flag, compat.call(compat.clone(checker), [compat.name(d), compat.name(s)]))
                for d, (flag, s) in chosen.items()]

    def in_place(self, stmt, d, g, i, flag, s, checker):
        """``if flag and type(g) is float64: d[i] += g``, else ``stmt`` (``d = add_at(d, g, s, i)``) and
        ``flag = adds_items(d, s)`` again."""
        test = compat.make("BoolOp", op=gast.And(), values=[compat.name(flag), compat.make(
            "Compare", left=compat.call(compat.name(self.ns.bind(builtins.type, "type")), [compat.name(g)]),
            ops=[gast.Is()], comparators=[compat.name(self.ns.bind(np.float64, "float64"))])])
        item = compat.make("Subscript", value=compat.name(d), slice=compat.clone(i), ctx=gast.Store())
        added = keep_origin(stmt, compat.make("AugAssign", target=item, op=gast.Add(), value=compat.name(g)))
        again = keep_origin(stmt, compat.assign(flag, compat.call(compat.clone(checker),
                                                                  [compat.name(d), compat.name(s)])))
        return keep_origin(stmt, compat.if_stmt(test, [added], [stmt, again]))

    def add_at(self, stmt):
        """``(d, g, s, i)`` of ``d = add_at(d, g, s, i)`` with ``g`` and ``s`` names; else None."""
        parts = self.added(stmt)
        if parts is None or not isinstance(parts[1], gast.Name):
            return None
        d, g, s, i = parts
        return d, g.id, s, i

    def added(self, stmt):
        """``(d, g, s, i)`` of ``d = add_at(d, g, s, i)`` with ``s`` a name, ``g`` any expression (its node);
        else None."""
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
                and isinstance(stmt.value, gast.Call) and not stmt.value.keywords and len(stmt.value.args) == 4
                and _callee(stmt.value.func, self.ns) is runtime.add_at):
            return None
        d, (total, g, s, i) = stmt.targets[0].id, stmt.value.args
        if not (isinstance(total, gast.Name) and total.id == d and isinstance(s, gast.Name)):
            return None
        return d, g, s.id, i

    def one_place(self, index, d) -> bool:
        """Whether ``index`` is surely an integer: a literal int or a name of rank 0 holding integers."""
        if isinstance(index, gast.Constant):
            return type(index.value) is int
        return isinstance(index, gast.Name) and index.id != d and self.value_of(index.id) == (0, True)
