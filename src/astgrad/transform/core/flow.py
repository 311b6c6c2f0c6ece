"""Sweeps that carry a state per name through branches and loops, written once for the two that do.

The forward sweep keeps, per name, whether it carries a tangent; the
batching sweep whether it carries a batch axis.  Both meet paths the same
way: an ``if`` joins its two branches' states, and a loop's body is swept
again from the joined state until the state at its start stops growing
(its breaks joined in), each extra sweep undoing what the one before made.
A subclass gives ``join(*states)`` (the state where paths meet),
``fill(wanted, have)`` (the statements that give a name what ``wanted``
says it carries where ``have`` lacks it: a zero tangent, a broadcast batch)
and ``sweep(stmts, state)``; it keeps ``names``, ``module`` and
``last_line``, and extends ``checkpoint``/``rewind`` when a sweep of a loop
body makes more than names and comments.
"""

from __future__ import annotations

from typing import Any

from ..ir import compat


class StateSweep:
    """The control flow of a sweep whose state is a dict of names; see the module docstring."""

    names: Any  # the function's generated names (naming.Names)
    module: Any  # the ModuleBuilder of the generated module (pipeline.py)

    def __init__(self):
        self.loops: list = []  # per enclosing loop: (the state assumed at its start, the states at its breaks)
        self.last_line = None

    def join(self, *states) -> dict:
        raise NotImplementedError

    def fill(self, wanted, have) -> list:
        raise NotImplementedError

    def sweep(self, stmts, state) -> list:
        raise NotImplementedError

    def branches(self, s, state) -> list:
        """``if``: each branch swept from ``state``, then made to agree with the joined state."""
        body_state, else_state = dict(state), dict(state)
        body = self.sweep(s.body, body_state)
        orelse = self.sweep(s.orelse, else_state)
        joined = self.join(body_state, else_state)
        body += self.fill(joined, body_state)
        orelse += self.fill(joined, else_state)
        state.clear()
        state.update(joined)
        return [compat.if_stmt(compat.name(s.test), body or [compat.make("Pass")], orelse)]

    def checkpoint(self):
        """What a sweep of a loop body adds and ``rewind`` takes back: generated names, comments, the line."""
        return self.names.snapshot(), self.module.mark(), self.last_line

    def rewind(self, mark) -> None:
        names, marks, self.last_line = mark
        self.names.restore(names)
        self.module.reset(marks)

    def loop(self, s, state, make, start=None) -> list:
        """The loop's body swept with the state at its start iterated to a fixed point; ``make(body)`` builds the
        loop statement, ``start`` (name -> state) is what each trip begins with whatever the state says."""
        before, entry = dict(state), dict(state)
        while True:
            mark = self.checkpoint()
            end = dict(entry)
            end.update(start or {})
            self.loops.append((entry, []))
            body = self.sweep(s.body, end)
            _, breaks = self.loops.pop()
            grown = self.join(entry, end, *breaks)
            if grown == entry:
                break
            self.rewind(mark)
            entry = grown
        body += self.fill(entry, end)
        state.clear()
        state.update(entry)
        self.last_line = None
        return self.fill(entry, before) + [make(body or [compat.make("Pass")])]

    def broken(self, state) -> list:
        """``break``: its state joins the loop's start, and agrees with it here."""
        entry, breaks = self.loops[-1]
        breaks.append(dict(state))
        return self.fill(entry, state) + [compat.make("Break")]
