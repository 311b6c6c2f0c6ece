"""``torch.nn.functional``'s convolutions and poolings: PyTorch's spellings and errors, one table entry each.

This file reads PyTorch's arguments (an int or a tuple per spatial axis,
``padding='same'``, ``stride=None`` meaning the kernel), checks them with
PyTorch's messages, and records one node under PyTorch's name whose rule is
the table's (``astgrad.rules.sliding_windows``).  An unbatched input gets
the batch axis PyTorch gives it, and the nodes that come with it.
"""

from __future__ import annotations

import numpy as np

from ... import rules
from ...tape import apply_op, as_tensor

__all__ = ["conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d"]

_WINDOWS = rules.sliding_windows
_TYPE_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long", "int32": "Int",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _per_axis(value, spatial: int, what: str) -> tuple:
    """``value`` (an int, or one int per spatial axis) as a tuple of ``spatial`` ints."""
    if isinstance(value, (int, np.integer)):
        return (int(value),) * spatial
    values = tuple(int(v) for v in value)
    if len(values) == 1:
        return values * spatial
    if len(values) != spatial:
        raise RuntimeError(f"expected {what} to be a single integer value or a list of {spatial} values to match "
                           f"the convolution dimensions, but got {what}={list(values)}")
    return values


def _shape_text(shape) -> str:
    return "[" + ", ".join(str(n) for n in shape) + "]"


def convolution_padding(padding, kernel, stride, dilation) -> tuple:
    """``(before, after)`` per axis for ``padding`` (ints, ``'valid'`` or ``'same'``, which pads any odd extra after)."""
    if isinstance(padding, str):
        if padding == "valid":
            return tuple((0, 0) for _ in kernel)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((total // 2, total - total // 2) for total in totals)
    padding = _per_axis(padding, len(kernel), "padding")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    return tuple((p, p) for p in padding)


def _convolution(input, weight, bias, stride, padding, dilation, groups, spatial: int):
    """``conv1d`` or ``conv2d``: ``spatial`` axes after the channels, one ``ConvolutionBackward0`` node."""
    input, weight = as_tensor(input), as_tensor(weight)
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to conv{spatial}d, "
                           f"but got input of size: {_shape_text(input.shape)}")
    if input.dim() == spatial + 1:
        return _convolution(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups, spatial).squeeze(0)
    if input.dtype != weight.dtype:
        raise RuntimeError(f"expected scalar type {_TYPE_NAMES.get(str(input.dtype).split('.')[-1], input.dtype)} "
                           f"but found {_TYPE_NAMES.get(str(weight.dtype).split('.')[-1], weight.dtype)}")
    stride, dilation = _per_axis(stride, spatial, "stride"), _per_axis(dilation, spatial, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got {list(dilation)}")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if weight.dim() != spatial + 2:
        raise RuntimeError(f"astgrad.torch: conv{spatial}d takes a {spatial + 2}-D weight (out_channels, "
                           f"in_channels / groups, *kernel), got size {_shape_text(weight.shape)}")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{_shape_text(weight.shape)}] instead")
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {_shape_text(weight.shape)}, expected "
                           f"input{_shape_text(input.shape)} to have {weight.shape[1] * groups} channels, but got "
                           f"{input.shape[1]} channels instead")
    kernel = tuple(weight.shape[2:])
    pads = convolution_padding(padding, kernel, stride, dilation)
    lengths = [n + lo + hi for n, (lo, hi) in zip(input.shape[2:], pads)]
    extents = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(e > n for e, n in zip(extents, lengths)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, lengths))}). Kernel "
                           f"size: ({' x '.join(map(str, extents))}). Kernel size can't be greater than actual input "
                           "size")
    if bias is not None:
        bias = as_tensor(bias)
        if bias.dim() != 1 or bias.shape[0] != weight.shape[0]:
            raise RuntimeError(f"Given weight of size {_shape_text(weight.shape)}, expected bias to be 1-dimensional "
                               f"with {weight.shape[0]} elements, but got bias of size {_shape_text(bias.shape)} "
                               "instead")
    return apply_op("ConvolutionBackward0", _WINDOWS.convolution, (input, weight, bias),
                    {"stride": stride, "padding": pads, "dilation": dilation, "groups": int(groups)},
                    slots=((0,), (1,), (2,)))


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 1-d cross-correlation of ``input`` (N, C, L) or (C, L) with ``weight`` (O, C / groups, K)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A 2-d cross-correlation of ``input`` (N, C, H, W) or (C, H, W) with ``weight`` (O, C / groups, KH, KW)."""
    return _convolution(input, weight, bias, stride, padding, dilation, groups, 2)


def _pool_settings(name: str, kernel_size, stride, padding, dilation) -> tuple:
    """The kernel, stride, padding and dilation of a 2-d pooling as pairs, checked with PyTorch's messages."""
    def pair(value, what):
        values = (int(value),) * 2 if isinstance(value, (int, np.integer)) else tuple(int(v) for v in value)
        if len(values) == 1:
            values = values * 2
        if len(values) != 2:
            raise RuntimeError(f"{name}: {what} must either be a single int, or a tuple of two ints")
        return values

    kernel = pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) else pair(
        stride, "stride")
    padding, dilation = pair(padding, "padding"), pair(dilation, "dilation")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kH: {kernel[0]} kW: {kernel[1]}")
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {dilation[0]} dilationW: "
                           f"{dilation[1]}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for p, k, d in zip(padding, kernel, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")
    return kernel, stride, tuple((p, p) for p in padding), dilation


def _check_pool_output(input, kernel, stride, padding, dilation, ceil_mode) -> None:
    lengths = input.shape[-2:]
    out = [_WINDOWS.pool_output_size(n, k, s, lo, hi, d, ceil_mode)
           for n, k, s, (lo, hi), d in zip(lengths, kernel, stride, padding, dilation)]
    if min(out) < 1:
        channels = input.shape[-3]
        raise RuntimeError(f"Given input size: ({channels}x{lengths[0]}x{lengths[1]}). Calculated output size: "
                           f"({channels}x{out[0]}x{out[1]}). Output size is too small")


def _pooled_input(input):
    input = as_tensor(input)
    if input.dim() not in (3, 4) or input.numel() == 0:
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
    return input


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The largest element of each window (``MaxPool2DWithIndicesBackward0``); a tie sends the gradient to the first.

    ``return_indices`` also gives where each maximum sits, flat within its
    plane, as PyTorch's ``int64`` tensor.
    """
    input = _pooled_input(input)
    kernel, stride, padding, dilation = _pool_settings("max_pool2d", kernel_size, stride, padding, dilation)
    _check_pool_output(input, kernel, stride, padding, dilation, ceil_mode)
    settings = (kernel, stride, padding, dilation, bool(ceil_mode))
    out = apply_op("MaxPool2DWithIndicesBackward0", _WINDOWS.max_pool, (input, *settings), slots=((0,),))
    if not return_indices:
        return out
    return out, as_tensor(_WINDOWS.max_pool_indices(input.detach().numpy(), *settings))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of each window (``AvgPool2DBackward0``), divided by what PyTorch counts (or ``divisor_override``)."""
    input = as_tensor(input)
    if input.dim() not in (3, 4):
        raise IndexError(f"Dimension out of range (expected to be in range of [-{input.dim()}, "
                         f"{input.dim() - 1}], but got -3)")
    kernel, stride, padding, dilation = _pool_settings("avg_pool2d", kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    _check_pool_output(input, kernel, stride, padding, dilation, ceil_mode)
    settings = (kernel, stride, padding, bool(ceil_mode), bool(count_include_pad), divisor_override)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # PyTorch divides integers, truncating
        means = _WINDOWS.avg_pool(input.numpy().astype(np.float64), *settings)
        return as_tensor(np.trunc(means).astype(input.numpy().dtype))
    return apply_op("AvgPool2DBackward0", _WINDOWS.avg_pool, (input, *settings), slots=((0,),))


def _one_axis(value):
    """A 1-d pooling's setting as the 2-d pooling's: one row."""
    if value is None:
        return None
    value = value if isinstance(value, (int, np.integer)) else tuple(value)
    if isinstance(value, tuple) and len(value) != 1:
        raise RuntimeError(f"expected a single int or a tuple of one int, got {value}")
    return value if isinstance(value, tuple) else (value,)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """``max_pool2d`` over one row, as PyTorch computes it (so the node is ``SqueezeBackward1``)."""
    input = as_tensor(input)
    if input.dim() not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{_shape_text(input.shape)}")
    kernel = _one_axis(kernel_size)
    stride = kernel if stride is None or stride == () or stride == [] else _one_axis(stride)
    pooled = max_pool2d(input.unsqueeze(-2), (1, *kernel), (1, *stride), (0, *_one_axis(padding)),
                        (1, *_one_axis(dilation)), ceil_mode, return_indices)
    if return_indices:
        return pooled[0].squeeze(-2), pooled[1].squeeze(-2)
    return pooled.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """``avg_pool2d`` over one row, as PyTorch computes it (so the node is ``SqueezeBackward1``)."""
    input = as_tensor(input)
    if input.dim() not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument #1 "
                           "'self' (while checking arguments for avg_pool1d)")
    kernel = _one_axis(kernel_size)
    stride = kernel if stride is None or stride == () or stride == [] else _one_axis(stride)
    return avg_pool2d(input.unsqueeze(-2), (1, *kernel), (1, *stride), (0, *_one_axis(padding)), ceil_mode,
                      count_include_pad).squeeze(-2)


def adaptive_avg_pool2d(input, output_size):
    """The mean over ``output_size`` equal windows per plane; a size that does not divide the input is refused.

    An output of one element per plane is PyTorch's mean (``MeanBackward1``).
    """
    input = as_tensor(input)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {_shape_text(input.shape)}")
    sizes = (output_size,) * 2 if isinstance(output_size, (int, np.integer)) else tuple(output_size)
    lengths = tuple(input.shape[-2:])
    sizes = tuple(n if s is None else int(s) for s, n in zip(sizes, lengths))
    if sizes == (1, 1):
        return input.mean((-1, -2), keepdim=True)
    if any(s <= 0 or n % s for s, n in zip(sizes, lengths)):
        raise NotImplementedError(f"astgrad.torch: adaptive_avg_pool2d to {sizes} from an input of {lengths}: "
                                  "astgrad pools only where each output size divides the input's size; pad or crop "
                                  "the input first, or use avg_pool2d with the windows you want")
    kernel = tuple(n // s for s, n in zip(sizes, lengths))
    return apply_op("AdaptiveAvgPool2DBackward0", _WINDOWS.avg_pool,
                    (input, kernel, kernel, ((0, 0), (0, 0)), False, True, None), slots=((0,),))
