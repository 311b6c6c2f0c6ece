"""``array_kind(x)`` of a loop's ``x op= v`` read once a call, from the parameter every value of ``x`` copies.

The normal form writes ``vel += 0.5 * dt * acc`` as ``k = array_kind(vel)``,
``t = vel + 0.5 * dt * acc`` and ``vel = in_place(t, k, '+')``: numpy
writes into an array ``vel``, keeping its shape and dtype (or raising).
A Verlet step pays three ``array_kind`` calls for a kind that is the same
on every trip: ``vel`` is a copy of the parameter ``vel0``, and ``in_place``
gives back a value of the kind it is given.

Proven on the normal form, never guessed (``read_kinds_once``):

* ``x`` is surely a numpy array (FixedShapes' ``_numpy_arrays``: a
  parameter given real floats, names bound only by copies of such names
  and by ``x op= v`` on them), so ``in_place`` keeps the kind it reads;
* the names joined by those copies and writes hold exactly one parameter
  ``p``: every value of every one of them then has ``p``'s kind (``x =
  a`` in one branch and ``x = b`` in the other joins two, and keeps its
  calls);
* ``k`` is bound once, in a loop, and read only as ``in_place``'s kind.

Then the first such ``k = array_kind(x)`` becomes ``k = array_kind(p)`` at
the top of the function, and the others' reads read that ``k``.  Entry
functions only (their parameters' kinds are given at call time), for the
numpy backend.
"""

from __future__ import annotations

from .. import runtime
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import For, If, Op, While, binding_sites, walk_ops


def read_kinds_once(body, params, analyse) -> list:
    """``body`` (the normal form) with each loop's provably invariant ``array_kind`` read once (see the module's
    doc); ``analyse()``: the FixedShapes of ``body``, which proves names numpy arrays, made only where a loop reads
    a kind (it asks ranks and floats, which makes the gradient specialise on them).  The body itself where none."""
    kinds = [op for op in _in_loops(body) if op.kind == "nondiff" and op.fn is runtime.array_kind
             and len(op.args) == 1 and not op.kwargs and isinstance(op.args[0], gast.Name) and len(op.targets) == 1]
    if not kinds:
        return body
    fixed = analyse()
    sites, exposed = binding_sites(body)
    readers: dict = {}
    for op in walk_ops(body):
        for i, a in enumerate(op.args):
            if isinstance(a, gast.Name):
                readers.setdefault(a.id, []).append((op, i))
        for a in op.kwargs.values():
            for n in compat.walk(a):
                if isinstance(n, gast.Name):
                    readers.setdefault(n.id, []).append((op, None))
    arrays = fixed._numpy_arrays()
    owner = _parameters(arrays, sites, params, fixed)
    first: dict = {}  # parameter -> the op kept, moved to the top
    gone: set = set()
    for op in kinds:
        k, x = op.targets[0], op.args[0].id
        p = owner.get(x)
        if p is None or k in exposed or len(sites.get(k, [])) != 1 \
                or not all(r.fn is runtime.in_place and i == 1 for r, i in readers.get(k, [])):
            continue
        if p not in first:
            first[p] = op
            op.args = [compat.name(p)]
            op.expr = compat.call(op.expr.func, [compat.name(p)])
        else:
            for reader, _ in readers.get(k, []):
                _read(reader, first[p].targets[0])
        gone.add(id(op))
    if not gone:
        return body
    return [first[p] for p in sorted(first)] + _without(body, gone)


def _in_loops(body, inside=False):
    for s in body:
        if isinstance(s, Op):
            if inside:
                yield s
        elif isinstance(s, If):
            yield from _in_loops(s.body, inside)
            yield from _in_loops(s.orelse, inside)
        elif isinstance(s, For):
            yield from _in_loops(s.body, True)
        elif isinstance(s, While):
            yield from _in_loops(s.body, True)


def _parameters(arrays, sites, params, fixed) -> dict:
    """name -> the one parameter whose kind every value of it has, for the names of ``arrays`` joined to one."""
    parent = {name: name for name in arrays}

    def find(name):
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    for name in arrays:
        for site in sites.get(name, ()):
            if not isinstance(site, Op):
                continue
            if site.kind == "copy":
                source = site.args[0].id
            else:  # in_place(new, array_kind(y), op): y's kind (FixedShapes._keeps_array proved the form)
                source = fixed._kind_of(site.args[1]).id
            if source in parent:
                parent[find(name)] = find(source)
    owners: dict = {}
    for p in params:
        if p in parent:
            owners.setdefault(find(p), set()).add(p)
    return {name: next(iter(owners[find(name)])) for name in arrays if len(owners.get(find(name), ())) == 1}


def _read(op, k):
    """Make ``in_place(new, kind, o)`` read the kind ``k``."""
    op.args[1] = compat.name(k)
    op.expr = compat.call(op.expr.func, [op.expr.args[0], compat.name(k)] + op.expr.args[2:])


def _without(stmts, gone) -> list:
    out = []
    for s in stmts:
        if isinstance(s, Op):
            if id(s) not in gone:
                out.append(s)
            continue
        if isinstance(s, If):
            s.body, s.orelse = _without(s.body, gone), _without(s.orelse, gone)
        elif isinstance(s, For):
            s.body = _without(s.body, gone)
        elif isinstance(s, While):
            s.body = _without(s.body, gone)
        out.append(s)
    return out
