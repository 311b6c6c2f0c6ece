"""Which names hold real floats before each statement of a generated function, given its parameters'.

A guard ``shape(y) if floats(y) else y * y * 3`` (passes/unused.py) folds to
its shape computation where ``y`` surely holds real floats at that
statement.  This walks the function in order from the parameters known to
hold them (api/gradient.py specialises on them as on ranks), the way the
code runs: an assignment gives its name the kind of its value (``kind_of``,
from the names known at that point), a branch keeps what both ways give, a
loop what holds at its head on every iteration.  Knowing nothing is always
safe: a name stored any other way (a loop's target, a tuple, ``x.dtype =``,
a pop from the stack) is known no more, and inside a statement it does not
follow (``try``, ``with``, a loop with ``break``), or in a function that
declares a name ``global`` or ``nonlocal``, nothing is known.

Two levels, as ``kind_of`` returns them: ``ARRAY`` for an array or numpy
scalar of real floats, ``FLOATS`` also for a ``Shaped`` of them, which
``runtime.floats`` takes but numpy's functions do not.
"""

from __future__ import annotations

from ..ir import compat
from ..ir.compat import gast

#: the kinds ``kind_of`` tells: an array (or numpy scalar) of real floats; that or a Shaped of them
ARRAY, FLOATS = 2, 1


def floats_before(fn_def, given, kind_of) -> dict:
    """``id(statement) -> {name: kind}`` for every statement the walk follows, ``given``: parameter -> kind.

    ``kind_of(expr, known)`` is ``ARRAY``, ``FLOATS`` or None for a value
    computed where ``known`` (name -> kind) holds.
    """
    before: dict = {}
    if any(isinstance(n, (gast.Global, gast.Nonlocal)) for n in compat.walk(fn_def)):
        return before  # a name others may rebind between two statements: nothing is known
    _block(fn_def.body, dict(given), kind_of, before)
    return before


def _block(stmts, known, kind_of, before):
    """Walk ``stmts`` from ``known`` (changed in place to what holds after them)."""
    for s in stmts:
        before[id(s)] = dict(known)
        if isinstance(s, gast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], gast.Name):
            _forget(s.value, known)  # a := inside
            kind = kind_of(s.value, known)
            if kind is None:
                known.pop(s.targets[0].id, None)
            else:
                known[s.targets[0].id] = kind
        elif isinstance(s, gast.If):
            _forget(s.test, known)
            body, orelse = dict(known), dict(known)
            _block(s.body, body, kind_of, before)
            _block(s.orelse, orelse, kind_of, before)
            _meet(known, body, orelse)
        elif isinstance(s, (gast.For, gast.While)) and not _jumps(s):
            _forget(s.target if isinstance(s, gast.For) else s.test, known)
            if isinstance(s, gast.For):
                _forget(s.iter, known)
            while True:  # what holds at the head: before the loop and after every iteration
                after = dict(known)
                _block(s.body, after, kind_of, before)
                if isinstance(s, gast.For):
                    _forget(s.target, after)
                else:
                    _forget(s.test, after)
                head = dict(known)
                _meet(head, after)
                if head == known:
                    break
                known.clear()
                known.update(head)
            _block(s.orelse, known, kind_of, before)
        else:
            _forget(s, known)


def _forget(node, known):
    """Drop from ``known`` every name ``node`` stores or writes an attribute of (``x.dtype = ...``)."""
    for n in compat.walk(node):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            known.pop(n.id, None)
        elif isinstance(n, gast.Attribute) and not isinstance(n.ctx, gast.Load) and isinstance(n.value, gast.Name):
            known.pop(n.value.id, None)


def _meet(known, *others):
    """``known`` keeps what every one of ``others`` knows too, at the lower of the kinds."""
    for name in list(known):
        kinds = [o.get(name) for o in others]
        if None in kinds:
            del known[name]
        else:
            known[name] = min([known[name], *kinds])


def _jumps(loop) -> bool:
    """A ``break`` or ``continue`` of this loop (or any, to keep it simple) inside it."""
    return any(isinstance(n, (gast.Break, gast.Continue)) for n in compat.walk(loop))
