"""Derivative rules for numpy's elementwise functions with two outputs: ``np.divmod``, ``np.modf``, ``np.frexp``.

Each output's gradient arrives in ``g``, a pair (``None`` for an output
nothing reads).  ``divmod`` is ``(x // y, x % y)``: the quotient is
piecewise constant, the remainder has ``np.remainder``'s rule.  ``modf`` is
``(x - trunc(x), trunc(x))``: slope 1, then 0.  ``frexp`` is ``(x / 2 ** e,
e)`` with the integer exponent ``e`` piecewise constant: slope ``2 ** -e``.
At a jump (``x`` a multiple of ``y``, a whole ``x``, a power of two) the
slopes are those of the branch numpy took (docs/rules.md, "kinks").  The
tape records each differentiable output as its own node
(``modf_fraction``, ``frexp_mantissa`` and ``np.remainder``), as it does
``slogdet``'s.
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defvjp, primitive, sequence_outputs
from .elementwise import remainder


@defvjp(np.divmod)
def divmod_vjp(g, ans, x, y):
    if g[1] is None:  # the quotient alone, piecewise constant: zeros (None would read as a rule's omission)
        return np.zeros(np.shape(x)), np.zeros(np.shape(y))
    return remainder(g[1], ans[1], x, y)


@defjvp(np.divmod, argnum=0)
def divmod_jvp_x(t, ans, x, y):
    return None, t * np.ones(np.shape(ans[1]))


@defjvp(np.divmod, argnum=1)
def divmod_jvp_y(t, ans, x, y):
    return None, -t * ans[0]


@primitive
def modf_fraction(x):
    """The fractional part of ``x``, ``np.modf(x)[0]``: the output of ``np.modf`` that moves with ``x``."""
    return np.modf(x)[0]


@primitive
def frexp_mantissa(x):
    """The mantissa of ``x``, ``np.frexp(x)[0]``: the output of ``np.frexp`` that moves with ``x``."""
    return np.frexp(x)[0]


@defvjp(np.modf)
def modf(g, ans, x):
    return None if g[0] is None else g[0] * np.ones(np.shape(x))


@defjvp(np.modf)
def modf_jvp(t, ans, x):
    return t * np.ones(np.shape(ans[0])), None


@defvjp(modf_fraction)
def modf_fraction_vjp(g, ans, x):
    return g


@defjvp(modf_fraction)
def modf_fraction_jvp(t, ans, x):
    return t


@defvjp(np.frexp)
def frexp(g, ans, x):
    return None if g[0] is None else g[0] * np.ldexp(1.0, -ans[1])


@defjvp(np.frexp)
def frexp_jvp(t, ans, x):
    return t * np.ldexp(1.0, -ans[1]), None


@defvjp(frexp_mantissa)
def frexp_mantissa_vjp(g, ans, x):
    return g * np.ldexp(1.0, -np.frexp(x)[1])


@defjvp(frexp_mantissa)
def frexp_mantissa_jvp(t, ans, x):
    return t * np.ldexp(1.0, -np.frexp(x)[1])


# their results are tuples: generated code reads each output's gradient apart (transform.primitives lists numpy's
# other functions of several outputs)
sequence_outputs.update((np.divmod, np.modf, np.frexp))
