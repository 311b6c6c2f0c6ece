"""``torch.nn.Parameter``: a leaf tensor a Module registers, printed as ``Parameter containing:``."""

from ...tape import Tensor, tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad (unless told otherwise), sharing ``data``'s storage."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        source = data if data is not None else tensor([])
        p = object.__new__(cls)
        p._init(source.detach().numpy(), bool(requires_grad))
        return p

    def __init__(self, data=None, requires_grad=True):
        pass

    def __deepcopy__(self, memo):
        """A new Parameter with a copy of the data and ``requires_grad``; as in PyTorch, no ``.grad``."""
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
