"""Which values surely have the same shape: where un-broadcasting is the identity.

A gradient flowing into an argument of a broadcasting primitive is summed
back to the argument's shape (``unbroadcast(g, np.shape(x))``).  When the
argument surely has the result's shape, that call is the identity, and the
argument need not be kept (or saved on the stack) for its shape.

Each local name gets a *shape symbol*, the same for every value the name
ever holds: ``("of", p)`` for "the shape of p" (a parameter, or a name
assigned once outside any loop), ``SCALAR`` for Python numbers, or
``UNKNOWN``.  Elementwise ufuncs propagate symbols: ``sin(x)`` has x's
symbol, ``x * 0.5`` and ``x + y`` too when y has x's symbol (or is a
number).  The analysis is by name, so a name assigned values of two
different symbols gets ``UNKNOWN``, except a number and p's shape:
``("maybe", p)``, which broadcasts with p's shape to p's shape.

With the ranks given at call time (``ranks``), two more follow: an item
write ``setitem(a, i, v)`` of an ``a`` of rank 1 or more (a numpy array:
its shape stays) has ``a``'s symbol, and a slice of the first axis
``a[s:e]`` of such an ``a`` with literal ``s >= 0`` (or none), ``e < 0``
(or none) and no step has ``("of", ("trim", X, s - e))`` where ``a`` has
``("of", X)``: its first axis has ``max(0, n - (s - e))`` entries for
every length ``n``, the other axes are ``a``'s.  So ``u[1:-1]``,
``u[2:]`` and ``u[:-2]`` of one ``u`` surely have one shape, and
``u[1:]`` another (``u[:3]`` and ``u[-2:]`` have none: their length is not
``n`` less a constant).  A comparison and ``np.where`` broadcast their
operands like a ufunc.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ..ir.compat import gast
from ..ir.nodes import For, walk_ops, walk_statements

SCALAR = ("scalar",)
UNKNOWN: tuple = ("unknown",)
_COMPARISONS = (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq)


class Shapes:
    def __init__(self, body, params, counts, locals_, ranks=None):
        self.locals = set(locals_)
        self.ranks = ranks
        self.symbol = {p: ("of", p) for p in params}
        ops = list(walk_ops(body))
        loop_targets = {s.target for s in walk_statements(body) if isinstance(s, For)}
        for name in loop_targets:
            self.symbol[name] = UNKNOWN
        changed = True
        while changed:
            changed = False
            for op in ops:
                for target in op.targets:
                    result = self._result(op, target, counts)
                    if result is None:
                        continue
                    old = self.symbol.get(target)
                    new = join(old, result)
                    if new != old:
                        self.symbol[target] = new
                        changed = True

    def _result(self, op, target, counts):
        """The symbol of ``target`` after ``op``; None while an operand is not known yet."""
        if op.kind == "copy" and len(op.args) == 1:
            return self._atom(op.args[0])
        if op.kind == "nondiff" and not op.args and _number(op.expr):
            return SCALAR
        if op.kind == "nondiff" and not op.args and len(op.targets) == 1 and isinstance(op.expr, gast.Compare) \
                and len(op.expr.ops) == 1 and isinstance(op.expr.ops[0], _COMPARISONS):
            found = broadcast([self._atom(op.expr.left), self._atom(op.expr.comparators[0])])
            if found != UNKNOWN or counts.get(target, 0) != 1:
                return found
        if op.kind == "prim" and len(op.targets) == 1 and not op.kwargs:
            found = self._kept(op)
            if found is not False:
                return found
        if op.kind == "prim" and isinstance(op.fn, np.ufunc) and op.fn.signature is None and not op.kwargs and len(op.targets) == 1 \
                and len(op.args) == op.fn.nin:
            result = broadcast([self._atom(a) for a in op.args])
            if result == UNKNOWN:
                result = self._past_numbers(op.args)
            if result == UNKNOWN and counts.get(target, 0) == 1:
                return ("of", target)  # a broadcast of unknown shapes, once per call: its own
            return result
        if counts.get(target, 0) == 1:
            return ("of", target)  # one value per call: its shape is its own
        return UNKNOWN

    def _past_numbers(self, args):
        """The broadcast of ``args`` where the ranks given at call time prove some of them numbers (shape
        ``()``, which broadcasting leaves out: ``kappa * d`` has d's shape); UNKNOWN where they prove none.
        Ranks not known without the call's are not asked for (the gradient does not specialise for them)."""
        if self.ranks is None:
            return UNKNOWN
        numbers = [isinstance(a, gast.Name) and self._atom(a) not in (None, SCALAR) and a.id in self.ranks.locals
                   and self.ranks.value.get(a.id, (None,))[0] == 0 for a in args]  # not asked: where known
        if not any(numbers) or all(numbers):
            return UNKNOWN  # never SCALAR: a name joined with it would read as a constant (``join``'s "maybe")
        return broadcast([SCALAR if number else self._atom(a) for a, number in zip(args, numbers)])

    def _kept(self, op):
        """The symbol of a write, a slice or ``np.where`` (see the module's doc); False where none of them."""
        fn, args = op.fn, op.args
        if fn is np.where and len(args) == 3:
            found = broadcast([self._atom(a) for a in args])
            return False if found == UNKNOWN else found
        if fn not in (rules.setitem, rules.getitem) or len(args) != (3 if fn is rules.setitem else 2) \
                or not isinstance(args[0], gast.Name) or self.ranks is None:
            return False
        return self._item(args[0], None if fn is rules.setitem else args[1])

    def _item(self, array, index):
        """The symbol of ``array[index]`` (``index`` None: of ``array`` after an item write); False where not
        proven, None while ``array``'s is not known."""
        trim = 0 if index is None else _trim(index)
        if trim is None:
            return False
        base = self._atom(array)
        if base is None:
            return None  # not known yet
        if base[0] != "of" or not (self.ranks.rank(array.id) or 0) >= 1:
            return False
        if not trim:
            return base
        whole, before = (base[1][1], base[1][2]) if isinstance(base[1], tuple) else (base[1], 0)
        return ("of", ("trim", whole, before + trim))

    def _atom(self, atom):
        if _number(atom):
            return SCALAR
        if isinstance(atom, gast.Name) and atom.id in self.locals:
            return self.symbol.get(atom.id)
        if isinstance(atom, gast.Name) and atom.id in self.symbol:
            return self.symbol[atom.id]  # a parameter
        return UNKNOWN

    def same(self, op, i) -> bool:
        """Whether argument ``i`` of ``op`` surely has the shape of its result."""
        args = op.args
        this = args[i]
        if not isinstance(this, gast.Name):
            return False
        if op.fn is rules.setitem and len(args) == 3 and not op.kwargs and isinstance(args[0], gast.Name) \
                and self.ranks is not None:
            if i != 2:
                return False
            # the value's gradient g[index] has the shape of a[index]; surely the value's where the symbols meet
            item, mine = self._item(args[0], args[1]), self.symbol.get(this.id)
            return bool(item) and item == mine
        if all(j == i or _number(a) or isinstance(a, gast.Name) and a.id == this.id for j, a in enumerate(args)):
            return True
        return self.holds_shape_of(this.id, op.targets[0])

    def elementwise_of_full(self, op) -> bool:
        """A ufunc whose operands are numbers or have its result's shape: its rule multiplies g by such arrays
        (one output: ``np.modf``'s g is a pair, whose 0.0 a join wrote its rule does not multiply)."""
        return isinstance(op.fn, np.ufunc) and op.fn.nout == 1 and not op.kwargs and all(
            _number(a) or self.same(op, i) for i, a in enumerate(op.args))

    def holds_shape_of(self, name, other, strict=False) -> bool:
        """Whether un-broadcasting a gradient of ``other``'s shape into ``name`` is surely the identity.

        ``strict``: ``name`` surely has ``other``'s shape (not "a number or p's shape").
        """
        mine, result = self.symbol.get(name), self.symbol.get(other)
        if mine is None:
            return False
        if mine[0] == "maybe":
            # a number or p's shape, into a result of p's shape: the number is made of literals only (a
            # constant), so the gradient it gets without un-broadcasting is dropped where it is assigned
            return not strict and result == ("of", mine[1])
        return mine[0] in ("of", "scalar") and mine == result


    def stand_in(self, name, available):
        """Another name in ``available`` whose values surely have ``name``'s shape, or None."""
        symbol = self.symbol.get(name)
        if symbol is None or symbol[0] != "of" or symbol[1] == name or symbol[1] not in available:
            return None
        return symbol[1]


def broadcast(symbols):
    """The symbol of the broadcast of operands with these symbols."""
    if any(s is None for s in symbols):
        return None
    shaped = {s for s in symbols if s != SCALAR}
    if not shaped:
        return SCALAR
    if len(shaped) == 1:
        return shaped.pop()
    if UNKNOWN not in shaped and len({s[1] for s in shaped}) == 1:
        return ("of", shaped.pop()[1])  # p's shape and "a number or p's shape" broadcast to p's shape
    return UNKNOWN


def join(old, new):
    """The symbol of a name that holds values of both symbols.

    A number joined with p's shape is ``("maybe", p)``: ``total = 0.0`` and
    then ``total = total + x`` in a loop.  It broadcasts with p's shape to
    p's shape, which keeps ``total + x`` of x's shape.
    """
    if old is None or old == new:
        return new
    if UNKNOWN in (old, new):
        return UNKNOWN
    kinds = {old, new}
    shaped = {s[1] for s in kinds if s != SCALAR}
    if len(shaped) == 1:
        return ("maybe", shaped.pop())
    return UNKNOWN


def _trim(index):
    """``s - e`` for an index ``np.s_[s:e]`` of literal ``s >= 0`` (or none) and ``e < 0`` (or none), no step:
    the entries it drops from a first axis of any length (all it has, if fewer); else None."""
    if not (isinstance(index, gast.Subscript) and isinstance(index.value, gast.Attribute)
            and index.value.attr == "s_" and isinstance(index.slice, gast.Slice)):
        return None
    part = index.slice
    start, stop, step = (_literal(x) for x in (part.lower, part.upper, part.step))
    if step is not None and step != 1 or start is False or stop is False:
        return None
    start, stop = start or 0, stop or 0
    if start < 0 or stop > 0:
        return None
    return start - stop


def _literal(node):
    """None for no bound, an int literal's value (``-1`` too), else False."""
    if node is None or isinstance(node, gast.Constant) and node.value is None:
        return None
    negative = isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub)
    if negative or isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.UAdd):
        node = node.operand
    if isinstance(node, gast.Constant) and type(node.value) is int:
        return -node.value if negative else node.value
    return False


def _number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool)
