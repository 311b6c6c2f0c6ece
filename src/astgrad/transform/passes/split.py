"""A called function's generated pair, cut from one function: ``forward_f`` and ``backward_f``.

A callee is reversed and optimised as the entry is, as one function whose
primal sweep ends in ``returns(value)`` (ir/tagged.py) and whose adjoint
follows: every pass then makes for it the decisions it makes for the entry
(shapes instead of arrays, values recomputed, saves in locals, releases).
``split`` cuts that function where it returns: what runs before is
``forward_f(_stack, ...)``, which pushes, as one tuple, the names the rest
reads before binding them; what runs after is ``backward_f(_stack,
dresult)``, which pops them.  The tuple holds what the adjoint reads, no
more: an array it reads only for its shape has become ``only_shape(t)``
by then, a value it recomputes is not in it.
"""

from __future__ import annotations

from ..ir import compat
from ..ir.compat import gast
from ..ir.tagged import push, pop, returned
from ..ir.trees import function_def

#: statements whose effect on the flow of control the liveness below does not follow
_JUMPS = (gast.Break, gast.Continue, gast.Try, gast.With, gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef,
          gast.Global, gast.Nonlocal)


def split(fn_def, forward_name, backward_name, stack, seed, tidy=lambda f: f):
    """``(forward, backward)``: ``fn_def`` (params ``stack``, the user's, keyword ``seed``) cut at its ``returns``.

    ``tidy`` (dead code) runs over each half: a statement of the backward
    half that only the whole function needed (``i = _saved1`` restoring a
    loop variable no later statement reads) goes before the halves are
    joined by what crosses, and what the forward half then computes for
    nothing goes after.
    """
    body = fn_def.body
    at = next(i for i, s in enumerate(body) if returned(s) is not None)
    value = returned(body[at])
    before, after = body[:at], _without_dead_releases(body[at + 1:])
    forward_args = compat.clone(fn_def.args)
    keep = [i for i, a in enumerate(forward_args.kwonlyargs) if a.id != seed]
    forward_args.kwonlyargs = [forward_args.kwonlyargs[i] for i in keep]
    forward_args.kw_defaults = [forward_args.kw_defaults[i] for i in keep]
    backward_args = compat.make("arguments", args=[compat.make("Name", id=n, ctx=gast.Param()) for n in (stack, seed)],
                                posonlyargs=[], vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[])
    backward = tidy(function_def(backward_name, backward_args, after))
    params = [a.id for a in fn_def.args.args + fn_def.args.kwonlyargs]
    bound = set(params) | _stored(before)
    crossing = sorted((_read_before_bound(backward.body) & bound) - {stack, seed})
    surely = set(params) | {n for s in before for n in _top_level_bound(s)}
    forward_body = [compat.assign(n, compat.const(None)) for n in crossing if n not in surely] + before
    if crossing:
        state = [compat.name(n) for n in crossing]
        forward_body.append(push(stack, state[0] if len(state) == 1 else compat.tuple_(state)))
        backward.body.insert(0, compat.assign(crossing if len(crossing) > 1 else crossing[0], pop(stack)))
    forward_body.append(compat.ret(value))
    return tidy(function_def(forward_name, forward_args, forward_body)), backward


def _without_dead_releases(stmts):
    """``stmts`` without the ``del`` of names they do not use otherwise (``del t3`` after ``returns(t3)``:
    the forward function's return frees them)."""
    used = {n.id for s in stmts for n in compat.walk(s) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Del)}
    out = []
    for s in stmts:
        if isinstance(s, gast.Delete):
            s.targets = [t for t in s.targets if not isinstance(t, gast.Name) or t.id in used]
            if not s.targets:
                continue
        out.append(s)
    return out


def _stored(stmts) -> set:
    return {n.id for s in stmts for n in compat.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _loads(node) -> set:
    """Names ``node`` reads; ``del x`` reads ``x`` too (it must be bound)."""
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store)}


def _top_level_bound(stmt) -> set:
    """Names an assignment at the function's top level binds (surely bound after it)."""
    if isinstance(stmt, gast.Assign):
        return {n for t in stmt.targets for n in _names_of(t)}
    return set()


def _names_of(target) -> set:
    if isinstance(target, gast.Name):
        return {target.id}
    if isinstance(target, (gast.Tuple, gast.List)):
        return set().union(*(_names_of(t) for t in target.elts))
    return set()


def _read_before_bound(stmts) -> set:
    """The names ``stmts`` may read before binding them: a backward liveness, loops to a fixed point.

    Statements that jump (``break``, ``try``, ...) are not followed: then every name they read counts.
    """
    if any(isinstance(n, _JUMPS) for s in stmts for n in compat.walk(s)):
        return set().union(*(_loads(s) for s in stmts)) if stmts else set()
    return _block(stmts, set())


def _block(stmts, live):
    for stmt in reversed(stmts):
        live = _statement(stmt, live)
    return live


def _statement(stmt, live):
    if isinstance(stmt, gast.Assign):
        killed = set().union(*(_names_of(t) for t in stmt.targets))
        return (live - killed) | _loads(stmt)  # a subscript target reads its array
    if isinstance(stmt, gast.For):
        done = _block(stmt.orelse, live)
        head = set(done)
        while True:
            new = done | (_block(stmt.body, head) - _names_of(stmt.target))
            if new <= head:
                return head | _loads(stmt.iter)
            head |= new
    if isinstance(stmt, gast.While):
        head = _block(stmt.orelse, live) | _loads(stmt.test)
        while True:
            new = _block(stmt.body, head)
            if new <= head:
                return head
            head |= new
    if isinstance(stmt, gast.If):
        return _block(stmt.body, live) | _block(stmt.orelse, live) | _loads(stmt.test)
    if isinstance(stmt, (gast.Return, gast.Raise)):
        return _loads(stmt)  # nothing after it runs
    return live | _loads(stmt) | _stored([stmt])  # an augmented target is read; anything else: all it names
