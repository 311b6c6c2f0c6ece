"""Gradients proven computed, not the placeholder: no ``is_zero`` test where none can be the ``0.0`` of a join.

Where no gradient flows into a name, the adjoint writes the placeholder
``0.0`` (or None for a list), and every rule that may receive it runs behind
``if is_zero(g):``, which skips it.  ``is_zero`` cannot tell the placeholder
from a computed numpy float that happens to be zero: a skipped rule then
gives 0 where ``0 * inf`` gives NaN, as PyTorch and the tape give.  A callee's
backward half tests every gradient it derives from its seed (S2's
``backward_lotka_volterra``: sixteen tests a call), because the caller may
pass the placeholder for its result.  Proven on the function, never guessed:

* **A callee's seed tested once.**  Where the callee's forward half pushes
  nothing but the one tuple its backward half pops first (its primal sweep
  uses no stack: no save in a loop or branch, no callee's forward half
  called), ``if not computed and is_zero(dresult): return 0.0, ...`` right
  after that pop returns the placeholders, the stack balanced.  After it
  the seed is a computed value, and so is everything the sweep derives from
  it alone (``Reverser.maybe_zero`` no longer holds it).  ``computed`` is a
  parameter (False by default) a caller sets where its own sweep proves the
  seed it passes computed (live and not in its ``maybe_zero``): a computed
  zero (``0.0 * f(x)``) then runs the rules as any other number does, and
  meets an infinity as PyTorch's does, in NaN.  Not where the result or a
  differentiated parameter may be a list, tuple or dict (a gradient of parts,
  some of which may be the placeholder), nor below optimize=2 (a hessian
  differentiates the optimize=1 adjoint).  Under the Numba backend the
  guard returns zeros of the parameters (one type for both returns), and
  every call passes ``computed``, so its calls compile one function.
* **A list's items from ``np.array``.**  ``np.array([a, b])``'s rule gives
  every item of the list a gradient (``_like``: ``g[i]`` reshaped), so
  ``part(dlst, i)`` is computed where ``dlst`` is, when the list is bound
  once, by a list literal, not a parameter nor the result, and read by
  nothing but ``np.array``/``np.asarray`` of it alone (no ``dtype``), nor by a
  statement kept as written.

Numbers change only where a computed zero meets an infinite or NaN
intermediate, toward PyTorch's NaN; a placeholder still contributes exactly
0.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import For, If, Op, While, binding_sites, walk_statements

#: the functions whose rules give each item of a list a gradient
_READERS = (np.array, np.asarray)


def item_complete_lists(body, params, ret) -> set:
    """The names of ``body`` holding a list literal every item of whose gradient is computed where the list's is."""
    sites, exposed = binding_sites(body)
    out = set()
    for name, bound in sites.items():
        if name in exposed or name in params or name == ret or len(bound) != 1 or not isinstance(bound[0], Op):
            continue
        pack = bound[0]
        if pack.kind != "pack" or not pack.sequence or pack.kwargs or not isinstance(pack.expr, gast.List):
            continue
        if all(_array_of(s, name) for s in walk_statements(body) if _reads(s, name)):
            out.add(name)
    return out


def _reads(s, name) -> bool:
    """Whether the IR statement ``s`` reads ``name`` (in its own operands or header, not its nested blocks)."""
    if isinstance(s, Op):
        return any(isinstance(n, gast.Name) and n.id == name
                   for a in (*s.args, *s.kwargs.values()) for n in gast.walk(a))
    if isinstance(s, For):
        return any(isinstance(n, gast.Name) and n.id == name for n in gast.walk(s.iter))
    if isinstance(s, (If, While)):
        return s.test == name
    return False


def _array_of(s, name) -> bool:
    """Whether ``s`` is ``np.array(name)`` or ``np.asarray(name)`` alone."""
    return isinstance(s, Op) and s.kind == "prim" and any(s.fn is fn for fn in _READERS) and len(s.args) == 1 \
        and not s.kwargs and isinstance(s.args[0], gast.Name) and s.args[0].id == name


def insert_seed_guard(backward, stack, seed, count, computed, is_zero_name):
    """``if not computed and is_zero(seed): return 0.0, ...`` right after ``backward``'s pop of what its forward
    half saved (its first statement, if it pops), ``computed=False`` a parameter after the seed: the half must
    read the stack nowhere else, or the early return would leave it unbalanced."""
    uses = [n for s in backward.body for n in compat.walk(s) if isinstance(n, gast.Name) and n.id == stack]
    first = backward.body[0] if backward.body else None
    popped_first = first is not None and any(isinstance(n, gast.Name) and n.id == stack for n in compat.walk(first))
    if len(uses) > (1 if popped_first else 0):
        raise AssertionError(f"astgrad internal error: {backward.name} reads its stack after its first statement, "
                             "where its seed was proven to be tested once at its start")
    zeros = [compat.const(0.0) for _ in range(count)]
    value = zeros[0] if count == 1 else compat.tuple_(zeros)
    test = compat.make("BoolOp", op=gast.And(), values=[
        compat.make("UnaryOp", op=gast.Not(), operand=compat.name(computed)),
        compat.call(compat.name(is_zero_name), [compat.name(seed)])])
    backward.body.insert(1 if popped_first else 0, compat.if_stmt(test, [compat.ret(value)]))
    backward.args.args.append(compat.make("Name", id=computed, ctx=gast.Param()))
    backward.args.defaults.append(compat.const(False))
