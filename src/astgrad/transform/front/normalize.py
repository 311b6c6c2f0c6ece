"""A-normal form: one operation per statement, every operand an atom.

``x = a * b + c`` becomes ``t1 = a * b`` / ``x = t1 + c``; ``x += y`` becomes
``x = x + y``; method calls and attributes become calls of known primitives;
conditional expressions, ``and``/``or`` and list comprehensions become
statements; lambdas assigned to a local name are inlined at their calls.
The output is a list of ``ir`` statements.  Temporaries are numbered in
order, so the same function always normalises to the same names.

Long: one visitor over every statement Python has (assignments, augmented and
item assignments, loops, branches, ``with``, ``assert``); expressions, writes,
containers and contexts are already modules of their own, and the front end is
due to become a ``front/`` subpackage.
"""

from __future__ import annotations

import contextlib
import types
import warnings

import numpy as np

from ... import rules
from ...rules import sequences
from ..ir import compat
from ..runtime import caller_state, checkpoints, contexts, checks
from . import numpy_writes
from .. import runtime
from .aliasing import AUGMENTED_ITEM, shares_memory
from ..ir.compat import gast
from ..ir.errors import UnsupportedSyntaxError
from .expressions import assign_expression, defined_lambda
from ..ir.nodes import Break, For, If, Op, Raw, While, atom_names, breaks, op_reads
from .naming import read_elsewhere, scope_names
from .parse import MISSING
from ..runtime.origins import ORIGIN
from ..runtime.value_types import held_data
from .containers import ITERATED, dict_view_loop
from .structure import Structurer
from .writes import write_call


def local_names(fn_node) -> set[str]:
    """Parameters and every name the function assigns."""
    args = fn_node.args
    found = {a.id for a in list(args.args) + list(args.posonlyargs or []) + list(args.kwonlyargs)}
    for node in gast.walk(fn_node):
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            found.add(node.id)
    return found


def param_names(fn_node) -> list[str]:
    args = fn_node.args
    return [a.id for a in list(args.posonlyargs or []) + list(args.args) + list(args.kwonlyargs)]


class Normalizer:
    def __init__(self, source, names, ns):
        self.src = source
        self.names = names
        self.ns = ns
        self.locals = local_names(source.tree) & scope_names(source.tree, stores=True)  # not a comprehension's
        self.names.reserve(*self.locals)
        # a comprehension's variable keeps its name when the function uses it for nothing else
        self.scope = scope_names(source.tree) | read_elsewhere(source.fn.__code__)
        self.comprehension_names: set[str] = set()
        self.lambdas: dict[str, gast.Lambda] = {}
        self.callables: dict = {}  # parameter -> the function it holds in the calls served (pipeline.normalize)
        self.out: list = []
        self.stop = False
        self.forward_stack = None  # in forward mode over generated code: the name of its stack
        self.stack_without_tangent = False  # a callee given the stack without its tangent stack: refused
        self.batching = False  # vmap of generated code: its pushes and pops (any list's) read as a stack's
        self.unsaved: set[str] = set()  # vmap of generated code: names of pop_numbers(...), read as None
        self.stmt = source.tree
        self.sequences: set[str] = set()
        self.temps: set[str] = set()
        self.shared: dict[str, set] = {}  # name -> names whose memory it may share in the generated code

    # -- entry --------------------------------------------------------

    def function(self):
        """(IR body, return atom)."""
        body, result = Structurer(self.names).function_body(self.src.tree.body)
        self.locals |= scope_names(self.src.tree, stores=True, body=body)
        if result is not None:
            self.locals.add(result)
        ret = None
        for stmt in body:
            if isinstance(stmt, gast.Return):
                self.stmt = stmt
                value = stmt.value if stmt.value is not None else compat.const(None)
                if isinstance(value, gast.Name) or compat.is_literal(value):
                    ret = self.atomize(value)
                else:
                    result = self.names.fresh("result")
                    self.locals.add(result)
                    self.assign(result, value)
                    ret = compat.name(result)
            else:
                self.statement(stmt)
        if ret is None:
            ret = compat.name(result)
        return self.out, ret

    # -- helpers ------------------------------------------------------

    def error(self, node, message, hint=""):
        return self.src.error(node if getattr(node, "lineno", None) else self.stmt, message, hint,
                              UnsupportedSyntaxError)

    def temp_local(self, base):
        name = self.names.fresh(base)
        self.locals.add(name)
        return name

    def temp(self):
        name = self.names.temp()
        self.temps.add(name)
        return name

    def block(self, stmts):
        saved, self.out = self.out, []
        for s in stmts:
            self.statement(s)
        new, self.out = self.out, saved
        return new

    def emit(self, targets, kind, expr, node=None, fn=None, args=(), kwargs=None, error=None,
             sequence=False):
        if self.stop and kind not in ("nondiff",):
            kind = "nondiff"
        line = self.src.user_line(self.stmt)
        text = self.src.line_text(self.stmt)
        op = Op(list(targets), kind, expr, line, text, node or self.stmt, fn, list(args),
                dict(kwargs or {}), error, sequence)
        reads = set(atom_names(expr))
        clash = [t for t in targets if t in reads]
        if clash and len(targets) == 1 and kind != "nondiff":  # x = x.copy() too: x's two values need two adjoints
            temp = self.temp()
            op.targets = [temp]
            self.out.append(op)
            self.out.append(Op(list(targets), "copy", compat.name(temp), line, text, op.node,
                               args=[compat.name(temp)]))
        else:
            self.out.append(op)
        for made in self.out[-2 if clash and len(targets) == 1 and kind != "nondiff" else -1:]:
            if shares_memory(made):
                for t in made.targets:
                    self.shared.setdefault(t, set()).update(set(atom_names(made.expr)) | set(op_reads(made)))
        return op

    def load_name(self, node):
        """An atom for a name: locals stay, free names are bound in the namespace."""
        if node.id in self.lambdas:  # inlined where it is called; the generated code has no such function
            raise self.error(node, f"the lambda {node.id} made in the function can only be called here, not passed "
                             "on or stored: astgrad inlines it where it is called",
                             "Define the function at module level, with what it reads from this function as "
                             "parameters, and pass that (it is transformed as a callee).")
        if node.id in self.locals or node.id in self.temps:
            return compat.name(node.id)
        obj = self.src.resolve(node.id)
        if obj is MISSING:
            raise self.error(node, f"name {node.id!r} is not defined",
                             "Define it before the function is differentiated.")
        self.refuse_unseen(node, obj)
        if isinstance(obj, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)) \
                or callable(obj):
            return compat.name(self.ns.bind(obj, node.id))
        place = self.src.live_source(node.id)
        if place is None:
            return compat.name(self.ns.bind(obj, node.id))
        return compat.name(self.ns.bind_live(place, node.id, node.id))

    def kept_as_written(self, tree):
        """A copy of ``tree`` (an assert, an f-string) with its free names bound like every other's."""
        tree = compat.clone(tree)
        inner = {n.id for n in compat.walk(tree) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load)}
        for node in compat.walk(tree):
            if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id not in inner:
                node.id = self.load_name(node).id
        return tree

    def atomize(self, expr):
        if isinstance(expr, gast.Name):
            return self.load_name(expr)
        if compat.is_literal(expr):
            return compat.clone(expr)
        if isinstance(expr, gast.Attribute) and (obj := self.static(expr)) is not MISSING and not held_data(obj):
            return self.static_ref(expr)
        temp = self.temp()
        self.assign(temp, expr)
        return compat.name(temp)

    def static(self, expr):
        return self.src.resolve_expr(expr, self.locals)

    def static_ref(self, expr):
        """``np.pi`` or ``np.linalg.norm`` with its root name bound."""
        if isinstance(expr, gast.Name):
            return self.load_name(expr)
        self.refuse_unseen(expr, self.static(expr))
        return compat.attr(self.static_ref(expr.value), expr.attr)

    def refuse_unseen(self, node, obj):
        """``exec``, ``eval``, ``globals()``, ``vars()``, ``sys.modules``: doors to objects (and writes into them)
        that no name in the function shows, so the analysis cannot follow them."""
        why = numpy_writes.unseen(obj)
        if why is not None:
            raise self.error(node, f"{why}, so astgrad cannot tell what the function reads or writes through "
                             "it, and the gradient could miss a change",
                             "Name the objects directly (a global by its name, a value as an argument), or call "
                             "this outside the differentiated function.")

    # -- statements ---------------------------------------------------

    def statement(self, s):
        self.stmt = s if getattr(s, "lineno", None) else self.stmt
        if isinstance(s, gast.Assign):
            value = s.value
            if len(s.targets) > 1:
                atom = self.atomize(value)
                for target in s.targets:
                    self.store(target, atom)
                return
            target = s.targets[0]
            if isinstance(target, gast.Name) and isinstance(value, gast.Lambda):
                self.lambdas[target.id] = defined_lambda(self, target.id, value)
                return
            self.store(target, value)
        elif isinstance(s, gast.AugAssign):
            load = compat.clone(s.target)
            for n in gast.walk(load):
                if hasattr(n, "ctx"):
                    n.ctx = gast.Load()
            value = compat.make("BinOp", left=load, op=s.op, right=s.value,
                                lineno=s.lineno, col_offset=s.col_offset)
            if isinstance(s.target, gast.Name) and s.target.id not in self.sequences:
                self.augmented_name(s, value)
            elif isinstance(s.target, gast.Subscript) and _root(s.target).id in self.locals:
                self.store(s.target, self.augmented_item(s, value))
            else:
                self.store(s.target, value)
            if isinstance(s.target, gast.Subscript):
                setattr(s.target, AUGMENTED_ITEM, True)
            if isinstance(s.target, gast.Name):  # numpy's x += y writes into x's memory
                x, sym = s.target.id, _SYMBOLS.get(type(s.op), "?")
                right = compat.to_source(s.value).strip()
                if isinstance(s.value, gast.Constant):
                    right = right.strip("()")
                self.out[-1].inplace = (f"{x} {sym}= ...", f"{x} = {x} {sym} {right}")
                self.out[-1].augmented = True
        elif isinstance(s, gast.AnnAssign):
            if s.value is not None:
                self.store(s.target, s.value)
        elif isinstance(s, gast.Expr):
            self.expression_statement(s)
        elif isinstance(s, gast.If) and self.never_saved(s.test) is not None:
            self.out += self.block(s.body if self.never_saved(s.test) else s.orelse)
        elif isinstance(s, gast.If):
            test = self.test_name(s.test, s.body + s.orelse)
            self.out.append(If(test, self.block(s.body), self.block(s.orelse),
                               self.src.user_line(s), self.src.line_text(s)))
        elif isinstance(s, gast.For):
            self.for_loop(s)
        elif isinstance(s, gast.While):
            self.while_loop(s)
        elif isinstance(s, gast.Break):
            self.out.append(Break())
        elif isinstance(s, gast.Pass):
            pass
        elif isinstance(s, (gast.Assert, gast.Raise)):  # they run in the primal; a raise ends the call
            self.out.append(Raw(self.kept_as_written(s), self.src.user_line(s), self.src.line_text(s)))
        elif isinstance(s, gast.With):
            self.with_block(s)
        else:
            raise self.error(s, f"{type(s).__name__} statements are not supported",
                             "Rewrite it with assignments, if, for and while.")

    def augmented_name(self, s, value):
        """``x op= v``: ``t = x op v``, then ``x = in_place(t, array_kind(x), op)``, which keeps an array's dtype
        and shape (or raises numpy's casting or broadcasting error) and rebinds anything else to ``t``."""
        kind = self.array_kind(self.load_name(compat.name(s.target.id)))
        value.right = self.atomize(s.value)
        args = [self.atomize(value), kind, compat.const(_SYMBOLS[type(s.op)])]
        self.emit([s.target.id], "prim", compat.call(self.ns.ref(runtime.in_place), compat.clone(args)), s,
                  runtime.in_place, args)

    def augmented_item(self, s, value):
        """``a[i] op= v``: numpy computes ``a[i] op v`` into ``a[i]`` itself where that is an array (a slice, a
        mask), which keeps its dtype and shape, and stores a new number otherwise: ``in_place`` of the item."""
        value.left = self.atomize(value.left)
        kind = self.array_kind(value.left)
        value.right = self.atomize(value.right)
        args = [self.atomize(value), kind, compat.const(_SYMBOLS[type(s.op)])]
        kept = self.temp()
        self.emit([kept], "prim", compat.call(self.ns.ref(runtime.in_place), compat.clone(args)), s,
                  runtime.in_place, args)
        return compat.name(kept)

    def array_kind(self, atom):
        """A temporary holding ``array_kind(atom)``, read before ``atom`` is written (no gradient: a shape and dtype)."""
        kind = self.temp()
        self.emit([kind], "nondiff", compat.call(self.ns.ref(runtime.array_kind), [compat.clone(atom)]), None,
                  runtime.array_kind, [compat.clone(atom)])
        return compat.name(kind)

    def test_name(self, test, body):
        """An atom name for a branch condition not reassigned inside ``body``."""
        atom = self.atomize(test)
        assigned = {n.id for st in body for n in compat.walk(st)
                    if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if isinstance(atom, gast.Name) and atom.id not in assigned and (
                atom.id in self.locals or atom.id in self.temps):
            return atom.id
        temp = self.temp()
        self.emit([temp], "nondiff", atom, test)
        return temp

    def store(self, target, value, outside=True):
        """``target = value``; ``outside``: a write into a global's object runs as written (``store_outside``),
        else it is the write into ``target`` that aliasing checks (``x.sort()`` on a global: refused)."""
        if isinstance(target, gast.Name):
            self.assign(target.id, value)
        elif isinstance(target, (gast.Tuple, gast.List)) and not all(isinstance(e, gast.Name) for e in target.elts):
            self.store_each(target.elts, value, outside)
        elif isinstance(target, (gast.Tuple, gast.List)):
            names = [e.id for e in target.elts]
            if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(names):
                atoms = [self.atomize(e) for e in value.elts]
                moved = []
                for a in atoms:  # a, b = b, a: read every value before writing any
                    if isinstance(a, gast.Name) and a.id in names:
                        temp = self.temp()
                        self.emit([temp], "copy", a, args=[a])
                        a = compat.name(temp)
                    moved.append(a)
                for name, a, e in zip(names, moved, value.elts):
                    if isinstance(a, gast.Name) and a.id in self.temps and not isinstance(e, gast.Name):
                        self.emit([name], "copy", a, e, args=[a])  # e's own new value: aliasing sees it
                        if a.id in self.sequences:
                            self.sequences.add(name)
                    else:
                        self.assign(name, a)
            else:
                atom = self.atomize(value)
                self.emit(names, "unpack", atom, value, args=[atom])
        elif outside and isinstance(target, (gast.Subscript, gast.Attribute)) and _root(target).id not in self.locals:
            self.store_outside(target, value)
        elif outside and isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name):
            self.store_attribute(target, value)
        elif isinstance(target, gast.Subscript) and isinstance(target.value, gast.Subscript):
            self.store_through(target, value)
        elif isinstance(target, gast.Subscript):
            base = self.load_name(target.value)
            index, index_arg = self.index(target.slice)
            item = self.atomize(value)
            setitem = runtime.put if base.id in self.sequences else rules.setitem  # a dict: in place
            expr = compat.call(self.ns.ref(setitem), [base, index_arg, item])
            self.emit([target.value.id], "prim", expr, target, rules.setitem, [base, index_arg, item])
            self.out[-1].inplace = (f"{target.value.id}[...] = ...", "")
        else:
            raise self.error(target, "unsupported assignment target")

    def store_each(self, targets, value, outside):
        """``h[:, t, :], c = value``: every value read first (into fresh names), then each target assigned
        alone, left to right, as Python assigns them (``i, x[i] = ...`` writes ``x`` at the new ``i``)."""
        temps = [self.temp() for _ in targets]
        if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(targets):
            for temp, item in zip(temps, value.elts):
                self.assign(temp, item)
        else:
            atom = self.atomize(value)
            self.emit(temps, "unpack", atom, value, args=[atom])
        for target, temp in zip(targets, temps):
            self.store(target, compat.name(temp), outside)

    def store_outside(self, target, value):
        """``config["lr"] = 0.1``, ``model.steps = n``: a write into a global's (or closure's) object, run as
        written in the primal.  The adjoint cannot see it, so it is refused (analyse) if the value or an
        index depends on a ``wrt`` argument: read back later, it would count as a constant."""
        item = self.atomize(value)
        root, shown, node = _root(target).id, compat.to_source(target).strip(), target
        # into a dict or list, or an attribute of anything but an array: the adjoint may read an array's values
        items = self.atomize(target.value)
        self.out.append(self.checked(checks.written_outside, items, compat.to_source(target.value).strip(),
                                     target.attr if isinstance(target, gast.Attribute) else False))
        target = compat.clone(target)
        target.value = items
        if isinstance(target, gast.Subscript):
            target.slice = self.kept_as_written(target.slice)
        stmt = compat.make("Assign", targets=[target], value=item, type_comment=None)
        guard = (node, f"{shown} = ... stores a value that depends on the "
                 f"differentiated arguments into {root}, which the function does not own; astgrad cannot "
                 "follow a gradient through it", f"Keep the value in a local name (has_aux=True returns it), or "
                 f"copy the object into one first, {root.lower()}_copy = {root}.copy(), and write into the copy.")
        self.out.append(Raw(stmt, self.src.user_line(self.stmt), self.src.line_text(self.stmt), guard))

    def store_attribute(self, target, value):
        """``layer.running_mean = v`` on a parameter's object: run in the primal as written (through
        ``put_attribute``, which refuses what it cannot run once a call); ``front/caller_state`` checks that
        nothing reads it back, or refuses it."""
        item = self.atomize(value)
        obj, shown = target.value.id, compat.to_source(target).strip()
        line, text = self.src.user_line(self.stmt), self.src.line_text(self.stmt)
        call = compat.call(compat.name(self.ns.helper(caller_state.put_attribute)),
                           [compat.name(obj), compat.const(target.attr), item, compat.const(obj),
                            compat.const(f"{shown} = ...")])
        stmt = compat.expr_stmt(call)
        setattr(stmt, ORIGIN, (self.src.filename, line, text, False))
        self.out.append(Raw(stmt, line, text, kept=(obj, target.attr, target)))

    def checked(self, helper, *args):
        """``helper(*args)``, a check in the primal; an error it raises names the user's line."""
        stmt = compat.expr_stmt(compat.call(compat.name(self.ns.helper(helper)),
                                            [a if isinstance(a, gast.AST) else compat.const(a) for a in args]))
        line, text = self.src.user_line(self.stmt), self.src.line_text(self.stmt)
        setattr(stmt, ORIGIN, (self.src.filename, line, text, False))
        return Raw(stmt, line, text)

    def store_through(self, target, value):
        """``a[i][j] = v`` as ``t = a[i]``, ``t[j] = v``, ``a[i] = t``, which is Python's write when ``a[i]``
        is the object ``a`` holds (an item of a list or dict, a view of an array): a check after the read
        refuses anything else when it runs.  Each write copies, so the write into ``a`` (``through``) is
        checked as any item assignment on a name is, and ``aliasing`` proves no other name sees ``a[i]``."""
        item = self.atomize(value)
        inner = target.value
        base = self.atomize(inner.value)
        index, index_arg = self.index(inner.slice)
        held = self.temp()
        read = compat.make("Subscript", value=base, slice=index, ctx=gast.Load())
        self.emit([held], "prim", read, inner, rules.getitem, [base, index_arg])
        self.out.append(self.checked(checks.written_through, compat.clone(base), compat.name(held),
                                     compat.to_source(inner).strip()))
        index, index_arg = self.index(target.slice)
        written = self.temp()
        expr = compat.call(self.ns.ref(rules.setitem), [compat.name(held), index_arg, item])
        self.emit([written], "prim", expr, target, rules.setitem, [compat.name(held), index_arg, item])
        self.store(inner, compat.name(written))
        self.out[-1].through = True
        self.out[-1].inplace = (f"{compat.to_source(target).strip()} = ...", "")

    def expression_statement(self, s):
        value = s.value
        if isinstance(value, gast.Constant):
            return
        if isinstance(value, gast.Call) and isinstance(value.func, gast.Attribute) \
                and value.func.attr == "append" and isinstance(value.func.value, gast.Name) \
                and value.func.value.id in self.locals and len(value.args) == 1:
            lst = value.func.value.id
            item = self.atomize(value.args[0])
            self.sequences.add(lst)
            if lst == self.forward_stack:  # a push: the forward sweep pushes the tangent beside it
                self.refuse_stack_without_tangent(value)
                expr = compat.call(compat.name(self.ns.helper(sequences.grow)), [compat.name(lst), item])
                saved, self.stop = self.stop, False  # pushed even under no_grad: the tangent stack keeps in step
                self.emit([lst], "prim", expr, value, sequences.grow, [compat.name(lst), item])
                self.stop = saved
                return
            # the function itself: the primitive's wrapper would look for Tensors in every item
            expr = compat.call(compat.name(self.ns.helper(rules.raw(sequences.append))), [compat.name(lst), item])
            self.emit([lst], "prim", expr, value, sequences.append, [compat.name(lst), item])
            if lst not in self.temps:  # Python changes the list other names see (a comprehension's has none)
                self.out[-1].inplace = (f"{lst}.append(...)", "")
            return
        if isinstance(value, gast.Call) and write_call(self, None, value):
            return
        if isinstance(value, gast.Call):
            atom = self.atomize(value)
            op = self.out[-1]
            self.out[-1] = _as_statement(op, atom, self.src, s)
            if op.kind == "opaque" and isinstance(self.out[-1], Raw) and not _a_check(self.static(value.func)):
                self.may_write(op, value)
            return
        if isinstance(value, (gast.Yield, gast.YieldFrom, gast.Await, gast.NamedExpr)):
            raise self.error(s, "expression statements other than calls are not supported",
                             "Assign the value to a name or remove the statement.")
        # evaluated for what it raises, as Python does (x[5] on a short x), its value read by nothing: the code
        # a gradient generates keeps such statements where a value it computed went unused (unused.py)
        self.atomize(value)

    def never_saved(self, test):
        """vmap of generated code: whether ``test``, ``saved is None`` of a ``pop_numbers`` batching reads as None
        (writes.py), holds; None for any other test."""
        if self.batching and isinstance(test, gast.Compare) and len(test.ops) == 1 \
                and isinstance(test.ops[0], (gast.Is, gast.IsNot)) and isinstance(test.left, gast.Name) \
                and test.left.id in self.unsaved and isinstance(test.comparators[0], gast.Constant) \
                and test.comparators[0].value is None:
            return isinstance(test.ops[0], gast.Is)
        return None

    def refuse_stack_without_tangent(self, node):
        if self.stack_without_tangent:
            raise self.error(node, f"{self.forward_stack} is the stack of generated code, given here without its "
                             "tangent stack: forward mode could not keep the tangents in step with the values",
                             "Differentiate the function with the tape (astgrad.torch.autograd.functional).")

    def may_write(self, op, call):
        """A call without a rule kept for its effect may write into the arrays it is given and every
        array they share memory with: those then carry no gradient, or the function is refused
        (analyse raises ``op.error``)."""
        what = compat.to_source(call).strip()
        names, work = set(), list(atom_names(op.expr))
        while work:
            name = work.pop()
            if name in names or name not in self.locals | self.temps:
                continue
            names.add(name)
            work += self.shared.get(name, ())
        for name in sorted(names):
            start = len(self.out)
            self.emit([name], "opaque", compat.name(name), call, args=[compat.name(name)], error=(
                f"{what} is called for its effect and has no gradient rule, so it may change {name} in "
                "place where astgrad cannot see it",
                "Call it outside the differentiated function (astgrad's generated code shares memory "
                "where the function copies, so a copy does not help)."))
            for made in self.out[start:]:  # a real write in place: aliasing checks its operands
                made.inplace = (what, None)

    def with_block(self, s):
        ctx = s.items[0].context_expr
        obj = self.static(ctx.func) if isinstance(ctx, gast.Call) else MISSING
        if getattr(obj, "__name__", "") != "no_grad" or ctx.args or ctx.keywords or len(s.items) > 1:
            self.managed_block(s)
            return
        saved, self.stop = self.stop, True
        for st in s.body:
            self.statement(st)
        self.stop = saved

    def managed_block(self, s):
        """``with m1, m2: body`` as ``entered(m1)``, ``entered(m2)``, the body, ``left()``, ``left()``: each
        manager is made, entered and exited where Python does (front/syntax.py refused jumps out of the block and
        managers that swallow exceptions).  The adjoint of the body runs under an ``np.errstate`` of constant
        settings entered again (contexts.py); a manager made from a differentiated value is refused."""
        line, text = self.src.user_line(s), self.src.line_text(s)
        enter, leave = self.ns.bind(contexts.entered, "entered"), self.ns.bind(contexts.left, "left")
        opened = []
        for item in s.items:
            made = self.manager(item.context_expr)
            again = None
            if _errstate_of_constants(item.context_expr, self.static):
                again = compat.expr_stmt(compat.call(compat.name(enter), [self.kept_as_written(item.context_expr)]))
            stmt = compat.expr_stmt(compat.call(compat.name(enter), [made]))
            setattr(stmt, ORIGIN, (self.src.filename, line, text, False))
            exit_again = compat.expr_stmt(compat.call(compat.name(leave), [])) if again is not None else None
            self.out.append(Raw(stmt, line, text, adjoint=exit_again))
            opened.append(again)
        for st in s.body:
            self.statement(st)
        for again in reversed(opened):
            stmt = compat.expr_stmt(compat.call(compat.name(leave), []))
            setattr(stmt, ORIGIN, (self.src.filename, line, text, False))
            self.out.append(Raw(stmt, line, text, adjoint=again))

    def manager(self, expr):
        """The atom of a ``with`` statement's manager, one of ``RUN_AS_WRITTEN`` made in the statement; refused
        if it depends on a wrt argument.  Any other manager's ``__enter__`` or ``__exit__`` may change what the
        adjoint reads after the block (a global, an array, a class attribute), which astgrad cannot follow."""
        func = self.static(expr.func) if isinstance(expr, gast.Call) else MISSING
        if not any(func is m for m in RUN_AS_WRITTEN):
            shown = compat.to_source(expr).strip()
            raise self.error(expr, f"`with {shown}:` enters a context manager astgrad does not know; its "
                             "__enter__ and __exit__ may change what the gradient reads after the block (a global, "
                             "an array, an attribute), which astgrad cannot follow",
                             "Enter it outside the differentiated function. Inside, np.errstate(...), "
                             "warnings.catch_warnings(), np.printoptions(...) and contextlib.nullcontext() "
                             "run as written.")
        args = [self.atomize(a) for a in expr.args]
        kwargs = {kw.arg: self.atomize(kw.value) for kw in expr.keywords}
        temp = self.temp()
        self.emit([temp], "opaque", compat.call(self.static_ref(expr.func), args, kwargs), expr, fn=func, args=args,
                  kwargs=kwargs, error=("a context manager made from a value that depends on the differentiated "
                                        "arguments has no gradient rule",
                                        "Make the manager from constants, or use it outside the function."))
        return compat.name(temp)

    # -- loops ----------------------------------------------------------

    def for_loop(self, s):
        if not isinstance(s.target, (gast.Name, gast.Tuple)):
            raise self.error(s.target, "for loops must assign a name or a tuple of names")
        body_assigned = {n.id for st in s.body for n in compat.walk(st)
                         if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        every = snapshots = None
        if isinstance(s.iter, gast.Call) and self.static(s.iter.func) is checkpoints.checkpointed:
            it, every, snapshots = self.checkpointed_iterable(s.iter)
        else:
            s = dict_view_loop(self, s, body_assigned) or s  # for k, v in d.items(): by key
            it = s.iter
        head: list = []
        whole = None
        fn = self.static(it.func) if isinstance(it, gast.Call) else MISSING
        line, text = self.src.user_line(s), self.src.line_text(s)
        if fn is range and isinstance(s.target, gast.Name) and not it.keywords:
            args = [self.atomize(a) for a in it.args]
            iter_expr = compat.call(compat.name(self.ns.bind(range, "range")), args)
            if any(n in body_assigned for n in atom_names(iter_expr)):
                temp = self.temp()
                self.emit([temp], "nondiff", iter_expr, it)
                iter_expr = compat.name(temp)
            target = self.loop_index(s, s.target, body_assigned, head)
        elif self.forward_stack is not None and fn is reversed and isinstance(s.target, gast.Name) \
                and len(it.args) == 1 and not it.keywords:
            # generated code's reverse loop over steps (range(n), range(n)[:count]), kept as it is: forward mode
            # runs it forwards, and its steps are numbers without tangents
            saved, self.stop = self.stop, True
            steps = self.atomize(it.args[0])
            self.stop = saved
            iter_expr = compat.name(self.temp())
            self.emit([iter_expr.id], "nondiff", compat.call(compat.name(self.ns.bind(reversed, "reversed")),
                                                             [steps]), it)
            target = s.target.id
        else:
            if fn is enumerate and isinstance(s.target, gast.Tuple) and len(s.target.elts) == 2 \
                    and len(it.args) == 1:
                seqs = [self.atomize(it.args[0])]
                target = self.loop_index(s, s.target.elts[0], body_assigned, head)
                items = [s.target.elts[1]]
            elif fn is zip and isinstance(s.target, gast.Tuple) and len(s.target.elts) == len(it.args):
                seqs = [self.atomize(a) for a in it.args]
                target = self.temp_local("i")
                items = list(s.target.elts)
            elif fn is zip and isinstance(s.target, gast.Name) and it.args and not it.keywords \
                    and not any(isinstance(a, gast.Starred) for a in it.args):
                # for pair in zip(a, b): each sequence indexed, the tuple of the items bound to the target
                seqs = [self.atomize(a) for a in it.args]
                target = self.temp_local("i")
                names = [self.temp_local("item") for _ in it.args]
                items = [compat.name(n, True) for n in names]
                whole = compat.make("Assign", targets=[s.target], lineno=s.lineno, col_offset=s.col_offset,
                                    value=compat.tuple_([compat.name(n) for n in names]))
            else:
                seqs = [self.atomize(it)]
                target = self.temp_local("i")
                items = [s.target]
            seqs = [self.pinned(a, body_assigned) for a in seqs]
            lens = []
            for a in seqs:
                temp = self.temp()
                self.emit([temp], "nondiff", compat.call(compat.name(self.ns.bind(len, "len")), [a]), it)
                lens.append(compat.name(temp))
            count = lens[0]
            if len(lens) > 1:
                temp = self.temp()
                self.emit([temp], "nondiff", compat.call(compat.name(self.ns.bind(min, "min")), lens), it)
                count = compat.name(temp)
            iter_expr = compat.call(compat.name(self.ns.bind(range, "range")), [count])
            for seq, item in zip(seqs, items):
                sub = compat.make("Subscript", value=seq, slice=compat.name(target), ctx=gast.Load(),
                                  lineno=s.lineno, col_offset=s.col_offset)
                setattr(sub, ITERATED, True)  # a dict iterates its keys: containers checks
                head.append(compat.make("Assign", targets=[item], value=sub, lineno=s.lineno,
                                        col_offset=s.col_offset))
            if whole is not None:
                head.append(whole)
        saved = self.stmt
        body = self.block(head + list(s.body))
        self.stmt = saved
        if every is not None and breaks(body):
            raise self.error(s, "a checkpointed loop cannot break: its segments are cut before it runs",
                             "Drop the break (compute a mask and use np.where), or drop astgrad.checkpointed.")
        self.out.append(For(target, iter_expr, body, line, text, every=every, snapshots=snapshots))

    def checkpointed_iterable(self, call):
        """``astgrad.checkpointed(iterable, every, snapshots)``: the iterable's expression, the atom of ``every``
        and that of ``snapshots`` (None when not given: segments of equal length)."""
        names = ("iterable", "every", "snapshots")
        given = dict(zip(names, call.args))
        given.update((kw.arg, kw.value) for kw in call.keywords)
        if len(call.args) > 3 or set(given) - set(names) or "iterable" not in given \
                or any(isinstance(a, gast.Starred) for a in call.args):
            raise self.error(call, "astgrad.checkpointed takes the iterable, every= and snapshots=",
                             "Write `for t in astgrad.checkpointed(range(n)):`, `...(range(n), every=k)` or "
                             "`...(range(n), snapshots=s)`.")
        every, snapshots = given.get("every"), given.get("snapshots")
        return (given["iterable"], self.atomize(every) if every is not None else compat.const(None),
                self.atomize(snapshots) if snapshots is not None else None)

    def loop_index(self, s, name, assigned, head):
        """The loop's own index variable: the user's name, or a fresh one bound to it first in the body
        when the body rebinds it (``i = ...``, an inner ``for i``), as the reverse loop rebinds only its own."""
        if name.id not in assigned:
            return name.id
        index = self.temp_local(name.id)
        head.append(compat.make("Assign", targets=[name], value=compat.name(index), lineno=s.lineno,
                                col_offset=s.col_offset))
        return index

    def pinned(self, atom, assigned):
        """An atom whose value the loop body cannot change."""
        if isinstance(atom, gast.Name) and atom.id in assigned:
            temp = self.temp()
            self.emit([temp], "copy", atom, args=[atom])
            return compat.name(temp)
        return atom

    def while_loop(self, s):
        cond = self.block_expr(s.test)
        test = cond[1]
        body = self.block(s.body)
        again = self.block_expr(s.test, reuse=test)
        self.out.append(While(cond[0], test, body + again[0], self.src.user_line(s),
                              self.src.line_text(s)))

    def block_expr(self, expr, reuse=None):
        saved, self.out = self.out, []
        atom = self.atomize(expr)
        name = reuse or self.temp()
        self.emit([name], "nondiff", atom, expr)
        stmts, self.out = self.out, saved
        return stmts, name

    # -- expressions ------------------------------------------------------

    def index(self, node):
        """(index for the primal, index as a rule argument)."""
        if isinstance(node, gast.Slice):
            parts = {k: (None if getattr(node, k) is None else self.atomize(getattr(node, k)))
                     for k in ("lower", "upper", "step")}
            idx = compat.make("Slice", **parts)
        elif isinstance(node, gast.Tuple):
            idx = compat.tuple_([self.index(e)[0] for e in node.elts])
        else:
            idx = self.atomize(node)
        if any(isinstance(n, gast.Slice) for n in gast.walk(idx)):
            arg = compat.make("Subscript", value=compat.attr(compat.name(self.ns.bind(np, "np")), "s_"),
                              slice=compat.clone(idx), ctx=gast.Load())
        else:
            arg = compat.clone(idx)
        return idx, arg

    def assign(self, target: str, expr):
        assign_expression(self, target, expr)


def _root(target):
    """The name at the root of ``a[i].b[j]``."""
    while isinstance(target, (gast.Subscript, gast.Attribute)):
        target = target.value
    return target


_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**", gast.MatMult: "@",
            gast.FloorDiv: "//", gast.Mod: "%", gast.BitOr: "|", gast.BitAnd: "&", gast.BitXor: "^",
            gast.LShift: "<<", gast.RShift: ">>"}


def _as_statement(op, atom, src, s):
    """A call kept only for its effect (print): emitted as is, no adjoint."""
    if op.kind in ("nondiff", "opaque") and isinstance(atom, gast.Name) and op.targets == [atom.id]:
        return Raw(compat.expr_stmt(op.expr), src.user_line(s), src.line_text(s), call=op)
    return op


#: managers a ``with`` block inside a differentiated function may enter: each changes only how numpy
#: reports floating-point errors, how warnings are filtered, or how arrays print
RUN_AS_WRITTEN = (np.errstate, warnings.catch_warnings, np.printoptions, contextlib.nullcontext)


def _errstate_of_constants(expr, static) -> bool:
    """``np.errstate(over="ignore")``: settings written as constants, which the adjoint can enter again."""
    return isinstance(expr, gast.Call) and static(expr.func) is np.errstate and not expr.args and all(
        kw.arg is not None and isinstance(kw.value, gast.Constant) for kw in expr.keywords)


def _a_check(fn) -> bool:
    """Whether ``fn`` is one of the run-time checks generated code calls (``written_by_call``...): it reads the
    values it is given, never writes them (generated code transformed again: a gradient batched by vmap)."""
    return getattr(fn, "__module__", None) == checks.__name__
