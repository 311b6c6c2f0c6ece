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

Otherwise the call stays in the loop.  It runs last (in a callee, in each
half of its pair), and for the numpy backend only: the Numba backend
compiles the loop and keeps ``shape(x)`` where its own passes look for it.
"""

from __future__ import annotations

import builtins

from ..ir import compat
from ..ir.compat import gast
from .. import runtime
from ..ir.trees import rewrite
from .inplace import _callee

_BUILTINS = (builtins.len, builtins.range, builtins.reversed)
#: the modules whose functions the loop may call: numpy's, the rule table's, the runtime's helpers
_MODULES = ("numpy", "astgrad.rules")
_RUNTIME = ("astgrad.transform.runtime", "astgrad.transform.runtime.structural")


def hoist_invariant_shapes(fn_def, ns, names, rank):
    """``fn_def`` with each loop-invariant ``shape(x)`` read once before its loop (in place).

    ``names``: the function's name pool (``temp()``); ``rank(x)``: x's rank or None.
    """
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    _Hoist(ns, names, rank).block(fn_def.body, frozenset(params))
    return fn_def


class _Hoist:
    def __init__(self, ns, names, rank):
        self.ns, self.names, self.rank = ns, names, rank

    def block(self, stmts, bound):
        """Hoist out of the loops of ``stmts`` (a list, changed in place); ``bound``: names surely bound before it."""
        k = 0
        while k < len(stmts):
            stmt = stmts[k]
            if isinstance(stmt, (gast.For, gast.While)):
                hoisted = self.loop(stmt, bound)
                stmts[k:k] = hoisted
                k += len(hoisted)
                bound = bound | {h.targets[0].id for h in hoisted}
            inner = bound - _unbound(stmt)
            for field in ("body", "orelse"):
                inside = getattr(stmt, field, None)
                if isinstance(inside, list) and inside and isinstance(inside[0], gast.stmt):
                    self.block(inside, inner)
            bound = (bound - _unbound(stmt)) | _binds(stmt)
            k += 1

    def loop(self, loop, bound):
        """The assignments ``t = shape(x)`` to put before ``loop``, its reads replaced by ``t``."""
        trips = loop.body + ([loop.test] if isinstance(loop, gast.While) else [])
        if not all(self.safe(node) for part in trips for node in compat.walk(part)):
            return []
        changed = set().union(*(_stored(s) for s in loop.body)) if loop.body else set()
        if isinstance(loop, gast.For):
            changed |= {n.id for n in compat.walk(loop.target) if isinstance(n, gast.Name)}
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
