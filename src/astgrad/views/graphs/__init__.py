"""``astgrad.graph``: pictures of the tape's graph and of generated code's data flow, as Graphviz DOT."""

from __future__ import annotations

from typing import Any, Optional

from .dot import Graph


def graph(value: Any, *, names: Optional[dict] = None, saved: bool = False) -> Graph:
    """The graph behind ``value`` as Graphviz DOT text, renderable to SVG or PNG.

    * A Tensor (or a list of them) that requires grad: the tape's recorded
      graph, drawn as torchviz draws PyTorch's: one box per ``grad_fn``
      node, named as PyTorch names it (``MulBackward0``), each leaf that
      requires grad in light blue with its shape above its
      ``AccumulateGrad``, the tensor itself in green.  ``names`` maps names to
      tensors to label them (``names=dict(model.named_parameters())``; a
      named non-leaf adds ``-> name`` to the node that made it);
      ``saved=True`` also shows what each node saved for backward.
    * What ``grad``, ``value_and_grad`` or ``vjp`` return (anything with a
      generated ``.source``): the data flow of the generated code that ran
      last, one box per statement, primal sweep in blue, adjoint sweep in
      orange, an edge per name from where it is written to where it is read.

    The result's ``.source`` (also ``str()``) is the DOT text, which needs
    nothing installed; ``.pipe("svg")`` and ``.save("graph.png")`` render it
    and need the ``graphviz`` package (``pip install 'astgrad[viz]'``) and
    Graphviz's ``dot`` program, as does the picture a notebook shows.
    """
    if isinstance(value, str):
        raise TypeError("astgrad.graph takes a Tensor or a generated gradient, not a str; "
                        "for DOT text you have, use graphviz.Source(text)")
    source = getattr(value, "source", None)
    if isinstance(source, str) and not _is_tensor_like(value):
        if names is not None or saved:
            raise TypeError("astgrad.graph: names= and saved= are for a Tensor's graph, not generated code")
        if not source.strip():
            raise ValueError(f"astgrad.graph: {value!r} has generated no code yet (compositions such as hessian "
                             "generate theirs at their first call): call it once, then draw it")
        from .source import source_graph
        return source_graph(source)
    if callable(value) and not _is_tensor_like(value):
        name = getattr(value, "__name__", type(value).__name__)
        raise TypeError(f"astgrad.graph: {name} is a plain function; draw its gradient's data flow with "
                        f"astgrad.graph(astgrad.grad({name})), or a Tensor's graph with astgrad.graph(tensor)")
    from .tape import tape_graph
    return tape_graph(value, names, saved)


def _is_tensor_like(value: Any) -> bool:
    from ...tape import Tensor
    return isinstance(value, (Tensor, list, tuple))
