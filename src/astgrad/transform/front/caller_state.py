"""``bn_param["running_mean"] = v`` into a dict the caller keeps: the write reaches the caller's dict.

``aliasing.check_writes`` accepts such a write in the function ``grad`` was given (``_for_caller``: the
parameter is not differentiated, every binding of it is a write under a string key, and every other use
reads one item).  The parameter is then a dict the generated code treats as one it built itself: the
write runs in place (``runtime.caller_state.put_kept``), as numpy's does, in the primal sweep only, once
a call, storing the value the primal computed (a plain array); items read back carry their gradients by
key, as for a dict literal (whose adjoint never asks a dict for its old values).  The function's first
statement checks, when it runs, that a dict given there is one the function reaches by no other route
(``runtime.caller_state.caller_dict``); the write refuses anything but a dict.  ``x.get(key, default)``
on it becomes ``x[key] if key in x else default``, so that a read of a written key carries its gradient
too.
"""

from __future__ import annotations

from ... import rules
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import If, Op, Raw, blocks
from ..runtime import caller_state


def run_into_caller(body, writes, params, sequences, ns, names) -> None:
    """For each ``(x, op, written)`` of ``writes`` (``op`` binds ``x`` to ``written``, ``t = setitem(x,
    key, value)``): ``written`` writes into ``x`` in place, ``x`` is a container (``sequences``), its
    ``.get`` calls are branches, and the body starts with the check of what ``x`` holds."""
    if not writes:
        return
    head = []
    for x, op, written in writes:
        written.expr = compat.call(compat.name(ns.helper(caller_state.put_kept)),
                                   [compat.clone(a) for a in written.args] + [compat.const(x), compat.const(op.text.strip())])
        if x in sequences:
            continue
        sequences.add(x)
        others = compat.make("Dict", keys=[compat.const(p) for p in params if p != x],
                             values=[compat.name(p) for p in params if p != x])
        check = compat.call(compat.name(ns.helper(caller_state.caller_dict)),
                            [compat.name(x), compat.const(x), others, compat.const(op.text.strip())])
        head.append(Raw(compat.expr_stmt(check), op.line, op.text))
    _branch_gets(body, sequences & {x for x, _, _ in writes}, names)
    body[:0] = head


def _branch_gets(stmts, dicts, names) -> None:
    """``v = x.get(key, default)`` as ``if key in x: v = x[key] else: v = default``."""
    for i, s in enumerate(stmts):
        for block in blocks(s):
            _branch_gets(block, dicts, names)
        got = _get(s, dicts)
        if got is None:
            continue
        x, key, default = got
        test = names.temp()
        has = Op([test], "nondiff", compat.make("Compare", left=compat.clone(key), ops=[gast.In()],
                                                comparators=[compat.name(x)]), s.line, s.text, s.node)
        read = Op(list(s.targets), "prim", compat.make("Subscript", value=compat.name(x), slice=compat.clone(key),
                                                       ctx=gast.Load()),
                  s.line, s.text, s.node, rules.getitem, [compat.name(x), compat.clone(key)])
        other = Op(list(s.targets), "copy", compat.clone(default), s.line, s.text, s.node, args=[compat.clone(default)])
        stmts[i:i + 1] = [has, If(test, [read], [other], s.line, s.text)]


def _get(s, dicts):
    """``(x, key, default)`` of ``v = x.get(key, default)`` (``default`` None if not given), else None."""
    if not (isinstance(s, Op) and s.kind == "opaque" and len(s.targets) == 1):
        return None
    e = s.expr
    if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and e.func.attr == "get"
            and isinstance(e.func.value, gast.Name) and e.func.value.id in dicts and not e.keywords
            and 1 <= len(e.args) <= 2):
        return None
    return e.func.value.id, e.args[0], e.args[1] if len(e.args) == 2 else compat.const(None)
