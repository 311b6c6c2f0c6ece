"""One transformation's call: the inputs it differentiates, and results that keep only what lies outside.

``torch.func`` gives each transformation a level of its own; on the tape a
level is a set of tensors the call made:

* ``input(t)`` is the tensor the user's function receives for ``t``: a
  new leaf (sharing ``t``'s storage) when nothing outside records ``t``,
  or ``t.view_as(t)`` when ``t`` requires grad, so an enclosing
  transformation (or the user's own ``backward``) still reaches ``t``
  through the result;
* ``output(tree)`` gives each result tensor as the caller should see it:
  detached, unless its history reaches a tensor the call did not make (an
  enclosing level's input, a captured tensor that requires grad) while the
  grad mode is on outside.  So ``grad(f)(x)`` has no ``grad_fn`` for a plain
  ``x``, and ``grad(grad(f))`` differentiates the inner gradient's history,
  as in PyTorch.

Derivatives inside a level are taken with ``create_graph`` only where
something outside can reach them (``needs_graph``).
"""

from __future__ import annotations

from ...tape import AccumulateGrad, Tensor, is_grad_enabled
from ._trees import tree_map


class Level:
    """The tensors one call of a transformation made, and whether results may keep a history."""

    def __init__(self):
        self.graph = is_grad_enabled()  # read before the call enables grad for the user's function
        self._own: dict[int, Tensor] = {}  # id -> the tensor, held so its id stays unique

    def own(self, tensor: Tensor) -> Tensor:
        self._own[id(tensor)] = tensor
        return tensor

    def input(self, value):
        if not isinstance(value, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(value)}")
        if value.requires_grad and self.graph:
            return value.view_as(value)
        return self.own(value.detach().requires_grad_(True))

    def needs_graph(self, outputs, others=()) -> bool:
        """Whether derivatives of ``outputs`` must be taken with ``create_graph``.

        Only when the grad mode is on outside and something outside can
        reach them: an output whose history leaves the level (a captured
        tensor or an enclosing level's input that requires grad), or one of
        ``others`` (cotangents, tangents) that requires grad.  Otherwise the
        results would be detached anyway, and a backward that cannot be
        differentiated (``@once_differentiable``) must not be asked to be.
        """
        if not self.graph:
            return False
        return any(isinstance(t, Tensor) and self._reaches_outside(t) for t in outputs) or \
            any(isinstance(t, Tensor) and t.requires_grad for t in others)

    def output(self, tree, graph: bool | None = None):
        keep = self.graph if graph is None else graph
        return tree_map(lambda v: self._unwrapped(v, keep) if isinstance(v, Tensor) else v, tree)

    def _unwrapped(self, tensor: Tensor, keep: bool) -> Tensor:
        if keep and self._reaches_outside(tensor):
            return tensor
        return tensor.detach()

    def _reaches_outside(self, tensor: Tensor) -> bool:
        """Whether ``tensor``'s history reaches a leaf this level did not make (or a node of unknown origin)."""
        if not tensor.requires_grad:
            return False
        if tensor.grad_fn is None:
            return id(tensor) not in self._own
        todo, seen = [tensor.grad_fn], set()
        while todo:
            node = todo.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if isinstance(node, AccumulateGrad):
                if id(node.variable) not in self._own:
                    return True
                continue
            edges = [child for child, _ in node.next_functions if child is not None]
            if not edges:
                return True  # a history that starts nowhere this level knows: keep it
            todo.extend(edges)
        return False
