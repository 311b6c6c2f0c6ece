"""The primal and adjoint sweeps of one function.

The primal sweep is the normalised function with pushes onto ``_stack``:
the old value of an overwritten variable the adjoint reads, the branch an
``if`` took, the trip count of a loop that may break or of a ``while``.
The adjoint sweep walks the statements backwards, inlines each rule, pops
what the primal pushed and accumulates gradients into ``d<name>``.

Adjoint variables are tracked statically as *live* (holding a value) or
not (zero): the first contribution assigns, later ones add, a gradient that
is statically zero is never computed, and ``0.0`` is written only where
control flow joins paths that disagree.
"""

from __future__ import annotations


import numpy as np

from .. import rules
from . import compat, primitives, runtime
from .inline import rewrite
from .locate import own_signature
from .compat import gast
from . import containers, fusion
from .runtime_errors import ORIGIN
from .shapes import _number
from .adjoint_ir import pop, push
from .ir import Break, For, If, Op, Raw, While, atom_names, walk_ops, walk_statements

_META = ("shape", "size", "ndim")
# rules that are elementwise expressions of the gradient and the operands: a
# gradient that only broadcasts to the result's shape gives arguments'
# gradients that broadcast to theirs (a scalar seed stays a scalar)
_SCALAR_SAFE = (np.add, np.subtract, np.multiply, np.negative, np.divide)
# cheap elementwise primitives the adjoint may recompute rather than save
_REMAT = (np.add, np.subtract, np.multiply, np.negative)


class Reverser:
    def __init__(self, builder, plan, remat=False):
        self.builder = builder
        self.plan = plan
        self.an = plan.analysis
        self.names = plan.names
        self.adj = plan.adjoints
        self.ns = builder.ns
        self.sequences = plan.sequences
        self.first = first_bindings(plan.body, plan.params)
        once = {t for names in self.first.values() for t in names if self.an.counts.get(t) == 1}
        self.available = set(plan.params) | once  # bound whenever the adjoint runs
        # names whose adjoint holds a value (a scalar seed) that broadcasts to their shape
        self.lazy = set()
        self.lazy_ok = True
        # names whose adjoint may hold the number 0.0 of a join (``zero``), not an array of their shape
        self.maybe_zero = set()
        self.backward_only = False  # a called function's backward half: only what rules read is kept
        self.depth = 0
        self.producers = {t: op for op in plan.body if isinstance(op, Op) for t in op.targets if t in once}
        # names that surely hold tuples or lists (unpacking anything else may unpack an array)
        self.built_sequences = {t for op in walk_ops(plan.body) for t in op.targets
                                if op.kind == "pack" or op.kind == "prim" and primitives.returns_sequence(op)}
        # saved values recomputed in the adjoint instead (name -> defining op)
        self.remat = self._rematerializable(plan.body) if remat else {}
        self.an.saved -= set(self.remat)
        self.read_counts = fusion.read_counts(plan.body)
        self.group_roots = {}  # the result of a group of elementwise operations -> the group

    # -- rematerialisation -------------------------------------------------
    # ``t5 = 0.1 * x`` in a loop, read by the adjoint of a later statement of
    # the same block, is not pushed when ``x`` is restored by the adjoint
    # anyway (saved, or bound once) and not assigned between ``t5``'s
    # definition and its last adjoint reader: the adjoint recomputes it just
    # before the first statement of its own that reads it.

    def _rematerializable(self, body):
        defs = {}
        for op in walk_ops(body):
            for t in op.targets:
                defs.setdefault(t, []).append(op)
        readers = {}
        for op in walk_ops(body):
            if self.an.is_active(op):
                for name in self.an.rule_reads(op):
                    readers.setdefault(name, []).append(op)
        iters = {n for s in walk_statements(body) if isinstance(s, For) for n in atom_names(s.iter)}
        chosen = {}

        def visit(stmts):
            position = {id(s): i for i, s in enumerate(stmts)}
            for i, op in enumerate(stmts):
                if isinstance(op, If):
                    visit(op.body)
                    visit(op.orelse)
                elif isinstance(op, (For, While)):
                    visit(op.body)
                if not isinstance(op, Op) or op.kind != "prim" or op.fn not in _REMAT or op.kwargs \
                        or len(op.targets) != 1:
                    continue
                t = op.targets[0]
                if t not in self.an.saved or len(defs.get(t, ())) != 1 or t in self.an.ret_names or t in iters:
                    continue
                reads = readers.get(t, [])
                if not reads or any(id(r) not in position or position[id(r)] <= i for r in reads):
                    continue
                if not all(t in self.an.rule_reads(r, values_only=True) for r in reads):
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
                    elif a.id in self.an.saved or self.an.counts.get(a.id) == 1:
                        leaves.add(a.id)
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

    def recompute(self, code, done):
        """Statements recomputing the rematerialised names ``code`` reads (and what they read)."""
        out = []

        def need(name):
            if name in done or name not in self.remat:
                return
            op = self.remat[name]
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

    # -- primal --------------------------------------------------------

    def primal(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, Op):
                out += self.primal_op(s)
            elif isinstance(s, If):
                node = compat.if_stmt(compat.name(s.test), self.primal(s.body), self.primal(s.orelse))
                out.append(node)
                if self.needed(s):
                    out.append(push(self.ns.stack, compat.name(s.test)))
            elif isinstance(s, For):
                out += self.primal_for(s)
            elif isinstance(s, While):
                out += self.primal_while(s)
            elif isinstance(s, Break):
                out.append(compat.make("Break"))
            elif isinstance(s, Raw):
                out.append(s.stmt)
        return out

    def primal_op(self, op):
        out = [push(self.ns.stack, compat.name(t)) for t in self.saved_targets(op)]
        expr = op.expr
        if op.kind == "call" and self.an.is_active(op):
            forward, _, _ = self.call_variant(op)
            expr = compat.call(compat.name(forward), [compat.name(self.ns.stack)] + [compat.clone(a) for a in op.args],
                               {k: compat.clone(v) for k, v in op.kwargs.items()})
        target = op.targets if op.kind == "unpack" else op.targets[0]
        out.append(compat.assign(target, compat.clone(expr)))
        setattr(out[-1], ORIGIN, (self.plan.source.filename, op.line, op.text, False))  # for errors at run time
        return out

    def primal_for(self, s):
        out = []
        if s.target in self.an.saved:
            out.append(push(self.ns.stack, compat.name(s.target)))
        body = self.primal(s.body)
        counted = self.needed(s) and _breaks(s.body)
        if counted:
            trips = self.names.fresh("_trips")
            out.append(compat.assign(trips, compat.const(0)))
            body = [compat.assign(trips, compat.binop(compat.name(trips), "Add", compat.const(1)))] + body
        out.append(compat.for_stmt(s.target, compat.clone(s.iter), body))
        if counted:
            out.append(push(self.ns.stack, compat.name(trips)))
        return out

    def primal_while(self, s):
        out = self.primal(s.cond)
        body = self.primal(s.body)
        if not self.needed(s):
            return out + [compat.while_stmt(compat.name(s.test), body)]
        trips = self.names.fresh("_trips")
        out.append(compat.assign(trips, compat.const(0)))
        body = [compat.assign(trips, compat.binop(compat.name(trips), "Add", compat.const(1)))] + body
        out.append(compat.while_stmt(compat.name(s.test), body))
        out.append(push(self.ns.stack, compat.name(trips)))
        return out

    def needed(self, s) -> bool:
        """Whether the statement leaves anything for the adjoint sweep to do."""
        if isinstance(s, Op):
            return self.an.is_active(s) or bool(self.saved_targets(s))
        if isinstance(s, If):
            return any(self.needed(x) for x in s.body + s.orelse)
        if isinstance(s, For):
            return s.target in self.an.saved or any(self.needed(x) for x in s.body)
        if isinstance(s, While):
            return any(self.needed(x) for x in s.cond + s.body)
        return False

    def saved_targets(self, op) -> list:
        """Targets whose old value ``op`` pushes: saved ones that had a value before."""
        return [t for t in op.targets if t in self.an.saved and t not in self.first.get(id(op), ())]

    # -- adjoint -----------------------------------------------------------

    def adjoint(self, stmts, live):
        """Adjoint code for ``stmts`` (reversed) and the live set after it."""
        out = []
        last_line = None
        done = set()  # rematerialised names recomputed in this block
        groups = fusion.groups(stmts, self.an, self.names.temps, self.read_counts)
        self.group_roots.update((ops[-1].targets[0], ops) for ops in groups.values())
        fused = set()  # ops whose adjoint a group's one expression already is
        for s in reversed(stmts):
            if id(s) in fused:
                continue
            if not self.needed(s):
                if isinstance(s, Op):
                    live.difference_update(s.targets)  # the old value's adjoint starts at zero
                continue
            code = []
            head = []
            group = groups.get(id(s))
            if group is not None and s.targets[0] in self.maybe_zero:
                if not all(self.zero_safe(m) for m in group):
                    group = None
                else:  # g * P for each operand: zeros of the operand's shape for g = 0.0
                    self.maybe_zero.discard(s.targets[0])
            done_as_group = group is not None and fusion.adjoint(self, group, live, head, code)
            if done_as_group:
                fused.update(id(m) for m in group)
            elif isinstance(s, Op):
                if group is not None:  # one rule per operation after all: only those decide on scalar seeds
                    self.group_roots.pop(s.targets[0], None)
                self.adjoint_op(s, live, code)
            else:
                spread = self.materialize(live)
                self.depth += 1
                if isinstance(s, If):
                    code = self.adjoint_if(s, live)
                elif isinstance(s, For):
                    code = self.adjoint_for(s, live)
                elif isinstance(s, While):
                    code = self.adjoint_while(s, live)
                self.depth -= 1
                out += spread
            if not code and not head:
                continue
            if s.line != last_line or not isinstance(s, Op):
                out.append(self.builder.comment(f"grad of line {s.line}: {s.text}",
                                                (self.plan.source.filename, s.line, s.text, True)))
            last_line = s.line if isinstance(s, Op) else None
            out += head
            if isinstance(s, Op) and self.remat:
                out += self.recompute(code, done)
            out += code
        return out, live

    def adjoint_op(self, op, live, out):
        if self.an.is_active(op):
            kind = op.kind
            if kind == "prim":
                self.guarded_prim(op, live, out)
            elif kind == "copy":
                if op.targets[0] in live:
                    self.accumulate(op.args[0], compat.name(self.adj(op.targets[0])), live, out,
                                    op.targets[0] in self.lazy)
            elif kind == "pack":
                if op.targets[0] in live:
                    g = compat.name(self.adj(op.targets[0]))
                    for i, a in enumerate(op.args):
                        self.accumulate(a, compat.call(self.helper(runtime.part), [g, compat.const(i)]), live, out,
                                        may_zero=True)
            elif kind == "unpack":
                if any(t in live for t in op.targets):
                    parts = compat.tuple_([compat.name(self.adj(t)) if t in live else compat.const(None)
                                           for t in op.targets])
                    if getattr(op.args[0], "id", None) not in self.built_sequences:
                        parts = compat.call(self.helper(runtime.unpacked_gradient), [parts, op.args[0]])
                    self.accumulate(op.args[0], parts, live, out)
            elif kind == "call":
                self.adjoint_call(op, live, out)
        saved = self.saved_targets(op)
        for t in reversed(op.targets):
            live.discard(t)
            self.lazy.discard(t)
            self.maybe_zero.discard(t)
            if t in saved:
                out.append(compat.assign(t, pop(self.ns.stack)))

    def guarded_prim(self, op, live, out):
        """``adjoint_prim``, skipped at run time when the gradient is the 0.0 a join wrote.

        A rule may index or reshape its gradient; the number zero has no
        shape to do that with, and every contribution would be zero anyway.
        """
        target = op.targets[0]
        if target in self.maybe_zero and self.zero_safe(op):
            self.maybe_zero.discard(target)  # 0.0 * an array of the result's shape: zeros of that shape
        if target not in self.maybe_zero or target not in live:
            self.adjoint_prim(op, live, out)
            return
        before = set(live)
        code = []
        self.adjoint_prim(op, live, code)
        if not code:
            return
        started = sorted(live - before)
        out.append(compat.if_stmt(compat.call(self.helper(runtime.is_zero), [compat.name(self.adj(target))]),
                                  [self.zero(v) for v in started], code))

    def zero_safe(self, op) -> bool:
        """A ufunc whose operands all have its result's shape: its rule multiplies g by such arrays."""
        return isinstance(op.fn, np.ufunc) and not op.kwargs and all(
            _number(a) or self.an.shapes.same(op, i) for i, a in enumerate(op.args))

    def adjoint_prim(self, op, live, out):
        target = op.targets[0]
        if target not in live:
            return
        g = self.adj(target)
        needed = [i for i, a in enumerate(op.args) if self.is_input(a)]
        if not needed:
            return
        scalar_g = target in self.lazy
        if scalar_g and not self.takes_scalar(target):
            out += self.materialize(live, [target])
            scalar_g = False
        if op.fn is rules.getitem and op.args[0].id in self.sequences:
            grad = containers.item_gradient(self.plan, self.helper, g, op.args[0], op.args[1])
            self.accumulate(op.args[0], grad, live, out)
            return
        if op.fn is rules.getitem and op.args[0].id in self.plan.maybe_sequences:
            grad = compat.call(self.helper(runtime.getitem_gradient),
                               [compat.name(g), compat.clone(op.args[0]), compat.clone(op.args[1])])
            self.accumulate(op.args[0], grad, live, out)
            return
        if op.fn is rules.setitem and op.args[0].id in self.sequences:  # lst[i] = v on a list
            index = [compat.name(g), compat.clone(op.args[1])]
            for i, helper in ((0, runtime.replaced_gradient), (2, runtime.replacing_gradient)):
                if i in needed:
                    self.accumulate(op.args[i], compat.call(self.helper(helper), index), live, out, may_zero=True)
            return
        rule = primitives.classify(op.fn)[1]
        try:
            inlined = self.builder.inliner.inline(rule, op, g, target, self.names, needed)
        except ValueError as exc:
            raise self.plan.source.error(op.node, str(exc)) from None
        out += inlined.prelude
        unbroadcast = primitives.needs_unbroadcast(op.fn)
        grads = _merge_repeated(op.args, inlined.grads, live)
        for i in needed:
            grad = grads.get(i)
            if grad is None:
                continue
            arg = op.args[i]
            if unbroadcast and arg.id not in self.sequences and not self.an.shapes.same(op, i):
                shape = compat.call(self.helper(runtime.shape), [compat.clone(arg)])
                grad = compat.call(self.helper(runtime.unbroadcast), [grad, shape])
            scalar = scalar_g and not self.has_shape_of(grad, arg.id)
            if self.is_filled(grad) and self.takes_scalar(arg.id):
                grad, scalar = grad.args[0], True  # the seed of a full reduction, not spread yet
            self.accumulate(arg, grad, live, out, scalar)

    # -- groups of elementwise operations (fusion.adjoint) ------------------------

    def restorable(self, name) -> bool:
        """Whether ``name`` is bound where the adjoint runs and holds the value the primal read there.

        A backward function of a called user function has only the names
        its rules read (``an.reads``) and the saved ones.
        """
        if name in self.an.saved or name in self.remat:
            return True
        if self.an.counts.get(name, 0) > 1:
            return False
        return name in self.an.reads or not self.backward_only or name not in self.an.locals | set(self.plan.params)

    # -- scalar seeds ----------------------------------------------------------
    # ``np.mean(z)`` seeds ``dz`` with ``dresult / z.size`` spread over z's
    # shape.  Where every rule between the seed and the next value of full
    # shape is elementwise (``_SCALAR_SAFE``), the seed stays a scalar:
    # ``dt1 = dz * 3`` is a number and ``dy = 2 * dt1 * y`` gets y's shape.

    def takes_scalar(self, var) -> bool:
        """Whether the adjoint of ``var``'s one producer is exact for a gradient that only broadcasts."""
        op = self.producers.get(var)
        if not self.lazy_ok or self.depth or op is None or not self.an.is_active(op):
            return False
        if op.kind == "copy":
            return True
        group = self.group_roots.get(var)
        if group is not None:  # g * P for each operand (fusion.adjoint): exact when each has var's shape
            internal = {m.targets[0] for m in group}
            return all(self.an.shapes.holds_shape_of(a.id, var, strict=True)
                       for m in group for a in m.args if self.is_input(a) and a.id not in internal)
        return op.kind == "prim" and op.fn in _SCALAR_SAFE and not op.kwargs and all(
            self.an.shapes.same(op, i) and self.an.shapes.symbol.get(a.id, ("",))[0] != "maybe"
            for i, a in enumerate(op.args) if self.is_input(a))

    def has_shape_of(self, expr, var) -> bool:
        """``expr`` (elementwise) surely has ``var``'s full shape: it reads a name of that shape."""
        symbol = self.an.shapes.symbol.get(var)
        if symbol is None or symbol[0] != "of":
            return False
        return any(isinstance(n, gast.Name) and self.an.shapes.symbol.get(n.id) == symbol
                   for n in gast.walk(expr))

    def is_filled(self, expr) -> bool:
        return isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and len(expr.args) == 2 \
            and self.ns.globals.get(expr.func.id) is runtime.filled

    def spread(self, var, grad):
        return compat.call(self.helper(runtime.filled), [grad, compat.call(self.helper(runtime.shape),
                                                                          [compat.name(var)])])

    def materialize(self, live, names=None):
        """Spread scalar gradients to their names' shapes (before control flow, or a rule that needs it)."""
        out = []
        for var in sorted(self.lazy if names is None else names):
            if var in live:
                out.append(compat.assign(self.adj(var), self.spread(var, compat.name(self.adj(var)))))
            self.lazy.discard(var)
        return out

    def adjoint_call(self, op, live, out):
        _, backward, active = self.call_variant(op)
        target = op.targets[0]
        seed = compat.name(self.adj(target)) if target in live else compat.const(0.0)
        value = compat.call(compat.name(backward), [compat.name(self.ns.stack), seed])
        atoms = [self.bound_args(op)[p] for p in active]
        if len(atoms) == 1:
            self.accumulate(atoms[0], value, live, out, may_zero=True)
            return
        temps = [self.names.temp() for _ in atoms]
        out.append(compat.assign(temps, value))
        for atom, temp in zip(atoms, temps):
            self.accumulate(atom, compat.name(temp), live, out, may_zero=True)

    def static_shapes(self, body, adjoint) -> bool:
        """Read ``z.shape``, ``z.size``, ``shape(z)`` in ``adjoint`` from a name whose shape is surely z's.

        Only for a ``z`` that the optimized ``body`` reads for nothing but its shape, and
        only from a name bound whenever the adjoint runs: ``z = t1 * 3``
        with ``t1 = y * y`` and ``y = x + 2`` has x's shape, so
        ``filled(dresult / z.size, z.shape)`` becomes
        ``filled(dresult / size(x), shape(x))`` and neither ``z`` nor
        ``t1`` is computed any more.
        """
        meta = {}
        for stmt in adjoint:
            for node in compat.walk(stmt):
                name = self._meta_of(node)
                if name is not None:
                    meta[id(name)] = name.id
        stand_ins = {}
        for name in set(meta.values()):
            other = self.an.shapes.stand_in(name, self.available)
            if other is not None:
                stand_ins[name] = other
        if stand_ins:
            values = {n.id for stmt in body for n in compat.walk(stmt)
                      if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in meta}
            stand_ins = {name: other for name, other in stand_ins.items() if name not in values}

        def replace(node):
            name = self._meta_of(node)
            if name is None or name.id not in stand_ins:
                return None
            other = compat.name(stand_ins[name.id])
            if isinstance(node, gast.Call):
                return compat.call(node.func, [other])
            fn = self.helper(runtime.shape) if node.attr == "shape" else self.helper(runtime.size) \
                if node.attr == "size" else compat.attr(compat.name(self.ns.bind(np, "np")), node.attr)
            return compat.call(fn, [other])
        for stmt in adjoint:
            rewrite(stmt, replace)
        return bool(stand_ins)

    def _meta_of(self, node):
        """The name in ``name.shape``, ``name.size``, ``name.ndim``, ``shape(name)`` or ``np.shape(name)``."""
        if isinstance(node, gast.Attribute) and node.attr in _META and isinstance(node.value, gast.Name) \
                and isinstance(node.ctx, gast.Load):
            return node.value
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
                and isinstance(node.args[0], gast.Name):
            func = node.func
            if isinstance(func, gast.Name) and self.ns.globals.get(func.id) in (runtime.shape, runtime.size,
                                                                                 runtime.ndim):
                return node.args[0]
            if isinstance(func, gast.Attribute) and func.attr == "shape" and isinstance(func.value, gast.Name) \
                    and self.ns.globals.get(func.value.id) is np:
                return node.args[0]
        return None

    def is_input(self, atom) -> bool:
        return isinstance(atom, gast.Name) and atom.id in self.an.adjoint

    def accumulate(self, atom, grad, live, out, scalar=False, may_zero=False):
        """``d<atom> = grad`` or ``d<atom> += grad``; ``may_zero``: grad may be the number 0.0 (part, a call)."""
        if not self.is_input(atom):
            return
        var = atom.id
        d = self.adj(var)
        if scalar and (var not in live or var in self.lazy) and not self.takes_scalar(var):
            grad, scalar = self.spread(var, grad), False
        if scalar and (var not in live or var in self.lazy):
            self.lazy.add(var)
        else:
            self.lazy.discard(var)
        zero = may_zero or any(isinstance(n, gast.Name) and n.id in self.zero_adjoints() for n in gast.walk(grad))
        if zero and var not in live:
            self.maybe_zero.add(var)  # dt = dv, dx = dv * 2.0: zero as dv is
        elif not zero:
            self.maybe_zero.discard(var)  # 0.0 + an array of its shape (or a scalar seed, ``lazy``)
        if var in live:
            if var in self.sequences or var in self.plan.maybe_sequences:
                grad = compat.call(self.helper(runtime.accumulate), [compat.name(d), grad])
            elif isinstance(grad, gast.UnaryOp) and isinstance(grad.op, gast.USub):
                grad = compat.binop(compat.name(d), "Sub", grad.operand)  # d - g: d + -g without the -g
            else:
                grad = compat.binop(compat.name(d), "Add", grad)
        out.append(compat.assign(d, grad))
        live.add(var)

    def zero(self, var):
        self.maybe_zero.add(var)
        return compat.assign(self.adj(var), compat.const(None if var in self.sequences else 0.0))

    def zero_adjoints(self) -> set:
        return {self.adj(v) for v in self.maybe_zero}

    def helper(self, fn):
        return compat.name(self.ns.helper(fn))

    def adjoint_if(self, s, live):
        entry_zero = set(self.maybe_zero)
        body, live_body = self.adjoint(s.body, set(live))
        body_zero, self.maybe_zero = self.maybe_zero, set(entry_zero)
        orelse, live_else = self.adjoint(s.orelse, set(live))
        self.maybe_zero |= body_zero
        union = live_body | live_else
        body += [self.zero(v) for v in sorted(union - live_body)]
        orelse += [self.zero(v) for v in sorted(union - live_else)]
        live.clear()
        live.update(union)
        return [compat.if_stmt(pop(self.ns.stack), body, orelse)]

    def loop_body(self, body, live):
        """Adjoint of a loop body whose live set is the same on entry and exit."""
        entry = set(live)
        entry_zero = set(self.maybe_zero)  # what may be 0.0 at the start of an iteration's adjoint
        while True:
            state = self.names.snapshot()
            marks = self.builder.mark()
            self.maybe_zero = set(entry_zero)
            code, after = self.adjoint(body, set(entry))
            grown = entry | after
            # the zeros written before the loop and at the end of the body reach the next iteration
            zeros = entry_zero | self.maybe_zero | (grown - live) | (grown - after)
            if grown == entry and zeros == entry_zero:
                break
            self.names.restore(state)
            self.builder.reset(marks)
            entry, entry_zero = grown, zeros
        code += [self.zero(v) for v in sorted(entry - after)]
        before = [self.zero(v) for v in sorted(entry - live)]
        self.maybe_zero |= entry_zero  # no iteration, or the end of the body
        live.update(entry)
        return before, code

    def adjoint_for(self, s, live):
        before, body = self.loop_body(s.body, live)
        iterable = compat.clone(s.iter)
        if self.needed(s) and _breaks(s.body):
            iterable = compat.make("Subscript", value=iterable, slice=compat.make(
                "Slice", lower=None, upper=pop(self.ns.stack), step=None), ctx=gast.Load())
        iterable = compat.call(compat.name(self.ns.bind(reversed, "reversed")), [iterable])
        out = before + [compat.for_stmt(s.target, iterable, body)]
        if s.target in self.an.saved:
            out.append(compat.assign(s.target, pop(self.ns.stack)))
        return out

    def adjoint_while(self, s, live):
        before, body = self.loop_body(s.body, live)
        count = compat.call(compat.name(self.ns.bind(range, "range")), [pop(self.ns.stack)])
        out = before + [compat.for_stmt(self.names.fresh("_"), count, body)]
        tail, _ = self.adjoint(s.cond, live)
        return out + tail

    # -- calls of user functions ----------------------------------------

    def bound_args(self, op):
        try:
            sig = own_signature(op.fn)
            bound = sig.bind(*op.args, **op.kwargs)
        except (TypeError, ValueError) as exc:
            raise self.plan.source.error(op.node, f"cannot call {op.fn.__name__} this way: {exc}") from None
        return dict(bound.arguments)

    def call_variant(self, op):
        bound = self.bound_args(op)
        active = tuple(p for p, atom in bound.items() if self.is_input(atom) or (
            isinstance(atom, gast.Name) and atom.id in self.an.active))
        return self.builder.variant(op.fn, active, containers.passed(self.plan, bound, active))


def _merge_repeated(args, grads, live):
    """``y * y``: the two equal contributions to ``dy`` become one, ``2 * dt * y``.

    Only for a name whose adjoint starts here (``a + a`` is ``2 * a`` exactly;
    ``dy + a + a`` would round differently from ``dy + 2 * a``).
    """
    grads = dict(grads)
    for i in sorted(grads):
        for j in sorted(grads):
            if j <= i or grads.get(i) is None or grads.get(j) is None:
                continue
            a, b = args[i], args[j]
            if isinstance(a, gast.Name) and isinstance(b, gast.Name) and a.id == b.id and a.id not in live \
                    and gast.dump(grads[i]) == gast.dump(grads[j]):
                grad = grads[i]
                if isinstance(grad, gast.BinOp) and isinstance(grad.op, gast.Mult):
                    # 2 * g * y equals 2 * (g * y) (doubling is exact), and is one array operation for a number g
                    grads[i] = compat.binop(compat.binop(compat.const(2), "Mult", grad.left), "Mult", grad.right)
                else:
                    grads[i] = compat.binop(compat.const(2), "Mult", grad)
                grads[j] = None
    return grads


def _breaks(stmts) -> bool:
    for s in stmts:
        if isinstance(s, Break):
            return True
        if isinstance(s, If) and (_breaks(s.body) or _breaks(s.orelse)):
            return True
    return False


def first_bindings(body, params) -> dict:
    """``{id(op): names}`` for top-level ops that give a name its first value.

    Before such an op the name has no value, so there is nothing to push
    (and no ``name = None`` to start from), and nothing to restore after
    its adjoint.  Names first assigned inside if/for/while are left out.
    """
    bound = set(params)
    found = {}
    for s in body:
        if isinstance(s, Op):
            new = {t for t in s.targets if t not in bound}
            if new:
                found[id(s)] = new
            bound.update(s.targets)
        else:
            bound.update(t for op in walk_ops([s]) for t in op.targets)
            if isinstance(s, For):
                bound.add(s.target)
            elif isinstance(s, (If, While)):
                bound.add(s.test)
    return found


def uses_stack(stmts, stack) -> bool:
    return any(isinstance(n, gast.Name) and n.id == stack for s in stmts for n in compat.walk(s))
