"""``x op= v`` on a value surely not a numpy array is ``x = x op v``: ``in_place`` and ``array_kind`` go.

The normal form writes ``x op= v`` (and ``a[i] op= v``, whose item it
reads first) as ``t = x op v`` and ``x = in_place(t, array_kind(x), op)``:
numpy writes into an array ``x``, keeping its shape and dtype (or raising),
and anything else is rebound to ``t``.  Where ``x`` is surely not an
``np.ndarray``, ``array_kind(x)`` is None and ``in_place`` gives ``t``
back, so the pair is a copy; a loop of ``rates[i] += ...`` pays two calls a
trip for it, and the reverse sweep a saved shape for each.

Surely not an ``np.ndarray`` (proven on the normal form, never guessed):

* a Python int (ranks ``(0, True)``: a ``range`` counter, ``len``, integer
  arithmetic, a parameter given one);
* an element, indexed by as many integers as it has axes (its rank,
  front/ranks.py), of a name no value of which is anything but an array of
  real floats (float_casts.float_valued, parameters left out: ``np.zeros(n)``
  without a dtype, an item write into one, a copy of one): a numpy number.

Anything else keeps both calls: an item of a list or of an array of objects
(which may be an array), a slice (a view, written into), a value whose rank
or kind is not known.  Only the entry, whose parameters' ranks are given at
call time, is rewritten.
"""

from __future__ import annotations

from ... import rules
from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import Op, binding_sites, walk_ops
from .float_casts import float_valued
from .unused import GivenFloats


def rebind_number_updates(body, params, known) -> list[str]:
    """Make each ``t = in_place(new, array_kind(x), op)`` of ``body`` whose ``x`` is surely not an ndarray the copy
    ``t = new``, in place; the names so bound.  ``known()``: the Ranks of ``body``, made only where ``body`` has
    such a pair (asking them makes the gradient depend on them)."""
    sites, exposed = binding_sites(body)
    found: list = []
    valued = ranks = None
    for op in walk_ops(body):
        x = _updated(op, sites)
        if x is None or x in exposed:
            continue
        if ranks is None:
            ranks = known()
        if ranks.value.get(x) != (0, True):
            element = _element_of(x, sites, params)
            if element is None:
                continue
            if valued is None:  # no parameter counted: the floats given at call time are not read here
                valued = float_valued(body, params, GivenFloats())
            if element not in valued or ranks.rank(x) != 0:
                continue
        new = op.args[0]
        op.kind, op.fn, op.expr, op.args = "copy", None, compat.clone(new), [compat.clone(new)]
        found.extend(op.targets)
    return found


def _updated(op, sites):
    """``x`` where ``op`` is ``in_place(new, kind, op)`` with ``new`` a name and ``kind`` bound once, to
    ``array_kind(x)``; else None."""
    if not (op.kind == "prim" and op.fn is runtime.in_place and len(op.args) == 3 and not op.kwargs
            and isinstance(op.args[0], gast.Name) and isinstance(op.args[1], gast.Name)):
        return None
    bound = sites.get(op.args[1].id, [])
    site = bound[0] if len(bound) == 1 else None
    if isinstance(site, Op) and site.fn is runtime.array_kind and len(site.args) == 1 and not site.kwargs \
            and isinstance(site.args[0], gast.Name):
        return site.args[0].id
    return None


def _element_of(x, sites, params):
    """``a`` where ``x`` is a local bound once, by ``a[index]``; else None."""
    bound = sites.get(x, [])
    site = bound[0] if len(bound) == 1 and x not in params else None
    if isinstance(site, Op) and site.kind == "prim" and site.fn is rules.getitem and len(site.args) == 2 \
            and not site.kwargs and isinstance(site.args[0], gast.Name):
        return site.args[0].id
    return None
