"""Convolution and pooling layers: a window slid over the trailing (spatial) axes of a batch of channels.

Arrays are laid out as PyTorch lays them out: ``(batch, channels, *spatial)``
with a weight of ``(out_channels, in_channels / groups, *kernel)``.  Every
setting arrives resolved, one entry per spatial axis, ``padding`` as
``(before, after)`` pairs (``'same'`` pads one more after than before when
the total is odd), so the primitives know nothing of PyTorch's spellings.

A convolution is bilinear in its input and weight, and the maps taking the
output's gradient to theirs are linear too; the three close under
differentiation (the gradient of each is one of the other two), so higher
derivatives on the tape, forward rules and generated code all reuse them.
Average pooling is a convolution of each channel with a kernel of ones,
divided by the number of elements counted; max pooling gathers the first
maximum of each window (the last NaN where there are NaNs), as PyTorch's
kernel does, so ties send the whole gradient to one element.

The forward computations take windows as strided views of the padded
input (``sliding_window_view``) and contract them with ``tensordot``: Python
loops run over groups and kernel offsets, never over pixels.
"""

from __future__ import annotations

import math

import numpy as np

from ._extra import scatter_along_axis
from ._registry import defjvp, defnondiff, defvjp, primitive

__all__ = ["convolution", "convolution_input_gradient", "convolution_weight_gradient", "max_pool", "max_pool_indices",
           "avg_pool", "pool_output_size"]


def pool_output_size(length, kernel, stride, before, after, dilation, ceil_mode=False):
    """The number of windows along one axis of ``length`` padded by ``before`` and ``after``.

    With ``ceil_mode`` a last, partial window counts when it starts inside
    the input or the padding before it (PyTorch's rule).
    """
    span = length + before + after - dilation * (kernel - 1) - 1
    count = (-(-span // stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (count - 1) * stride >= length + before:
        count -= 1
    return count


def _windows(x, kernel, stride, padding, dilation, fill=0, ceil_mode=False):
    """A view of ``x``'s windows, ``(batch, channels, *out, *kernel)``, after padding its spatial axes with ``fill``."""
    spatial = len(kernel)
    lengths = np.shape(x)[-spatial:]
    out = [pool_output_size(n, k, s, lo, hi, d, ceil_mode)
           for n, k, s, (lo, hi), d in zip(lengths, kernel, stride, padding, dilation)]
    needed = [(o - 1) * s + d * (k - 1) + 1 for o, k, s, d in zip(out, kernel, stride, dilation)]
    pads = [(0, 0)] * (np.ndim(x) - spatial) + [(lo, max(need - n - lo, 0))
                                                for n, (lo, _), need in zip(lengths, padding, needed)]
    padded = np.pad(x, pads, constant_values=fill) if any(p != (0, 0) for p in pads) else x
    padded = padded[(Ellipsis,) + tuple(slice(0, need) for need in needed)]
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    view = np.lib.stride_tricks.sliding_window_view(padded, extents, axis=tuple(range(-spatial, 0)))
    return view[(Ellipsis,) + tuple(slice(None, None, s) for s in stride) + tuple(slice(None, None, d) for d in dilation)]


def _settings(spatial, stride, padding, dilation):
    """``stride``, ``padding`` and ``dilation`` with one entry per spatial axis (a number serves every axis)."""
    def each(value):
        return (value,) * spatial if np.ndim(value) == 0 else tuple(value)

    pads = ((padding, padding),) * spatial if np.ndim(padding) == 0 else tuple(tuple(p) for p in padding)
    return each(stride), pads, each(dilation)


def _groups_of(a, groups):
    """``a`` split along axis 1 into ``groups`` equal parts (views)."""
    size = np.shape(a)[1] // groups
    return [a[:, i * size:(i + 1) * size] for i in range(groups)]


@primitive
def convolution(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """The cross-correlation of ``input`` (N, C, *spatial) with ``weight`` (O, C / groups, *kernel), plus ``bias``."""
    kernel = np.shape(weight)[2:]
    spatial = len(kernel)
    stride, padding, dilation = _settings(spatial, stride, padding, dilation)
    windows = _windows(input, kernel, stride, padding, dilation)
    contracted = [1] + list(range(2 + spatial, 2 + 2 * spatial))
    parts = [np.tensordot(w, k, axes=(contracted, list(range(1, 1 + spatial + 1))))
             for w, k in zip(_groups_of(windows, groups), np.split(weight, groups))]
    out = np.moveaxis(np.concatenate(parts, axis=-1), -1, 1)  # (N, *out, O) -> (N, O, *out)
    out = np.ascontiguousarray(out)
    if bias is not None:
        out += np.reshape(bias, (-1,) + (1,) * spatial)
    return out


@primitive
def convolution_input_gradient(g, weight, input_shape, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``convolution`` in its input, from ``g``, the gradient of its output (a transposed convolution)."""
    kernel = np.shape(weight)[2:]
    stride, padding, dilation = _settings(len(kernel), stride, padding, dilation)
    out = np.shape(g)[2:]
    lengths = input_shape[2:]
    needed = [(o - 1) * s + d * (k - 1) + 1 for o, k, s, d in zip(out, kernel, stride, dilation)]
    padded_shape = [max(need, n + lo) for need, n, (lo, _) in zip(needed, lengths, padding)]
    dtype = np.result_type(g, weight)
    padded = np.zeros((input_shape[0], input_shape[1], *padded_shape), dtype=dtype)
    group_channels = input_shape[1] // groups
    for group, (g_part, w_part) in enumerate(zip(_groups_of(g, groups), np.split(weight, groups))):
        channels = slice(group * group_channels, (group + 1) * group_channels)
        for offset in np.ndindex(*kernel):
            spread = np.tensordot(g_part, w_part[(slice(None), slice(None)) + offset], axes=([1], [0]))
            placed = tuple(slice(i * d, i * d + s * (o - 1) + 1, s)
                           for i, d, s, o in zip(offset, dilation, stride, out))
            padded[(slice(None), channels) + placed] += np.moveaxis(spread, -1, 1)
    return padded[(slice(None), slice(None)) + tuple(slice(lo, lo + n) for (lo, _), n in zip(padding, lengths))]


@primitive
def convolution_weight_gradient(g, input, weight_shape, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of ``convolution`` in its weight, from ``g``, the gradient of its output."""
    kernel = tuple(weight_shape[2:])
    spatial = len(kernel)
    stride, padding, dilation = _settings(spatial, stride, padding, dilation)
    windows = _windows(input, kernel, stride, padding, dilation)
    summed = [0] + list(range(2, 2 + spatial))
    parts = [np.tensordot(g_part, w, axes=(summed, summed))
             for g_part, w in zip(_groups_of(g, groups), _groups_of(windows, groups))]
    return np.concatenate(parts, axis=0)


def _planes(x, spatial):
    """``x`` (..., *spatial) as a batch of one-channel planes ``(-1, 1, *spatial)``."""
    return np.reshape(x, (-1, 1) + tuple(np.shape(x)[np.ndim(x) - spatial:]))


def _ones_kernel(kernel, dtype):
    return np.ones((1, 1) + tuple(kernel), dtype=dtype)


def _divisor(lengths, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, dtype):
    """What each window's sum is divided by: PyTorch's count of the elements it covers, or the override."""
    if divisor_override:
        return divisor_override
    total = np.ones((), dtype=dtype)
    for n, k, s, (lo, _) in zip(lengths, kernel, stride, padding):
        starts = np.arange(pool_output_size(n, k, s, lo, lo, 1, ceil_mode)) * s - lo
        ends = np.minimum(starts + k, n + lo)
        if not count_include_pad:
            starts, ends = np.maximum(starts, 0), np.minimum(ends, n)
        total = np.multiply.outer(total, (ends - starts).astype(dtype))
    return total


def _pool_padding(lengths, kernel, stride, padding, ceil_mode):
    """``padding`` with enough after each axis for ceil mode's last, partial window."""
    return tuple((lo, max(lo, (pool_output_size(n, k, s, lo, lo, 1, ceil_mode) - 1) * s + k - n - lo))
                 for n, k, s, (lo, _) in zip(lengths, kernel, stride, padding))


@primitive
def avg_pool(input, kernel, stride, padding, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """The mean of each window over the trailing ``len(kernel)`` axes of ``input``, as PyTorch counts it."""
    lengths = np.shape(input)[-len(kernel):]
    pads = _pool_padding(lengths, kernel, stride, padding, ceil_mode)
    sums = convolution(_planes(input, len(kernel)), _ones_kernel(kernel, np.result_type(input)), None, stride, pads,
                       (1,) * len(kernel))
    divisor = _divisor(lengths, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
                       np.result_type(input))
    return np.reshape(sums, np.shape(input)[:-len(kernel)] + np.shape(sums)[2:]) / divisor


def avg_pool_transposed(g, input_shape, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override):
    """The gradient of ``avg_pool`` in its input: each window's gradient spread evenly over what it averaged."""
    lengths = tuple(input_shape[-len(kernel):])
    pads = _pool_padding(lengths, kernel, stride, padding, ceil_mode)
    divisor = _divisor(lengths, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override,
                       np.result_type(g))
    planes = _planes(g / divisor, len(kernel))
    spread = convolution_input_gradient(planes, _ones_kernel(kernel, np.result_type(g)),
                                        (np.shape(planes)[0], 1) + lengths, stride, pads, (1,) * len(kernel))
    return np.reshape(spread, input_shape)


@primitive
def max_pool_indices(input, kernel, stride, padding, dilation, ceil_mode=False):
    """Where each window's first maximum sits (the last NaN, if any), flat within its plane: PyTorch's indices."""
    spatial = len(kernel)
    lengths = np.shape(input)[-spatial:]
    batch = np.shape(input)[:-spatial]
    positions = np.arange(math.prod(lengths)).reshape(lengths)
    dtype = np.result_type(input)
    lowest = -np.inf if dtype.kind in "fc" else np.iinfo(dtype).min if dtype.kind in "iu" else False
    windows = _windows(np.reshape(input, (-1, 1) + tuple(lengths)), kernel, stride, padding, dilation, lowest,
                       ceil_mode)
    out = np.shape(windows)[2:2 + spatial]
    windows = np.reshape(windows, np.shape(windows)[:2 + spatial] + (-1,))
    where = np.reshape(_windows(positions[None, None], kernel, stride, padding, dilation, -1, ceil_mode),
                       out + (-1,))
    chosen = np.argmax(windows, axis=-1)
    nans = np.isnan(windows)
    if nans.any():
        last_nan = windows.shape[-1] - 1 - np.argmax(nans[..., ::-1], axis=-1)
        chosen = np.where(nans.any(axis=-1), last_nan, chosen)
    index = np.take_along_axis(np.broadcast_to(where, np.shape(windows)), chosen[..., None], -1)[..., 0]
    padded = index < 0  # every element of the window -inf: the first one inside the input, as PyTorch picks
    if padded.any():
        first_inside = np.take_along_axis(where, np.argmax(where >= 0, axis=-1)[..., None], -1)[..., 0]
        index = np.where(padded, first_inside, index)
    return np.reshape(index, batch + out).astype(np.int64)


defnondiff(max_pool_indices)


def _flat_planes(x, spatial):
    return np.reshape(x, np.shape(x)[:np.ndim(x) - spatial] + (-1,))


@primitive
def max_pool(input, kernel, stride, padding, dilation, ceil_mode=False):
    """The maximum of each window over the trailing ``len(kernel)`` axes of ``input``."""
    indices = max_pool_indices(input, kernel, stride, padding, dilation, ceil_mode)
    taken = np.take_along_axis(_flat_planes(input, len(kernel)), _flat_planes(indices, len(kernel)), -1)
    return np.reshape(taken, np.shape(indices))


# -- rules ---------------------------------------------------------------


@defvjp(convolution)
def convolution_vjp(g, ans, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return (convolution_input_gradient(g, weight, np.shape(input), stride, padding, dilation, groups),
            convolution_weight_gradient(g, input, np.shape(weight), stride, padding, dilation, groups),
            None if bias is None else np.sum(g, axis=(0,) + tuple(range(2, np.ndim(g)))))


@defvjp(convolution_input_gradient)
def convolution_input_gradient_vjp(h, ans, g, weight, input_shape, stride=1, padding=0, dilation=1,
                                   groups=1):
    return (convolution(h, weight, None, stride, padding, dilation, groups),
            convolution_weight_gradient(g, h, np.shape(weight), stride, padding, dilation, groups))


@defvjp(convolution_weight_gradient)
def convolution_weight_gradient_vjp(h, ans, g, input, weight_shape, stride=1, padding=0, dilation=1,
                                    groups=1):
    return (convolution(input, h, None, stride, padding, dilation, groups),
            convolution_input_gradient(g, h, np.shape(input), stride, padding, dilation, groups))


@defvjp(avg_pool)
def avg_pool_vjp(g, ans, input, kernel, stride, padding, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
    return avg_pool_transposed(g, np.shape(input), kernel, stride, padding, ceil_mode, count_include_pad,
                               divisor_override)


@defvjp(max_pool)
def max_pool_vjp(g, ans, input, kernel, stride, padding, dilation, ceil_mode=False):
    indices = _flat_planes(max_pool_indices(input, kernel, stride, padding, dilation, ceil_mode), len(kernel))
    flat = _flat_planes(input, len(kernel))
    return np.reshape(scatter_along_axis(_flat_planes(g, len(kernel)), indices, -1, np.shape(flat)), np.shape(input))


# -- forward rules: each map is linear in each operand, so a tangent goes through the map itself ---


def convolution_jvp_input(t, ans, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(t, weight, None, stride, padding, dilation, groups)


def convolution_jvp_weight(t, ans, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return convolution(input, t, None, stride, padding, dilation, groups)


def convolution_jvp_bias(t, ans, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return np.broadcast_to(np.reshape(t, (-1,) + (1,) * (np.ndim(ans) - 2)), np.shape(ans))


defjvp(convolution, convolution_jvp_input, convolution_jvp_weight, convolution_jvp_bias)


def convolution_input_gradient_jvp_g(t, ans, g, weight, input_shape, stride=1, padding=0, dilation=1,
                                     groups=1):
    return convolution_input_gradient(t, weight, input_shape, stride, padding, dilation, groups)


def convolution_input_gradient_jvp_weight(t, ans, g, weight, input_shape, stride=(1,), padding=((0, 0),),
                                          dilation=(1,), groups=1):
    return convolution_input_gradient(g, t, input_shape, stride, padding, dilation, groups)


defjvp(convolution_input_gradient, convolution_input_gradient_jvp_g, convolution_input_gradient_jvp_weight)


def convolution_weight_gradient_jvp_g(t, ans, g, input, weight_shape, stride=1, padding=0, dilation=1,
                                      groups=1):
    return convolution_weight_gradient(t, input, weight_shape, stride, padding, dilation, groups)


def convolution_weight_gradient_jvp_input(t, ans, g, input, weight_shape, stride=(1,), padding=((0, 0),),
                                          dilation=(1,), groups=1):
    return convolution_weight_gradient(g, t, weight_shape, stride, padding, dilation, groups)


defjvp(convolution_weight_gradient, convolution_weight_gradient_jvp_g, convolution_weight_gradient_jvp_input)


@defjvp(avg_pool)
def avg_pool_jvp(t, ans, input, kernel, stride, padding, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
    return avg_pool(t, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override)


@defjvp(max_pool)
def max_pool_jvp(t, ans, input, kernel, stride, padding, dilation, ceil_mode=False):
    indices = max_pool_indices(input, kernel, stride, padding, dilation, ceil_mode)
    taken = np.take_along_axis(_flat_planes(t, len(kernel)), _flat_planes(indices, len(kernel)), -1)
    return np.reshape(taken, np.shape(indices))
