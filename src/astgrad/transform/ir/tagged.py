"""The nodes of generated code that the passes after reversal look for.

The sweeps save values for the adjoint on the module's stack (``push``), take
them back (``pop``), and the memory passes keep only an array's shape
(``shape_of``) or delete it (``release``).  Each is an ordinary gast node, so
emitting it needs nothing special, tagged with its kind: a pass asks
``kind(node)``, ``pushed(stmt)`` or ``popped_into(stmt)``, never matches the
stack's name or a helper's name as a string.  A push and a pop are tagged on
their call, so a statement rebuilt around it (a dead ``t = _stack.pop()``
kept as a bare pop) keeps it; ``compat.clone`` keeps tags too.
"""

from __future__ import annotations

from . import compat
from .compat import gast

KIND = "astgrad_kind"
PUSH, POP, SHAPE_OF, RELEASE, RETURNS = "push", "pop", "shape_of", "release", "returns"


def _tagged(node, kind):
    setattr(node, KIND, kind)
    return node


def kind(node):
    """``"push"``, ``"pop"``, ``"shape_of"``, ``"release"`` or None."""
    return getattr(node, KIND, None)


def push(stack, value):
    """``stack.append(value)``, a statement; ``stack`` is the module's name for the stack."""
    return compat.expr_stmt(_tagged(compat.call(compat.attr(compat.name(stack), "append"), [value]), PUSH))


def pop(stack):
    """``stack.pop()``, an expression."""
    return _tagged(compat.call(compat.attr(compat.name(stack), "pop")), POP)


def shape_of(helper, value):
    """``only_shape(value)``: the array's shape, standing in for it where only that is read.

    ``helper`` is the module's name for ``runtime.only_shape``.
    """
    return _tagged(compat.call(compat.name(helper), [value]), SHAPE_OF)


def release(names):
    """``del a, b``: arrays nothing reads any more."""
    return _tagged(compat.make("Delete", targets=[compat.name(n, store=False) for n in names]), RELEASE)


def returns(value):
    """``__returns__(value)``, a statement: where a called function's forward half returns ``value``.

    It stands in the one function a callee is reversed and optimised as,
    between its primal and its adjoint, until ``passes/split.py`` cuts the
    function there; an unknown call to every pass, so ``value`` stays whole.
    """
    return compat.expr_stmt(_tagged(compat.call(compat.name("__returns__"), [value]), RETURNS))


def returned(stmt):
    """The value of a ``returns`` statement, else None."""
    if isinstance(stmt, gast.Expr) and kind(stmt.value) == RETURNS:
        return stmt.value.args[0]
    return None


def pushed(stmt):
    """The value a push statement saves, else None."""
    if isinstance(stmt, gast.Expr) and kind(stmt.value) == PUSH:
        return stmt.value.args[0]
    return None


def is_pop(node) -> bool:
    return kind(node) == POP


def popped_into(stmt):
    """``name`` for a statement ``name = <pop>``, else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and is_pop(stmt.value):
        return stmt.targets[0].id
    return None


def shape_kept(node):
    """The name in ``only_shape(name)``, else None."""
    if kind(node) == SHAPE_OF and isinstance(node.args[0], gast.Name):
        return node.args[0]
    return None


def uses_stack(stmts, stack) -> bool:
    """Whether ``stmts`` read the name ``stack`` at all: push, pop, or pass it to a called function's
    forward half (a function without any of these needs no ``_stack = []``)."""
    return any(isinstance(n, gast.Name) and n.id == stack for s in stmts for n in compat.walk(s))
