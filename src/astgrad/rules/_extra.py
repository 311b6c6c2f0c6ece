"""Primitives numpy lacks, needed by both engines.

Indexing, functional item assignment, and the few tensor operations whose
gradients differ from any numpy composition (``relu`` gives 0 at 0 where
``np.maximum(x, 0)`` splits the tie; ``max`` along an axis gives the whole
gradient to the first maximum, as PyTorch does).
"""

from __future__ import annotations

import numpy as np

from ._registry import defjvp, defnondiff, defvjp, primitive
from . import _lazy
from ._lazy import ChunkedShape, is_lazy
from ._support import expand_reduced, integral, reduced_count

__all__ = [
    "getitem",
    "scatter",
    "scatter_along_axis",
    "setitem",
    "written",
    "last_writes",
    "through_cast",
    "sigmoid",
    "relu",
    "max_along",
    "min_along",
    "vector_norm",
    "first_extreme_mask",
    "astype",
    "logabsdet",
    "slogdet_sign",
    "eigh_values",
    "eigh_vectors",
    "softmax",
    "log_softmax",
    "mse_loss",
]


@primitive
def getitem(a, index):
    """``a[index]`` as a function."""
    return a[index]


@primitive
def scatter(g, shape, index):
    """Zeros of ``shape`` with ``g`` added at ``index`` (repeats accumulate)."""
    if type(shape) is ChunkedShape or type(g) is not np.ndarray and is_lazy(g):
        return _lazy.scatter(g, shape, index)
    out = np.zeros(shape, dtype=g.dtype if type(g) is np.ndarray else np.result_type(g))
    if may_repeat(index):
        np.add.at(out, index, g)
    else:  # each position named once: a write, without add.at's cost per call (microseconds in a loop)
        out[index] = g
    return out


@primitive
def scatter_along_axis(g, indices, axis, shape):
    """Zeros of ``shape`` with ``g`` added where ``take_along_axis(., indices, axis)`` reads."""
    out = np.zeros(shape, dtype=np.result_type(g))
    grid = list(np.ogrid[tuple(slice(n) for n in np.shape(indices))])
    grid[axis % len(shape)] = indices
    np.add.at(out, tuple(grid), g)
    return out


@primitive
def setitem(a, index, value):
    """A copy of ``a`` with ``a[index] = value`` (a list stays a list of its items, a dict a dict)."""
    if type(a) is list or type(a) is dict:
        out = a.copy()
        out[index] = value
        return out
    if is_lazy(a) or is_lazy(value):  # a new Dask array; np.array would compute it
        out = a.copy() if is_lazy(a) else _lazy.from_numpy(a)
        out[index] = value
        return out
    # an array's own copy, in its layout (np.array(a, copy=True) keeps it too, after parsing its arguments)
    copied = a.copy(order="K") if type(a) is np.ndarray else np.array(a, copy=True)
    copied[index] = value
    return copied


@primitive
def written(g, index):
    """The gradient of ``value`` in ``a[index] = value``: ``g[index]``, zero where numpy's write did not last.

    With an index that names one element twice (``a[[0, 0]] = v``, ``a[[0, 0, 1]] += v``) numpy keeps the
    last write and the earlier one is lost: its value moves nothing, so it gets no gradient.  A number
    ``g`` (the seed of a 0-d result written with ``out=``) is read as the 0-d array it stands for.
    """
    if type(g) is np.ndarray and (type(index) is int or type(index) is slice):  # y[i], u[1:-1] = v in a loop
        return g[index]  # an integer or a slice names each element once: as cheap as getitem
    part = np.asarray(g)[index] if isinstance(g, (int, float, complex)) else g[index]
    if not may_repeat(index):
        return part
    return part * last_writes(np.shape(g), index)


def may_repeat(index) -> bool:
    """Whether ``index`` may name one element twice: it holds an integer array or list (boolean masks never do)."""
    if type(index) is int or type(index) is slice:
        return False
    for part in index if type(index) is tuple else (index,):
        if isinstance(part, list):
            part = np.asarray(part)
        if (isinstance(part, np.ndarray) or is_lazy(part)) and part.dtype != bool:
            return True
    return False


@primitive
def last_writes(shape, index):
    """True at each place of ``a[index]`` whose write numpy keeps in ``a[index] = value`` (``a`` of ``shape``).

    Asked of numpy itself: the positions written in order, each element of an array of ``shape`` keeps the
    position numpy wrote last.  ``True`` when ``index`` cannot repeat an element.
    """
    if not may_repeat(index):
        return True
    marks = np.full(tuple(shape), -1, np.intp)
    order = np.arange(marks[index].size).reshape(np.shape(marks[index]))
    marks[index] = order
    return marks[index] == order


def through_cast(g, into):
    """``g``, the gradient of a value written into ``into`` (``into[i] = v``, ``out=into``, ``np.copyto``).

    Zeros where ``into`` holds integers or booleans: numpy rounds (or tests)
    what it writes there, so nothing moves with the value written.
    """
    dtype = getattr(into, "dtype", None)
    if dtype is not None and integral(dtype):
        return np.zeros_like(g, dtype=np.float64)
    return g


@primitive
def sigmoid(x):
    """The logistic function, computed without overflow for large ``|x|``."""
    x = x if is_lazy(x) else np.asarray(x)
    return np.exp(-np.logaddexp(0, -x)).astype(x.dtype, copy=False)


@primitive
def relu(x):
    return np.maximum(x, 0)


@primitive
def max_along(a, axis, keepdims=False):
    """Maximum along one axis; its gradient goes to the first maximum only."""
    return np.max(a, axis=axis, keepdims=keepdims)


@primitive
def min_along(a, axis, keepdims=False):
    """Minimum along one axis; its gradient goes to the first minimum only."""
    return np.min(a, axis=axis, keepdims=keepdims)


@primitive
def first_extreme_mask(a, axis, largest):
    """True at the first maximum (or minimum) along ``axis``, False elsewhere."""
    find = np.argmax if largest else np.argmin
    if is_lazy(a):  # no put_along_axis in Dask: compare positions along the axis with the extreme's
        axis = axis % a.ndim
        positions = np.arange(a.shape[axis]).reshape((-1,) + (1,) * (a.ndim - 1 - axis))
        return positions == np.expand_dims(find(a, axis=axis), axis)
    a = np.asarray(a)
    mask = np.zeros(a.shape, dtype=bool)
    np.put_along_axis(mask, np.expand_dims(find(a, axis=axis), axis), True, axis=axis)
    return mask


@primitive
def vector_norm(x, ord=2, axis=None, keepdims=False):
    """The vector p-norm over ``axis`` (all elements when ``None``)."""
    if ord == 2:
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == np.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -np.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:  # how many are not zero
        return np.sum(x != 0, axis=axis, keepdims=keepdims).astype(np.result_type(np.real(x), np.float32))
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    return np.sum(np.abs(x) ** ord, axis=axis, keepdims=keepdims) ** (1.0 / ord)


@primitive
def logabsdet(a):
    """log|det a|, the differentiable half of ``np.linalg.slogdet``."""
    return np.linalg.slogdet(a)[1]


@primitive
def slogdet_sign(a):
    """The sign (a phase, for a complex matrix) of ``det a``: the other half of ``np.linalg.slogdet``."""
    return np.linalg.slogdet(a)[0]


@primitive
def eigh_values(a, UPLO="L"):
    """Eigenvalues of a symmetric matrix (first output of ``np.linalg.eigh``)."""
    return np.linalg.eigh(a, UPLO)[0]


@primitive
def eigh_vectors(a, UPLO="L"):
    """Eigenvectors of a symmetric matrix (second output of ``np.linalg.eigh``)."""
    return np.linalg.eigh(a, UPLO)[1]


@primitive
def astype(x, dtype):
    """``x`` converted to ``dtype`` (always a copy)."""
    return (x if is_lazy(x) else np.asarray(x)).astype(dtype)


@primitive
def softmax(x, axis):
    """``exp(x)`` normalised to sum 1 along ``axis`` (shifted by the maximum, so it cannot overflow)."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@primitive
def log_softmax(x, axis):
    """``log(softmax(x, axis))`` computed without forming the softmax."""
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@primitive
def mse_loss(input, target, reduction="mean"):
    """Squared error, averaged (``"mean"``), summed (``"sum"``) or elementwise (``"none"``)."""
    squared = (input - target) ** 2
    if reduction == "none":
        return squared
    return np.mean(squared) if reduction == "mean" else np.sum(squared)


# -- rules ---------------------------------------------------------------


@defvjp(getitem)
def getitem_vjp(g, ans, a, index):
    return scatter(g, a.shape, index)


@defvjp(scatter)
def scatter_vjp(g, ans, g_in, shape, index):
    return getitem(g, index)


@defvjp(scatter_along_axis)
def scatter_along_axis_vjp(g, ans, g_in, indices, axis, shape):
    return np.take_along_axis(g, indices, axis)


@defvjp(setitem)
def setitem_vjp(g, ans, a, index, value):
    return setitem(g, index, 0), None, through_cast(written(g, index), a)


@defvjp(written)
def written_vjp(g, ans, g_in, index):
    return scatter(g * last_writes(g_in.shape, index), g_in.shape, index)


@defvjp(through_cast)
def through_cast_vjp(g, ans, g_in, into):
    return through_cast(g, into), 0.0  # into is read for its dtype alone


@defvjp(sigmoid)
def sigmoid_vjp(g, ans, x):
    return g * ans * (1 - ans)


@defvjp(relu)
def relu_vjp(g, ans, x):
    return g * (x > 0)


@defvjp(max_along)
def max_along_vjp(g, ans, a, axis, keepdims=False):
    return expand_reduced(g, a.shape, axis, keepdims) * first_extreme_mask(a, axis, True)


@defvjp(min_along)
def min_along_vjp(g, ans, a, axis, keepdims=False):
    return expand_reduced(g, a.shape, axis, keepdims) * first_extreme_mask(a, axis, False)


@defvjp(vector_norm)
def vector_norm_vjp(g, ans, x, ord=2, axis=None, keepdims=False):
    g = expand_reduced(np.real(g), np.shape(x), axis, keepdims)  # np.shape: np.linalg.norm([a, b]) passes a list
    norm = expand_reduced(ans, np.shape(x), axis, keepdims)
    if ord == 2:
        return g * np.where(norm == 0, 0, np.conj(x) / np.where(norm == 0, 1, norm))
    if ord == 1:
        return g * np.conj(np.sign(x))
    if ord == np.inf or ord == -np.inf:  # tied largest (smallest) magnitudes share g evenly, as for np.max
        hits = np.abs(x) == norm
        return g * np.conj(np.sign(x)) * hits / np.sum(hits, axis=axis, keepdims=True)
    if ord == 0:  # a count of nonzero entries: piecewise constant
        return g * np.zeros(np.shape(x))
    return (g * np.conj(np.sign(x)) * np.abs(x) ** (ord - 1)
            * np.where(norm == 0, 0, np.where(norm == 0, 1, norm) ** (1 - ord)))


@defvjp(astype)
def astype_vjp(g, ans, x, dtype):
    if integral(ans.dtype):  # x.astype(dt) with dt an integer or boolean type: rounding is piecewise constant
        return np.zeros(x.shape)
    return np.real(g) if np.iscomplexobj(x) and not np.iscomplexobj(ans) else g  # complex to real keeps x.real


@defvjp(softmax)
def softmax_vjp(g, ans, x, axis):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True)), None


@defvjp(log_softmax)
def log_softmax_vjp(g, ans, x, axis):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True), None


@defvjp(mse_loss)
def mse_loss_vjp(g, ans, input, target, reduction="mean"):
    diff = input - target
    if reduction == "mean":
        g = g / reduced_count(np.shape(diff))
    return 2 * diff * g, -2 * diff * g, None


# -- forward rules -------------------------------------------------------


def getitem_jvp(t, ans, a, index):
    return getitem(t, index)


def index_jvp(t, ans, a, index):
    """An index (an integer a generated gradient popped off its stack carries a zero tangent): it moves nothing."""
    return None


defjvp(getitem, getitem_jvp, index_jvp)


def scatter_jvp(t, ans, g_in, shape, index):
    return scatter(t, shape, index)


def scatter_index_jvp(t, ans, g_in, shape, index):
    """A shape or an index moves nothing."""
    return None


defjvp(scatter, scatter_jvp, scatter_index_jvp, scatter_index_jvp)


@defjvp(scatter_along_axis)
def scatter_along_axis_jvp(t, ans, g_in, indices, axis, shape):
    return scatter_along_axis(t, indices, axis, shape)


def written_jvp(t, ans, g_in, index):
    return written(t, index)


defjvp(written, written_jvp, index_jvp)


def setitem_jvp_a(t, ans, a, index, value):
    return setitem(t, index, 0)


def setitem_jvp_value(t, ans, a, index, value):
    return setitem(np.zeros(np.shape(ans), np.result_type(t, ans)), index, through_cast(t, a))


def through_cast_jvp(t, ans, g, into):
    return through_cast(t, into)


def _read_for_its_dtype(t, ans, g, into):
    return None


defjvp(through_cast, through_cast_jvp, _read_for_its_dtype)


def setitem_jvp_index(t, ans, a, index, value):
    """An index moves nothing."""
    return None


defjvp(setitem, setitem_jvp_a, setitem_jvp_index, setitem_jvp_value)
defjvp(sigmoid, sigmoid_vjp)  # a diagonal Jacobian: the reverse rule is the forward rule
defjvp(relu, relu_vjp)


@defjvp(max_along)
def max_along_jvp(t, ans, a, axis, keepdims=False):
    return np.sum(t * first_extreme_mask(a, axis, True), axis=axis, keepdims=keepdims)


@defjvp(min_along)
def min_along_jvp(t, ans, a, axis, keepdims=False):
    return np.sum(t * first_extreme_mask(a, axis, False), axis=axis, keepdims=keepdims)


@defjvp(vector_norm)
def vector_norm_jvp(t, ans, x, ord=2, axis=None, keepdims=False):
    slope = np.real(np.conj(np.sign(x)) * t)  # d|x| along t
    if ord == 2:
        return np.where(ans == 0, 0, np.real(np.sum(np.conj(x) * t, axis=axis, keepdims=keepdims))
                        / np.where(ans == 0, 1, ans))
    if ord == 1:
        return np.sum(slope, axis=axis, keepdims=keepdims)
    if ord == np.inf or ord == -np.inf:  # tied largest (smallest) magnitudes share evenly, as the reverse rule
        hits = np.abs(x) == expand_reduced(ans, np.shape(x), axis, keepdims)
        return np.sum(slope * hits, axis=axis, keepdims=keepdims) / np.sum(hits, axis=axis, keepdims=keepdims)
    if ord == 0:  # a count of nonzero entries: piecewise constant
        return np.zeros(np.shape(ans))
    return (np.sum(slope * np.abs(x) ** (ord - 1), axis=axis, keepdims=keepdims)
            * np.where(ans == 0, 0, np.where(ans == 0, 1, ans) ** (1 - ord)))


@defjvp(astype)
def astype_jvp(t, ans, x, dtype):
    if integral(ans.dtype):
        return np.zeros(ans.shape)
    return t


@defjvp(softmax)
def softmax_jvp(t, ans, x, axis):
    return ans * (t - np.sum(t * ans, axis=axis, keepdims=True))


@defjvp(log_softmax)
def log_softmax_jvp(t, ans, x, axis):
    return t - np.sum(np.exp(ans) * t, axis=axis, keepdims=True)


def mse_loss_jvp_input(t, ans, input, target, reduction="mean"):
    slope = 2 * (input - target) * t
    if reduction == "none":
        return slope
    return np.mean(slope) if reduction == "mean" else np.sum(slope)


def mse_loss_jvp_target(t, ans, input, target, reduction="mean"):
    return mse_loss_jvp_input(-t, ans, input, target, reduction)


defjvp(mse_loss, mse_loss_jvp_input, mse_loss_jvp_target)


defnondiff(np.argmax, np.argmin, first_extreme_mask, last_writes)
