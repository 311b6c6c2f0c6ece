"""Derivative rules for numpy.linalg's array-API names: each the rule of the numpy function it renames.

``np.linalg.vector_norm`` and ``matrix_norm`` are ``np.linalg.norm`` over
the given axes (all of them, the last two); ``trace`` and ``diagonal`` are
``np.trace`` and ``np.diagonal`` over the last two axes; ``cross`` is
``np.cross`` along one axis.  Their edges are those of the functions they
rename (docs/rules.md): a zero norm gets the zero subgradient, tied extremes
share.
"""

from __future__ import annotations

import numpy as np

from ._extra import vector_norm_jvp, vector_norm_vjp
from ._registry import defjvp, defvjp
from .decompositions import matrix_norm_jvp, matrix_norm_vjp
from .linalg import cross
from .reductions import trace
from .shapes import diagonal


@defvjp(np.linalg.vector_norm)
def vector_norm(g, ans, x, axis=None, keepdims=False, ord=2):
    return vector_norm_vjp(g, ans, x, ord, axis, keepdims)


@defvjp(np.linalg.matrix_norm)
def matrix_norm(g, ans, x, keepdims=False, ord="fro"):
    if ord == "fro":
        return vector_norm_vjp(g, ans, x, 2, (-2, -1), keepdims)
    return matrix_norm_vjp(g, ans, x, ord, (-2, -1), keepdims)


@defvjp(np.linalg.trace)
def linalg_trace(g, ans, x, offset=0, dtype=None):
    return trace(g, ans, x, offset, -2, -1, dtype)


@defvjp(np.linalg.diagonal)
def linalg_diagonal(g, ans, x, offset=0):
    return diagonal(g, ans, x, offset, -2, -1)


@defvjp(np.linalg.cross)
def linalg_cross(g, ans, x1, x2, axis=-1):
    return cross(g, ans, x1, x2, axis=axis)


@defjvp(np.linalg.vector_norm)
def vector_norm_tangent(t, ans, x, axis=None, keepdims=False, ord=2):
    return vector_norm_jvp(t, ans, x, ord, axis, keepdims)


@defjvp(np.linalg.matrix_norm)
def matrix_norm_tangent(t, ans, x, keepdims=False, ord="fro"):
    if ord == "fro":
        return vector_norm_jvp(t, ans, x, 2, (-2, -1), keepdims)
    return matrix_norm_jvp(t, ans, x, ord, (-2, -1), keepdims)


@defjvp(np.linalg.trace)
def linalg_trace_jvp(t, ans, x, offset=0, dtype=None):
    return np.linalg.trace(t, offset=offset)


@defjvp(np.linalg.diagonal)
def linalg_diagonal_jvp(t, ans, x, offset=0):
    return np.linalg.diagonal(t, offset=offset)


def linalg_cross_jvp_x1(t, ans, x1, x2, axis=-1):
    return np.linalg.cross(t, x2, axis=axis)


def linalg_cross_jvp_x2(t, ans, x1, x2, axis=-1):
    return np.linalg.cross(x1, t, axis=axis)


defjvp(np.linalg.cross, linalg_cross_jvp_x1, linalg_cross_jvp_x2)
