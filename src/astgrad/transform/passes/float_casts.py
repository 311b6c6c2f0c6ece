"""A write into an array of floats keeps its value's gradient: ``through_cast(g, u)`` becomes ``g``.

The gradient of ``v`` in ``u[i] = v`` is ``through_cast(written(du, i), u)``:
zeros where ``u`` holds integers or booleans (numpy rounds what it writes
there), ``g`` otherwise.  The reverse sweep reads ``u`` for that dtype
alone, so a loop writing into ``u`` saves ``only_shape(u)`` on every trip
(a ``Shaped`` keeps the dtype) and pops it back, for a test whose answer
is known where no value of ``u`` can hold integers.

Such a name (``FloatValued``, proven on the normal form, never guessed):

* a parameter holding real floats in the calls served (GivenFloats: the
  entry specialises on them, as on ranks);
* a name bound only by copies of such names, by ``setitem`` into one (a
  copy of the same dtype), and by ``np.zeros``, ``np.ones``, ``np.empty``
  without a ``dtype`` (float64).

A name bound any other way (a ufunc's result, ``astype``, ``x op= v``,
where a number meets an operand of any type, a call, a comparison, a
loop's target) may hold integers, and its ``through_cast`` stays.  With the call gone, fixed_shapes.py may stop saving the name.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ..ir.compat import gast
from ..ir.nodes import Op, binding_sites
from ..ir.trees import rewrite
from ...rules import _extra

#: results of these without a ``dtype`` (nor any keyword) are float64
_FLOAT_MAKERS = (np.zeros, np.ones, np.empty)


def drop_float_casts(fn_def, body, params, floats, ns) -> bool:
    """Rewrite ``fn_def``'s ``through_cast(g, x)`` to ``g`` where ``x`` is ``FloatValued``; whether any changed.

    ``body``: the normal form, ``params`` its parameters, ``floats`` the
    entry's GivenFloats (None: a callee, where nothing is given).
    """
    calls = [n for stmt in fn_def.body for n in gast.walk(stmt) if _cast_into(n, ns) is not None]
    if not calls or floats is None:
        return False
    valued = float_valued(body, params, floats)
    chosen = {id(n) for n in calls if _cast_into(n, ns) in valued}
    if not chosen:
        return False
    fn_def.body = [rewrite(stmt, lambda node: node.args[0] if id(node) in chosen else None) for stmt in fn_def.body]
    return True


def float_valued(body, params, floats) -> set:
    """The names of ``body`` no value of which has an integer or boolean dtype (see the module's docstring).

    The largest such set: every binding reads names that held such values
    when it ran.  A parameter not given as floats sets ``floats.asked``: the
    entry then specialises on which parameters hold them.
    """
    sites, exposed = binding_sites(body)  # a loop's target: its For, which _keeps_floats never takes
    found = set()
    for p in params:
        if p in exposed:
            continue
        if p in floats.names:
            found.add(p)
        else:
            floats.asked = True
    found |= {name for name in sites if name not in params and name not in exposed}
    changed = True
    while changed:
        changed = False
        for name in list(found):
            if not all(_keeps_floats(site, found) for site in sites.get(name, ())):
                found.discard(name)
                changed = True
    return found


def _keeps_floats(site, found) -> bool:
    """Whether ``site`` binds a value of no integer or boolean dtype, given that the names in ``found`` hold such."""
    if not isinstance(site, Op):
        return False
    args = site.args

    def held(i):
        return len(args) > i and isinstance(args[i], gast.Name) and args[i].id in found

    if site.kind == "copy":
        return len(args) == 1 and held(0)
    if site.kwargs:
        return False
    if site.fn is rules.setitem:
        return len(args) == 3 and held(0)
    return site.fn in _FLOAT_MAKERS and len(args) == 1


def _cast_into(node, ns):
    """``x`` in ``through_cast(g, x)`` (a name), else None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and len(node.args) == 2 \
            and not node.keywords and ns.globals.get(node.func.id) is _extra.through_cast \
            and isinstance(node.args[1], gast.Name):
        return node.args[1].id
    return None
