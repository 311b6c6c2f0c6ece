"""``torch.nn.functional``: activations and losses over the taped engine."""

from ...tape._functions import _as_tensor


def relu(input, inplace=False):
    return input.relu_() if inplace else _as_tensor(input).relu()


def sigmoid(input):
    return _as_tensor(input).sigmoid()


def tanh(input):
    return _as_tensor(input).tanh()
