"""Values that cannot change in a loop are saved no more: ``nu * dt`` and ``dx ** 2`` on every trip.

``for _ in range(n): t18 = nu * dt`` pushes ``t18`` before each trip
overwrites it and the reverse sweep pops it back, though every trip
computes the same number from the same operands.  A name is *invariant*
when every value it holds in a call is the same, proven from the normal
form (``invariant``):

* a parameter the function never binds again;
* a name bound by one operation alone (one site in the whole function, no
  statement kept as written touching it): a literal number (``dx = 0.3``),
  a copy of an invariant name, or a ufunc without keywords (``*``, ``/``,
  ``**``, ``np.exp``...: the same operands give the same result) whose
  operands are literal numbers and invariant names;
* a name bound once per call from an array's shape: ``n, m = z.shape``
  (or ``t = z.shape``) outside every loop, where it runs at most once and
  binds a tuple of ints, which nothing can change.  So ``dt = T / m``
  computed before the loop is invariant, and ``np.sqrt(dt)`` in it too.

Its pushes and pops go (``cleanup.drop_saves_of``): the reverse sweep reads
the last value, which every trip had.  A name rebound in the loop
(``dt = dt * 0.5``), or computed from a value that changes (``u[1:-1]``, a
counter, a call of a user's function, ``np.random``), stays saved.
"""

from __future__ import annotations

import numpy as np

from ..ir.compat import gast
from ..ir.nodes import For, If, Op, While, binding_sites
from .cleanup import drop_saves_of
from .fixed_shapes import saved_names


def drop_invariant_saves(fn_def, adjoint, body, params, ns):
    """Stop saving, in ``fn_def``, the names whose every value is the same (see the module's doc)."""
    _, popped, pushes, _, stored = saved_names(fn_def, adjoint, ns)
    if popped is None:
        return fn_def
    candidates = (popped & pushes) - stored  # read for their values too: every trip's is the last one's
    if not candidates:
        return fn_def
    sites, exposed = binding_sites(body)
    once = {id(op) for op in _outside_loops(body)}
    unpacked = {t: op for op in _outside_loops(body) if len(op.targets) > 1 for t in op.targets}  # no site
    proven: dict = {}

    def invariant(name) -> bool:
        if name in proven:
            return proven[name]
        proven[name] = False  # a name whose value depends on itself is not proven
        bound = sites.get(name, [])
        if name in exposed:
            found = False
        elif name in params:
            found = not bound
        elif len(bound) == 1 and (site := unpacked.get(name) if bound[0] is None else bound[0]) is not None \
                and isinstance(site, Op) and site.kind == "unpack" and id(site) in once:  # n, m = z.shape
            found = len(site.args) == 1 and isinstance(site.args[0], gast.Name) \
                and _shape_once(site.args[0].id, sites, exposed, once)
        elif len(bound) != 1 or not isinstance(site := bound[0], Op):
            found = False
        elif _shape_once(name, sites, exposed, once):
            found = True
        elif site.kind == "prim" and isinstance(site.fn, np.ufunc) and site.fn.nout == 1 and not site.kwargs \
                or site.kind == "copy" and len(site.args) == 1:
            found = all(_number(a) or isinstance(a, gast.Name) and invariant(a.id) for a in site.args)
        else:
            found = site.kind == "nondiff" and not site.args and _number(site.expr)  # dx = 0.3
        proven[name] = found
        return found

    chosen = {name for name in candidates if invariant(name)}
    return drop_saves_of(fn_def, chosen) if chosen else fn_def


def _outside_loops(stmts):
    """The Ops of ``stmts`` and of its branches, not inside a loop: each runs at most once in a call."""
    for s in stmts:
        if isinstance(s, Op):
            yield s
        elif isinstance(s, If):
            yield from _outside_loops(s.body)
            yield from _outside_loops(s.orelse)
        elif not isinstance(s, (For, While)):
            continue


def _shape_once(name, sites, exposed, once) -> bool:
    """Whether ``name`` is bound only by ``name = x.shape`` outside every loop: one tuple of ints a call."""
    bound = sites.get(name, [])
    if name in exposed or len(bound) != 1 or not isinstance(site := bound[0], Op) or id(site) not in once:
        return False
    expr = site.expr
    return site.kind == "nondiff" and not site.args and isinstance(expr, gast.Attribute) \
        and expr.attr == "shape" and isinstance(expr.value, gast.Name)


def _number(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        node = node.operand
    return isinstance(node, gast.Constant) and isinstance(node.value, (int, float, complex)) \
        and not isinstance(node.value, bool)
