"""Stencil steps as one loop: rolled reads inside elementwise expressions, gradients added up in one sum.

Four rewrites of the Numba text, after ``fuse`` wrote single-use temporaries
into their readers:

* **Chains of additions into one name.**  The reverse sweep adds each
  term of a gradient on a line of its own (``du = du + 2 * g``, three lines
  later ``du = du + rolled(dt7, back, 1)``): each line is a loop and a new
  array.  ``d = d + A`` followed later in the same block by ``d = d + B``
  (or ``-``) becomes ``d = d + A + B`` at the second line: the same
  operations in the same order, so the same numbers, where nothing between
  the two reads or binds ``d``, binds a name ``A`` reads, writes an item or
  an attribute, adds into an array in place or changes a list ``A`` reads,
  and ``A`` calls nothing but ufuncs and the pure helpers named below.
* **Rolled reads in a loop.**  An elementwise expression (arithmetic and
  the ufuncs below) that reads ``rolled(x, s, k)`` (``np.roll``) becomes
  ``elementwise('_0 + rolled(_1, _2, 1)', du, dt7, back)``: compiled, one
  loop over the result that reads each rolled operand at its shifted index
  (no array for the roll, nor for each step of the expression).  That loop
  runs only where the kinds allow it (float64 arrays of one rank, real
  numbers; every operation reads an array, so that no division of numbers
  moves from Python's rules to numpy's) and, at run time, every array has
  the result's shape (or broadcasts, read at index 0 along an axis of
  length 1); otherwise the expression is computed as written.
* **A parameter's gradient summed in the loop.**  ``unbroadcast(E, shape(p))``
  of an elementwise ``E`` and a parameter ``p`` becomes
  ``elementwise_sum('<E>', shape(p), ...)``: where ``p`` is a number, the same loop
  adds the elements up instead of writing an array for ``np.sum``.
* **A value added at a slice in the loop.**  ``d = add_at(t, E, shape, index)``
  (and ``added_at``, into a copy) of an elementwise ``E`` becomes
  ``_loop1, _done1 = add_elementwise('<E>', t, shape, index, ...)``: each
  element of ``E`` added into ``t[index]`` as it is computed, where ``t`` is
  a 1-d float64 array of ``shape``, every array ``E`` reads has the slice's
  length, and no such array shares memory with ``t`` (a view of ``t`` could
  read an element already added to); otherwise ``_done1`` is False, ``t``
  untouched, and the statement as written runs (``if _done1: d = _loop1``
  ``else: d = add_at(t, E, shape, index)``).
* **An unbroadcast that does nothing, inside an expression.**  ``d = E`` of an
  elementwise ``E`` reading ``unbroadcast(F, shape(x))`` becomes
  ``_loop1, _done1 = elementwise_tried('<E>', ...)`` and the same ``if``:
  its loop runs where every array has one shape and every such shape is that
  one (``unbroadcast`` then returns ``F``), else the statement as written.
  Only where some ``F`` is an expression: ``unbroadcast`` of a name gives
  the array itself, and the line as written is then the same one loop
  (``dy + unbroadcast(t33, shape(y))``), with no helper to compile.

* **np.where inside the loop.**  ``chosen(c, A, B)`` (``np.where``) of a
  boolean array ``c`` read only as a condition, a branch reading an array, is
  part of the elementwise expression: the loop computes the branch chosen at
  each element (``(A if c[i] else B)``), which is what numpy's ``where`` keeps;
  the other branch's value, NaN or not, is never read.  S14's forward step
  and the four ``np.where`` gradients of its reverse step.  Such an
  expression, the value of a line ``d = E`` or the value a line writes
  (``d = setitem(u, i, E)``, ``setitem_into``), is tried as an unbroadcast's
  is (below: ``elementwise_tried``, its loop where every array has one
  shape, else the line as written); added at a slice, as above.
* **Quotients of numbers.**  A part of an expression of numbers only with a
  division (``nu * dt / dx ** 2`` read as ``_8 / _9``) is computed once
  before the loop, each divisor tested first: zero raises ZeroDivisionError,
  as the caller's line does (Numba divides numbers by Python's rules there).

Operands the transformer declared ``t = None`` (a loop joins the names to
their values: Numba types them "None or an array", which the loops refuse;
the reverse sweep reads them back from its stack, never None there) are
passed as ``saved_value(t)``, unwrapped in the caller: every helper above
gets the array.  A ``best = None`` the user wrote is left alone (the code
may read its None).

The statement as written stays in the caller (these two rewrites take
statements whose operands are names, numbers, shapes and slices, read again
there): compiled inside the helper, as it first was, its calls (``add_at``,
``unbroadcast``) were compiled a second time, for the helper's flags, where
the caller's own calls of the same kinds already were (Numba keys a
helper's compiled code by its caller's flags); S1's, S3's and S14's first
compile took about a second more.

Long: the rewrites above share one model of an elementwise expression (its
template, operands and kinds), the proof of when its loop gives numpy's
numbers, and the loop text written from it; each rewrite is a few lines
over that model, and split apart they would each import all of it.
"""

from __future__ import annotations

import ast

import numpy as np

from ...rules import _extra, _support
from ...transform import runtime
from ...transform.ir import compat
from ...transform.ir.compat import gast
from ...transform.runtime.origins import ORIGIN
from . import exponential, fuse, shaping
from .reductions import _constant
from .saved import saved_value

#: the ufuncs a loop computes per element (each maps a float64 to a float64 as numpy's does)
_UFUNCS = {"exp": np.exp, "log": np.log, "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sqrt": np.sqrt,
           "square": np.square, "negative": np.negative}
_UNBROADCASTS = (runtime.unbroadcast, _support.unbroadcast)
_OPERATIONS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)


def elementwise(template, *operands):
    """The value of ``template`` (an expression of ``_0``, ``_1``, ... and ``rolled``) on ``operands``."""
    return _evaluate(template, operands)


def elementwise_sum(template, to, *operands):
    """``unbroadcast(elementwise(template, *operands), to)``: compiled, a loop adding up the elements where
    ``to`` is the shape of a number (no array for the expression)."""
    return runtime.unbroadcast(_evaluate(template, operands), to)


def elementwise_tried(template, *operands):
    """``(elementwise(template, *operands), True)``; compiled, ``done`` is False (and the value unread) where
    the loop's proof failed at run time: the caller then computes the expression as written."""
    return _evaluate(template, operands), True


def elementwise_proven(template, *operands):
    """``elementwise_tried``'s value where its arrays are proven one shape (``proven_loops``): compiled, the
    loop alone, no line as written beside it in the caller (an error where the shapes differ after all)."""
    return _evaluate(template, operands)


def add_at_proven(total, g, shape, index):
    """``add_at`` where ``total`` is proven of the shape ``shape`` (``proven_adds``): compiled, no
    ``total + scatter(g, shape, index)`` beside the add for the case it is not (an error where it is not after all)."""
    return runtime.add_at(total, g, shape, index)


def add_elementwise(template, total, shape, index, *operands):
    """``(add_at(total, elementwise(template, *operands), shape, index), True)``: compiled, one loop adding
    each element into ``total[index]`` (no array for the value) where that is proven to give the same
    numbers, else ``(total, False)``, ``total`` unchanged, for the caller to add as written."""
    return runtime.add_at(total, _evaluate(template, operands), shape, index), True


def added_elementwise(template, total, shape, index, *operands):
    """``add_elementwise`` into a copy of ``total`` (``added_at``'s)."""
    return runtime.added_at(total, _evaluate(template, operands), shape, index), True


def as_written(template, *operands):
    """``elementwise`` computed as the expression is written (compiled: Python's rules for numbers)."""
    return _evaluate(template, operands)


def _evaluate(template, operands):
    names = {f"_{k}": v for k, v in enumerate(operands)}
    return eval(compile(template, "<astgrad elementwise>", "eval"),
                {"np": np, "rolled": shaping.rolled, "unbroadcast": runtime.unbroadcast, "chosen": shaping.chosen,
                 **names})


# ------------------------------------------------------------------ the rewrites of the text

def stencil_loops(fn_def, namespace) -> None:
    """Chains of additions merged, then expressions reading a roll written as ``elementwise`` calls, then
    ``np.exp`` left outside them as ``exp_of`` (exponential.py: a loop the compiler vectorises)."""
    _merge_blocks(fn_def, namespace)
    _Loops(namespace, {a.id for a in fn_def.args.args}, _declared_none(fn_def)).visit(fn_def)
    for node in compat.walk(fn_def):
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], gast.Starred) and fuse._callee(node.func, namespace) is np.exp:
            node.func = compat.name(fuse._bound(namespace, exponential.exp_of))


def proven_loops(fn_def, namespace, one_shape) -> None:
    """``elementwise_tried`` whose arrays are proven one shape, without the line as written beside it.

    ``_loop1, _done1 = elementwise_tried('<E>', ...)`` and ``if _done1: d = _loop1`` ``else: <E as written>``
    become ``d = elementwise_proven('<E>', ...)``: the loop's test at run time (every array of the first's
    shape) holds where ``one_shape(names)`` proves the operands' names (each name read through
    ``saved_value`` too) one shape, so the line as written is dead; it was a third of S14's gradient
    text as Numba lowers it, and its ``np.where`` calls three more compiled functions.  Only templates
    without ``unbroadcast`` (whose shape operands the test also compares) and operands that are names and
    numbers; anything else stays as it is.  The compiled loop keeps its test and raises where it fails,
    so a wrong proof is an error, never a wrong number.
    """
    for node in list(compat.walk(fn_def)):
        for field in ("body", "orelse"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], gast.stmt):
                setattr(node, field, _proven_block(stmts, namespace, one_shape))


def proven_adds(fn_def, namespace, one_shape) -> None:
    """``add_at(d, g, shape(x), i)`` as ``add_at_proven(d, g, shape(x), i)`` where ``one_shape([d, x])``.

    ``add_at`` adds into ``d[i]`` where ``d`` has the shape ``shape(x)`` at run time, else computes
    ``d + scatter(g, shape(x), i)``: an array of zeros of that shape, the value written at ``i``, added, a
    helper compiled per kind of index (0.2 s of S14's first call) for a case the proof rules out.
    """
    for node in compat.walk(fn_def):
        if isinstance(node, gast.Call) and len(node.args) == 4 and not node.keywords \
                and fuse._callee(node.func, namespace) is runtime.add_at:
            total, shape = node.args[0], node.args[2]
            if isinstance(total, gast.Name) and isinstance(shape, gast.Call) and len(shape.args) == 1 \
                    and not shape.keywords and fuse._callee(shape.func, namespace) is runtime.shape \
                    and isinstance(shape.args[0], gast.Name) and one_shape([total.id, shape.args[0].id]):
                node.func = compat.name(fuse._bound(namespace, add_at_proven))


def _proven_block(stmts, namespace, one_shape) -> list:
    out, i = [], 0
    while i < len(stmts):
        pair = _tried_pair(stmts, i, namespace)
        if pair is not None:
            call, loop, kept = pair
            names = [_operand_name(o, namespace) for o in call.args[1:]]
            if all(n is not False for n in names) and one_shape([n for n in names if n is not None]):
                call.func = compat.name(fuse._bound(namespace, elementwise_proven))
                for n in compat.walk(kept):
                    if isinstance(n, gast.Call):
                        n.args = [call if isinstance(a, gast.Name) and a.id == loop else a for a in n.args]
                if isinstance(kept.value, gast.Name) and kept.value.id == loop:
                    kept.value = call
                out.append(kept)
                i += 2
                continue
        out.append(stmts[i])
        i += 1
    return out


def _tried_pair(stmts, i, namespace):
    """``(call, loop name, kept statement)`` of ``_tried``'s ``elementwise_tried`` pair at ``i``; else None."""
    first = stmts[i]
    if not (i + 1 < len(stmts) and isinstance(first, gast.Assign) and len(first.targets) == 1
            and isinstance(first.targets[0], gast.Tuple) and len(first.targets[0].elts) == 2
            and all(isinstance(e, gast.Name) for e in first.targets[0].elts)
            and isinstance(first.value, gast.Call) and not first.value.keywords and first.value.args
            and fuse._callee(first.value.func, namespace) is elementwise_tried
            and isinstance(first.value.args[0], gast.Constant) and isinstance(first.value.args[0].value, str)
            and "unbroadcast(" not in first.value.args[0].value):
        return None
    loop, done = (e.id for e in first.targets[0].elts)
    second = stmts[i + 1]
    if not (isinstance(second, gast.If) and isinstance(second.test, gast.Name) and second.test.id == done
            and len(second.body) == 1 and len(second.orelse) == 1 and isinstance(second.body[0], gast.Assign)):
        return None
    reads = [n for n in compat.walk(second.body[0].value) if isinstance(n, gast.Name) and n.id == loop]
    if len(reads) != 1:
        return None
    return first.value, loop, second.body[0]


def _operand_name(node, namespace):
    """The name an operand reads (through ``saved_value``), None for a number, False for anything else."""
    if isinstance(node, gast.Constant) and type(node.value) in (int, float):
        return None
    if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and fuse._callee(node.func, namespace) is saved_value:
        node = node.args[0]
    return node.id if isinstance(node, gast.Name) else False


def _declared_none(fn_def) -> set:
    """The names the transformer declares ``t = None`` (a loop binds them: Numba types them "None or a
    value"); not the user's ``best = None``, whose None the code may read (lower.py's ``_pushes_of_none``)."""
    return {s.targets[0].id for s in compat.walk(fn_def) if fuse._declaration(s) and getattr(s, ORIGIN, None) is None}


def _merge_blocks(node, namespace) -> None:
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(node, field, None)
        if isinstance(stmts, list) and stmts and isinstance(stmts[0], gast.stmt):
            setattr(node, field, _merged(stmts, namespace))
            for stmt in getattr(node, field):
                _merge_blocks(stmt, namespace)


def _added(stmt):
    """``(d, spine)`` of ``d = d + A`` (also ``-``, and ``d = d + A - B``: ``d`` leftmost under sums and
    differences), ``spine`` the operation whose left operand is that ``d``; else None."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
        return None
    spine, node = None, stmt.value
    while isinstance(node, gast.BinOp) and isinstance(node.op, (gast.Add, gast.Sub)):
        spine, node = node, node.left
    if spine is None or not (isinstance(node, gast.Name) and node.id == stmt.targets[0].id):
        return None
    return stmt.targets[0].id, spine


def _merged(stmts, namespace) -> list:
    out = list(stmts)
    i = 0
    while i < len(out):
        first = _added(out[i])
        if first is not None and _pure(out[i].value, namespace):
            at = _next_addition(out, i, first[0], out[i].value, namespace)
            if at is not None:
                _added(out[at])[1].left = out[i].value  # type: ignore[index]  # (d + A) + B: the same order
                del out[i]
                continue
        i += 1
    return out


def _next_addition(stmts, i, d, value, namespace):
    """The position of the next ``d = d + B`` after ``i`` where ``value`` may move; else None."""
    read = {n.id for n in compat.walk(value) if isinstance(n, gast.Name)}
    for at in range(i + 1, len(stmts)):
        stmt = stmts[at]
        names = [n for n in compat.walk(stmt) if isinstance(n, gast.Name)]
        later = _added(stmt)
        if later is not None and later[0] == d:  # d read again only where the sum starts
            return at if sum(n.id == d for n in names) == 2 else None
        if any(n.id == d for n in names):
            return None
        if any(n.id in read and not isinstance(n.ctx, gast.Load) for n in names) \
                or fuse._writes(stmt, namespace) or fuse._changes_in_place(stmt, read, namespace):
            return None
    return None


#: helpers a moved term may call: their value depends on their arguments only, and they change nothing
_PURE = (runtime.unbroadcast, _support.unbroadcast, runtime.shape, fuse.held_shape, shaping.rolled)


def _pure(node, namespace) -> bool:
    """Whether ``node`` reads names and numbers through arithmetic, ufuncs and ``_PURE`` helpers only."""
    if isinstance(node, (gast.Name, gast.Constant)):
        return True
    if isinstance(node, gast.BinOp):
        return _pure(node.left, namespace) and _pure(node.right, namespace)
    if isinstance(node, gast.UnaryOp):
        return _pure(node.operand, namespace)
    if isinstance(node, gast.Call):
        callee = fuse._callee(node.func, namespace)
        return not node.keywords and (isinstance(callee, np.ufunc) or any(callee is p for p in _PURE)) \
            and all(_pure(a, namespace) for a in node.args)
    return False


class _Loops(gast.NodeTransformer):
    """Each largest elementwise expression that reads a roll becomes an ``elementwise`` call."""

    def __init__(self, namespace, parameters, declared=frozenset()):
        self.namespace = namespace
        self.parameters = parameters
        self.declared = declared
        self.count = 0  # the statements whose loop is tried first (each its own names)

    def visit(self, node):
        if isinstance(node, gast.Assign):
            tried = self._tried(node)
            if tried is not None:
                return tried
        operands: list = []
        if isinstance(node, gast.Call) and len(node.args) == 2 and not node.keywords \
                and any(fuse._callee(node.func, self.namespace) is u for u in _UNBROADCASTS) \
                and self._operation(node.args[0]) and self._parameter_shape(node.args[1]):
            # the gradient of a parameter (a number, where the loop runs): a sum of an expression
            template = self._template(node.args[0], operands)
            helper = compat.name(fuse._bound(self.namespace, elementwise_sum))
            return compat.call(helper, [gast.Constant(value=template, kind=None), self.visit(node.args[1])]
                               + self._operands([self.visit(o) for o in operands]))
        if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
                and fuse._callee(node.func, self.namespace) is runtime.summed and self._operation(node.args[0]):
            # summed(E), the gradient of a name proven a number (passes/number_unbroadcasts.py): the same sum
            template = self._template(node.args[0], operands)
            helper = compat.name(fuse._bound(self.namespace, elementwise_sum))
            return compat.call(helper, [gast.Constant(value=template, kind=None), gast.Tuple(elts=[], ctx=gast.Load())]
                               + self._operands([self.visit(o) for o in operands]))
        if isinstance(node, gast.expr) and self._operation(node):
            template = self._template(node, operands)
            if "rolled(" in template:
                helper = compat.name(fuse._bound(self.namespace, elementwise))
                return compat.call(helper, [gast.Constant(value=template, kind=None)]
                                   + self._operands([self.visit(o) for o in operands]))
        return self.generic_visit(node)

    def _tried(self, stmt):
        """``d = add_at(t, E, shape, index)`` (``added_at``) of an elementwise ``E``, or ``d = E`` (also
        ``d = setitem(u, i, E)``, ``setitem_into``) of an elementwise ``E`` reading ``unbroadcast`` or
        ``chosen`` (no roll in either), its operands names, numbers, shapes and slices: the loop tried
        first, the statement as written where it did not run::

            _loop1, _done1 = add_elementwise('<E>', t, shape, index, ...)
            if _done1:
                d = _loop1
            else:
                d = add_at(t, E, shape, index)

        The statement as written is compiled in the gradient's own function, beside its other helpers'
        calls of the same kinds (a helper compiled inside another compiled function is compiled again
        there, for that function's flags: the written path inside the loop's helper doubled its cost);
        None for any other statement."""
        if not (len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
            return None
        value = stmt.value
        operands: list = []
        adding = self._adding(value.func) if isinstance(value, gast.Call) and len(value.args) == 4 \
            and not value.keywords else None
        if adding is not None and self._operation(value.args[1]) and not _integer(value.args[3]):
            # the value added at a slice: each element added as it is computed, no array for the value
            template = self._template(value.args[1], operands)
            leading = [compat.clone(a) for a in (value.args[0], value.args[2], value.args[3])]
        else:
            # an expression reading unbroadcast or np.where, alone or the value written (setitem(u, i, E))
            written = isinstance(value, gast.Call) and len(value.args) == 3 and not value.keywords \
                and fuse._callee(value.func, self.namespace) in (_extra.setitem, runtime.setitem_into) \
                and self._plain(value.args[0]) and self._plain(value.args[1])
            expression = value.args[2] if written else value
            if not self._operation(expression):
                return None
            template = self._template(expression, operands)
            if "unbroadcast(" not in template and "chosen(" not in template:
                return None
            if "chosen(" not in template and all(isinstance(n.args[0], ast.Name)  # type: ignore[attr-defined]
                                                 for n in ast.walk(ast.parse(template)) if _unbroadcast_of(n)):
                return None  # unbroadcast of a name gives the array itself: as written, the same one loop
            adding, leading = elementwise_tried, []
        if "rolled(" in template or not all(self._plain(o) for o in operands + leading):
            return None
        self.count += 1
        loop, done = f"_loop{self.count}", f"_done{self.count}"
        helper = compat.name(fuse._bound(self.namespace, adding))
        tried = compat.assign([loop, done], compat.call(helper, [gast.Constant(value=template, kind=None)]
                                                          + leading + self._operands([compat.clone(o) for o in operands])))
        if adding is elementwise_tried and value is not expression:  # setitem(u, i, _loop1)
            kept = compat.assign(stmt.targets[0].id, compat.call(compat.clone(value.func), [
                compat.clone(value.args[0]), compat.clone(value.args[1]), compat.name(loop)]))
        else:
            kept = compat.assign(stmt.targets[0].id, compat.name(loop))
        return [tried, compat.if_stmt(compat.name(done), [kept], [stmt])]

    def _operands(self, operands) -> list:
        """The operands passed to a loop's helper: a name declared ``t = None`` as ``saved_value(t)`` (Numba
        types it "None or an array" where a loop joins the two, which the loop's kinds refuse; unwrapped
        here, in the caller, where its other reads unwrapped it already)."""
        return [compat.call(compat.name(fuse._bound(self.namespace, saved_value)), [o])
                if isinstance(o, gast.Name) and o.id in self.declared else o for o in operands]

    def _plain(self, node) -> bool:
        """A name, a number, or ``shape``/``slice`` of them: read twice, where the loop did not run, as once."""
        if isinstance(node, (gast.Name, gast.Constant)):
            return True
        if isinstance(node, gast.UnaryOp):  # slice(1, -1)
            return isinstance(node.operand, gast.Constant)
        return isinstance(node, gast.Call) and not node.keywords and all(self._plain(a) for a in node.args) \
            and (fuse._callee(node.func, self.namespace) in (runtime.shape, saved_value)
                 or isinstance(node.func, gast.Name) and node.func.id == "slice"
                 and self.namespace.get("slice", slice) is slice)

    def _adding(self, func):
        """The helper adding an expression element by element for ``add_at`` or ``added_at``; else None."""
        callee = fuse._callee(func, self.namespace)
        if callee is runtime.add_at:
            return add_elementwise
        return added_elementwise if callee is runtime.added_at else None

    def _parameter_shape(self, node) -> bool:
        """``shape(p)`` of a parameter ``p``, or ``held_shape(t)`` of a fused temporary (the shape its operands
        broadcast to: of numbers, where the gradient of a number they computed is summed); where a gradient is
        summed to a number.  Of a value the code computes, ``shape`` is most often an array's, where
        ``elementwise_sum`` would compile the expression apart."""
        if not (isinstance(node, gast.Call) and len(node.args) == 1 and isinstance(node.args[0], gast.Name)):
            return False
        callee = fuse._callee(node.func, self.namespace)
        return (callee is runtime.shape and node.args[0].id in self.parameters) or callee is fuse.held_shape

    def _unbroadcast(self, node) -> bool:
        return isinstance(node, gast.Call) and len(node.args) == 2 and not node.keywords \
            and any(fuse._callee(node.func, self.namespace) is u for u in _UNBROADCASTS)

    def _roll(self, node) -> bool:
        return isinstance(node, gast.Call) and fuse._callee(node.func, self.namespace) is shaping.rolled \
            and len(node.args) == 3 and not node.keywords and type(_constant(node.args[2])) is int

    def _operation(self, node) -> bool:
        if isinstance(node, gast.BinOp):
            return isinstance(node.op, _OPERATIONS)
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, (gast.USub, gast.UAdd))
        return isinstance(node, gast.Call) and not node.keywords and len(node.args) == 1 \
            and self._ufunc(node) is not None or self._chosen(node)

    def _chosen(self, node) -> bool:
        """``chosen(c, a, b)`` (``np.where``), a branch reading an operation: an elementwise choice."""
        return isinstance(node, gast.Call) and not node.keywords and len(node.args) == 3 \
            and fuse._callee(node.func, self.namespace) is shaping.chosen \
            and any(self._operation(a) for a in node.args[1:])

    def _ufunc(self, node):
        """The name of the ufunc of ``_UFUNCS`` ``node`` calls, or None (by identity: a global may not hash)."""
        callee = fuse._callee(node.func, self.namespace)
        return next((name for name, u in _UFUNCS.items() if callee is u), None)

    def _template(self, node, operands):
        """The expression's text with its operands as ``_k`` (appended to ``operands`` in reading order)."""
        def operand(value) -> str:  # a name read twice is one operand
            for k, known in enumerate(operands):
                if isinstance(value, gast.Name) and isinstance(known, gast.Name) and known.id == value.id:
                    return f"_{k}"
            operands.append(compat.clone(value))
            return f"_{len(operands) - 1}"

        def text(n):
            if self._operation(n):
                if isinstance(n, gast.BinOp):
                    return f"({text(n.left)} {_SYMBOLS[type(n.op)]} {text(n.right)})"
                if isinstance(n, gast.UnaryOp):
                    return f"({'-' if isinstance(n.op, gast.USub) else '+'}{text(n.operand)})"
                if self._chosen(n):
                    return f"chosen({operand(n.args[0])}, {text(n.args[1])}, {text(n.args[2])})"
                return f"np.{self._ufunc(n)}({text(n.args[0])})"
            if self._unbroadcast(n):
                return f"unbroadcast({text(n.args[0])}, {operand(n.args[1])})"
            if self._roll(n):
                return f"rolled({operand(n.args[0])}, {operand(n.args[1])}, {_constant(n.args[2])})"
            if isinstance(n, gast.Constant) and type(n.value) in (int, float):
                return f"({n.value!r})"
            return operand(n)
        return text(node)


_SYMBOLS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.Pow: "**"}


# ------------------------------------------------------------------ compiled: the loop, or the expression as written

def register(overload, types) -> None:
    """Register ``elementwise`` (its loop, where the kinds allow it) and ``as_written`` with Numba."""

    # numpy's rules for the loop's arithmetic, which reads an array at every operation (x / 0.0 is inf)
    @overload(elementwise, prefer_literal=True, jit_options={"error_model": "numpy"})
    def _elementwise(template, *operands):
        if not isinstance(template, types.StringLiteral):
            return None
        text = _loop_text(template.literal_value, list(operands), types)
        if text is None:  # the literal passed on as a literal (a variable holding it is not one)
            return _function(_unpacked(len(operands)) + f"    return {_written(template.literal_value, len(operands))}\n")
        return _function(text)

    @overload(elementwise_tried, prefer_literal=True, jit_options={"error_model": "numpy"})
    def _tried(template, *operands):
        if not isinstance(template, types.StringLiteral):
            return None
        text = _loop_text(template.literal_value, list(operands), types, tried=True)
        if text is None:  # the kinds do not allow the loop: the expression as written, here
            return _function(_unpacked(len(operands))
                             + f"    return {_written(template.literal_value, len(operands))}, True\n")
        return _function(text)

    @overload(elementwise_proven, prefer_literal=True, jit_options={"error_model": "numpy"})
    def _proven(template, *operands):
        if not isinstance(template, types.StringLiteral):
            return None
        text = _loop_text(template.literal_value, list(operands), types, tried="proven")
        if text is None:  # the kinds do not allow the loop: the expression as written, here
            return _function(_unpacked(len(operands)) + f"    return {_written(template.literal_value, len(operands))}\n")
        return _function(text)

    @overload(elementwise_sum, prefer_literal=True, jit_options={"error_model": "numpy"})
    def _summed(template, to, *operands):
        if not isinstance(template, types.StringLiteral):
            return None
        text = None
        if isinstance(to, types.BaseTuple) and len(to) == 0:  # summed to a number: the loop adds as it goes
            text = _loop_text(template.literal_value, list(operands), types, summed=True)
        if text is None:
            written = _written(template.literal_value, len(operands))
            return _function(_unpacked(len(operands), "to, ") + f"    return unbroadcast({written}, to)\n")
        return _function(text.replace("(template, *operands)", "(template, to, *operands)"))

    for helper, copy in ((add_elementwise, False), (added_elementwise, True)):
        _register_adding(overload, types, helper, copy)

    @overload(as_written, prefer_literal=True)
    def _as_written(template, *operands):
        if not isinstance(template, types.StringLiteral):
            return None
        return _function(_unpacked(len(operands)) + f"    return {template.literal_value}\n")


def _register_adding(overload, types, helper, copy) -> None:
    """``add_elementwise`` (``added_elementwise`` where ``copy``): its loop where the kinds allow it."""
    adding = runtime.added_at if copy else runtime.add_at

    @overload(helper, prefer_literal=True, jit_options={"error_model": "numpy"})
    def _adding(template, total, shape, index, *operands):
        if not isinstance(template, types.StringLiteral):
            return None
        text = None
        if isinstance(total, types.Array) and total.mutable and total.ndim == 1 and total.dtype == types.float64 \
                and isinstance(index, types.SliceType) and isinstance(shape, types.BaseTuple) and len(shape) == 1:
            text = _loop_text(template.literal_value, list(operands), types, into=copy)
        if text is None and _keeps_total(total, shape, operands, types):
            # the kinds do not allow the loop: the caller adds as written (its line compiled there, with its
            # other calls; compiled here too, under this helper's flags, it cost S11 a quarter of a second)
            text = _unpacked(len(operands), "total, shape, index, ") + "    return total, False\n"
        if text is None:  # the value computed and added as written, here: the caller's line may give another type
            written = _written(template.literal_value, len(operands))
            text = _unpacked(len(operands), "total, shape, index, ") \
                + f"    return adding(total, {written}, shape, index), True\n"
        return _function(text, adding=adding)


def _keeps_total(total, shape, operands, types) -> bool:
    """Whether ``add_at(total, E, shape, index)`` (``added_at``) surely has ``total``'s type, ``E`` of
    ``operands``: ``total`` a writeable C-contiguous float64 array of ``shape``'s rank, and no operand complex
    (nor of another kind than numbers, real arrays, shapes and slices), so that its sum keeps the dtype and
    its copy the layout.  Then ``(total, False)`` and the caller's ``add_at`` unify."""
    def real(kind) -> bool:
        return isinstance(kind, (types.Float, types.Integer, types.Boolean))
    return isinstance(total, types.Array) and total.dtype == types.float64 and total.layout == "C" \
        and total.mutable and isinstance(shape, types.BaseTuple) and total.ndim == len(shape) \
        and all(real(k) or isinstance(k, types.SliceType) or isinstance(k, types.Array) and real(k.dtype)
                or isinstance(k, types.BaseTuple) and all(isinstance(i, types.Integer) for i in k)
                for k in operands)


def _written(template, count) -> str:
    """The call of ``as_written`` with the template as a literal (Numba types a variable holding it as a str)."""
    return f"as_written({template!r}, {', '.join(f'_{k}' for k in range(count))})"


def _unpacked(count, more="") -> str:
    return f"def implementation(template, {more}*operands):\n" + "".join(
        f"    _{k} = operands[{k}]\n" for k in range(count))


def _function(text, **names):
    namespace = {"np": np, "rolled": shaping.rolled, "as_written": as_written, "unbroadcast": runtime.unbroadcast,
                 "chosen": shaping.chosen, "__name__": __name__, **names}
    exec(compile(text, "<astgrad numba loop>", "exec"), namespace)
    return namespace["implementation"]


def _loop_text(template, kinds, types, summed=False, into=None, tried=False):
    """The loop computing ``template`` element by element over the broadcast shape of its arrays, or None
    where the kinds do not allow it.  A loop reading each array at the same index where all have the
    result's shape; else one reading index 0 along an axis of length 1 (numpy's broadcasting)."""
    tree = ast.parse(template, mode="eval").body
    # the shapes unbroadcast reads: no-ops where the loop runs (each the result's shape, checked at run time)
    shapes = sorted({int(n.args[1].id[1:]) for n in ast.walk(tree) if _unbroadcast_of(n)})  # type: ignore[attr-defined]
    if any(not (isinstance(kinds[k], types.BaseTuple) and all(isinstance(t, types.Integer) for t in kinds[k]))
           for k in shapes):
        return None
    reads = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
    if sum(reads.count(f"_{k}") for k in shapes) != sum(_unbroadcast_of(n) for n in ast.walk(tree)):
        return None  # a shape also read as a value: as written
    original, kinds = kinds, [types.float64 if k in shapes else t for k, t in enumerate(kinds)]  # not read as numbers below
    arrays = [k for k, t in enumerate(kinds) if isinstance(t, types.Array)]
    # np.where's conditions: boolean arrays read as conditions only, each choice with an array in a branch
    # (numpy's where then gives float64, as the loop does; of two numbers, it may give integers)
    choices = [n for n in ast.walk(tree) if _chosen_of(n)]
    conditions = {int(n.args[0].id[1:]) for n in choices}  # type: ignore[attr-defined]
    if sum(reads.count(f"_{k}") for k in conditions) != len(choices) \
            or any(not (isinstance(kinds[k], types.Array) and kinds[k].dtype == types.boolean) for k in conditions) \
            or any(not any(isinstance(m, ast.Name) and isinstance(kinds[int(m.id[1:])], types.Array)
                           for b in n.args[1:] for m in ast.walk(b)) for n in choices):  # type: ignore[attr-defined]
        return None
    if not arrays or any(kinds[k].dtype != types.float64 for k in arrays if k not in conditions) \
            or len({kinds[k].ndim for k in arrays}) != 1 or kinds[arrays[0]].ndim == 0:
        return None
    if not all(isinstance(t, (types.Array, types.Float, types.Integer)) for t in kinds) \
            or any(isinstance(t, types.Boolean) for t in kinds):
        return None
    rank = kinds[arrays[0]].ndim
    if shapes and (into is not None or any(len(kinds_of_shapes) != rank for kinds_of_shapes in
                                           (original[k] for k in shapes))):
        return None
    rolls: list = []  # (array, shift, axis) of each roll read, in reading order

    def is_array(name) -> bool:
        return isinstance(kinds[int(name[1:])], types.Array)

    def reads_array(n) -> bool:
        return any(isinstance(m, ast.Name) and m.id.startswith("_") and is_array(m.id) for m in ast.walk(n))

    def number(n) -> bool:
        """A part of numbers only: exact as Python computes it (sums and products of constants and floats)."""
        if isinstance(n, ast.Constant):
            return True
        if isinstance(n, ast.Name):
            return isinstance(kinds[int(n.id[1:])], types.Float)
        if isinstance(n, ast.UnaryOp):
            return number(n.operand)
        return isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)) \
            and number(n.left) and number(n.right)

    def quotient(n) -> bool:
        """Numbers only, with a division (``nu * dt / dx ** 2`` read as ``_8 / _9``): computed once before the
        loop, each divisor tested first, so that zero raises ZeroDivisionError as the caller's line does."""
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
            return (number(n.left) or quotient(n.left)) and (number(n.right) or quotient(n.right))
        if isinstance(n, ast.UnaryOp):
            return quotient(n.operand)
        return isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)) \
            and (number(n.left) or quotient(n.left)) and (number(n.right) or quotient(n.right)) \
            and (quotient(n.left) or quotient(n.right))

    def hoisted(n) -> str:
        if id(n) not in quotients:
            divisors = [ast.unparse(m.right) for m in ast.walk(n) if isinstance(m, ast.BinOp) and isinstance(m.op, ast.Div)]
            quotients[id(n)] = (f"q{len(quotients)}", ast.unparse(n), divisors)
        return quotients[id(n)][0]

    def item(array, indices, spread):
        return f"{array}[{', '.join(f'{i} * s{array}_{a}' if spread else i for a, i in enumerate(indices))}]"

    def element(n, spread):
        if not reads_array(n):
            if isinstance(n, ast.Name) or number(n):
                return ast.unparse(n)
            if quotient(n):
                return hoisted(n)
            raise _NotALoop
        if isinstance(n, ast.Name):
            return item(n.id, [f"i{a}" for a in range(rank)], spread)
        if isinstance(n, ast.BinOp):
            return f"({element(n.left, spread)} {_AST_SYMBOLS[type(n.op)]} {element(n.right, spread)})"
        if isinstance(n, ast.UnaryOp):
            return f"({'-' if isinstance(n.op, ast.USub) else '+'}{element(n.operand, spread)})"
        if _unbroadcast_of(n):  # of an expression of arrays of the result's shape (so itself of it): a no-op
            if spread:
                raise _Spread
            return element(n.args[0], spread)  # type: ignore[attr-defined]
        if _chosen_of(n):  # np.where: the branch chosen, computed alone (the other's value is not read)
            condition = item(n.args[0].id, [f"i{a}" for a in range(rank)], spread)  # type: ignore[attr-defined]
            return f"({element(n.args[1], spread)} if {condition} else {element(n.args[2], spread)})"  # type: ignore[attr-defined]
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "rolled":
            array, shift, axis = n.args[0].id, n.args[1].id, n.args[2].value  # type: ignore[attr-defined]
            if not is_array(array) or not isinstance(kinds[int(shift[1:])], types.Integer) \
                    or not -rank <= axis < rank:
                raise _NotALoop
            if not spread:
                rolls.append((array, shift, axis % rank))
            m = _roll_number(n, rolls_seen)
            return item(array, [f"j{m}" if a == axis % rank else f"i{a}" for a in range(rank)], spread)
        if isinstance(n, ast.Call):  # np.<ufunc>(x)
            return f"{ast.unparse(n.func)}({element(n.args[0], spread)})"
        raise _NotALoop

    rolls_seen: dict = {}
    quotients: dict = {}  # id of a part of numbers with a division -> (its name, its text, its divisors' texts)
    try:
        direct = element(tree, False)
        spread = element(tree, True)
    except _Spread:  # arrays that broadcast: the expression as written (unbroadcast then may not be a no-op)
        spread = None
    except _NotALoop:
        return None
    text = _loop_body(template, kinds, types, tree, arrays, shapes, rolls, rank, direct, spread, summed, into, tried)
    if text is None or not quotients:
        return text
    prelude = []
    for name, value, divisors in quotients.values():
        prelude += [f"    if {d} == 0:\n        raise ZeroDivisionError('division by zero')" for d in divisors]
        prelude.append(f"    {name} = {value}")
    lines = text.split("\n")
    last = max(i for i, line in enumerate(lines) if line.startswith("    _") and "= operands[" in line)
    return "\n".join(lines[:last + 1] + prelude + lines[last + 1:])


def _loop_body(template, kinds, types, tree, arrays, shapes, rolls, rank, direct, spread, summed, into, tried):
    """The implementation's text of ``_loop_text`` once its element is written."""
    names = sorted({f"_{k}" for k in arrays})
    if into is not None:
        return _adding_text(template, len(kinds), names, direct, rolls, rank, into)
    size = ", ".join(f"n{a}" for a in range(rank))
    if spread is None:
        return _no_op_text(template, len(kinds), names, [f"_{k}" for k in shapes], direct, rolls, rank, summed,
                           tried)
    if tried:  # the direct loop where every array has the first's shape; else the caller's line as written
        return _no_op_text(template, len(kinds), names, [], direct, rolls, rank, summed, tried)
    lines = [_unpacked(len(kinds)).rstrip("\n")] + [f"    n{a} = 1" for a in range(rank)]
    for name in names:
        for a in range(rank):
            lines += [f"    if {name}.shape[{a}] != 1:",
                      f"        if n{a} != 1 and n{a} != {name}.shape[{a}]:",
                      "            raise ValueError('operands could not be broadcast together')",
                      f"        n{a} = {name}.shape[{a}]"]
    lines.append("    total = 0.0" if summed else f"    out = np.empty(({size},))")
    for m, (array, shift, axis) in enumerate(rolls):
        lines += [f"    w{m} = {array}.shape[{axis}]", f"    r{m} = (-{shift}) % w{m} if w{m} > 0 else 0"]
    lines.append(f"    if {' and '.join(f'{name}.shape == ({size},)' for name in names)}:")
    lines += _nest(rank, rolls, direct, "    ", summed)
    lines.append("    else:")
    lines += [f"        s{name}_{a} = 1 if {name}.shape[{a}] != 1 else 0" for name in names for a in range(rank)]
    lines += _nest(rank, rolls, spread, "    ", summed)
    lines.append("    return total" if summed else "    return out")
    return "\n".join(lines) + "\n"


def _no_op_text(template, count, names, shapes, direct, rolls, rank, summed, tried=False):
    """The loop of an expression reading ``unbroadcast(E, to)``: where every array has the first's shape and
    every ``to`` is that shape, ``E``'s shape is ``to`` (``unbroadcast`` gives ``E`` itself) and the loop
    computes the expression without it; otherwise the expression as written (``tried``: ``(out, done)``,
    no value and False there, for the caller to compute it as written)."""
    first = names[0]
    written = _written(template, count)
    lines = [_unpacked(count).rstrip("\n")] + [f"    n{a} = {first}.shape[{a}]" for a in range(rank)]
    size = ", ".join(f"n{a}" for a in range(rank))
    same = [f"{name}.shape == {first}.shape" for name in names[1:]] + [f"{to} == {first}.shape" for to in shapes]
    lines.append(f"    if not ({' and '.join(same) or 'True'}):")
    if tried == "proven":  # every array proven one shape (``proven_loops``): a failed proof is an error, never a guess
        lines.append(f"        raise ValueError({_UNPROVEN!r})")
    elif tried:
        lines.append(f"        return np.empty(({', '.join(['0'] * rank)},)), False")
    else:
        lines.append(f"        return unbroadcast({written}, to)" if summed else f"        return {written}")
    lines.append("    total = 0.0" if summed else f"    out = np.empty(({size},))")
    for m, (array, shift, axis) in enumerate(rolls):
        lines += [f"    w{m} = {array}.shape[{axis}]", f"    r{m} = (-{shift}) % w{m} if w{m} > 0 else 0"]
    lines += _nest(rank, rolls, direct, "", summed)
    lines.append("    return total" if summed else "    return out, True" if tried and tried != "proven" else "    return out")
    return "\n".join(lines) + "\n"


_UNPROVEN = "astgrad: arrays proven one shape have different shapes (please report this)"


def _adding_text(template, count, names, direct, rolls, rank, copy):
    """``add_at(total, <template>, shape, index)`` (``added_at`` where ``copy``) as one loop adding each element
    into ``total[index]``, a 1-d slice of a 1-d float64 ``total``; or None.  The loop runs where ``total`` has
    the shape ``shape`` and every array operand the slice's (no broadcasting) and, adding into ``total``
    itself, no operand shares memory with ``total`` (a view of it may read an element the loop has written);
    otherwise ``(total, False)``, ``total`` unchanged, for the caller to add the value as written."""
    if rank != 1 or rolls:
        return None
    fallback = "        return total, False"
    lines = [_unpacked(count, "total, shape, index, ").rstrip("\n"), "    if total.shape != shape:", fallback,
             "    n0 = total[index].shape[0]",
             f"    if not ({' and '.join(f'{name}.shape[0] == n0' for name in names)}):", fallback]
    if not copy:  # the addresses each array spans, first byte to last
        lines += ["    a = np.intp(total.ctypes.data)", "    b = a + (total.shape[0] - 1) * total.strides[0]",
                  "    low, high = min(a, b), max(a, b) + total.itemsize"]
        for name in names:
            lines += [f"    a = np.intp({name}.ctypes.data)", f"    b = a + ({name}.shape[0] - 1) * {name}.strides[0]",
                      f"    if {name}.shape[0] > 0 and total.shape[0] > 0 and min(a, b) < high"
                      f" and low < max(a, b) + {name}.itemsize:",
                      fallback]
    lines += ["    out = total.copy()" if copy else "    out = total", "    part = out[index]",
              "    for i0 in range(n0):", f"        part[i0] += {direct}", "    return out, True"]
    return "\n".join(lines) + "\n"


def _roll_number(node, seen) -> int:
    """The position of a roll read among the template's (the same node read twice, once per loop)."""
    return seen.setdefault(id(node), len(seen))


def _nest(rank, rolls, value, indent, summed) -> list:
    lines = []
    for a in range(rank):
        pad = indent + "    " * (a + 1)
        lines.append(f"{pad}for i{a} in range(n{a}):")
        for m, (_, _, axis) in enumerate(rolls):
            if axis == a:
                lines += [f"{pad}    j{m} = i{a} + r{m}", f"{pad}    if j{m} >= w{m}:", f"{pad}        j{m} -= w{m}"]
    at = ", ".join(f"i{a}" for a in range(rank))
    lines.append(indent + "    " * (rank + 1) + (f"total += {value}" if summed else f"out[{at}] = {value}"))
    return lines


def _chosen_of(n) -> bool:
    """``chosen(_k, a, b)`` in a template (``_k`` the condition)."""
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "chosen" \
        and len(n.args) == 3 and isinstance(n.args[0], ast.Name)


def _unbroadcast_of(n) -> bool:
    """``unbroadcast(E, _k)`` in a template (``_k`` the shape)."""
    return isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "unbroadcast" \
        and len(n.args) == 2 and isinstance(n.args[1], ast.Name)


class _Spread(Exception):
    """The expression reads ``unbroadcast``: its loop runs where the arrays have one shape, not where they broadcast."""


class _NotALoop(Exception):
    """The expression has a part the loop does not compute as numpy does: it is computed as written."""


_AST_SYMBOLS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def _integer(node) -> bool:
    """Whether an index is an integer constant (``add_at(t, E, shape, 2)``): on a 1-d total, one number added
    at one element, nothing to loop over (the add as written; a row of a 2-d total is added as written too)."""
    value = _constant(node)
    return type(value) is int
