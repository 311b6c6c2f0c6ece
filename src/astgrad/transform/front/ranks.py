"""Ranks known at call time: how many axes each value has, given the arguments'.

A gradient called with arrays of given ranks is transformed for those ranks
(api/gradient.py keeps one adjoint per signature).  This analysis propagates the
arguments' ranks through the normalised body, so that a rule's test of a
rank (``np.ndim(a) == 1`` in the rule of ``@``) folds to the one branch
that runs, and a rule whose gradients surely have their arguments' shapes
needs no ``unbroadcast``.

Like same_shapes.py it is by name: a name gets the one rank every value it ever
holds has (every assignment, in any branch or loop iteration), or none.
A rank is claimed only where it is sure: ufuncs (the largest operand rank),
``@``, reductions with literal axes, ``transpose``, indexing by integers
and slices (``x[i, 0]`` too), ``np.zeros(n)`` (``ones``, ``empty``) of
integers, ``len`` (a Python int), an item write (``setitem``: the array's)
and ``x op= v`` (``in_place``: ``x op v``'s, or numpy raises).  Anything else (calls of user functions, tuples, methods like
``x.item()``) has no rank, and its rule keeps its general form.

Whether a name holds integers is tracked beside its rank, for indexing: a
Python ``int`` or a numpy integer (``x[t]`` with ``t`` from ``range``, or
``x[idx[i, 0]]`` with ``idx`` an array of integers) drops one axis, ``x[b]``
with a boolean or an array ``b`` does not.  Given at call time, it is an
``int`` for rank 0 (``type(n) is int``) and an array of integer dtype
(``int64``, ``uint8``...) for higher ranks.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ...rules import sequences
from ..ir.compat import gast
from ..ir.nodes import For, Op, Raw, walk_ops, walk_statements
from ..runtime import in_place

#: a name whose values differ in rank, or whose rank is not known
UNKNOWN = (None, False)

_REDUCTIONS = {np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod, np.var, np.std}
_INTEGER_UFUNCS = {np.add, np.subtract, np.multiply}
#: functions that make a new array of the shape their first argument (or ``shape=``) gives, with the keywords that
#: leave it so (any dtype); np.eye and np.identity make a matrix
_MADE = {np.zeros: {"dtype", "order", "shape"}, np.ones: {"dtype", "order", "shape"},
         np.empty: {"dtype", "order", "shape"}, np.full: {"fill_value", "dtype", "order", "shape"},
         np.eye: {"M", "k", "dtype", "order"}, np.identity: {"dtype"}}
#: the array makers whose one argument is their shape (passes/fixed_shapes.py reads that shape's value)
_MAKERS = (np.zeros, np.ones, np.empty)


class Ranks:
    """``rank(name)``: the number of axes every value of ``name`` has, or None."""

    def __init__(self, body, params, given, locals_, returned=None):
        """``given``: parameter -> (rank, holds integers), for the parameters whose rank is known.

        None: the function is not specialised.  ``returned(op, rank_of)``: the
        (rank, int) a call ``op`` of a user function returns, its arguments'
        ranks told by ``rank_of(atom)`` (None while one is not known yet);
        without it such a call has no rank.
        """
        self.returned = returned
        self.specialisable = given is not None
        self.asked = False  # a question ranks given at call time could answer: see ModuleBuilder.rank_dependent
        self.locals = set(locals_) | set(params)
        self.value = {p: (given or {}).get(p, UNKNOWN) for p in params}
        for s in walk_statements(body):
            if isinstance(s, For):  # the target of range(...) (normalize makes every loop one)
                self.value[s.target] = _join(self.value.get(s.target), (0, True))
            elif isinstance(s, Raw):  # a statement kept as written may assign anything
                for node in gast.walk(s.stmt):
                    if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
                        self.value[node.id] = UNKNOWN
        ops = list(walk_ops(body))
        binders: dict = {}
        for op in ops:
            for target in op.targets:
                binders.setdefault(target, []).append(op)
        self.groups = _private_lists(ops, body, params, binders)  # list name -> its group (lists sharing items)
        self.items: dict = {}  # group -> (rank, int) every item of its lists has; absent while not known yet
        #: names only ever bound to ``x.shape``: a tuple of Python ints
        self.shapes = {name for name, found in binders.items() if name in self.locals and all(
            op.kind == "nondiff" and len(op.targets) == 1 and isinstance(op.expr, gast.Attribute)
            and op.expr.attr == "shape" for op in found)}
        changed = True
        while changed:
            changed = False
            for op in ops:
                added = self._added_items(op)
                if added is not None:
                    group = self.groups[op.targets[0]]
                    old = self.items.get(group)
                    new = _join(old, added)
                    if new != old:
                        self.items[group] = new
                        changed = True
                result = self._result(op)
                if result is None:
                    continue
                for target in op.targets:
                    old = self.value.get(target)
                    new = _join(old, result if len(op.targets) == 1 else UNKNOWN)
                    if new != old:
                        self.value[target] = new
                        changed = True

    def rank(self, name):
        """The rank of ``name``; None when it has no one rank (noted in ``asked``)."""
        rank = self.value.get(name, UNKNOWN)[0] if name in self.locals else None
        self.asked |= rank is None and self.specialisable and name in self.locals
        return rank

    def of_argument(self, atom):
        """``(rank, holds integers)`` of an argument passed to a user function, when every value of it has one
        rank; else None.  Not a question ranks given at call time could answer (a callee asks its own)."""
        found = self._atom(atom) if isinstance(atom, (gast.Name, gast.Constant, gast.UnaryOp)) else None
        return found if found is not None and found[0] is not None else None

    def keeps_shape(self, op, i) -> bool:
        """Whether the rule of ``op`` surely gives argument ``i`` a gradient of that argument's shape.

        ``a @ b`` of ranks 1 or 2: each gradient has its argument's shape
        (``g @ T(b)`` is a's shape).  With a stack of matrices the leading
        axes may broadcast, and the gradient must be summed back.
        ``setitem(a, index, v)`` (``a[index] = v``): a's gradient
        ``setitem(g, index, 0)`` has g's shape, the result's, which is a's (the
        write made a copy of a); v's, ``g[index]``, is v's where both are
        numbers (an element, written with a number).
        ``in_place(new, kind, op)`` (``x op= v``): the result is ``new`` itself,
        or ``new`` cast to ``x``'s dtype where it has ``x``'s shape (numpy raises
        otherwise): ``new``'s gradient is the result's, whatever the ranks.
        """
        if op.fn is np.matmul and len(op.args) == 2 and not op.kwargs:
            ranks = [(self._atom(a) or UNKNOWN)[0] for a in op.args]
            self.asked |= self.specialisable and None in ranks
            return all(r in (1, 2) for r in ranks)
        if op.fn is in_place and len(op.args) == 3 and not op.kwargs:
            return i == 0  # x op= v: x op v (new) is the result, or cast to x's shape and dtype, or numpy raises
        if op.fn is rules.setitem and len(op.args) == 3 and not op.kwargs:
            if i != 2:
                return i == 0
            item, value = self._item(*op.args[:2]), self._atom(op.args[2])
            known = item is not None and item[0] is not None and value is not None and value[0] is not None
            self.asked |= self.specialisable and not known
            return known and item[0] == 0 and value[0] == 0
        return False

    def _added_items(self, op):
        """(rank, int) of the items ``op`` puts into a private list it binds (``[a, b]``, ``append(lst, v)``), the
        join of theirs; None for any other op, or while one is not known yet."""
        if len(op.targets) != 1 or op.targets[0] not in self.groups:
            return None
        if op.kind == "pack":
            found = [self._atom(a) for a in op.args]
        elif op.kind == "prim" and op.fn in (sequences.append, sequences.grow):
            found = [self._atom(op.args[1])]
        elif op.kind == "prim" and op.fn is rules.setitem:
            found = [self._atom(op.args[2])]
        else:
            return None  # a copy: the same group
        if None in found:
            return None
        joined = None
        for item in found:
            joined = _join(joined, item)
        return joined

    def _list_item(self, array, index):
        """(rank, int) of ``lst[i]`` for a private list (``_private_lists``) and an integer ``i``; UNKNOWN where
        ``array`` is no such list, None while not known yet."""
        if not isinstance(array, gast.Name) or array.id not in self.groups:
            return UNKNOWN
        at = self._atom(index)
        if at is None:
            return None
        if at != (0, True):
            return UNKNOWN  # a slice: a list; anything else: a TypeError when it runs
        return self.items.get(self.groups[array.id])

    def _atom(self, atom):
        if isinstance(atom, gast.Constant):
            value = atom.value
            if isinstance(value, bool) or not isinstance(value, (int, float, complex)):
                return UNKNOWN if not isinstance(value, bool) else (0, False)
            return (0, isinstance(value, int))
        if isinstance(atom, gast.UnaryOp) and isinstance(atom.op, (gast.USub, gast.UAdd)) \
                and isinstance(atom.operand, gast.Constant):
            return self._atom(atom.operand)
        if isinstance(atom, gast.Name) and atom.id in self.locals:
            return self.value.get(atom.id)  # None: not known yet
        return UNKNOWN

    def _result(self, op):
        """(rank, int) of ``op``'s result; None while an operand is not known yet."""
        if op.kind == "copy" and len(op.args) == 1 and isinstance(op.expr, gast.Name):
            return self._atom(op.args[0])
        if op.kind == "nondiff" and not op.args and isinstance(op.expr, (gast.Constant, gast.UnaryOp)):
            return self._atom(op.expr)
        if op.fn is len and len(op.args) == 1 and not op.kwargs:
            return (0, True)  # len() gives a Python int, or raises
        made = next((keywords for fn, keywords in _MADE.items() if op.fn is fn), None)
        if made is not None and set(op.kwargs) <= made:
            return self._made(op)
        if op.kind == "call" and self.returned is not None and len(op.targets) == 1:
            return self.returned(op, self._atom)
        if op.kind != "prim":
            return UNKNOWN
        fn = op.fn
        if fn is rules.getitem and len(op.args) == 2 and isinstance(op.args[0], gast.Name) \
                and op.args[0].id in self.shapes and isinstance(op.args[1], gast.Constant) \
                and type(op.args[1].value) is int:
            return (0, True)  # a length: x.shape[0]
        if fn is rules.getitem and len(op.args) == 2 and not op.kwargs and isinstance(op.args[0], gast.Name) \
                and op.args[0].id in self.groups:
            return self._list_item(*op.args)
        if fn is rules.getitem and len(op.args) == 2 and not op.kwargs:
            return self._item(*op.args)
        if fn in (np.array, np.stack) and len(op.args) == 1 and not op.kwargs and isinstance(op.args[0], gast.Name) \
                and op.args[0].id in self.groups:
            # one more axis, or numpy raises (shapes differ; np.stack of no arrays); np.array of an empty list
            # has one axis whatever its items would have been: only numbers are followed there
            items = self.items.get(self.groups[op.args[0].id])
            if items is None:
                return None
            return UNKNOWN if items[0] is None or fn is np.array and items[0] != 0 else (items[0] + 1, False)
        if fn is rules.setitem and len(op.args) == 3 and not op.kwargs:  # a copy of a with a[i] = v
            return _not_int(self._atom(op.args[0]))
        if fn is in_place and len(op.args) == 3 and not op.kwargs:  # x op= v: new, cast to x's dtype, or raises
            return _not_int(self._atom(op.args[0]))
        args = [self._atom(a) for a in op.args]
        if any(a is None for a in args):
            return None
        ranks = [a[0] for a in args]
        if isinstance(fn, np.ufunc) and fn.signature is None and fn.nout == 1 and len(args) == fn.nin \
                and not op.kwargs:
            if None in ranks:
                return UNKNOWN
            return (max(ranks), fn in _INTEGER_UFUNCS and all(a[1] for a in args))
        if None in ranks:
            return UNKNOWN
        if fn is np.matmul and len(args) == 2 and not op.kwargs:
            a, b = ranks
            if a == 0 or b == 0:
                return UNKNOWN  # an error when it runs
            return (0 if a == b == 1 else max(a, b) - (a == 1) - (b == 1), False)  # vector @ vector: a number
        if fn in _REDUCTIONS and len(args) == 1:
            return _reduced(ranks[0], op.kwargs)
        if fn is np.transpose and len(args) == 1 and not op.kwargs:
            return (ranks[0], False)
        if fn is np.linalg.inv and len(args) == 1 and not op.kwargs and ranks[0] >= 2:
            return (ranks[0], False)
        if fn is np.linalg.solve and len(args) == 2 and not op.kwargs and ranks[0] == 2 and ranks[1] in (1, 2):
            return (ranks[1], False)  # one system: b's rank (numpy 2 reads a 1-d b as a vector)
        return UNKNOWN

    def _item(self, array, index):
        """(rank, int) of ``array[index]``: the array's rank less the axes integers drop (``x[i, 0]``)."""
        base = self._atom(array)
        if base is None or any(self._atom(n) is None for n in gast.walk(index) if isinstance(n, gast.Name)):
            return None  # an operand not known yet
        drops = self._drops(index)
        if base[0] is None or drops is None or drops > base[0]:
            return UNKNOWN
        return (base[0] - drops, base[1] and base[0] > 0)  # an item of an array of integers: an integer

    def _made(self, op):
        """(rank, int) of a new array (``np.zeros(n)``, ``np.ones((n, m))``, ``np.full``, ``np.eye(n)``): one axis
        per integer of its shape; a matrix for np.eye and np.identity."""
        if op.fn is np.eye or op.fn is np.identity:
            return (2, False) if 1 <= len(op.args) <= (1 if op.fn is np.identity else 3) else UNKNOWN
        if "shape" in op.kwargs:
            if op.args:
                return UNKNOWN  # the shape given twice: a TypeError when it runs
            shape = op.kwargs["shape"]
        elif 1 <= len(op.args) <= (2 if op.fn is np.full else 1):
            shape = op.args[0]
        else:
            return UNKNOWN
        if isinstance(shape, gast.Tuple):
            parts = [self._atom(e) for e in shape.elts]
            if None in parts:
                return None
            return (len(parts), False) if all(p == (0, True) for p in parts) else UNKNOWN
        size = self._atom(shape)
        return size if size is None else (1, False) if size == (0, True) else UNKNOWN

    def _drops(self, index):
        """How many axes indexing by ``index`` removes, when it is integers and slices; else None."""
        if isinstance(index, gast.Subscript) and isinstance(index.value, gast.Attribute) \
                and index.value.attr == "s_":  # np.s_[1:3, t]
            return self._drops(index.slice)
        if isinstance(index, gast.Slice):
            return 0
        if isinstance(index, gast.Tuple):
            parts = [self._drops(e) for e in index.elts]
            return None if None in parts else sum(parts)
        value = self._atom(index)
        if value is not None and value[0] == 0 and value[1]:
            return 1
        return None


#: the ops that may read a private list (``_private_lists``) without changing it or letting another name see it
_READS_OF_LISTS = (rules.getitem, np.array, np.stack, len)


def _private_lists(ops, body, params, binders) -> dict:
    """``name -> group`` for the lists whose items ``Ranks`` follows: each name of a group is bound only by a
    list or tuple literal, an append to or item write of the group (``lst.append(v)``: ``t = append(lst, v);
    lst = t``, or ``grow`` in place) or a copy of one of its names, and read only where nothing else can
    see or change the list: the first argument of those binders, ``lst[i]``, ``np.array(lst)``,
    ``np.stack(lst)`` and ``len(lst)``.  A parameter, a name a statement kept as written mentions, a
    list put into another container or passed to a user function is in no group.  The names a copy or
    an append joins are one group (one list object may be behind all of them)."""
    parent: dict = {}

    def find(name):
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    def joins(op) -> bool:
        """Whether ``op`` is a binder of a list of the group of its first argument (or a literal)."""
        if op.kind == "pack":
            return isinstance(op.expr, (gast.List, gast.Tuple))
        if op.kind == "copy":
            return len(op.args) == 1 and isinstance(op.args[0], gast.Name)
        return op.kind == "prim" and op.fn in (sequences.append, sequences.grow, rules.setitem) and len(op.args) \
            == (3 if op.fn is rules.setitem else 2) and not op.kwargs and isinstance(op.args[0], gast.Name)

    candidates = {name for name, found in binders.items() if all(len(op.targets) == 1 and joins(op) for op in found)}
    for name in candidates:
        for op in binders[name]:
            if op.kind != "pack":
                parent[find(name)] = find(op.args[0].id)
    shut = set(params)
    for op in ops:
        first = op.args[0].id if op.args and isinstance(op.args[0], gast.Name) else None
        binds = op.kind == "copy" or op.kind == "prim" and op.fn in (sequences.append, sequences.grow, rules.setitem)
        if first is not None and not op.kwargs and (binds and op.targets and op.targets[0] in candidates or op.kind
                                                   != "call" and op.fn in _READS_OF_LISTS and len(op.args) ==
                                                   (2 if op.fn is rules.getitem else 1)):
            others = op.args[1:]  # the list read where nothing else sees it; the other operands as anywhere
        else:
            others = [*op.args, *op.kwargs.values(), op.expr]
        shut.update(n.id for a in others for n in gast.walk(a) if isinstance(n, gast.Name))
    for s in walk_statements(body):
        if isinstance(s, Raw):
            shut.update(n.id for n in gast.walk(s.stmt) if isinstance(n, gast.Name))
        elif not isinstance(s, Op):
            for field in ("test", "iter", "target"):
                value = getattr(s, field, None)
                if isinstance(value, str):
                    shut.add(value)
                elif value is not None:
                    shut.update(n.id for n in gast.walk(value) if isinstance(n, gast.Name))
    groups: dict = {}
    for name in list(parent):
        groups.setdefault(find(name), set()).add(name)
    for name in candidates - set(parent):
        groups[name] = {name}
    return {name: root for root, names in groups.items()
            if names <= candidates and not names & shut for name in names}


def _not_int(value):
    """The rank of ``value`` for a result that is not a Python int (an array, a numpy number)."""
    return value if value is None or value[0] is None else (value[0], False)


def _reduced(rank, kwargs):
    """The rank after a reduction whose ``axis`` and ``keepdims`` are literals."""
    axis, keepdims = kwargs.get("axis"), kwargs.get("keepdims")
    if set(kwargs) - {"axis", "keepdims"}:
        return UNKNOWN
    if keepdims is not None:
        if not isinstance(keepdims, gast.Constant) or not isinstance(keepdims.value, bool):
            return UNKNOWN
        if keepdims.value:
            return (rank, False)
    if axis is None or isinstance(axis, gast.Constant) and axis.value is None:
        return (0, False)
    if isinstance(axis, gast.Constant) and type(axis.value) is int:
        return (rank - 1, False) if rank >= 1 else UNKNOWN
    if isinstance(axis, gast.Tuple) and all(isinstance(e, gast.Constant) and type(e.value) is int
                                            for e in axis.elts):
        n = len(axis.elts)
        return (rank - n, False) if rank >= n else UNKNOWN
    return UNKNOWN


def _join(old, new):
    if old is None or old == new:
        return new
    if old[0] == new[0] and old[0] is not None:
        return (old[0], False)  # an int here, a float there
    return UNKNOWN
