"""The batching sweep (``astgrad.vmap``): every operation written for a stack of examples.

The generated function takes the batched arguments with their batch axis
first (``vmap``'s wrapper moves ``in_axes`` there) and returns its value
with the batch axis first.  Which values carry the batch axis is known
statically, per point of the code, as forward mode knows which carry a
tangent: a name is *batched* (an array, every example stacked along axis 0),
*items* (a list or tuple whose every item is batched), a *tuple of kinds* (a
tuple holding a list or tuple of batched arrays: each item's kind, as a
callee's jvp returns its value and its tangents) or unbatched (shared by
every example).  An operation of unbatched values is written as it is; an
operation of a batched one by its batching rule (rules/batching.py), inlined
with the batch dimensions and the ranks of one example folded in.

What cannot be batched is refused at the user's line: a call without a
batching rule, a ``while`` whose test or a ``for`` whose sequence differs
from example to example, an ``if`` whose test does where a branch does more
than compute (an ``if`` whose branches only compute runs both and chooses
per example), a batched value read by a statement kept as it is.  Where paths join and a name is batched on one only, the other
gives it the batch axis (``broadcast_batch``); a loop's state is iterated
to a fixed point.

A called user function given batched values gets a ``vmap_`` variant for
those parameters (``ModuleBuilder.batched_variant``), taking the number of
examples first and returning its value batched.  Generated code (a
gradient, a jvp of one: ``vmap(grad(f))``, ``hessian``) pushes values on a
stack in its primal sweep and pops them in its adjoint, some batched and
some shared (a trip count, a branch taken).  A push of a batched value is
marked (``push_batched``); a pop is batched where a push of the same name
was (``pop_batched`` gives an unmarked, shared value the batch axis), and
is otherwise checked to be unmarked (``pop_shared``): a pop read as the
wrong kind raises, never gives a number.  What each push gave is known
once the function is swept, so it is swept again until that stops
changing.

Long: one sweep over every statement kind (operations, calls, stacks,
control flow), with the rank inference its rules fold: the pieces read and
write one state and one set of stacks, as the forward sweep's do.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types

import numpy as np

from ... import rules
from ...rules import _support, batching, qualified_name
from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.errors import NoRuleTransformError, Refusal, UnsupportedSyntaxError
from ..ir.nodes import For, If, Op, Raw, While, atom_names, blocks, dispatch, op_reads, walk_ops, walk_statements
from ..ir.trees import arguments, function_def
from ..runtime import batched_items, batched_stack
from ..runtime.origins import ORIGIN, with_origin
from ..front.locate import bound_arguments
from ..runtime.tangents import generated_stack, stack_pop, tangent_of, zero_tangent
from ...rules import sequences
from ...rules.sequences import grow
from .flow import StateSweep

ARRAY, ITEMS = "array", "items"
SHARED = "shared"  # what a callee's variant returns where every example shares its value (no batch axis)
AMBIGUOUS = "ambiguous"  # pushes of other kinds under the names of a tuple's items: its pop cannot tell


def _nested(kind) -> bool:
    """Whether ``kind`` is a tuple of kinds: a tuple whose items are each unbatched, batched or items."""
    return type(kind) is tuple

def _kind_code(kind):
    """How the stack's helpers (runtime/batched_stack.py) read a kind: True for items, a tuple of kinds item by item
    (None for a shared item, False for a batched array), as a literal of the generated code."""
    if kind == ITEMS:
        return compat.const(True)
    if _nested(kind):
        return compat.tuple_([compat.const(None) if not k else compat.const(False) if k == ARRAY else _kind_code(k)
                              for k in kind])
    return compat.const(False)


_REDUCTIONS = {np.sum, np.mean, np.max, np.min, np.prod, np.std, np.var}
_COMPARISONS = {gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq}


class _Ranks:
    """The rank of the value a name holds in the batched code: one example's, plus one where it is batched."""

    def __init__(self, ranks, state):
        self.ranks, self.state = ranks, state  # ranks: the Batcher (one example's ranks)

    def rank(self, name):
        rank = self.ranks.rank(name)
        if rank is None or self.state.get(name) == ITEMS or _nested(self.state.get(name)):
            return None
        return rank + (self.state.get(name) == ARRAY)


class Batcher(StateSweep):
    """The batching sweep of one function; ``state``: name -> ARRAY, ITEMS or False (bound, unbatched)."""

    def __init__(self, module, ctx, size):
        super().__init__()
        self.module = module
        self.ctx = ctx
        self.source = ctx.source
        self.names = ctx.names
        self.ns = module.ns
        self.ranks = ctx.analysis.ranks
        self.size = size  # the name holding the batch size
        self.size_used = False
        self.impure = 0  # calls of user functions not known to only compute (a masked if's branches may not have one)
        counts: dict = {}
        for op in walk_ops(ctx.body):
            for t in op.targets:
                counts[t] = counts.get(t, 0) + 1
        self.once = {t for t, c in counts.items() if c == 1} - set(ctx.params)
        self.inferred: dict = {}  # names bound once -> one example's rank, found as the sweep passes them
        self.shape_of: dict = {}  # names bound once to shape(v) -> v
        # the stacks of generated code (pushes with grow, pops with stack_pop), which hold batched and shared
        # values: (list, name pushed) -> ARRAY, ITEMS or False, joined over its pushes; what a sweep found is
        # what the next one reads (batched_function sweeps until it stops changing)
        self.pushed: dict = {}
        self.pushed_before: dict = {}
        self.read: set | None = None  # the names the last sweep's code reads (None: not swept yet)
        self.stacks = stacks_of(ctx.body, ctx.ret, generated_stack(ctx.fn) is not None)
        self.fresh = fresh_lists(ctx.body, self.ns.globals) - self.stacks
        # a tuple pushed (t6 = a, b; push t6) and popped (t2 = pop; a, b = t2) goes by the names of its items
        self.packed: dict = {}
        unpacked: dict = {}
        for op in walk_ops(ctx.body):
            if op.kind == "pack" and isinstance(op.expr, gast.Tuple) and all(isinstance(e, gast.Name)
                                                                              for e in op.expr.elts):
                self.packed[op.targets[0]] = tuple(e.id for e in op.expr.elts)
            elif op.kind == "unpack" and len(op.args) == 1 and isinstance(op.args[0], gast.Name):
                unpacked.setdefault(op.args[0].id, []).append(tuple(op.targets))
        self.unpacked = {n: found[0] for n, found in unpacked.items() if len(found) == 1}

    def rank(self, name):
        """One example's rank of ``name``: the analysis's (front/ranks.py), or what the sweep found."""
        rank = self.ranks.rank(name)
        return rank if rank is not None else self.inferred.get(name)

    def atom_rank(self, atom):
        if isinstance(atom, gast.Constant) and type(atom.value) in (int, float, complex, bool):
            return 0
        return self.rank(atom.id) if isinstance(atom, gast.Name) else None

    def infer(self, op, operands=None):
        """Note the rank of one example of ``op``'s result where it follows from its operands': elementwise
        operations (``operands``), reductions over every axis, ``reshape`` to a literal shape, ``@``, axes
        added or removed one at a time, transposes, ``unbroadcast`` to the shape of a value, and a tangent
        spread over one (``tangent_of``)."""
        target = op.targets[0] if op.targets else None
        if target not in self.once:
            return
        fn, args = op.fn, op.args
        if fn is runtime.shape and len(args) == 1 and isinstance(args[0], gast.Name):
            self.shape_of[target] = args[0].id
        rank = None
        if operands is not None:
            ranks = [self.atom_rank(a) for a in operands]
            rank = None if None in ranks else max(ranks)
        elif not args:
            return
        elif fn in _REDUCTIONS and len(args) == 1 and not op.kwargs or fn in (runtime.size, runtime.ndim):
            rank = 0
        elif fn is np.reshape and len(args) == 2 and not op.kwargs:
            shape = args[1]
            rank = len(shape.elts) if isinstance(shape, gast.Tuple) else 1 if isinstance(shape, (
                gast.Constant, gast.UnaryOp)) else None
        elif fn is np.matmul and len(args) == 2:
            a, b = (self.atom_rank(x) for x in args)
            rank = None if a is None or b is None or not a or not b else max(a, b) - (a == 1) - (b == 1)
        elif fn in (runtime.T, np.transpose) and len(args) == 1:
            rank = self.atom_rank(args[0])
        elif fn in (np.expand_dims, np.squeeze) and len(args) == 2 and isinstance(args[1], (gast.Constant, gast.UnaryOp)):
            first = self.atom_rank(args[0])
            rank = None if first is None else first + (1 if fn is np.expand_dims else -1)
        elif fn is tangent_of and len(args) == 2:  # spread over the shape of its second argument
            rank = self.atom_rank(args[1])
        elif fn in (runtime.unbroadcast, _support.unbroadcast) and len(args) == 2 \
                and getattr(args[1], "id", None) in self.shape_of:
            rank = self.rank(self.shape_of[args[1].id])
        if rank is not None:
            self.inferred[target] = rank

    def sweep(self, stmts, state) -> list:
        out = []
        for s in stmts:
            line = getattr(s, "line", 0)
            if line and line != self.last_line:
                out.append(self.module.comment(f"line {line}: {s.text}", (self.source.filename, line, s.text, False)))
                self.last_line = line
            out += dispatch(self, "batch", s, state)
        return out

    # -- errors ----------------------------------------------------------------------

    def refuse(self, where, message, hint="", kind=UnsupportedSyntaxError):
        if isinstance(where, int):  # a statement's line: the caret under its first character
            text = self.source.lines[where - 1] if 0 < where <= len(self.source.lines) else ""
            where = types.SimpleNamespace(lineno=where, col_offset=len(text) - len(text.lstrip()))
        return self.source.error(where, f"astgrad.vmap: {message}", hint, kind)

    def check_by_rule(self, stmt, state):
        """A statement kept as written that only calls a check with a batched value, written as the check's
        batching rule (``an_array_batched((0, None), y, ...)``); None for any other statement."""
        found = _check_call(stmt, self.ns.globals)
        if found is None:
            return None
        rule, call = found
        kinds = [state.get(getattr(a, "id", None)) for a in call.args]
        if any(k not in (None, False, ARRAY) for k in kinds) or any(state.get(getattr(k.value, "id", None))
                                                                      for k in call.keywords):
            return None
        bdims = compat.tuple_([compat.const(0 if k == ARRAY else None) for k in kinds])
        name = self.ns.bind(rule, getattr(rule, "__name__", "checked"))
        return compat.expr_stmt(compat.call(compat.name(name), [bdims] + [compat.clone(a) for a in call.args],
                                            {k.arg: compat.clone(k.value) for k in call.keywords}))

    def batched_reads(self, names, state):
        return sorted({n for n in names if state.get(n)})

    # -- operations -----------------------------------------------------------------

    def batch_op(self, op, state):
        if op.fn is grow and op.kind == "prim" and len(op.args) == 2 and isinstance(op.args[0], gast.Name):
            return self.push(op, state)
        if op.fn is stack_pop and op.kind == "prim" and len(op.args) == 1 and isinstance(op.args[0], gast.Name):
            return self.pop(op, state)
        if _draws(op.fn):
            raise self.refuse(op.node, f"{qualified_name(op.fn)} draws random numbers: batched, one draw would "
                              "serve every example, where a loop over the examples draws anew for each",
                              "Draw the numbers for every example outside the function and pass them in batched.")
        reads = set(atom_names(op.expr)) | {n for a in list(op.args) + list(op.kwargs.values()) for n in atom_names(a)}
        batched = self.batched_reads(reads, state)
        kind = op.kind
        if kind == "call" and reads & self.stacks:  # a callee pushing on or popping the stack: batched values there
            return self.call(op, state)
        if not batched:
            self.impure += kind == "call"
            if kind == "nondiff" and op.fn is None and isinstance(op.expr, gast.Compare) and len(op.expr.ops) == 1:
                self.infer(op, [op.expr.left, op.expr.comparators[0]])
            elif kind in ("prim", "nondiff") and op.fn is not None:
                self.infer(op, op.args if batching.rule_of(op.fn) is batching.elementwise else None)
            state.update((t, False) for t in op.targets)
            return [self.tag(compat.assign(op.targets if len(op.targets) > 1 or kind == "unpack" else op.targets[0],
                                           compat.clone(op.expr)), op)]
        if kind in ("copy", "stop") or kind == "nondiff" and isinstance(op.expr, gast.Name):
            state[op.targets[0]] = state[op.args[0].id if op.args else op.expr.id]
            return [self.tag(compat.assign(op.targets[0], compat.clone(op.expr)), op)]
        if op.fn is isinstance and len(op.args) == 2 and not op.kwargs and isinstance(op.args[0], gast.Name) \
                and not self.batched_reads(atom_names(op.args[1]), state):
            state[op.targets[0]] = False  # one answer every example shares, else it raises
            kind = state.get(op.args[0].id)
            call = compat.call(compat.name(self.ns.helper(batched_items.isinstance_examples)),
                               [compat.clone(a) for a in op.args] + [compat.const(kind != ARRAY)])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        nested = [n for n in batched if _nested(state.get(n))]
        if nested:
            return self.tuple_of_kinds(op, nested[0], state)
        if kind == "pack":
            return self.pack(op, state)
        if kind == "unpack":
            state.update((t, ARRAY) for t in op.targets)
            if state.get(op.args[0].id) == ARRAY:  # a, b = x: each example's items, x[:, 0] and x[:, 1]
                call = compat.call(compat.name(self.ns.helper(batching.unpacked_examples)), [compat.clone(op.args[0])])
                return [self.tag(compat.assign(op.targets, call), op)]
            return [self.tag(compat.assign(op.targets, compat.clone(op.expr)), op)]
        if kind == "call":
            return self.call(op, state)
        if kind == "nondiff" and op.fn is None and isinstance(op.expr, gast.Compare) and len(op.expr.ops) == 1 \
                and type(op.expr.ops[0]) in _COMPARISONS:
            return self.elementwise(op, [op.expr.left, op.expr.comparators[0]], state)
        if kind in ("nondiff", "opaque") and op.fn is None and isinstance(op.expr, gast.UnaryOp) \
                and isinstance(op.expr.op, gast.Not) and state.get(getattr(op.expr.operand, "id", None)) == ARRAY:
            state[op.targets[0]] = ARRAY  # not x: one truth value per example, else numpy's error
            call = compat.call(compat.name(self.ns.helper(batched_items.not_examples)), [compat.clone(op.expr.operand)])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if kind in ("nondiff", "opaque") and op.fn is None and _elementwise_operator(op.expr):
            operands = [op.expr.operand] if isinstance(op.expr, gast.UnaryOp) else [op.expr.left, op.expr.right]
            return self.elementwise(op, operands, state)
        if kind == "nondiff" and op.fn is None and _is_none_test(op.expr) \
                and state.get(getattr(op.expr.left, "id", None)) == ARRAY:
            state[op.targets[0]] = False  # every example's answer: None where a shared None got the batch axis
            test = compat.call(compat.name(self.ns.helper(batched_items.none_examples)), [compat.clone(op.expr.left)])
            if isinstance(op.expr.ops[0], gast.IsNot):
                test = compat.make("UnaryOp", op=gast.Not(), operand=test)
            return [self.tag(compat.assign(op.targets[0], test), op)]
        meta = self.meta(op, state)
        if meta is not None:
            state[op.targets[0]] = False  # one example's shape: every example's
            return [self.tag(compat.assign(op.targets[0], meta), op)]
        if kind not in ("prim", "nondiff") or op.fn is None:
            raise self.refuse(op.node, f"{compat.unparse(op.expr).strip()} reads {batched[0]}, which has a batch "
                              "axis, and has no batching rule", "Write it with numpy functions vmap batches "
                              "(docs/transformations.md lists them).", NoRuleTransformError)
        if any(state.get(n) for v in op.kwargs.values() for n in atom_names(v)):
            raise self.refuse(op.node, f"a keyword argument of {qualified_name(op.fn)} has a batch axis",
                              "Pass it by position.")
        lists = [a.id for a in op.args if state.get(getattr(a, "id", None)) == ITEMS]
        if lists and op.fn is rules.getitem and len(op.args) == 2 and op.args[0].id in lists \
                and isinstance(op.args[1], gast.Constant) and type(op.args[1].value) is int:
            state[op.targets[0]] = ARRAY  # an item of a list or tuple of batched arrays
            return [self.tag(compat.assign(op.targets[0], compat.clone(op.expr)), op)]
        if lists and op.fn is rules.getitem and len(op.args) == 2 and op.args[0].id in lists \
                and isinstance(op.args[1], gast.Name) and not state.get(op.args[1].id):
            state[op.targets[0]] = ARRAY  # items[i], i a number when it runs (a loop over zip(...)): checked then
            call = compat.call(compat.name(self.ns.helper(batched_items.item_of)), [compat.clone(a) for a in op.args])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if lists and op.fn is runtime.unpacked_gradient and len(op.args) == 2 and op.args[0].id in lists \
                and not op.kwargs and isinstance(op.args[1], gast.Name) and not _nested(state.get(op.args[1].id)):
            value = op.args[1].id  # an array (batched, or of a known rank) gets an array, else a tuple
            array = state.get(value) == ARRAY or not state.get(value) and self.rank(value) is not None
            state[op.targets[0]] = ARRAY if array else ITEMS
            call = compat.call(compat.name(self.ns.helper(batched_items.unpacked_gradient_of_items)),
                               [compat.clone(a) for a in op.args] + [compat.const(state.get(value) == ARRAY),
                                                                     compat.const(array)])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if op.fn in (runtime.getitem_gradient, runtime.sequence_gradient) and len(op.args) == 3 and not op.kwargs \
                and state.get(getattr(op.args[1], "id", None)) in (False, None, ITEMS) \
                and not (op.fn is runtime.getitem_gradient and self.atom_rank(op.args[1]) is not None) \
                and state.get(getattr(op.args[0], "id", None)) in (False, None, ARRAY, ITEMS) \
                and not self.batched_reads(atom_names(op.args[2]), state):
            # the gradient of a list or tuple of batched arrays from that of one item (or, from a list of them, of
            # a slice): a list of batched gradients, None where nothing flowed
            g, kind = op.args[0], state.get(getattr(op.args[0], "id", None))
            state[op.targets[0]] = ITEMS
            call = compat.call(compat.name(self.ns.helper(batched_items.gradient_of_items)),
                               [compat.clone(g) if kind else self.broadcast(g), compat.clone(op.args[1]),
                                compat.clone(op.args[2]), compat.const(kind == ITEMS)])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if (lists or op.fn is runtime.add_item) and op.fn in (runtime.accumulate, runtime.add_item) \
                and len(op.args) == (2 if op.fn is runtime.accumulate else 4) and not op.kwargs \
                and not any(_nested(state.get(getattr(a, "id", None))) for a in op.args) \
                and not self.batched_reads(atom_names(op.args[3]) if len(op.args) == 4 else (), state):
            # a list's gradient added to: item by item, None where nothing flowed (add_item: one item's gradient)
            total, grad = op.args[:2]
            kinds = [state.get(getattr(a, "id", None)) for a in op.args[:2]]
            if op.fn is runtime.add_item:
                if state.get(getattr(op.args[2], "id", None)) not in (False, None, ITEMS) or kinds[1] == ITEMS:
                    raise self.refuse(op.node, "an item's gradient added to that of a list of arrays with a batch axis "
                                      "other than one item at a time", "Loop over the examples.")
                grad = compat.call(compat.name(self.ns.helper(batched_items.gradient_of_items)),
                                   [compat.clone(grad) if kinds[1] else self.broadcast(grad), compat.clone(op.args[2]),
                                    compat.clone(op.args[3]), compat.const(False)])
                kinds[1] = ITEMS
            state[op.targets[0]] = ITEMS
            call = compat.call(compat.name(self.ns.helper(batched_items.accumulate_items)),
                               [compat.clone(total), grad if op.fn is runtime.add_item else compat.clone(grad)]
                               + [compat.const(None if not k else k == ITEMS) for k in kinds])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if lists and op.fn is rules.add_tangents and len(op.args) == 2 and not op.kwargs \
                and not any(_nested(state.get(getattr(a, "id", None))) for a in op.args):
            state[op.targets[0]] = ITEMS  # tangents of a list added item by item
            kinds = [state.get(getattr(a, "id", None)) for a in op.args]
            call = compat.call(compat.name(self.ns.helper(batched_items.add_tangents_items)),
                               [compat.clone(a) for a in op.args] + [compat.const(None if not k else k == ITEMS)
                                                                     for k in kinds])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if lists and op.fn is sequences.split_last and len(op.args) == 1 and not op.kwargs and len(op.targets) in (1, 2):
            self.size_used = True  # the gradient of items + [item]: the list's, and the item's
            call = compat.call(compat.name(self.ns.helper(batched_items.split_last_items)),
                               [compat.clone(op.args[0]), compat.name(self.size)])
            if len(op.targets) == 2:
                state.update(zip(op.targets, (ITEMS, ARRAY)))
            else:
                state[op.targets[0]] = (ITEMS, ARRAY)
            return [self.tag(compat.assign(op.targets if len(op.targets) == 2 else op.targets[0], call), op)]
        if lists and op.fn is runtime.is_zero and len(op.args) == 1 and not op.kwargs:
            state[op.targets[0]] = False  # every example's answer: a tuple of None is no gradient
            call = compat.call(compat.name(self.ns.helper(batched_items.zero_items)), [compat.clone(op.args[0])])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if op.fn is sequences.part and len(op.args) == 2 and not op.kwargs \
                and state.get(getattr(op.args[0], "id", None)) == ARRAY and not state.get(getattr(op.args[1], "id", None)) \
                and (isinstance(op.args[1], gast.Constant) and type(op.args[1].value) is int or isinstance(op.args[1], gast.Name)):
            state[op.targets[0]] = ARRAY  # a row of a list's gradient numpy read as one array
            call = compat.call(compat.name(self.ns.helper(batched_items.part_of_array)), [compat.clone(a) for a in op.args])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if lists and op.fn is sequences.part and len(op.args) == 2 and op.args[0].id in lists \
                and not state.get(getattr(op.args[1], "id", None)):
            state[op.targets[0]] = ARRAY  # a sequence gradient's item: a number when it runs (checked then)
            call = compat.call(compat.name(self.ns.helper(batched_items.part_of_items)), [compat.clone(a) for a in op.args])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if lists and op.fn is runtime.gradient_tuple and op.args[0].id in lists:
            state[op.targets[0]] = ITEMS  # a rule's tuple of batched gradients, checked and cut item by item
            call = compat.call(compat.name(self.ns.helper(batched_items.gradients_of_tuple)),
                               [compat.clone(a) for a in op.args], {k: compat.clone(v) for k, v in op.kwargs.items()})
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if op.fn is runtime.gradient_tuple and op.args and state.get(getattr(op.args[0], "id", None)) \
                and not self.batched_reads([n for a in op.args[1:] for n in atom_names(a)], state):
            state[op.targets[0]] = ITEMS  # a rule's gradients, one per argument: each batched
            call = compat.call(compat.name(self.ns.helper(batching.gradients_of_items)),
                               [compat.clone(a) for a in op.args], {k: compat.clone(v) for k, v in op.kwargs.items()})
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if lists and op.fn is tangent_of and len(op.args) == 2 and op.args[0].id in lists \
                and state.get(getattr(op.args[1], "id", None)) != ARRAY:  # a rule's tangent of a tuple it returns
            state[op.targets[0]] = ITEMS
            like = compat.const(state.get(getattr(op.args[1], "id", None)) == ITEMS)
            call = compat.call(compat.name(self.ns.helper(batching.tangents_of_items)),
                               [compat.clone(op.args[0]), compat.clone(op.args[1]), like])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if op.fn is sequences.append and len(op.args) == 2 and not op.kwargs \
                and isinstance(op.args[0], gast.Name) and state.get(op.args[0].id) in (False, None, ITEMS) \
                and state.get(getattr(op.args[1], "id", None)) in (False, None, ARRAY):
            # items + [item], a new list (a comprehension's): every item gets the batch axis
            items, item = op.args
            parts = [compat.clone(items) if state.get(items.id) == ITEMS else self.broadcast(items),
                     compat.clone(item) if state.get(getattr(item, "id", None)) == ARRAY else self.broadcast(item)]
            state[op.targets[0]] = ITEMS
            return [self.tag(compat.assign(op.targets[0], compat.call(compat.clone(op.expr.func), parts)), op)]
        if lists and op.fn not in batching.JOINS:
            raise self.refuse(op.node, f"{qualified_name(op.fn)} is given {lists[0]}, a list or tuple of arrays "
                              "with a batch axis, which numpy would read with the batch axis second",
                              "Join them first with np.stack or np.concatenate, or index them with a number.")
        rule = batching.rule_of(op.fn)
        if rule is None:
            name = qualified_name(op.fn)
            raise self.refuse(op.node, f"no batching rule for {name}, called here on {batched[0]}, which has a "
                              "batch axis", f"Register one with astgrad.defbatch({name}, rule).", NoRuleTransformError)
        if rule is batching.elementwise:
            return self.elementwise(op, op.args, state)
        if op.fn is rules.getitem and len(op.args) == 2 and not state.get(getattr(op.args[1], "id", None)) \
                and _basic(op.args[1]):  # x[:, 1:3]: every example's items, then the literal index
            index = op.args[1].slice if isinstance(op.args[1], gast.Subscript) else op.args[1]
            parts = index.elts if isinstance(index, gast.Tuple) else [index]
            every = compat.make("Slice", lower=None, upper=None, step=None)
            expr = compat.make("Subscript", value=compat.clone(op.args[0]),
                               slice=compat.tuple_([every] + [compat.clone(p) for p in parts]), ctx=gast.Load())
            rank = self.atom_rank(op.args[0])
            if rank is not None and op.targets[0] in self.once:
                dropped = sum(isinstance(p, (gast.Constant, gast.UnaryOp)) and getattr(p, "value", 0) is not None
                              and getattr(p, "value", 0) is not Ellipsis for p in parts)
                added = sum(isinstance(p, gast.Constant) and p.value is None for p in parts)
                if not any(isinstance(p, gast.Constant) and p.value is Ellipsis for p in parts):
                    self.inferred[op.targets[0]] = rank - dropped + added
            state[op.targets[0]] = ARRAY
            return [self.tag(compat.assign(op.targets[0], expr), op)]
        return self.by_rule(op, rule, state)

    def call(self, op, state):
        """``y = g(x, w)`` with a batched ``x``: ``y = vmap_g(x, w)``, ``g``'s variant for its parameters given
        batched values, itself batched (``ModuleBuilder.batched_variant``)."""
        if _refused_when_called(op.fn):  # a callee refused at transform time: called, it raises that refusal
            state.update((t, ARRAY) for t in op.targets)  # (its value never exists)
            return [self.tag(compat.assign(op.targets if len(op.targets) > 1 else op.targets[0],
                                           compat.clone(op.expr)), op)]
        if _only_checks(op.fn) and isinstance(op.expr, gast.Call) and not any(
                state.get(n) for v in op.kwargs.values() for n in atom_names(v)):
            return self.checked_per_example(op, state)
        rule = batching.helper_rule(op.fn)
        if rule is not None:  # a reverse rule's helper taking *args, with a batching rule of its own
            return self.by_helper_rule(op, rule, state)
        bound = bound_arguments(op, self.source)
        for p, atoms in bound.items():  # *args or **kwargs: a tuple or dict of atoms
            gathered = atoms.values() if isinstance(atoms, dict) else atoms if isinstance(atoms, tuple) else ()
            if any(state.get(getattr(a, "id", None)) for a in gathered):
                raise self.refuse(op.node, f"{op.fn.__name__} is given a value with a batch axis through its parameter "
                                  f"{p} (*args or **kwargs)", "Give the function named parameters.")
        batched = [p for p, a in bound.items() if state.get(getattr(a, "id", None))]
        for p in batched:
            if _nested(state.get(bound[p].id)):
                raise self.refuse(op.node, f"{op.fn.__name__} is given {bound[p].id}, a tuple holding a list or tuple "
                                  "of arrays with a batch axis", "Give it the items one by one.")
        items = [p for p in batched if state.get(bound[p].id) == ITEMS]
        stacks = [p for p, a in bound.items() if getattr(a, "id", None) in self.stacks]
        name, returns_items, its_stacks = self.module.batched_variant(op.fn, batched, items)
        self.impure += bool(stacks) or not self.module.batch_pure.get(name, False)
        for p in stacks:
            if p not in its_stacks:
                raise self.refuse(op.node, f"{op.fn.__name__} is given {bound[p].id}, a list the batched code pushes "
                                  "values with a batch axis on, and reads it other than by its pops",
                                  "Loop over the examples.")
        self.size_used = True
        expr = compat.clone(op.expr)
        expr.func = compat.name(name)
        expr.args.insert(0, compat.name(self.size))  # the variant's first parameter: the number of examples
        if returns_items == SHARED:  # every example's value is the same: as it is
            state.update((t, False) for t in op.targets)
            return [self.tag(compat.assign(op.targets if len(op.targets) > 1 else op.targets[0], expr), op)]
        if len(op.targets) > 1 and _nested(returns_items):  # a, b = g(x) of a tuple of kinds
            if len(returns_items) != len(op.targets):
                raise self.refuse(op.node, f"unpacking what {op.fn.__name__} returns into {len(op.targets)} names: "
                                  f"it returns a tuple of {len(returns_items)}")
            state.update(zip(op.targets, returns_items))
            return [self.tag(compat.assign(op.targets, expr), op)]
        if len(op.targets) > 1:  # a, b = g(x): the items of the tuple or list it returns
            if not returns_items:
                raise self.refuse(op.node, f"unpacking what {op.fn.__name__} returns, an array with a batch axis, "
                                  "takes its examples apart", "Return a tuple from the function.")
            state.update((t, ARRAY) for t in op.targets)
            return [self.tag(compat.assign(op.targets, expr), op)]
        state[op.targets[0]] = returns_items if _nested(returns_items) else ITEMS if returns_items else ARRAY
        return [self.tag(compat.assign(op.targets[0], expr), op)]

    def checked_per_example(self, op, state):
        """``check(x, ...)``, a function whose every statement raises on a test (it returns nothing), given batched
        values: called on each example's, as a loop over the examples calls it (the first example that fails
        raises)."""
        kinds = [state.get(getattr(a, "id", None)) for a in op.args]
        if any(_nested(k) for k in kinds):
            raise self.refuse(op.node, f"{op.fn.__name__} is given a tuple holding a list or tuple of arrays with a "
                              "batch axis", "Give it the items one by one.")
        self.size_used = True
        flags = compat.tuple_([compat.const(None if not k else k == ITEMS) for k in kinds])
        call = compat.call(compat.name(self.ns.helper(batched_items.each_example)),
                           [compat.clone(op.expr.func), compat.name(self.size), flags]
                           + [compat.clone(a) for a in op.args], {k: compat.clone(v) for k, v in op.kwargs.items()})
        state.update((t, False) for t in op.targets)
        return [self.tag(compat.assign(op.targets if len(op.targets) > 1 else op.targets[0], call), op)]

    # -- the stacks of generated code ---------------------------------------------------

    def push(self, op, state):
        """``t = grow(items, v)``: on a list read only by its pushes and pops (generated code's stack), a batched
        ``v`` pushed marked (``push_batched``), so that its pop can tell; on a list of batched arrays, ``v`` with
        the batch axis; a batched ``v`` on another list is refused."""
        items, item = op.args
        target = op.targets[0]
        kind = state.get(getattr(item, "id", None), False)
        grown = compat.name(self.ns.bind(grow, "grow"))
        if state.get(items.id) == ITEMS:  # a list of batched arrays: every item gets the batch axis
            if kind == ITEMS:
                raise self.refuse(op.node, f"{item.id}, a list or tuple, pushed on a list of arrays with a batch axis")
            state[target] = ITEMS
            value = compat.clone(item) if kind == ARRAY else self.broadcast(item)
            return [self.tag(compat.assign(target, compat.call(grown, [compat.clone(items), value])), op)]
        if kind == ARRAY and items.id in self.fresh and not state.get(items.id):
            state[target] = ITEMS  # a list only its own names hold: a new one, every item with the batch axis
            grown_list = compat.call(grown, [self.broadcast(items), compat.clone(item)])
            return [self.tag(compat.assign(target, grown_list), op)]
        state[target] = False
        if not kind:
            return [self.tag(compat.assign(target, compat.clone(op.expr)), op)]
        if items.id not in self.stacks:
            raise self.refuse(op.node, f"{item.id}, which has a batch axis, is pushed on {items.id}, a list of values "
                              "every example shares, which the code reads as a list",
                              "Build the list from values with a batch axis only.")
        key = (items.id, item.id)
        if self.pushed.get(key, self.module.batch_pushed.get(key, kind)) != kind:
            raise self.refuse(op.node, f"{item.id} is pushed as an array with a batch axis and as a list or tuple of "
                              "them")
        self.pushed[key] = kind
        self.module.batch_pushed[key] = kind
        if item.id in self.packed and item.id in self.once:  # a tuple: by the names of its items too, where
            by_items = (items.id, self.packed[item.id])     # no push of another kind has those
            for pushed in (self.pushed, self.module.batch_pushed):
                pushed[by_items] = kind if pushed.get(by_items, kind) == kind else AMBIGUOUS
        flag = [] if kind == ARRAY else [_kind_code(kind)]
        return [self.tag(compat.assign(target, compat.call(compat.name(self.ns.helper(batched_stack.push_batched)),
                                                           [compat.clone(items), compat.clone(item)] + flag)), op)]

    def pop(self, op, state):
        """``x = stack_pop(items)``: batched where a push of ``x``'s name was (``pop_batched`` gives a value pushed
        unmarked the batch axis), else checked to be unmarked (``pop_shared``); what nothing reads, as it is."""
        items, target = op.args[0], op.targets[0]
        if state.get(items.id) == ITEMS:
            state[target] = ARRAY
            return [self.tag(compat.assign(target, compat.clone(op.expr)), op)]
        kind = self.pushed_before.get((items.id, target), self.module.batch_pushed.get((items.id, target)))
        if kind is None and target in self.unpacked and target in self.once:  # a tuple popped, then unpacked
            by_items = (items.id, self.unpacked[target])
            kind = self.pushed_before.get(by_items, self.module.batch_pushed.get(by_items))
        kind = False if kind in (None, AMBIGUOUS) else kind  # pop_shared raises if it was pushed batched
        state[target] = kind
        if items.id not in self.stacks or self.read is not None and target not in self.read:
            return [self.tag(compat.assign(target, compat.clone(op.expr)), op)]
        if kind:
            self.size_used = True
            call = compat.call(compat.name(self.ns.helper(batched_stack.pop_batched)),
                               [compat.clone(items), compat.name(self.size)] + ([] if kind == ARRAY else [_kind_code(kind)]))
        else:
            call = compat.call(compat.name(self.ns.helper(batched_stack.pop_shared)), [compat.clone(items)])
        return [self.tag(compat.assign(target, call), op)]

    def meta(self, op, state):
        """``x.shape``, ``x.ndim``, ``x.size``, ``x.dtype`` and ``len(x)`` of a batched ``x``: one example's (a
        list or tuple's length is its own), or None."""
        expr, fn, args = op.expr, op.fn, op.args
        if fn is None and isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and not expr.keywords \
                and self.ns.globals.get(expr.func.id) is len:  # the front end's len() of a loop over zip(...)
            fn, args = len, expr.args
        if isinstance(expr, gast.Attribute) and expr.attr == "dtype" and isinstance(expr.value, gast.Name) \
                and state.get(expr.value.id) == ARRAY:
            return compat.clone(expr)
        if isinstance(expr, gast.Attribute) and expr.attr in ("shape", "ndim", "size") \
                and isinstance(expr.value, gast.Name) and state.get(expr.value.id) == ARRAY:
            fn, x = {"shape": np.shape, "ndim": np.ndim, "size": np.size}[expr.attr], expr.value
        elif fn is len and len(args) == 1 and not op.kwargs and state.get(getattr(args[0], "id", None)) == ITEMS:
            return compat.clone(expr)
        elif fn is len and len(args) == 1 and not op.kwargs and state.get(getattr(args[0], "id", None)) == ARRAY:
            x = args[0]
        else:
            return None
        shape = f"{self.ns.helper(runtime.shape)}({x.id})"
        text = {len: f"{shape}[1]", np.shape: f"{shape}[1:]", np.ndim: f"len({shape}) - 1",
                np.size: f"int({self.ns.bind(np, 'np')}.prod({shape}[1:]))"}[fn]
        return compat.parse(text).body[0].value

    def pack(self, op, state):
        """A tuple or list with a batched item: every item gets the batch axis (``broadcast_batch``); a tuple
        holding a list or tuple of batched arrays keeps each item as it is, and its kind (a tuple of kinds)."""
        expr = compat.clone(op.expr)
        kinds = [state.get(getattr(e, "id", None), False) for e in getattr(expr, "elts", ())]
        returned = not self.ctx.entry and isinstance(self.ctx.ret, gast.Name) and op.targets[0] == self.ctx.ret.id \
            and not all(kinds)  # a callee's tuple of batched and shared values: each item keeps its kind
        if isinstance(expr, gast.Tuple) and (returned or any(k == ITEMS or _nested(k) for k in kinds)) \
                and all(isinstance(e, (gast.Name, gast.Constant)) for e in expr.elts):
            state[op.targets[0]] = tuple(kinds)
            return [self.tag(compat.assign(op.targets[0], expr), op)]
        if not isinstance(expr, (gast.Tuple, gast.List)) or any(state.get(getattr(a, "id", None)) == ITEMS
                                                                for a in op.args):
            raise self.refuse(op.node, "a dict, or a container of containers, holding a value with a batch axis",
                              "Keep arrays with a batch axis in flat tuples or lists.")
        expr.elts = [e if state.get(getattr(e, "id", None)) == ARRAY else self.broadcast(e) for e in expr.elts]
        state[op.targets[0]] = ITEMS
        return [self.tag(compat.assign(op.targets[0], expr), op)]

    def tuple_of_kinds(self, op, name, state):
        """An operation reading ``name``, a tuple of kinds: unpacked (``a, b = t``), an item taken by a number
        (``t[1]``) or given to a user function, or refused."""
        source = op.args[0].id if op.args and isinstance(op.args[0], gast.Name) else None
        kinds = state.get(source)
        if op.kind == "unpack" and source == name and len(kinds) == len(op.targets):
            state.update(zip(op.targets, kinds))
            return [self.tag(compat.assign(op.targets, compat.clone(op.expr)), op)]
        if op.kind == "pack":
            return self.pack(op, state)
        if op.kind == "call":
            return self.call(op, state)
        if op.fn is tangent_of and len(op.args) == 2 and source == name and not op.kwargs \
                and not self.batched_reads(atom_names(op.args[1]), state):  # a rule's tangent of a tuple it returns
            self.size_used = True
            state[op.targets[0]] = kinds
            call = compat.call(compat.name(self.ns.helper(batched_items.tangent_of_kinds)),
                               [compat.clone(a) for a in op.args] + [_kind_code(kinds), compat.name(self.size)])
            return [self.tag(compat.assign(op.targets[0], call), op)]
        if op.fn is rules.getitem and op.kind in ("prim", "nondiff") and len(op.args) == 2 and source == name \
                and isinstance(op.args[1], gast.Constant) and type(op.args[1].value) is int \
                and -len(kinds) <= op.args[1].value < len(kinds):
            state[op.targets[0]] = kinds[op.args[1].value]
            return [self.tag(compat.assign(op.targets[0], compat.clone(op.expr)), op)]
        if all(k in (False, ARRAY) for k in state[name]):  # batched and shared arrays: each with the batch axis
            flags = compat.tuple_([compat.const(bool(k)) for k in state[name]])
            self.size_used = True
            state[name] = ITEMS
            call = compat.call(compat.name(self.ns.helper(batched_items.every_item_batched)),
                               [compat.name(name), compat.name(self.size), flags])
            return [self.tag(compat.assign(name, call), op)] + self.batch_op(op, state)
        raise self.refuse(op.node, f"{compat.unparse(op.expr).strip()} reads {name}, a tuple holding a list or tuple "
                          "of arrays with a batch axis, other than by unpacking it or taking an item by a number",
                          "Unpack the tuple first.")

    def elementwise(self, op, operands, state):
        """An elementwise operation: batched operands with fewer axes per example get new axes after the batch axis.

        Every operand counts for the largest rank, keyword arguments too
        (``np.clip(x, a_min=m)``); where one's rank is not known, the operands
        are aligned when it runs (``aligned_operands``).
        """
        atoms = list(operands) + list(op.kwargs.values())
        self.infer(op, atoms)
        out: list = []
        replace: dict = {}
        ranks = [self.atom_rank(a) for a in atoms]
        batched = sorted({a.id for a in operands if isinstance(a, gast.Name) and state.get(a.id) == ARRAY})
        if None not in ranks:
            top = max(ranks)
            for n in batched:
                rank = self.atom_rank(compat.name(n))
                if rank < top:
                    new = tuple(range(1, 1 + top - rank))
                    replace[n] = compat.call(compat.attr(compat.name(self.ns.bind(np, "np")), "expand_dims"),
                                             [compat.name(n), compat.const(new[0]) if len(new) == 1
                                              else compat.tuple_([compat.const(i) for i in new])])
        else:  # aligned when it runs, from the ranks then
            others = [a for a in atoms if not (isinstance(a, gast.Name) and a.id in batched)
                      and not (isinstance(a, gast.Constant) and self.atom_rank(a) == 0)]
            temps = [self.names.temp() for _ in batched]
            bdims = compat.tuple_([compat.const(0)] * len(batched) + [compat.const(None)] * len(others))
            call = compat.call(compat.name(self.ns.helper(batching.aligned_operands)),
                               [bdims] + [compat.name(n) for n in batched] + [compat.clone(a) for a in others])
            index = compat.make("Slice", lower=None, upper=compat.const(len(batched)), step=None)
            aligned = compat.make("Subscript", value=call, slice=index, ctx=gast.Load())
            out.append(self.tag(compat.assign(temps, aligned), op))
            replace = {n: compat.name(t) for n, t in zip(batched, temps)}
        expr = _replaced(op.expr, replace)
        state[op.targets[0]] = ARRAY
        return out + [self.tag(compat.assign(op.targets[0], expr), op)]

    def by_rule(self, op, rule, state):
        bdims = compat.tuple_([compat.const(0 if state.get(getattr(a, "id", None)) else None) for a in op.args])
        try:
            inlined = self.module.inliner.inline_batch(rule, op, bdims, op.args, self.names, _Ranks(self, state))
        except ValueError as exc:
            raise self.refuse(op.node, f"{qualified_name(op.fn)}: {exc}") from None
        if inlined is None:
            name = self.ns.bind(rule, getattr(rule, "__name__", "batched"))
            self.ns.pure.add(name)
            code, expr = [], compat.call(compat.name(name), [bdims] + [compat.clone(a) for a in op.args],
                                         {k: compat.clone(v) for k, v in op.kwargs.items()})
        else:
            code, expr = inlined
        reason = self.unbatchable(expr)
        if reason is not None:
            raise self.refuse(op.node, f"{qualified_name(op.fn)}: {reason}", "Write it another way, or register a "
                              f"batching rule with astgrad.defbatch({qualified_name(op.fn)}, rule).",
                              NoRuleTransformError)
        expr = _without_defaults(expr, rule, op, self.ns.globals)
        self.infer(op)
        state[op.targets[0]] = False if getattr(rule, "shared", False) else ITEMS if getattr(rule, "items", False) \
            else ARRAY  # items: the rule returns a tuple of batched values (a rule's gradients, one per argument)
        return [self.tag(s, op) for s in code] + [self.tag(compat.assign(op.targets[0], expr), op)]

    def by_helper_rule(self, op, rule, state):
        """A call of a reverse rule's helper that has a batching rule (``batching.defbatch_helper``): a tuple of
        batched and shared arrays given to it gets the batch axis on every item first; whether it returns a
        list or tuple follows from the kinds of its arguments (``rule.items``)."""
        if any(state.get(n) for v in op.kwargs.values() for n in atom_names(v)):
            raise self.refuse(op.node, f"a keyword argument of {op.fn.__name__} has a batch axis", "Pass it by position.")
        out = []
        for a in op.args:
            kind = state.get(getattr(a, "id", None))
            if _nested(kind) and not _flat(kind):
                raise self.refuse(op.node, f"{op.fn.__name__} is given {a.id}, a tuple holding a list or tuple of "
                                  "arrays with a batch axis", "Give it the items one by one.")
            if _nested(kind):
                self.size_used = True
                flags = compat.tuple_([compat.const(bool(k)) for k in kind])
                state[a.id] = ITEMS
                call = compat.call(compat.name(self.ns.helper(batched_items.every_item_batched)),
                                   [compat.name(a.id), compat.name(self.size), flags])
                out.append(self.tag(compat.assign(a.id, call), op))
        kinds = tuple(state.get(getattr(a, "id", None)) or None for a in op.args)
        items = rule.items(kinds) if callable(rule.items) else rule.items
        name = self.ns.bind(rule, getattr(rule, "__name__", "batched"))
        self.ns.pure.add(name)
        bdims = compat.tuple_([compat.const(None if k is None else 0) for k in kinds])
        expr = compat.call(compat.name(name), [bdims] + [compat.clone(a) for a in op.args],
                           {k: compat.clone(v) for k, v in op.kwargs.items()})
        if len(op.targets) > 1:
            if not items:
                raise self.refuse(op.node, f"unpacking what {op.fn.__name__} returns, an array with a batch axis, "
                                  "takes its examples apart")
            state.update((t, ARRAY) for t in op.targets)
            return out + [self.tag(compat.assign(op.targets, expr), op)]
        state[op.targets[0]] = ITEMS if items else ARRAY
        return out + [self.tag(compat.assign(op.targets[0], expr), op)]

    def unbatchable(self, expr):
        """The reason of ``unbatchable(reason)`` when ``expr`` is that call (the rule refused this case), else None."""
        if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) \
                and self.ns.globals.get(expr.func.id) is batching.unbatchable:
            return expr.args[0].value if expr.args and isinstance(expr.args[0], gast.Constant) else "cannot batch this"
        return None

    def broadcast(self, atom):
        self.size_used = True
        return compat.call(compat.name(self.ns.helper(batching.broadcast_batch)), [compat.clone(atom),
                                                                                  compat.name(self.size)])

    def tag(self, stmt, op):
        setattr(stmt, ORIGIN, (self.source.filename, op.line, op.text, False))  # errors when it runs name the line
        return stmt

    # -- control flow -----------------------------------------------------------------

    def join(self, *states) -> dict:
        return join(*states)

    def fill(self, wanted, have) -> list:
        """``y = broadcast_batch(y, n)`` for each name batched in ``wanted`` and bound unbatched in ``have``."""
        out = []
        for n in sorted(wanted):
            if _nested(wanted[n]) and have.get(n) is False:
                raise self.refuse(self.ctx.source.tree, f"{n} is a tuple holding a list or tuple of arrays with a batch "
                                  "axis on one path and a value every example shares on another", "Loop over the "
                                  "examples.")
            if wanted[n] and have.get(n) is False:
                out.append(compat.assign(n, self.broadcast(compat.name(n))))
            elif wanted[n] == ITEMS and _flat(have.get(n)):
                self.size_used = True
                flags = compat.tuple_([compat.const(bool(k)) for k in have[n]])
                out.append(compat.assign(n, compat.call(compat.name(self.ns.helper(batched_items.every_item_batched)),
                                                        [compat.name(n), compat.name(self.size), flags])))
            elif wanted[n] and have.get(n) and have[n] != wanted[n]:
                raise self.refuse(self.ctx.source.tree, f"{n} is an array with a batch axis on one path and a "
                                  "list or tuple on another")
        return out

    def batch_if(self, s, state):
        if state.get(s.test) and _only_raises(s):
            return self.raised_for_some(s, state)
        if state.get(s.test):
            return self.masked(s, state)
        return self.branches(s, state)

    def raised_for_some(self, s, state):
        """``if test: raise ...`` on a batched test (a check): raised when any example's test holds, as a loop over
        the examples raises at the first; nothing the branch binds is read after it."""
        body = self.sweep(s.body, dict(state))
        test = compat.call(compat.name(self.ns.helper(batched_items.any_example)), [compat.name(s.test)])
        return [compat.if_stmt(test, body, [])]

    def masked(self, s, state):
        """``if`` on a batched test whose branches only compute: both run, each name either binds chosen per
        example (``masked``: ``np.where``); else refused at its line."""
        reason = _effect(s.body + s.orelse, calls=True)
        if reason is not None:
            raise self.refuse(s.line, f"this if's test has a batch axis: it may differ from example to example, and "
                              f"{reason}, so both branches cannot run", "Compute both branches and choose with "
                              "np.where(test, a, b).")
        impure = self.impure
        assigned = sorted({t for op in walk_ops(s.body + s.orelse) for t in op.targets})
        before = [n for n in assigned if n in state]
        kept = {n: self.names.temp() for n in before}
        out = [compat.assign(kept[n], compat.name(n)) for n in before]
        body_state, else_state = dict(state), dict(state)
        out += self.sweep(s.body, body_state)
        taken = {n: self.names.temp() for n in assigned}
        out += [compat.assign(taken[n], compat.name(n)) for n in assigned if n in body_state]
        out += [compat.assign(n, compat.name(kept[n])) for n in before]
        out += self.sweep(s.orelse, else_state)
        if self.impure != impure:
            raise self.refuse(s.line, "this if's test has a batch axis: it may differ from example to example, and a "
                              "branch calls a function that does more than compute (it changes a list, writes into "
                              "memory other names see, draws random numbers or calls such a function), so both "
                              "branches cannot run", "Compute both branches and choose with np.where(test, a, b).")
        outside = None
        for n in assigned:
            if (n not in body_state or n not in else_state) and n not in state:
                outside = _reads_outside(self.ctx.body, self.ctx.ret, s) if outside is None else outside
                if n not in outside:  # bound in one branch and read only there (a temporary)
                    continue
            if n not in body_state or n not in else_state:
                raise self.refuse(s.line, f"this if's test has a batch axis, and {n} is bound on one branch only: "
                                  "some examples would have it and some not", "Bind it on both branches.")
            if ITEMS in (body_state[n], else_state[n]) or _nested(body_state[n]) or _nested(else_state[n]):
                raise self.refuse(s.line, f"this if's test has a batch axis, and {n} holds a list or tuple",
                                  "Choose arrays with np.where(test, a, b).")
            flags = [compat.const(bool(body_state[n])), compat.const(bool(else_state[n]))]
            out.append(compat.assign(n, compat.call(compat.name(self.ns.helper(batching.masked)),
                                                    [compat.name(s.test), compat.name(taken[n]), compat.name(n)] + flags)))
            state[n] = ARRAY
        return out

    def batch_for(self, s, state):
        if self.batched_reads(atom_names(s.iter), state):
            raise self.refuse(s.line, "this for loop runs over a value with a batch axis: its items differ from "
                              "example to example", "Loop over range(n) with an n every example shares.")
        state[s.target] = False
        return self.loop(s, state, lambda body: compat.for_stmt(s.target, compat.clone(s.iter), body))

    def batch_while(self, s, state):
        cond = self.sweep(s.cond, state)
        if state.get(s.test):
            raise self.refuse(s.line, "this while loop's test has a batch axis: each example may stop at its own "
                              "trip", "Run a fixed number of trips every example shares.")
        loop = self.loop(s, state, lambda body: compat.while_stmt(compat.name(s.test), body))
        if state.get(s.test):  # the body made it batched
            raise self.refuse(s.line, "this while loop's test has a batch axis: each example may stop at its own "
                              "trip", "Run a fixed number of trips every example shares.")
        return cond + loop

    def checkpoint(self):
        """Also the callees' variants made so far: a sweep of a loop body may make them for values the loop's
        start had unbatched."""
        return super().checkpoint(), set(self.module.variants), len(self.module.functions)

    def rewind(self, mark) -> None:
        base, variants, functions = mark
        super().rewind(base)
        module = self.module
        for key in set(module.variants) - variants:
            name = module.variants.pop(key)
            module.names.taken.discard(name)
            for made in (module.batch_items, module.batch_read, module.batch_stack_params):
                made.pop(name, None)
        del module.functions[functions:]

    def batch_break(self, s, state):
        return self.broken(state)

    def batch_raw(self, s, state):
        names = [n.id for n in gast.walk(s.stmt) if isinstance(n, gast.Name)]
        batched = self.batched_reads(names, state)
        call = s.call
        if batched and call is not None and call.fn is runtime.check_seed and len(call.args) == 3 \
                and not call.kwargs and state.get(getattr(call.args[0], "id", None)) == ARRAY \
                and not self.batched_reads([n for a in call.args[1:] for n in atom_names(a)], state):
            # a vjp batched over its seed (jacrev: every row in one sweep) checks each example's shape
            check = compat.call(compat.name(self.ns.helper(runtime.check_seeds)), [compat.clone(a) for a in call.args])
            return [with_origin(compat.expr_stmt(check), self.source.filename, s.line, s.text)]
        if batched and call is not None and call.fn is runtime.checked:
            batched = []  # evaluated for what numpy raises: it raised, if it does, where the value was computed
        if batched:
            checked = self.check_by_rule(s.stmt, state)
            if checked is not None:  # a check (checks.an_array(y, ...)): asked of every example by its rule
                return [with_origin(checked, self.source.filename, s.line, s.text)]
        if batched:
            raise self.refuse(s.line, f"this statement reads {batched[0]}, which has a batch axis, and is kept as "
                              "written, for one example", "Leave it out of the function vmap transforms.")
        return [with_origin(s.stmt, self.source.filename, s.line, s.text)]


def _check_call(stmt, globals_):
    """``(the helper, the call)`` of a statement that is only a call of a helper whose batching rule is shared (a
    check: one answer for every example), its arguments names and constants; else None."""
    if not (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and isinstance(stmt.value.func, gast.Name)):
        return None
    call = stmt.value
    fn = globals_.get(call.func.id)
    rule = batching.rule_of(fn) if fn is not None else None
    if rule is None or not getattr(rule, "shared", False):
        return None
    if not all(isinstance(a, (gast.Name, gast.Constant)) for a in list(call.args) + [k.value for k in call.keywords]) \
            or any(k.arg is None for k in call.keywords):
        return None
    return rule, call


def stacks_of(body, ret, generated) -> set:
    """The lists that generated code only pushes on (``grow``), pops (``stack_pop``) and gives to the functions it
    calls (``generated``: a new empty list too), and the names that rebind them: a push of a batched value may
    mark it there (``push_batched``), since nothing else reads them."""
    lists, read, copies = set(), set(atom_names(ret)), []
    for s in walk_statements(body):
        if isinstance(s, Op):
            if generated and s.kind == "pack" and isinstance(s.expr, gast.List) and not s.expr.elts:
                lists.update(s.targets)
            elif s.kind == "prim" and s.fn in (grow, stack_pop) and s.args and isinstance(s.args[0], gast.Name):
                lists.add(s.args[0].id)
                lists.update(s.targets if s.fn is grow else ())
                read.update(n for a in s.args[1:] for n in atom_names(a))
            elif len(s.targets) == 1 and isinstance(s.expr, gast.Name) and s.kind in ("copy", "nondiff"):
                copies.append((s.targets[0], s.expr.id))
            elif s.kind == "call":  # a list given to a callee: its variant says whether only its pops read it
                read.update(n for a in list(s.args) + list(s.kwargs.values()) if not isinstance(a, gast.Name)
                            for n in atom_names(a))
            else:
                read.update(_statement_reads(s))
        else:
            read.update(_statement_reads(s))
    for target, source in copies:
        if target not in lists or source not in lists:
            read.add(source)
    return lists - read


def fresh_lists(body, globals_) -> set:
    """The names of lists the function makes itself (``[]``, ``zero_tangent(...)``) that nothing but their own
    names ever holds: grown (``grow``), copied among themselves, read by an index, ``part``, ``len`` or a join
    (``np.stack``), popped, returned.  A batched item may turn such a list into a new list of batched arrays (every
    item given the batch axis): no other name sees the list it was."""
    parent: dict = {}

    def root(n):
        while parent.get(n, n) != n:
            n = parent[n]
        return n

    def union(a, b):
        parent[root(a)] = root(b)

    made: set = set()
    bound: dict = {}
    uses: list = []
    readers = (rules.getitem, sequences.part, len, stack_pop, *batching.JOINS)
    for s in walk_statements(body):
        if not isinstance(s, Op):
            names = {s.test} if isinstance(s, (If, While)) else set(atom_names(s.iter)) if isinstance(s, For) \
                else {n.id for n in gast.walk(s.stmt) if isinstance(n, gast.Name)} if isinstance(s, Raw) else set()
            uses.append(names)
            continue
        for t in s.targets:
            bound.setdefault(t, []).append(s)
        if _makes_a_list(s):
            made.update(s.targets)
            continue
        reads = set(atom_names(s.expr)) | {n for a in list(s.args) + list(s.kwargs.values()) for n in atom_names(a)}
        first = getattr(s.args[0], "id", None) if s.args else None
        fn = s.fn
        if fn is None and isinstance(s.expr, gast.Call) and isinstance(s.expr.func, gast.Name):
            fn = globals_.get(s.expr.func.id)
        if fn is grow and s.kind == "prim" and first is not None and len(s.targets) == 1:
            union(s.targets[0], first)
            uses.append(reads - {first})
        elif len(s.targets) == 1 and isinstance(s.expr, gast.Name) and s.kind in ("copy", "stop", "nondiff"):
            union(s.targets[0], s.expr.id)
        elif fn in readers and first is not None and len(s.args) >= 1:
            uses.append(reads - {first})
        else:
            uses.append(reads)
    groups: dict = {}
    for n in set(parent) | made:
        groups.setdefault(root(n), set()).add(n)
    fresh = set()
    for group in groups.values():
        if not group & made:
            continue
        if any(n not in bound for n in group):  # a parameter, or a name bound elsewhere
            continue
        if any(n in names for names in uses for n in group):
            continue
        if all(_makes_a_list(s) or s.fn is grow or isinstance(s.expr, gast.Name) and s.expr.id in group
               for n in group for s in bound[n]):
            fresh |= group
    return fresh


def _refused_when_called(fn) -> bool:
    """Whether ``fn`` is the stand-in generated code holds for a callee refused at transform time, which raises
    the refusal when called (pipeline's ``_refused_when_called``): ``def name(*args, **kwargs): raise refused()``."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_argcount or code.co_kwonlyargcount or len(code.co_names) != 1 \
            or not code.co_flags & inspect.CO_VARARGS or not code.co_flags & inspect.CO_VARKEYWORDS:
        return False
    return isinstance(getattr(fn, "__globals__", {}).get(code.co_names[0]), Refusal)


_CHECKS: dict = {}


def _only_checks(fn) -> bool:
    """Whether ``fn`` is a check: a function whose every statement (its docstring aside) binds local names or is
    an ``if`` (with ``elif``s) whose branches only raise or return nothing, so calling it on each example is all a
    loop over the examples does."""
    if fn not in _CHECKS:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
        except (TypeError, OSError, SyntaxError, IndexError):
            tree = None

        def raises(stmts):
            return bool(stmts) and all(isinstance(s, ast.Raise) or isinstance(s, ast.Return) and (
                s.value is None or isinstance(s.value, ast.Constant) and s.value.value is None)
                or isinstance(s, ast.If) and raises(s.body)
                                       and (not s.orelse or raises(s.orelse)) for s in stmts)

        def binds(s):
            names = (t.elts if isinstance(t, ast.Tuple) else [t] for t in getattr(s, "targets", ()))
            return isinstance(s, ast.Assign) and all(isinstance(n, ast.Name) for ns in names for n in ns)
        body = getattr(tree, "body", [])
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        checks = [s for s in body if not binds(s)]
        _CHECKS[fn] = isinstance(tree, ast.FunctionDef) and not tree.decorator_list and raises(checks) \
            and not any(isinstance(n, (ast.Return, ast.Yield, ast.YieldFrom)) and getattr(n, "value", None) is not None
                        and not (isinstance(n.value, ast.Constant) and n.value.value is None) for n in ast.walk(tree))
    return _CHECKS[fn]


def _reads_outside(body, ret, inner) -> set:
    """The names the function reads (its statements ``body``, the value ``ret`` it returns) outside the statement
    ``inner``."""
    read = set(atom_names(ret))
    for t in walk_statements(body, lambda t: () if t is inner else blocks(t)):
        if t is not inner:
            read.update(_statement_reads(t))
    return read


def _statement_reads(t) -> set:
    """The names statement ``t`` reads itself (an operation's operands, a branch's or loop's test, a loop's
    iterable, every name of a statement kept as written), not those of the statements it holds."""
    if isinstance(t, Op):
        return set(op_reads(t)) | set(atom_names(t.expr))
    if isinstance(t, (If, While)):
        return {t.test}
    if isinstance(t, For):
        return set(atom_names(t.iter))
    if isinstance(t, Raw):
        return {n.id for n in gast.walk(t.stmt) if isinstance(n, gast.Name)}
    return set()


def _only_computes(stmts) -> bool:
    """Whether ``stmts`` (a function's body, loops and branches in it) change nothing others see: no item or
    attribute written in place, no list grown or popped, no random draw, no statement kept as written but a
    raise, an assert or a del (calls of user functions are checked where they are batched)."""
    for s in walk_statements(stmts):
        if isinstance(s, Raw) and not isinstance(s.stmt, (gast.Raise, gast.Assert, gast.Delete, gast.Pass)):
            return False
        if isinstance(s, Op) and (s.kind == "opaque" or s.inplace or _draws(s.fn)
                                  or s.fn in (grow, stack_pop, sequences.append)):
            return False
    return True


def _only_raises(s) -> bool:
    """Whether the ``if`` ``s`` has no ``else`` and its branch only computes, then raises."""
    body = s.body
    return not s.orelse and bool(body) and isinstance(body[-1], Raw) and isinstance(body[-1].stmt, gast.Raise) \
        and _effect(body[:-1]) is None


def _makes_a_list(op) -> bool:
    """``[]`` or ``zero_tangent(...)``: a new list (or container) no other name holds yet."""
    return op.kind == "pack" and isinstance(op.expr, gast.List) and not op.expr.elts or op.fn is zero_tangent


def _effect(stmts, calls=False):
    """Why running ``stmts`` for every example is not the same as running them for some: a loop, a break, a
    statement kept as written, a call of a user function (unless ``calls``: the batching sweep then checks the
    callee only computes), a change to a list or the stack, a write into memory other names see, a random draw;
    None when they only compute."""
    for s in walk_statements(stmts):
        if isinstance(s, If):  # its branches are checked here too; it is masked or taken as its test says
            continue
        if not isinstance(s, Op):
            return "a branch holds a loop, a break or a statement kept as written"
        if s.kind == "opaque" or s.kind == "call" and not calls or s.fn in (grow, stack_pop, sequences.append):
            return "a branch calls a user function or changes a list"
        if s.inplace or _draws(s.fn):
            return "a branch writes into memory other names see or draws random numbers"
    return None


def _elementwise_operator(expr) -> bool:
    """``a & b``, ``a | b``, ``a ^ b`` and ``~a`` (masks, outside differentiated code): elementwise ufuncs; a
    list or tuple operand raises in numpy as it does one example at a time."""
    if isinstance(expr, gast.UnaryOp):
        return isinstance(expr.op, gast.Invert)
    return isinstance(expr, gast.BinOp) and isinstance(expr.op, (gast.BitAnd, gast.BitOr, gast.BitXor))


def _is_none_test(expr) -> bool:
    """``x is None`` or ``x is not None`` of a name."""
    return isinstance(expr, gast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], (gast.Is, gast.IsNot)) \
        and isinstance(expr.left, gast.Name) and isinstance(expr.comparators[0], gast.Constant) \
        and expr.comparators[0].value is None


def _draws(fn) -> bool:
    """Whether ``fn`` is one of numpy's or Python's random draws (a function or a generator's method)."""
    owner = getattr(fn, "__self__", None)
    module = str(getattr(fn, "__module__", None) or getattr(type(owner), "__module__", "") or "")
    return module.startswith(("numpy.random", "random")) or isinstance(owner, (np.random.Generator,
                                                                             np.random.RandomState))


def _basic(index) -> bool:
    """A literal index of numbers, slices of numbers, ``None`` and ``...`` (``np.s_[1:3, 0]``): no array in it."""
    if isinstance(index, gast.Subscript) and isinstance(index.value, gast.Attribute) and index.value.attr == "s_":
        index = index.slice
    parts = index.elts if isinstance(index, gast.Tuple) else [index]
    for part in parts:
        if isinstance(part, gast.Slice):
            if not all(b is None or isinstance(b, gast.Constant) and type(b.value) is int or isinstance(
                    b, gast.UnaryOp) and isinstance(b.operand, gast.Constant) for b in (part.lower, part.upper, part.step)):
                return False
        elif isinstance(part, gast.UnaryOp) and isinstance(part.operand, gast.Constant):
            continue
        elif not (isinstance(part, gast.Constant) and (type(part.value) is int or part.value is None
                                                        or part.value is Ellipsis)):
            return False
    return True


def join(*states) -> dict:
    """The state after paths meet: batched where any path is, and only then as one kind."""
    out: dict = {}
    unbatched = set()
    for state in states:
        for name, s in state.items():
            unbatched.update([name] if s is False else [])
            if s and out.get(name) and s != out[name] and all(k == ITEMS or _flat(k) for k in (s, out[name])):
                out[name] = ITEMS  # a tuple of batched and shared arrays joins a tuple of batched ones
            elif s or name not in out:
                out[name] = s if not out.get(name) else out[name]
    for name in unbatched:
        if _flat(out.get(name)):
            out[name] = ITEMS  # ... and a tuple every example shares
    return out


def _flat(kind) -> bool:
    """Whether ``kind`` is a tuple of kinds whose items are each a batched or a shared array (no list)."""
    return _nested(kind) and all(k in (False, ARRAY) for k in kind)


def _replaced(expr, replace):
    """A copy of ``expr`` with the names in ``replace`` (read, not called) replaced."""
    expr = compat.clone(expr)
    if not replace:
        return expr

    class Swap(gast.NodeTransformer):
        def visit_Name(self, node):
            if node.id in replace and isinstance(node.ctx, gast.Load):
                return compat.clone(replace[node.id])
            return node
    return Swap().visit(expr)


def _without_defaults(expr, rule, op, bound=None):
    """The rule's call with the keywords the user did not pass left out where they hold the rule's default (a
    literal, or a name ``bound`` maps to the default itself)."""
    if not isinstance(expr, gast.Call):
        return expr
    try:
        params = inspect.signature(rule).parameters
    except (TypeError, ValueError):
        return expr
    def default(k):
        if k.arg in op.kwargs or k.arg not in params or params[k.arg].default is inspect.Parameter.empty:
            return False
        if isinstance(k.value, gast.Name):
            return bound is not None and k.value.id in bound and bound[k.value.id] is params[k.arg].default
        return isinstance(k.value, gast.Constant) and k.value.value == params[k.arg].default \
            and type(k.value.value) is type(params[k.arg].default)
    expr.keywords = [k for k in expr.keywords if not default(k)]
    return expr


def batched_function(ctx, name, batched, items=frozenset()):
    """``name(the parameters...)``: ``ctx``'s function for arguments ``batched`` with a batch axis first
    (``items``: those of them holding lists or tuples of such arrays); a callee's variant (``ctx.entry`` false)
    takes the number of examples first."""
    size = ctx.names.fresh("batch_size")
    batcher = Batcher(ctx.module, ctx, size)
    if not ctx.entry:  # known before its sweep: a recursive call reads it
        ctx.module.batch_stack_params[name] = frozenset(batcher.stacks & set(ctx.params))
    first = next((p for p in ctx.params if p in batched), None) if ctx.entry else None
    for _ in range(4):  # until what is pushed and what is read stop changing (a second sweep, where it pushes)
        mark = batcher.checkpoint()
        state = {p: (False if p not in batched else ITEMS if p in items else ARRAY) for p in ctx.params}
        body = batcher.sweep(ctx.body, state)
        read = {n.id for s in body for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
        read.update(atom_names(ctx.ret))
        if batcher.pushed == batcher.pushed_before and read == batcher.read:
            break
        batcher.rewind(mark)
        pushed, batcher = batcher.pushed, Batcher(ctx.module, ctx, size)
        batcher.pushed_before, batcher.read = dict(pushed), read
    else:
        raise batcher.refuse(ctx.source.tree, "what the generated stack holds did not settle", "Loop over the examples.")
    ret = ctx.ret
    value = compat.clone(ret)
    shared = not (isinstance(ret, gast.Name) and state.get(ret.id))
    if shared and (ctx.entry or ctx.module.batch_read.get(name)):  # a recursive callee's: read as batched
        value = batcher.broadcast(ret)  # every example's value is the same: stacked all the same
    kinds = state.get(ret.id) if isinstance(ret, gast.Name) else None
    flat = not shared and _flat(kinds) and bool(ctx.entry or ctx.module.batch_read.get(name))
    if flat and isinstance(kinds, tuple):  # a tuple of batched and shared arrays, returned with every item batched
        batcher.size_used = True
        value = compat.call(compat.name(ctx.ns.helper(batched_items.every_item_batched)),
                            [value, compat.name(size), compat.tuple_([compat.const(bool(k)) for k in kinds])])
    body.append(compat.ret(value))
    if batcher.size_used and first is not None:  # the entry's: read before anything rebinds the parameter
        examples = compat.name(first)
        if first in items:  # a tuple or list of batched arrays (in_axes per item): its first item's
            examples = compat.make("Subscript", value=examples, slice=compat.const(0), ctx=gast.Load())
        body.insert(0, compat.assign(size, compat.call(compat.name(ctx.ns.helper(len)), [examples])))
    ctx.primal, ctx.adjoint = body, []
    returned = ITEMS if flat else state.get(ret.id) if isinstance(ret, gast.Name) else False
    if shared and not ctx.entry and not ctx.module.batch_read.get(name):
        returned = SHARED  # a callee's value every example shares, read by its callers as it is
    if _nested(returned) and ctx.entry:
        raise batcher.refuse(ctx.source.tree, f"{ctx.fn.__name__} returns a tuple holding a list or tuple of arrays "
                             "with a batch axis", "Return a flat tuple.")
    ctx.returns_items = returned if _nested(returned) or returned == SHARED else returned == ITEMS
    ctx.batch_stacks = frozenset(batcher.stacks)
    ctx.module.batch_pure[name] = not batcher.impure and not batcher.stacks and _only_computes(ctx.body)
    args = arguments(ctx.source.tree, ctx.ns, ctx.fn, first=[] if ctx.entry else [size])
    return function_def(name, args, body)


__all__ = ["batched_function", "Batcher"]
