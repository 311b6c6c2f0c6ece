"""``torch.nn.functional``: activations and losses over the taped engine."""

import warnings

from ... import rules
from ...tape._functions import _as_tensor
from ...tape._record import apply_op


def relu(input, inplace=False):
    return input.relu_() if inplace else _as_tensor(input).relu()


def sigmoid(input):
    return _as_tensor(input).sigmoid()


def tanh(input):
    return _as_tensor(input).tanh()


IMPLICIT_DIM_WARNING = (
    "Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument."
)


def _softmax_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when ``dim`` is omitted: 0 for 0-, 1- and 3-D input, else 1."""
    warnings.warn(IMPLICIT_DIM_WARNING.format(name=name), UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    input = _as_tensor(input)
    return input.softmax(_softmax_dim("softmax", input.ndim) if dim is None else dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    input = _as_tensor(input)
    return input.log_softmax(_softmax_dim("log_softmax", input.ndim) if dim is None else dim, dtype=dtype)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (``MseLossBackward0``); ``reduction`` is ``"mean"``, ``"sum"`` or ``"none"``."""
    if size_average is not None or reduce is not None:
        reduction = "none" if reduce is False else ("sum" if size_average is False else "mean")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    input, target = _as_tensor(input), _as_tensor(target)
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
