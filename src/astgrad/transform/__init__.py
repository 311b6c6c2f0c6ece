"""Reverse-mode differentiation by source transformation.

``build(fn, wrt, mode, preserve_result)`` runs the passes (parse, check,
normalize, analyse, reverse, optimize, emit) and returns the generated
module's source and its entry function.  Each pass lives in its own module.
"""

from __future__ import annotations

import os
import types

from . import compat, containers, runtime
from .aliasing import check_writes
from .analyse import Analysis
from .check import check_function
from .emit import arguments, compile_source, drop_lines_with, function_def, marker, printable, render
from .errors import NoRuleTransformError, TransformError, UnsupportedSyntaxError
from .inline import RuleInliner
from .inplace import reuse_buffers
from .adjoint_ir import pop, push, uses_stack
from .ir import Op, assigned, first_bindings, walk_ops
from .lists import grow_in_place
from .namespace import Namespace
from .naming import Adjoints, Names, UserNames
from .normalize import Normalizer, local_names, param_names
from .cleanup import drop_unread_saves, propagate_copies, release, unstack
from .optimize import drop_arrays, optimize, shapes_on_stack, shapes_only, unbind
from .locate import in_wrapper
from .outputs import scalar_checks, unpack_aux
from .runtime_errors import origins
from .static_shapes import static_shapes
from ..rules import sequences
from .parse import Dependencies, FunctionSource
from .primitives import classify, is_user_function, returns_sequence, unwrap_gradient_object
from .reverse import Reverser

__all__ = ["build", "check", "TransformError", "UnsupportedSyntaxError", "NoRuleTransformError", "Generated"]


class Plan:
    """One user function, normalised and analysed for one set of wrt parameters."""

    def __init__(self, builder, fn, wrt, outputs=None, trees=(), maybe_trees=(), ranks=None):
        self.fn = fn
        self.source = FunctionSource(fn)
        builder.sources.append(self.source)
        builder.met.add_tree(self.source.tree)  # before any pass adds generated names to it
        builder.met.add_code(fn.__code__, fn.__globals__)
        check_function(self.source)
        self.names = builder.names.child()
        normalizer = Normalizer(self.source, self.names, builder.ns)
        containers.prepare(normalizer, trees)
        self.body, self.ret = normalizer.function()
        self.params = param_names(self.source.tree)
        check_writes(self.body, self.ret, self.params, local_names(self.source.tree), self.source)
        self.pair = None  # with has_aux, the atom of the pair (loss, aux) f returns
        if outputs == "aux":
            self.pair = self.ret
            unpack, self.ret = unpack_aux(self.body, self.ret, builder.ns, self.names, fn)
            self.body = self.body + unpack
        self.grown = grow_in_place(self.body, self.ret, self.params, builder.ns)  # ids of ops popped, not saved
        self.wrt = list(wrt)
        self.locals = set(normalizer.locals) | assigned(self.body)
        self.sequences = set(normalizer.sequences)
        self.maybe_sequences = set()  # results of user calls: arrays, tuples or lists
        for op in walk_ops(self.body):
            if op.kind == "unpack":
                self.sequences.update(a.id for a in op.args if isinstance(a, compat.gast.Name))
            elif op.kind == "prim" and _returns_sequence(op):
                self.sequences.update(op.targets)
            elif op.kind == "call":
                self.maybe_sequences.update(op.targets)
        containers.mark(self, trees, maybe_trees, builder.ns)  # parameters that hold dicts, lists or tuples in this call
        self.analysis = Analysis(self.body, self.ret, self.wrt, self.params, self.locals, self.source, ranks)
        self.adjoints = Adjoints(self.names)
        if outputs is not None:  # the entry of grad or value_and_grad: the output must be a number
            before, after = scalar_checks(self.body, self.ret, self.params, self.analysis.shapes, builder.ns, fn)
            self.body = before + self.body + after


def _returns_sequence(op) -> bool:
    try:
        return op.fn is sequences.append or returns_sequence(op)
    except TypeError:
        return False


def _ident(fn) -> str:
    """``fn``'s name as it can appear in an identifier (``<lambda>`` -> ``lambda``)."""
    return "".join(c for c in str(fn.__name__) if c.isascii() and (c.isalnum() or c == "_")) or "fn"


class Generated:
    """The result of a transformation: module source and entry function."""

    rank_dependent = False  # whether arguments of known ranks would change the code (build(ranks=...))

    def __init__(self, source, function, filename, namespace, dependencies=None, origins=()):
        self.source = source
        self.origins = origins  # the user line of each generated statement: see runtime_errors
        self.function = function
        self.filename = filename
        self.namespace = namespace
        self.dependencies = dependencies or Dependencies()

    def current(self) -> bool:
        """False once a function the transform read (``f``, a callee, ``np.sum``) was rebound."""
        return self.dependencies.current()


class ModuleBuilder:
    def __init__(self, user: UserNames, ranks=None):
        self.ranks = ranks  # the entry's parameters' (rank, holds an int), known at call time
        self.rank_dependent = False  # whether known ranks would change the entry's code (ranks.Ranks.asked)
        self.names = Names(user=user)
        self.met = UserNames()  # the names of the user functions transformed, as met
        self.ns = Namespace(self.names)
        self.dependencies = Dependencies()  # besides what each Plan's FunctionSource records
        self.dependencies.record_rule_table()  # before the first lookup
        self.inliner = RuleInliner(self.ns, self.dependencies)
        self.comments: list[str] = []
        self.comment_origins: list = []  # (file, line, text, True) of each comment's user line
        self.functions: list = []
        self.variants: dict = {}
        self.sources: list = []

    # comments ----------------------------------------------------------

    def comment(self, text, origin=None):
        self.comments.append(text)
        self.comment_origins.append(origin)
        return marker(len(self.comments) - 1)

    def mark(self):
        return len(self.comments)

    def reset(self, mark):
        del self.comments[mark:]
        del self.comment_origins[mark:]

    # functions -----------------------------------------------------------

    def entry(self, fn, wrt, mode, preserve_result, has_aux=False, trees=()):
        plan = Plan(self, fn, wrt, outputs=None if mode == "vjp" else "aux" if has_aux else "scalar", trees=trees,
                    ranks=self.ranks or {})
        name = self.names.fresh("d" + _ident(fn))
        rev = Reverser(self, plan, remat=True)
        primal = rev.primal(plan.body)
        ret = plan.ret
        an = plan.analysis
        if isinstance(ret, compat.gast.Name) and ret.id in an.adjoint:
            seed = plan.adjoints(ret.id)
            live = {ret.id}
        else:
            seed = plan.names.fresh("dresult")
            live = set()
        value = plan.pair or ret  # with has_aux the value is the pair (loss, aux)
        tail = []
        if preserve_result and isinstance(value, compat.gast.Name) and value.id in an.saved:
            kept = compat.name(plan.names.fresh("value"))
            tail.append(compat.assign(kept.id, compat.name(value.id)))
            value = kept
        adjoint, live = rev.adjoint(plan.body, live)
        adjoint += rev.seeds.materialize(live)
        if mode == "vjp":  # the output's shape only: shapes_only may then skip computing it
            out_shape = compat.call(rev.helper(runtime.shape), [compat.clone(ret)])
            check = compat.call(compat.name(self.ns.bind(runtime.check_seed, "check_seed")),
                                [compat.name(seed), out_shape, compat.const(fn.__name__)])
            tail.append(compat.expr_stmt(check))
        grads = [compat.name(plan.adjoints(p)) if p in live else compat.const(0.0) for p in plan.wrt]
        result = grads[0] if len(grads) == 1 else compat.tuple_(grads)
        if preserve_result:
            result = compat.tuple_([result, compat.clone(value)])
        body = self._inits(plan) + primal + tail + adjoint + [compat.ret(result)]
        stack = self.ns.stack
        if uses_stack(body, stack):
            body = [compat.assign(stack, compat.make("List", elts=[], ctx=compat.gast.Load()))] + body
        args = arguments(plan.source.tree, self.ns, fn, seed=seed,
                         seed_default=1.0 if mode == "grad" else None, defaults=False)
        fn_def = optimize(function_def(name, args, body), self.ns)
        if static_shapes(fn_def.body, adjoint, an.shapes, rev.available, self.ns):
            fn_def = optimize(fn_def, self.ns)
        fn_def = unbind(fn_def, primal, plan.names.temps, self.ns)
        helpers = tuple(rev.helper(fn).id for fn in (runtime.shape, runtime.size, runtime.only_shape))
        fn_def = shapes_on_stack(fn_def, adjoint, helpers[:2], helpers[2])
        fn_def = optimize(drop_unread_saves(fn_def, adjoint), self.ns)
        fn_def = drop_arrays(fn_def, primal, adjoint, helpers, plan.names.temps)
        fn_def = shapes_only(fn_def, self.ns, helpers)
        returned = {n.id for n in compat.walk(fn_def.body[-1]) if isinstance(n, compat.gast.Name)}
        copies = {n.id for stmt in adjoint for n in compat.walk(stmt)
                  if isinstance(n, compat.gast.Name) and isinstance(n.ctx, compat.gast.Store)}
        fn_def = propagate_copies(fn_def, copies - returned)
        fn_def = optimize(unstack(fn_def), self.ns)
        params = fn_def.args.args + fn_def.args.kwonlyargs
        numbers = [seed] if mode == "grad" else []  # the seed of a gradient is the number 1.0
        shaped = self.ns.bind(runtime.Shaped, "Shaped")
        fn_def = release(fn_def, keep=[a.id for a in params] + [stack], numbers=numbers,
                         small=(helpers[1], helpers[2], shaped))
        fn_def = reuse_buffers(fn_def, self.ns, numbers=numbers, counts=helpers[1:2])
        self.functions.insert(0, fn_def)
        self.rank_dependent = plan.analysis.ranks.asked
        return name

    def variant(self, fn, active, trees=((), ())):
        key = (fn, tuple(active), trees)
        if key in self.variants:
            return self.variants[key]
        base = _ident(fn)
        names = (self.names.fresh(f"forward_{base}"), self.names.fresh(f"backward_{base}"), tuple(active))
        self.variants[key] = names
        plan = Plan(self, fn, active, trees=trees[0], maybe_trees=trees[1])
        plan.source.dependencies.record_defaults(fn)  # the forward function below has them
        rev = Reverser(self, plan)
        rev.seeds.enabled = False
        rev.backward_only = True
        primal = rev.primal(plan.body)
        an = plan.analysis
        ret = plan.ret
        live = {ret.id} if isinstance(ret, compat.gast.Name) and ret.id in an.adjoint else set()
        seed = plan.adjoints(ret.id) if live else plan.names.fresh("dresult")
        rev.maybe_zero.update(live)  # a caller without a gradient for the result passes 0.0
        adjoint, live = rev.adjoint(plan.body, live)
        keep = sorted(an.reads | an.saved)
        state = [compat.name(v) for v in keep]
        forward_body = self._inits(plan, keep) + primal
        backward_body = []
        if keep:
            packed = state[0] if len(state) == 1 else compat.tuple_(state)
            forward_body.append(push(self.ns.stack, packed))
            backward_body.append(compat.assign(keep if len(keep) > 1 else keep[0], pop(self.ns.stack)))
        forward_body.append(compat.ret(compat.clone(ret)))
        grads = [compat.name(plan.adjoints(p)) if p in live else compat.const(0.0) for p in active]
        backward_body += adjoint + [compat.ret(grads[0] if len(grads) == 1 else compat.tuple_(grads))]
        forward = function_def(names[0], arguments(plan.source.tree, self.ns, fn, first=[self.ns.stack]), forward_body)
        backward = function_def(names[1], arguments(plan.source.tree, self.ns, fn, first=[self.ns.stack, seed],
                                                    keep_params=False), backward_body)
        self.functions += [optimize(forward, self.ns), optimize(backward, self.ns)]
        return names

    def _inits(self, plan, keep=()):
        """Saved variables start as None so the first push has something to save."""
        early = set().union(*first_bindings(plan.body, plan.params).values())
        unbound = sorted((plan.analysis.saved | set(keep)) - set(plan.params) - early)
        return [compat.assign(v, compat.const(None)) for v in unbound]


def check(fn) -> None:
    """Raise TransformError if ``fn`` uses something the transformer rejects up front."""
    try:
        check_function(FunctionSource(fn))
    except TransformError as exc:
        raise in_wrapper(fn, exc) from None


def build(fn, wrt, mode="grad", preserve_result=False, has_aux=False, trees=(), ranks=None) -> Generated:
    """Transform ``fn``; ``wrt`` lists parameter names.

    ``ranks`` maps parameters to ``(rank, holds a Python int)`` as they are
    in the calls the result will serve (the caller checks that they are):
    rules then take the one form those ranks need (transform.ranks).

    In mode "grad" the generated function raises unless ``fn`` returns a
    scalar (with ``has_aux``, a pair whose first item is one); with
    ``has_aux`` it returns the pair as the value (``preserve_result`` is then
    required).

    Generated names must avoid every name of every user function the module
    transforms, known before the first name is made: the code objects of
    ``fn`` and of the functions it may call tell them cheaply.  Should the
    transform meet a name they did not (a callee reached another way, a name
    in code the compiler dropped), it runs again knowing it.
    """
    user = _user_names(fn)
    while True:
        builder = ModuleBuilder(user, ranks)
        try:
            name = builder.entry(fn, wrt, mode, preserve_result, has_aux, trees)
        except TransformError as exc:
            raise in_wrapper(fn, exc) from None
        if user.covers(builder.met):
            break
        user = user.union(builder.met)
    code = fn.__code__
    what = "vector-Jacobian product" if mode == "vjp" else "gradient"
    header = [f"Generated by astgrad: the {what} of {fn.__qualname__} "
              f"({os.path.basename(code.co_filename)}:{code.co_firstlineno}) "
              f"with respect to {', '.join(wrt)}"
              f"{' (' + ', '.join(trees) + ' holding dicts, lists or tuples)' if trees else ''}{describe_ranks(ranks)}."]
    source = render(builder.functions, builder.comments, header)
    variant = f"{'vjp' if mode == 'vjp' else 'grad'} wrt {','.join(wrt)}{' +value' if preserve_result else ''}{' +aux' if has_aux else ''}"
    variant += f" trees {','.join(sorted(trees))}" if trees else ""
    variant += f" ranks {','.join(str(r) for r, _ in ranks.values())}" if ranks else ""
    filename = printable(f"<astgrad {fn.__qualname__} {variant} {os.path.basename(code.co_filename)}:{code.co_firstlineno}>")
    namespace = builder.ns.globals
    filename = compile_source(source, filename, namespace)
    dependencies = builder.dependencies
    for used in builder.sources:
        dependencies.update(used.dependencies)
    generated = Generated(source, namespace[name], filename, namespace, dependencies,
                          origins(builder.functions, builder.comment_origins))
    generated.rank_dependent = builder.rank_dependent
    drop_lines_with(generated, filename)
    return generated


def describe_ranks(ranks) -> str:
    """``", for a 2-d W, a 1-d b and a number n"``: what ``build(ranks=...)`` specialised for."""
    if not ranks:
        return ""
    parts = [f"{'an int' if is_int else 'a scalar'} {name}" if rank == 0 else f"a {rank}-d {name}"
             for name, (rank, is_int) in ranks.items()]
    return ", for " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1])


def _user_names(fn) -> UserNames:
    """The names of ``fn`` and of the user functions it may call, from their code objects."""
    found = UserNames()
    seen = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        code = f.__code__
        if code in seen:
            continue
        seen.add(code)
        found.add_code(code, f.__globals__)
        todo += _callees(f, code)
    return found


def _callees(fn, code) -> list:
    """Functions ``fn`` names (a global, a closure variable, a module's attribute) that a transform would enter."""
    names = set()
    codes = [code]
    for c in codes:
        names.update(c.co_names)
        codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    values = [fn.__globals__[name] for name in names if name in fn.__globals__]
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            pass
    found = []
    try:  # a guess, never a new way to fail: what it misses, build() meets and runs again for
        for module in [v for v in values if isinstance(v, types.ModuleType)]:
            values += [getattr(module, name, None) for name in names]
        for value in values:
            value = unwrap_gradient_object(value)
            if is_user_function(value) and classify(value)[0] == "call":  # transformed, not a rule
                found.append(value)
    except Exception:
        pass
    return found
