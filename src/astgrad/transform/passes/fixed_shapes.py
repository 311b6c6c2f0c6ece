"""Shapes that cannot change: a value saved in a loop only for its shape is saved no more.

``for t in range(n): t5 = xs[t] @ Wx`` gives ``t5`` the same shape on every
trip, so the adjoint's ``unbroadcast(dt9, shape(t5))`` may read the last
value's shape: the primal need not push ``only_shape(t5)`` on each trip,
nor the adjoint pop it back.

A name's shape is *fixed* when every value it holds during a call has one
shape.  That is proven from the normal form, never guessed (FixedShapes):

* a parameter of a rank given at call time (an array or a number, never a
  list that may grow), and a name whose every value is a number;
* a name bound by one operation alone, whose result's shape follows from
  its operands' fixed shapes and from literals: a ufunc (``@`` too) or a
  comparison, ``x[i]`` by literal integers and slices and Python ints (a
  ``range`` counter), a reduction over literal axes, ``np.transpose``,
  ``np.zeros(n)`` (``ones``, ``empty``) of an ``n`` with one value in the
  call (a literal, a parameter, ``len(x)`` of a fixed shape); "alone" allows
  besides it bindings that keep a value's shape (``rates = np.zeros(n)``
  and ``rates[i] += v`` in a loop);
* a name bound in several places, each giving it the one shape of the same
  names: ``u = u0`` and ``u[1:-1] = v`` (``setitem`` keeps u's shape),
  ``y = x * 2`` and ``y = y * 2`` (a broadcast with a number),
  ``np.roll(u, 1)``, ``np.where(c, a, b)`` of one shape,
  ``acc = -pos / mass`` before the loop and in it (the broadcast of the
  same two shapes each time);
* a call of a user function that returns one shape whatever it is given
  (pipeline ``returned_shape``: ``np.array([a, b])`` of numbers), as
  ``k1 = f(t, y, p)`` in RK4: that shape, a constant in the broadcasts
  that read it (``y + h * k1``); a constant ``c`` with no axis of length 1
  broadcast with operands of at most ``len(c)`` axes (the ranks) is ``c``,
  whatever their shapes, or numpy raises;
* an item ``lst[i]`` (an integer ``i``) of a private list (front/ranks.py's
  groups: no other name, call or container sees it), where the list's
  literal items and every value appended or written into it have one root:
  ``ys = [y0]`` and ``ys.append(y * c)`` of ``y = ys[i]``;
* ``x op= v`` (``in_place``) gives the shape of ``x op v``: the same as
  ``x``'s where ``x`` is surely a numpy array (numpy writes into it, or
  raises), which a parameter of rank 1 or more holding real floats is (its
  adjoint specialised on them, as on ranks), and a name bound only to such
  arrays and by ``x op= v`` on them.

A name whose shape changes from trip to trip (``x = x[1:]``,
``x = np.concatenate([x, v])``, ``h = h0`` then ``h = np.tanh(h @ W + b)``
with ``h0`` broadcasting, ``h += w`` where ``h`` may be a number or a Dask
array, which ``+=`` rebinds to the broadcast, a name rebound in one
branch) is none of these, and stays saved.  Asking the ranks makes the gradient specialise on them,
so the analysis runs only where a loop saves a value for its shape.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ...rules import sequences
from .. import runtime
from ..front import ranks as _ranks
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import For, Op, binding_sites
from ..ir.tagged import is_pop, popped_into, pushed, shape_kept
from .cleanup import drop_saves_of
from .static_shapes import meta_of

_COMPARISONS = (gast.Lt, gast.LtE, gast.Gt, gast.GtE, gast.Eq, gast.NotEq)


#: the shape ``()``: a number, or an array of none (a root is the set of names whose shapes broadcast to it)
SCALAR: frozenset = frozenset()
#: a name whose values may differ in shape, or one this analysis cannot follow
VARIES = ("varies",)


class FixedShapes:
    """``fixed(name)``: whether every value ``name`` holds in a call has the same shape.

    Each name gets a *root*: the set of names whose shapes, broadcast
    together, are the one shape every value of it has (a name stands for
    its own: a parameter, a value computed by one operation alone;
    ``SCALAR`` is the empty set), or ``VARIES``; None while not known.  A
    name bound in several places has a root when each binding gives the
    same: ``u = u0`` and ``u = setitem(u, np.s_[1:-1], v)`` both give
    ``u0``'s.  ``floats``: the entry's GivenFloats (None in a callee), which
    proves parameters numpy arrays for ``x op= v``.
    """

    def __init__(self, body, params, analysis, ns, floats=None, returned_shape=None):
        self.ranks, self.ns, self.floats, self.returned_shape = analysis.ranks, ns, floats, returned_shape
        sites, exposed = binding_sites(body)
        self.exposed, params = exposed, set(params)
        self.sites, self.params, self._arrays = sites, params, None
        self.root: dict = {p: VARIES if p in exposed or self.ranks.rank(p) is None else frozenset({p})
                           for p in params}
        self.root.update((name, VARIES) for name in exposed)
        # a private list's items (front/ranks.py's groups: lists nothing else sees or changes): group -> the root of
        # every item it is given (literal, append, item write), None while not known
        self.groups = getattr(self.ranks, "groups", {})
        self.items: dict = {}
        changed = True
        while changed:
            changed = False
            for name, bound in sites.items():
                group = self.groups.get(name)
                if group is not None:
                    for site in bound:
                        new = self._added_items(site)
                        old = self.items.get(group)
                        joined = new if old is None else old if new is None or new == old else VARIES
                        if joined != old:
                            self.items[group] = joined
                            changed = True
                if self.root.get(name) is VARIES:
                    continue
                alone = name not in params and sum(not _passes_shape(site) for site in bound) == 1
                for site in bound:
                    new = self._site(site, name, alone)
                    old = self.root.get(name)
                    joined = new if old is None else old if new is None or new == old else VARIES
                    if joined != old:
                        self.root[name] = joined
                        changed = True

    def fixed(self, name) -> bool:
        return self.root.get(name) not in (None, VARIES) or self._scalar(name)

    def _scalar(self, name) -> bool:
        """Every value a number or a 0-d array (Ranks): shape ``()``."""
        return name not in self.exposed and name in self.ranks.locals and self.ranks.value.get(name, (None,))[0] == 0

    def _site(self, site, name, alone):
        """The root a binding gives ``name``; None while an operand's is not known."""
        if site is None:
            return VARIES
        if isinstance(site, For):  # a Python int from range
            return SCALAR if _range(site.iter, self.ns) else VARIES
        op, fn, args, kwargs = site, site.fn, site.args, site.kwargs
        if fn in _ranks._MAKERS and len(args) == 1 and set(kwargs) <= {"dtype"}:
            fixed = self._fixed_value(args[0])  # np.zeros(n): a shape of n's value
            return fixed if fixed is None else frozenset({name}) if fixed and alone else VARIES
        if op.kind == "copy":
            return self._of(args[0]) if len(args) == 1 else VARIES
        if op.kind == "call":  # a callee proven to return one shape whatever it is given: that shape, a constant
            shape = self.returned_shape(op) if self.returned_shape is not None else None
            return VARIES if shape is None else frozenset({_constant(shape)})
        if op.kind == "nondiff" and not args:
            if _number(op.expr):
                return SCALAR
            if isinstance(op.expr, gast.Compare) and len(op.expr.ops) == 1 \
                    and isinstance(op.expr.ops[0], _COMPARISONS):
                return self._broadcast([op.expr.left, op.expr.comparators[0]], name, alone)
            return VARIES
        if op.kind not in ("prim", "nondiff"):
            return VARIES
        if isinstance(fn, np.ufunc) and fn.nout == 1 and len(args) == fn.nin and not kwargs:
            if fn.signature is None:
                return self._broadcast(args, name, alone)
            return self._own(args, name, alone)  # np.matmul: its shape follows from its operands'
        if fn is rules.getitem and len(args) == 2 and not kwargs and isinstance(args[0], gast.Name) \
                and args[0].id in self.groups:
            return self._item_of(args[0].id, args[1])
        if fn is rules.getitem and len(args) == 2 and not kwargs and self._index(args[1]):
            return self._own(args[:1], name, alone)
        if fn is rules.setitem and len(args) == 3 and not kwargs:
            return self._of(args[0])  # written into: its shape
        if fn is runtime.in_place and len(args) == 3 and not kwargs:
            x = self._kind_of(args[1])  # x op= v: x's shape where numpy writes into the array x
            return self._of(x) if x is not None and x.id in self._numpy_arrays() else self._of(args[0])
        if fn is np.roll and args:
            return self._of(args[0])
        if fn in _ranks._REDUCTIONS and len(args) == 1 and set(kwargs) <= {"axis", "keepdims"} \
                and all(_literal(v) for v in kwargs.values()):
            whole = kwargs.get("axis") is None and kwargs.get("keepdims") is None
            root = self._of(args[0])
            return root if root is None or root is VARIES else SCALAR if whole else frozenset({name}) if alone \
                else VARIES
        if fn is np.transpose and len(args) == 1 and not kwargs:
            return self._own(args, name, alone)
        if fn is np.where and len(args) == 3 and not kwargs:
            return self._broadcast(args, name, alone)
        return VARIES

    def _of(self, atom):
        if _number(atom):
            return SCALAR
        if isinstance(atom, gast.Name) and atom.id in self.ranks.locals:
            return SCALAR if self._scalar(atom.id) else self.root.get(atom.id)  # None: not known yet
        return VARIES

    def _added_items(self, site):
        """The root of the items ``site`` puts into a private list it binds (``[a, b]``, ``append(lst, v)``,
        ``lst[i] = v``), the join of theirs; None for a copy (the same list) or while one is not known yet."""
        if not isinstance(site, Op) or len(site.targets) != 1:
            return VARIES
        if site.kind == "copy":
            return None
        if site.kind == "pack":
            elts = getattr(site.expr, "elts", None)
            added = list(site.args) if elts is not None and len(elts) == len(site.args) \
                and not any(isinstance(e, gast.Starred) for e in elts) else None
        elif site.kind == "prim" and site.fn in (sequences.append, sequences.grow) and len(site.args) == 2:
            added = site.args[1:]
        elif site.kind == "prim" and site.fn is rules.setitem and len(site.args) == 3:
            added = site.args[2:] if self._integer_index(site.args[1]) else None  # a slice writes a list's items
        else:
            added = None
        if added is None:
            return VARIES
        joined = None
        for atom in added:
            root = self._of(atom)
            if root is None:
                return None
            joined = root if joined is None or joined == root else VARIES
        return joined  # None for an empty list: no item yet

    def _item_of(self, lst, index):
        """The root of ``lst[index]`` for a private list and an integer ``index``: its items' (the list's shape
        is no array's: a slice of it gives none)."""
        if not self._integer_index(index):
            return VARIES
        return self.items.get(self.groups[lst])  # None while not known

    def _integer_index(self, index) -> bool:
        if _integer(index):
            return True
        if isinstance(index, gast.Name) and index.id not in self.exposed:
            self.ranks.rank(index.id)  # asked: ranks given at call time may prove it an int
            return self.ranks.value.get(index.id) == (0, True)
        return False

    def _own(self, operands, name, alone):
        """A result whose shape follows from its operands' alone: its own root, when only it binds ``name``."""
        roots = [self._of(a) for a in operands]
        if any(root is VARIES for root in roots):
            return VARIES
        if None in roots:
            return None
        return frozenset({name}) if alone else VARIES

    def _broadcast(self, operands, name, alone):
        """A broadcast: the union of its operands' roots (a number, rank 0 given at call time too, adds none).

        Where an operand has a constant shape ``c`` with no axis of length 1
        (a callee's ``np.array([a, b])``) and every other operand has at
        most ``len(c)`` axes (the ranks), the broadcast is ``c`` or numpy
        raises, whatever the others' shapes: ``y + h * k1`` has ``k1``'s
        shape ``(2,)`` for any ``y`` of rank 1.
        """
        constant = self._constant_broadcast(operands)
        if constant is not None:
            return constant
        roots: set = set()
        unknown = False
        for a in operands:
            root = self._of(a)
            if root is VARIES:
                return VARIES
            if root is None:
                unknown = True  # not known yet: a later trip of the fixpoint sees it
            else:
                roots |= root
        return None if unknown else frozenset(roots)

    def _constant_broadcast(self, operands):
        """``{c}`` where an operand's root is the constant shape ``c`` alone, ``c`` has no axis of length 1 and
        every operand has at most ``len(c)`` axes; else None."""
        for atom in operands:
            root = self._of(atom)
            shape = _shape_of(next(iter(root))) if root not in (None, VARIES) and len(root) == 1 else None
            if shape is None or 1 in shape:
                continue
            if all(b is atom or self._rank_at_most(b, len(shape)) for b in operands):
                return root
        return None

    def _rank_at_most(self, atom, rank) -> bool:
        if _number(atom):
            return True
        if not isinstance(atom, gast.Name) or atom.id in self.exposed:
            return False
        found = self.ranks.rank(atom.id) if atom.id in self.ranks.locals else None
        return found is not None and found <= rank

    def _fixed_value(self, atom):
        """Whether ``atom`` is an integer with one value in a call: a literal, a parameter never rebound, ``len(x)``
        bound once with ``x`` of a fixed shape; None while that shape is not known."""
        if _integer(atom):
            return True
        if not isinstance(atom, gast.Name) or atom.id in self.exposed:
            return False
        bound = self.sites.get(atom.id, [])
        if not bound:
            return atom.id in self.params and self.ranks.value.get(atom.id) == (0, True)
        site = bound[0] if len(bound) == 1 and atom.id not in self.params else None
        if not (isinstance(site, Op) and site.fn is len and len(site.args) == 1 and not site.kwargs):
            return False
        root = self._of(site.args[0])
        return None if root is None else root is not VARIES

    def _kind_of(self, atom):
        """The name ``x`` (its atom) where ``atom`` is bound once, to ``array_kind(x)``; else None."""
        bound: list = self.sites.get(atom.id, []) if isinstance(atom, gast.Name) else []
        site = bound[0] if len(bound) == 1 else None
        if isinstance(site, Op) and site.fn is runtime.array_kind and len(site.args) == 1 \
                and isinstance(site.args[0], gast.Name):
            return site.args[0]
        return None

    def _numpy_arrays(self) -> set:
        """The names every value of which is a numpy array (``type(x) is np.ndarray``), found when first asked.

        A parameter of rank 1 or more given real floats (GivenFloats: an
        array or a numpy scalar of them; of rank 1, an array); a name bound
        only to such names (``x = y``) and by ``x op= v`` on such a name
        (``in_place``: numpy's result is that array's kind).  The largest
        such set: every binding reads a name that held an array when it ran.
        Asking for a parameter not given makes the entry specialise on floats.
        """
        if self._arrays is not None:
            return self._arrays
        given = self.floats
        found = set()
        for p in self.params:
            rank = self.ranks.rank(p)  # None: not given (asked)
            if p not in self.exposed and given is not None and (rank is None or rank >= 1):
                if rank is not None and p in given.names:
                    found.add(p)
                else:
                    given.asked = True
        found |= {name for name in self.sites if name not in self.params and name not in self.exposed}
        changed = True
        while changed:
            changed = False
            for name in list(found):
                if not all(self._keeps_array(site, found) for site in self.sites.get(name, ())):
                    found.discard(name)
                    changed = True
        self._arrays = found
        return found

    def _keeps_array(self, site, arrays) -> bool:
        """Whether ``site`` binds a numpy array, given that the names in ``arrays`` hold them."""
        if not isinstance(site, Op) or site.kwargs:
            return False
        if site.kind == "copy":
            return len(site.args) == 1 and isinstance(site.args[0], gast.Name) and site.args[0].id in arrays
        return site.kind == "prim" and site.fn is runtime.in_place and len(site.args) == 3 \
            and (x := self._kind_of(site.args[1])) is not None and x.id in arrays

    def _index(self, index) -> bool:
        """An index whose result's shape follows from the indexed array's: literals, slices of literals and
        Python ints (``x[t]`` with ``t`` from ``range`` drops one axis, whichever ``t``)."""
        if isinstance(index, gast.Subscript) and isinstance(index.value, gast.Attribute) and index.value.attr == "s_" \
                and isinstance(index.value.value, gast.Name) and self.ns.globals.get(index.value.value.id) is np:
            return self._index(index.slice)
        if isinstance(index, gast.Tuple):
            return all(self._index(e) for e in index.elts)
        if isinstance(index, gast.Slice):
            return all(part is None or _integer(part) for part in (index.lower, index.upper, index.step))
        if _integer(index) or isinstance(index, gast.Constant) and index.value in (None, Ellipsis):
            return True
        if isinstance(index, gast.Name):
            self.ranks.rank(index.id)  # asked: ranks given at call time may prove it an int
            return self.ranks.value.get(index.id) == (0, True) and index.id not in self.exposed
        return False


def drop_fixed_shape_saves(fn_def, adjoint, analyse, ns):
    """Stop saving a name the ``adjoint`` reads only for its shape when that shape is ``fixed``.

    Its pushes and its pops go together, as in cleanup.drop_unread_saves:
    every pop of ``t`` matches a push of ``t``.  The adjoint's reads then
    see the name's last value, which has the shape of every other.  A read
    of its value in a statement of the adjoint before the first that pops it
    (``dx = dy * x`` of the loop's result, before the reverse loop) sees the
    last value whether it is saved or not.
    """
    shape_reads, popped, pushes, other, stored = saved_names(fn_def, adjoint, ns)
    if popped is None:
        return fn_def  # a pop whose name is gone: which push it matches is not known here
    candidates = {name for name in popped & pushes & shape_reads if name not in other and name not in stored}
    if not candidates:
        return fn_def
    fixed = analyse()  # only now: it asks ranks, which makes the gradient specialise on them
    chosen = {name for name in candidates if fixed.fixed(name)}
    if not chosen:
        return fn_def
    return drop_saves_of(fn_def, chosen)


def saved_names(fn_def, adjoint, ns):
    """``(shape_reads, popped, pushed, other, stored)``: the names the ``adjoint`` reads for their shape, those
    popped into and pushed in ``fn_def``, those it reads before a statement restores them (a read there sees
    the last value) and those it assigns itself; ``popped`` None where a pop's name is gone."""
    shape_reads, other, stored, restored = set(), set(), set(), set[str]()
    for stmt in adjoint:
        inside = {id(name) for n in compat.walk(stmt) if (name := meta_of(n, ns)) is not None}
        restoring = {id(n.targets[0]) for n in compat.walk(stmt) if popped_into(n) is not None}
        restored.update(popped_into(n) for n in compat.walk(stmt) if popped_into(n) is not None)
        for n in compat.walk(stmt):
            if not isinstance(n, gast.Name):
                continue
            if id(n) in inside:
                shape_reads.add(n.id)
            elif isinstance(n.ctx, gast.Load):
                if n.id in restored:  # before the statement that first restores it, a read sees the last value
                    other.add(n.id)
            elif id(n) not in restoring:
                stored.add(n.id)  # assigned by the adjoint itself (a value recomputed there): not only restored
    popped, pushes, bare = set(), set(), False
    for n in compat.walk(fn_def):
        if popped_into(n) is not None:
            popped.add(popped_into(n))
        elif isinstance(n, gast.Expr) and is_pop(n.value):
            bare = True
        value = pushed(n)
        value = shape_kept(value) or value
        if isinstance(value, gast.Name):
            pushes.add(value.id)
    return shape_reads, None if bare else popped, pushes, other, stored


def _passes_shape(site) -> bool:
    """Whether ``site`` gives its name the shape of a value already bound (a copy, an item write, ``x op= v``),
    never a new shape of its own: a name with one other site has that site's shape (FixedShapes ``alone``)."""
    return isinstance(site, Op) and (site.kind == "copy" or site.fn is rules.setitem or site.fn is runtime.in_place)


def _constant(shape) -> str:
    """A root's member standing for the shape ``shape`` itself (no name is spelt with parentheses)."""
    return repr(tuple(shape))


def _shape_of(member):
    """The shape a root's member stands for where it is a constant (``_constant``), else None."""
    if not member.startswith("("):
        return None
    return tuple(int(n) for n in member.strip("(),").split(",") if n.strip())


def _range(iter_, ns) -> bool:
    return isinstance(iter_, gast.Call) and isinstance(iter_.func, gast.Name) and iter_.func.id == "range" \
        and ns.globals.get("range", range) is range


def _number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and isinstance(node.value, (bool, int, float, complex))


def _integer(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) is int


def _literal(node) -> bool:
    if isinstance(node, gast.Tuple):
        return all(_literal(e) for e in node.elts)
    return _number(node) or isinstance(node, gast.Constant) and node.value is None

