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
from ._registry import defjvp, defnondiff, defvjp, primitive

__all__ = ["linear", "leaky_relu", "nll_loss", "binary_cross_entropy", "target_weights", "safe_targets"]


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
