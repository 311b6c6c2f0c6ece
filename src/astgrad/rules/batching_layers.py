"""Batching rules (``astgrad.vmap``) of the neural-network layers and losses of the table.

A loss reduced to a number is, for each example, its elementwise losses
reduced over that example's axes: the rule computes them unreduced
(``reduction="none"``) on the aligned operands and reduces over every axis
but the batch axis.  Pooling works on the trailing spatial axes whatever
leads them, so the batch axis is one more leading axis; a convolution
joins the examples' batches into one (a shared kernel) or their channels
into one group each (a kernel per example).
"""

from __future__ import annotations

import numpy as np

from ._extra import mse_loss
from ._registry import defbatch
from .batching import aligned, aligned_operands, broadcast_batch, every_axis, unbatchable
from .batching_shapes import batch_size, example_rank, with_batch
from .losses import (binary_cross_entropy, binary_cross_entropy_with_logits, embedding, huber_loss, layer_norm, linear,
                     nll_loss, smooth_l1_loss, target_weights)
from .sliding_windows import (avg_pool, convolution, convolution_input_gradient, convolution_weight_gradient, max_pool,
                              max_pool_indices)

__all__: list = []


def _given(bdims, k):
    return len(bdims) > k and bdims[k] is not None


def _padded(bdims, count):
    """``bdims`` with None for the optional arguments the call left out: one per operand."""
    return tuple(bdims) + (None,) * (count - len(bdims))


def reduced_examples(losses, reduction):
    """Each example's elementwise ``losses`` as ``reduction`` says: kept, summed or averaged over its axes."""
    if reduction == "none":
        return losses
    axes = every_axis(np.ndim(losses))
    return np.sum(losses, axis=axes) if reduction == "sum" else np.mean(losses, axis=axes)


# -- losses -----------------------------------------------------------------------------------

@defbatch(mse_loss)
def mse_loss_batched(bdims, input, target, reduction="mean"):
    return reduced_examples(mse_loss(*aligned_operands(bdims[:2], input, target), "none"), reduction)


@defbatch(binary_cross_entropy)
def binary_cross_entropy_batched(bdims, input, target, weight=None, reduction="mean"):
    operands = aligned_operands(_padded(bdims, 3)[:3], input, target, weight)
    return reduced_examples(binary_cross_entropy(*operands, "none"), reduction)


@defbatch(binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits_batched(bdims, input, target, weight=None, pos_weight=None, reduction="mean"):
    operands = aligned_operands(_padded(bdims, 4)[:4], input, target, weight, pos_weight)
    return reduced_examples(binary_cross_entropy_with_logits(*operands, "none"), reduction)


@defbatch(smooth_l1_loss)
def smooth_l1_loss_batched(bdims, input, target, reduction="mean", beta=1.0):
    if _given(bdims, 3):
        return unbatchable("a beta that differs from example to example")
    return reduced_examples(smooth_l1_loss(*aligned_operands(bdims[:2], input, target), "none", beta), reduction)


@defbatch(huber_loss)
def huber_loss_batched(bdims, input, target, reduction="mean", delta=1.0):
    if _given(bdims, 3):
        return unbatchable("a delta that differs from example to example")
    return reduced_examples(huber_loss(*aligned_operands(bdims[:2], input, target), "none", delta), reduction)


@defbatch(target_weights)
def target_weights_batched(bdims, input, target, weight, ignore_index):
    """``input`` gives the number of classes only (its shape): one example's stands in for it.  Each example's
    class weights, where batched, are read at its own targets."""
    if bdims[3] is not None:
        return unbatchable("an ignored index that differs from example to example")
    size = batch_size(bdims, input, target, weight)
    if bdims[2] is not None:
        target = with_batch(np.asarray(target), bdims[1], size)
        ignored = target == ignore_index
        weight = np.asarray(weight)
        rows = np.reshape(np.arange(size), (size,) + (1,) * (np.ndim(target) - 1))
        return np.where(ignored, 0, weight[rows, np.where(ignored, 0, target)]).astype(weight.dtype)
    like = input
    if bdims[0] is not None:
        like = np.broadcast_to(np.zeros((), np.result_type(input)), np.shape(input)[1:])
    values = target_weights(like, target, weight, ignore_index)
    return values if bdims[1] is not None else broadcast_batch(values, size)


@defbatch(nll_loss)
def nll_loss_batched(bdims, input, target, weight=None, ignore_index=-100, reduction="mean"):
    """Each example's samples joined into one batch of samples, their losses unreduced, then reduced per
    example (``"mean"``: divided by the example's summed target weights, as for one)."""
    if _given(bdims, 2) or _given(bdims, 3):
        return unbatchable("class weights or an ignored index that differ from example to example")
    size = batch_size(bdims, input, target)
    input, target = with_batch(input, bdims[0], size), with_batch(target, bdims[1], size)
    if np.ndim(input) == 2:  # one sample per example: the examples are the samples
        losses = nll_loss(input, target, weight, ignore_index, "none")
        weights = target_weights(input, target, weight, ignore_index)
    else:
        samples = np.reshape(input, (-1,) + np.shape(input)[2:])
        targets = np.reshape(target, (-1,) + np.shape(target)[2:])
        losses = np.reshape(nll_loss(samples, targets, weight, ignore_index, "none"), np.shape(target))
        weights = np.reshape(target_weights(samples, targets, weight, ignore_index), np.shape(target))
    if reduction == "none":
        return losses
    axes = every_axis(np.ndim(losses))
    total = np.sum(losses, axis=axes)
    return total if reduction == "sum" else total / np.sum(weights, axis=axes)


# -- layers -----------------------------------------------------------------------------------

@defbatch(linear)
def linear_batched(bdims, input, weight, bias=None):
    rank = example_rank(input, bdims[0])
    if rank == 0 or example_rank(weight, bdims[1]) != 2:
        return unbatchable("linear of a number, or with a weight that is not one matrix per example")
    if bdims[1] is None:  # one weight: the batch axis is one more leading axis of the input
        out = np.matmul(input, np.swapaxes(weight, -1, -2))
    elif bdims[0] is not None:
        out = np.einsum("n...i,noi->n...o", input, weight)
    else:
        out = np.einsum("...i,noi->n...o", input, weight)
    if bias is None:
        return out
    return out + (aligned(bias, rank) if _given(bdims, 2) else bias)


@defbatch(layer_norm)
def layer_norm_batched(bdims, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    if bdims[1] is not None or _given(bdims, 4):
        return unbatchable("a normalized shape or eps that differs from example to example")
    rank = example_rank(x, bdims[0])
    if rank < len(normalized_shape):
        return unbatchable("layer_norm over more axes than an example has")
    out = layer_norm(x, normalized_shape, None, None, eps)
    if weight is not None:
        out = out * (aligned(weight, rank) if _given(bdims, 2) else weight)
    if bias is not None:
        out = out + (aligned(bias, rank) if _given(bdims, 3) else bias)
    return out


@defbatch(embedding)
def embedding_batched(bdims, weight, indices, padding_idx=None):
    if bdims[0] is None:
        return embedding(weight, indices)
    if bdims[1] is None:
        return weight[:, indices]
    rows = np.reshape(np.arange(np.shape(weight)[0]), (-1,) + (1,) * (np.ndim(indices) - 1))
    return weight[rows, indices]


# -- sliding windows ------------------------------------------------------------------------------

def _spatial_input(bdims, input, kernel, what):
    if any(b is not None for b in bdims[1:]):
        unbatchable(f"{what} settings that differ from example to example")
    if np.ndim(input) - 1 < len(kernel):
        unbatchable(f"{what} of an example of fewer axes than the kernel")
    return input


@defbatch(avg_pool)
def avg_pool_batched(bdims, input, kernel, stride, padding, ceil_mode=False, count_include_pad=True,
                     divisor_override=None):
    return avg_pool(_spatial_input(bdims, input, kernel, "avg_pool"), kernel, stride, padding, ceil_mode,
                    count_include_pad, divisor_override)


@defbatch(max_pool)
def max_pool_batched(bdims, input, kernel, stride, padding, dilation, ceil_mode=False):
    return max_pool(_spatial_input(bdims, input, kernel, "max_pool"), kernel, stride, padding, dilation, ceil_mode)


@defbatch(max_pool_indices)
def max_pool_indices_batched(bdims, input, kernel, stride, padding, dilation, ceil_mode=False):
    return max_pool_indices(_spatial_input(bdims, input, kernel, "max_pool"), kernel, stride, padding, dilation,
                            ceil_mode)


@defbatch(convolution)
def convolution_batched(bdims, input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """A shared kernel: the examples' batches joined into one.  A kernel per example: the examples' channels
    side by side, ``groups`` groups each, so that each group meets its own example's kernels."""
    if any(_given(bdims, k) for k in (3, 4, 5, 6)):
        return unbatchable("convolution settings that differ from example to example")
    spatial = example_rank(weight, bdims[1]) - 2
    size = batch_size(bdims, input, weight, bias)
    x = with_batch(input, bdims[0], size)
    if np.ndim(x) - 1 != 2 + spatial:
        return unbatchable("convolution of an example that is not (N, C, *spatial) for the kernel")
    bias_batched = _given(bdims, 2)
    if bdims[1] is None:
        joined = np.reshape(x, (-1,) + np.shape(x)[2:])
        out = convolution(joined, weight, None if bias_batched else bias, stride, padding, dilation, groups)
        out = np.reshape(out, np.shape(x)[:2] + np.shape(out)[1:])
        if bias_batched:
            out = out + np.reshape(bias, (size, 1, -1) + (1,) * spatial)
        return out
    samples, channels = np.shape(x)[1], np.shape(x)[2]
    outputs = np.shape(weight)[1]
    side_by_side = np.reshape(np.moveaxis(x, 0, 1), (samples, size * channels) + np.shape(x)[3:])
    kernels = np.reshape(weight, (size * outputs,) + np.shape(weight)[2:])
    shift = None if bias is None else np.reshape(bias, (-1,)) if bias_batched else np.tile(bias, size)
    out = convolution(side_by_side, kernels, shift, stride, padding, dilation, groups * size)
    return np.moveaxis(np.reshape(out, (samples, size, outputs) + np.shape(out)[2:]), 1, 0)


def _side_by_side(x, size):
    """Each example's (N, C, *spatial) as one (N, size * C, *spatial): the examples' channels side by side."""
    return np.reshape(np.moveaxis(x, 0, 1), (np.shape(x)[1], size * np.shape(x)[2]) + np.shape(x)[3:])


@defbatch(convolution_input_gradient)
def convolution_input_gradient_batched(bdims, g, weight, input_shape, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of a convolution in its input, batched as the convolution is: a shared kernel joins the
    examples' batches; a kernel per example puts the examples' channels side by side, a group each."""
    if any(_given(bdims, k) for k in (2, 3, 4, 5, 6)):
        return unbatchable("convolution settings or shapes that differ from example to example")
    size = batch_size(bdims, g, weight)
    g = with_batch(g, bdims[0], size)
    input_shape = tuple(input_shape)
    if np.ndim(g) - 1 != len(input_shape) or example_rank(weight, bdims[1]) != len(input_shape):
        return unbatchable("a convolution's gradient whose example is not (N, O, *spatial) for the kernel")
    if bdims[1] is None:
        joined = convolution_input_gradient(np.reshape(g, (-1,) + np.shape(g)[2:]), weight,
                                            (size * input_shape[0],) + input_shape[1:], stride, padding, dilation,
                                            groups)
        return np.reshape(joined, (size,) + input_shape)
    kernels = np.reshape(weight, (-1,) + np.shape(weight)[2:])
    out = convolution_input_gradient(_side_by_side(g, size), kernels,
                                     (input_shape[0], size * input_shape[1]) + input_shape[2:], stride, padding,
                                     dilation, groups * size)
    return np.moveaxis(np.reshape(out, (input_shape[0], size) + input_shape[1:]), 1, 0)


@defbatch(convolution_weight_gradient)
def convolution_weight_gradient_batched(bdims, g, input, weight_shape, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of a convolution in its kernel, for each example: the examples' channels (of ``g`` and of
    ``input``) side by side, a group each."""
    if any(_given(bdims, k) for k in (2, 3, 4, 5, 6)):
        return unbatchable("convolution settings or shapes that differ from example to example")
    size = batch_size(bdims, g, input)
    g, input = with_batch(g, bdims[0], size), with_batch(input, bdims[1], size)
    weight_shape = tuple(weight_shape)
    if np.ndim(g) - 1 != len(weight_shape) or np.ndim(input) - 1 != len(weight_shape):
        return unbatchable("a convolution's gradient whose example is not (N, C, *spatial) for the kernel")
    out = convolution_weight_gradient(_side_by_side(g, size), _side_by_side(input, size),
                                      (size * weight_shape[0],) + weight_shape[1:], stride, padding, dilation,
                                      groups * size)
    return np.reshape(out, (size,) + weight_shape)
