"""``torch.nn.functional``: activations and losses over the taped engine."""

import warnings

import numpy as np

from ... import rules
from ...tape import apply_op, as_tensor, is_tensor, rand, tangent_of, zeros_like


def relu(input, inplace=False):
    return input.relu_() if inplace else as_tensor(input).relu()


def sigmoid(input):
    return as_tensor(input).sigmoid()


def tanh(input):
    return as_tensor(input).tanh()


IMPLICIT_DIM_WARNING = (
    "Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument."
)


def _softmax_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when ``dim`` is omitted: 0 for 0-, 1- and 3-D input, else 1."""
    warnings.warn(IMPLICIT_DIM_WARNING.format(name=name), UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    input = as_tensor(input)
    return input.softmax(_softmax_dim("softmax", input.ndim) if dim is None else dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    input = as_tensor(input)
    return input.log_softmax(_softmax_dim("log_softmax", input.ndim) if dim is None else dim, dtype=dtype)


LEGACY_REDUCTION_WARNING = "size_average and reduce args will be deprecated, please use reduction='{}' instead."


def _reduction(size_average, reduce, reduction: str) -> str:
    """``reduction``, or what the legacy ``size_average``/``reduce`` pair means (with PyTorch's warning)."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
        warnings.warn(LEGACY_REDUCTION_WARNING.format(reduction), UserWarning, stacklevel=3)
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``MseLossBackward0``); ``reduction`` is ``"mean"``, ``"sum"`` or ``"none"``."""
    reduction = _reduction(size_average, reduce, reduction)
    input, target = as_tensor(input), as_tensor(target)
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
            "same size.",
            UserWarning,
            stacklevel=2,
        )
    return apply_op("MseLossBackward0", rules.mse_loss, (input, target), {"reduction": reduction},
                    slots=((0,), (1,)), promote=True)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """``input`` where positive, ``negative_slope * input`` elsewhere (``LeakyReluBackward0``; 1 in place)."""
    if inplace:
        return input._inplace(lambda t: apply_op("LeakyReluBackward1", rules.leaky_relu, (t, negative_slope),
                                                 slots=((0,),)))
    return apply_op("LeakyReluBackward0", rules.leaky_relu, (as_tensor(input), negative_slope), slots=((0,),))


def linear(input, weight, bias=None):
    """``input @ weight.T + bias``, one node named as PyTorch's kernel choice names it."""
    input, weight = as_tensor(input), as_tensor(weight)
    if weight.dim() != 2:
        raise RuntimeError(f"astgrad.torch: linear takes a 2-D weight (out_features x in_features), got "
                           f"{weight.dim()}-D; write input @ weight (+ bias) for other shapes")
    if input.dim() == 0 or input.shape[-1] != weight.shape[1]:
        rows = int(np.prod(input.shape[:-1])) if input.dim() else 1
        columns = input.shape[-1] if input.dim() else 1
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{columns} and "
                           f"{weight.shape[1]}x{weight.shape[0]})")
    if bias is None:
        name = {1: "SqueezeBackward4", 2: "MmBackward0"}.get(input.dim(), "UnsafeViewBackward0")
        return apply_op(name, rules.linear, (input, weight), slots=((0,), (1,)), promote=True)
    name = {1: "ViewBackward0", 2: "AddmmBackward0", 3: "ViewBackward0"}.get(input.dim(), "AddBackward0")
    return apply_op(name, rules.linear, (input, weight, as_tensor(bias)), slots=((0,), (1,), (2,)), promote=True)


def _refuse_weight_gradient(weight) -> None:
    if is_tensor(weight) and weight.requires_grad:
        raise RuntimeError("the derivative for 'weight' is not implemented.")
    _refuse_tangent("weight", weight)


def _refuse_tangent(argument: str, value) -> None:
    """A dual tensor where the tape takes only the values (a loss's weights) would lose its tangent."""
    if tangent_of(value) is not None:
        raise RuntimeError(f"astgrad: forward-mode AD: {argument}= carries a tangent, which this function does "
                           f"not propagate; pass {argument}= without one (unpack_dual(w).primal)")


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input`` (``NllLossBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    input, target = as_tensor(input), as_tensor(target)
    _check_class_targets(input, target, ignore_index)
    _refuse_weight_gradient(weight)
    weight = None if weight is None else as_tensor(weight).detach().numpy()
    return apply_op("NllLossBackward0", rules.nll_loss, (input, target),
                    {"weight": weight, "ignore_index": ignore_index, "reduction": reduction}, slots=((0,),))


def _check_class_targets(input, target, ignore_index) -> None:
    """PyTorch's errors for targets that are not class indices of ``input``."""
    kind = target.detach().numpy().dtype.kind
    if kind not in "iu":
        name = {"f": "Float", "b": "Bool", "c": "ComplexFloat"}.get(kind, str(target.dtype))
        if target.dtype == np.float64:
            name = "Double"
        raise RuntimeError(f"expected scalar type Long but found {name}")
    if input.dim() == 0:
        raise ValueError("Expected 1 or more dimensions (got 0)")
    batch = input.shape[0] if input.dim() > 1 else None
    if batch is not None and (target.dim() == 0 or target.shape[0] != batch):
        got = target.shape[0] if target.dim() else 1
        raise ValueError(f"Expected input batch_size ({batch}) to match target batch_size ({got}).")
    classes = input.shape[1] if input.dim() > 1 else input.shape[0]
    values = target.numpy()
    wrong = (values != ignore_index) & ((values < 0) | (values >= classes))
    if np.any(wrong):
        raise IndexError(f"Target {int(values[wrong].flat[0])} is out of bounds.")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """``nll_loss(log_softmax(input, 1), target)`` for class indices; ``-(log_softmax * target)`` for probabilities."""
    reduction = _reduction(size_average, reduce, reduction)
    if label_smoothing:
        raise NotImplementedError("astgrad.torch: cross_entropy(label_smoothing=...) is not supported; smooth the "
                                  "targets into probabilities and pass those as target instead")
    input, target = as_tensor(input), as_tensor(target)
    class_dim = 1 if input.dim() > 1 else 0
    scores = input.log_softmax(class_dim)
    if target.dtype.is_floating_point:
        if target.shape != input.shape:
            raise RuntimeError(f"Expected target size {list(input.shape)}, got {list(target.shape)}")
        _refuse_weight_gradient(weight)
        weighted = target if weight is None else target * as_tensor(weight).detach().reshape(
            (-1,) + (1,) * (input.dim() - class_dim - 1))
        if reduction == "none":
            return -(scores * weighted).sum(class_dim)
        total = -(scores * weighted).sum()
        return total if reduction == "sum" else total / (input.numel() // input.shape[class_dim])
    return nll_loss(scores, target, weight, ignore_index=ignore_index, reduction=reduction)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))`` (``BinaryCrossEntropyBackward0``), logarithms clamped at -100."""
    reduction = _reduction(size_average, reduce, reduction)
    input, target = as_tensor(input), as_tensor(target)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input size "
                         f"({input.shape}) is deprecated. Please ensure they have the same size.")
    values = input.detach().numpy()
    if np.any((values < 0) | (values > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    _refuse_weight_gradient(weight)
    if weight is not None:
        weight = np.broadcast_to(as_tensor(weight).detach().numpy(), input.shape)
    return apply_op("BinaryCrossEntropyBackward0", rules.binary_cross_entropy, (input, target),
                    {"weight": weight, "reduction": reduction}, slots=((0,), (1,)), promote=True)


def _warn_size_mismatch(input, target) -> None:
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
            "same size.",
            UserWarning,
            stacklevel=3,
        )


def _not_differentiable_in(name: str, argument: str, value) -> None:
    if is_tensor(value) and value.requires_grad:
        raise RuntimeError(f"The function '{name}' is not differentiable with respect to argument '{argument}'. "
                           "This input cannot have requires_grad True.")
    _refuse_tangent(argument, value)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Binary cross entropy of ``sigmoid(input)`` from the logits (``BinaryCrossEntropyWithLogitsBackward0``).

    Computed from the logits directly, so large logits neither overflow nor lose
    the gradient; ``pos_weight`` weighs the positive term of each class.
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = as_tensor(input), as_tensor(target)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _not_differentiable_in("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable_in("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    weight = None if weight is None else as_tensor(weight).detach().numpy()
    pos_weight = None if pos_weight is None else as_tensor(pos_weight).detach().numpy()
    return apply_op("BinaryCrossEntropyWithLogitsBackward0", rules.binary_cross_entropy_with_logits, (input, target),
                    {"weight": weight, "pos_weight": pos_weight, "reduction": reduction}, slots=((0,), (1,)),
                    promote=True)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean (or sum, or each) of ``|input - target|``: PyTorch composes it, so its node is the reduction's."""
    reduction = _reduction(size_average, reduce, reduction)
    input, target = as_tensor(input), as_tensor(target)
    _warn_size_mismatch(input, target)
    distance = (input - target).abs()
    if weight is not None:
        distance = distance * as_tensor(weight)
    if reduction == "none":
        return distance
    return distance.sum() if reduction == "sum" else distance.mean()


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d**2 / beta`` within ``beta`` of the target, ``|d| - 0.5 beta`` beyond (``SmoothL1LossBackward0``)."""
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    input, target = as_tensor(input), as_tensor(target)
    if beta == 0:  # PyTorch computes the L1 loss then
        return l1_loss(input, target, reduction=reduction)
    _warn_size_mismatch(input, target)
    return apply_op("SmoothL1LossBackward0", rules.smooth_l1_loss, (input, target),
                    {"reduction": reduction, "beta": beta}, slots=((0,), (1,)), promote=True)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d**2`` within ``delta`` of the target, ``delta (|d| - 0.5 delta)`` beyond (``HuberLossBackward0``)."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    input, target = as_tensor(input), as_tensor(target)
    _warn_size_mismatch(input, target)
    if weight is not None:
        if as_tensor(weight).shape != input.shape:
            raise ValueError("Weights and input must have the same size.")
        losses = apply_op("HuberLossBackward0", rules.huber_loss, (input, target),
                          {"reduction": "none", "delta": delta}, slots=((0,), (1,)), promote=True) * as_tensor(weight)
        return losses if reduction == "none" else losses.sum() if reduction == "sum" else losses.mean()
    return apply_op("HuberLossBackward0", rules.huber_loss, (input, target),
                    {"reduction": reduction, "delta": delta}, slots=((0,), (1,)), promote=True)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` that the integer ``input`` picks (``EmbeddingBackward0``); the padding row gets no gradient."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("astgrad.torch: embedding's max_norm, scale_grad_by_freq and sparse are not "
                                  "supported; renormalise or scale the weight yourself")
    input, weight = as_tensor(input), as_tensor(weight)
    indices = input.detach().numpy()
    if indices.dtype.kind not in "iu":
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.type()} instead (while checking arguments for embedding)")
    rows = weight.shape[0]
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        raise IndexError("index out of range in self")
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= rows
    return apply_op("EmbeddingBackward0", rules.embedding, (weight, indices), {"padding_idx": padding_idx},
                    slots=((0,),))


def dropout(input, p=0.5, training=True, inplace=False):
    """Each element zeroed with probability ``p``, the rest scaled by ``1 / (1 - p)`` (``MulBackward0``) while training.

    The mask comes from the generator ``torch.manual_seed`` seeds; out of
    training (or with ``p == 0``) the input is returned as it is.
    """
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    input = as_tensor(input)
    if not training or p == 0:
        return input
    keep = rand(*input.shape, dtype=input.dtype) >= p
    mask = keep.to(input.dtype) / (1 - p) if p < 1 else zeros_like(input)
    return input.mul_(mask) if inplace else input * mask


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Each sample standardised over its trailing ``normalized_shape`` axes, then scaled and shifted."""
    input = as_tensor(input)
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(int(n) for n in normalized_shape)
    if tuple(input.shape[input.dim() - len(normalized_shape):]) != normalized_shape or len(normalized_shape) > input.dim():
        raise RuntimeError(f"Given normalized_shape={list(normalized_shape)}, expected input with shape "
                           f"[*, {', '.join(str(n) for n in normalized_shape)}], but got input of size{list(input.shape)}")
    operands = [input, normalized_shape, None if weight is None else as_tensor(weight),
                None if bias is None else as_tensor(bias)]
    slots = tuple((i,) for i in (0, 2, 3) if operands[i] is not None)
    return apply_op("NativeLayerNormBackward0", rules.layer_norm, tuple(operands), {"eps": eps}, slots=slots,
                    promote=True)


from ._windows import adaptive_avg_pool2d, avg_pool1d, avg_pool2d, conv1d, conv2d, max_pool1d, max_pool2d  # noqa: E402,F401
