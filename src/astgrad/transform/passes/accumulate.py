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
A name bound to a view of an owned array (``dt1 = written(du, np.s_[1:-1])``,
``v = du[1:]``) does not end the ownership: the array is written in place
only where no such view is live (read again before it is rebound: a
liveness analysis of the generated function), so the gradient of a
stencil's write adds into ``du`` itself once its slice has been read.  A
view live where branches or a loop's trips meet, or passed anywhere but to
arithmetic, ends it.
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
    walk = _Walk(ns, _Liveness(fn_def))
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

    def __init__(self, ns, live):
        self.ns = ns
        self.live = live
        self.probe = _Block([], ns)
        self.owned_before: dict = {}  # id(d = d + scatter(...)) -> whether d owned its array there (last visit)
        self.copies: dict = {}  # id(loop) -> the names copied before it, so that they own their arrays there

    def block(self, stmts, owned):
        for stmt in stmts:
            owned = self.statement(stmt, owned)
        return owned

    # ``owned`` holds names (str) owning their arrays and, for a name bound to a view of such an array,
    # the pair (view, owner): the owner keeps its array while the view is dead (see the module's doc)

    def statement(self, stmt, owned):
        if isinstance(stmt, gast.Assign):
            if _scatter_added(stmt, self.ns) is not None:
                d = stmt.targets[0].id
                live = self.live.before(stmt)
                self.owned_before[id(stmt)] = d in owned and not any(
                    type(v) is tuple and v[1] == d and v[0] in live for v in owned)
                return self.rebound(self.escape(owned, stmt), {d}) | {d}  # a new array, or d's own written in place
            view = self.view(stmt, owned)
            owned = self.escape(owned, stmt, spared=view)
            bound = {n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name)}
            owned = self.rebound(owned, bound)
            if len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) and self.fresh(stmt.value):
                owned = owned | {stmt.targets[0].id}
            elif view is not None:
                owned = owned | {(stmt.targets[0].id, view)}
            return owned
        if isinstance(stmt, (gast.Expr, gast.Return, gast.Raise, gast.Assert, gast.Pass)):
            return self.escape(owned, stmt)
        if isinstance(stmt, gast.Delete):
            return self.rebound(owned, {n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name)})
        if isinstance(stmt, gast.If):
            owned = self.escape(owned, stmt, within=stmt.test)
            after = self.live.after(stmt)
            return _settled(self.block(stmt.body, set(owned)), after) \
                & _settled(self.block(stmt.orelse, set(owned)), after)
        if isinstance(stmt, (gast.For, gast.While)):
            return self.loop(stmt, _settled(owned, self.live.head(stmt)))
        self.block_unmodelled(stmt)
        return set()

    def view(self, stmt, owned):
        """The owner whose array ``v = value`` binds ``v`` to (a view of), where ``value`` passes one owned array
        or view on and reads the others for their values only (``written(du, np.s_[1:-1])``); else None."""
        if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
            return None
        parent = _parents(stmt)
        fates = [(n.id, _fate(n, parent, self.ns)) for n in compat.walk(stmt.value)
                 if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)]
        passed = {name for name, fate in fates if fate == "passed"}
        if len(passed) != 1:
            return None
        name = passed.pop()
        if any(other == name and fate == "kept" for other, fate in fates):
            return None  # also passed where it may be kept (written(d, g(d))): it escapes
        if name in owned:
            return name
        return next((v[1] for v in owned if type(v) is tuple and v[0] == name), None)

    def escape(self, owned, stmt, within=None, spared=None):
        """``owned`` less the arrays a read in ``stmt`` may let another name reach (a view's owner with it)."""
        out = self.escaping(stmt, within)
        gone = {v[1] for v in owned if type(v) is tuple and v[0] in out}
        return {v for v in owned if (v[1] if type(v) is tuple else v) not in (out | gone) - {spared}}

    def rebound(self, owned, names):
        """``owned`` after ``names`` are bound anew: neither they nor their views own or view anything."""
        return {v for v in owned if (v[0] not in names and v[1] not in names if type(v) is tuple else v not in names)}

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
        start = self.rebound({v for v in owned if (v[1] if type(v) is tuple else v) not in escaping}, target)
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
            end = self.rebound(_settled(self.block(stmt.body, set(start)), self.live.head(stmt)), target)
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


def _settled(owned, live):
    """``owned`` where control flow meets: a live view takes its owner out; the views themselves are dropped
    (a dead one is rebound before any read, which records it anew)."""
    gone = {v[1] for v in owned if type(v) is tuple and v[0] in live}
    return {v for v in owned if type(v) is not tuple and v not in gone}


class _Liveness:
    """The names live around each statement of a function: read on some path before they are bound again.

    Backwards over the blocks: a loop's head is live with what its body
    reads first and what follows it (a fixed point), a branch with either
    way's.  ``break`` and ``continue`` jump to what follows the loop and to
    its head; a statement this does not model (``try``, ``with``, a nested
    function) keeps every name of the function live at and inside it.
    """

    def __init__(self, fn_def):
        self._after: dict = {}
        self._head: dict = {}
        self._everything = {n.id for n in compat.walk(fn_def) if isinstance(n, gast.Name)}
        self._block(fn_def.body, set(), None)

    def after(self, stmt) -> set:
        return self._after.get(id(stmt), self._everything)

    def head(self, loop) -> set:
        return self._head.get(id(loop), self._everything)

    def before(self, stmt) -> set:
        """Live where ``stmt`` starts: what it reads, and what is live after it and not bound by it."""
        return (self.after(stmt) - _stores(stmt)) | _loads(stmt) if isinstance(stmt, gast.Assign) \
            else self._everything

    def _block(self, stmts, live, loop):
        for stmt in reversed(stmts):
            self._after[id(stmt)] = set(live)
            live = self._statement(stmt, live, loop)
        return live

    def _statement(self, stmt, live, loop):
        if isinstance(stmt, (gast.Assign, gast.Expr, gast.Return, gast.Raise, gast.Assert, gast.Pass, gast.Delete)):
            return (live - _stores(stmt)) | _loads(stmt)
        if isinstance(stmt, gast.Break):
            return set(loop[0]) if loop else set(self._everything)
        if isinstance(stmt, gast.Continue):
            return set(loop[1]) if loop else set(self._everything)
        if isinstance(stmt, gast.If):
            return self._block(stmt.body, live, loop) | self._block(stmt.orelse, live, loop) | _loads(stmt.test)
        if isinstance(stmt, (gast.For, gast.While)):
            exit_ = self._block(stmt.orelse, live, loop)
            head = set(exit_)
            while True:  # the head: what follows the loop, and what a trip reads before binding it
                frame = (live, head)
                body = self._block(stmt.body, head, frame)
                new = exit_ | (body - _stores(stmt.target) if isinstance(stmt, gast.For) else body)
                if isinstance(stmt, gast.While):
                    new |= _loads(stmt.test)
                if new <= head:
                    break
                head |= new
            self._head[id(stmt)] = head
            self._block(stmt.body, head, (live, head))
            return head | (_loads(stmt.iter) if isinstance(stmt, gast.For) else set())
        for n in compat.walk(stmt):  # not modelled: everything live, inside too
            if isinstance(n, gast.stmt):
                self._after[id(n)] = self._everything
        return set(self._everything)


def _loads(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _stores(node) -> set:
    """The names ``node`` binds outright (a plain name target; ``a[i] = v`` and ``a.x = v`` read ``a``)."""
    targets = node.targets if isinstance(node, (gast.Assign, gast.Delete)) else [node]
    return {t.id for t in targets if isinstance(t, gast.Name)}


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
_SAME_OR_NEW = (runtime.unbroadcast, _support.unbroadcast, runtime.summed, runtime.add_at)
