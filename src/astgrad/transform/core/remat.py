"""Rematerialisation: values the adjoint recomputes instead of saving.

``t5 = 0.1 * x`` in a loop, read by the adjoint of a later statement of the
same block, is not pushed when ``x`` is restored by the adjoint anyway
(saved, or bound once) and not assigned between ``t5``'s definition and its
last adjoint reader: the adjoint recomputes it just before the first
statement of its own that reads it.

``rematerializable`` chooses the names before the sweeps run (the primal
then does not push them); ``recompute`` writes the statements the adjoint
sweep puts in front of a block that reads them.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from ... import rules
from ..ir.nodes import For, If, Op, atom_names, branches, walk_ops, walk_statements

# cheap elementwise primitives the adjoint may recompute rather than save
_REMAT = (np.add, np.subtract, np.multiply, np.negative, np.true_divide)


def rematerializable(body, an, params=(), ns=None) -> dict:
    """``{name: defining op}`` for the saved names the adjoint can recompute; ``an`` is the Analysis.

    A name bound before its one op (a parameter, a loop target) is never chosen: the primal's push
    before that op also saves the earlier value, which the adjoint restores for the reads above it.

    In the body of a ``for`` loop over ``range`` (not checkpointed, not cut
    short), the loop's counter is restored by the reverse loop itself, and an
    item ``x[i]`` of a parameter ``x`` that nothing binds and that is read only
    by indexing and ``len`` (so no call, alias or write can change it) is the
    same when recomputed: a step ``h = t[i + 1] - t[i]`` and ``h / 2`` are
    recomputed in the reverse trip instead of pushed (RK4's).  The operands
    nothing else saves (``t[i + 1]``, ``i + 1``) are recomputed with them.
    """
    defs: dict = {}
    for op in walk_ops(body):
        for t in op.targets:
            defs.setdefault(t, []).append(op)
    readers: dict = {}
    valued: set = set()  # names some adjoint reads for their values, not only for their shape
    for op in walk_ops(body):
        if an.is_active(op):
            for name in an.rule_reads(op):
                readers.setdefault(name, []).append(op)
            valued |= an.rule_reads(op, values_only=True)
    iters = {n for s in walk_statements(body) if isinstance(s, For) for n in atom_names(s.iter)}
    bound_otherwise = set(params) | {s.target for s in walk_statements(body) if isinstance(s, For)}
    still = _still(body, defs, params)
    chosen: dict = {}
    derived: dict = {}  # name -> as chosen's: an operand the adjoint reads nowhere, recomputed for a chosen name

    def leaves_of(op, t, i, stmts, counter):
        """``(start, leaves)``: where recomputing ``op`` starts in ``stmts`` and the names it reads that the adjoint
        restores anyway; None where it cannot be recomputed."""
        args = op.args
        start, leaves = i, set()
        if op.fn is rules.getitem:
            if len(args) != 2 or not isinstance(args[0], gast.Name) or args[0].id not in still:
                return None
            leaves.add(args[0].id)
            args = args[1:]
        elif op.fn not in _REMAT:
            return None
        for a in args:
            if isinstance(a, gast.Constant):
                continue
            if not isinstance(a, gast.Name) or a.id == t:
                return None
            if a.id in chosen and chosen[a.id][1] is stmts or a.id in derived and derived[a.id][1] is stmts:
                _, _, first, more = chosen.get(a.id) or derived[a.id]  # recomputed first, from its own leaves
                start = min(start, first)
                leaves |= more
            elif a.id in an.saved and a.id in valued or an.counts.get(a.id) == 1 or a.id == counter:
                leaves.add(a.id)  # restored anyway: a leaf saved only for its shape would be saved whole
            else:
                return None
        return start, leaves

    def visit(stmts, counter):
        position = {id(s): i for i, s in enumerate(stmts)}
        for i, op in enumerate(stmts):
            for block in branches(op):
                visit(block, _counter(op, defs, ns) if isinstance(op, For) else counter if isinstance(op, If) else None)
            if not isinstance(op, Op) or op.kind != "prim" or op.kwargs or len(op.targets) != 1:
                continue
            t = op.targets[0]
            if len(defs.get(t, ())) != 1 or t in an.ret_names or t in iters or t in bound_otherwise:
                continue
            found = leaves_of(op, t, i, stmts, counter)
            if found is None:
                continue
            if t not in an.saved:
                if t not in readers and t not in valued:
                    derived[t] = (op, stmts) + found
                continue
            reads = readers.get(t, [])
            if not reads or any(id(r) not in position or position[id(r)] <= i for r in reads):
                continue
            if not all(t in an.rule_reads(r, values_only=True) for r in reads):
                continue  # read for its shape: the stack keeps only that (``only_shape``)
            last = max(position[id(r)] for r in reads)
            start, leaves = found
            between = stmts[start + 1:last + 1]
            if not all(isinstance(s, Op) for s in between) or leaves & {x for s in between for x in s.targets}:
                continue
            chosen[t] = (op, stmts, start, leaves)
    visit(body, None)
    # a leaf must really be restored by the adjoint: not recomputed itself
    while True:
        bad = [t for t, (_, _, _, leaves) in chosen.items() if leaves & set(chosen)]
        if not bad:
            break
        for t in bad:
            del chosen[t]
    found = {t: entry[0] for t, entry in chosen.items()}
    helpers = {t: entry[0] for t, entry in derived.items()}
    for name in operands(helpers | found, list(found)):
        if name in helpers:
            found[name] = helpers[name]
    return found


def _counter(loop, defs, ns):
    """The target of a ``for`` loop over ``range`` that the reverse loop binds to the same numbers trip by
    trip (not checkpointed, not cut short, the name bound by nothing else); else None."""
    it = loop.iter
    plain = not loop.counted and loop.every is None and loop.snapshots is None
    ranged = isinstance(it, gast.Call) and isinstance(it.func, gast.Name) and it.func.id == "range" \
        and ns is not None and ns.globals.get("range", range) is range
    return loop.target if plain and ranged and loop.target not in defs else None


def _still(body, defs, params) -> set:
    """The parameters nothing binds and every operation reads only as the array indexed (``x[i]``) or by
    ``len(x)``: no call, copy, container or write can reach them, so their items are the same all call."""
    counters = [s.target for s in walk_statements(body) if isinstance(s, For)]
    found = {p for p in params if p not in defs and p not in counters}
    for s in walk_statements(body):
        if isinstance(s, Op):
            if s.kind == "prim" and s.fn is rules.getitem and len(s.args) == 2:
                reads = [s.args[1:]]
            elif s.fn is len and len(s.args) == 1 and not s.kwargs and isinstance(s.expr, gast.Call):
                reads = []
            else:
                reads = [s.args, list(s.kwargs.values()), [s.expr]]
        else:  # a statement kept as written, a loop's iterable, a test: anything may happen to what it names
            reads = [[getattr(s, field, None) for field in ("stmt", "iter", "test")]]
        for group in reads:
            for node in group:
                if isinstance(node, str):
                    found.discard(node)
                elif node is not None and not isinstance(node, list):
                    found -= {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}
    return found


def operands(remat, names) -> set:
    """The names that recomputing those of ``names`` in ``remat`` reads (through each other, too)."""
    out, todo = set(), [n for n in names if n in remat]
    while todo:
        for a in remat[todo.pop()].args:
            if isinstance(a, gast.Name) and a.id not in out:
                out.add(a.id)
                if a.id in remat:
                    todo.append(a.id)
    return out


def recompute(remat, code, done) -> list:
    """Statements recomputing the names of ``remat`` that ``code`` reads (and what they read).

    ``done`` holds the names already recomputed in this block, and grows.
    """
    out = []

    def need(name):
        if name in done or name not in remat:
            return
        op = remat[name]
        done.add(name)
        for a in op.args:
            if isinstance(a, gast.Name):
                need(a.id)
        out.append(compat.assign(name, compat.clone(op.expr)))
    for stmt in code:
        for n in gast.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                need(n.id)
    return out
