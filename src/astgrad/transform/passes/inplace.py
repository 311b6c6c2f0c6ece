"""Write a result into the memory of an operand that is not read again.

``dt10 = dt3 * t3`` where nothing reads ``t3`` afterwards becomes
``dt10 = multiply_into(t3, dt3)``, and ``dlogits = dlogits + term`` becomes
``dlogits = add_into(dlogits, term)``: what a person writing the gradient
by hand does with ``*=`` and ``+=``, so the gradient needs no more memory
than theirs.  numpy does the same for nameless temporaries only above
256 KiB, and never for named ones.

Overwriting is safe when the array belongs to the generated code alone.
The pass follows every array the function makes (arithmetic, ufuncs and
reductions make new ones) through the names that may refer to it: a name
bound to ``unbroadcast(g, ...)``, ``filled``, ``expand_reduced``, a
transpose, a reshape or a subscript of another may share its memory.  An
array is a candidate at a statement when every name that may refer to it,
other than the one the statement reads, is never read again, and none of
them was ever passed where it could be kept (a call the pass does not know,
``_stack.append``, a container, a ``return``).  Parameters, values popped
from the stack and names assigned inside branches or loops are never
candidates, so neither the caller's arrays nor saved values change.

Only statements at the function's top level are rewritten, where each runs
once.  The helpers (``runtime.add_into`` and friends) still check at run
time that the operand is large enough for the saving to matter and that the
result has its shape and dtype; otherwise they compute it as written.  In a
loop those checks would run on every trip, and a scalar loop (where the
gradient is a Python float) would pay for them without ever saving memory.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ir import compat
from .. import runtime
from ..ir import tagged
from .cleanup import numeric, surely_numbers
from ..ir.compat import gast
from ...rules import _extra, _support, linalg

#: binary operators that can write into an operand: which side, and the helper
_WRITERS = {gast.Add: ("either", runtime.add_into), gast.Mult: ("either", runtime.multiply_into),
            gast.Sub: ("left", runtime.subtract_into), gast.Div: ("left", runtime.divide_into)}
_INTO = {fn for _, fn in _WRITERS.values()}

#: calls whose result may be (a view of) their first argument, and that keep no reference to it
_PASS_FIRST = {runtime.unbroadcast, _support.unbroadcast, runtime.summed, runtime.filled, _support.expand_reduced,
               runtime.T, linalg.T, np.reshape, np.transpose, np.squeeze, np.expand_dims, np.broadcast_to,
               np.asarray, np.ravel, runtime.add_at, _extra.written} | _INTO

#: of those, the ones that return the array itself or a new one, never a view
_KEEP_WHOLE = {runtime.unbroadcast, _support.unbroadcast, runtime.summed, runtime.add_at}

#: calls that return a new array (or a number, a shape) and keep no reference to their arguments
_FRESH = {np.sum, np.mean, np.max, np.min, np.prod, np.dot, np.matmul, np.outer, np.where, np.zeros_like,
          np.ones_like, np.linalg.norm, _extra.scatter, _extra.scatter_along_axis, runtime.shape, runtime.size,
          runtime.only_shape, _support.reduced_count, np.shape, np.ndim, np.size, len, runtime.added_at,
          runtime.copied, runtime.floats}

_META = {"shape", "ndim", "size", "dtype"}

NUMBER = "number"  # the owner of a name that surely holds a number: nothing to alias or write into


def reuse_buffers(fn_def, ns, numbers=(), counts=()):
    """Rewrite ``fn_def`` (the entry function, after ``cleanup.release``) in place; return it.

    ``numbers`` and ``counts`` are as for ``cleanup.surely_numbers``.
    """
    block = _Block(fn_def.body, ns)
    block.numbers = surely_numbers(fn_def.body, numbers, counts)
    block.counts = counts
    block.run()
    return fn_def


class _Block:
    """The forward walk over the function's top level: who owns which array, and what may be overwritten."""

    numbers: set  # set by reuse_buffers: names surely holding numbers, and the counts they are
    counts: tuple

    def __init__(self, body, ns):
        self.body = body
        self.ns = ns
        self.loads, self.stores = [], []  # per top-level statement: the Name nodes it reads, the names it binds
        for stmt in body:
            loads, stores = [], set()
            for n in compat.walk(stmt):
                if isinstance(n, gast.Name):
                    if isinstance(n.ctx, gast.Load):
                        loads.append(n)
                    elif isinstance(n.ctx, gast.Store):
                        stores.add(n.id)
            self.loads.append(loads)
            self.stores.append(stores)
        self.owner = {}  # name -> id of the array it holds (an int), NUMBER, or absent (unknown)
        self.whole = set()  # names that hold their array itself, not a view that may be read-only
        self.kept = set()  # array ids passed somewhere that may keep them
        self.after = None
        self.fresh_id = 0

    def later_reads(self, i):
        """Names read by statements after the ``i``-th."""
        if self.after is None:
            self.after = [set()]
            for loads in reversed(self.loads):
                self.after.append(self.after[-1] | {n.id for n in loads})
            self.after.reverse()
        return self.after[i + 1]

    def new_array(self):
        self.fresh_id += 1
        return self.fresh_id

    def run(self):
        for i, stmt in enumerate(self.body):
            if tagged.kind(stmt) == tagged.RELEASE:
                for t in stmt.targets:
                    self.owner.pop(getattr(t, "id", None), None)
                continue
            target = _single_target(stmt)
            value = stmt.value if target is not None else None
            passed = self.uses(i)
            if target is None:
                for name in self.stores[i]:  # names bound inside branches, loops or unpacking: unknown
                    self.owner.pop(name, None)
                continue
            written = self.overwrite(i, target, value)
            kind = self.fresh(value)
            self.whole.discard(target)
            if written is not None:
                self.owner[target] = written
                self.whole.add(target)
            elif numeric(value, self.numbers, self.counts):
                self.owner[target] = NUMBER
            elif kind is not None:
                self.owner[target] = self.new_array()
                if kind == "whole":
                    self.whole.add(target)
            elif passed is not None and passed in self.owner:
                self.owner[target] = self.owner[passed]
                if passed in self.whole and _keeps_whole(value, self.ns):
                    self.whole.add(target)
            else:
                self.owner.pop(target, None)

    # -- what a statement does with the names it reads ----------------------

    def uses(self, i):
        """Mark arrays statement ``i`` may keep; return the name whose array its value may be (a view of)."""
        stmt = self.body[i]
        passed = set()
        single = _single_target(stmt) is not None
        reads = [n for n in self.loads[i] if n.id in self.owner]
        parent = _parents(stmt) if reads else None
        for n in reads:
            fate = _fate(n, parent, self.ns)
            if fate == "passed" and single:
                passed.add(n.id)
            elif fate != "used":
                self.kept.add(self.owner[n.id])
        if len(passed) > 1:  # a if c else b: either array
            self.kept.update(self.owner[name] for name in passed)
            return None
        return passed.pop() if passed else None

    def fresh(self, value):
        """``"whole"`` for a new array (or a number): arithmetic, a ufunc, a reduction; ``"view"`` for what
        may be a view of one (``filled(dresult / n, shape)``, a broadcast); None for anything else."""
        if isinstance(value, gast.BinOp) or isinstance(value, gast.UnaryOp) \
                and isinstance(value.op, (gast.USub, gast.UAdd)):
            return "whole"
        if isinstance(value, (gast.UnaryOp, gast.Compare)):
            return "view"  # a new array, but a boolean one (a mask): not one to write a gradient into
        if isinstance(value, gast.Call):
            fn = _callee(value.func, self.ns)
            if isinstance(fn, np.ufunc):
                return None if any(k.arg == "out" for k in value.keywords) else "whole"
            if _among(fn, _FRESH):
                return "whole"
            if _among(fn, _PASS_FIRST) and value.args and not _among(fn, _INTO):
                inner = self.fresh(value.args[0])
                if inner is None:
                    return None
                return inner if _among(fn, _KEEP_WHOLE) else "view"  # unbroadcast(2 * dt3 * t4, shape(t5))
        return None

    # -- the rewrite ----------------------------------------------------------

    def overwrite(self, i, target, value):
        """Rewrite ``target = a (op) b`` into a helper writing into ``a`` or ``b``; the array id, or None."""
        if not isinstance(value, gast.BinOp) or type(value.op) not in _WRITERS:
            return None
        side, fn = _WRITERS[type(value.op)]
        operands = [(value.left, value.right)] + ([(value.right, value.left)] if side == "either" else [])
        later = self.later_reads(i)
        for buffer, other in operands:
            if numeric(other, self.numbers, self.counts):
                continue  # scaling by a number stays as written: x * 0.5, 6 * dz * y
            if not isinstance(buffer, gast.Name) or not self.ours(buffer.id) or buffer.id not in self.whole:
                continue
            array = self.owner[buffer.id]
            sharing = [name for name, owner in self.owner.items() if owner == array]
            if any(name in later and (name != buffer.id or name != target) for name in sharing):
                continue
            self.body[i].value = self.call(fn, buffer, other)
            return array
        return None

    def call(self, fn, buffer, other):
        return compat.call(compat.name(self.ns.helper(fn)), [buffer, other])

    def ours(self, name) -> bool:
        array = self.owner.get(name)
        return isinstance(array, int) and array not in self.kept


def _keeps_whole(value, ns) -> bool:
    """``value`` is a name or ``unbroadcast(name, ...)``: the array itself or a new one, not a view.

    (``unbroadcast`` widening a gradient to a higher rank gives a read-only
    broadcast; the helpers then compute the result as written.)
    """
    return isinstance(value, gast.Name) or isinstance(value, gast.Call) and value.args \
        and isinstance(value.args[0], gast.Name) and _among(_callee(value.func, ns), _KEEP_WHOLE)


def _single_target(stmt):
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
        return stmt.targets[0].id
    return None


def _callee(func, ns):
    """The object a call's function expression names (``np.sum``, ``unbroadcast``, ``len``), or None."""
    if isinstance(func, gast.Name):
        if func.id in ns.globals:
            return ns.globals[func.id]
        return getattr(builtins, func.id, None)
    if isinstance(func, gast.Attribute):
        owner = _callee(func.value, ns)
        if owner is np or owner is np.linalg:
            return getattr(owner, func.attr, None)
    return None


def _among(fn, group) -> bool:
    return any(fn is known for known in group)


def _parents(root):
    parent = {}
    for n in compat.walk(root):
        for value in n.__dict__.values():
            if isinstance(value, list):
                for v in value:
                    if isinstance(v, gast.AST):
                        parent[id(v)] = n
            elif isinstance(value, gast.AST):
                parent[id(value)] = n
    return parent


def _fate(name_node, parent, ns):
    """What its statement does with the array ``name_node`` reads.

    ``"used"``: only its values or shape are read (arithmetic, a ufunc, a
    reduction, ``.shape``); ``"passed"``: the statement's value may be that
    array or a view of it; ``"kept"``: anything else, where a reference may
    outlive the statement.  ``parent`` maps ``id(node)`` to its parent there.
    """
    node = name_node
    while True:
        up = parent.get(id(node))
        if up is None:
            return "kept"
        if isinstance(up, (gast.BinOp, gast.UnaryOp, gast.Compare)):
            return "used"
        if isinstance(up, gast.Attribute):
            return "used" if up.attr in _META else "kept"
        if isinstance(up, gast.Subscript):
            if node is up.value:
                node = up
                continue
            return "used"
        if isinstance(up, gast.IfExp):
            if node is up.test:
                return "used"
            node = up
            continue
        if isinstance(up, gast.keyword):
            call = parent.get(id(up))
            fn = _callee(call.func, ns) if isinstance(call, gast.Call) else None
            return "used" if (isinstance(fn, np.ufunc) and up.arg != "out") or _among(fn, _FRESH) else "kept"
        if isinstance(up, gast.Call):
            if node is up.func:
                return "kept"
            fn = _callee(up.func, ns)
            if isinstance(fn, np.ufunc) and not any(k.arg == "out" for k in up.keywords) or _among(fn, _FRESH):
                return "used"
            if _among(fn, _PASS_FIRST):
                if up.args and node is not up.args[0]:
                    return "used"
                node = up
                continue
            return "kept"
        if isinstance(up, gast.Assign):
            return "passed" if node is up.value else "kept"
        if isinstance(up, (gast.If, gast.While)) and node is up.test:
            return "used"
        if isinstance(up, gast.Expr):
            return "used"
        return "kept"
