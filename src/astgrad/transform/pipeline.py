"""The transformer as one ordered list of named passes over one context.

A user function becomes generated code by running ``ENTRY`` in order over a
``Context``: parse, check, normalize, analyse, reverse, the optimisation
passes of the chosen level, emit.  A function the entry calls gets its
``forward_``/``backward_`` pair from ``CALLEE``, the same passes up to its
own reversal.  Forward mode (``jvp``) runs ``FORWARD``: the same front end,
then the forward sweep (core/forward.py) and dead code; a callee gets its
``jvp_`` variant from ``FORWARD_CALLEE``.  ``PULLBACK`` (``vjp(f,
*primals)``) reverses f as the entry and cuts it into a pair as a callee;
``LINEARIZE`` cuts the forward sweep into a primal and a tangent half.  Each pass is a function
``(ctx) -> None`` named for what it does; ``Pass.level`` is the lowest
optimisation level it runs at:

* 0: the adjoint as the rules write it;
* 1: what a careful person does by hand: dead code, single-use temporaries
  written into their reader, copies read through, elementwise chains
  differentiated as one expression, scalar seeds kept scalar, a reverse
  loop that is a linear recurrence over numbers solved with cumulative
  products;
* 2 (the default): memory work: shapes instead of arrays, values
  recomputed instead of saved, saves kept in locals, ``del`` after the last
  read, results written in place.

``build(..., stage=name)`` also renders the function after that pass
(``astgrad.show``): the user's function up to ``check``, the normal form
(one operation a line) up to ``remat``, the generated function after; the
reverse sweep's three choices (``fusion``, ``scalar_seeds``, ``remat``) are
passes of their own, each from its level, and print what they chose.

The imports below are grouped by stage, lowest first (ir, runtime, front,
core, passes, back): the order of docs/how-it-works.md's table of layers.

Long: the pass lists and the Context they share, with the builders of entries,
callees and forward functions: one page that names every pass in order.
"""

from __future__ import annotations

import functools
import os
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .. import rules
from ..rules import sequences
from . import runtime
from .ir import compat
from .ir.compat import gast
from .ir.errors import Refusal, TransformError, UnsupportedSyntaxError
from .ir.forks import fork
from .ir.nodes import Op, assigned, binding_sites, first_bindings, walk_ops
from .ir.tagged import returns, uses_stack
from .ir.trees import arguments, function_def, marker
from .runtime import checks, net
from .runtime.origins import origins
from .runtime.tangents import STACK_MARK, generated_stack as stack_of
from .front import containers
from .front.aliasing import check_writes, number_checks
from .front.caller_state import run_into_caller, store_into_objects
from .front.analyse import Analysis
from .front.callee_writes import check_untransformed_calls
from .front.effects import check_calls_for_effect
from .front.lists import grow_in_place
from .front.locate import in_wrapper, own_signature, passed_functions
from .front.naming import Adjoints, Names, UserNames, user_names_of
from .front.normalize import Normalizer, local_names, param_names
from .front.parse import Dependencies, FunctionSource
from .front.primitives import returns_sequence
from .front.ranks import UNKNOWN as UNKNOWN_RANK, Ranks
from .front.returns import scalar_checks, unpack_aux as _unpack_aux
from .front.syntax import check_function
from .core.batching import batched_function
from .core.forward import calls_change_stack, find_stack, results_and_stack, tangent_function
from .core.fusion import planned as planned_fusion
from .core.inline import RuleInliner
from .core.linearize import NotCut, cut
from .core.remat import rematerializable
from .core.reverse import Reverser
from .passes.levels import (array_sizes, compute_only_shapes, dead_code, drop_unread_saves, fixed_shapes, float_casts,
                            number_items,
                            in_place, invariant_saves, item_updates, items_in_place,
                            inline_temporaries, keep_only_shapes, linear_recurrences, number_unbroadcasts,
                            overwritten_saves,
                            in_place_halves, read_through_copies, release_arrays, saves_in_locals, shapes_on_stack,
                            static_shapes, written_items, invariant_shapes, where_products, scatter_sums,
                            slice_constants, slice_views, item_adds, chained_adds,
                            number_item_parts, shared_products, negations)
from .passes.number_updates import rebind_number_updates
from .passes.computed_seeds import insert_seed_guard, item_complete_lists
from .passes.trip_shapes import TripShapes
from .passes.kinds_once import read_kinds_once
from .passes.fixed_shapes import FixedShapes
from .passes.split import split as split_pair
from .passes.unused import GivenFloats, optimize, specialise_callees
from .back.emit import compile_source, drop_lines_with, printable, render
from .back.namespace import Namespace
from .back.stages import render_stage

#: the levels ``optimize=`` takes; the default is the last
LEVELS = (0, 1, 2)
DEFAULT_LEVEL = 2


@dataclass(frozen=True)
class Pass:
    name: str
    run: Callable[[Context], bool | None]  # False: it changed nothing, so no dead code after it
    level: int = 0  # the lowest optimisation level it runs at
    tidy: bool = False  # it may leave code nothing reads: dead code runs after it (unless it returns False)
    reads: frozenset[str] = frozenset()  # what of the calls served it reads: "ranks", "floats" (see Kept)
    needs: frozenset[str] = frozenset()  # features of the generated code (features()) it acts on: none, no run

    def given(self) -> frozenset[str]:
        """What of the calls served this pass reads: its ``reads``, and the floats dead code reads after it."""
        return self.reads | {"floats"} if self.tidy else self.reads


#: a field's value until the pass that fills it runs: None, typed as the field is (no pass reads it before)
_NOT_YET: Any = None


class Context:
    """One user function on its way to generated code: what the passes read and write.

    Every field is declared here, with the pass that fills it in; a pass
    reads only fields an earlier pass of its list has filled.  ``entry``:
    the function ``grad`` was given (else a callee, for its forward/backward
    pair, or its ``jvp_`` variant).
    """

    def __init__(self, module, fn, wrt, *, entry=False, mode="grad", preserve_result=False, has_aux=False,
                 trees=(), maybe_trees=(), callables=(), batched_items=(), ranks=None):
        # -- given ---------------------------------------------------------------
        self.module = module  # the ModuleBuilder of the generated module this function joins
        self.ns: Namespace = module.ns
        self.level: int = module.level
        self.fn = fn
        self.wrt: list[str] = list(wrt)
        self.entry = entry
        self.mode = mode  # "grad", "vjp", "jvp", "pullback", "linearize" or "vmap" (wrt: the batched parameters)
        self.preserve_result = preserve_result
        self.has_aux = has_aux
        self.given_trees, self.given_tree_items = trees, maybe_trees  # parameters holding dicts, lists, tuples
        self.callables = dict(callables)  # parameter -> the function it holds in the calls served (specialised)
        # a callee's parameters whose (rank, holds integers) every call it serves proves (ModuleBuilder.variant)
        self.given_ranks: dict | None = None if ranks is None else dict(ranks)
        self.batched_items = frozenset(batched_items)  # vmap: the wrt parameters given lists of batched arrays
        self.batch_stacks: frozenset = frozenset()  # vmap: the lists the code only pushes on and pops (batch)
        # the parameters that may write into the caller's dict (None: the entry's, all of them), and for
        # the others why not (front/caller_state.passed_down)
        self.kept_allowed: frozenset[str] | None = None if entry else frozenset()
        self.kept_reasons: dict[str, str] = {}
        # -- parse ---------------------------------------------------------------
        self.source: FunctionSource = _NOT_YET
        # -- generated_stack -------------------------------------------------------
        self.forward_stack: str | None = None  # jvp of generated code: the name of the stack it pushes on
        self.stack_without_tangent = False  # a callee given the stack with no tangent for it
        # -- normalize -------------------------------------------------------------
        self.names: Names = _NOT_YET  # this function's generated names (a child of the module's)
        self.body: list = _NOT_YET  # the normal form (ir/nodes.py), one operation a statement
        self.ret: Any = None  # the atom returned
        self.params: list[str] = []
        self.normalized_locals: set[str] = set()
        # -- check_aliasing ----------------------------------------------------------
        self.kept_dicts: frozenset[str] = frozenset()  # parameters whose dicts the code writes into (caller_state)
        self.sequences: set[str] = set()  # names surely holding lists or tuples
        self.maybe_sequences: set[str] = set()  # results of user calls: arrays, tuples or lists
        self.dicts: set[str] = set()  # names bound to a dict literal here (containers.mark)
        # -- unpack_aux ------------------------------------------------------------
        self.pair = None  # with has_aux, the atom of the pair (loss, aux) f returns
        # -- number_updates --------------------------------------------------------
        self.update_ranks: Ranks | None = None  # the ranks it asked (emit: the entry's rank_dependent)
        # -- analyse (containers.mark fills trees and tree_items) ------------------
        self.grown: set[int] = set()  # ids of list appends popped in the adjoint, not saved
        self.locals: set[str] = set()
        self.trees: set[str] = set()  # parameters holding containers
        self.tree_items: set[str] = set()  # names that may hold an item of one
        self.analysis: Analysis = _NOT_YET
        self.adjoints: Adjoints = _NOT_YET  # x -> its adjoint's (or tangent's) name
        # -- fusion, scalar_seeds, remat: the reverse sweep's choices, by level ----
        self.fuse = False  # runs of elementwise operations differentiated as one expression
        self.scalar_seeds = False  # an adjoint that is a number kept as one until a rule needs its shape
        self.remat: dict = {}  # name -> the op the adjoint runs again instead of reading a saved value
        self.choices: list[str] = []  # what those passes chose, in words (show(f, stage=...) prints them)
        # -- reverse / forward -----------------------------------------------------
        self.rev: Reverser = _NOT_YET  # the reverse sweep, kept for the passes that ask what it saved
        self.name: Any = None  # the entry function's name; a callee's (forward, backward, active)
        self.seed: str | None = None  # the name of the output's adjoint parameter
        # a callee whose seed its backward half tests once at its start: how many gradients it returns, and the
        # name of the parameter by which a caller says its seed is computed
        self.seed_guard: tuple | None = None
        self.backward: str | None = None  # a pullback's backward function, a linearization's tangent function
        self.fn_defs: list = []  # the generated FunctionDefs the later passes rewrite
        self.primal: list = []  # the statements of each sweep in the entry's fn_def
        self.adjoint: list = []
        self._helpers = None
        self.returns_items = False  # vmap: the function returns a tuple or list of batched values
        self.features: frozenset[str] | None = None  # what the generated functions hold (features), once asked

    @property
    def fn_def(self):
        return self.fn_defs[0]

    @fn_def.setter
    def fn_def(self, value):
        self.fn_defs[0] = value

    @property
    def helpers(self):
        """The module's names of ``shape``, ``size`` and ``only_shape``, bound when first asked for."""
        if self._helpers is None:
            self._helpers = tuple(self.ns.helper(fn) for fn in (runtime.shape, runtime.size, runtime.only_shape))
        return self._helpers

    def tidy(self):
        """Dead code out (the ``dead_code`` pass, again after a pass that may leave some)."""
        self.fn_defs = [optimize(f, self.ns, given=self.given_floats) for f in self.fn_defs]

    @property
    def given_floats(self):
        """The entry's parameters known to hold real floats (ModuleBuilder.floats), or None."""
        return self.module.floats if self.entry else None


# -- front: the user's function to one operation a line -----------------------

def parse(ctx: Context) -> None:
    """Find the source of the code that runs and parse it; note its names for hygiene."""
    ctx.source = FunctionSource(ctx.fn)
    ctx.module.sources.append(ctx.source)
    ctx.module.met.add_tree(ctx.source.tree)  # before any pass adds generated names to it
    ctx.module.met.add_code(ctx.fn.__code__, ctx.fn.__globals__)
    if not ctx.entry:
        ctx.source.dependencies.record_defaults(ctx.fn)  # the forward function has them


def check(ctx: Context) -> None:
    """Refuse what is not supported, before transforming, with a located error."""
    check_function(ctx.source)


def generated_stack(ctx: Context) -> None:
    """In forward mode over generated code (``hessian``, ``jvp(grad(f))``): find the stack it pushes on."""
    find_stack(ctx)


def normalize(ctx: Context) -> None:
    """One operation per statement (ir/nodes.py), jumps removed, methods and operators as primitives."""
    ctx.names = ctx.module.names.child()
    normalizer = Normalizer(ctx.source, ctx.names, ctx.ns)
    rebound = {n.id for n in gast.walk(ctx.source.tree) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    ctx.callables = normalizer.callables = {name: obj for name, obj in ctx.callables.items() if name not in rebound}
    if ctx.forward_stack is not None:
        normalizer.forward_stack, normalizer.stack_without_tangent = ctx.forward_stack, ctx.stack_without_tangent
    elif ctx.mode == "vmap" and stack_of(ctx.fn) is not None:  # generated code batched: its stacks too
        normalizer.forward_stack, normalizer.batching = stack_of(ctx.fn), True
    containers.prepare(normalizer, ctx.given_trees)
    ctx.body, ctx.ret = normalizer.function()
    if ctx.forward_stack is not None:
        ctx.body = calls_change_stack(ctx.body, ctx.forward_stack)
    ctx.params = param_names(ctx.source.tree)
    ctx.normalized_locals = set(normalizer.locals)
    ctx.sequences = set(normalizer.sequences)


def check_aliasing(ctx: Context) -> None:
    """Refuse a write through a name that may share memory unless it is reproduced exactly."""
    caller_writes: list | None = [] if ctx.forward_stack is None else None
    checked, returns = check_writes(ctx.body, ctx.ret, ctx.params, local_names(ctx.source.tree), ctx.source,
                                    ctx.ns.helper(checks.an_array), caller_writes, ctx.wrt,
                                    (ctx.kept_allowed, ctx.kept_reasons))
    run_into_caller(ctx.body, caller_writes, ctx.params, ctx.sequences, ctx.ns, ctx.names, ctx.fn)
    ctx.kept_dicts = frozenset(x for x, _, _ in caller_writes or ())
    store_into_objects(ctx)
    number_checks(ctx.body, checked, returns, (ctx.ns.helper(checks.a_number),
                                               ctx.ns.helper(checks.a_returned_number)), ctx.source)


def unpack_aux(ctx: Context) -> None:
    """With ``has_aux``: check that the result is a pair (loss, aux) and differentiate the loss."""
    if ctx.has_aux:
        ctx.pair = ctx.ret
        unpack, ctx.ret = _unpack_aux(ctx.body, ctx.ret, ctx.ns, ctx.names, ctx.fn)
        ctx.body = ctx.body + unpack


def number_updates(ctx: Context) -> None:
    """``x op= v`` on a value surely not a numpy array (``rates[i] += v``) is ``x = x op v``: no ``in_place``.

    Before ``analyse``, which then sees a copy; the ranks it asks are its own
    (the analysis's are made there), and what they asked counts at ``emit``.
    It reads no floats given at call time: a variant for them resumes after it.
    """
    def ranks():
        ctx.update_ranks = Ranks(ctx.body, ctx.params, ctx.module.ranks or {}, ctx.normalized_locals | assigned(ctx.body))
        return ctx.update_ranks

    rebound = rebind_number_updates(ctx.body, ctx.params, ranks)
    if rebound:
        ctx.choices.append("updates of numbers rebound, not written in place: " + ", ".join(rebound))


def analyse(ctx: Context) -> None:
    """Activity (what depends on wrt and reaches the result), what the adjoint reads and saves, shapes."""
    ctx.grown = grow_in_place(ctx.body, ctx.ret, ctx.params, ctx.ns)  # ids of ops popped, not saved
    ctx.locals = ctx.normalized_locals | assigned(ctx.body)
    for op in walk_ops(ctx.body):
        if op.kind == "unpack":
            ctx.sequences.update(a.id for a in op.args if isinstance(a, gast.Name))
        elif op.kind == "prim" and _returns_sequence(op):
            ctx.sequences.update(op.targets)
        elif op.kind == "call" or op.kind == "prim" and op.fn in rules.maybe_sequence_outputs:
            ctx.maybe_sequences.update(op.targets)
    containers.copies_of_sequences(ctx.body, ctx.sequences, ctx.maybe_sequences)
    containers.mark(ctx, ctx.given_trees, ctx.given_tree_items, ctx.ns)  # parameters holding containers
    # a callee's variant serves the calls whose arguments have the ranks it was made for (ModuleBuilder.variant)
    ranks = (ctx.module.ranks or {}) if ctx.entry else ctx.given_ranks
    returned = functools.partial(ctx.module.returned_rank, ctx) if ctx.mode in ("grad", "vjp", "pullback") else None
    # a reverse sweep's trips: what their writes and the shapes fixed across them prove (passes/trip_shapes.py),
    # from level 1, in an entry and a callee; under Numba too (its lowering starts a gradient the proof leaves
    # as 0.0 beside ``dx = e`` as zeros of ``e``, one type per variable: backends/numba/lower.py)
    trips = None
    if ctx.level >= 1 and ctx.mode in ("grad", "vjp", "pullback"):
        floats = ctx.given_floats
        if floats is not None:  # a loop's array_kind(x) read once, from the parameter x copies (passes/kinds_once.py)
            probe = Ranks(ctx.body, ctx.params, ranks, ctx.locals)
            ctx.body = read_kinds_once(ctx.body, ctx.params, lambda: FixedShapes(
                ctx.body, ctx.params, types.SimpleNamespace(ranks=probe), ctx.ns, floats))
            if probe.asked and not (ctx.update_ranks is not None and ctx.update_ranks.asked):
                ctx.update_ranks = probe  # what it asked counts at emit (the entry's rank_dependent)

        def trips(analysis):
            def returned_shape(op):  # a callee's one returned shape (ModuleBuilder.returned_shape), as fixed_shapes
                return ctx.module.returned_shape(ctx, op, analysis.ranks.atom_rank)
            return TripShapes(ctx.body, ctx.params, analysis, ctx.ns, floats, returned_shape)
    ctx.analysis = Analysis(ctx.body, results_and_stack(ctx), ctx.wrt, ctx.params, ctx.locals, ctx.source, ranks,
                            returned, trips)
    # a user function's result of a rank the ranks prove (the callee's returned value, by the call's arguments') is
    # an array or a number, never a list or tuple: its gradient adds with +, not accumulate
    ctx.maybe_sequences -= {t for op in walk_ops(ctx.body) if op.kind == "call" and len(op.targets) == 1
                            for t in op.targets if t in ctx.locals and t not in ctx.sequences
                            and ctx.analysis.ranks.value.get(t, (None,))[0] is not None}
    check_calls_for_effect(ctx.body, ctx.analysis, ctx.source, ignore=ctx.forward_stack)
    ctx.body = check_untransformed_calls(ctx.body, ctx.analysis, ctx.source, ctx.ns, ctx.locals)
    ctx.adjoints = Adjoints(ctx.names)


def check_output(ctx: Context) -> None:
    """Make the generated function refuse an output that is not a number (grad, value_and_grad)."""
    if ctx.mode != "vjp":
        before, after = scalar_checks(ctx.body, ctx.ret, ctx.params, ctx.analysis.shapes, ctx.ns, ctx.fn)
        ctx.body = before + ctx.body + after


# -- core: the sweeps ----------------------------------------------------------

def fusion(ctx: Context) -> None:
    """Runs of elementwise operations joined by temporaries read once get one adjoint expression per operand."""
    ctx.fuse = True
    groups = planned_fusion(ctx.body, ctx.analysis, ctx.names.temps)
    ctx.choices.append("fused, each group one adjoint expression: " +
                       ("; ".join(", ".join(g) for g in groups) if groups else "nothing"))


def scalar_seeds(ctx: Context) -> None:
    """In the entry: an adjoint that is a number stays a number until a rule needs its shape (no arrays of 1.0)."""
    ctx.scalar_seeds = ctx.entry
    ctx.choices.append("adjoints that are numbers kept as numbers" if ctx.entry else
                       "adjoints kept at their values' shapes (a called function's caller asks for them)")


def remat(ctx: Context) -> None:
    """Cheap values the adjoint reads are computed again there instead of saved."""
    ctx.remat = rematerializable(ctx.body, ctx.analysis, ctx.params, ctx.ns)
    ctx.analysis.saved -= set(ctx.remat)
    ctx.choices.append("recomputed in the adjoint instead of saved: " + (", ".join(sorted(ctx.remat)) or "nothing"))


def _reverser(ctx: Context) -> Reverser:
    ctx.rev = Reverser(ctx.module, ctx)
    return ctx.rev


def reverse(ctx: Context) -> None:
    """The primal sweep, then the adjoint sweep with each rule inlined, as one function."""
    module, ns = ctx.module, ctx.ns
    ctx.name = module.names.fresh("d" + _ident(ctx.fn))
    rev = _reverser(ctx)
    primal = rev.primal(ctx.body)
    ret, an = ctx.ret, ctx.analysis
    if isinstance(ret, gast.Name) and ret.id in an.adjoint:
        seed = ctx.adjoints(ret.id)
        live = {ret.id}
    else:
        seed = ctx.names.fresh("dresult")
        live = set()
    value = ctx.pair or ret  # with has_aux the value is the pair (loss, aux)
    tail = []
    if ctx.preserve_result and isinstance(value, gast.Name) and value.id in an.saved:
        kept = compat.name(ctx.names.fresh("value"))
        tail.append(compat.assign(kept.id, compat.name(value.id)))
        value = kept
    adjoint, live = rev.adjoint(ctx.body, live)
    adjoint += rev.seeds.materialize(live)
    if ctx.mode == "vjp":  # the output's shape only: shapes_only may then skip computing it
        out_shape = compat.call(rev.helper(runtime.shape), [compat.clone(ret)])
        check_seed = compat.call(compat.name(ns.bind(runtime.check_seed, "check_seed")),
                                 [compat.name(seed), out_shape, compat.const(ctx.fn.__name__)])
        tail.append(compat.expr_stmt(check_seed))
    grads = [compat.name(ctx.adjoints(p)) if p in live else compat.const(0.0) for p in ctx.wrt]
    result = grads[0] if len(grads) == 1 else compat.tuple_(grads)
    if ctx.preserve_result:
        result = compat.tuple_([result, compat.clone(value)])
    body = _inits(ctx, rev.bound_first) + primal + tail + adjoint + [compat.ret(result)]
    if uses_stack(body, ns.stack):
        body = [compat.assign(ns.stack, compat.make("List", elts=[], ctx=gast.Load()))] + body
    args = arguments(ctx.source.tree, ns, ctx.fn, seed=seed,
                     seed_default=1.0 if ctx.mode == "grad" else None, defaults=False)
    ctx.seed = seed
    ctx.primal, ctx.adjoint = primal, adjoint
    ctx.fn_defs = [function_def(ctx.name, args, body)]


def reverse_callee(ctx: Context) -> None:
    """One function as the entry's, ``returns(value)`` between its sweeps; ``split`` cuts it into a pair.

    Its parameters are the stack, the user's and the seed: the optimisation
    passes after it see the primal and the adjoint together, as in the
    entry, and decide the same (``split``: what ``forward_f`` saves is what
    ``backward_f`` reads).
    """
    fn, ns, active = ctx.fn, ctx.ns, ctx.wrt
    rev = _reverser(ctx)
    primal = rev.primal(ctx.body)
    an, ret = ctx.analysis, ctx.ret
    live = {ret.id} if isinstance(ret, gast.Name) and ret.id in an.adjoint else set()
    seed = ctx.adjoints(ret.id) if live else ctx.names.fresh("dresult")
    if not ctx.entry:
        proven = _proven_computed(ctx)
        if proven and live and not uses_stack(primal, ns.stack) and not ctx.given_trees \
                and not any(rev.may_be_sequence(n) for n in (ret.id, *active)):
            # tested once at the backward half's start, unless a caller says it is computed (computed_seeds.py)
            ctx.seed_guard = (len(active), ctx.names.fresh("computed"))
        else:
            rev.maybe_zero.update(live)  # a caller without a gradient for the result passes 0.0
        if proven:
            rev.item_complete = item_complete_lists(ctx.body, set(ctx.params), ret.id if live else None)
    adjoint, live = rev.adjoint(ctx.body, live)
    adjoint += rev.seeds.materialize(live)
    grads = [compat.name(ctx.adjoints(p)) if p in live else compat.const(0.0) for p in active]
    body = _inits(ctx, rev.bound_first) + primal + [returns(compat.clone(ctx.pair or ret))] + adjoint \
        + [compat.ret(grads[0] if len(grads) == 1 else compat.tuple_(grads))]
    ctx.seed = seed
    ctx.primal, ctx.adjoint = primal, adjoint
    ctx.fn_defs = [function_def(ctx.name[1], arguments(ctx.source.tree, ns, fn, first=[ns.stack], seed=seed), body)]


def _proven_computed(ctx: Context) -> bool:
    """Whether the reverse sweep may drop ``is_zero`` tests proven needless (passes/computed_seeds.py): at
    optimize=2, in the modes that reverse, for both backends (Numba's lowering gives the seed guard's
    placeholders the parameters' shapes, backends/numba/lower.py)."""
    return ctx.level >= 2 and ctx.mode in ("grad", "vjp", "pullback")


def split(ctx: Context) -> None:
    """A callee's function cut where it returns: ``forward_f(_stack, ...)``, ``backward_f(_stack, dresult)``."""
    tidy = (lambda f: optimize(f, ctx.ns, given=ctx.given_floats)) if ctx.level >= 1 else (lambda f: f)  # dead code, from level 1
    forward, backward = split_pair(ctx.fn_def, ctx.name[0], ctx.name[1], ctx.ns.stack, ctx.seed, tidy)
    if ctx.seed_guard is not None:
        count, computed = ctx.seed_guard
        insert_seed_guard(backward, ctx.ns.stack, ctx.seed, count, computed, ctx.ns.helper(runtime.is_zero))
    ctx.fn_defs = [forward, backward] + ctx.fn_defs[1:]


def pullback(ctx: Context) -> None:
    """A reusable pullback (``vjp(f, *primals)``): f's forward/backward pair, reversed as an entry is.

    ``pullback_f(*args) -> (value, saved)`` runs ``forward_f`` once; the
    caller keeps ``saved`` (the stack it filled) and runs
    ``backward_f(copy of saved, dresult)`` once per cotangent: the backward
    function pops what it reads, so each run gets a fresh list of the same
    saved values, and nothing reruns the function.  The pair serves the one
    forward run at the primals ``vjp`` was given, as the entry's adjoint
    serves one call: it is specialised for their ranks and real floats, and
    its seed is the caller's cotangent, checked to have the output's shape
    (never a 0.0 standing for zeros, which a callee's caller may pass).  A
    recursive call of f gets a callee pair of its own (the pair is not
    registered as f's variant).
    """
    base = _ident(ctx.fn)
    ctx.name = (ctx.module.names.fresh(f"forward_{base}"), ctx.module.names.fresh(f"backward_{base}"), tuple(ctx.wrt))
    reverse_callee(ctx)


def pullback_entry(ctx: Context) -> None:
    """The pullback's entry ``pullback_f(*args) -> (value, saved)``, before the pair ``split`` made."""
    module, ns, base, names = ctx.module, ctx.ns, _ident(ctx.fn), ctx.name
    params = arguments(ctx.source.tree, ns, ctx.fn, defaults=False)
    value = ctx.names.fresh("value")
    body = [compat.assign(ns.stack, compat.make("List", elts=[], ctx=gast.Load())),
            compat.assign(value, compat.call(compat.name(names[0]), [compat.name(ns.stack)]
                                             + [compat.name(a.id) for a in params.args])),
            compat.ret(compat.tuple_([compat.name(value), compat.name(ns.stack)]))]
    ctx.backward = names[1]
    ctx.name = module.names.fresh(f"pullback_{base}")
    ctx.fn_defs = [function_def(ctx.name, params, body)] + ctx.fn_defs


def forward(ctx: Context) -> None:
    """The function and its tangent, each operation followed by its tangent's: ``jvp_f(x, ..., dx, ...)``."""
    ctx.name = ctx.module.names.fresh("jvp_" + _ident(ctx.fn))
    ctx.fn_defs = [tangent_function(ctx, ctx.name, last=ctx.wrt)]


def linearize(ctx: Context) -> None:
    """The jvp and its callees' cut into a primal half and a tangent half each (core/linearize.py), with an
    entry ``linearize_f(*args) -> (value, record)`` running the primal half; ``ctx.backward`` names the
    tangent half ``tangent_f(take, *tangents)``."""
    module, base = ctx.module, _ident(ctx.fn)
    callees = {name: (module.names.fresh("primal_" + name[len("jvp_"):]), module.names.fresh("tangent_" + name[len("jvp_"):]),
                      len(key[1])) for key, name in module.variants.items() if key[-1] == "jvp"}
    halves: list = []
    take = module.names.local_everywhere("take")
    for fn_def in module.functions:
        if fn_def.name not in callees:
            raise NotCut(f"the function {fn_def.name}")
        halves += cut(fn_def, module.tangent_names.get(fn_def.name, ()), callees[fn_def.name][2], 0, callees, module,
                      callees[fn_def.name][:2], take)
    module.functions = halves
    names = (module.names.fresh(f"primal_{base}"), module.names.fresh(f"tangent_{base}"))
    ctx.fn_defs = list(cut(ctx.fn_def, ctx.adjoints.table.values(), 0, len(ctx.wrt), callees, module, names, take))
    if any(isinstance(n, gast.Name) and n.id in callees for f in halves + ctx.fn_defs for n in compat.walk(f)):
        raise NotCut("a jvp variant read other than called")
    params = arguments(ctx.source.tree, ctx.ns, ctx.fn, defaults=False)
    value = ctx.names.fresh("value")
    body = [compat.assign(ctx.ns.stack, compat.make("List", elts=[], ctx=gast.Load())),
            compat.assign(value, compat.call(compat.name(names[0]), [compat.name(ctx.ns.stack)]
                                             + [compat.name(a.id) for a in params.args])),
            compat.ret(compat.tuple_([compat.name(value), compat.name(ctx.ns.stack)]))]
    ctx.name, ctx.backward = module.names.fresh(f"linearize_{base}"), names[1]
    ctx.fn_defs.insert(0, function_def(ctx.name, params, body))


def forward_callee(ctx: Context) -> None:
    """``jvp_g(dx, ..., x, ...) -> (value, tangent)`` for a called function, its tangents first."""
    ctx.fn_defs = [tangent_function(ctx, ctx.name, first=ctx.wrt)]


def batch(ctx: Context) -> None:
    """Every operation written for a stack of examples along a first axis: ``vmap_f(x, ...)`` (core/batching.py)."""
    ctx.name = ctx.module.names.fresh("vmap_" + _ident(ctx.fn))
    ctx.fn_defs = [batched_function(ctx, ctx.name, ctx.wrt, ctx.batched_items)]


def batch_callee(ctx: Context) -> None:
    """A called function's ``vmap_`` variant for the parameters given batched values (its name chosen by the
    caller's module before, so that a recursive call finds it)."""
    ctx.fn_defs = [batched_function(ctx, ctx.name, ctx.wrt, ctx.batched_items)]


# -- back: the generated module -------------------------------------------------

def emit(ctx: Context) -> None:
    """The module's source (the entry first, then its callees' pairs), compiled and registered for tracebacks."""
    module = ctx.module
    if not module.user.covers(module.met):
        raise _NamesMet
    module.rank_dependent = ctx.analysis.ranks.asked or ctx.update_ranks is not None and ctx.update_ranks.asked \
        or module.callee_ranks_asked
    module.functions[:0] = ctx.fn_defs  # the entry first (a pullback's: with its forward/backward pair)
    if ctx.level >= 1 and ctx.given_floats is not None:
        specialise_callees(ctx.fn_def, module.functions, ctx.ns, ctx.given_floats)
    fn, code = ctx.fn, ctx.fn.__code__
    what = {"vjp": "vector-Jacobian product", "jvp": "Jacobian-vector product",
            "pullback": "reusable pullback (vector-Jacobian products)",
            "linearize": "linearization (Jacobian-vector products at one point)"}.get(ctx.mode, "gradient")
    level = "" if ctx.level == DEFAULT_LEVEL else f", at optimize={ctx.level}"
    floats = module.floats.names if module.floats is not None else ()
    trees = f" ({', '.join(ctx.given_trees)} holding dicts, lists or tuples)" if ctx.given_trees else ""
    header = [f"Generated by astgrad: the {what} of {fn.__qualname__} "
              f"({os.path.basename(code.co_filename)}:{code.co_firstlineno}) "
              f"with respect to {', '.join(ctx.wrt)}{trees}{describe_ranks(module.ranks, floats)}{level}."]
    if ctx.mode == "vmap":
        header = [f"Generated by astgrad: {fn.__qualname__} ({os.path.basename(code.co_filename)}:"
                  f"{code.co_firstlineno}) batched over {', '.join(ctx.wrt)}, the batch axis first"
                  f"{describe_ranks(module.ranks).replace(', for ', ', for examples of ', 1)}{level}."]
    module.source = render(module.functions, module.comments, header)
    variant = f"{ctx.mode if ctx.mode in ('vjp', 'jvp', 'pullback', 'linearize', 'vmap') else 'grad'} wrt {','.join(ctx.wrt)}" \
              f"{' +value' if ctx.preserve_result else ''}{' +aux' if ctx.has_aux else ''}"
    variant += f" trees {','.join(sorted(ctx.given_trees))}" if ctx.given_trees else ""
    variant += f" ranks {','.join(str(r) for r, _ in module.ranks.values())}" if module.ranks else ""
    variant += f" floats {','.join(sorted(floats))}" if floats else ""
    variant += "" if ctx.level == DEFAULT_LEVEL else f" O{ctx.level}"
    filename = printable(f"<astgrad {fn.__qualname__} {variant} {os.path.basename(code.co_filename)}:"
                         f"{code.co_firstlineno}>")
    namespace = module.ns.globals
    namespace[STACK_MARK] = module.ns.stack  # a transformation of this code again knows its stack (forward.py)
    if not namespace.live:  # nothing read live: a plain dict, whose global reads CPython caches (not a subclass's)
        namespace = dict(namespace)
    filename = compile_source(module.source, filename, namespace)
    dependencies = module.dependencies
    for used in module.sources:
        dependencies.update(used.dependencies)
    generated = Generated(module.source, namespace[ctx.name], filename, namespace, dependencies,
                          origins(module.functions, module.comment_origins))
    generated.rank_dependent, generated.guarded = module.rank_dependent, net.plan(module.functions, namespace, generated, ctx.wrt)
    generated.float_dependent = module.floats is not None and module.floats.asked
    generated.kept_dicts = ctx.kept_dicts
    generated.backward = ctx.backward
    drop_lines_with(generated, filename)
    module.generated = generated if module.backend is None else module.backend(ctx, generated)


#: every list's front end: the user's function, checked, to its normal form
FRONT = (
    Pass("parse", parse),
    Pass("check", check),
    Pass("generated_stack", generated_stack),
    Pass("normalize", normalize),
    Pass("check_aliasing", check_aliasing),
)

#: the function ``grad`` (``vjp``, ``value_and_grad``) was given
ENTRY = FRONT + (
    Pass("unpack_aux", unpack_aux),
    Pass("number_updates", number_updates, 1, reads=frozenset({"ranks"})),
    Pass("analyse", analyse, reads=frozenset({"ranks", "floats"})),
    Pass("check_output", check_output),
    Pass("fusion", fusion, 1),
    Pass("scalar_seeds", scalar_seeds, 1),
    Pass("remat", remat, 2),
    Pass("reverse", reverse),
    Pass("dead_code", dead_code, 1, reads=frozenset({"floats"})),
    Pass("number_unbroadcasts", number_unbroadcasts, 1, reads=frozenset({"ranks"})),
    Pass("number_items", number_items, 2, reads=frozenset({"ranks"})),
    Pass("float_casts", float_casts, 1, reads=frozenset({"floats"})),
    Pass("static_shapes", static_shapes, 2, tidy=True),
    Pass("inline_temporaries", inline_temporaries, 1),
    Pass("shapes_on_stack", shapes_on_stack, 2, needs=frozenset({"stack"})),
    Pass("drop_unread_saves", drop_unread_saves, 1, tidy=True, needs=frozenset({"stack"})),
    Pass("fixed_shapes", fixed_shapes, 1, tidy=True, reads=frozenset({"ranks", "floats"}), needs=frozenset({"stack"})),
    Pass("invariant_saves", invariant_saves, 1, tidy=True, needs=frozenset({"stack"})),
    Pass("keep_only_shapes", keep_only_shapes, 2),
    Pass("compute_only_shapes", compute_only_shapes, 2, reads=frozenset({"floats"})),
    Pass("read_through_copies", read_through_copies, 1),
    Pass("item_updates", item_updates, 1, tidy=True),
    Pass("where_products", where_products, 1, tidy=True),
    Pass("scatter_sums", scatter_sums, 1, tidy=True),
    Pass("slice_views", slice_views, 1),
    Pass("saves_in_locals", saves_in_locals, 2, tidy=True, needs=frozenset({"stack"})),
    Pass("overwritten_saves", overwritten_saves, 2, needs=frozenset({"stack"})),
    Pass("release_arrays", release_arrays, 2),
    Pass("in_place", in_place, 2),
    Pass("items_in_place", items_in_place, 2, reads=frozenset({"ranks"})),
    Pass("linear_recurrences", linear_recurrences, 1, needs=frozenset({"loop"}), reads=frozenset({"floats"})),
    Pass("array_sizes", array_sizes, 2, reads=frozenset({"ranks"})),
    Pass("written_items", written_items, 1),
    Pass("invariant_shapes", invariant_shapes, 1, reads=frozenset({"ranks"})),
    Pass("item_adds", item_adds, 2, reads=frozenset({"ranks"})),
    Pass("shared_products", shared_products, 1),
    Pass("negations", negations, 1),
    Pass("chained_adds", chained_adds, 2, reads=frozenset({"ranks"})),
    Pass("number_item_parts", number_item_parts, 2),
    Pass("slice_constants", slice_constants, 1),
    Pass("emit", emit, reads=frozenset({"ranks", "floats"})),
)

#: a called user function's forward/backward pair: the entry's passes over one function, then cut in two;
#: results written in place only in each half (the backward half may run again on the same saves: a pullback)
CALLEE = FRONT + (
    Pass("analyse", analyse, reads=frozenset({"ranks"})),
    Pass("fusion", fusion, 1),
    Pass("remat", remat, 2),
    Pass("reverse", reverse_callee),
) + tuple(p for p in ENTRY[ENTRY.index(next(p for p in ENTRY if p.name == "reverse")) + 1:]
          if p.name not in ("in_place", "written_items", "invariant_shapes", "item_adds", "shared_products",
                            "negations", "chained_adds", "number_item_parts", "slice_constants",
                            "emit")) + (
    Pass("split", split, reads=frozenset({"floats"})),
    Pass("in_place", in_place_halves, 2),
    Pass("written_items", written_items, 1),
    Pass("invariant_shapes", invariant_shapes, 1, reads=frozenset({"ranks"})),
    Pass("item_adds", item_adds, 2, reads=frozenset({"ranks"})),
    Pass("shared_products", shared_products, 1),
    Pass("negations", negations, 1),
    Pass("chained_adds", chained_adds, 2, reads=frozenset({"ranks"})),
    Pass("number_item_parts", number_item_parts, 2),
    Pass("slice_constants", slice_constants, 1),
)


#: a reusable pullback (``vjp(f, *primals)``): the entry's passes, reversed into a forward/backward pair as a
#: callee is (results written in place only in each half: the backward half runs again on the same saves), with
#: an entry running the forward half, emitted as a module
PULLBACK = tuple(p for p in ENTRY[:ENTRY.index(next(p for p in ENTRY if p.name == "reverse"))]
                 if p.name != "check_output") + (Pass("pullback", pullback),) \
    + tuple(p for p in CALLEE[CALLEE.index(next(p for p in CALLEE if p.name == "reverse")) + 1:]) \
    + (Pass("pullback_entry", pullback_entry), Pass("emit", emit, reads=frozenset({"ranks", "floats"})))

#: the forward sweep (``jvp``): the function and its tangent in one pass
FORWARD = FRONT + (
    Pass("analyse", analyse, reads=frozenset({"ranks"})),
    Pass("forward", forward),
    Pass("dead_code", dead_code, 1, reads=frozenset({"floats"})),
    Pass("emit", emit, reads=frozenset({"ranks", "floats"})),
)

#: ``linearize``: the forward sweep cut into a primal half, run once, and a tangent half
LINEARIZE = FORWARD[:-1] + (Pass("linearize", linearize), FORWARD[-1])

#: a called user function's tangent variant
FORWARD_CALLEE = FRONT + (
    Pass("analyse", analyse, reads=frozenset({"ranks"})),
    Pass("forward", forward_callee),
    Pass("dead_code", dead_code, 1, reads=frozenset({"floats"})),
)

#: the batching sweep (``vmap``): the function for a stack of examples
BATCH = FRONT + (
    Pass("analyse", analyse, reads=frozenset({"ranks"})),
    Pass("batch", batch),
    Pass("dead_code", dead_code, 1, reads=frozenset({"floats"})),
    Pass("emit", emit, reads=frozenset({"ranks", "floats"})),
)

#: a called user function's batched variant
BATCH_CALLEE = FRONT + (
    Pass("analyse", analyse, reads=frozenset({"ranks"})),
    Pass("batch", batch_callee),
    Pass("dead_code", dead_code, 1, reads=frozenset({"floats"})),
)

STAGES = tuple(p.name for p in ENTRY)
FORWARD_STAGES = tuple(p.name for p in FORWARD)


def run(passes, ctx, watch=None, start=0):
    """Run the passes of ``ctx.level`` in order, from the ``start``-th; render the function after the one
    named ``watch``.  An entry whose module keeps its state (``ModuleBuilder.kept``) keeps it before the first
    pass that reads the calls' ranks, and before the first that reads their floats."""
    kept = ctx.module.kept if ctx.entry else None
    for i in range(start, len(passes)):
        p = passes[i]
        if p.level > ctx.level:
            continue
        if kept is not None:
            for given in p.given() - kept.points.keys():
                kept.take(given, i, ctx)
        if p.needs and _SKIPPING and not p.needs & features(ctx):
            pass  # nothing it acts on: it would change nothing (features)
        elif p.run(ctx) is not False and p.tidy:
            dead_code(ctx)
        if p.name == watch:
            ctx.module.shown = render_stage(ctx, p.name)


#: passes run only where the generated code holds what they act on (Pass.needs); a test switches it off to
#: check that skipping never changes the code
_SKIPPING = True


def features(ctx: Context) -> frozenset[str]:
    """What the generated functions hold that a pass acts on, found once, at the first pass that asks.

    ``"stack"``: the stack is used (a save, a restore, a callee's forward
    half called); ``"loop"``: a ``for`` or ``while``.  The passes that ask
    (``Pass.needs``) run after ``reverse``, and no pass after it adds either
    to a function that had none: each pass removes saves, or rewrites the
    ones it finds, and no pass writes a loop.
    """
    if ctx.features is None:
        found = set()
        for fn_def in ctx.fn_defs:
            for node in (n for stmt in fn_def.body for n in compat.walk(stmt)):
                if isinstance(node, (gast.For, gast.While)):
                    found.add("loop")
                elif isinstance(node, gast.Name) and node.id == ctx.ns.stack:
                    found.add("stack")
        ctx.features = frozenset(found)
    return ctx.features


class _NamesMet(Exception):
    """The transform met user names its generated names were not chosen to avoid: run it again."""


class Kept:
    """An entry's transform kept where the calls' ranks, and where their real floats, are first read.

    ``grad(f)`` transforms f for arguments of any ranks and kinds; the first
    call may ask for the adjoint specialised for its arguments' ranks or
    real floats (api/gradient.py ``_specialised``).  Everything the passes
    did before the first pass that reads what differs (``Pass.reads``) is
    the same for that variant, so ``resume`` runs only the passes from there,
    on a fork (ir/forks.py) of the state kept: passes rewrite trees in place,
    and the kept state must serve the next variant as it was.  A point is
    None where the value was read before it (``ModuleBuilder.read``): a pass
    reading it without declaring it; a variant differing there is built
    from the start.
    """

    def __init__(self, passes, key, ranks, floats):
        self.passes = passes
        self.key = key  # everything else the build was given (build's options): a variant must match it
        self.given = {"ranks": ranks, "floats": floats}
        self.points: dict = {}  # "ranks" or "floats" -> (index of the pass, forked (module, ctx)), or None

    def take(self, given, i, ctx):
        self.points[given] = None if given in ctx.module.read else (i, fork((ctx.module, ctx)))

    def resume(self, ranks, floats):
        """The module of the variant for ``ranks`` and ``floats``, or None: it must be built from the start."""
        differ = [g for g, value in (("ranks", ranks), ("floats", floats)) if value != self.given[g]]
        points = [point for g in differ if (point := self.points.get(g)) is not None]
        if not differ or len(points) < len(differ) or self.given["floats"] is None:  # None: no callees noted
            return None
        i, state = min(points, key=lambda point: point[0])
        module, ctx = fork(state)
        module.kept, module.ranks = None, ranks
        module.floats = None if floats is None else GivenFloats(floats, module.floats.callees)
        try:
            run(self.passes, ctx, start=i)
        except _NamesMet:
            return None  # the cold build learns the names
        return module


# -- the module: what the functions of one generated module share ------------

class ModuleBuilder:
    """The generated module of one entry: names, namespace, comments, callees' pairs, the level."""

    _fork_shares = ("kept",)  # one Kept, not a copy in each state it keeps (ir/forks.py)

    def __init__(self, user: UserNames, level=DEFAULT_LEVEL, ranks=None, backend=None, floats=None):
        self.user = user
        self.level = level
        self.backend = backend  # (ctx, the numpy Generated) -> the Generated that runs (api._backend_hook)
        self.read: set[str] = set()  # "ranks", "floats": read by a pass so far (Kept)
        self.kept: Kept | None = None  # the state kept for specialised variants, when asked (build's keep)
        self._ranks = ranks  # the entry's parameters' (rank, holds an int), known at call time
        self.rank_dependent = False  # whether known ranks would change the entry's code (ranks.Ranks.asked)
        # the entry's parameters holding real floats at call time; .asked: knowing more would fold a guard
        self._floats = GivenFloats(floats) if floats is not None else None
        self.names = Names(user=user)
        self.met = UserNames()  # the names of the user functions transformed, as met
        self.ns = Namespace(self.names)
        self.dependencies = Dependencies()  # besides what each FunctionSource records
        self.dependencies.record_rule_table()  # before the first lookup
        self.inliner = RuleInliner(self.ns, self.dependencies)
        self.comments: list[str] = []
        self.comment_origins: list = []  # (file, line, text, True) of each comment's user line
        self.functions: list = []
        self.variants: dict = {}
        self.refused: dict = {}  # variant key -> the refusal deferred to where a branch calls it
        self.kept_params: dict = {}  # a callee variant's names -> its parameters writing into the caller's dict
        self.callee_adjoints: dict = {}  # a backward function's name -> (its forward's, {adjoint name: value's name})
        # a backward function whose seed it tests once at its start -> its parameter saying the seed is computed
        self.seed_tested: dict = {}
        self.returned_ranks: dict = {}  # what returned_rank found, by callee, argument ranks and functions passed
        self.callee_ranks: dict = {}  # the same key -> (normalised body, returned atom, Ranks) returned_rank made
        self.callee_ranks_asked = False  # a callee's variant asked a rank its callers' known ranks could answer
        self.building: dict = {}  # a function -> how many of its forward/backward variants are being made now
        self.tangent_names: dict = {}  # a jvp_ variant's name -> the names of the tangents in it (core/linearize.py)
        self.batch_items: dict = {}  # a vmap_ variant's name -> whether it returns a tuple or list of batched values
        self.batch_read: dict = {}  # vmap_ variants called while being made (recursion)
        self.batch_assumed: dict = {}  # what such a call reads the variant as returning: items or an array
        self.batch_pure: dict = {}  # a vmap_ variant's name -> whether calling it only computes (or raises)
        self.batch_stack_params: dict = {}  # a vmap_ variant's name -> its parameters only pushed on and popped
        self.batch_pushed: dict = {}  # (list, name) -> what the module's batched functions push on it under that name
        self.sources: list = []
        self.generated = None
        self.shown = None

    @property
    def ranks(self):
        self.read.add("ranks")
        return self._ranks

    @ranks.setter
    def ranks(self, value):
        self._ranks = value

    @property
    def floats(self) -> GivenFloats | None:
        self.read.add("floats")
        return self._floats

    @floats.setter
    def floats(self, value):
        self._floats = value

    def comment(self, text, origin=None):
        self.comments.append(text)
        self.comment_origins.append(origin)
        return marker(len(self.comments) - 1)

    def mark(self):
        return len(self.comments)

    def reset(self, mark):
        del self.comments[mark:]
        del self.comment_origins[mark:]

    def variant(self, fn, active, trees=((), ()), callables=(), deferrable=False, kept=(frozenset(), {}), ranks=()):
        """The names of ``fn``'s forward/backward pair for the ``active`` parameters, made once.

        ``trees``: the parameters that hold containers, and those that may (containers.passed).
        ``callables``: ``(parameter, function)`` pairs, the functions the call passes (passed_functions).
        ``deferrable``: the call sits in a branch that may not run; a refusal of ``fn`` is then raised
        where the call runs instead of now (``_refused_when_called``).
        ``kept``: the parameters that may write into the dict the caller passes down, and why the others
        may not (front/caller_state.passed_down); ``kept_params[names]`` is those that do.
        ``ranks``: ``(parameter, (rank, holds integers))`` pairs the call's arguments surely have (the caller's
        ranks, front/ranks.py): the pair is made for them, as the entry is for the ranks given at call time, and
        serves only calls that prove the same.  A call made while ``fn``'s pair is being made (recursion) gets
        the pair for no known ranks, so that ranks growing with the depth cannot make pairs without end.
        A backend's module (Numba) gets the pairs for the ranks too: its lowering starts a skipped rule's
        gradient as zeros of the expression the other arm binds where the ranks dropped the ``unbroadcast``.
        """
        if self.building.get(fn):
            ranks = ()
        key = (fn, tuple(active), trees, tuple((p, id(f)) for p, f in callables), kept[0], tuple(ranks))
        if not deferrable and key in self.refused:  # met first in a branch, now on every path
            raise self.refused[key]
        if key in self.variants:
            return self.variants[key]
        base = _ident(fn)
        names = (self.names.fresh(f"forward_{base}"), self.names.fresh(f"backward_{base}"), tuple(active))
        self.variants[key] = names  # before its passes run: a recursive call finds it
        ctx = Context(self, fn, active, trees=trees[0], maybe_trees=trees[1], callables=callables,
                      ranks=ranks)
        ctx.name = names
        ctx.kept_allowed, ctx.kept_reasons = kept
        self.building[fn] = self.building.get(fn, 0) + 1
        try:
            run(CALLEE, ctx)
        except TransformError as error:
            if not deferrable:
                del self.variants[key]  # a call on every path refuses now, as before
                raise
            self.refused[key] = error
            self.functions += self._refused_when_called(names[:2], error)
            return names
        finally:
            self.building[fn] -= 1
        self.callee_ranks_asked |= ctx.analysis.ranks.asked  # False where the ranks were not given (None)
        self.functions += ctx.fn_defs
        if self._floats is not None:  # not a read of them: every variant has the callees (Kept.resume)
            self._floats.callees[names[0]] = ctx.fn_defs[0]  # its forward function (passes/unused.specialise_callees)
        self.kept_params[names] = ctx.kept_dicts
        self.callee_adjoints[names[1]] = (names[0], {adjoint: name for name, adjoint in ctx.adjoints.table.items()})
        if ctx.seed_guard is not None:
            self.seed_tested[names[1]] = ctx.seed_guard[1]
        return names

    def returned_rank(self, ctx, op, rank_of):
        """``(rank, holds integers)`` of what the call ``op`` of a user function (in ``ctx``'s function) returns,
        UNKNOWN when it has no one rank, None while an argument's rank is not known yet (``rank_of``).

        The callee is normalised on its own and its ranks found from the
        arguments' (front/ranks.py), as its variant will be (``variant``,
        from the same call's ranks); a call met again while its rank is
        being found (recursion), and a callee the transform refuses, return
        no rank.  Kept per callee, argument ranks and functions passed.
        """
        try:
            bound = own_signature(op.fn).bind(*op.args, **op.kwargs).arguments
        except (TypeError, ValueError):
            return UNKNOWN_RANK
        given = {}
        for param, atom in bound.items():
            if not isinstance(atom, (gast.Name, gast.Constant, gast.UnaryOp)):
                continue
            rank = rank_of(atom)
            if rank is None:
                return None
            if rank[0] is not None:
                given[param] = rank
        callables = passed_functions(ctx, bound)
        key = (op.fn, tuple(sorted(given.items())), tuple((p, id(f)) for p, f in callables))
        if key in self.returned_ranks:
            return self.returned_ranks[key]
        self.returned_ranks[key] = UNKNOWN_RANK  # met again while found: recursion
        try:
            source = FunctionSource(op.fn)
            check_function(source)
            normalizer = Normalizer(source, self.names.child(), self.ns)
            normalizer.callables = dict(callables)
            body, ret = normalizer.function()
        except TransformError:
            return UNKNOWN_RANK
        self.dependencies.update(source.dependencies)  # the caller's code holds what it found: a change rebuilds it
        params = param_names(source.tree)
        ranks = Ranks(body, params, given, set(normalizer.locals) | assigned(body), functools.partial(
            self.returned_rank, _Caller(dict(callables), self.ns)))
        found = ranks.of_argument(ret) if isinstance(ret, gast.Name) and ret.id in ranks.locals else None
        self.returned_ranks[key] = found = found or UNKNOWN_RANK
        self.callee_ranks[key] = (body, ret, ranks, params)
        return found

    def returned_shape(self, ctx, op, rank_of):
        """The one shape (a tuple of ints) of every value the call ``op`` of a user function returns, or None.

        Proven for a callee whose returned name is bound once, by
        ``np.array(items)`` of a list literal that nothing else binds or
        reads, each item of rank 0 by the arguments' ranks (``rank_of``, as
        ``returned_rank`` finds them): numbers and 0-d arrays make an array
        of shape ``(len(items),)`` (RK4's ``k1 = f(t, y, p)`` of a
        right-hand side ``np.array([a, b])``).  Any other callee, one being
        made (recursion) or refused: None.
        """
        if self.returned_rank(ctx, op, rank_of) is None:
            return None
        bound = own_signature(op.fn).bind(*op.args, **op.kwargs).arguments
        given = {}
        for param, atom in bound.items():
            if isinstance(atom, (gast.Name, gast.Constant, gast.UnaryOp)) and (rank := rank_of(atom))[0] is not None:
                given[param] = rank
        callables = passed_functions(ctx, bound)
        found = self.callee_ranks.get((op.fn, tuple(sorted(given.items())), tuple((p, id(f)) for p, f in callables)))
        if found is None:
            return None
        return _array_of_numbers_shape(*found)

    def _refused_when_called(self, names, error):
        """Functions named ``names`` that raise ``error`` (anew, with its message and location) when called:
        a callee refused in a branch that may not run stops the gradient only where it runs, and its
        result never exists, so no number comes from it."""
        refuse = self.ns.bind(Refusal(error), "refused")
        return [compat.parse(f"def {name}(*args, **kwargs):\n    raise {refuse}()\n").body[0] for name in names]

    def batched_variant(self, fn, batched, items):
        """``(name, returns_items, stack parameters)`` of ``fn``'s ``vmap_`` variant for the parameters ``batched``
        (``items``: those of them given lists or tuples of batched arrays), made once; the variant returns a
        batched value, or a tuple or list of them (``returns_items``).  A recursive call finds it being made and
        reads what it returns as an array, else (the variant made again, where that was wrong) as items."""
        key = (fn, tuple(batched), tuple(items), "vmap")
        if key in self.variants:
            name = self.variants[key]
            if name not in self.batch_items:
                self.batch_read[name] = True
            return name, self.batch_items.get(name, self.batch_assumed.get(name, False)), \
                self.batch_stack_params.get(name, frozenset())
        name = self.variants[key] = self.names.fresh(f"vmap_{_ident(fn)}")  # before its passes: recursion finds it
        for assumed in (False, True):
            self.batch_assumed[name] = assumed
            ctx = Context(self, fn, batched, mode="vmap")
            ctx.name, ctx.batched_items = name, frozenset(items)
            try:
                run(BATCH_CALLEE, ctx)
            except TransformError:
                if assumed or not self.batch_read.pop(name, False):
                    del self.variants[key]
                    raise
                continue
            if not self.batch_read.pop(name, False) or ctx.returns_items == assumed:
                break
            if assumed:
                del self.variants[key]
                raise ctx.source.error(ctx.source.tree, f"astgrad.vmap: {fn.__name__} calls itself, and what it returns "
                                       "is a tuple or list of values with a batch axis on one path and an array on "
                                       "another", "Loop over the examples.", UnsupportedSyntaxError)
        self.batch_items[name] = ctx.returns_items
        self.functions += ctx.fn_defs
        return name, ctx.returns_items, self.batch_stack_params[name]

    def tangent_variant(self, fn, active, trees=((), ()), callables=(), deferrable=False, kept=(frozenset(), {})):
        """The name of ``fn``'s ``jvp_`` variant for the ``active`` parameters (those given tangents), made once.

        ``trees``: the parameters that hold containers, and those that may (containers.passed).
        ``callables``, ``deferrable``, ``kept``: as for :meth:`variant`.
        """
        key = (fn, tuple(active), trees, tuple((p, id(f)) for p, f in callables), kept[0], "jvp")
        if not deferrable and key in self.refused:  # met first in a branch, now on every path
            raise self.refused[key]
        if key in self.variants:
            return self.variants[key]
        name = self.variants[key] = self.names.fresh(f"jvp_{_ident(fn)}")  # before its passes: recursion finds it
        ctx = Context(self, fn, active, mode="jvp", trees=trees[0], maybe_trees=trees[1], callables=callables)
        ctx.name = name
        ctx.kept_allowed, ctx.kept_reasons = kept
        try:
            run(FORWARD_CALLEE, ctx)
        except TransformError as error:
            if not deferrable:
                del self.variants[key]
                raise
            self.refused[key] = error
            self.functions += self._refused_when_called([name], error)
            return name
        self.functions += ctx.fn_defs
        self.kept_params[name] = ctx.kept_dicts
        self.tangent_names[name] = frozenset(ctx.adjoints.table.values())
        return name


def _array_of_numbers_shape(body, ret, ranks, params):
    """``(n,)`` where ``ret`` is bound once, by ``np.array(items)`` (no other argument) of a list literal of ``n``
    items of rank 0 (``ranks``), not a parameter, bound once and read by nothing else, no statement kept as
    written reading either; else None."""
    if not isinstance(ret, gast.Name):
        return None
    sites, exposed = binding_sites(body)
    made = sites.get(ret.id, [])
    if ret.id in exposed or len(made) != 1 or not isinstance(made[0], Op):
        return None
    array = made[0]
    if array.kind != "prim" or array.fn is not np.array or len(array.args) != 1 or array.kwargs \
            or not isinstance(array.args[0], gast.Name):
        return None
    items = array.args[0].id
    packed = sites.get(items, [])
    if items in exposed or items in params or len(packed) != 1 or not isinstance(packed[0], Op) \
            or packed[0].kind != "pack" or not packed[0].sequence:
        return None
    readers = [op for op in walk_ops(body) if any(isinstance(n, gast.Name) and n.id == items
                                                  for a in (*op.args, *op.kwargs.values()) for n in gast.walk(a))]
    if readers != [array] or any(ranks.atom_rank(a) is None or ranks.atom_rank(a)[0] != 0 for a in packed[0].args):
        return None
    return (len(packed[0].args),)


@dataclass(frozen=True)
class _Caller:
    """What ``passed_functions`` reads of the function making a call: the functions its parameters hold, and
    the module's namespace."""
    callables: dict
    ns: Namespace


class Generated:
    """The result of a transformation: module source and entry function."""

    rank_dependent = False  # whether arguments of known ranks would change the code (build(ranks=...))
    float_dependent = False  # whether arguments known to hold real floats would change it (build(floats=...))
    backward: str | None = None  # the half run per seed: a pullback's backward function, a linearization's tangent
    allocator = None  # a backend's type of the ``base`` of the arrays it allocates (api._KEEP_NUMBA)
    guarded = None  # ``function`` under the run-time net, for a module that calls a door (net.plan)
    kept_dicts: frozenset = frozenset()  # parameters whose dicts the code writes into, in place (caller_state)
    returns_items = False  # vmap: the value is a tuple or list of batched arrays (build_batched)
    kept: Kept | None = None  # the transform's state for specialised variants (build's keep)

    @property
    def by_kinds(self) -> dict:
        """The variants specialised on their arguments' ranks and real floats, by those (api/gradient.py
        ``_for_functions``), made on first asking."""
        found = self.__dict__.get("_by_kinds")
        if found is None:
            found = self.__dict__["_by_kinds"] = {}
        return found

    def __init__(self, source, function, filename, namespace, dependencies=None, origins=()):
        self.source = source
        self.origins = origins  # the user line of each generated statement: see runtime_errors
        self.function = function
        self.filename = filename
        self.namespace = namespace
        self.dependencies = dependencies or Dependencies()

    run = property(lambda self: self.guarded or self.function, doc="What a call runs: ``function``, or it under the net.")

    def current(self) -> bool:
        """False once a function the transform read (``f``, a callee, ``np.sum``) was rebound."""
        return self.dependencies.current()


def build(fn, wrt, mode="grad", preserve_result=False, has_aux=False, trees=(), ranks=None, level=DEFAULT_LEVEL,
          stage=None, backend=None, callables=(), floats=None, keep=False, kept=None):
    """Transform ``fn``; ``wrt`` lists parameter names; ``level`` is the optimisation level.

    ``ranks`` maps parameters to ``(rank, holds a Python int)`` as they are
    in the calls the result will serve (the caller checks that they are):
    rules then take the one form those ranks need (transform.ranks).
    ``floats`` names the parameters that hold real floats (``runtime.floats``)
    in those calls, which the caller checks too: a value left uncomputed
    whose operands surely are real floats then needs no guard
    (passes/unused.GivenFloats).  An empty set: none, and the result's
    ``float_dependent`` says whether knowing some would change the code.

    In mode "grad" the generated function raises unless ``fn`` returns a
    scalar (with ``has_aux``, a pair whose first item is one); with
    ``has_aux`` it returns the pair as the value (``preserve_result`` is then
    required).  ``trees`` names the parameters that hold dicts, lists or
    tuples in this call.  With ``stage``, the result's ``shown`` is the
    source after that pass.  ``backend`` turns the numpy module into the one that runs.
    ``callables`` pairs parameters with the functions they hold in the calls
    the result will serve (the caller checks that they do): the body's calls
    of those parameters are calls of those functions, transformed as callees.

    Generated names must avoid every name of every user function the module
    transforms, known before the first name is made: the code objects of
    ``fn`` and of the functions it may call tell them cheaply.  Should the
    transform meet a name they did not (a callee reached another way, a name
    in code the compiler dropped), it runs again knowing it.

    With ``keep``, the result's ``kept`` is the transform's state where the
    ranks and where the floats were first read (``Kept``), when knowing them
    would change the code.  Given that as ``kept``, a build for other
    ``ranks`` or ``floats`` and the same everything else runs only the
    passes from there: the same source as a build from the start.
    """
    if level not in LEVELS:
        raise ValueError(f"astgrad: optimize={level!r}; the levels are {', '.join(map(str, LEVELS))}")
    key = (fn, tuple(wrt), level, backend, mode, preserve_result, has_aux, tuple(trees),
           tuple((p, id(f)) for p, f in callables))
    floats = None if floats is None else frozenset(floats)
    if kept is not None and stage is None and kept.key == key:
        try:
            module = kept.resume(ranks, floats)
        except TransformError as exc:
            raise in_wrapper(fn, exc) from None
        if module is not None:
            return module.generated
    return _transform(fn, wrt, ENTRY, stage, lambda user: ModuleBuilder(user, level, ranks, backend, floats),
                      dict(mode=mode, preserve_result=preserve_result, has_aux=has_aux, trees=trees,
                           callables=callables), Kept(ENTRY, key, ranks, floats) if keep and stage is None else None)


def build_pullback(fn, wrt, level=DEFAULT_LEVEL, trees=(), has_aux=False, ranks=None, floats=None):
    """Transform ``fn`` into a reusable pullback: ``pullback_f(*args) -> (value, saved)`` (the module's entry)
    and ``backward_f(saved, dresult)`` (``generated.namespace[generated.backward]``), see ``pullback``.

    ``ranks`` and ``floats``: as for ``build``, those of the one call the
    pullback serves.  With ``has_aux``, ``fn`` returns ``(output, aux)``:
    ``pullback_f`` returns that pair as the value, and the seed is the
    output's alone.
    """
    if level not in LEVELS:
        raise ValueError(f"astgrad: optimize={level!r}; the levels are {', '.join(map(str, LEVELS))}")
    return _transform(fn, wrt, PULLBACK, None, lambda user: ModuleBuilder(user, level, ranks, None, floats),
                      dict(mode="pullback", trees=trees, has_aux=has_aux))


def build_forward(fn, wrt, level=DEFAULT_LEVEL, stage=None, trees=(), callables=()):
    """Transform ``fn`` into ``jvp_f(*args, *tangents) -> (value, tangent)``: one tangent per name in ``wrt``.

    ``trees`` names the parameters that hold dicts, lists or tuples (their
    tangents have the same structure).  ``callables``: as for ``build``.
    ``fn`` may be generated code (an adjoint): its source is found as a
    user function's is (the generated text is registered in linecache).
    """
    if level not in LEVELS:
        raise ValueError(f"astgrad: optimize={level!r}; the levels are {', '.join(map(str, LEVELS))}")
    return _transform(fn, wrt, FORWARD, stage, lambda user: ModuleBuilder(user, level),
                      dict(mode="jvp", trees=trees, callables=callables))


def build_linearized(fn, wrt, level=DEFAULT_LEVEL, trees=()):
    """Transform ``fn`` into ``linearize_f(*args) -> (value, record)`` (the module's entry), which runs its primal
    half once, and ``tangent_f(take, *tangents)`` (``generated.namespace[generated.backward]``), which reads the
    record through ``take`` (core/linearize.py).  Raises ``NotCut`` where the cut does not model the code."""
    if level not in LEVELS:
        raise ValueError(f"astgrad: optimize={level!r}; the levels are {', '.join(map(str, LEVELS))}")
    return _transform(fn, wrt, LINEARIZE, None, lambda user: ModuleBuilder(user, level), dict(mode="linearize", trees=trees))


def build_batched(fn, batched, ranks, level=DEFAULT_LEVEL, stage=None, items=()):
    """Transform ``fn`` into ``vmap_f(*args)`` for the parameters ``batched`` holding a batch axis first
    (``items``: those of them holding a tuple or list of such arrays).

    ``ranks`` maps parameters to ``(rank of one example, holds a Python int)``:
    the rules take the one form those ranks need.  The result's
    ``returns_items`` says that it returns a tuple or list of batched values.
    """
    if level not in LEVELS:
        raise ValueError(f"astgrad: optimize={level!r}; the levels are {', '.join(map(str, LEVELS))}")
    generated = _transform(fn, batched, BATCH, stage, lambda user: ModuleBuilder(user, level, ranks),
                           dict(mode="vmap", batched_items=items))
    return generated


def _transform(fn, wrt, passes, stage, new_module, options, keep=None):
    """Run ``passes`` over ``fn`` as an entry, again while it meets user names its generated names must avoid;
    ``keep``: the Kept to fill (build's ``keep``)."""
    user = user_names_of(fn)
    while True:
        module = new_module(user)
        if keep is not None:
            module.kept, keep.points = keep, {}
        ctx = Context(module, fn, wrt, entry=True, **options)
        try:
            run(passes, ctx, watch=stage)
        except _NamesMet:
            user = user.union(module.met)
            continue
        except TransformError as exc:
            raise in_wrapper(fn, exc) from None
        generated = module.generated
        generated.shown = module.shown
        generated.returns_items = ctx.returns_items
        if keep is not None and (generated.rank_dependent or generated.float_dependent):
            generated.kept = keep
        return generated


def show_forward(fn, wrt, level, stage) -> str:
    """The forward-mode module of ``fn`` after the pass ``stage`` (``show(f, mode="jvp")``)."""
    if stage not in FORWARD_STAGES:
        raise ValueError(f"astgrad.show: unknown stage {stage!r} of forward mode; the stages are "
                         f"{', '.join(FORWARD_STAGES)}")
    needs = next(p.level for p in FORWARD if p.name == stage)
    if needs > level:
        raise ValueError(f"astgrad.show: the pass {stage!r} runs at optimize={needs} and above; pass optimize={needs}")
    generated = build_forward(fn, wrt, level, None if stage == "emit" else stage)
    return generated.source if stage == "emit" else generated.shown


def describe_ranks(ranks, floats=()) -> str:
    """``", for a 2-d float W, a 1-d b, x holding floats and an int n"``: what ``build(ranks=..., floats=...)``
    specialised for."""
    ranks = dict(ranks or {})
    ranks.update({name: None for name in sorted(floats) if name not in ranks})
    if not ranks:
        return ""
    parts = [f"{name} holding floats" if kind is None else  # its rank not asked: an array or a scalar
             f"{'an int' if kind[1] else 'a float scalar' if name in floats else 'a scalar'} {name}" if kind[0] == 0
             else f"a {kind[0]}-d {'float ' if name in floats else 'integer ' if kind[1] else ''}{name}"
             for name, kind in ranks.items()]
    return ", for " + (parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1])


def check_only(fn) -> None:
    """Raise TransformError if ``fn`` uses something the transformer rejects up front."""
    try:
        check_function(FunctionSource(fn))
    except TransformError as exc:
        raise in_wrapper(fn, exc) from None


# -- small helpers ---------------------------------------------------------------

def _inits(ctx, keep=()):
    """Saved variables start as None so the first push has something to save."""
    early = set().union(*first_bindings(ctx.body, ctx.params).values())
    unbound = sorted((ctx.analysis.saved | set(keep)) - set(ctx.params) - early)
    return [compat.assign(v, compat.const(None)) for v in unbound]


def _returns_sequence(op) -> bool:
    try:
        return op.fn is sequences.append or returns_sequence(op)
    except TypeError:
        return False


def _ident(fn) -> str:
    """``fn``'s name as it can appear in an identifier (``<lambda>`` -> ``lambda``)."""
    return "".join(c for c in str(fn.__name__) if c.isascii() and (c.isalnum() or c == "_")) or "fn"
