"""Layers and losses of neural networks, each one primitive with its rule.

``torch.nn.functional`` on the tape records one node per call
(``AddmmBackward0``, ``NllLossBackward0``, ``BinaryCrossEntropyBackward0``,
``LeakyReluBackward0``) as PyTorch does, and the gradients follow PyTorch's
formulas where they choose a value at an edge (``leaky_relu`` at 0 takes the
slope; ``binary_cross_entropy`` clamps its logarithms at -100 and its
denominator at 1e-12).  The rules are numpy code, so they also run on
Tensors for higher derivatives, and generated code can call the primitives.
"""

from __future__ import annotations

import numpy as np

from ._extra import scatter, scatter_along_axis
from ._support import reduced_count
from ._registry import defjvp, defnondiff, defvjp, primitive

__all__ = ["linear", "leaky_relu", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
           "smooth_l1_loss", "huber_loss", "embedding", "layer_norm", "target_weights", "safe_targets"]


@primitive
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: a fully connected layer (``weight`` is out x in)."""
    out = np.matmul(input, np.swapaxes(weight, -1, -2))
    return out if bias is None else out + bias


@primitive
def leaky_relu(x, negative_slope=0.01):
    """``x`` where positive, ``negative_slope * x`` elsewhere."""
    return np.where(x > 0, x, x * negative_slope)


@primitive
def safe_targets(target, ignore_index):
    """The class indices with ``ignore_index`` replaced by 0, so that they can index (their weight is 0)."""
    return np.where(target == ignore_index, 0, target)


@primitive
def target_weights(input, target, weight, ignore_index):
    """The weight of each target's class (1 without ``weight``), 0 where the target is ``ignore_index``."""
    classes = np.shape(input)[0 if np.ndim(input) == 1 else 1]
    weight = np.ones(classes, dtype=np.result_type(input)) if weight is None else np.asarray(weight)
    ignored = np.asarray(target) == ignore_index
    return np.where(ignored, 0, weight[np.where(ignored, 0, target)]).astype(weight.dtype)


defnondiff(safe_targets)


@defvjp(target_weights)
def target_weights_vjp(g, ans, input, target, weight, ignore_index):
    """Each target reads its class's weight (``input`` gives the class count only; targets are indices)."""
    if weight is None:
        return np.zeros(np.shape(input))
    kept = np.where(np.asarray(target) == ignore_index, 0, g)
    return np.zeros(np.shape(input)), None, scatter(kept, np.shape(weight), safe_targets(target, ignore_index)), None


def target_weights_jvp_input(t, ans, input, target, weight, ignore_index):
    return None


def target_weights_jvp_weight(t, ans, input, target, weight, ignore_index):
    return np.where(np.asarray(target) == ignore_index, 0, t[safe_targets(target, ignore_index)])


defjvp(target_weights, target_weights_jvp_input, None, target_weights_jvp_weight)


def _picked(input, target):
    """``input`` at each target class: along axis 1 for a batch, axis 0 for one sample."""
    if np.ndim(input) == 1:
        return input[target]
    return np.squeeze(np.take_along_axis(input, np.expand_dims(target, 1), 1), 1)


@primitive
def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """The negative log-likelihood of the target classes, given log-probabilities ``input``.

    ``"mean"`` divides by the summed weights of the targets, as PyTorch does.
    """
    weights = target_weights(input, target, weight, ignore_index)
    losses = -weights * _picked(input, safe_targets(target, ignore_index))
    if reduction == "none":
        return losses
    total = np.sum(losses)
    return total if reduction == "sum" else total / np.sum(weights)


@primitive
def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))``, with each logarithm clamped at -100 as in PyTorch."""
    losses = -(target * np.maximum(np.log(input), -100) + (1 - target) * np.maximum(np.log(1 - input), -100))
    if weight is not None:
        losses = losses * weight
    if reduction == "none":
        return losses
    return np.sum(losses) if reduction == "sum" else np.mean(losses)


def _reduce(losses, reduction):
    """``losses`` as ``reduction`` says: ``"none"`` keeps them, ``"sum"`` adds them, ``"mean"`` averages them."""
    if reduction == "none":
        return losses
    return np.sum(losses) if reduction == "sum" else np.mean(losses)


def _per_element(g, reduction, *operands):
    """The gradient reaching each element's loss from ``g``, the gradient of the loss ``reduction`` made of them.

    The elementwise losses have the shape ``operands`` broadcast to (those not None).
    """
    if reduction != "mean":
        return g
    return g / reduced_count(np.broadcast_shapes(*(np.shape(a) for a in operands if a is not None)))


@primitive
def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction="mean"):
    """``-w (p t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))``, from the logits ``x`` without overflow.

    Written as PyTorch computes it, ``(1 - t) x + (1 + (p - 1) t) (log(1 + exp(-|x|)) + max(-x, 0))``,
    so a large logit never overflows ``exp``.
    """
    log_weight = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    losses = (1 - target) * input + log_weight * (np.log1p(np.exp(-np.abs(input))) + np.maximum(-input, 0))
    if weight is not None:
        losses = losses * weight
    return _reduce(losses, reduction)


@primitive
def smooth_l1_loss(input, target, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` elsewhere, with ``d = input - target``."""
    distance = np.abs(input - target)
    if beta == 0:
        return _reduce(distance, reduction)
    return _reduce(np.where(distance < beta, 0.5 * distance ** 2 / beta, distance - 0.5 * beta), reduction)


@primitive
def huber_loss(input, target, reduction="mean", delta=1.0):
    """``0.5 d**2`` where ``|d| < delta``, ``delta (|d| - 0.5 delta)`` elsewhere: smooth L1 times ``delta``."""
    distance = np.abs(input - target)
    return _reduce(np.where(distance < delta, 0.5 * distance ** 2, delta * (distance - 0.5 * delta)), reduction)


def _padding(weight, indices, padding_idx):
    """Where ``indices`` pick the ``padding_idx`` row (negative counts from the end), as a trailing axis of one."""
    return np.expand_dims(np.asarray(indices) == padding_idx % np.shape(weight)[0], -1)


@primitive
def embedding(weight, indices, padding_idx=None):
    """The rows of ``weight`` the integer ``indices`` pick: a lookup table.

    With ``padding_idx``, that row is read as a constant (``nn.Embedding``'s
    convention): no gradient reaches it and no tangent leaves it.
    """
    return weight[indices]


def _normalized_axes(x, normalized_shape):
    """The trailing axes of ``x`` that ``normalized_shape`` covers."""
    return tuple(range(np.ndim(x) - len(normalized_shape), np.ndim(x)))


def _standardized(x, normalized_shape, eps):
    """``(x - mean) / sqrt(var + eps)`` over the trailing ``normalized_shape`` axes, and ``1 / sqrt(var + eps)``."""
    axes = _normalized_axes(x, normalized_shape)
    centered = x - np.mean(x, axis=axes, keepdims=True)
    inverse_std = 1 / np.sqrt(np.mean(centered * centered, axis=axes, keepdims=True) + eps)
    return centered * inverse_std, inverse_std


@primitive
def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Each sample standardised over its trailing ``normalized_shape`` axes (biased variance), then scaled and shifted."""
    out, _ = _standardized(x, normalized_shape, eps)
    if weight is not None:
        out = out * weight
    return out if bias is None else out + bias


# -- rules ---------------------------------------------------------------


@defvjp(linear)
def linear_vjp(g, ans, input, weight, bias=None):
    rows = np.reshape(g, (-1, np.shape(g)[-1]))
    columns = np.reshape(input, (-1, np.shape(input)[-1]))
    return np.matmul(g, weight), np.matmul(np.swapaxes(rows, 0, 1), columns), None if bias is None else g


@defvjp(leaky_relu)
def leaky_relu_vjp(g, ans, x, negative_slope=0.01):
    return g * np.where(x > 0, 1, negative_slope)


@defvjp(nll_loss)
def nll_loss_vjp(g, ans, input, target, weight=None, ignore_index=-100, reduction="mean"):
    weights = target_weights(input, target, weight, ignore_index)
    if reduction == "mean":
        g = g / np.sum(weights)
    spread = -g * weights
    classes = safe_targets(target, ignore_index)
    if np.ndim(input) == 1:
        return scatter(spread, np.shape(input), classes)
    return scatter_along_axis(np.expand_dims(spread, 1), np.expand_dims(classes, 1), 1, np.shape(input))


@defvjp(binary_cross_entropy)
def binary_cross_entropy_vjp(g, ans, input, target, weight=None, reduction="mean"):
    if reduction == "mean":
        g = g / np.size(input)
    if weight is not None:
        g = g * weight
    return (g * (input - target) / np.maximum((1 - input) * input, 1e-12),
            g * (np.maximum(np.log(1 - input), -100) - np.maximum(np.log(input), -100)))


def _logits_slope(input, target, pos_weight):
    """The derivative of the logit loss in ``input``: ``(1 + (p - 1) t) sigmoid(x) - p t``."""
    sigmoid = 0.5 * (np.tanh(0.5 * input) + 1)  # no overflow for large |x|
    if pos_weight is None:
        return sigmoid - target
    return (1 + (pos_weight - 1) * target) * sigmoid - pos_weight * target


def _logits_target_slope(input, target, pos_weight):
    """The derivative of the logit loss in ``target``: ``-x + (p - 1) log(1 + exp(-x))``."""
    slope = -input
    if pos_weight is not None:
        slope = slope + (pos_weight - 1) * (np.log1p(np.exp(-np.abs(input))) + np.maximum(-input, 0))
    return slope


@defvjp(binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits_vjp(g, ans, input, target, weight=None, pos_weight=None, reduction="mean"):
    g = _per_element(g, reduction, input, target, weight, pos_weight)
    if weight is not None:
        g = g * weight
    return g * _logits_slope(input, target, pos_weight), g * _logits_target_slope(input, target, pos_weight)


def _smooth_l1_slope(input, target, beta):
    """``d / beta`` clipped to [-1, 1] (PyTorch's: the sign of ``d`` when ``beta`` is 0, and 0 at ``d = 0``)."""
    diff = input - target
    if beta == 0:
        return np.sign(diff)
    return np.clip(diff / beta, -1, 1)


@defvjp(smooth_l1_loss)
def smooth_l1_loss_vjp(g, ans, input, target, reduction="mean", beta=1.0):
    slope = _per_element(g, reduction, input, target) * _smooth_l1_slope(input, target, beta)
    return slope, -slope


@defvjp(huber_loss)
def huber_loss_vjp(g, ans, input, target, reduction="mean", delta=1.0):
    slope = _per_element(g, reduction, input, target) * np.clip(input - target, -delta, delta)
    return slope, -slope


@defvjp(embedding)
def embedding_vjp(g, ans, weight, indices, padding_idx=None):
    if padding_idx is not None:
        g = np.where(_padding(weight, indices, padding_idx), 0, g)
    return (scatter(g, np.shape(weight), indices),)


def _leading_sum(g, x, normalized_shape):
    """``g`` summed over the axes of ``x`` in front of the normalised ones: the shape of a layer's weight."""
    return np.sum(g, axis=tuple(range(np.ndim(x) - len(normalized_shape))))


@defvjp(layer_norm)
def layer_norm_vjp(g, ans, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    standardized, inverse_std = _standardized(x, normalized_shape, eps)
    axes = _normalized_axes(x, normalized_shape)
    g_standardized = g if weight is None else g * weight
    dx = inverse_std * (g_standardized - np.mean(g_standardized, axis=axes, keepdims=True)
                        - standardized * np.mean(g_standardized * standardized, axis=axes, keepdims=True))
    dweight = None if weight is None else _leading_sum(g * standardized, x, normalized_shape)
    dbias = None if bias is None else _leading_sum(g, x, normalized_shape)
    return dx, None, dweight, dbias


# -- forward rules (beside the reverse rules above; the same edge values) ---


def linear_jvp_input(t, ans, input, weight, bias=None):
    return np.matmul(t, np.swapaxes(weight, -1, -2))


def linear_jvp_weight(t, ans, input, weight, bias=None):
    return np.matmul(input, np.swapaxes(t, -1, -2))


def linear_jvp_bias(t, ans, input, weight, bias=None):
    return t


defjvp(linear, linear_jvp_input, linear_jvp_weight, linear_jvp_bias)
defjvp(leaky_relu, leaky_relu_vjp)  # a diagonal Jacobian: the reverse rule is the forward rule


@defjvp(nll_loss)
def nll_loss_jvp(t, ans, input, target, weight=None, ignore_index=-100, reduction="mean"):
    weights = target_weights(input, target, weight, ignore_index)
    losses = -weights * _picked(t, safe_targets(target, ignore_index))
    if reduction == "none":
        return losses
    total = np.sum(losses)
    return total if reduction == "sum" else total / np.sum(weights)


def _reduced(losses, reduction):
    return losses if reduction == "none" else np.sum(losses) if reduction == "sum" else np.mean(losses)


def binary_cross_entropy_jvp_input(t, ans, input, target, weight=None, reduction="mean"):
    losses = t * (input - target) / np.maximum((1 - input) * input, 1e-12)
    return _reduced(losses if weight is None else losses * weight, reduction)


def binary_cross_entropy_jvp_target(t, ans, input, target, weight=None, reduction="mean"):
    losses = t * (np.maximum(np.log(1 - input), -100) - np.maximum(np.log(input), -100))
    return _reduced(losses if weight is None else losses * weight, reduction)


defjvp(binary_cross_entropy, binary_cross_entropy_jvp_input, binary_cross_entropy_jvp_target)


def binary_cross_entropy_with_logits_jvp_input(t, ans, input, target, weight=None, pos_weight=None, reduction="mean"):
    losses = t * _logits_slope(input, target, pos_weight)
    return _reduced(losses if weight is None else losses * weight, reduction)


def binary_cross_entropy_with_logits_jvp_target(t, ans, input, target, weight=None, pos_weight=None, reduction="mean"):
    losses = t * _logits_target_slope(input, target, pos_weight)
    return _reduced(losses if weight is None else losses * weight, reduction)


defjvp(binary_cross_entropy_with_logits, binary_cross_entropy_with_logits_jvp_input,
       binary_cross_entropy_with_logits_jvp_target)


def smooth_l1_loss_jvp_input(t, ans, input, target, reduction="mean", beta=1.0):
    return _reduced(t * _smooth_l1_slope(input, target, beta), reduction)


def smooth_l1_loss_jvp_target(t, ans, input, target, reduction="mean", beta=1.0):
    return _reduced(-t * _smooth_l1_slope(input, target, beta), reduction)


defjvp(smooth_l1_loss, smooth_l1_loss_jvp_input, smooth_l1_loss_jvp_target)


def huber_loss_jvp_input(t, ans, input, target, reduction="mean", delta=1.0):
    return _reduced(t * np.clip(input - target, -delta, delta), reduction)


def huber_loss_jvp_target(t, ans, input, target, reduction="mean", delta=1.0):
    return _reduced(-t * np.clip(input - target, -delta, delta), reduction)


defjvp(huber_loss, huber_loss_jvp_input, huber_loss_jvp_target)


@defjvp(embedding)
def embedding_jvp(t, ans, weight, indices, padding_idx=None):
    if padding_idx is not None:
        return np.where(_padding(weight, indices, padding_idx), 0, t[indices])
    return t[indices]


def layer_norm_jvp_x(t, ans, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    standardized, inverse_std = _standardized(x, normalized_shape, eps)
    axes = _normalized_axes(x, normalized_shape)
    out = inverse_std * (t - np.mean(t, axis=axes, keepdims=True)
                         - standardized * np.mean(standardized * t, axis=axes, keepdims=True))
    return out if weight is None else out * weight


def layer_norm_jvp_weight(t, ans, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return _standardized(x, normalized_shape, eps)[0] * t


def layer_norm_jvp_bias(t, ans, x, normalized_shape, weight=None, bias=None, eps=1e-5):
    return np.broadcast_to(t, np.shape(ans))


defjvp(layer_norm, layer_norm_jvp_x, None, layer_norm_jvp_weight, layer_norm_jvp_bias)
