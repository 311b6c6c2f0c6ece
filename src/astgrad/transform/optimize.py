"""Remove what the generated function computes but never uses.

Dead-store elimination over a generated function: an assignment to a name
that nothing reads is dropped when its value has no side effects (a pop
from the stack stays, as a bare ``_stack.pop()``); ``if`` statements left
with empty branches collapse; reverse loops with empty bodies disappear.
Runs to a fixed point, so chains of dead temporaries go too.
"""

from __future__ import annotations

from . import compat
from .compat import gast

_PURE_BUILTINS = {"range", "len", "min", "reversed", "float", "abs", "tuple"}


def optimize(fn_def, ns, keep=()):
    while True:
        reads = _reads(fn_def)
        changed = [False]
        fn_def.body = _sweep(fn_def.body, reads | set(keep), ns, changed) or [compat.make("Pass")]
        if not changed[0]:
            return fn_def


def _reads(tree):
    return {n.id for n in gast.walk(tree) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}


def _sweep(stmts, reads, ns, changed):
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and _dead(s, reads):
            changed[0] = True
            if not _pure(s.value, ns):
                out.append(compat.expr_stmt(s.value))
            continue
        if isinstance(s, gast.If):
            s.body = _sweep(s.body, reads, ns, changed)
            s.orelse = _sweep(s.orelse, reads, ns, changed)
            if _empty(s.body) and _empty(s.orelse):
                changed[0] = True
                if not _pure(s.test, ns):
                    out.append(compat.expr_stmt(s.test))
                continue
            if _empty(s.orelse):
                s.orelse = []
            if _empty(s.body):  # if c: pass / else: ...  ->  if not c: ...
                s.test = compat.make("UnaryOp", op=gast.Not(), operand=s.test)
                s.body, s.orelse = s.orelse, []
        elif isinstance(s, (gast.For, gast.While)):
            s.body = _sweep(s.body, reads, ns, changed) or [compat.make("Pass")]
            if isinstance(s, gast.For) and _empty(s.body) and _pure(s.iter, ns) \
                    and s.target.id not in reads:
                changed[0] = True
                continue
        out.append(s)
    return out


def _empty(stmts):
    return all(isinstance(s, gast.Pass) for s in stmts)


def _dead(stmt, reads):
    targets = stmt.targets[0]
    names = [targets] if isinstance(targets, gast.Name) else list(getattr(targets, "elts", []))
    return names and all(isinstance(n, gast.Name) and n.id not in reads for n in names)


def _pure(expr, ns) -> bool:
    """No side effects: names, constants, operators and known pure calls."""
    for node in gast.walk(expr):
        if isinstance(node, gast.Call):
            func = node.func
            root = func
            while isinstance(root, gast.Attribute):
                root = root.value
            if not isinstance(root, gast.Name):
                return False
            if root.id == "_stack":
                return False
            obj = ns.globals.get(root.id)
            if root.id in ns.pure or root.id in _PURE_BUILTINS:
                continue
            if getattr(obj, "__name__", "") in ("numpy", "math") and not _random(func):
                continue
            return False
        elif isinstance(node, (gast.Yield, gast.Await, gast.NamedExpr)):
            return False
    return True


def _random(func) -> bool:
    return any(isinstance(n, gast.Attribute) and n.attr == "random" for n in gast.walk(func))
