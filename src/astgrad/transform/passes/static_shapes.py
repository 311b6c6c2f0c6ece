"""Static shapes: read an array's shape from a name known to have the same shape.

``z = t1 * 3`` with ``t1 = y * y`` and ``y = x + 2`` has x's shape, so the
adjoint's ``filled(dresult / z.size, z.shape)`` becomes
``filled(dresult / size(x), shape(x))`` and, when nothing else reads them,
neither ``z`` nor ``t1`` is computed any more.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from .. import runtime
from ..ir.compat import gast
from ..ir.trees import rewrite
from .unused import guarded_reads

_META = ("shape", "size", "ndim")


def static_shapes(body, adjoint, shapes, available, ns) -> bool:
    """Read ``z.shape``, ``z.size``, ``shape(z)`` in ``adjoint`` from a name whose shape is surely z's.

    Only for a ``z`` that the optimized function ``body`` reads for nothing
    but its shape, and only from a name in ``available`` (bound whenever
    the adjoint runs); ``shapes`` is the analysis's ``Shapes``.  Rewrites
    ``adjoint`` in place; returns whether anything changed.
    """
    meta = {}
    for stmt in adjoint:
        for node in compat.walk(stmt):
            name = meta_of(node, ns)
            if name is not None:
                meta[id(name)] = name.id
    stand_ins = {}
    for name in set(meta.values()):
        other = shapes.stand_in(name, available)
        if other is not None:
            stand_ins[name] = other
    if stand_ins:
        guarded = set().union(*(guarded_reads(stmt, ns) for stmt in body))  # read for the shape, by a check
        values = {n.id for stmt in body for n in compat.walk(stmt)
                  if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in meta
                  and id(n) not in guarded}
        stand_ins = {name: other for name, other in stand_ins.items() if name not in values}

    def replace(node):
        name = meta_of(node, ns)
        if name is None or name.id not in stand_ins:
            return None
        other = compat.name(stand_ins[name.id])
        if isinstance(node, gast.Call):
            return compat.call(node.func, [other])
        fn = compat.name(ns.helper(runtime.shape)) if node.attr == "shape" else \
            compat.name(ns.helper(runtime.size)) if node.attr == "size" else \
            compat.attr(compat.name(ns.bind(np, "np")), node.attr)
        return compat.call(fn, [other])
    for stmt in adjoint:
        rewrite(stmt, replace)
    return bool(stand_ins)


def meta_of(node, ns):
    """The name in ``name.shape``, ``name.size``, ``name.ndim``, ``shape(name)`` or ``np.shape(name)``."""
    if isinstance(node, gast.Attribute) and node.attr in _META and isinstance(node.value, gast.Name) \
            and isinstance(node.ctx, gast.Load):
        return node.value
    if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and isinstance(node.args[0], gast.Name):
        func = node.func
        if isinstance(func, gast.Name) and ns.globals.get(func.id) in (runtime.shape, runtime.size, runtime.ndim):
            return node.args[0]
        if isinstance(func, gast.Attribute) and func.attr == "shape" and isinstance(func.value, gast.Name) \
                and ns.globals.get(func.value.id) is np:
            return node.args[0]
    return None
