"""Errors raised inside generated code, pointed back at the user's line.

A shape mismatch in the user's code, or a rule refusing at run time (svd's
singular vectors at equal singular values), raises inside the generated module, whose traceback names
``<astgrad f grad wrt x file.py:3>``, line 14.  The user wants their own
file and line.  The generated code knows them: a primal statement is one
operation of one user line (``Reverser.primal_op`` tags it), and an adjoint
block follows its comment ``# grad of line N: ...``.

When the transform finishes, ``origins`` records the user line of every
generated statement in order (a few tuples, no text work).  Only when an
exception reaches the gradient's entry does ``add_location`` parse the
generated source, match its statements with that record and add a note
(``compat.add_note``) naming the file, line and source text.  Nothing runs on
the successful path.
"""

from __future__ import annotations

import ast

from ..ir.compat import add_note, gast
from .contexts import close_left_open
from ..ir.trees import is_marker

#: the attribute a primal statement carries: (file name, line, source text)
ORIGIN = "astgrad_origin"

_BLOCKS = ("body", "orelse", "finalbody", "handlers")


def keep_origin(old, new):
    """``new``, a statement replacing ``old``, with ``old``'s user line."""
    origin = getattr(old, ORIGIN, None)
    if origin is not None:
        setattr(new, ORIGIN, origin)
    return new


def with_origin(stmt, filename, line, text):
    """``stmt``, kept as the user wrote it (a call for its effect), tagged with the user's line unless it has one."""
    if line and getattr(stmt, ORIGIN, None) is None:
        setattr(stmt, ORIGIN, (filename, line, text, False))
    return stmt


def origins(functions, comment_origins) -> list:
    """The user line of each generated statement (markers left out), in source order.

    A primal statement's own tag wins; any other statement belongs to the
    last comment before it in its block or an enclosing one, as it reads.
    """
    found: list = []

    def block(stmts, current):
        for s in stmts:
            if is_marker(s):
                current = comment_origins[int(s.value.id[len("__comment_"):-2])]
                continue
            found.append(getattr(s, ORIGIN, None) or current)
            inner = None if isinstance(s, gast.FunctionDef) else current
            for field in _BLOCKS:
                block(getattr(s, field, None) or [], inner)
    block(functions, None)
    return found


def _statements(tree) -> list:
    out: list = []

    def block(stmts):
        for s in stmts:
            out.append(s)
            for field in _BLOCKS:
                block(getattr(s, field, None) or [])
    block(tree.body)
    return out


def user_line(generated, lineno):
    """``(file, line, text, kind)`` of the user line behind line ``lineno`` of the generated module, or None."""
    try:
        stmts = _statements(ast.parse(generated.source))
    except SyntaxError:
        return None
    if len(stmts) != len(generated.origins):
        return None  # the record does not match the text: say nothing rather than something wrong
    best = None
    for stmt, origin in zip(stmts, generated.origins):
        if stmt.lineno <= lineno <= (stmt.end_lineno or stmt.lineno):
            best = origin  # the innermost statement comes last
    return best


def add_location(generated, exc, label) -> None:
    """Add a note to ``exc`` naming the user's line the generated code was running for.

    First exit the context managers of ``with`` blocks the exception left open (contexts.py)."""
    close_left_open(exc)
    if getattr(exc, "_astgrad_located", False):
        return
    tb, lineno = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == generated.filename:
            lineno = tb.tb_lineno  # the innermost generated frame
        tb = tb.tb_next
    if lineno is None:
        return
    origin = user_line(generated, lineno)
    if origin is None:
        return
    filename, line, text, adjoint = origin
    what = "computing the gradient of" if adjoint else "running"
    try:
        add_note(exc, f"astgrad: raised in {label} (line {lineno} of {generated.filename}) while {what}\n"
                     f'  File "{filename}", line {line}\n    {text.strip()}')
        exc._astgrad_located = True
    except (AttributeError, TypeError):
        pass  # an exception type that takes no notes or attributes
