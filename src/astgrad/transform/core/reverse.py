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

Long: the two sweeps over every statement kind, with the zero and structural-
zero bookkeeping the adjoint needs beside them.
"""

from __future__ import annotations

import functools

import numpy as np

from ... import rules
from ..ir import compat
from ..front import caller_state, containers, lists, primitives
from . import checkpoints as checkpointed_loops, fusion
from .. import runtime
from ..runtime import checkpoints, structural
from ..front.locate import bound_arguments, passed_functions
from ..ir.compat import gast
from ..runtime.origins import ORIGIN, with_origin
from ..ir.tagged import pop, push
from .inline import merge_repeated
from ..ir.nodes import For, Op, Raw, blocks, breaks, conditional_ops, dispatch, first_bindings, walk_ops
from .remat import recompute
from .scalar_seeds import ScalarSeeds

#: the runtime's helpers that hand a list's gradient on (Reverser.gradient_lists)
_GRADIENT_LISTS = (runtime.gradient_tuple, runtime.part, runtime.getitem_gradient, runtime.sequence_gradient,
                   runtime.unpacked_gradient)


class Reverser:
    def __init__(self, builder, plan):
        self.builder = builder
        self.plan = plan
        self.an = plan.analysis
        self.names = plan.names
        self.adj = plan.adjoints
        self.ns = builder.ns
        self.sequences = plan.sequences
        # what generated code (a gradient differentiated again) binds to a list's gradient as it hands it on, a
        # list of lists where the list held lists (np.array of a nested list), and the items of those: their
        # adjoints are added item by item (runtime.accumulate), never joined by +
        handed_on = {t for op in walk_ops(plan.body) if op.fn in _GRADIENT_LISTS for t in op.targets}
        self.gradient_lists = handed_on | containers.items_of(plan.body, handed_on)
        self.first = first_bindings(plan.body, plan.params)
        once = {t for names in self.first.values() for t in names if self.an.counts.get(t) == 1}
        self.available = set(plan.params) | once  # bound whenever the adjoint runs
        # names whose adjoint may hold the number 0.0 of a join (``zero``), not an array of their shape
        self.maybe_zero = set()
        # in the block being swept: names whose adjoint is structurally zero at a mask (structural.py) -> the
        # mask's name, and the item assignments and np.where whose operand's producer can use that
        self.structural: dict = {}
        self.mask_sources: set = set()
        self.fuse = plan.fuse  # groups of elementwise operations differentiated as one expression (fusion.py)
        producers = {t: op for op in plan.body if isinstance(op, Op) for t in op.targets if t in once}
        self.seeds = ScalarSeeds(self.an, self.ns, self.adj, producers)  # adjoints that hold a number
        self.seeds.enabled = plan.scalar_seeds
        # names that surely hold tuples or lists (unpacking anything else may unpack an array)
        self.built_sequences = {t for op in walk_ops(plan.body) for t in op.targets
                                if op.kind == "pack" or op.kind == "prim" and primitives.returns_sequence(op)}
        self.remat = plan.remat  # name -> op: recomputed, not saved (the remat pass chose them)
        self.read_counts = fusion.read_counts(plan.body)
        self.bound_first: set = set()  # names a checkpointed loop keeps that may be unbound there: None first
        # lists whose gradient's items are all computed where the gradient is (passes/computed_seeds.py)
        self.item_complete: set = set()

    # -- primal --------------------------------------------------------

    def primal(self, stmts):
        return [node for s in stmts for node in dispatch(self, "primal", s)]

    def primal_if(self, s):
        out = [compat.if_stmt(compat.name(s.test), self.primal(s.body), self.primal(s.orelse))]
        if self.needed(s):
            out.append(push(self.ns.stack, compat.name(s.test)))
        return out

    def primal_break(self, s):
        return [compat.make("Break")]

    def primal_raw(self, s):
        return [with_origin(s.stmt, self.plan.source.filename, s.line, s.text)]  # errors name its line

    def adjoint_raw(self, s, live):
        return [s.adjoint]

    def primal_op(self, op):
        out = [push(self.ns.stack, compat.name(t)) for t in self.saved_targets(op) if id(op) not in self.plan.grown]
        expr = op.expr
        if op.kind == "call" and self.an.is_active(op):
            names = self.call_variant(op)
            forward = names[0]
            out += self.kept_checks(op, names)
            stack = compat.name(self.ns.stack)
            if op.checkpoint:  # its arguments saved, what its forward half saves dropped: the adjoint makes it again
                if self.builder.kept_params.get(names):
                    raise self.plan.source.error(op.node, f"astgrad.checkpoint({op.fn.__qualname__}) writes into a "
                                                 "dict or object its caller keeps: run again in the reverse sweep, it "
                                                 "would write again, reading what the first run wrote",
                                                 "Call it without astgrad.checkpoint.")
                given = list(op.args) + list(op.kwargs.values())
                out.append(self.fixed_state(given, f"an argument of astgrad.checkpoint({op.fn.__qualname__})"))
                out.append(push(self.ns.stack, self.kept(given)))
                setattr(out[-1], ORIGIN, (self.plan.source.filename, op.line, op.text, False))  # higher.py names it
                stack = compat.make("List", elts=[], ctx=gast.Load())
            expr = compat.call(compat.name(forward), [stack] + [compat.clone(a) for a in op.args],
                               {k: compat.clone(v) for k, v in op.kwargs.items()})
        target = op.targets if op.kind == "unpack" else op.targets[0]
        out.append(compat.assign(target, compat.clone(expr)))
        setattr(out[-1], ORIGIN, (self.plan.source.filename, op.line, op.text, False))  # for errors at run time
        return out

    def primal_for(self, s):
        if s.every is not None:
            return checkpointed_loops.primal(self, s)
        out = [push(self.ns.stack, compat.name(s.target))] if s.target in self.an.saved else []
        body = self.primal(s.body)
        loop = functools.partial(compat.for_stmt, s.target, compat.clone(s.iter))
        return out + (self.count_trips(loop, body) if self.needed(s) and breaks(s.body) else [loop(body)])

    def primal_while(self, s):
        out = self.primal(s.cond)
        body = self.primal(s.body)
        loop = functools.partial(compat.while_stmt, compat.name(s.test))
        return out + (self.count_trips(loop, body) if self.needed(s) else [loop(body)])

    def count_trips(self, loop, body):
        """``loop(body)`` counting its trips, and the count pushed after it."""
        trips = self.names.fresh("_trips")
        step = compat.assign(trips, compat.binop(compat.name(trips), "Add", compat.const(1)))
        return [compat.assign(trips, compat.const(0)), loop([step] + body), push(self.ns.stack, compat.name(trips))]

    def needed(self, s) -> bool:
        """Whether the statement leaves anything for the adjoint sweep to do."""
        if isinstance(s, Op):
            return self.an.is_active(s) or bool(self.saved_targets(s))
        if isinstance(s, For) and s.target in self.an.saved:
            return True
        if isinstance(s, Raw):
            return s.adjoint is not None
        return any(self.needed(x) for block in blocks(s) for x in block)

    def saved_targets(self, op) -> list:
        """Targets whose old value ``op`` pushes: saved ones that had a value before."""
        return [t for t in op.targets if t in self.an.saved and t not in self.first.get(id(op), ())]

    # -- adjoint -----------------------------------------------------------

    def adjoint(self, stmts, live):
        """Adjoint code for ``stmts`` (reversed) and the live set after it."""
        out = []
        last_line = None
        done: set = set()  # rematerialised names recomputed in this block
        groups = fusion.groups(stmts, self.an, self.names.temps, self.read_counts) if self.fuse else {}
        self.seeds.group_roots.update((ops[-1].targets[0], ops) for ops in groups.values())
        fused: set = set()  # ops whose adjoint a group's one expression already is
        sources = _mask_sources(stmts)
        self.structural, self.mask_sources = {}, sources
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
                if not all(self.an.shapes.elementwise_of_full(m) for m in group):
                    group = None
                else:  # g * P for each operand: zeros of the operand's shape for g = 0.0
                    self.maybe_zero.discard(s.targets[0])
            if group is not None and s.targets[0] in self.structural:  # one rule at a time, each cleaned
                self.seeds.group_roots.pop(s.targets[0], None)
                group = None
            fused_code = fusion.adjoint(group, self.an, self, live) if group else None
            if fused_code and group:
                head, code = fused_code
                fused.update(id(m) for m in group)
            elif isinstance(s, Op):
                if group is not None:  # one rule per operation after all: only those decide on scalar seeds
                    self.seeds.group_roots.pop(s.targets[0], None)
                self.adjoint_op(s, live, code)
            else:
                spread = self.seeds.materialize(live)
                self.seeds.depth += 1
                code = dispatch(self, "adjoint", s, live)
                self.seeds.depth -= 1
                out += spread
                self.structural, self.mask_sources = {}, sources  # the nested block's sweep may add to any
            if not code and not head:
                continue
            if s.line != last_line or not isinstance(s, Op):
                out.append(self.builder.comment(f"grad of line {s.line}: {s.text}",
                                                (self.plan.source.filename, s.line, s.text, True)))
            last_line = s.line if isinstance(s, Op) else None
            out += head
            if isinstance(s, Op) and self.remat:
                out += recompute(self.remat, code, done)
            out += code
        return out, live

    def adjoint_op(self, op, live, out):
        if self.an.is_active(op):
            kind = op.kind
            if kind == "prim":
                self.guarded_prim(op, live, out)
            elif kind == "copy":
                if op.targets[0] in live:
                    fresh = getattr(op.args[0], "id", None) not in live
                    self.accumulate(op.args[0], compat.name(self.adj(op.targets[0])), live, out,
                                    op.targets[0] in self.seeds.lazy)
                    mask = self.structural.get(op.targets[0])
                    if mask is not None and fresh and self.is_input(op.args[0]):
                        self.structural[op.args[0].id] = mask  # the same adjoint
            elif kind == "pack":
                if op.targets[0] in live:
                    g = compat.name(self.adj(op.targets[0]))
                    masks = self.structural.get(op.targets[0])  # np.select's choices: one mask an item
                    positions: dict = {}  # an item's name -> where it stands, if this is its first adjoint
                    for i, a in enumerate(op.args):
                        if self.is_input(a) and (a.id in positions or a.id not in live):
                            positions.setdefault(a.id, []).append(compat.const(i))
                        item = compat.call(self.helper(runtime.part), [g, containers.pack_index(op, i)])
                        complete = op.targets[0] in self.item_complete and op.targets[0] not in self.maybe_zero
                        self.accumulate(a, item, live, out, may_zero=not complete)
                    for name, at in positions.items():  # zero where no position took from it ([s, s] too)
                        if masks is not None and not isinstance(op.expr, gast.Dict):
                            self.noted(name, compat.call(self.helper(structural.nth), [compat.name(masks), *at]), out)
            elif kind == "unpack":
                if any(t in live for t in op.targets):
                    parts = compat.tuple_([compat.name(self.adj(t)) if t in live else compat.const(None)
                                           for t in op.targets])
                    joined = any(t in live and t in self.maybe_zero for t in op.targets)  # a 0.0 no rule takes
                    if getattr(op.args[0], "id", None) not in self.built_sequences or joined:
                        parts = compat.call(self.helper(runtime.unpacked_gradient), [parts, op.args[0]])
                    self.accumulate(op.args[0], parts, live, out)
            elif kind == "call":
                self.adjoint_call(op, live, out)
        saved = self.saved_targets(op)
        for t in reversed(op.targets):
            self.structural.pop(t, None)  # an earlier value of the name is another value
            live.discard(t)
            self.seeds.lazy.discard(t)
            self.maybe_zero.discard(t)
            if t in saved:  # after an append in place (lists.py) the adjoint pops the item
                out.append(lists.pop_item(t) if id(op) in self.plan.grown else self.restore(t))

    def guarded_prim(self, op, live, out):
        """``adjoint_prim``, skipped at run time when the gradient is the 0.0 a join wrote.

        A rule may index or reshape its gradient; the number zero has no
        shape to do that with, and every contribution would be zero anyway.
        """
        target = op.targets[0]
        if target in self.maybe_zero and self.an.shapes.elementwise_of_full(op):
            self.maybe_zero.discard(target)  # 0.0 * an array of the result's shape: zeros of that shape
        if target not in self.maybe_zero or target not in live:
            self.adjoint_prim(op, live, out)
            return
        before, zero_before, masks = set(live), set(self.maybe_zero), set(self.structural.values())
        code: list = []
        self.adjoint_prim(op, live, code)
        if not code:
            return
        self.maybe_zero |= zero_before  # skipped for a zero: what was 0.0 before may still be
        started = sorted(live - before)
        made = sorted(set(self.structural.values()) - masks)  # no mask where the rule is skipped
        out.append(compat.if_stmt(compat.call(self.helper(runtime.is_zero), [compat.name(self.adj(target))]),
                                  [self.zero(v) for v in started] + [compat.assign(m, compat.const(None)) for m in made],
                                  code))

    def adjoint_prim(self, op, live, out):
        target = op.targets[0]
        if target not in live:
            return
        g = self.adj(target)
        needed = [i for i, a in enumerate(op.args) if self.is_input(a)]
        if not needed:
            return
        scalar_g = target in self.seeds.lazy
        if scalar_g and not self.seeds.takes_scalar(target):
            out += self.seeds.materialize(live, [target])
            scalar_g = False
        if op.fn is rules.getitem and self.may_be_sequence(op.args[0].id):
            items, index = op.args[0], op.args[1]
            grad = containers.item_gradient(self.plan, self.helper, g, items, index) if items.id in self.sequences \
                else compat.call(self.helper(runtime.getitem_gradient), [compat.name(g)] + compat.clone([items, index]))
            lists.add_item(self, items, grad, live, out) or self.accumulate(items, grad, live, out)
            return
        if op.fn is rules.setitem and self.may_be_sequence(op.args[0].id):  # lst[i] = v on a list or dict
            lists.set_item(self, op, g, needed, live, out)
            return
        try:
            inlined = self.inline(op, g, target, needed)
        except ValueError as exc:
            raise self.plan.source.error(op.node, str(exc)) from None
        out += inlined.prelude
        unbroadcast = primitives.needs_unbroadcast(op.fn)
        grads = merge_repeated(op.args, inlined.grads, live)
        mask = self.structural.get(target) if not scalar_g else None
        elementwise = isinstance(op.fn, np.ufunc)
        for i in needed:
            grad = grads.get(i)
            if grad is None:
                continue
            arg = op.args[i]
            fresh = arg.id not in live  # this is the operand's first contribution, so far its whole adjoint
            if mask is not None and elementwise:
                grad = compat.call(self.helper(structural.cleaned), [compat.name(mask), grad])
            # g * f'(x) reading x, which has the result's shape, has x's shape for a number g too
            whole = scalar_g and self.an.shapes.same(op, i) and any(
                isinstance(n, gast.Name) and n.id == arg.id for n in compat.walk(grad))
            if unbroadcast and arg.id not in self.sequences and not self.an.keeps_shape(op, i):
                grad = self.unbroadcast(grad, arg.id)
            scalar = scalar_g and not (whole or self.seeds.has_shape_of(grad, arg.id))
            if self.seeds.is_filled(grad) and self.seeds.takes_scalar(arg.id, fused=True):
                grad, scalar = grad.args[0], True  # the seed of a full reduction, not spread yet
            self.accumulate(arg, grad, live, out, scalar)
            if fresh and not scalar and arg.id in live:
                self.structural_zeros(op, i, mask if elementwise else None, out)

    # -- what fusion.adjoint asks of the sweep -------------------------------------

    def inline(self, op, g, ans, needed):
        """``op``'s rule inlined for gradient ``g`` and result ``ans``: the gradients of ``needed`` operands."""
        return self.builder.inliner.inline(primitives.classify(op.fn)[1], op, g, ans, self.names, needed, self.an.ranks)

    def structural_zeros(self, op, i, mask, out):
        """Note where operand ``i`` of ``op``, whose adjoint was just made, is structurally zero: at the
        result's ``mask`` for an elementwise operation (the same entries, if the shapes agree); at what an
        item assignment overwrote, or what ``np.where`` did not take from it (structural.py)."""
        arg = op.args[i].id
        if mask is not None:
            self.structural[arg] = mask
            return
        if id(op) not in self.mask_sources:
            return
        before = self.structural.get(op.targets[0])
        before = compat.name(before) if before is not None else compat.const(None)
        d = compat.name(self.adj(arg))
        if op.fn is rules.setitem and i == 0:
            value = compat.call(self.helper(structural.written), [d, compat.clone(op.args[1]), before])
        elif op.fn is np.where and i in (1, 2):
            value = compat.call(self.helper(structural.unselected),
                                [d, compat.clone(op.args[0]), compat.const(i == 1), before])
        elif op.fn is np.select and i == 1:  # a list of masks, one a choice: the list literal's adjoint splits it
            value = compat.call(self.helper(structural.unchosen), [d, compat.clone(op.args[0]), before])
        elif op.fn is np.select and i == 2:
            value = compat.call(self.helper(structural.not_defaulted), [d, compat.clone(op.args[0]), before])
        else:
            return
        self.noted(arg, value, out)

    def noted(self, arg, value, out):
        """``t = value``: ``arg``'s adjoint is structurally zero at the mask ``t``."""
        name = self.names.temp()
        out.append(compat.assign(name, value))
        self.structural[arg] = name

    def restore(self, name):
        """``name = <pop>``: the value ``name`` had before the statement the adjoint has just undone."""
        return compat.assign(name, pop(self.ns.stack))

    def unbroadcast(self, grad, var):
        shape = compat.call(self.helper(runtime.shape), [compat.name(var)])
        return compat.call(self.helper(runtime.unbroadcast), [grad, shape])

    def may_be_sequence(self, name) -> bool:
        return name in self.sequences or name in self.plan.maybe_sequences or name in self.gradient_lists

    def restorable(self, name) -> bool:
        """Whether ``name`` is bound where the adjoint runs and holds the value the primal read there."""
        return name in self.an.saved or name in self.remat or self.an.counts.get(name, 0) <= 1

    def adjoint_call(self, op, live, out):
        forward, backward, active = self.call_variant(op)
        target = op.targets[0]
        seed = compat.name(self.adj(target)) if target in live else compat.const(0.0)
        stack = self.ns.stack
        if op.checkpoint:  # the forward half again, from the arguments the primal saved, onto a stack of its own
            given = [self.names.temp() for _ in list(op.args) + list(op.kwargs)]
            out.append(compat.assign(given, pop(self.ns.stack)))
            stack = self.names.fresh("_recomputed")
            out.append(compat.assign(stack, compat.make("List", elts=[], ctx=gast.Load())))
            args, kwargs = given[:len(op.args)], dict(zip(op.kwargs, given[len(op.args):]))
            out.append(compat.expr_stmt(compat.call(
                compat.name(forward), [compat.name(stack)] + [compat.name(a) for a in args],
                {k: compat.name(v) for k, v in kwargs.items()})))
        args = [compat.name(stack), seed]
        if target in live and target not in self.maybe_zero and backward in self.builder.seed_tested:
            args.append(compat.const(True))  # the seed is computed: even a zero runs the rules (computed_seeds.py)
        value = compat.call(compat.name(backward), args)
        atoms = [bound_arguments(op, self.plan.source)[p] for p in active]
        if len(atoms) == 1:
            self.accumulate(atoms[0], value, live, out, may_zero=True)
            return
        temps = [self.names.temp() for _ in atoms]
        out.append(compat.assign(temps, value))
        for atom, temp in zip(atoms, temps):
            self.accumulate(atom, compat.name(temp), live, out, may_zero=True)

    def fixed_state(self, atoms, where):
        """``fixed_state((a, b), where)``: a random generator among the atoms is refused (checkpoints.py)."""
        check = compat.name(self.ns.bind(checkpoints.fixed_state, "fixed_state"))
        return compat.expr_stmt(compat.call(check, [compat.tuple_([compat.clone(a) for a in atoms]),
                                                    compat.const(where)]))

    def kept(self, atoms):
        """``kept((a, b))``: the values as they are now, dicts and lists copied (checkpoints.kept)."""
        keep = compat.name(self.ns.bind(checkpoints.kept, "kept"))
        return compat.call(keep, [compat.tuple_([compat.clone(a) for a in atoms])])

    def is_input(self, atom) -> bool:
        return isinstance(atom, gast.Name) and atom.id in self.an.adjoint

    def accumulate(self, atom, grad, live, out, scalar=False, may_zero=False):
        """``d<atom> = grad`` or ``d<atom> += grad``; ``may_zero``: grad may be the number 0.0 (part, a call)."""
        if not self.is_input(atom):
            return
        var = atom.id
        d = self.adj(var)
        if var in live:
            self.structural.pop(var, None)  # another contribution: zero at the mask no longer
        grad = self.seeds.seed(var, grad, scalar, var in live)
        zero = may_zero or any(isinstance(n, gast.Name) and n.id in self.zero_adjoints() for n in gast.walk(grad))
        if zero and var not in live:
            self.maybe_zero.add(var)  # dt = dv, dx = dv * 2.0: zero as dv is
        elif not zero:
            self.maybe_zero.discard(var)  # 0.0 + an array of its shape (or a scalar seed, ``lazy``)
        if var in live:
            if self.may_be_sequence(var):
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
        if s.every is not None:
            return checkpointed_loops.adjoint(self, s, live)
        before, body = self.loop_body(s.body, live)
        iterable = compat.clone(s.iter)
        if self.needed(s) and breaks(s.body):
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

    def call_variant(self, op):
        """The (forward, backward, active parameters) functions of a call of a user function."""
        bound = bound_arguments(op, self.plan.source)
        active = tuple(p for p, atom in bound.items() if isinstance(atom, gast.Name)
                       and (atom.id in self.an.adjoint or atom.id in self.an.active))
        ranks = tuple((p, rank) for p, atom in bound.items() if (rank := self.an.ranks.of_argument(atom)) is not None)
        return self.builder.variant(op.fn, active, containers.passed(self.plan, bound, active),
                                    passed_functions(self.plan, bound),
                                    deferrable=id(op) in conditional_ops(self.plan.body),
                                    kept=caller_state.passed_down(self.plan, op, bound), ranks=ranks)

    def kept_checks(self, op, names):
        """Before a call whose callee writes into the dict passed down (``names``: its variant), the check of
        that dict; the dict is then one this function's caller sees written (front/caller_state)."""
        kept = self.builder.kept_params.get(names) or frozenset()
        if not kept:
            return []
        bound = bound_arguments(op, self.plan.source)
        self.plan.kept_dicts = self.plan.kept_dicts | {bound[p].id for p in kept}
        return caller_state.call_checks(self.plan, op, bound, kept)


def _mask_sources(stmts) -> set:
    """The ids of the item assignments and ``np.where`` calls in ``stmts`` whose array operand an elementwise
    operation of the same block made (through copies and other such calls): its rule can use where the
    operand's adjoint is structurally zero."""
    carries: dict = {}  # name -> whether the operation that made it can use a mask of its adjoint
    found: set = set()
    for s in stmts:
        if not isinstance(s, Op):
            carries.clear()  # a nested block may bind anything
            continue
        operands = [s.args[0]] if s.fn is rules.setitem and s.args else \
            s.args[1:3] if s.fn in (np.where, np.select) and len(s.args) >= 2 else []
        if any(isinstance(a, gast.Name) and carries.get(a.id) for a in operands):
            found.add(id(s))
        source = s.args[0].id if s.kind == "copy" and s.args and isinstance(s.args[0], gast.Name) else None
        items = s.kind == "pack" and any(isinstance(a, gast.Name) and carries.get(a.id) for a in s.args)
        for t in s.targets:
            carries[t] = isinstance(s.fn, np.ufunc) or id(s) in found or bool(source and carries.get(source)) \
                or items
    return found
