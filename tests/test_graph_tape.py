"""astgrad.graph(tensor): the tape's recorded graph as DOT, checked against the graph itself.

The reference is the tape's public walk (``grad_fn.next_functions``), not
the drawing code: every node the walk meets is one box, every non-None edge
one arrow, leaves are named and shaped as the tensors they stand for.
"""

import os
import pathlib

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from _dot_reader import by_label, parse

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "graphs"
REGENERATE = os.environ.get("ASTGRAD_REGEN_GOLDEN") == "1"


def tutorial():
    """The autograd tutorial's graph: out = ((x + 2) * (x + 2) * 3).mean()."""
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    return x, z.mean()


def walk(root):
    """Every grad_fn node reachable from root, and its non-None inputs, by the tape's public API."""
    seen, todo, inputs = [], [root.grad_fn], {}
    while todo:
        node = todo.pop()
        if any(node is s for s in seen):
            continue
        seen.append(node)
        inputs[id(node)] = [n for n, _ in node.next_functions if n is not None]
        todo += inputs[id(node)]
    return seen, inputs


def grad_fn_boxes(nodes):
    return {name: attrs for name, attrs in nodes.items() if attrs["fillcolor"] == "lightgrey"}


def test_the_tutorial_graph_matches_the_golden_file():
    x, out = tutorial()
    dot = astgrad.graph(out, names={"x": x}).source
    path = GOLDEN / "tutorial_tape.dot"
    if REGENERATE:
        path.write_text(dot)
    assert dot == path.read_text()


def test_the_tutorial_graph_has_one_box_per_node_and_one_arrow_per_input():
    x, out = tutorial()
    nodes, edges = parse(astgrad.graph(out, names={"x": x}).source)
    labels = by_label(nodes)
    assert sorted(a["label"] for a in grad_fn_boxes(nodes).values()) == sorted(
        ["MeanBackward0", "MulBackward0", "MulBackward0", "AddBackward0", "AccumulateGrad"])
    seen, inputs = walk(out)
    assert len(grad_fn_boxes(nodes)) == len(seen)
    assert sum(1 for _, head, _ in edges if head in grad_fn_boxes(nodes)) - 1 == sum(len(v) for v in inputs.values())
    # leaves flow down: x -> AccumulateGrad -> AddBackward0 -> MulBackward0 (twice: y * y) -> MulBackward0 -> Mean
    (leaf,) = labels["x\n(2, 2)"]
    (acc,) = labels["AccumulateGrad"]
    (add,) = labels["AddBackward0"]
    (mean,) = labels["MeanBackward0"]
    (out_box,) = labels["()"]
    pairs = [(t, h) for t, h, _ in edges]
    assert (leaf, acc) in pairs and (acc, add) in pairs and (mean, out_box) in pairs
    inner = [h for t, h in pairs if t == add]
    assert len(inner) == 2 and inner[0] == inner[1] and nodes[inner[0]]["label"] == "MulBackward0"
    assert nodes[leaf]["fillcolor"] == "lightblue" and nodes[out_box]["fillcolor"] == "darkolivegreen1"


def test_the_same_computation_gives_the_same_text():
    assert astgrad.graph(tutorial()[1]).source == astgrad.graph(tutorial()[1]).source


def test_saved_tensors_show_their_shapes_and_saved_numbers_their_values():
    x = torch.ones(3, requires_grad=True)
    w = torch.ones(2, 3, requires_grad=True)
    out = ((w * x) ** 2).sum()
    nodes, edges = parse(astgrad.graph(out, saved=True).source)
    labels = by_label(nodes)
    (power,) = labels["PowBackward0\nexponent: 2"]
    (mul,) = labels["MulBackward0"]
    saved = {nodes[t]["label"]: a for t, h, a in edges if h == mul and nodes[t]["fillcolor"] == "orange"}
    assert set(saved) == {"self\n(2, 3)", "other\n(3)"}  # what MulBackward0 keeps, as PyTorch names it
    assert all(a["style"] == "dashed" and a["dir"] == "none" for a in saved.values())
    assert any(nodes[t]["label"] == "self\n(2, 3)" for t, h, _ in edges if h == power)
    assert not any(a["fillcolor"] == "orange" for a in parse(astgrad.graph(out).source)[0].values())


def test_after_backward_the_saved_values_read_freed():
    x, out = tutorial()
    out.backward()
    labels = by_label(parse(astgrad.graph(out, saved=True).source)[0])
    assert labels["MulBackward0\nother: freed\nself: freed"]
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 4.5))  # drawing did not disturb the graph


def test_parameters_are_named_from_named_parameters():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    loss = layer(torch.ones(4, 3)).sum()
    labels = by_label(parse(astgrad.graph(loss, names=dict(layer.named_parameters())).source)[0])
    assert labels["weight\n(2, 3)"] and labels["bias\n(2)"]
    assert labels["AddmmBackward0"]


def test_several_outputs_share_the_nodes_they_share():
    x = torch.ones(3, requires_grad=True)
    y = x.exp()
    a, b = y.sum(), (y * 2).sum()
    nodes, edges = parse(astgrad.graph([a, b]).source)
    labels = by_label(nodes)
    assert len(labels["ExpBackward0"]) == 1 and len(labels["SumBackward0"]) == 2
    assert len(labels["(3)"]) == 1  # the leaf, once
    assert len([n for n, attrs in nodes.items() if attrs["fillcolor"] == "darkolivegreen1"]) == 2


def test_a_leaf_alone_is_its_own_graph():
    x = torch.zeros(2, requires_grad=True)
    nodes, edges = parse(astgrad.graph(x, names={"x": x}).source)
    assert [a["label"] for a in nodes.values()] == ["x\n(2)"] and edges == []


def test_graphs_of_double_backward_name_the_backward_nodes():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    labels = by_label(parse(astgrad.graph(g).source)[0])
    assert "AccumulateGrad" in labels and any(label.endswith("Backward0") for label in labels)


def test_custom_functions_are_named_by_their_class():
    class Square(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = torch.ones(2, requires_grad=True)
    labels = by_label(parse(astgrad.graph(Square.apply(x).sum()).source)[0])
    assert "SquareBackward" in labels


def test_what_has_no_graph_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="does not require grad"):
        astgrad.graph(torch.ones(2) * 2)
    with pytest.raises(TypeError, match=r"astgrad.graph\(astgrad.grad\(f\)\)"):
        def f(x):
            return x
        astgrad.graph(f)
    with pytest.raises(TypeError, match="not a Tensor"):
        astgrad.graph([torch.ones(2, requires_grad=True), np.ones(2)])
    with pytest.raises(TypeError, match="not a str"):
        astgrad.graph("digraph {}")


def test_named_intermediate_tensors_label_the_node_that_made_them():
    x, _ = tutorial()
    y = x + 2
    z = y * y * 3
    out = z.mean()
    labels = by_label(parse(astgrad.graph(out, names={"x": x, "y": y, "z": z, "out": out}).source)[0])
    assert labels["AddBackward0\n-> y"] and labels["MulBackward0\n-> z"] and labels["MeanBackward0\n-> out"]
    assert labels["out\n()"] and labels["x\n(2, 2)"]
    assert labels["MulBackward0"]  # y * y, unnamed
