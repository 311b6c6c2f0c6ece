"""``torch.nn``: only what autograd tutorials use (``Parameter`` and ``functional``)."""

from ...tape._tensor import Tensor
from . import functional


class Parameter(Tensor):
    """A leaf tensor that requires grad, printed as ``Parameter containing:``."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        from ...tape import tensor

        source = data if data is not None else tensor([])
        p = object.__new__(cls)
        p._init(source._data, bool(requires_grad))
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


__all__ = ["Parameter", "functional"]
