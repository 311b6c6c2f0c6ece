"""The forward sweep: each operation followed by its tangent, control flow kept as it is.

For ``y = f(a, b)`` the sweep writes the operation, then ``dy = ...`` from
the forward rules of the arguments that carry a tangent (rules/_forward.py):
inlined as source where the rule allows, else called.  Nothing is saved and
nothing runs backwards, so branches and loops keep their shape.

Which tangents exist is known statically, per point of the code: a name's
tangent is *live* (``dy`` holds it), *zero* (the value does not depend on
the inputs there: nothing is written and rules skip it) or the name is
unbound.  Where paths join and one has a live tangent, the others get
``dy = zero_tangent(y)``; a loop's state is iterated to a fixed point, as
the reverse sweep's live sets are.  Only names that are active and reach the
result (``Analysis.adjoint``) get tangents.

A called user function gets a ``jvp_<name>(tangents..., args...)`` variant
that returns ``(value, tangent)``, one per set of parameters with tangents.
"""

from __future__ import annotations

import functools

import numpy as np

from ... import rules
from ...rules.sequences import append, grow
from ..runtime import attributes
from ..ir import compat
from ..front import caller_state, containers, primitives
from .. import runtime
from ..ir.compat import gast
from ..ir.trees import arguments, function_def
from ..ir.errors import NoRuleTransformError, UnsupportedSyntaxError
from ..ir.nodes import Op, atom_names, conditional_ops, dispatch
from ..front.locate import bound_arguments, passed_functions
from ..front.normalize import param_names
from ..runtime.origins import ORIGIN, with_origin
from .flow import StateSweep
from ..runtime.tangents import add_tangents, generated_stack, stack_pop, tangent_of, zero_tangent

LIVE, ZERO = "live", "zero"

#: ufuncs whose real result may come from a complex argument: their tangents are made real (tangent_of)
_TO_REAL = {np.absolute}

#: helpers of generated code whose values may be dicts, lists or tuples of gradients: their arguments'
#: tangents are added by ``add_tangents`` (key by key), never by ``+`` (which would join two lists)
CONTAINER_VALUED = {runtime.accumulate, runtime.add_item, runtime.sequence_gradient, runtime.getitem_gradient,
                    runtime.part, runtime.split_last, runtime.gradient_tuple, runtime.unpacked_gradient,
                    attributes.attribute_gradient}


class Forwarder(StateSweep):
    """The forward sweep of one function (the entry or a callee's variant); ``state``: name -> LIVE or ZERO."""

    def __init__(self, module, ctx):
        super().__init__()
        self.module = module
        self.ctx = ctx
        self.an = ctx.analysis
        self.names = ctx.names
        self.ns = module.ns
        self.tangent = ctx.adjoints  # x -> dx
        self.carrying = set(self.an.adjoint)

    def sweep(self, stmts, state) -> list:
        out = []
        for s in stmts:
            if s.line != self.last_line and s.line:
                out.append(self.module.comment(f"line {s.line}: {s.text}",
                                               (self.ctx.source.filename, s.line, s.text, False)))
                self.last_line = s.line
            out += dispatch(self, "forward", s, state)
        return out

    # -- operations ----------------------------------------------------------------

    def forward_op(self, op, state):
        if op.kind == "unpack":
            return self.unpack(op, state)
        if op.kind == "pack" and op.targets[0] == self.ctx.forward_stack and op.targets[0] in self.carrying:
            # the entry's stack: its tangent stack exists from the start, so every callee is given it
            state[op.targets[0]] = LIVE
            return [self.tag(compat.assign(op.targets[0], compat.clone(op.expr)), op),
                    compat.assign(self.tangent(op.targets[0]), compat.make("List", elts=[], ctx=gast.Load()))]
        if op.fn is stack_changed:
            return []  # the call before it pushed or popped the tangents too (its jvp variant was given them)
        if op.fn is grow and op.kind == "prim":
            return self.push(op, state)
        if op.fn is stack_pop and op.kind == "prim":
            return self.pop(op, state)
        target = op.targets[0]
        wanted = target in self.carrying
        reads = set(atom_names(op.expr)) | {n for a in list(op.args) + list(op.kwargs.values()) for n in atom_names(a)}
        ans = self.names.temp() if wanted and target in reads else target  # the rule reads the old value
        out: list = []
        stack = self.ctx.forward_stack
        if op.kind == "call" and (wanted or any(getattr(a, "id", None) == stack for a in op.args)
                                  and state.get(stack) == LIVE):  # a callee pushing or popping tangents too
            primal, tangent = self.call(op, ans, state, out)
            out.append(primal)
        else:
            out.append(self.tag(compat.assign(ans, compat.clone(op.expr)), op))
            tangent = self.tangent_of_op(op, ans, state, out) if wanted else None
        if ans != target:
            out.append(compat.assign(target, compat.name(ans)))
            if tangent is not None:
                out.append(compat.assign(self.tangent(ans), tangent))
                tangent = compat.name(self.tangent(ans))
        if wanted:
            if tangent is None:
                state[target] = ZERO
            else:
                if getattr(tangent, "id", None) != self.tangent(target):  # a call assigned it
                    out.append(compat.assign(self.tangent(target), tangent))
                state[target] = LIVE
        elif op.kind == "pack":  # a new list, which generated code may grow in place: its tangent starts at zero
            state[target] = ZERO
        return out

    # -- the stack of generated code (an adjoint differentiated again) ------------------

    def push(self, op, state):
        """``_stack.append(v)``: once any pushed value has a tangent, every push pushes one beside it.

        The tangent stack starts as the zeros of what the stack holds (before
        this push), so the i-th tangent always belongs to the i-th value.
        (``t = grow(_stack, v)`` then ``_stack = t``: both name one list.)
        """
        stack, item = op.args
        target = op.targets[0]
        out = []
        if not self.live(stack, state) and self.live(item, state):
            out.append(compat.assign(self.tangent(stack.id),
                                     compat.call(self.helper(zero_tangent), [compat.clone(stack)])))
            state[stack.id] = LIVE
        out.append(self.tag(compat.assign(target, compat.clone(op.expr)), op))
        if self.live(stack, state):
            pushed = compat.call(compat.name(self.ns.bind(grow, "grow")),
                                 [compat.name(self.tangent(stack.id)), self.of(item, state)])
            if target in self.carrying:
                out.append(compat.assign(self.tangent(target), pushed))
                state[target] = LIVE
            else:
                out.append(compat.expr_stmt(pushed))
        elif target in self.carrying:
            state[target] = ZERO
        return out

    def pop(self, op, state):
        """``x = _stack.pop()``: the tangent stack pops too, whether or not ``x`` carries a tangent."""
        stack, target = op.args[0], op.targets[0]
        out = [self.tag(compat.assign(target, compat.clone(op.expr)), op)]
        wanted = target in self.carrying
        if self.live(stack, state):
            popped = compat.call(compat.name(self.ns.bind(stack_pop, "stack_pop")),
                                 [compat.name(self.tangent(stack.id))])
            out.append(compat.assign(self.tangent(target), popped) if wanted else compat.expr_stmt(popped))
            if wanted:
                state[target] = LIVE
        elif wanted:
            state[target] = ZERO
        return out

    def tag(self, stmt, op):
        setattr(stmt, ORIGIN, (self.ctx.source.filename, op.line, op.text, False))  # for errors at run time
        return stmt

    def tangent_of_op(self, op, ans, state, out):
        """The tangent expression of ``op``'s result ``ans`` (statements it needs appended to ``out``), or None."""
        kind = op.kind
        if kind == "copy":
            return compat.name(self.tangent(op.args[0].id)) if self.live(op.args[0], state) else None
        if kind == "pack":
            if not any(self.live(a, state) for a in op.args):
                return None
            return self.packed(op, state)
        if kind == "prim":
            return self.prim(op, ans, state, out)
        return None  # nondiff, stop, an inactive opaque operation or call

    def live(self, atom, state) -> bool:
        return isinstance(atom, gast.Name) and state.get(atom.id) == LIVE

    def of(self, atom, state):
        """The tangent of ``atom``: its name when live, else ``zero_tangent(atom)``."""
        if self.live(atom, state):
            return compat.name(self.tangent(atom.id))
        if isinstance(atom, gast.Constant) and type(atom.value) in (int, float):
            return compat.const(0.0)
        return compat.call(self.helper(zero_tangent), [compat.clone(atom)])

    def packed(self, op, state):
        expr = compat.clone(op.expr)
        items = expr.values if isinstance(expr, gast.Dict) else expr.elts
        items[:] = [self.of(a, state) for a in op.args]
        return expr

    def unpack(self, op, state):
        source = op.args[0]
        out = [self.tag(compat.assign(op.targets, compat.clone(op.expr)), op)]
        wanted = [t for t in op.targets if t in self.carrying]
        if not wanted:
            return out
        if not self.live(source, state):
            state.update((t, ZERO) for t in wanted)
            return out
        out.append(compat.assign([self.tangent(t) for t in op.targets], compat.name(self.tangent(source.id))))
        state.update((t, LIVE) for t in wanted)
        return out

    def prim(self, op, ans, state, out):
        live = [i for i, a in enumerate(op.args) if self.live(a, state)]
        if not live:
            return None
        if op.fn is append:  # lists: the tangent list grows as the list does (in place where the list does)
            fn = grow if isinstance(op.expr, gast.Call) and self.ns.globals.get(
                getattr(op.expr.func, "id", None)) is grow else append
            return compat.call(self.helper(fn), [self.of(a, state) for a in op.args])
        if op.fn is rules.setitem and isinstance(op.expr, gast.Call) and len(op.expr.args) in (3, 5):
            # linear in the container and the value together: the tangent is the same write of their tangents
            # (put: a dict in place, as the primal writes; an array or list copied, as the primal copies;
            # put_kept, into the caller's dict: put into the tangent, which is the generated code's own)
            tangent = compat.clone(op.expr)
            if len(tangent.args) == 5:
                tangent = compat.call(self.ns.ref(runtime.put), tangent.args[:3])
            tangent.args[0] = self.of(op.args[0], state)
            tangent.args[2] = compat.call(self.helper(rules.through_cast),  # nothing flows into integers
                                          [self.of(op.args[2], state), compat.clone(op.args[0])])
            return tangent
        entry = primitives.classify(op.fn)[1]
        parts, whole = [], not primitives.returns_sequence(op) and op.fn not in CONTAINER_VALUED
        for i in live:
            rule = entry.jvp_for(i)
            if rule is None:
                raise self.ctx.source.error(
                    op.node, f"{entry.name} has no forward rule for its argument {i}, which has a tangent here",
                    f"Register one with astgrad.defjvp({entry.name}, ..., argnum={i}).", NoRuleTransformError)
            try:
                code, expr, called = self.module.inliner.inline_tangent(
                    rule, op, self.tangent(op.args[i].id), ans, self.names, self.an.ranks)
            except ValueError as exc:
                raise self.ctx.source.error(op.node, str(exc)) from None
            if isinstance(expr, gast.Constant) and expr.value is None:
                continue  # this argument moves the result nowhere
            whole = whole and not called and not any(
                isinstance(n, gast.Constant) and n.value is None for s in code for n in compat.walk(s))
            out += code
            parts.append(expr)
        if not parts:
            return None
        if not whole:
            total = functools.reduce(lambda a, b: compat.call(self.helper(add_tangents), [a, b]), parts)
            return compat.call(self.helper(tangent_of), [total, compat.name(ans)])
        total = functools.reduce(_plus, parts)
        if self.shaped(op, live, ans, total):
            return total
        return compat.call(self.helper(tangent_of), [total, compat.name(ans)])

    def shaped(self, op, live, ans, total) -> bool:
        """Whether ``total``, the sum of the rules' tangents, surely has the result's shape and kind.

        Only for an elementwise operation (a ufunc), whose result has the
        broadcast shape of its arguments: ``total`` has it when one live
        argument has the result's shape, or when ``total`` is itself
        elementwise and reads the result or every argument (or its tangent,
        which has the argument's shape).  A linear operation whose rule
        applies it to the tangent (``np.sum(dx, axis=...)``) gives the shape
        it gives ``x``.  Otherwise ``tangent_of`` spreads it.
        """
        fn = op.fn
        if len(live) == 1 and isinstance(total, gast.Call) and total.args and self.module.inliner._resolve(
                total.func) is fn and getattr(total.args[0], "id", None) == self.tangent(op.args[live[0]].id):
            return live[0] == 0  # f(dx, ...) for y = f(x, ...): a linear operation applied to the tangent
        if not (isinstance(fn, np.ufunc) and fn not in _TO_REAL or fn is rules.sigmoid or fn is rules.relu):
            return False
        if any(self.an.keeps_shape(op, i) for i in live):
            return True
        if not self.elementwise(total):
            return False
        read = {n.id for n in compat.walk(total) if isinstance(n, gast.Name)}
        return ans in read or all(a.id in read or self.tangent(a.id) in read
                                  for a in op.args if isinstance(a, gast.Name))

    def elementwise(self, expr) -> bool:
        """Arithmetic, numbers, names and calls of ufuncs only: the shape is the names' broadcast shape."""
        for n in compat.walk(expr):
            if isinstance(n, gast.Call):
                fn = self.module.inliner._resolve(n.func)
                if not (isinstance(fn, np.ufunc) and fn.nout == 1) or n.keywords:
                    return False
            elif not isinstance(n, (gast.BinOp, gast.UnaryOp, gast.Name, gast.Constant, gast.Attribute,
                                    gast.operator, gast.unaryop, gast.expr_context)):
                return False
        return True

    def call(self, op, ans, state, out):
        """``ans, dans = jvp_g(tangents..., args...)`` for a call of a user function; the tangent or None.
        Before it (``out``), the check of a dict passed down that the callee writes into (front/caller_state)."""
        bound = bound_arguments(op, self.ctx.source)
        generated = str(getattr(getattr(op.fn, "__code__", None), "co_filename", "")).startswith("<astgrad")
        for p, atoms in bound.items() if not generated else ():  # *args or **kwargs: a tuple or dict of atoms
            # (a generated callee takes them only as the stub of a refusal deferred to where it runs)
            gathered = atoms.values() if isinstance(atoms, dict) else atoms if isinstance(atoms, tuple) else ()
            if any(self.live(atom, state) for atom in gathered):
                raise self.ctx.source.error(
                    op.node, f"{op.fn.__name__} receives a value that carries a tangent through its parameter {p} "
                    "(*args or **kwargs), which cannot be differentiated", "Give the function named parameters.",
                    UnsupportedSyntaxError)
        active = tuple(p for p, atom in bound.items() if self.live(atom, state))
        primal = self.tag(compat.assign(ans, compat.clone(op.expr)), op)
        if not active:
            return primal, None
        name = self.module.tangent_variant(op.fn, active, containers.passed(self.ctx, bound, active),
                                           passed_functions(self.ctx, bound),
                                           deferrable=id(op) in conditional_ops(self.ctx.body),
                                           kept=caller_state.passed_down(self.ctx, op, bound))
        kept = self.module.kept_params.get(name) or frozenset()
        if kept:
            self.ctx.kept_dicts = self.ctx.kept_dicts | {bound[p].id for p in kept}
            out += caller_state.call_checks(self.ctx, op, bound, kept)
        tangents = [compat.name(self.tangent(bound[p].id)) for p in active]
        value = compat.call(compat.name(name), tangents + [compat.clone(a) for a in op.args],
                            {k: compat.clone(v) for k, v in op.kwargs.items()})
        dans = self.tangent(ans)
        return self.tag(compat.assign([ans, dans], value), op), compat.name(dans)

    def helper(self, fn):
        return compat.name(self.ns.helper(fn))

    # -- control flow ---------------------------------------------------------------

    def join(self, *states) -> dict:
        return join(*states)

    def fill(self, wanted, have) -> list:
        """``dy = zero_tangent(y)`` for each name live in ``wanted`` whose tangent is zero in ``have``."""
        names = sorted(n for n, s in wanted.items() if s == LIVE and have.get(n) == ZERO)
        return [compat.assign(self.tangent(n), compat.call(self.helper(zero_tangent), [compat.name(n)]))
                for n in names]

    def forward_if(self, s, state):
        return self.branches(s, state)

    def forward_for(self, s, state):
        if s.target in self.carrying and any(state.get(n) == LIVE for n in atom_names(s.iter)):
            raise self.ctx.source.error(self.ctx.source.tree, f"forward mode: the loop variable {s.target} carries a tangent",
                                        "Loop over indices: for i in range(len(xs)): x = xs[i]")
        # items of a sequence without a tangent (range(n) in generated code) have none either
        start = {s.target: ZERO} if s.target in self.carrying else None
        return self.loop(s, state, functools.partial(compat.for_stmt, s.target, compat.clone(s.iter)), start)

    def forward_while(self, s, state):
        cond = self.sweep(s.cond, state)
        return cond + self.loop(s, state, functools.partial(compat.while_stmt, compat.name(s.test)))

    def checkpoint(self):
        """Also the callees' variants made so far: a sweep of a loop body may make them for tangents the
        loop's start lacked."""
        return super().checkpoint(), set(self.module.variants), len(self.module.functions)

    def rewind(self, mark) -> None:
        base, variants, functions = mark
        super().rewind(base)
        module = self.module
        for key in set(module.variants) - variants:
            module.names.taken.discard(module.variants.pop(key))
        del module.functions[functions:]

    def forward_break(self, s, state):
        return self.broken(state)

    def forward_raw(self, s, state):
        return [with_origin(s.stmt, self.ctx.source.filename, s.line, s.text)]  # errors name its line


def find_stack(ctx) -> None:
    """In forward mode over generated code: ``ctx.forward_stack``, its stack's name, read as a stack (else None).

    The entry makes the stack; a callee (``forward_g``, ``backward_g``)
    pushes on the one it is given, with its tangent stack; given none (the
    caller's stack has no tangent), it is refused where it pushes or pops.
    """
    ctx.forward_stack = stack = generated_stack(ctx.fn) if ctx.mode == "jvp" else None
    if stack is not None:
        ctx.stack_without_tangent = stack in param_names(ctx.source.tree) and stack not in ctx.wrt


def results_and_stack(ctx):
    """What the analysis counts as results: ``ctx.ret``, and in a callee the stack its pushes go to."""
    if ctx.forward_stack is None or ctx.entry:
        return ctx.ret
    return compat.tuple_([compat.clone(ctx.ret), compat.name(ctx.forward_stack)])


def stack_changed(stack, *args):
    """Stands, in the normal form only, for a call that pushed on or popped the generated stack."""
    return stack


def calls_change_stack(body, stack) -> list:
    """After each call given the generated stack, ``stack = stack_changed(stack, the call's arguments...)``.

    ``forward_g(_stack, x)`` pushes values that depend on ``x``, and
    ``backward_g(_stack, g)`` pops them: the analysis sees that dependence
    only through this op, so that the stack carries a tangent and both
    callees are given the tangent stack.
    """
    out = []
    for s in body:
        out.append(s)
        if isinstance(s, Op) and s.kind == "call" and any(getattr(a, "id", None) == stack for a in s.args):
            args = [compat.name(stack)] + [compat.clone(a) for a in s.args] + [compat.clone(v) for v in s.kwargs.values()]
            out.append(Op([stack], "prim", compat.name(stack), s.line, s.text, s.node, stack_changed, args))
        for field in ("body", "orelse", "cond"):
            if isinstance(getattr(s, field, None), list) and not isinstance(s, Op):
                setattr(s, field, calls_change_stack(getattr(s, field), stack))
    return out


def tangent_function(ctx, name, first=(), last=()):
    """``name(first tangents..., the parameters..., last tangents...)`` returning ``(value, tangent)``."""
    fw = Forwarder(ctx.module, ctx)
    ctx.adjoints = fw.tangent
    # a parameter without a tangent that later gets one (an adjoint's seed in a loop) starts at zero
    state = {p: LIVE if p in ctx.wrt else ZERO for p in ctx.params if p in fw.carrying}
    body = fw.sweep(ctx.body, state)
    ret = ctx.ret
    if isinstance(ret, gast.Name) and state.get(ret.id) == LIVE:
        tangent = compat.name(fw.tangent(ret.id))
    else:
        tangent = compat.call(compat.name(ctx.ns.helper(zero_tangent)), [compat.clone(ret)])
    body.append(compat.ret(compat.tuple_([compat.clone(ret), tangent])))
    ctx.primal, ctx.adjoint = body, []
    args = arguments(ctx.source.tree, ctx.ns, ctx.fn, first=[fw.tangent(p) for p in first])
    if last:  # the tangents follow the parameters: positional defaults cannot precede them (keyword-only ones stay)
        args.defaults = []
        args.args += [compat.make("Name", id=fw.tangent(p), ctx=gast.Param()) for p in last]
    return function_def(name, args, body)


def _plus(a, b):
    """``a + b``, or ``a - c`` for ``b = -c``."""
    if isinstance(b, gast.UnaryOp) and isinstance(b.op, gast.USub):
        return compat.binop(a, "Sub", b.operand)
    return compat.binop(a, "Add", b)


def join(*states) -> dict:
    """The state after paths meet: live where any path is live, zero where any is zero and none live."""
    out: dict = {}
    for state in states:
        for name, s in state.items():
            if s == LIVE or name not in out:
                out[name] = s
    return out
