"""Un-broadcasting between numbers does nothing: ``unbroadcast(g, shape(x))`` becomes ``g``.

A gradient is summed back to its argument's shape after a broadcasting
rule.  Where the argument and every value in the gradient's expression
surely have the shape ``()`` (their ranks are 0 in the calls the gradient
serves, ranks given at call time: front/ranks.py), the call returns its
``g`` unchanged, and a loop of scalar arithmetic (a pendulum stepped ten
thousand times) pays two calls per operand for nothing.

What proves the gradient's shape: its names are values of rank 0 or the
adjoints of such values (an adjoint holds its value's shape, or a number),
combined by arithmetic, comparisons and numpy's elementwise ufuncs.
Anything else (a helper's result, a value of unknown rank) keeps the call,
as ``summed(g)`` where the argument alone is proven a number (``kappa`` in
``kappa * (u[2:] - ...)``): every entry of ``g`` added up, without
``shape(kappa)`` and ``unbroadcast``'s tests of it.
Only a call in a loop asks the ranks (which makes the gradient specialise
on them); one outside any loop goes where they are known already.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.trees import rewrite
from ... import rules


def drop_number_unbroadcasts(fn_def, ranks, adjoints, ns) -> bool:
    """Rewrite ``fn_def`` in place; ``adjoints`` maps primal names to their adjoints'. Whether anything changed."""
    primal_of = {d: x for x, d in adjoints.table.items()}
    calls = [n for n in gast.walk(fn_def) if _unbroadcast_of_shape(n, ns) is not None]
    if not calls:
        return False

    in_loops = {id(n) for loop in gast.walk(fn_def) if isinstance(loop, (gast.For, gast.While))
                for stmt in loop.body for n in gast.walk(stmt)}
    ask = [False]

    def number(name) -> bool:
        name = primal_of.get(name, name)
        if ask[0]:
            return ranks.rank(name) == 0  # asked: ranks given at call time may prove it
        return name in ranks.locals and ranks.value.get(name, (None,))[0] == 0

    def numbers(expr) -> bool:
        if isinstance(expr, gast.Name):
            return number(expr.id)
        if isinstance(expr, gast.Constant):
            return isinstance(expr.value, (bool, int, float, complex))
        if isinstance(expr, gast.UnaryOp):
            return isinstance(expr.op, (gast.USub, gast.UAdd)) and numbers(expr.operand)
        if isinstance(expr, gast.BinOp):
            return not isinstance(expr.op, gast.MatMult) and numbers(expr.left) and numbers(expr.right)
        if isinstance(expr, gast.Compare):
            return numbers(expr.left) and all(numbers(c) for c in expr.comparators)
        if isinstance(expr, gast.Call) and not expr.keywords and isinstance(expr.func, gast.Attribute) \
                and isinstance(expr.func.value, gast.Name) and ns.globals.get(expr.func.value.id) is np:
            fn = getattr(np, expr.func.attr, None)
            return isinstance(fn, np.ufunc) and fn.signature is None and fn.nout == 1 \
                and len(expr.args) == fn.nin and all(numbers(a) for a in expr.args)
        return False

    chosen: set[int] = set()
    summed: set[int] = set()
    for n in calls:
        ask[0] = id(n) in in_loops  # paid on every trip: worth a gradient specialised on the ranks
        if number(_unbroadcast_of_shape(n, ns)):
            (chosen if numbers(n.args[0]) else summed).add(id(n))
    if not chosen and not summed:
        return False
    helper = ns.helper(runtime.summed) if summed else ""

    def rewritten(node):
        if id(node) in chosen:
            return node.args[0]
        if id(node) in summed:
            return compat.call(compat.name(helper), [node.args[0]])
        return None

    fn_def.body = [rewrite(stmt, rewritten) for stmt in fn_def.body]
    return True


def _unbroadcast_of_shape(node, ns):
    """``x`` in ``unbroadcast(g, shape(x))``, else None."""
    if not (isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and len(node.args) == 2
            and not node.keywords and ns.globals.get(node.func.id) in (runtime.unbroadcast, rules.unbroadcast)):
        return None
    to = node.args[1]
    if isinstance(to, gast.Call) and isinstance(to.func, gast.Name) and ns.globals.get(to.func.id) is runtime.shape \
            and len(to.args) == 1 and not to.keywords and isinstance(to.args[0], gast.Name):
        return to.args[0].id
    return None
