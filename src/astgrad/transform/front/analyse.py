"""Activity analysis: which values the adjoint must handle.

A value is *active* when it depends on a ``wrt`` argument through
differentiable operations, and *useful* when it reaches the returned value.
Only operations whose target is both get adjoint code.  The analysis is by
variable name and ignores statement order (a name active anywhere is active
everywhere), which can only add adjoint code, never drop needed code.

It also finds which variables the adjoint reads that are overwritten (in a
loop, or assigned twice): those are *saved*, pushed on the stack before each
overwrite and restored in the reverse sweep.
"""

from __future__ import annotations

from ...rules._introspect import argument_usage
from . import primitives
from ..ir import compat
from ..ir.compat import gast
from ..ir.errors import NoRuleTransformError
from ..ir.nodes import For, If, Op, Raw, While, atom_names, branches, walk_ops, walk_statements
from .ranks import Ranks
from .same_shapes import Shapes

FLOWING = ("prim", "copy", "pack", "unpack", "call", "opaque")


class Analysis:
    def __init__(self, body, ret, wrt, params, locals_, source, ranks=None, returned=None):
        self.locals = set(locals_)
        self.ret_names = [n for n in atom_names(ret) if n in self.locals]
        self.active = set(wrt)
        self.useful = set(self.ret_names)
        ops = list(walk_ops(body))
        self._propagate(ops)
        self.adjoint = self.active & self.useful
        for op in ops:
            if op.kind == "opaque" and self.is_active(op):
                message, hint = op.error or ("no gradient rule", "")
                raise source.error(op.node, message, hint, NoRuleTransformError)
            if op.kind == "prim" and op.kwargs and self.is_active(op):
                _bind_active_keywords(op, self.active, source)
        for s in walk_statements(body):
            if isinstance(s, Raw) and s.guard is not None and set(atom_names(s.stmt)) & self.active:
                node, message, hint = s.guard  # kept as written, out of the adjoint's sight (a global's item)
                raise source.error(node, message, hint, NoRuleTransformError)
        self.counts = self._assignment_counts(body, params)
        # ranks: parameter -> (rank, holds an int); returned: the rank a call of a user function returns
        self.ranks = Ranks(body, params, ranks, self.locals, returned)
        self.shapes = Shapes(body, params, self.counts, self.locals | set(params), self.ranks)
        self.reads = self._adjoint_reads(body)
        self.saved = {v for v in self.reads if self.counts.get(v, 0) > 1}

    def keeps_shape(self, op, i) -> bool:
        """Whether argument ``i`` of ``op`` surely gets a gradient of its shape: no un-broadcasting."""
        return self.shapes.same(op, i) or self.ranks.keeps_shape(op, i)

    def reads_of(self, op) -> set[str]:
        names = set(atom_names(op.expr))
        for a in op.args:
            names.update(atom_names(a))
        for a in op.kwargs.values():
            names.update(atom_names(a))
        return names & self.locals

    def _propagate(self, ops):
        changed = True
        while changed:
            changed = False
            for op in ops:
                if op.kind in FLOWING and not set(op.targets) <= self.active \
                        and self.reads_of(op) & self.active:
                    self.active.update(op.targets)
                    changed = True
        changed = True
        while changed:
            changed = False
            for op in ops:
                if op.kind in FLOWING and set(op.targets) & self.useful:
                    new = (self.reads_of(op) & self.active) - self.useful
                    if new:
                        self.useful |= new
                        changed = True

    def is_active(self, op) -> bool:
        return op.kind in FLOWING and bool(set(op.targets) & self.adjoint) \
            and bool(self.reads_of(op) & self.active)

    def _assignment_counts(self, body, params):
        """How often each name may be assigned on one path (2 means "more than once")."""
        def visit(stmts, weight, counts):
            for s in stmts:
                if isinstance(s, Op):
                    for t in s.targets:
                        counts[t] = counts.get(t, 0) + weight
                elif isinstance(s, If):
                    left = visit(s.body, weight, dict(counts))
                    right = visit(s.orelse, weight, dict(counts))
                    for k in set(left) | set(right):
                        counts[k] = max(left.get(k, 0), right.get(k, 0))
                elif isinstance(s, For):
                    counts[s.target] = counts.get(s.target, 0) + 2
                    visit(s.body, 2, counts)
                elif isinstance(s, While):
                    visit(s.cond, weight, counts)
                    visit(s.body, 2, counts)
            return counts
        return visit(body, 1, {p: 1 for p in params})

    def _adjoint_reads(self, body) -> set[str]:
        reads = set()
        for s in walk_statements(body, branches):  # a While's cond has no adjoint of its own
            if isinstance(s, Op) and self.is_active(s):
                reads.update(self.rule_reads(s))
            elif isinstance(s, For):
                reads.update(n for n in atom_names(s.iter) if n in self.locals)
        return reads

    def rule_reads(self, op, values_only=False) -> set[str]:
        """Primal names the adjoint of ``op`` reads (``values_only``: not just for their shape)."""
        if op.kind == "unpack":  # unpacked_gradient asks the value what it is (an array gets an array)
            return set(atom_names(op.args[0])) & self.locals
        if op.kind != "prim":
            return set()
        kind, rule = primitives.classify(op.fn)
        rule = rule if kind == "prim" else None  # a generated stack's pop in forward mode: a helper without a rule
        wanted = tuple(isinstance(a, gast.Name) and a.id in self.active for a in op.args)
        usage = rule.usage_for(wanted) if rule is not None else {}
        reads = set()
        unbroadcast = primitives.needs_unbroadcast(op.fn)
        for i, atom in enumerate(op.args):
            used = argument_usage(rule.vjp, usage, i) if rule is not None else "value"
            is_input = isinstance(atom, gast.Name) and atom.id in self.active
            if values_only:
                if used == "value":
                    reads.update(atom_names(atom))
            elif used != "unused" or (unbroadcast and is_input and not self.keeps_shape(op, i)):
                reads.update(atom_names(atom))
        skip = ("unused", "meta") if values_only else ("unused",)
        for key, atom in op.kwargs.items():
            if usage.get(key, "value") not in skip:
                reads.update(atom_names(atom))
        ans_used = argument_usage(rule.vjp, usage, -1) if rule is not None else "value"
        if ans_used not in skip or not usage:
            reads.update(op.targets)
        return reads & self.locals


def _bind_active_keywords(op, active, source):
    """Move active keyword arguments (``np.select(c, v, default=y)``) to the positions the rule differentiates."""
    rule = primitives.classify(op.fn)[1]
    refused = rule.refused_keyword(op.kwargs)
    if refused is not None:
        raise source.error(op.node, *refused, NoRuleTransformError)
    wanted = [key for key, atom in op.kwargs.items() if set(atom_names(atom)) & active]
    if not wanted:
        return
    bound = rule.bind_keywords(op.args, op.kwargs, wanted)
    if bound is None:
        raise source.error(op.node, f"{rule.name} gives no gradient to {wanted[0]}= passed by keyword",
                           "pass that argument by position")
    args, op.kwargs = bound
    op.args = [a if isinstance(a, gast.AST) else compat.const(a) for a in args]
