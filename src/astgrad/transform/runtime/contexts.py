"""What generated code calls for a ``with`` block whose manager carries no gradient.

``with m: body`` runs as ``entered(m)``, the body, ``left()`` in the
primal; around the body's adjoint, only an ``np.errstate`` given constant
settings is entered again (as a new one: numpy's cannot be entered twice),
so the adjoint of ``exp`` under ``over='ignore'`` warns as the primal does.
Generated code has no ``try``: when an exception leaves it, the gradient's
entry calls ``close_left_open`` (through ``origins.add_location``),
which exits, innermost first, every manager a generated frame that is gone
entered, given the exception, as Python's ``with`` does.  The managers
allowed (normalize.RUN_AS_WRITTEN) never swallow an exception:
``contextlib.suppress``, which goes on after the block, is refused.
"""

from __future__ import annotations

import sys
import threading
import types

__all__ = ["entered", "left", "close_left_open"]

_OPEN = threading.local()  # .entries: [(generated frame, manager)], innermost last


def _entries() -> list:
    entries = getattr(_OPEN, "entries", None)
    if entries is None:
        entries = _OPEN.entries = []
    return entries


def entered(manager):
    """``manager.__enter__()``, remembered until ``left()`` (or an exception) exits it."""
    value = type(manager).__enter__(manager)
    _entries().append((sys._getframe(1), manager))
    return value


def left():
    """Exit the innermost manager ``entered`` on this thread: generated code enters and leaves in nesting order."""
    _, manager = _entries().pop()
    type(manager).__exit__(manager, None, None, None)


def close_left_open(exc) -> None:
    """After ``exc`` left generated code: exit the managers its frames entered and did not leave."""
    entries = getattr(_OPEN, "entries", None)
    if not entries:
        return
    running = set()
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        running.add(id(frame))
        frame = frame.f_back
    while entries and id(entries[-1][0]) not in running:
        _, manager = entries.pop()
        type(manager).__exit__(manager, type(exc), exc, exc.__traceback__)  # none of them swallows (normalize)
