"""A negation read by a sum is a subtraction: ``a + -x * y`` is ``a - x * y``, where ``x`` surely holds floats.

The reverse sweeps negate gradients and add them: S12's step computes
``ddamping + -dt9 * omega * dt`` (a numpy scalar negated on each of 10^4
trips), S14's ``dt4 = -dahead`` (an array) read once, by ``dt9 + dt4 +
dback``.  IEEE arithmetic rounds symmetrically, so ``(-x) * y`` is
``-(x * y)`` and ``(-x) / y`` is ``-(x / y)`` bit for bit, and ``a +
(-v)`` is by definition ``a - v``: the sums read

* ``a + (-x) op y op z ...`` (``op`` ``*`` or ``/``, grouped left to right
  as Python groups them) as ``a - x op y op z ...``;
* ``a + n``, where ``n = -x`` is bound in the same block, read there alone
  (no other read, no save), as ``a - x``, the negation dropped, and
  ``add_at(d, n, s, i)`` so read as ``subtract_at(d, x, s, i)`` (a slice
  of the same shape written ``d[i] -= x`` in place; else ``add_at`` of
  ``-x``, the negation made where it is needed), and ``n = n + w``, the
  next statement to mention ``n``, as ``n = w - x`` (IEEE addition
  commutes); every
  statement between surely writes into no array that ``x`` names: the
  value ``x`` holds there was made fresh in the block (an operator, a
  ufunc, ``np.where``), which the statements up to the read pass on only
  as operands (of operators, ufuncs, the ``g`` that ``add_at`` adds, which
  it reads), and none of them binds ``x``.

Proven first: every value ``x`` can hold is of floats or complex numbers,
on which negation is exact and never raises (the negation of booleans
raises, of unsigned integers wraps: there ``-x * y`` is not ``-(x * y)``).
A name is so when every statement binding it gives such a value, given
the names so proven (the largest such set: each value is computed from
values bound before it): a float literal, a true division ``/``, ``+``,
``-``, ``*`` with one such operand (numpy and Python promote the other),
a negation of one, a ufunc or ``np.where`` with one such operand
(promoted the same way), items read from one, ``unbroadcast``,
``summed`` or ``add_at`` of one (the same values, their sum, or the total
with a gradient added), a copy of such a name.  A parameter, a pop from
the stack, a loop's target, anything else: not proven, and the code
stays.  NaN keeps being NaN (its sign bit, which numpy's arithmetic
does not define, may differ).  For the numpy backend, in every function
made, after the passes that read the negations' names.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from .. import runtime
from .inplace import _callee
from .shared_products import _writes_nothing

#: the runtime's helpers whose result is of floats where their first operand is: the same values, their sum, or
#: ``add_at``'s total with a gradient added into it or to it
_KEEPS_KIND = (runtime.unbroadcast, runtime.summed, runtime.add_at)


def fold_negations(fn_def, ns) -> bool:
    """Rewrite every such sum in ``fn_def`` (in place); whether any was."""
    floats = _float_names(fn_def, ns)
    changed = False
    for node in compat.walk(fn_def):
        if isinstance(node, gast.BinOp) and isinstance(node.op, gast.Add):
            negated = _negated_chain(node.right, floats, ns)
            if negated is not None:
                if node.right is negated:
                    node.right = negated.operand
                else:
                    inner = node.right
                    while inner.left is not negated:
                        inner = inner.left
                    inner.left = negated.operand
                node.op = gast.Sub()
                changed = True
    for _, _, stmts in compat.statement_blocks(fn_def):
        changed |= _block(stmts, fn_def, floats, ns)
    return changed


def _negated_chain(expr, floats, ns):
    """The ``-x`` heading ``expr``, a chain ``(-x) op y op z`` of ``*`` and ``/`` (or ``-x`` itself), ``x`` of floats."""
    while isinstance(expr, gast.BinOp) and isinstance(expr.op, (gast.Mult, gast.Div)):
        expr = expr.left
    if isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.USub) and _floats(expr.operand, floats, ns):
        return expr
    return None


def _block(stmts, fn_def, floats, ns) -> bool:
    changed = False
    k = 0
    while k < len(stmts):
        stmt = stmts[k]
        found = _negation(stmt, floats, ns)
        if found is None:
            k += 1
            continue
        n, x = found
        loads = [m for m in compat.walk(fn_def) if isinstance(m, gast.Name) and m.id == n]
        reads = [m for m in loads if isinstance(m.ctx, gast.Load)]
        window = _fresh_before(stmts, k, x, ns)
        if window is None:
            k += 1
            continue
        if len(reads) != 1 or len(loads) != 2:
            if _accumulated(stmts, k, n, x, window):
                del stmts[k]
                changed = True
                continue
            k += 1
            continue
        read = reads[0]
        for j in range(k + 1, len(stmts)):
            later = stmts[j]
            if any(m is read for m in compat.walk(later)):
                total = next((m for m in compat.walk(later)
                              if isinstance(m, gast.BinOp) and isinstance(m.op, gast.Add) and m.right is read), None)
                if total is not None and window.step(later):
                    total.op = gast.Sub()
                    total.right = compat.name(x)
                elif _added_at(later, read, ns) and window.step(later):
                    later.value.func = compat.name(ns.helper(runtime.subtract_at))
                    later.value.args[1] = compat.name(x)
                else:
                    break
                del stmts[k]
                changed = True
                k -= 1
                break
            if not window.step(later):
                break
        k += 1
    return changed


def _accumulated(stmts, k, n, x, window) -> bool:
    """Rewrite ``n = n + w``, the first statement after ``stmts[k]`` (``n = -x``) in the block to mention ``n``, as
    ``n = w - x`` (``(-x) + w`` is ``w + (-x)``, which is ``w - x``), the statements between passing ``x`` on; whether
    it was."""
    for later in stmts[k + 1:]:
        if not any(isinstance(m, gast.Name) and m.id == n for m in compat.walk(later)):
            if not window.step(later):
                return False
            continue
        if not isinstance(later, gast.Assign):
            return False
        value = later.value
        if not (len(later.targets) == 1 and isinstance(later.targets[0], gast.Name) and later.targets[0].id == n
                and isinstance(value, gast.BinOp) and isinstance(value.op, gast.Add)
                and isinstance(value.left, gast.Name) and value.left.id == n
                and not any(isinstance(m, gast.Name) and m.id == n for m in compat.walk(value.right))
                and window.step(later)):
            return False
        later.value = gast.BinOp(left=value.right, op=gast.Sub(), right=compat.name(x))
        return True
    return False


def _added_at(stmt, read, ns) -> bool:
    """Whether ``stmt`` is ``d = add_at(d2, n, s, i)``, ``n`` the name ``read``."""
    return isinstance(stmt, gast.Assign) and isinstance(stmt.value, gast.Call) and not stmt.value.keywords \
        and len(stmt.value.args) == 4 and stmt.value.args[1] is read \
        and _callee(stmt.value.func, ns) is runtime.add_at


def _negation(stmt, floats, ns):
    """``(n, x)`` for ``n = -x`` of a name ``x`` of floats; else None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
            and isinstance(stmt.value, gast.UnaryOp) and isinstance(stmt.value.op, gast.USub) \
            and isinstance(stmt.value.operand, gast.Name) and _floats(stmt.value.operand, floats, ns) \
            and stmt.value.operand.id != stmt.targets[0].id:
        return stmt.targets[0].id, stmt.value.operand.id
    return None


def _fresh_before(stmts, k, x, ns):
    """The window (``_Window``) over ``x`` from the last statement before ``stmts[k]`` binding it, which must bind it
    to a fresh value (an operator, a ufunc, ``np.where``), through ``stmts[k]``; None where a statement fails it."""
    for i in range(k - 1, -1, -1):
        stmt = stmts[i]
        if x not in _stored(stmt):
            continue
        if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
                and _made(stmt.value, ns)):
            return None
        window = _Window(x, ns)
        return window if all(window.step(s) for s in stmts[i + 1:k + 1]) else None
    return None


def _made(expr, ns) -> bool:
    if isinstance(expr, (gast.BinOp, gast.UnaryOp)):
        return True
    if isinstance(expr, gast.Call) and not expr.keywords:
        fn = _callee(expr.func, ns)
        return isinstance(fn, np.ufunc) and len(expr.args) <= fn.nin or fn is np.where
    return False


def _stored(stmt) -> set:
    return {m.id for m in compat.walk(stmt) if isinstance(m, gast.Name) and not isinstance(m.ctx, gast.Load)}


class _Window:
    """The statements after ``x`` was made fresh, stepped through in order: none binds ``x`` nor writes into an array,
    but by a pop from the stack or an ``add_at`` into a name not reaching ``x``'s value; the names reaching it (``x``,
    and a copy ``y = x`` until ``y`` is bound anew) are read only as operands (of an operator, of a ufunc or
    ``np.where``, or the gradient ``add_at`` adds, which it reads)."""

    def __init__(self, x, ns):
        self.x, self.ns = x, ns
        self.aliases = {x}

    def step(self, stmt) -> bool:
        stored = _stored(stmt)
        if self.x in stored:
            return False
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
                and isinstance(stmt.value, gast.Name) and stmt.value.id in self.aliases:
            self.aliases.add(stmt.targets[0].id)  # a copy: one more name reaching the value
            return True
        if not (_writes_nothing(stmt, self.ns) or _pop(stmt, self.ns) or _add_at(stmt, self.aliases, self.ns)):
            return False
        for m in compat.walk(stmt):
            for value in m.__dict__.values():
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, gast.Name) and v.id in self.aliases and isinstance(v.ctx, gast.Load) \
                            and not _operand_place(m, v, self.ns):
                        return False
        self.aliases -= stored  # bound anew: reaching another value from here
        return True


def _operand_place(parent, name, ns) -> bool:
    """Whether ``name``, a child of ``parent``, is read there as an operand: of an operator, of a ufunc or
    ``np.where``, or the gradient ``add_at`` adds."""
    if isinstance(parent, (gast.BinOp, gast.UnaryOp, gast.Compare)):
        return True
    if isinstance(parent, gast.Call) and name in parent.args:
        fn = _callee(parent.func, ns)
        if isinstance(fn, np.ufunc) or fn is np.where:
            return True
        return fn is runtime.add_at and len(parent.args) == 4 and parent.args[1] is name
    return False


def _pop(stmt, ns) -> bool:
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
        and isinstance(stmt.value, gast.Call) and not stmt.value.args and not stmt.value.keywords \
        and isinstance(stmt.value.func, gast.Attribute) and stmt.value.func.attr == "pop" \
        and isinstance(stmt.value.func.value, gast.Name) and stmt.value.func.value.id == ns.stack


def _add_at(stmt, aliases, ns) -> bool:
    """``d = add_at(d2, g, s, i)`` of names and reads, writing into ``d2`` (none of ``aliases``) alone."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
        return False
    call = stmt.value
    if not (isinstance(call, gast.Call) and not call.keywords and len(call.args) == 4
            and _callee(call.func, ns) is runtime.add_at and isinstance(call.args[0], gast.Name)
            and call.args[0].id not in aliases):
        return False
    probe = compat.assign("_", gast.Tuple(elts=list(call.args[1:]), ctx=gast.Load()))
    return _writes_nothing(probe, ns)


def _float_names(fn_def, ns) -> set:
    """The names every binding of which in ``fn_def`` surely gives floats or complex numbers (see the module's doc)."""
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    if fn_def.args.vararg or fn_def.args.kwarg:
        params |= {a.id for a in (fn_def.args.vararg, fn_def.args.kwarg) if a is not None}
    sites: dict = {}
    other: set = set(params)
    for n in compat.walk(fn_def):
        if isinstance(n, (gast.Global, gast.Nonlocal)):
            return set()
        if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name):
            sites.setdefault(n.targets[0].id, []).append(n.value)
    plain = {id(n.targets[0]) for n in compat.walk(fn_def)
             if isinstance(n, gast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name)}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) and id(n) not in plain:
            other.add(n.id)  # a loop's target, a tuple's item, a del, an augmented assignment
    floats = set(sites) - other
    while True:
        kept = {name for name in floats if all(_floats(v, floats, ns) for v in sites[name])}
        if kept == floats:
            return floats
        floats = kept


def _floats(expr, floats, ns) -> bool:
    """Whether ``expr`` surely gives floats or complex numbers where the names ``floats`` do."""
    if isinstance(expr, gast.Name):
        return expr.id in floats
    if isinstance(expr, gast.Constant):
        return type(expr.value) in (float, complex)
    if isinstance(expr, gast.UnaryOp):
        return isinstance(expr.op, gast.USub) and _floats(expr.operand, floats, ns)
    if isinstance(expr, gast.Subscript):  # items of an array of floats
        return _floats(expr.value, floats, ns)
    if isinstance(expr, gast.BinOp):
        if isinstance(expr.op, gast.Div):
            return True
        return isinstance(expr.op, (gast.Add, gast.Sub, gast.Mult)) \
            and (_floats(expr.left, floats, ns) or _floats(expr.right, floats, ns))
    if isinstance(expr, gast.Call) and not expr.keywords and not any(isinstance(a, gast.Starred) for a in expr.args):
        fn = _callee(expr.func, ns)
        if fn is np.where and len(expr.args) == 3:
            return _floats(expr.args[1], floats, ns) or _floats(expr.args[2], floats, ns)
        if isinstance(fn, np.ufunc) and fn.nout == 1 and len(expr.args) == fn.nin and fn.types \
                and all(t.split("->")[1] in "efdgFDG" for t in fn.types if t.split("->")[0][0] in "efdgFDG"):
            return any(_floats(a, floats, ns) for a in expr.args)
        if any(fn is keep for keep in _KEEPS_KIND) and expr.args:
            return _floats(expr.args[0], floats, ns)
    return False
