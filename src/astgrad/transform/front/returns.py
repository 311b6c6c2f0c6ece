"""What a differentiated function returns: a scalar for ``grad``, or ``(loss, aux)``.

``grad`` seeds the output's adjoint with the number 1.0.  On an array output
that number broadcasts, and the result would silently be the gradient of the
output's sum; on a tuple, list or string the seed reaches nothing and the
gradient would be zero.  So the generated function checks its output at run
time (the output's type is only known then), unless the transform can see it
is a number: a full reduction (``np.sum(x)``, ``x.mean()``), arithmetic on
numbers, ``float(...)``.  Then the check costs nothing, and an output the
adjoint does not read is still not computed.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ir import compat
from .. import runtime
from ..ir.compat import gast
from ..ir.nodes import For, Op, Raw, walk_ops, walk_statements
from ..runtime.outputs import aux_pair, not_scalar, scalar_output

#: numpy functions returning one number when given one array and no axis
_FULL_REDUCTIONS = {np.sum, np.mean, np.prod, np.max, np.min, np.amax, np.amin, np.var, np.std,
                    np.linalg.norm, np.nansum, np.nanmean}
_NUMBER_KINDS = frozenset("iufc")


def surely_scalar(body, ret, params) -> bool:
    """Whether ``ret`` (an atom) is a number on every call, whatever the arguments are."""
    if _number(ret):
        return True
    if not isinstance(ret, gast.Name):
        return False
    defs: dict = {}
    for op in walk_ops(body):
        for t in op.targets:
            defs.setdefault(t, []).append(op)
    scalar = set(defs) - set(params) - {s.target for s in walk_statements(body) if isinstance(s, For)}
    changed = True
    while changed:  # the largest set of names whose every assignment gives a number
        changed = False
        for name in sorted(scalar):
            if not all(_gives_number(op, scalar) for op in defs[name]):
                scalar.discard(name)
                changed = True
    return ret.id in scalar


def _gives_number(op, scalar) -> bool:
    if len(op.targets) != 1:
        return False

    def known(a):
        return _number(a) or isinstance(a, gast.Name) and a.id in scalar
    if op.kind == "nondiff":
        return not op.args and _number(op.expr)
    if op.kind == "copy":
        expr = op.expr
        if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and expr.func.id == "float":
            return True  # float(...) returns a Python float or raises
        return len(op.args) == 1 and known(op.args[0])
    if op.kind != "prim":
        return False
    fn = op.fn
    try:
        if fn in _FULL_REDUCTIONS:
            return len(op.args) == 1 and not op.kwargs
    except TypeError:
        return False
    elementwise = isinstance(fn, np.ufunc) and fn.signature is None or fn is builtins.abs
    return elementwise and not op.kwargs and all(known(a) for a in op.args)


def _number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) in (int, float)


def _where(fn) -> str:
    return f"{fn.__qualname__} ({fn.__code__.co_filename.rsplit('/', 1)[-1]}:{fn.__code__.co_firstlineno})"


def unpack_aux(body, ret, ns, names, fn):
    """Statements checking that ``ret`` is a pair and unpacking it, and the atom of the loss."""
    check = compat.call(compat.name(ns.bind(aux_pair, "aux_pair")), [compat.clone(ret), compat.const(_where(fn))], {})
    last = [op for op in walk_ops(body) if isinstance(ret, gast.Name) and ret.id in op.targets][-1:]
    line, text, node = (last[0].line, last[0].text, last[0].node) if last else (fn.__code__.co_firstlineno, "", None)
    loss, aux = names.fresh("loss"), names.fresh("aux")
    unpack = Op([loss, aux], "unpack", compat.clone(ret), line, text, node, args=[compat.clone(ret)])
    return [Raw(compat.expr_stmt(check)), unpack], compat.name(loss)


def scalar_checks(body, ret, params, shapes, ns, fn):
    """``(before, after)``: statements making the generated function refuse a non-scalar output.

    None when the output is surely a number.  When its shape is a
    parameter's (``x ** 4``, a loop's running total of ``x``), that shape is
    checked on entry.  When only numpy operations assign it, its shape is
    checked after the primal (``shape(result)``: the optimiser may then
    compute the shape alone).  Otherwise the value itself is checked.
    """
    if surely_scalar(body, ret, params):
        return [], []
    where = compat.const(_where(fn))
    shape = compat.name(ns.helper(runtime.shape))
    symbol = shapes.symbol.get(ret.id) if isinstance(ret, gast.Name) else None
    refuse = compat.name(ns.bind(not_scalar, "not_scalar"))
    if symbol is not None and symbol[0] in ("of", "maybe") and symbol[1] in params:
        param = compat.name(symbol[1])  # if type(x) is not float and shape(x): not_scalar(...)
        test = compat.call(shape, [param], {})
        raising = compat.call(refuse, [compat.clone(test), where, compat.const(symbol[1])], {})
        is_float = compat.make("Compare", left=compat.call(compat.name(ns.bind(type, "type")), [compat.clone(param)], {}),
                               ops=[gast.IsNot()], comparators=[compat.name(ns.bind(float, "float"))])
        test = compat.make("BoolOp", op=gast.And(), values=[is_float, test])
        return [Raw(compat.if_stmt(test, [compat.expr_stmt(raising)], []))], []
    kinds = {op.kind for op in walk_ops(body) if isinstance(ret, gast.Name) and ret.id in op.targets}
    if kinds == {"prim"} and ret.id not in params:  # numpy results: arrays or numbers (a copy may be None)
        test = compat.call(shape, [compat.clone(ret)], {})
        raising = compat.call(refuse, [compat.clone(test), where], {})
        return [], [Raw(compat.if_stmt(test, [compat.expr_stmt(raising)], []))]
    check = compat.call(compat.name(ns.bind(scalar_output, "scalar_output")), [compat.clone(ret), where], {})
    return [], [Raw(compat.expr_stmt(check))]

