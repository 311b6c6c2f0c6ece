"""``shape(x)`` read once before a loop that cannot change it, not on every trip.

The reverse sweep of a loop over reactions adds each item's gradient at its
index, ``dc = add_at(dc, g, shape(c), a)``, three times a trip; ``c`` is the
step's state, bound before the loop over reactions and never in it.  A
person reads ``c.shape`` once; ``shape`` is a call (0.1 µs) on every trip.
This pass binds ``t = shape(x)`` just before the outermost loop in which it
is proven the same on every trip, and reads ``t`` in it.

Proven, never guessed, on the generated function:

* ``x`` is a name the loop (its body and its test) never binds nor
  deletes, and bound where the loop starts (a parameter or a statement
  before it in an enclosing block, with no ``del`` between): ``shape(x)``
  reads the one value the trips read, and reading it before a loop that
  runs no trip reads a bound name;
* every value of ``x`` has a known rank (front/ranks.py): an array, a
  number or the stand-in ``Shaped``, whose shape no assignment to an item
  changes, never a list (``append``) or a dict (``shape`` raises for one);
* the loop writes into no attribute or item (``x.shape = ...``), deletes
  none, and calls only numpy, the rule table, the runtime's helpers (not
  its run-time checks, which run the user's callables), ``len``,
  ``range``, ``reversed`` and the stack's ``append`` and ``pop``: nothing
  that could reshape an array in place through another name.

A callee's half reads shapes outside its loops the same way: ``backward_f`` of a
callee adds each item's gradient with ``add_at(dy, g, shape(y), i)`` ten
times, ``y`` popped once at its start.  Where a name is bound by one plain
assignment at the function's top level (or is a parameter never bound)
and the statements after it bind nor delete it and are safe as a loop's
trips must be, two reads or more of ``shape(x)`` after it become one,
read right after that assignment (a rank known: it cannot raise).

Otherwise the call stays in the loop.  It runs last (in a callee, in each
half of its pair), and for the numpy backend only: the Numba backend
compiles the loop and keeps ``shape(x)`` where its own passes look for it.

The same proof hoists arithmetic on numbers out of a ``for`` loop over a
``range``: the reverse sweep of ``omega = omega - dt * (... + damping *
omega)`` multiplies by ``1 - damping * dt`` on every trip.  A subexpression
is computed once before the loop, exactly as the loop evaluates it (the
same operands in the same order: never reassociated, which would change the
last bits), when

* it is made of ``+``, ``-``, ``*`` and unary ``-`` over number literals
  and names of rank 0 that the loop never binds nor deletes and that are
  bound where it starts (the conditions above), with at least one name;
* it sits in a statement every trip runs: one of the plain statements
  (assignments, expressions) the loop's body begins with, outside a
  conditional expression, ``and``/``or``, a lambda or a comprehension;
* it is computed under ``if range(...):``, the loop's own range: a loop of
  no trip computes nothing, as before.
"""

from __future__ import annotations

import builtins
import copy

from ..ir import compat
from ..ir.compat import gast
from .. import runtime
from ..ir.trees import rewrite
from .inplace import _callee

_BUILTINS = (builtins.len, builtins.range, builtins.reversed)
#: the modules whose functions the loop may call: numpy's, the rule table's, the runtime's helpers
_MODULES = ("numpy", "astgrad.rules")
_RUNTIME = ("astgrad.transform.runtime", "astgrad.transform.runtime.structural")


def hoist_invariant_shapes(fn_def, ns, names, rank, callee=False):
    """``fn_def`` with each loop-invariant ``shape(x)`` read once before its loop (in place).

    ``names``: the function's name pool (``temp()``); ``rank(x)``: x's rank or None.  ``callee``: ``fn_def``
    is a half of a callee's pair, whose reads outside loops are read once too (``_Hoist.function``).
    """
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    hoist = _Hoist(ns, names, rank)
    before_loops(fn_def.body, frozenset(params), hoist.hoisted)
    if callee:
        hoist.function(fn_def.body, params)
    return fn_def


def before_loops(stmts, bound, inserted) -> None:
    """Put ``inserted(loop, bound)`` before each loop of ``stmts`` and of the blocks nested in them (the lists
    changed in place); ``bound``: the names surely bound where ``stmts`` starts, kept through each statement
    (a name an inserted assignment binds counts from there on)."""
    k = 0
    while k < len(stmts):
        stmt = stmts[k]
        if isinstance(stmt, (gast.For, gast.While)):
            added = inserted(stmt, bound)
            stmts[k:k] = added
            k += len(added)
            bound = bound | {a.targets[0].id for a in added if isinstance(a, gast.Assign)}
        inner = bound - _unbound(stmt)
        for _, _, inside in compat.own_blocks(stmt):
            before_loops(inside, inner, inserted)
        bound = (bound - _unbound(stmt)) | _binds(stmt)
        k += 1


class _Hoist:
    def __init__(self, ns, names, rank):
        self.ns, self.names, self.rank = ns, names, rank

    def hoisted(self, loop, bound) -> list:
        """The statements to put before ``loop``: its reads of shapes, then its invariant arithmetic."""
        hoisted = self.loop(loop, bound)
        computed = self.arithmetic(loop, bound) if hoisted is not None else []
        hoisted = hoisted or []
        if computed:  # under the loop's own range: computed only where a trip runs
            hoisted = hoisted + [compat.if_stmt(copy.deepcopy(self.range_of(loop)), computed)]
        return hoisted

    def function(self, body, params):
        """Read ``shape(x)`` once where the function reads it twice or more after the one statement binding ``x``
        (a parameter: its start; a callee's backward half: the pop of what its forward half saved), a plain
        assignment at the function's top level after which nothing binds nor deletes ``x`` and every statement
        is ``safe`` (the conditions of a loop's, the rest of the function standing for the loop's trips)."""
        stored: dict = {}
        for i, stmt in enumerate(body):
            for x in _stored(stmt):
                stored.setdefault(x, []).append(i)
        unsafe = [i for i, stmt in enumerate(body) if not all(self.safe(node) for node in compat.walk(stmt))]
        after = {}  # x -> the index of the first statement after its binding
        for x, at in sorted(stored.items()):  # sorted: the temporaries' names the same in every process
            if len(at) == 1 and x not in params and isinstance(body[at[0]], gast.Assign) and x in _binds(body[at[0]]):
                after[x] = at[0] + 1
        after.update((x, 0) for x in sorted(params) if x not in stored)
        reads: dict = {}
        for x, start in sorted(after.items()):
            count = sum(self.shape_of(node) == x for stmt in body[start:] for node in compat.walk(stmt))
            if count >= 2 and self.rank(x) is not None and not any(i >= start for i in unsafe):
                reads[x] = (start, self.names.temp())
        for x, (start, t) in sorted(reads.items(), key=lambda item: -item[1][0]):
            def replace(node, x=x, t=t):
                return compat.name(t) if self.shape_of(node) == x else None
            body[start:] = [rewrite(stmt, replace) for stmt in body[start:]]
            body.insert(start, compat.assign(t, compat.call(compat.name(self.ns.helper(runtime.shape)),
                                                            [compat.name(x)])))

    def loop(self, loop, bound):
        """The assignments ``t = shape(x)`` to put before ``loop``, its reads replaced by ``t``."""
        trips = loop.body + ([loop.test] if isinstance(loop, gast.While) else [])
        if not all(self.safe(node) for part in trips for node in compat.walk(part)):
            return None
        changed = self.changed(loop)
        reads: dict = {}
        for part in trips:
            for node in compat.walk(part):
                x = self.shape_of(node)
                if x is not None and x in bound and x not in changed and x not in reads and self.rank(x) is not None:
                    reads[x] = self.names.temp()
        if not reads:
            return []

        def replace(node):
            x = self.shape_of(node)
            return compat.name(reads[x]) if x in reads else None
        loop.body = [rewrite(s, replace) for s in loop.body]
        if isinstance(loop, gast.While):
            loop.test = rewrite(loop.test, replace)
        return [compat.assign(t, compat.call(compat.name(self.ns.helper(runtime.shape)), [compat.name(x)]))
                for x, t in reads.items()]

    @staticmethod
    def changed(loop) -> set:
        """The names ``loop`` (its body and its target) binds or deletes."""
        changed = set().union(*(_stored(s) for s in loop.body)) if loop.body else set()
        if isinstance(loop, gast.For):
            changed |= {n.id for n in compat.walk(loop.target) if isinstance(n, gast.Name)}
        return changed

    def range_of(self, loop):
        """The ``range(...)`` call a ``for`` loop runs over (or over ``reversed`` of), of names and literals; else
        None."""
        if not isinstance(loop, gast.For):
            return None
        iter_ = loop.iter
        if isinstance(iter_, gast.Call) and len(iter_.args) == 1 and not iter_.keywords \
                and _callee(iter_.func, self.ns) is builtins.reversed:
            iter_ = iter_.args[0]
        if isinstance(iter_, gast.Call) and not iter_.keywords and _callee(iter_.func, self.ns) is builtins.range \
                and all(isinstance(a, (gast.Name, gast.Constant)) for a in iter_.args):
            return iter_
        return None

    def arithmetic(self, loop, bound) -> list:
        """The assignments ``t = 1 - damping * dt`` to run before ``loop`` (a ``for`` over a range) where a trip
        runs, their subexpressions in the loop replaced by ``t`` (see the module's doc); the loop is safe."""
        if self.range_of(loop) is None:
            return []
        changed = self.changed(loop)

        def operand(node) -> bool:
            if isinstance(node, gast.Name):
                return node.id in bound and node.id not in changed and self.rank(node.id) == 0
            return isinstance(node, gast.Constant) and type(node.value) in (int, float)

        def hoistable(node) -> bool:
            if isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Add, gast.Sub, gast.Mult)):
                return (operand(node.left) or hoistable(node.left)) and (operand(node.right) or hoistable(node.right))
            if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
                return operand(node.operand) or hoistable(node.operand)
            return False

        found: dict = {}  # gast.dump of the subexpression -> (its temporary, the subexpression)

        def replace(node):
            if isinstance(node, _CONDITIONAL):
                return node  # not evaluated on every trip: left as it is, nothing inside it hoisted
            if hoistable(node) and any(isinstance(n, gast.Name) for n in compat.walk(node)):
                key = gast.dump(node)
                if key not in found:
                    found[key] = (self.names.temp(), node)
                return compat.name(found[key][0])
            return None
        for i, stmt in enumerate(loop.body):
            if not isinstance(stmt, (gast.Assign, gast.Expr)):
                break  # a statement after a branch or a loop may not run on the first trip
            loop.body[i] = rewrite(stmt, replace)
        return [compat.assign(t, node) for t, node in found.values()]

    def shape_of(self, node):
        """``x`` where ``node`` is ``shape(x)`` of a name; else None."""
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], gast.Name) and _callee(node.func, self.ns) is runtime.shape:
            return node.args[0].id
        return None

    def safe(self, node) -> bool:
        """Whether ``node`` (one node of the loop) cannot change the shape of an array in place."""
        if isinstance(node, (gast.Attribute, gast.Subscript)) and not isinstance(node.ctx, gast.Load):
            return False
        if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.Try, gast.With, gast.Global, gast.Nonlocal)):
            return False
        if not isinstance(node, gast.Call):
            return True
        func = node.func
        if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.value.id == self.ns.stack:
            return func.attr in ("append", "pop")
        fn = _callee(func, self.ns)
        if fn is None:
            return False
        if any(fn is b for b in _BUILTINS):
            return True
        if isinstance(fn, type):
            return fn is runtime.Shaped
        module = getattr(fn, "__module__", None) or ""
        return module in _RUNTIME or any(module == m or module.startswith(m + ".") for m in _MODULES)


#: expressions whose parts may not all run: nothing inside them is hoisted
_CONDITIONAL = (gast.IfExp, gast.BoolOp, gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _stored(stmt) -> set:
    """The names ``stmt`` (with everything inside it) binds or deletes."""
    return {n.id for n in compat.walk(stmt) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}


def _unbound(stmt) -> set:
    """The names ``stmt`` may leave unbound: those it deletes anywhere inside it."""
    return {n.id for n in compat.walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Del)}


def _binds(stmt) -> set:
    """The names ``stmt`` surely binds: the targets of a plain assignment (not one inside a block)."""
    if isinstance(stmt, gast.Assign):
        return {n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name)
                and isinstance(n.ctx, gast.Store)}
    return set()
