"""Derivative rules for numpy.

Each rule reads like the math it implements.  ``g`` is the incoming
gradient, ``ans`` the primitive's output.  Shapes are not reconciled here:
the engines un-broadcast every returned gradient centrally.
"""

from __future__ import annotations

import math

import numpy as np

from ._registry import defnondiff, defvjp
from ._extra import vector_norm_vjp
from ._support import expand_reduced, reduced_count, tie_weights, within

# ---------------------------------------------------------------- unary ufuncs


@defvjp(np.negative)
def negative(g, ans, x):
    return -g


@defvjp(np.positive)
def positive(g, ans, x):
    return g


@defvjp(np.exp)
def exp(g, ans, x):
    return g * ans


@defvjp(np.exp2)
def exp2(g, ans, x):
    return g * ans * np.log(2.0)


@defvjp(np.expm1)
def expm1(g, ans, x):
    return g * (ans + 1)


@defvjp(np.log)
def log(g, ans, x):
    return g / x


@defvjp(np.log2)
def log2(g, ans, x):
    return g / (x * np.log(2.0))


@defvjp(np.log10)
def log10(g, ans, x):
    return g / (x * np.log(10.0))


@defvjp(np.log1p)
def log1p(g, ans, x):
    return g / (x + 1)


@defvjp(np.sqrt)
def sqrt(g, ans, x):
    return g / (2 * ans)


@defvjp(np.cbrt)
def cbrt(g, ans, x):
    return g / (3 * ans * ans)


@defvjp(np.square)
def square(g, ans, x):
    return g * 2 * x


@defvjp(np.reciprocal)
def reciprocal(g, ans, x):
    return -g * ans * ans


@defvjp(np.absolute)
def absolute(g, ans, x):
    return g * np.sign(x)


@defvjp(np.sin)
def sin(g, ans, x):
    return g * np.cos(x)


@defvjp(np.cos)
def cos(g, ans, x):
    return -g * np.sin(x)


@defvjp(np.tan)
def tan(g, ans, x):
    return g * (1 + ans * ans)


@defvjp(np.arcsin)
def arcsin(g, ans, x):
    return g / np.sqrt(1 - x * x)


@defvjp(np.arccos)
def arccos(g, ans, x):
    return -g / np.sqrt(1 - x * x)


@defvjp(np.arctan)
def arctan(g, ans, x):
    return g / (1 + x * x)


@defvjp(np.sinh)
def sinh(g, ans, x):
    return g * np.cosh(x)


@defvjp(np.cosh)
def cosh(g, ans, x):
    return g * np.sinh(x)


@defvjp(np.tanh)
def tanh(g, ans, x):
    return g * (1 - ans * ans)


@defvjp(np.arcsinh)
def arcsinh(g, ans, x):
    return g / np.sqrt(x * x + 1)


@defvjp(np.arccosh)
def arccosh(g, ans, x):
    return g / np.sqrt(x * x - 1)


@defvjp(np.arctanh)
def arctanh(g, ans, x):
    return g / (1 - x * x)


@defvjp(np.deg2rad)
def deg2rad(g, ans, x):
    return g * (np.pi / 180)


@defvjp(np.rad2deg)
def rad2deg(g, ans, x):
    return g * (180 / np.pi)


def _zero_gradient(g, ans, x):
    return g * 0


for _step in (np.sign, np.floor, np.ceil, np.rint, np.trunc, np.round):
    defvjp(_step, _zero_gradient)

# --------------------------------------------------------------- binary ufuncs


@defvjp(np.add)
def add(g, ans, x, y):
    return g, g


@defvjp(np.subtract)
def subtract(g, ans, x, y):
    return g, -g


@defvjp(np.multiply)
def multiply(g, ans, x, y):
    return g * y, g * x


@defvjp(np.divide)
def divide(g, ans, x, y):
    return g / y, -g * x / (y * y)


@defvjp(np.power)
def power(g, ans, x, y):
    return (
        g * np.where(y == 0, 0, y * x ** np.where(y == 0, 1, y - 1)),
        g * np.where((x == 0) & (y >= 0), 0, ans * np.log(np.where(x == 0, 1, x))),
    )


@defvjp(np.maximum)
def maximum(g, ans, x, y):
    return g * ((x > y) + (x == y) / 2), g * ((y > x) + (x == y) / 2)


@defvjp(np.minimum)
def minimum(g, ans, x, y):
    return g * ((x < y) + (x == y) / 2), g * ((y < x) + (x == y) / 2)


@defvjp(np.arctan2)
def arctan2(g, ans, y, x):
    return g * x / (x * x + y * y), -g * y / (x * x + y * y)


@defvjp(np.hypot)
def hypot(g, ans, x, y):
    return g * x / ans, g * y / ans


@defvjp(np.logaddexp)
def logaddexp(g, ans, x, y):
    return g * np.exp(x - ans), g * np.exp(y - ans)


# ------------------------------------------------------------------ reductions


@defvjp(np.sum)
def np_sum(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return expand_reduced(g, a.shape, axis, keepdims)


@defvjp(np.mean)
def mean(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return expand_reduced(g, a.shape, axis, keepdims) / reduced_count(a.shape, axis)


@defvjp(np.max)
def np_max(g, ans, a, axis=None, out=None, keepdims=False):
    return expand_reduced(g, a.shape, axis, keepdims) * tie_weights(a, ans, axis, keepdims)


@defvjp(np.min)
def np_min(g, ans, a, axis=None, out=None, keepdims=False):
    return expand_reduced(g, a.shape, axis, keepdims) * tie_weights(a, ans, axis, keepdims)


defvjp(np.amax, np_max)
defvjp(np.amin, np_min)


@defvjp(np.prod)
def prod(g, ans, a, axis=None, dtype=None, out=None, keepdims=False):
    return expand_reduced(g * ans, a.shape, axis, keepdims) / a


@defvjp(np.var)
def var(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    return expand_reduced(g, a.shape, axis, keepdims) * 2 * centered / (reduced_count(a.shape, axis) - ddof)


@defvjp(np.std)
def std(g, ans, a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    spread = expand_reduced(ans, a.shape, axis, keepdims)
    return expand_reduced(g, a.shape, axis, keepdims) * centered / (spread * (reduced_count(a.shape, axis) - ddof))


@defvjp(np.linalg.norm)
def norm(g, ans, x, ord=None, axis=None, keepdims=False):
    matrix_norm = isinstance(axis, tuple) or (axis is None and x.ndim == 2 and ord is not None)
    if matrix_norm and ord != "fro":
        raise ValueError(f"astgrad: no gradient for the matrix norm numpy.linalg.norm(ord={ord!r}); "
                         "use a vector norm (axis=int) or the Frobenius norm (ord=None)")
    return vector_norm_vjp(g, ans, x, 2 if ord in (None, "fro") else ord, axis, keepdims)


# ------------------------------------------------------------ shape and layout


@defvjp(np.reshape)
def reshape(g, ans, a, *args, **kwargs):
    return np.reshape(g, a.shape)


@defvjp(np.copy)
def copy(g, ans, a, order="K", subok=False):
    return g


@defvjp(np.ravel)
def ravel(g, ans, a, order="C"):
    return np.reshape(g, a.shape)


@defvjp(np.squeeze)
def squeeze(g, ans, a, axis=None):
    return np.reshape(g, a.shape)


@defvjp(np.expand_dims)
def expand_dims(g, ans, a, axis):
    return np.reshape(g, a.shape)


@defvjp(np.broadcast_to)
def broadcast_to(g, ans, array, shape, subok=False):
    return g


@defvjp(np.transpose)
def transpose(g, ans, a, axes=None):
    return np.transpose(g, None if axes is None else np.argsort(axes))


@defvjp(np.swapaxes)
def swapaxes(g, ans, a, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@defvjp(np.moveaxis)
def moveaxis(g, ans, a, source, destination):
    return np.moveaxis(g, destination, source)


@defvjp(np.concatenate)
def concatenate(g, ans, arrays, axis=0):
    ends = np.cumsum([np.shape(x)[axis] for x in arrays])
    return [g_part for g_part in np.split(g, ends[:-1], axis=axis)]


@defvjp(np.stack)
def stack(g, ans, arrays, axis=0):
    return list(np.moveaxis(g, axis, 0))


@defvjp(np.where)
def where(g, ans, condition, x, y):
    return None, np.where(condition, g, 0), np.where(condition, 0, g)


@defvjp(np.clip)
def clip(g, ans, a, a_min=None, a_max=None):
    return g * within(a, a_min, a_max)


# ----------------------------------------------------------- products


@defvjp(np.matmul)
def matmul(g, ans, a, b):
    if a.ndim == 1 and b.ndim == 1:
        return g * b, g * a
    if b.ndim == 1:
        return np.expand_dims(g, -1) * b, np.sum(a * np.expand_dims(g, -1), axis=tuple(range(a.ndim - 1)))
    if a.ndim == 1:
        return np.squeeze(np.expand_dims(g, -2) @ np.swapaxes(b, -1, -2), -2), np.expand_dims(a, -1) * np.expand_dims(g, -2)
    return g @ np.swapaxes(b, -1, -2), np.swapaxes(a, -1, -2) @ g


@defvjp(np.dot)
def dot(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return g * b, g * a
    return matmul(g, ans, a, b)


@defvjp(np.outer)
def outer(g, ans, a, b):
    return g @ np.ravel(b), np.ravel(a) @ g


# --------------------------------------------------------- math on floats


@defvjp(math.sin)
def math_sin(g, ans, x):
    return g * math.cos(x)


@defvjp(math.cos)
def math_cos(g, ans, x):
    return -g * math.sin(x)


@defvjp(math.tan)
def math_tan(g, ans, x):
    return g * (1 + ans * ans)


@defvjp(math.exp)
def math_exp(g, ans, x):
    return g * ans


@defvjp(math.log)
def math_log(g, ans, x):
    return g / x


@defvjp(math.sqrt)
def math_sqrt(g, ans, x):
    return g / (2 * ans)


@defvjp(math.tanh)
def math_tanh(g, ans, x):
    return g * (1 - ans * ans)


# --------------------------------------------------- no gradient flows here

defnondiff(
    np.shape, np.ndim, np.size, np.argsort, np.zeros_like, np.ones_like,
    np.empty_like, np.full_like, np.equal, np.not_equal, np.less, np.less_equal,
    np.greater, np.greater_equal, np.logical_and, np.logical_or, np.logical_not,
    np.logical_xor, np.isnan, np.isinf, np.isfinite, np.all, np.any,
    np.floor_divide, np.remainder, np.nonzero, np.count_nonzero, np.array_equal,
    np.allclose, np.isclose, np.result_type,
)
