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
from ..ir.nodes import For, Op, atom_names, branches, walk_ops, walk_statements

# cheap elementwise primitives the adjoint may recompute rather than save
_REMAT = (np.add, np.subtract, np.multiply, np.negative)


def rematerializable(body, an, params=()) -> dict:
    """``{name: defining op}`` for the saved names the adjoint can recompute; ``an`` is the Analysis.

    A name bound before its one op (a parameter, a loop target) is never chosen: the primal's push
    before that op also saves the earlier value, which the adjoint restores for the reads above it.
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
    chosen: dict = {}

    def visit(stmts):
        position = {id(s): i for i, s in enumerate(stmts)}
        for i, op in enumerate(stmts):
            for block in branches(op):
                visit(block)
            if not isinstance(op, Op) or op.kind != "prim" or op.fn not in _REMAT or op.kwargs \
                    or len(op.targets) != 1:
                continue
            t = op.targets[0]
            if t not in an.saved or len(defs.get(t, ())) != 1 or t in an.ret_names or t in iters \
                    or t in bound_otherwise:
                continue
            reads = readers.get(t, [])
            if not reads or any(id(r) not in position or position[id(r)] <= i for r in reads):
                continue
            if not all(t in an.rule_reads(r, values_only=True) for r in reads):
                continue  # read for its shape: the stack keeps only that (``only_shape``)
            last = max(position[id(r)] for r in reads)
            start, leaves, ok = i, set(), True
            for a in op.args:
                if isinstance(a, gast.Constant):
                    continue
                if not isinstance(a, gast.Name) or a.id == t:
                    ok = False
                elif a.id in chosen and chosen[a.id][1] is stmts:  # recomputed first, from its own leaves
                    start = min(start, chosen[a.id][2])
                    leaves |= chosen[a.id][3]
                elif a.id in an.saved and a.id in valued or an.counts.get(a.id) == 1:
                    leaves.add(a.id)  # restored anyway: a leaf saved only for its shape would be saved whole
                else:
                    ok = False
            between = stmts[start + 1:last + 1]
            if not ok or not all(isinstance(s, Op) for s in between) \
                    or leaves & {x for s in between for x in s.targets}:
                continue
            chosen[t] = (op, stmts, start, leaves)
    visit(body)
    # a leaf must really be restored by the adjoint: not recomputed itself
    while True:
        bad = [t for t, (_, _, _, leaves) in chosen.items() if leaves & set(chosen)]
        if not bad:
            return {t: entry[0] for t, entry in chosen.items()}
        for t in bad:
            del chosen[t]


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
