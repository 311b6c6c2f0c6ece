"""A generated jvp cut in two: a primal half run once, a tangent half run once per tangent (``linearize``).

JAX's ``linearize`` evaluates the function once and keeps what its tangent
map reads.  Here the generated jvp (core/forward.py: each operation followed
by its tangent) is cut statement by statement.  The primal half,
``primal_f(_stack, x, ...)``, runs every statement of the function and
records, in the order they run, the values the tangent half will read:
each such name where it is bound, the trip count of each loop, and each
subexpression of a tangent statement that reads no tangent (``np.cos(x)`` in
``dy = dx * np.cos(x)``, computed once).  The tangent half,
``tangent_f(take, dx, ...)``, runs the tangent statements only, with the
same control flow: a recorded name is bound where the primal bound it
(``y = take()``), a branch reads its recorded test, a loop runs its recorded
number of trips.  Both halves run the same statements in the same order,
so each ``take()`` gets the value recorded at the same point.  A read whose
name the tangent half binds again before reading it goes, with its record
(``_dead_reads``): a name rebound on every trip is recorded only where the
tangent half reads it.

A called function's ``jvp_g`` is cut the same way; the call becomes
``primal_g(_stack, args)`` in one half and ``tangent_g(take, tangents)`` in
the other, sharing the one record.

Generated code never writes an array in place (item writes copy,
rules/_extra.setitem), but it grows lists and writes dicts in place: a list
or dict is recorded as a copy (``recorded``).  A tangent statement writes
only into tangents (``grow``, ``put`` on a tangent list or dict), never into
a recorded value.  What this cut does not model (``try``, ``with``, nested
functions, a tangent statement writing into a primal value, control flow on
a tangent) raises ``NotCut``: the caller then reruns the whole jvp at each
call.
"""

from __future__ import annotations

import numpy as np

from ...rules import sequences
from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.trees import function_def, is_marker
from ..runtime import caller_state
from ..runtime.checkpoints import fresh_containers
from ..runtime.tangents import stack_pop

#: calls that write into their first argument
_WRITES_FIRST = (sequences.grow, runtime.put, caller_state.put_kept, stack_pop)

#: methods of lists, dicts and arrays that write into their object
_WRITING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                              "popitem", "sort", "reverse", "fill", "put", "itemset", "resize", "__setitem__",
                              "__delitem__", "__iadd__", "__imul__"})

_UNMODELLED = (gast.Try, gast.With, gast.AsyncWith, gast.AsyncFor, gast.AsyncFunctionDef, gast.FunctionDef,
               gast.ClassDef, gast.Global, gast.Nonlocal, gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)

#: where an expression may be computed early: its value is the same and nothing is skipped for it
_STRICT = (gast.BinOp, gast.UnaryOp)


class NotCut(Exception):
    """The generated jvp holds something the cut does not model."""


def recorded(value):
    """``value`` as it is now: a list or dict in it copied (generated code grows and writes them in place)."""
    return fresh_containers(value, {}) if isinstance(value, (list, dict, tuple)) else value


def cut(fn_def, tangents, first, last, callees, module, names, take) -> tuple:
    """``(primal, tangent)``: ``fn_def`` (a generated jvp) as its two halves.

    ``tangents``: the names of tangents in it (its Adjoints' table);
    ``first``/``last``: how many of its parameters, first or last, are
    tangents; ``callees``: the name of each called ``jvp_`` variant -> the
    names of its halves and how many tangents it takes first; ``names``:
    the names of the halves; ``take``: the name of the tangent half's reader.
    """
    if _stub(fn_def):
        return tuple(_renamed(fn_def, name) for name in names)
    return _Cut(fn_def, tangents, first, last, callees, module, take).halves(names)


def _stub(fn_def) -> bool:
    """A callee refused where it runs (``_refused_when_called``): its body raises."""
    return len(fn_def.body) == 1 and isinstance(fn_def.body[0], gast.Raise)


def _renamed(fn_def, name):
    out = compat.clone(fn_def)
    out.name = name
    return out


class _Cut:
    def __init__(self, fn_def, tangents, first, last, callees, module, take):
        for node in compat.walk(fn_def):
            if node is not fn_def and isinstance(node, _UNMODELLED) or \
                    isinstance(node, (gast.For, gast.While)) and node.orelse or \
                    isinstance(node, gast.For) and not isinstance(node.target, gast.Name):
                raise NotCut(type(node).__name__)
        self.fn_def, self.callees, self.module, self.ns = fn_def, callees, module, module.ns
        params = [a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs]
        self.tangent_params = params[:first] + (params[len(params) - last:] if last else [])
        self.params = [p for p in params if p not in self.tangent_params]
        self.stack = module.ns.stack
        self.take = take
        body = fn_def.body
        if not body or not isinstance(body[-1], gast.Return) or any(
                isinstance(n, gast.Return) for s in body[:-1] for n in compat.walk(s)):
            raise NotCut("return")
        self.body, ret = body[:-1], body[-1].value
        if not (isinstance(ret, gast.Tuple) and len(ret.elts) == 2):
            raise NotCut("return")
        self.value, self.tangent = ret.elts
        self.tangents = set(tangents) | set(self.tangent_params)
        self._close()
        if _loads(self.value) & self.tangents:
            raise NotCut("a value computed from a tangent")
        self.hoisted: dict = {}  # id of a tangent statement -> [(name, expression computed early)]
        self._hoist_all(self.body)
        self.needed = self._needed()

    # -- which statements are the tangent's -------------------------------------------------------

    def _simple(self, stmts=None):
        for s in self.body if stmts is None else stmts:
            if isinstance(s, gast.If):
                yield from self._simple(s.body)
                yield from self._simple(s.orelse)
            elif isinstance(s, (gast.For, gast.While)):
                yield from self._simple(s.body)
            elif not is_marker(s):
                yield s

    def _close(self):
        """Grow the tangent names to everything computed from a tangent, until nothing changes; refuse a
        tangent statement that writes into a value the primal half makes (the record would change)."""
        while True:
            before = len(self.tangents)
            for s in self._simple():
                if self.mixed(s) is None and self.is_tangent(s):
                    self.tangents |= _stored(s)
            if len(self.tangents) == before:
                break
        for s in self._simple():
            if self.mixed(s) is None and self.is_tangent(s) and self._written(s) - self.tangents:
                raise NotCut("a tangent statement writing into a value of the primal")
        for s in self.body:
            for n in compat.walk(s):
                if isinstance(n, gast.For) and (n.target.id in self.tangents or _loads(n.iter) & self.tangents) or \
                        isinstance(n, (gast.If, gast.While)) and _loads(n.test) & self.tangents:
                    raise NotCut("control flow on a tangent")
        if set(self.params) & self.tangents:
            raise NotCut("a parameter written by the tangent")

    def is_tangent(self, s) -> bool:
        if isinstance(s, gast.Return):
            return True
        return bool((_loads(s) | _stored(s)) & self.tangents)

    def _written(self, s) -> set:
        """The names ``s`` writes into: the base of an item or attribute target, a mutating call's first argument."""
        found = set()
        targets = s.targets if isinstance(s, gast.Assign) else [s.target] if isinstance(s, gast.AugAssign) else \
            s.targets if isinstance(s, gast.Delete) else []
        for t in targets:
            for n in compat.walk(t):
                if isinstance(n, (gast.Subscript, gast.Attribute)):
                    found |= {m.id for m in compat.walk(n.value) if isinstance(m, gast.Name)}
        for n in compat.walk(s):
            if isinstance(n, gast.Call) and n.args and isinstance(n.args[0], gast.Name) and \
                    self._resolve(n.func) in _WRITES_FIRST:
                found.add(n.args[0].id)
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and isinstance(n.func.value, gast.Name) \
                    and n.func.attr in _WRITING_METHODS:
                found.add(n.func.value.id)
        return found

    def mixed(self, s):
        """The called variant's name for ``[y, dy] = jvp_g(dx, ..., x, ...)``, else None."""
        if isinstance(s, gast.Assign) and isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) \
                and s.value.func.id in self.callees:
            target = s.targets[0] if len(s.targets) == 1 else None
            if not (isinstance(target, (gast.Tuple, gast.List)) and len(target.elts) == 2
                    and all(isinstance(e, gast.Name) for e in target.elts)):
                raise NotCut("a call of a jvp variant")
            value, tangent = (e.id for e in target.elts)
            _, _, k = self.callees[s.value.func.id]
            given = s.value.args[:k]
            if value in self.tangents or tangent not in self.tangents or not all(
                    isinstance(a, gast.Name) and a.id in self.tangents for a in given) or \
                    _loads(compat.tuple_(s.value.args[k:] + [kw.value for kw in s.value.keywords])) & self.tangents:
                raise NotCut("a call of a jvp variant")
            return s.value.func.id
        return None

    def _resolve(self, node):
        if isinstance(node, gast.Name):
            return self.ns.globals.get(node.id)
        if isinstance(node, gast.Attribute):
            base = self._resolve(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    # -- what the tangent half computes early ---------------------------------------------------

    def _hoist_all(self, stmts):
        for s in self._simple(stmts):
            if self.mixed(s) is None and self.is_tangent(s) and isinstance(s, gast.Assign):
                found: list = []
                s.value = self._hoist(s.value, False, found)
                if found:
                    self.hoisted[id(s)] = found
        found = []
        self.tangent = self._hoist(self.tangent, False, found)
        self.hoisted["return"] = found

    def _hoist(self, node, strict, found):
        """``node`` with each largest part that reads no tangent and sits where it is surely computed
        (an operand of arithmetic or of a ufunc) replaced by a name the primal half binds."""
        reads = _loads(node)
        if strict and isinstance(node, _STRICT + (gast.Call,)) and reads and not reads & self.tangents \
                and (not isinstance(node, gast.Call) or self._ufunc(node)):
            name = self.module.names.local_everywhere("early")
            found.append((name, node))
            return compat.name(name)
        if isinstance(node, gast.BinOp):
            node.left, node.right = self._hoist(node.left, True, found), self._hoist(node.right, True, found)
        elif isinstance(node, gast.UnaryOp):
            node.operand = self._hoist(node.operand, True, found)
        elif isinstance(node, gast.Call):
            inner = self._ufunc(node)
            node.args = [self._hoist(a, inner, found) for a in node.args]
        return node

    def _ufunc(self, call) -> bool:
        return isinstance(self._resolve(call.func), np.ufunc) and not call.keywords

    # -- what the tangent half reads from the record ---------------------------------------------

    def _needed(self) -> set:
        """The names the tangent half reads that the primal half binds: read by tangent statements, and the
        tests of the branches the tangent half keeps; to a fixed point (a kept branch keeps its test's)."""
        local = set(self.params) | {n for s in self.body for n in _all_stored(s)}
        needed = set()
        for s in self._simple():
            if self.mixed(s) is None and self.is_tangent(s):
                needed |= _loads(s) - self.tangents
        needed |= _loads(self.tangent) - self.tangents
        needed &= local
        while True:
            tests = set().union(*(_loads(s.test) for s in _ifs(self.body) if self._kept([s], needed)))
            if tests <= needed:
                return needed
            needed |= tests & local

    def _kept(self, stmts, needed) -> bool:
        """Whether the tangent half runs anything in ``stmts``."""
        for s in stmts:
            if isinstance(s, gast.If):
                if self._kept(s.body, needed) or self._kept(s.orelse, needed):
                    return True
            elif isinstance(s, (gast.For, gast.While)):
                if self._kept(s.body, needed) or isinstance(s, gast.For) and s.target.id in needed:
                    return True
            elif isinstance(s, (gast.Break, gast.Continue)):
                return True  # the tangent half leaves the trip where the primal did
            elif is_marker(s):
                continue
            elif self.mixed(s) is not None or self.is_tangent(s) or (_all_stored(s) | self._written(s)) & needed:
                return True
        return False

    # -- the halves ------------------------------------------------------------------------------

    def halves(self, names):
        self.pairs: dict = {}  # id of a read of a recorded name -> id of the push that recorded it
        primal_body, tangent_body = self._pairs(self.params)
        p, t = self.block(self.body)
        primal_body += p
        tangent_body += t
        for name, expr in self.hoisted["return"]:
            primal_body += [compat.assign(name, expr), self._push(name, False)]
            tangent_body.append(self._read(name))
        primal_body.append(compat.ret(self.value))
        tangent_body.append(compat.ret(self.tangent))
        dead = _dead_reads(tangent_body, self.pairs)  # a name read back that the tangent half binds again first
        if dead:
            pushes = {self.pairs[r] for r in dead}
            primal_body, tangent_body = _without(primal_body, pushes), _without(tangent_body, dead)
        primal_args = compat.clone(self.fn_def.args)
        for field in ("posonlyargs", "args"):
            kept = [a for a in getattr(primal_args, field) if a.id not in self.tangent_params]
            setattr(primal_args, field, kept)
        primal_args.args = [compat.make("Name", id=self.stack, ctx=gast.Param())] + primal_args.args
        primal_args.posonlyargs = []
        tangent_args = compat.make("arguments", args=[compat.make("Name", id=n, ctx=gast.Param())
                                                      for n in [self.take] + self.tangent_params],
                                   posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
        return function_def(names[0], primal_args, primal_body), function_def(names[1], tangent_args, tangent_body)

    def _push(self, name, containers=True):
        value = compat.name(name)
        if containers:
            value = compat.call(compat.name(self.ns.bind(recorded, "recorded")), [value])
        return compat.expr_stmt(compat.call(compat.attr(compat.name(self.stack), "append"), [value]))

    def _read(self, name):
        return compat.assign(name, compat.call(compat.name(self.take)))

    def _pairs(self, bound):
        """``(pushes, reads)``: the names of ``bound`` the tangent half reads, recorded where the primal binds
        them and read back there."""
        pushes, reads = [], []
        for n in bound:
            if n in self.needed:
                pushes.append(self._push(n))
                reads.append(self._read(n))
                self.pairs[id(reads[-1])] = id(pushes[-1])
        return pushes, reads

    def block(self, stmts):
        primal, tangent = [], []
        for s in stmts:
            if is_marker(s):
                primal.append(s)
                tangent.append(compat.clone(s))
            elif isinstance(s, gast.If):
                pb, tb = self.block(s.body)
                po, to = self.block(s.orelse)
                primal.append(compat.if_stmt(s.test, _filled(pb), _filled(po, True)))
                if self._kept([s], self.needed):
                    tangent.append(compat.if_stmt(compat.clone(s.test), _filled(tb), _filled(to, True)))
            elif isinstance(s, (gast.For, gast.While)):
                primal_loop, tangent_loop = self.loop(s)
                primal += primal_loop
                tangent += tangent_loop
            elif isinstance(s, (gast.Break, gast.Continue)):
                primal.append(s)
                tangent.append(compat.clone(s))
            elif (callee := self.mixed(s)) is not None:
                primal_name, tangent_name, k = self.callees[callee]
                value, dvalue = (e.id for e in s.targets[0].elts)
                call = s.value
                primal.append(compat.assign(value, compat.call(compat.name(primal_name), [compat.name(self.stack)]
                                                               + call.args[k:], {kw.arg: kw.value for kw in call.keywords})))
                pushes, reads = self._pairs([value])
                primal += pushes
                tangent.append(compat.assign(dvalue, compat.call(compat.name(tangent_name), [compat.name(self.take)]
                                                                  + [compat.clone(a) for a in call.args[:k]])))
                tangent += reads
            elif self.is_tangent(s):
                for name, expr in self.hoisted.get(id(s), ()):
                    primal += [compat.assign(name, expr), self._push(name, False)]
                    tangent.append(self._read(name))
                tangent.append(s)
            else:
                primal.append(s)
                bound = sorted(_stored(s) | self._written(s) & self.needed)  # a value written in place: again
                pushes, reads = self._pairs(bound)
                primal += pushes
                tangent += reads
        return primal, tangent

    def loop(self, s):
        """A loop in both halves: the primal records its trip count (in a slot it fills as it runs), and its
        target where the tangent reads it; the tangent half runs that many trips."""
        pb, tb = self.block(s.body)
        target = [s.target.id] if isinstance(s, gast.For) else []
        if not self._kept([s], self.needed):
            pb = _filled(pb)
            return [compat.for_stmt(s.target.id, s.iter, pb) if isinstance(s, gast.For) else
                    compat.while_stmt(s.test, pb)], []
        slot = self.module.names.local_everywhere("trips")
        count = compat.make("AugAssign", target=compat.make("Subscript", value=compat.name(self.stack),
                                                            slice=compat.name(slot), ctx=gast.Store()),
                            op=gast.Add(), value=compat.const(1))
        start = [compat.assign(slot, compat.call(compat.name(self.ns.bind(len, "len")), [compat.name(self.stack)])),
                 compat.expr_stmt(compat.call(compat.attr(compat.name(self.stack), "append"), [compat.const(0)]))]
        pushes, reads = self._pairs(target)
        body = [count] + pushes + pb
        primal_loop = compat.for_stmt(s.target.id, s.iter, body) if isinstance(s, gast.For) \
            else compat.while_stmt(s.test, body)
        trip = self.module.names.local_everywhere("trip")
        taken = compat.call(compat.name(self.ns.bind(range, "range")), [compat.call(compat.name(self.take))])
        tangent_loop = compat.for_stmt(trip, taken, _filled(reads + tb))
        return start + [primal_loop], [tangent_loop]


def _dead_reads(stmts, reads) -> set:
    """The ids of the statements among ``reads`` (``n = take()``) whose ``n`` nothing in ``stmts`` reads after
    them: a backward liveness over the tangent half (its loops to a fixed point; after ``break`` or
    ``continue`` whatever is live after the loop or at its head)."""
    dead: set = set()

    def block(body, live, loop):
        for stmt in reversed(body):
            live = statement(stmt, live, loop)
        return live

    def statement(stmt, live, loop):
        if isinstance(stmt, gast.Assign):
            if id(stmt) in reads:
                if stmt.targets[0].id in live:
                    dead.discard(id(stmt))
                else:
                    dead.add(id(stmt))
            return (live - _stored(stmt)) | _loads(stmt.value) | (_loads(compat.tuple_(stmt.targets)))
        if isinstance(stmt, gast.If):
            return block(stmt.body, live, loop) | block(stmt.orelse, live, loop) | _loads(stmt.test)
        if isinstance(stmt, gast.For):
            head = set(live)
            while True:
                grown = live | (block(stmt.body, head, head | live) - {stmt.target.id})
                if grown <= head:
                    break
                head |= grown
            return head | _loads(stmt.iter)
        if isinstance(stmt, (gast.Break, gast.Continue)):
            return set(loop)
        if isinstance(stmt, gast.Return):
            return _loads(stmt)
        return live | _all_loads(stmt)

    block(stmts, set(), set())
    return dead


def _without(stmts, ids) -> list:
    """``stmts`` without the statements of ``ids``, through every block (an emptied block gets ``pass``)."""
    out = []
    for stmt in stmts:
        if id(stmt) in ids:
            continue
        for _, field, inside in compat.own_blocks(stmt):
            setattr(stmt, field, _filled(_without(inside, ids)))
        out.append(stmt)
    return out


def _all_loads(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name)}


def _filled(stmts, may_be_empty=False) -> list:
    """``stmts``, with ``pass`` where they hold only comment markers (which emit as comments alone)."""
    if all(is_marker(s) for s in stmts) and (stmts or not may_be_empty):
        return stmts + [compat.make("Pass")]
    return stmts


def _loads(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store)}


def _stored(s) -> set:
    """The names ``s`` binds (its Name targets)."""
    targets = s.targets if isinstance(s, gast.Assign) else [s.target] if isinstance(s, (gast.AugAssign,)) else []
    return {n.id for t in targets for n in compat.walk(t) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _all_stored(s) -> set:
    return {n.id for n in compat.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _ifs(stmts):
    for s in stmts:
        if isinstance(s, gast.If):
            yield s
            yield from _ifs(s.body)
            yield from _ifs(s.orelse)
        elif isinstance(s, (gast.For, gast.While)):
            yield from _ifs(s.body)
