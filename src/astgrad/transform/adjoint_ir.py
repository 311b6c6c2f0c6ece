"""The nodes of generated code that the passes after reversal look for.

The sweeps save values for the adjoint on the module's stack (``push``), take
them back (``pop``), and the memory passes keep only an array's shape
(``shape_of``) or delete it (``release``).  Each is an ordinary gast node, so
emitting it needs nothing special, tagged with its kind: a pass asks
``kind(node)`` or ``pushed(stmt)``, never matches the stack's name or a
helper's name as a string.  ``compat.clone`` keeps the tag.
"""

from __future__ import annotations

from . import compat
from .compat import gast

KIND = "astgrad_kind"
PUSH, POP, SHAPE_OF, RELEASE = "push", "pop", "shape_of", "release"


def _tagged(node, kind):
    setattr(node, KIND, kind)
    return node


def kind(node):
    """``"push"``, ``"pop"``, ``"shape_of"``, ``"release"`` or None."""
    return getattr(node, KIND, None)


def push(stack, value):
    """``stack.append(value)``, a statement; ``stack`` is the module's name for the stack."""
    call = compat.call(compat.attr(compat.name(stack), "append"), [value])
    return _tagged(compat.expr_stmt(call), PUSH)


def pop(stack):
    """``stack.pop()``, an expression."""
    return _tagged(compat.call(compat.attr(compat.name(stack), "pop")), POP)


def pushed(stmt):
    """The value a push statement saves, else None."""
    if kind(stmt) != PUSH:
        return None
    return stmt.value.args[0]


def is_pop(node) -> bool:
    return kind(node) == POP


def popped_into(stmt):
    """``name`` for a statement ``name = <pop>``, else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and is_pop(stmt.value):
        return stmt.targets[0].id
    return None


def uses_stack(stmts, stack) -> bool:
    """Whether ``stmts`` name the stack at all (a function without saves needs no ``_stack = []``)."""
    return any(isinstance(n, gast.Name) and n.id == stack for s in stmts for n in compat.walk(s))
