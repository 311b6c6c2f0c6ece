"""Table entries for the helpers generated code calls, so that generated code can be differentiated again.

A hessian is the derivative of a generated gradient.  The engines read the
adjoint's calls of ``filled``, ``unbroadcast`` or ``shape`` as they read
``np.sin``: from the table.  The helpers that spread or sum a gradient are
linear in it, so each rule is the helper again (forward) or its transpose
(reverse); the ones that compute shapes, counts or checks carry no gradient.

The helpers that write into an operand (``add_into`` and its family, at
optimize=2) have no entry on purpose: a second sweep reads the operand
after the write, so their derivative would be computed from the wrong
values.  Composed transformations differentiate the optimize=1 adjoint,
which has none of them.

The entries live here, beside the runtime, because the rule table must not
import the transformer.
"""

from __future__ import annotations

import numpy as np

from ..rules import _support, defjvp, defnondiff, defvjp
from ..rules._support import expand_reduced, filled, reverse_cumsum
from . import outputs, runtime
from .tangents import add_tangents, tangent_of, zero_tangent
from .runtime import T, broadcast_shape, shape, unbroadcast, unpacked_gradient


# -- shapes, counts and checks: no gradient flows through them --------------

defnondiff(runtime.shape, runtime.size, runtime.ndim, runtime.broadcast_shape, runtime.reduced_shape,
           runtime.matmul_shape, runtime.only_shape, runtime.check_seed, runtime.is_zero, _support.reduced_count,
           _support.within, outputs.scalar_output, outputs.not_scalar, outputs.aux_pair, zero_tangent)


# -- spreading a gradient over a shape, and summing it back -------------------

@defvjp(_support.filled)
def filled_vjp(g, ans, g_in, shape):
    return g  # the engines sum it back to g_in's shape


@defjvp(_support.filled)
def filled_jvp(t, ans, g_in, shape):
    return t  # the engines spread it over the output's shape


def _unbroadcast_vjp(g, ans, g_in, to):
    """Spread ``g`` back over the shape ``g_in`` and ``to`` broadcast to (the engines then sum it to ``g_in``'s)."""
    return filled(g, broadcast_shape(shape(g), shape(g_in)))


def _unbroadcast_jvp(t, ans, g_in, to):
    return unbroadcast(t, to)


for _helper in (runtime.unbroadcast, _support.unbroadcast):
    defvjp(_helper, _unbroadcast_vjp)
    defjvp(_helper, _unbroadcast_jvp)


@defvjp(_support.expand_reduced)
def expand_reduced_vjp(g, ans, g_in, shape, axis=None, keepdims=False):
    if not len(shape):
        return g
    return np.sum(g, axis=axis, keepdims=keepdims)  # the engines sum on to g_in's shape, if it is smaller


@defjvp(_support.expand_reduced)
def expand_reduced_jvp(t, ans, g_in, shape, axis=None, keepdims=False):
    return expand_reduced(t, shape, axis, keepdims)


@defvjp(runtime.T)
def transpose_vjp(g, ans, x):
    return T(g)


@defjvp(runtime.T)
def transpose_jvp(t, ans, x):
    return T(t)


@defvjp(_support.reverse_cumsum)
def reverse_cumsum_vjp(g, ans, x, axis):
    return np.cumsum(g, axis)


@defjvp(_support.reverse_cumsum)
def reverse_cumsum_jvp(t, ans, x, axis):
    return reverse_cumsum(t, axis)


# -- a gradient gathered from the names a value was unpacked into (a, b = x) ---

@defvjp(runtime.unpacked_gradient)
def unpacked_gradient_vjp(g, ans, parts, value):
    return [None if part is None else g[i] for i, part in enumerate(parts)]


def _unpacked_gradient_jvp(t, ans, parts, value):
    return unpacked_gradient([None if part is None else tangent for part, tangent in zip(parts, t)], value)


def _reads_only_the_shape(t, ans, *args):
    return None  # the value unpacked is read for its type and shape


defjvp(runtime.unpacked_gradient, _unpacked_gradient_jvp, _reads_only_the_shape)


# -- the helpers of generated forward-mode code (a jvp differentiated again: a third derivative) -----
# ``zero_tangent(y)`` is zeros whatever ``y`` holds; ``tangent_of(t, ans)`` spreads ``t`` over ``ans``'s shape
# and dtype (``ans`` is read for them alone); ``add_tangents`` adds.  All are linear in the tangents.

def _tangent_of_vjp(g, ans, t, like):
    return g, None  # the engines sum g back to t's shape; like is read for its shape and dtype


def _add_tangents_vjp(g, ans, a, b):
    return g, g


def _spread(t, ans, tangent, like):
    return tangent_of(t, like)


def _passed(t, ans, *args):
    return t


defvjp(tangent_of, _tangent_of_vjp)
defjvp(tangent_of, _spread, _reads_only_the_shape)
defvjp(add_tangents, _add_tangents_vjp)
defjvp(add_tangents, _passed, _passed)
