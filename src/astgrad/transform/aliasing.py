"""Reject item assignments whose effect Python would share with another name.

The generated code turns ``x[i] = v`` into ``x = setitem(x, i, v)``, a new
array, so the adjoint still has the old value.  That equals Python's
in-place write only while no other name refers to the array ``x`` holds.
This check proves that, or raises a located error saying where to copy:

* ``x`` must be a local of the function, not a parameter (the caller's
  array) or a global, unless a fresh value was assigned to it first;
* every value assigned to ``x`` must be a fresh array (``np.zeros``,
  ``x.copy()``, arithmetic, reductions), not a view or another name;
* a name that may share memory with ``x`` (``y = x``, ``y = x[0]``,
  ``y = x.T``, ``lst.append(x)``, ``f(x)``) must not be read after a later
  write to ``x``.

The analysis is by name and conservative: it may ask for a copy that is
not strictly needed, never the other way round.
"""

from __future__ import annotations

import numpy as np

from .. import rules
from .compat import gast
from .errors import UnsupportedSyntaxError
from .ir import For, If, Op, While, atom_names, walk_ops

_FRESH_NAMES = (
    "zeros ones empty full zeros_like ones_like empty_like full_like array copy eye identity arange "
    "linspace sum mean prod max min amax amin var std dot matmul outer inner concatenate stack vstack "
    "hstack cumsum cumprod where clip tile repeat kron trace tensordot diff sort cross convolve").split()
_FRESH = {id(getattr(np, n)) for n in _FRESH_NAMES if hasattr(np, n)} | {
    id(getattr(np.linalg, n)) for n in ("norm", "inv", "det", "solve", "pinv", "slogdet")}
_COPY_CALLS = {"copy", "clone", "item", "numpy", "tolist", "float", "abs"}


class _Site:
    """An Op with where it sits: order, enclosing loops, enclosing blocks."""

    def __init__(self, op, pos, loops, path):
        self.op, self.pos, self.loops, self.path = op, pos, loops, path


def check_item_assignments(body, ret, params, local_names, source) -> None:
    sites = []
    _flatten(body, (), (), sites)
    writes = {}
    for s in sites:
        if s.op.fn is rules.setitem and isinstance(s.op.node, gast.Subscript) \
                and s.op.args and isinstance(s.op.args[0], gast.Name):  # x[i] = v, not a call of setitem
            writes.setdefault(s.op.args[0].id, []).append(s)
    if not writes:
        return
    defs = {}
    for s in sites:
        for t in s.op.targets:
            defs.setdefault(t, []).append(s)
    end = _Site(None, len(sites), (), ())
    for x, ws in writes.items():
        first = ws[0]
        if x not in local_names:
            raise _error(source, first, f"{x}[...] = ... would change the array {x} outside the function; "
                         "astgrad's item assignment writes to a copy",
                         f"Copy first: {x.lower()}_copy = {x}.copy(), and write into the copy.")
        if x in params and not _rebound_before(body, x, first.op):
            raise _error(source, first, f"{x}[...] = ... would change the caller's array {x}; "
                         "astgrad's item assignment writes to a copy",
                         f"Copy first: {x} = {x}.copy()")
        for d in defs.get(x, []):
            if d.op.fn is not rules.setitem and not _fresh(d.op, defs):
                raise _error(source, d, f"{x} may share memory with another array here, so {x}[...] = ... "
                             f"on line {first.op.line} would change that array too; astgrad's item "
                             "assignment writes to a copy", f"Copy first: {x} = ....copy()")
        _check_aliases(x, ws, sites, defs, ret, end, source)


def _check_aliases(x, writes, sites, defs, ret, end, source):
    work = [(t, s) for s in sites if x in _reads(s.op) and _aliases(s.op) for t in s.op.targets]
    seen = set()
    while work:
        name, made = work.pop()
        if (name, id(made)) in seen:
            continue
        seen.add((name, id(made)))
        uses = [s for s in sites if name in _reads(s.op)]
        if ret is not None and name in atom_names(ret):
            uses.append(end)
        single = len(defs.get(name, [])) == 1
        for use in uses:
            for w in writes:
                if w is not use and _between(made, w, use, single):
                    raise _error(source, made, f"{made.op.text!r} makes a name that shares memory with {x}, "
                                 f"and {x}[...] = ... on line {w.op.line} changes {x} before it is read; "
                                 "astgrad's item assignment writes to a copy, so the two would differ",
                                 f"Copy first (`{x}.copy()` where the second name is made), or finish "
                                 f"writing {x} before taking views of it.")
            if use.op is not None and _aliases(use.op):
                work += [(t, use) for t in use.op.targets]


def _between(made, write, use, single) -> bool:
    """Whether ``write`` may run after ``made`` and before ``use`` reads what ``made`` bound."""
    if single and use.path[:len(made.path)] == made.path and made.pos < use.pos:
        # use reads the value made bound last: a write must sit between them,
        # or in a loop around the use that does not contain made
        inner = set(use.loops) - set(made.loops)
        return made.pos < write.pos < use.pos or bool(inner & set(write.loops))
    return _may_follow(made, write) and _may_follow(write, use)


def _may_follow(a, b) -> bool:
    return b.pos > a.pos or bool(set(a.loops) & set(b.loops))


def _flatten(stmts, loops, path, out):
    for s in stmts:
        if isinstance(s, Op):
            out.append(_Site(s, len(out), loops, path))
        elif isinstance(s, If):
            _flatten(s.body, loops, path + ((id(s), 0),), out)
            _flatten(s.orelse, loops, path + ((id(s), 1),), out)
        elif isinstance(s, For):
            _flatten(s.body, loops + (id(s),), path + ((id(s), 0),), out)
        elif isinstance(s, While):
            _flatten(s.cond, loops, path, out)
            _flatten(s.body, loops + (id(s),), path + ((id(s), 0),), out)


def _reads(op) -> set:
    names = set(atom_names(op.expr))
    for a in list(op.args) + list(op.kwargs.values()):
        names.update(atom_names(a))
    return names


def _is_fresh_fn(fn) -> bool:
    return isinstance(fn, np.ufunc) or id(fn) in _FRESH


def _copy_call(node) -> bool:
    if not isinstance(node, gast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "")
    return name in _COPY_CALLS


def _aliases(op) -> bool:
    """Whether the value ``op`` binds may share memory with (or contain) what it reads."""
    if op.kind == "copy":
        return not _copy_call(op.node)
    if op.kind in ("stop", "pack", "unpack", "call"):
        return True
    if op.fn is rules.setitem:
        return False
    if op.fn is not None:
        return not _is_fresh_fn(op.fn)
    return isinstance(op.expr, gast.Name)


def _fresh(op, defs, depth=0) -> bool:
    """Whether ``op`` binds a new array no other name refers to."""
    if op.kind == "copy" and not isinstance(op.node, gast.Name):
        if _copy_call(op.node):
            return True
        source = op.args[0].id if op.args and isinstance(op.args[0], gast.Name) else None
        return depth < 8 and source is not None and all(
            _fresh(d.op, defs, depth + 1) for d in defs.get(source, []))
    if op.kind in ("prim", "nondiff", "opaque") and op.fn is not None:
        return op.fn is rules.setitem or _is_fresh_fn(op.fn)
    if op.kind in ("nondiff", "pack") and op.fn is None:
        return not isinstance(op.expr, gast.Name)
    return False


def _rebound_before(body, x, write) -> bool:
    """A top-level statement assigns ``x`` a fresh value before any statement holding ``write``."""
    for s in body:
        if any(op is write for op in walk_ops([s])) or s is write:
            return False
        if isinstance(s, Op) and x in s.targets and s.fn is not rules.setitem:
            return True
    return False


def _error(source, site, message, hint):
    return source.error(site.op.node, message, hint, UnsupportedSyntaxError)
