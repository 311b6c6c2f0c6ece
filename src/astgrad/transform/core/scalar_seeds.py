"""Lazy scalar seeds: a gradient kept as a number until a rule needs its shape.

``np.mean(z)`` seeds ``dz`` with ``dresult / z.size`` spread over z's shape.
Where every rule between the seed and the next value of full shape is
elementwise (``_SCALAR_SAFE``), the seed stays a scalar: ``dt1 = dz * 3`` is
a number and ``dy = 2 * dt1 * y`` gets y's shape.  The adjoint sweep asks
``seed`` whether a contribution may stay a number, and ``materialize``
spreads the numbers still pending (before control flow, or a rule that
needs the shape).
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from .. import runtime
from ..ir.compat import gast

# rules that are elementwise expressions of the gradient and the operands: a
# gradient that only broadcasts to the result's shape gives arguments'
# gradients that broadcast to theirs (a scalar seed stays a scalar).  Each
# unary function's rule is g * f'(x) (rules.elementwise); a binary one's
# (power, maximum, ...) is g times an array of the result's shape per
# operand.  takes_scalar asks more: every operand that gets a gradient has
# the result's shape, since one broadcast over the elements (an exponent,
# a bound) gets the sum over them, which a number standing for the spread
# seed would not give.
_SCALAR_SAFE = frozenset({
    np.add, np.subtract, np.multiply, np.negative, np.divide, np.positive,
    np.power, np.float_power, np.square, np.sqrt, np.cbrt, np.reciprocal, np.maximum, np.minimum,
    np.exp, np.exp2, np.expm1, np.log, np.log2, np.log10, np.log1p,
    np.sin, np.cos, np.tan, np.arcsin, np.arccos, np.arctan, np.sinh, np.cosh, np.tanh,
    np.arcsinh, np.arccosh, np.arctanh, np.deg2rad, np.rad2deg, np.fabs,
})


class ScalarSeeds:
    """Which adjoints hold a number that broadcasts to their name's shape (``lazy``)."""

    def __init__(self, analysis, ns, adjoints, producers):
        self.an = analysis
        self.ns = ns
        self.adj = adjoints
        self.producers = producers  # name -> the one op that binds it
        self.lazy = set()
        self.enabled = True  # off in a called function's backward half: its caller wants full shapes
        self.depth = 0  # inside an adjoint of control flow: spread before it
        self.group_roots = {}  # the result of a fused group of elementwise operations -> the group

    def takes_scalar(self, var, fused=False) -> bool:
        """Whether the adjoint of ``var``'s one producer is exact for a gradient that only broadcasts.

        ``fused``: where ``var`` is the result of a fused group, whether its
        gradient may be left a number for the group's adjoint, which spreads
        it where its operands need (fusion.adjoint knows each operand's
        derivative; here only the shapes are known).  The rule-by-rule
        adjoint, which runs where the group cannot be fused, asks without it.
        """
        op = self.producers.get(var)
        if not self.enabled or self.depth or op is None or not self.an.is_active(op):
            return False
        if op.kind == "copy":
            return True
        shapes = self.an.shapes
        group = self.group_roots.get(var)
        if group is not None and fused:
            return True
        if group is not None:  # g * P for each operand (fusion): exact when each has var's shape
            internal = {m.targets[0] for m in group}
            return all(shapes.holds_shape_of(a.id, var, strict=True)
                       for m in group for a in m.args if self._input(a) and a.id not in internal)
        return op.kind == "prim" and op.fn in _SCALAR_SAFE and not op.kwargs and all(
            shapes.same(op, i) and shapes.symbol.get(a.id, ("",))[0] != "maybe"
            for i, a in enumerate(op.args) if self._input(a))

    def _input(self, atom) -> bool:
        return isinstance(atom, gast.Name) and atom.id in self.an.adjoint

    def has_shape_of(self, expr, var) -> bool:
        """``expr`` (elementwise) surely has ``var``'s full shape: it reads a name of that shape."""
        symbol = self.an.shapes.symbol.get(var)
        if symbol is None or symbol[0] != "of":
            return False
        return any(isinstance(n, gast.Name) and self.an.shapes.symbol.get(n.id) == symbol
                   for n in gast.walk(expr))

    def is_filled(self, expr) -> bool:
        """``filled(g, shape)``: the seed of a full reduction, spread."""
        return isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and len(expr.args) == 2 \
            and self.ns.globals.get(expr.func.id) is runtime.filled

    def spread(self, var, grad):
        """``filled(grad, shape(var))``."""
        filled = compat.name(self.ns.helper(runtime.filled))
        return compat.call(filled, [grad, compat.call(compat.name(self.ns.helper(runtime.shape)), [compat.name(var)])])

    def seed(self, var, grad, scalar, live) -> object:
        """The contribution ``grad`` to ``var``'s adjoint, spread unless it may stay a number.

        ``scalar``: ``grad`` may be a number that broadcasts to var's shape;
        ``live``: var's adjoint already holds a value.
        """
        starts = not live or var in self.lazy
        if scalar and starts and not self.takes_scalar(var, fused=True):
            grad, scalar = self.spread(var, grad), False
        if scalar and starts:
            self.lazy.add(var)
        else:
            self.lazy.discard(var)
        return grad

    def materialize(self, live, names=None) -> list:
        """Spread scalar gradients to their names' shapes (before control flow, or a rule that needs it)."""
        out = []
        for var in sorted(self.lazy if names is None else names):
            if var in live:
                out.append(compat.assign(self.adj(var), self.spread(var, compat.name(self.adj(var)))))
            self.lazy.discard(var)
        return out
