"""``show(f, stage=...)``: a function as it is after one pass of the pipeline."""

from __future__ import annotations

from ..ir import compat
from ..ir.trees import function_def
from .emit import render
from ..ir.nodes import Break, For, If, Op, Raw, While


def render_stage(ctx, name) -> str:
    """The function after pass ``name``: the user's, its normal form, or the generated one."""
    if not ctx.fn_defs:
        if ctx.body is None:
            return compat.to_source(ctx.source.tree)
        fn_def = function_def(ctx.fn.__name__, ctx.source.tree.args, _ir_statements(ctx.body) +
                              [compat.ret(compat.clone(ctx.ret))])
        return render([fn_def], ctx.module.comments, [f"{ctx.fn.__qualname__} after {name}", *ctx.choices])
    if name == "emit":
        return ctx.module.source
    return render([ctx.fn_def], ctx.module.comments, [f"{ctx.fn.__qualname__} after {name}"])


def _ir_statements(stmts) -> list:
    out = []
    for s in stmts:
        if isinstance(s, Op):
            out.append(compat.assign(s.targets if s.kind == "unpack" else s.targets[0], compat.clone(s.expr)))
        elif isinstance(s, If):
            out.append(compat.if_stmt(compat.name(s.test), _ir_statements(s.body) or [compat.make("Pass")],
                                      _ir_statements(s.orelse)))
        elif isinstance(s, For):
            out.append(compat.for_stmt(s.target, compat.clone(s.iter), _ir_statements(s.body) or [compat.make("Pass")]))
        elif isinstance(s, While):
            cond = _ir_statements(s.cond)
            out += cond + [compat.while_stmt(compat.name(s.test), (_ir_statements(s.body) + _ir_statements(s.cond))
                                             or [compat.make("Pass")])]
        elif isinstance(s, Break):
            out.append(compat.make("Break"))
        elif isinstance(s, Raw):
            out.append(s.stmt)
    return out
