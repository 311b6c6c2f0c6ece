"""A run of ``d = add_at(d, g, s, i)`` in one block written ``d[i] += g`` behind one test of ``d``.

A callee's backward half builds the gradient of a small array item by
item: Lotka-Volterra's right-hand side ``np.array([p[0] * y[0] - ...,
...])`` gives ``y``'s gradient ``dy = scatter(g, shape(y), 1)`` and then
``dy = add_at(dy, g2, shape(y), 0)`` ... five times, and ``p``'s four
times, on every call (S2: four calls a step).  ``add_at`` tests, on every
call, what makes its one-line path ``total[index] += g`` right: ``total`` a
writeable numpy array of float64 of the shape ``s``, ``index`` an integer,
``g`` a numpy float64.  ``passes/item_adds.py`` reads the tests about
``total`` once before a loop; this pass reads them once for a run of adds
in one block, where the array is made just before them (outside a loop,
or inside one trip):

    dy = scatter(g, t22, 1)
    flag = adds_items(dy, t22)
    ...
    if not is_zero(g2):
        if flag and type(g2) is float64:
            dy[1] += g2
        else:
            dy = add_at(dy, g2, t22, 1)
            flag = adds_items(dy, t22)

Proven on the generated function, never guessed:

* the run starts right after a statement that surely binds ``d`` (an
  assignment to it, or an ``if`` each arm of which surely binds it), where
  ``s`` is surely bound (a parameter, or a plain assignment at the top of
  this or an enclosing block before it, with no ``del`` between);
* every statement of the run that names ``d`` is ``d = add_at(d, g, s, i)``
  (``g`` a name other than ``d``, ``s`` the one name of the run, ``i`` a
  literal int or a name every value of which is an integer of rank 0), on
  its own or as the one statement of an ``if`` without ``else`` whose test
  names neither ``d`` nor ``s``; no statement of the run binds or deletes
  ``s``; the run ends before the first statement that names ``d``
  otherwise, so nothing else reaches ``d``'s array while the flag stands
  for it, and the in-place add keeps its dtype, shape and flags.

Where the statement binding ``d`` is ``d = scatter(g, s, i)`` (``g`` a name,
``i`` a literal int), it becomes ``if type(g) is float64 and type(s) is
tuple: d = zeros(s); d[i] = g; flag = True``, else the call and the test as
above: ``scatter`` of a numpy float64 into a tuple shape at an int makes
exactly those float64 zeros with that one write (``adds_items`` holds of
them), and its wrapper's search for taped values finds none among a numpy
float64, a tuple and an int.

So ``flag`` is ``adds_items(d, s)`` wherever it is read: the add runs the
line ``add_at`` would run, and the other way runs ``add_at`` itself and
tests again (it may make a new array: a ``g`` of another dtype, a ``d``
that was still the number ``0.0``).  A run of one add keeps its call (the
test would cost what it saves).  The numpy backend's, at optimize=2 (Numba
compiles ``add_at``); it runs after ``item_adds``, so an add that pass wrote
for its loop is no longer a call.
"""

from __future__ import annotations

import builtins

import numpy as np

from ... import rules
from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..runtime.origins import keep_origin
from .inplace import _callee
from .invariant_shapes import _binds, _unbound
from .item_adds import _Walk

#: the fewest adds of one run worth a flag
_SHORTEST = 2


def chain_item_adds(fn_def, ns, names, value_of) -> bool:
    """Rewrite, in place, each run of ``add_at`` statements of ``fn_def``'s blocks proven to add at one place into
    one float64 array; ``value_of(name)``: ``(rank, integers)`` or None.  Whether anything changed."""
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    runs = _Runs(ns, names, value_of)
    runs.block(fn_def.body, frozenset(params))
    return runs.changed


class _Runs(_Walk):
    changed = False

    def block(self, stmts, bound):
        """Rewrite the runs of ``stmts`` and of the blocks nested in it; ``bound``: names surely bound at its start."""
        k = 0
        while k < len(stmts):
            stmt = stmts[k]
            inner = bound - _unbound(stmt)
            for _, field, inside in compat.own_blocks(stmt):
                self.block(inside, inner | _loop_target(stmt, field))
            bound = (bound - _unbound(stmt)) | _binds(stmt)
            for d in sorted(_surely_bound(stmt)):
                k += self.run(stmts, k, d, bound)
            k += 1

    def run(self, stmts, head, d, bound) -> int:
        """Rewrite the run of adds into ``d`` after ``stmts[head]``; how many statements were inserted there (0 or
        1: the flag; the names bound before its adds come later, read as any statement)."""
        members, s = [], None
        for j in range(head + 1, len(stmts)):
            stmt = stmts[j]
            if s is not None and s in _stored(stmt):
                break
            if d not in _named(stmt):
                continue
            add = self.member(stmt, d)
            if add is None or (s is not None and add[2] != s):
                break
            s = add[2]
            if s in _stored(stmt):
                break
            members.append(j)
        if len(members) < _SHORTEST or s is None or s not in bound or s == d:
            return 0
        if any(s in _stored(stmt) for stmt in stmts[head + 1:members[-1] + 1]):
            return 0  # s bound again before the first add: the flag would read another shape than the adds
        flag = self.names.temp()
        checker = compat.name(self.ns.helper(runtime.adds_items))
        for j in reversed(members):  # from the last: a rewritten add may be two statements
            stmt = stmts[j]
            if isinstance(stmt, gast.If):
                stmt.body = self.rewritten(stmt.body[0], flag, s, checker)
            else:
                stmts[j:j + 1] = self.rewritten(stmt, flag, s, checker)
        test = compat.assign(flag, compat.call(compat.clone(checker), [compat.name(d), compat.name(s)]))
        made = self.scattered(stmts[head], d, s)
        if made is not None:  # d = scatter(g, s, i) of a numpy float64 at an int: zeros, one write, the flag True
            g, i = made
            float64 = compat.name(self.ns.bind(np.float64, "float64"))
            kind = compat.name(self.ns.bind(builtins.type, "type"))
            fresh = [compat.assign(d, compat.call(compat.name(self.ns.bind(np.zeros, "zeros")), [compat.name(s)])),
                     compat.make("Assign", targets=[compat.make("Subscript", value=compat.name(d),
                                                                slice=compat.clone(i), ctx=gast.Store())],
                                 value=compat.name(g), type_comment=None),
                     compat.assign(flag, compat.const(True))]
            known = compat.make("BoolOp", op=gast.And(), values=[
                compat.make("Compare", left=compat.call(kind, [compat.name(g)]), ops=[gast.Is()],
                            comparators=[float64]),
                compat.make("Compare", left=compat.call(compat.clone(kind), [compat.name(s)]), ops=[gast.Is()],
                            comparators=[compat.name(self.ns.bind(builtins.tuple, "tuple"))])])
            stmts[head] = keep_origin(stmts[head], compat.if_stmt(known, [keep_origin(stmts[head], x) for x in fresh],
                                                                  [stmts[head], test]))
            self.changed = True
            return 0
        stmts.insert(head + 1, test)
        self.changed = True
        return 1

    def scattered(self, stmt, d, s):
        """``(g, i)`` where ``stmt`` is ``d = scatter(g, s, i)``, ``g`` a name, ``i`` a literal int; else None.

        ``scatter`` of a numpy float64 into a tuple shape at an int is ``zeros(s)`` with ``g`` written at ``i``
        (a float64 array: ``adds_items`` holds of it), without the search of its wrapper for taped values."""
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
                and stmt.targets[0].id == d and isinstance(stmt.value, gast.Call) and not stmt.value.keywords
                and len(stmt.value.args) == 3 and _callee(stmt.value.func, self.ns) is rules.scatter):
            return None
        g, shape, i = stmt.value.args
        if not (isinstance(g, gast.Name) and g.id != d and isinstance(shape, gast.Name) and shape.id == s
                and isinstance(i, gast.Constant) and type(i.value) is int):
            return None
        return g.id, i

    def member(self, stmt, d):
        """``(d, g, s, i)`` where ``stmt`` is an add of the run into ``d`` (alone or under an ``if``); else None."""
        if isinstance(stmt, gast.If):
            if len(stmt.body) != 1 or stmt.orelse or d in _named(stmt.test):
                return None
            add = self.member(stmt.body[0], d)
            if add is not None and add[2] in _named(stmt.test):
                return None
            return add
        add = self.added(stmt)
        if add is None or add[0] != d or d in _named(add[1]) or not self.one_place(add[3], d):
            return None
        return add

    def rewritten(self, stmt, flag, s, checker) -> list:
        """``if flag and type(g) is float64: d[i] += g`` else ``stmt`` and the flag tested again (``g`` bound to a
        name first where it is an expression, ``dt16 + dt10``, so it is computed once, as before)."""
        d, g, i = stmt.targets[0].id, stmt.value.args[1], stmt.value.args[3]
        if isinstance(g, gast.Name):
            return [self.in_place(stmt, d, g.id, i, flag, s, checker)]
        name = self.names.temp()
        bound = keep_origin(stmt, compat.assign(name, g))
        stmt.value.args[1] = compat.name(name)
        return [bound, self.in_place(stmt, d, name, i, flag, s, checker)]


def _loop_target(stmt, field) -> set:
    """The names a ``for`` loop's target binds, bound in its body."""
    if isinstance(stmt, gast.For) and field == "body":
        return {n.id for n in compat.walk(stmt.target) if isinstance(n, gast.Name)}
    return set()


def _surely_bound(stmt) -> set:
    """The names ``stmt`` surely binds: an assignment's targets, or what every arm of an ``if`` surely binds."""
    if isinstance(stmt, gast.If):
        return _block_binds(stmt.body) & _block_binds(stmt.orelse)
    return _binds(stmt)


def _block_binds(stmts) -> set:
    out: set = set()
    for stmt in stmts:
        out = (out - _unbound(stmt)) | _surely_bound(stmt)
    return out


def _named(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name)}


def _stored(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
