"""Gradients of indexing added into a slice of the gradient, not into zeros of the whole shape.

The adjoint of ``t = x[i]`` adds ``scatter(dt, shape(x), i)`` (zeros of
``x``'s shape with ``dt`` at ``i``) to ``dx``: ``dx = dx + scatter(...)``
makes two arrays of ``x``'s size to change a few entries, in every trip of
a loop.  A person writes ``dx[i] += dt``.  This pass writes
``dx = added_at(dx, dt, shape(x), i)``, which copies ``dx`` once and adds
``dt`` at ``i``, and, where ``dx`` surely holds an array nothing else can
reach, ``dx = add_at(dx, dt, shape(x), i)``, which adds in place.

"Nothing else can reach it" is followed forward through every block,
loops and branches included: a name owns its array from a statement that
makes a new one (arithmetic, a ufunc, a reduction, ``added_at`` itself,
what ``inplace._Block.fresh`` calls whole) until a statement lets the array
escape: binds another name to it or to a view of it, pushes it, passes it
to a call that may keep it, returns it (``inplace._fate`` is not "used").
At a loop's head a name owns its array only if it did before the loop and
at the end of the body (a fixed point); after a branch, only if it did
after both.  Parameters, popped values and names bound by unpacking never
own theirs.  A loop with ``break`` or ``continue``, and statements this
walk does not model (``try``, ``with``, nested functions), own nothing.

The helpers check at run time what no analysis of names can: that the
gradient is a writeable float array of ``x``'s shape and dtype and the
added value fits the slice as numpy's write would; otherwise they compute
``dx + scatter(...)`` as written.
"""

from __future__ import annotations

from ..ir import compat
from .. import runtime
from ..ir.compat import gast
from ...rules import _extra, _support
from .inplace import _Block, _callee, _fate, _parents

_UNMODELLED = (gast.Try, gast.With, gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Global,
               gast.Nonlocal, gast.AugAssign, gast.AnnAssign)


def accumulate_in_place(fn_def, ns):
    """Rewrite ``d = d + scatter(g, s, i)`` in ``fn_def`` (every block) into ``added_at`` or ``add_at``."""
    walk = _Walk(ns)
    walk.block(fn_def.body, set())
    if not walk.owned_before:
        return fn_def
    copy, into = ns.helper(runtime.added_at), ns.helper(runtime.add_at)
    for stmt in (s for s in compat.walk(fn_def) if id(s) in walk.owned_before):
        target, call = stmt.targets[0].id, _scatter_added(stmt, ns)
        helper = into if walk.owned_before[id(stmt)] else copy
        stmt.value = compat.call(compat.name(helper), [compat.name(target)] + call.args)
    if any(walk.copies.values()):
        copied = ns.helper(runtime.copied)
        for node in list(compat.walk(fn_def)):
            for field in ("body", "orelse", "finalbody"):
                stmts = getattr(node, field, None)
                if isinstance(stmts, list) and any(walk.copies.get(id(s)) for s in stmts):
                    setattr(node, field, [c for s in stmts for c in [
                        compat.assign(name, compat.call(compat.name(copied), [compat.name(name)]))
                        for name in walk.copies.get(id(s), ())] + [s]])
    return fn_def


def _scatter_added(stmt, ns):
    """The ``scatter(g, s, i)`` call of ``d = d + scatter(g, s, i)`` (or ``scatter(...) + d``), else None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
            and isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, gast.Add)):
        return None
    d = stmt.targets[0].id
    left, right = stmt.value.left, stmt.value.right
    for mine, call in ((left, right), (right, left)):
        if isinstance(mine, gast.Name) and mine.id == d and isinstance(call, gast.Call) \
                and _callee(call.func, ns) is _extra.scatter and len(call.args) == 3 and not call.keywords \
                and not any(isinstance(n, gast.Name) and n.id == d for a in call.args for n in compat.walk(a)):
            return call
    return None


class _Walk:
    """The forward walk: which names own their array before each statement."""

    def __init__(self, ns):
        self.ns = ns
        self.probe = _Block([], ns)
        self.owned_before: dict = {}  # id(d = d + scatter(...)) -> whether d owned its array there (last visit)
        self.copies: dict = {}  # id(loop) -> the names copied before it, so that they own their arrays there

    def block(self, stmts, owned):
        for stmt in stmts:
            owned = self.statement(stmt, owned)
        return owned

    def statement(self, stmt, owned):
        if isinstance(stmt, gast.Assign):
            if _scatter_added(stmt, self.ns) is not None:
                d = stmt.targets[0].id
                self.owned_before[id(stmt)] = d in owned
                return (owned - self.escaping(stmt)) | {d}  # a new array, or d's own written in place
            owned = owned - self.escaping(stmt)
            bound = {n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name)}
            owned = owned - bound
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) and self.fresh(stmt.value):
                owned = owned | {stmt.targets[0].id}
            return owned
        if isinstance(stmt, (gast.Expr, gast.Return, gast.Raise, gast.Assert, gast.Pass)):
            return owned - self.escaping(stmt)
        if isinstance(stmt, gast.Delete):
            return owned - {n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name)}
        if isinstance(stmt, gast.If):
            owned = owned - self.escaping(stmt, within=stmt.test)
            return self.block(stmt.body, set(owned)) & self.block(stmt.orelse, set(owned))
        if isinstance(stmt, (gast.For, gast.While)):
            return self.loop(stmt, owned)
        self.block_unmodelled(stmt)
        return set()

    def loop(self, stmt, owned):
        """The names owning their array at the loop's head (and after it).

        A gradient the body adds into, owned at the end of each trip but not
        before the loop (``dc`` in a loop over reactions), is copied once
        before the loop (``copies``) where that lets an accumulation in the
        body add in place: one copy a loop instead of one a trip.
        """
        head = stmt.iter if isinstance(stmt, gast.For) else stmt.test
        target = {n.id for n in compat.walk(stmt.target) if isinstance(n, gast.Name)} \
            if isinstance(stmt, gast.For) else set()
        escaping = self.escaping(stmt, within=head)
        if stmt.orelse or _jumps(stmt.body):
            self.fixed_point(stmt, set(), target, escaping)
            self.block(stmt.orelse, set())
            return set()
        start = owned - escaping - target
        added = {s.targets[0].id for s in compat.walk(stmt) if _scatter_added(s, self.ns) is not None}
        hoped = self.fixed_point(stmt, start | (added - escaping - target), target, escaping)
        useful = set()
        for name in sorted(hoped - start):
            inside = self.candidates(stmt)
            with_it = {i: self.owned_before[i] for i in inside}
            self.fixed_point(stmt, hoped - {name}, target, escaping)
            if any(with_it[i] and not self.owned_before[i] for i in inside):
                useful.add(name)
        head_owned = self.fixed_point(stmt, start | useful, target, escaping)
        self.copies[id(stmt)] = sorted(head_owned - start)
        return head_owned

    def fixed_point(self, stmt, start, target, escaping):
        """Shrink ``start`` to what the body keeps owned from one trip to the next; the last walk records."""
        while True:
            end = self.block(stmt.body, set(start)) - target
            if isinstance(stmt, gast.While):
                end -= escaping
            if start <= end:
                return start
            start &= end

    def candidates(self, stmt):
        return [id(s) for s in compat.walk(stmt) if id(s) in self.owned_before]

    def block_unmodelled(self, stmt):
        """Record every accumulation inside ``stmt`` as owning nothing (they copy)."""
        for field in ("body", "orelse", "finalbody", "handlers"):
            for inner in getattr(stmt, field, None) or ():
                if isinstance(inner, gast.ExceptHandler):
                    self.block(inner.body, set())
                elif isinstance(inner, gast.stmt):
                    self.statement(inner, set())

    def escaping(self, stmt, within=None):
        """Names whose array a read in ``stmt`` (in ``within`` only, if given) may let another name reach."""
        parent = _parents(stmt)
        out = set()
        for n in compat.walk(within if within is not None else stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and _fate(n, parent, self.ns) != "used":
                out.add(n.id)
        return out

    def fresh(self, value) -> bool:
        """Whether ``value`` is a new array that nothing else refers to (or a number)."""
        if isinstance(value, gast.Constant):
            return True  # a number (the 0.0 of a gradient not made yet) has no memory to share
        if isinstance(value, gast.Call) and _callee(value.func, self.ns) in _NEW:
            return True
        if isinstance(value, gast.Call) and value.args and _callee(value.func, self.ns) in _SAME_OR_NEW:
            return self.fresh(value.args[0])
        return self.probe.fresh(value) == "whole"


def _jumps(stmts) -> bool:
    """Whether ``stmts`` hold a ``break`` or ``continue`` of their own loop (not of a loop nested in them)."""
    for stmt in stmts:
        if isinstance(stmt, (gast.Break, gast.Continue)):
            return True
        if isinstance(stmt, (gast.For, gast.While)):
            continue
        for field in ("body", "orelse", "finalbody"):
            if _jumps(getattr(stmt, field, None) or ()):
                return True
        if any(_jumps(h.body) for h in getattr(stmt, "handlers", None) or ()):
            return True
    return False


#: calls whose result is a new array whatever their arguments (``setitem`` copies; ``added_at``, ``copied`` too)
_NEW = (_extra.setitem, runtime.added_at, runtime.copied)
#: calls whose result is their first argument itself or a new array (never a view of it)
_SAME_OR_NEW = (runtime.unbroadcast, _support.unbroadcast, runtime.add_at)
