"""Shapes a loop's ``x op= v`` proves equal: the reverse sweep of its trips un-broadcasts nothing.

``vel += 0.5 * dt * acc`` on a numpy array ``vel`` keeps ``vel``'s shape,
or numpy raises: once a trip has run it, the shape of ``vel + 0.5 * dt *
acc`` is ``vel``'s, so ``acc``'s shape broadcasts into ``vel``'s.  A
velocity Verlet step does this three times (``vel += ...``, ``pos += dt *
vel``, ``vel += ...`` with ``acc = -pos / mass``), which proves ``vel``,
``pos`` and ``acc`` one shape: the adjoints of the step's operations have
their operands' shapes, and the reverse sweep's ``unbroadcast(g, shape(x))``
calls (eight a trip there) do nothing.

Proven on the normal form, never guessed (``after_trips``):

* shapes are FixedShapes' roots (passes/fixed_shapes.py): every value a
  name holds in a call has the broadcast shape of the names of its root,
  so what one trip shows of them holds for every value;
* a fact ``root(x op v)`` broadcasts into ``root(x)`` comes from a
  statement ``x = in_place(x op v, array_kind(x), op)`` of a loop's body
  (outside any branch or inner loop: every trip runs it), ``x`` surely a
  numpy array (FixedShapes' ``_numpy_arrays``: parameters given real
  floats, copies of them and ``x op= v`` on them; a number, a list or a
  Dask array is rebound to the broadcast instead);
* a fact holds where the reverse sweep reverses a trip of its loop: the
  adjoints of the operations in the loop's body (nested blocks too), never
  before or after the loop (which may run no trip), nor in a ``while``
  loop's test (run once more, after the last trip).  A loop that may
  ``break`` (a trip cut short) or is checkpointed gives none;
* "broadcasts into" is a preorder (numpy's broadcast is associative):
  ``A`` broadcasts into ``B`` where each name of ``A`` is in ``B`` or, by
  a fact, broadcasts into a set that does; an operand of an elementwise
  ufunc has the result's shape where each broadcasts into the other.

Without any fact, FixedShapes' roots alone prove an operand of an
elementwise operation in a loop (of an entry or a callee) of its result's
shape where the two roots are equal: RK4's ``k1 + 2 * k2`` of a callee's
``np.array([a, b])``, ``y + h * k3`` (``(2,)`` broadcast with a ``y`` of
rank 1 is ``(2,)`` or numpy raises), ``ys[i]`` of a list whose items are
one shape.  FixedShapes is then made at the first question (it asks ranks).

Only the reverse sweeps (``grad``, ``vjp``, a pullback) ask: a forward
sweep computes a trip's tangents before its writes ran.  Asking proves
parameters arrays of real floats, and makes the gradient specialise on
them and on ranks, as fixed_shapes.py does.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import For, If, Op, While, breaks
from .fixed_shapes import VARIES, FixedShapes


class TripShapes:
    """What the trips of ``body``'s loops prove of shapes (see the module's doc).

    ``keeps(op, i)``: operand ``i`` of the elementwise ``op`` has its result's
    shape; ``same(op, a, b)``: names ``a`` and ``b`` have one shape where
    ``op``'s adjoint runs.  ``floats``: the entry's GivenFloats.
    """

    def __init__(self, body, params, analysis, ns, floats, returned_shape=None):
        self.facts: dict = {}  # id(op) -> the facts that hold where its adjoint runs (a name, the root it fits)
        self._fixed = None
        self._make = lambda: FixedShapes(body, params, analysis, ns, floats, returned_shape)
        if floats is not None and any(_writes(s) for s in _loop_bodies(body)):
            self._fixed = self._make()
        _block(body, (), self._fixed, self.facts, False)

    @property
    def fixed(self):
        """FixedShapes, made at the first question about an operation in a loop (it asks ranks)."""
        if self._fixed is None:
            self._fixed = self._make()
        return self._fixed

    def keeps(self, op, i) -> bool:
        facts = self.facts.get(id(op))
        fn = op.fn
        if facts is None or not (op.kind == "prim" and isinstance(fn, np.ufunc) and fn.signature is None
                                 and fn.nout == 1 and len(op.args) == fn.nin >= 2 and not op.kwargs
                                 and len(op.targets) == 1):
            return False
        return self._one(_root(self.fixed, compat.name(op.targets[0])), _root(self.fixed, op.args[i]), facts)

    def same(self, op, a, b) -> bool:
        facts = self.facts.get(id(op))
        if facts is None:
            return False
        return self._one(_root(self.fixed, compat.name(a)), _root(self.fixed, compat.name(b)), facts)

    @staticmethod
    def _one(first, second, facts) -> bool:
        return first is not None and second is not None and _into(first, second, facts) \
            and _into(second, first, facts)


def _loop_bodies(body):
    for s in body:
        if isinstance(s, (For, While)):
            yield s.body
        for block in _blocks(s):
            yield from _loop_bodies(block)


def _writes(stmts) -> bool:
    return any(isinstance(s, Op) and s.fn is runtime.in_place for s in stmts)


def _blocks(s):
    if isinstance(s, If):
        return [s.body, s.orelse]
    if isinstance(s, (For, While)):
        return [s.cond, s.body] if isinstance(s, While) else [s.body]
    return []


def _block(stmts, facts, fixed, found, looped):
    """Note in ``found`` (id(op) -> facts) the ``facts`` (pairs: a name, the root it broadcasts into) that hold
    where the adjoints of the operations of ``stmts`` run, for each operation in a loop (``looped``), which
    FixedShapes' roots alone may prove too; ``fixed`` None: no loop writes, no facts."""
    for s in stmts:
        if isinstance(s, Op):
            if looped:
                found[id(s)] = facts
        elif isinstance(s, If):
            _block(s.body, facts, fixed, found, looped)
            _block(s.orelse, facts, fixed, found, looped)
        elif isinstance(s, While):
            _block(s.cond, facts, fixed, found, looped)  # the test runs after the last trip too: the outer facts
            _block(s.body, facts + _facts(s.body, fixed), fixed, found, True)
        elif isinstance(s, For):
            whole = not s.counted and s.every is None and s.snapshots is None
            _block(s.body, facts + (_facts(s.body, fixed) if whole else ()), fixed, found, True)


def _facts(body, fixed) -> tuple:
    """What a trip of a loop with this ``body`` proves: ``(name, root)`` pairs, the name's shape broadcasting
    into the root's; none where the loop may ``break`` (a trip cut short)."""
    if fixed is None or breaks(body):
        return ()
    facts: list = []
    for s in body:
        if not (isinstance(s, Op) and s.kind == "prim" and s.fn is runtime.in_place and len(s.args) == 3
                and not s.kwargs and isinstance(s.args[0], gast.Name)):
            continue
        x = fixed._kind_of(s.args[1])
        if x is None or x.id not in fixed._numpy_arrays():
            continue
        new, into = _root(fixed, s.args[0]), _root(fixed, x)
        if new is not None and into is not None:
            facts.extend((name, into) for name in new)
    return tuple(facts)


def _root(fixed, atom):
    root = fixed._of(atom)
    return None if root is None or root is VARIES else root


def _into(names, root, facts, seen=frozenset()) -> bool:
    """Whether the broadcast of ``names`` surely broadcasts into ``root``'s shape, by ``facts``."""
    return all(_name_into(name, root, facts, seen) for name in names)


def _name_into(name, root, facts, seen) -> bool:
    if name in root:
        return True
    if name in seen:
        return False
    return any(n == name and _into(into, root, facts, seen | {name}) for n, into in facts)
