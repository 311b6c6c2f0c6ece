"""How forward (tangent) rules are called and combined: the conventions both engines follow.

An entry's forward rule for positional argument ``i`` is
``jvp(t, ans, *args, **kwargs)``: ``t`` is the tangent of argument ``i``
(a direction in which it moves), ``ans`` the primitive's output and
``args``/``kwargs`` what the primitive was called with.  It returns the
tangent of the output due to ``t`` alone; the output's tangent is the sum
over the arguments that have one.  The conventions:

* **absent tangents**: an argument without a tangent (a constant, an axis,
  an index) is skipped: its rule is not called, so no rule ever sees
  ``None`` or a zero made up for it.  A call where no argument has a
  tangent has none either (``None``).
* **sequence arguments** (the list given to ``np.concatenate``): the
  tangent is a list with one tangent per item, an item without one being
  ``np.zeros_like(item)`` (joining needs every part).
* **several outputs** (``eigh``, ``svd``, ``np.split``): the tangent has the
  output's structure, a tuple or a list; ``None`` stands for an output that
  carries no tangent (``slogdet``'s sign, ``lstsq``'s rank).
* **broadcasting and dtype**: a rule returns a tangent that broadcasts to
  the output's shape (``add``'s rule returns ``t`` itself); the engines
  broadcast it once, with :func:`broadcast_tangent`, as reverse mode
  un-broadcasts in one place, and give it the output's floating dtype
  there (a real output, the real part).  A rule may return ``None`` for a zero
  tangent (``max(a, b)`` for the argument it did not return).
* **complex numbers**: a tangent is the complex directional derivative
  ``d/ds f(z + s t)`` at ``s = 0`` for real ``s``.  Holomorphic functions
  multiply by ``f'(z)``; the others (``conj``, ``abs``, ``real``) are real
  linear in ``t``.  With the reverse convention (docs/rules.md), a rule
  pair satisfies ``Re sum(g * jvp(t)) == Re sum(vjp(g) * t)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["tangent_of_call", "broadcast_tangent", "add_tangents"]


def broadcast_tangent(t, ans):
    """``t`` spread to the shape of ``ans`` and given its floating dtype (``None`` stays ``None``).

    Itself when shape and dtype match.  A float32 output keeps a float32
    tangent, whatever float64 constants a rule multiplied by (``np.log(2.0)``),
    and a real output gets the real part of a tangent: the directional
    derivative of a real value is real, whatever a rule's formula leaves in
    the imaginary part.  A dict (a gradient generated code made, holding the
    keys that got one) has no dtype and the shape ``()``: it is returned as it is.
    """
    if t is None:
        return None
    if isinstance(ans, (tuple, list)):
        return type(t)(broadcast_tangent(part, out) for part, out in zip(t, ans))
    dtype = getattr(ans, "dtype", None)
    if dtype is not None and dtype.kind in "fc" and np.result_type(t) != dtype:
        t = np.asarray(np.real(t) if dtype.kind == "f" else t).astype(dtype)
    shape = np.shape(ans)
    if np.shape(t) == shape:
        return t
    return np.broadcast_to(t, shape)


def add_tangents(a, b):
    """``a + b`` for tangents, where ``None`` is zero and tuples and lists add item by item.

    Dicts (the gradients generated code makes hold the keys that got one)
    add key by key; a dict, list or tuple plus the number ``0.0`` (a join's
    zero before any gradient) is itself.
    """
    if a is None:
        return b
    if b is None:
        return a
    if not isinstance(a, (dict, tuple, list)) and isinstance(b, (dict, tuple, list)):
        a, b = b, a
    if isinstance(a, (dict, tuple, list)) and type(b) is float and b == 0.0:
        return a
    if isinstance(a, dict):
        if not isinstance(b, dict):
            raise TypeError(f"astgrad: a dict's tangent cannot be added to a {type(b).__name__}")
        out = dict(a)
        for key, value in b.items():
            out[key] = add_tangents(out[key], value) if key in out else value
        return out
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):  # never cut short by zip
            raise ValueError(f"astgrad: tangents of {len(a)} and {len(b)} items cannot be added")
        return type(a)(add_tangents(x, y) for x, y in zip(a, b))
    return a + b


def tangent_of_call(entry, tangents, ans, args, kwargs):
    """The output tangent of one call of ``entry``'s primitive: the sum of its forward rules' contributions.

    ``tangents[i]`` is the tangent of positional argument ``i`` or ``None``.
    Raises ``LookupError`` when an argument has a tangent and the entry no
    forward rule for it: a tangent is never dropped silently.
    """
    total = None
    for argnum, t in enumerate(tangents):
        if t is None:
            continue
        rule = entry.jvp_for(argnum)
        if rule is None:
            raise LookupError(f"{entry.name} has no forward rule for its argument {argnum}, which has a tangent; "
                              f"register one with astgrad.defjvp({entry.name}, ..., argnum={argnum})")
        total = add_tangents(total, rule(t, ans, *args, **kwargs))
    return broadcast_tangent(total, ans)
