"""``np.array([a, b])``'s gradient cut into its items without ``_like``'s search: ``number_items(g, 2)``.

The rule of ``np.array(items)`` gives each item ``np.reshape(g[i],
np.shape(item))``, found by ``_like`` walking the list (a list or tuple
item is cut again); a right-hand side ``np.array([p[0] * y[0] - ...,
...])`` pays that walk and two calls of ``np.reshape`` through numpy's
dispatch on every call (S2: four calls a step).  Where the list is proven
a list of numbers, ``number_items(g, k)`` computes the same list with the
method ``np.reshape`` calls on an array's items.

Proven on the normal form, never guessed: the list is a name bound once, by
a list literal of ``k`` items each of rank 0 (front/ranks.py: a number or a
0-d array, never a list or a tuple), not a parameter, read by nothing but
``np.array``/``np.asarray`` (nothing appends to it or writes into it
through another name), and no statement kept as written reads it.  The
numpy backend's (Numba compiles ``_like`` as it is), at optimize=2 only:
``number_items`` has no derivative rule, and a hessian differentiates the
optimize=1 adjoint.
"""

from __future__ import annotations

import numpy as np

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import Op, binding_sites, walk_ops
from ..ir.trees import rewrite
from ...rules import sequences

#: the functions whose rules cut their gradient with ``_like`` of their argument
_READERS = (np.array, np.asarray)


def cut_number_items(fn_def, body, params, ranks, ns) -> bool:
    """Rewrite ``_like(g, lst)`` in ``fn_def`` (in place) for each ``lst`` of ``body`` proven a list of numbers."""
    likes = [n for n in gast.walk(fn_def) if _like_of(n, ns) is not None]
    if not likes:
        return False
    sites, exposed = binding_sites(body)
    counts: dict = {}
    for name in {_like_of(n, ns) for n in likes}:
        bound = sites.get(name, [])
        if name in exposed or name in params or len(bound) != 1 or not isinstance(bound[0], Op):
            continue
        pack = bound[0]
        if pack.kind != "pack" or not pack.sequence or pack.kwargs \
                or any((ranks.atom_rank(a) or (None,))[0] != 0 for a in pack.args):
            continue
        readers = [op for op in walk_ops(body) if any(isinstance(n, gast.Name) and n.id == name
                                                      for a in (*op.args, *op.kwargs.values()) for n in gast.walk(a))]
        if all(op.kind == "prim" and any(op.fn is fn for fn in _READERS) for op in readers):
            counts[name] = len(pack.args)
    if not counts:
        return False
    helper = ns.helper(runtime.number_items)

    def replace(node):
        name = _like_of(node, ns)
        if name in counts:
            return compat.call(compat.name(helper), [node.args[0], compat.const(counts[name])])
        return None
    fn_def.body = [rewrite(stmt, replace) for stmt in fn_def.body]
    return True


def _like_of(node, ns):
    """``lst`` where ``node`` is ``_like(g, lst)`` of a name; else None."""
    if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and len(node.args) == 2 \
            and not node.keywords and ns.globals.get(node.func.id) is sequences._like \
            and isinstance(node.args[1], gast.Name):
        return node.args[1].id
    return None
