"""The tape's recorded graph as DOT, drawn as torchviz draws PyTorch's.

One box per ``grad_fn`` node, named as ``type(grad_fn).__name__`` names it
(and ``-> y`` for each named tensor it made);
each leaf that requires grad is a light blue box (its name, when given, and
its shape) above its ``AccumulateGrad`` node; the tensors the graph was
asked for are green boxes below the node that made them.  With
``saved=True`` the tensors a node saved for backward are orange boxes beside
it and the numbers it saved are lines of its label.  Edges run the way the
values flowed: from an input's node to the node that used it.

Nodes are numbered in the order a breadth-first walk from the outputs
meets them (``next_functions`` in order), so the same graph gives the same
text.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Optional

from ...tape import Tensor
from .dot import Graph, Writer

_OUTPUT, _LEAF, _SAVED = "darkolivegreen1", "lightblue", "orange"


def shape_text(tensor: Tensor) -> str:
    """torchviz's shape text: ``(2, 3)``, ``(3)``, ``()``."""
    return "(" + ", ".join(str(n) for n in tensor.shape) + ")"


def tape_graph(outputs: Any, names: Optional[dict] = None, saved: bool = False) -> Graph:
    roots = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    for i, root in enumerate(roots):
        if not isinstance(root, Tensor):
            raise TypeError(f"astgrad.graph: item {i} is a {type(root).__name__}, not a Tensor")
        if not root.requires_grad:
            raise ValueError("astgrad.graph: the tensor does not require grad, so nothing was recorded for it: "
                             "create its inputs with requires_grad=True (and compute it outside no_grad())")
    labels = {id(value): str(name) for name, value in (names or {}).items() if isinstance(value, Tensor)}
    made_by: dict = {}  # id(grad_fn) -> names of the named tensors it made
    for name, value in (names or {}).items():
        if isinstance(value, Tensor) and value.grad_fn is not None:
            made_by.setdefault(id(value.grad_fn), []).append(str(name))
    out = Writer("tape", {"rankdir": "TB", "ranksep": "0.2"},
                 {"shape": "box", "style": "filled", "fontname": "monospace", "fontsize": "10", "height": "0.2"})
    ids: dict = {}  # id(grad_fn node) -> DOT name; the nodes themselves are kept alive by the graph
    queue: deque = deque()

    def visit(node) -> str:
        key = id(node)
        if key not in ids:
            ids[key] = f"n{len(ids)}"
            queue.append(node)
        return ids[key]

    def tensor_label(tensor: Tensor) -> str:
        name = labels.get(id(tensor))
        return f"{name}\n{shape_text(tensor)}" if name else shape_text(tensor)

    for i, root in enumerate(roots):
        box = f"out{i}"
        out.node(box, label=tensor_label(root), fillcolor=_OUTPUT)
        if root.grad_fn is not None:
            out.edge(visit(root.grad_fn), box)
    while queue:
        node = queue.popleft()
        name = ids[id(node)]
        lines = [type(node).__name__] + [f"-> {name}" for name in made_by.get(id(node), ())]
        saved_tensors = []
        if saved:
            for field, value in _saved_values(node):
                if isinstance(value, Tensor):
                    saved_tensors.append((field, value))
                else:
                    lines.append(f"{field}: {value}")
        out.node(name, label="\n".join(lines), fillcolor="lightgrey")
        variable = getattr(node, "variable", None)
        if isinstance(variable, Tensor):  # AccumulateGrad: the leaf above it
            out.node(f"{name}_leaf", label=tensor_label(variable), fillcolor=_LEAF)
            out.edge(f"{name}_leaf", name)
        for j, (field, value) in enumerate(saved_tensors):
            out.node(f"{name}_saved{j}", label=f"{field}\n{shape_text(value)}", fillcolor=_SAVED)
            out.edge(f"{name}_saved{j}", name, dir="none", style="dashed")
        for next_node, _ in node.next_functions:
            if next_node is not None:
                out.edge(visit(next_node), name)
    return out.graph("the tape of a tensor" if len(roots) == 1 else f"the tape of {len(roots)} tensors")


def _saved_values(node) -> list:
    """``(field, value)`` for each of the node's ``_saved_*`` attributes; a freed one reads ``freed``."""
    found = []
    for attr in sorted(a for a in dir(node) if a.startswith("_saved_")):
        try:
            value = getattr(node, attr)
        except RuntimeError:  # freed by a backward without retain_graph
            value = "freed"
        found.append((attr[len("_saved_"):], value))
    return found
