"""astgrad.graph(gradient): the generated code's data flow as DOT.

Checked against the generated text itself: an edge labelled ``n`` must run
from a statement that writes ``n`` to one that reads it, every statement is
one box, and what reaches a read through loops and branches is every write
that may reach it (reaching definitions), no more, no fewer, on programs
small enough to read the answer off.
"""

import os
import pathlib
import re
import sys
import types

import numpy as np
import pytest

import astgrad
from _dot_reader import by_label, parse

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "transform"))
import golden_functions as g  # noqa: E402

GOLDEN = pathlib.Path(__file__).resolve().parent / "golden" / "graphs"
REGENERATE = os.environ.get("ASTGRAD_REGEN_GOLDEN") == "1"

GRADIENTS = {
    "straight_line": lambda: astgrad.grad(g.straight_line, optimize=2),
    "branch": lambda: astgrad.grad(g.branch, optimize=2),
    "for_loop": lambda: astgrad.grad(g.for_loop, optimize=2),
    "for_loop_level0": lambda: astgrad.grad(g.for_loop, optimize=0),
    "while_loop": lambda: astgrad.grad(g.while_loop, optimize=2),
    "with_break": lambda: astgrad.grad(g.with_break, optimize=2),
    "nested_call": lambda: astgrad.grad(g.nested_call, wrt=(0, 1), optimize=2),
    "recursion": lambda: astgrad.grad(g.power, optimize=2),
    "methods": lambda: astgrad.grad(g.methods, wrt=(0, 1), optimize=2),
    "vjp": lambda: astgrad.vjp(g.elementwise, optimize=2),
    "indexing": lambda: astgrad.grad(g.indexing, optimize=2),
    "several_returns": lambda: astgrad.grad(g.several_returns, optimize=2),
    "jvp": lambda: astgrad.jvp(g.for_loop),
    "second_order": lambda: astgrad.grad(astgrad.grad(g.straight_line)),
    "hessian": lambda: called(astgrad.hessian(g.straight_line), np.array([0.3, -0.2])),
}


def called(composed, *args):
    """A composition generates its code at its first call."""
    composed(*args)
    return composed


def statement(nodes, text):
    (name,) = by_label(nodes)[text]
    return name


def names_between(edges, tail, head):
    return [set(a["label"].split(", ")) for t, h, a in edges if t == tail and h == head and "label" in a]


def test_the_for_loop_data_flow_matches_the_golden_file():
    # the graph is of the code that ran last: a copy of the function has a gradient of its own, which no call
    # (in test_golden.py, say) has specialised for its arguments' ranks or real floats
    fresh = types.FunctionType(g.for_loop.__code__, g.for_loop.__globals__, "for_loop")
    dot = astgrad.graph(astgrad.grad(fresh, optimize=2)).source
    path = GOLDEN / "for_loop_dataflow.dot"
    if REGENERATE:
        path.write_text(dot)
    assert dot == path.read_text()


def test_straight_line_code_is_a_chain_from_the_parameters_to_the_return():
    gradient = GRADIENTS["straight_line"]()
    nodes, edges = parse(astgrad.graph(gradient).source)
    body = [line.strip() for line in gradient.source.splitlines()[2:] if line.strip() and not line.strip().startswith("#")]
    assert [nodes[n]["label"] for n in nodes if nodes[n].get("shape") != "ellipse"] == body
    x, y = statement(nodes, "x"), statement(nodes, "y = x + 2")
    dx = statement(nodes, "dx = 6 * dz * y")  # dy = ...; dx = dy read through: one statement
    assert names_between(edges, x, y) == [{"x"}] and names_between(edges, y, dx) == [{"y"}]
    assert names_between(edges, dx, statement(nodes, "return dx")) == [{"dx"}]
    assert nodes[y]["fillcolor"] == "#dbe9f6"  # primal
    assert nodes[dx]["fillcolor"] == "#fde2c8" and nodes[dx]["tooltip"] == "dx = 6 * dz * y\n(grad of line 12: z = y * y * 3)"


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_every_labelled_edge_runs_from_a_write_to_a_read_of_its_names(name):
    """The adversarial check: an edge the code does not have would show a flow that does not happen."""
    nodes, edges = parse(astgrad.graph(GRADIENTS[name]()).source)
    for tail, head, attrs in edges:
        if "label" not in attrs:
            assert attrs.get("style") in ("dotted", "invis"), (tail, head, attrs)
            continue
        written = nodes[tail]["tooltip"].split("\n")[0]
        read = nodes[head]["tooltip"].split("\n")[0]
        for var in attrs["label"].split(", "):
            word = re.compile(rf"(?<![\w.]){re.escape(var)}\b")
            assert word.search(read), f"{read!r} does not read {var}"
            is_param = nodes[tail].get("shape") == "ellipse" and nodes[tail]["label"] == var
            assert is_param or word.search(written), f"{written!r} does not write {var}"


def test_a_loop_carried_value_is_a_dashed_edge_back_to_the_top_of_the_loop():
    nodes, edges = parse(astgrad.graph(GRADIENTS["for_loop"]()).source)
    update, use = statement(nodes, "y = t1 + t2"), statement(nodes, "t1 = y * x")
    (back,) = [a for t, h, a in edges if t == update and h == use]
    assert back["label"] == "y" and back["style"] == "dashed"
    # before the loop's first iteration y comes from y = x, a forward edge
    assert names_between(edges, statement(nodes, "y = x"), use) == [{"y"}]
    # the loop may run zero times: both writes of y reach the first read after it
    seed = statement(nodes, "dy = filled(dresult, shape(y))")
    assert names_between(edges, statement(nodes, "y = x"), seed) == [{"y"}]
    assert names_between(edges, update, seed) == [{"y"}]


def test_the_stack_joins_the_pushes_to_the_pops():
    nodes, edges = parse(astgrad.graph(GRADIENTS["for_loop"]()).source)
    push, pop = statement(nodes, "_stack.append(y)"), statement(nodes, "y = _stack.pop()")
    assert names_between(edges, push, pop) == [{"_stack"}]
    assert nodes[pop]["fillcolor"] == "#fde2c8"


def test_both_branches_reach_the_join():
    gradient = GRADIENTS["branch"]()
    nodes, edges = parse(astgrad.graph(gradient).source)
    tree_text = gradient.source
    writes = {}
    for name, attrs in nodes.items():
        match = re.match(r"(\w+) = ", attrs["label"])
        if match:
            writes.setdefault(match.group(1), []).append(name)
    twice = [var for var, where in writes.items() if len(where) == 2]
    assert twice and "if " in tree_text, tree_text
    for var in twice:  # a name written in both arms: both writes reach its next read
        first, second = writes[var]
        reads = {h for t, h, a in edges if t == first and var in a.get("label", "").split(", ")}
        reads_too = {h for t, h, a in edges if t == second and var in a.get("label", "").split(", ")}
        assert reads & reads_too, var


def test_a_generated_callee_that_pushes_passes_the_stack_on():
    nodes, edges = parse(astgrad.graph(GRADIENTS["nested_call"]()).source)
    first = statement(nodes, "t1 = forward_inner(_stack, x, y)")
    second = statement(nodes, "t2 = forward_inner(_stack, y, x)")
    pop = statement(nodes, "t3, t4 = backward_inner(_stack, dt2, True)")  # its seed said computed
    assert names_between(edges, first, second) == [{"_stack"}]
    assert names_between(edges, second, pop) == [{"_stack"}]
    params = [n for n, a in nodes.items() if a.get("shape") == "ellipse" and a["label"] == "a"]
    assert any(t == first and h == params[0] and a["style"] == "dotted" for t, h, a in edges)


def test_every_statement_of_every_function_is_a_box():
    gradient = GRADIENTS["nested_call"]()
    nodes, _ = parse(astgrad.graph(gradient).source)
    import ast
    tree = ast.parse(gradient.source)
    simple = [s for s in ast.walk(tree) if isinstance(s, ast.stmt)
              and not isinstance(s, (ast.FunctionDef, ast.Delete, ast.Pass, ast.Break, ast.Continue))]
    assert len([n for n, a in nodes.items() if a.get("shape") != "ellipse"]) == len(simple)


def test_a_composition_not_called_yet_has_nothing_to_draw():
    with pytest.raises(ValueError, match="generated no code yet"):
        astgrad.graph(astgrad.hessian(g.for_loop))


def test_names_and_saved_are_for_tensors():
    with pytest.raises(TypeError, match="for a Tensor's graph"):
        astgrad.graph(GRADIENTS["straight_line"](), saved=True)


def ranked(w, v):  # its own function: calling a gradient changes the .source every caller of grad sees
    return np.tanh(w @ v).mean(axis=0).max()


def test_the_graph_is_of_the_code_that_ran_last():
    gradient = astgrad.grad(ranked, wrt=(0, 1))
    general = astgrad.graph(gradient).source
    gradient(np.ones((2, 3)), np.ones(3))  # specialised for these ranks: .source is that module now
    assert gradient.source != gradient.sources["any"]
    specialised = astgrad.graph(gradient).source
    assert specialised != general and "for a 2-d w and a 1-d v" in specialised.splitlines()[1]


@pytest.mark.parametrize("name", sorted(set(GRADIENTS) - {"nested_call", "recursion"}))
def test_every_read_of_a_local_name_has_an_edge_from_a_write(name):
    """No flow left out: a statement reading a parameter or a name written earlier has an edge for it."""
    import ast
    nodes, edges = parse(astgrad.graph(GRADIENTS[name]()).source)
    params = {a["label"] for a in nodes.values() if a.get("shape") == "ellipse"}
    written = set(params)
    for head, attrs in nodes.items():
        if attrs.get("shape") == "ellipse":
            continue
        text = attrs["tooltip"].split("\n")[0]
        tree = ast.parse(text + ": pass" if text.startswith(("for ", "if ", "while ")) else text)
        stmt = tree.body[0]
        reads = {n.id for n in ast.walk(stmt.iter if isinstance(stmt, ast.For) else stmt)
                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        if isinstance(stmt, ast.AugAssign):
            reads.add(stmt.target.id)
        incoming = set().union(*([set(a["label"].split(", ")) for t, h, a in edges if h == head and "label" in a] or [set()]))
        assert reads & written <= incoming, (text, (reads & written) - incoming)
        written |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        written |= {n.value.id for n in ast.walk(stmt) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.attr in ("append", "pop")}


class Written:
    """Generated-looking text, to pin one rule of the reading independently of what the transformer writes."""

    def __init__(self, source):
        self.source = source


def test_a_stack_passed_to_a_helper_is_written_by_it():
    source = ("# Generated by astgrad: a test.\n"
              "def df(x, n, *, dy=1.0):\n"
              "    _stack = []\n"
              "    for i in range(n):\n"
              "        _stack.append(x)\n"
              "    # grad of line 3: y = x * x\n"
              "    saved = pop_all(_stack, n)\n"
              "    if saved is None:\n"
              "        x = _stack.pop()\n"
              "    dx = dy * x\n"
              "    return dx\n")
    nodes, edges = parse(astgrad.graph(Written(source)).source)
    helper, pop = statement(nodes, "saved = pop_all(_stack, n)"), statement(nodes, "x = _stack.pop()")
    assert names_between(edges, helper, pop) == [{"_stack"}]
    assert names_between(edges, statement(nodes, "_stack.append(x)"), pop) == []  # the helper came between
    assert "dashed edge" in parse_title(astgrad.graph(Written(source)).source)
    assert "dashed edge" not in parse_title(astgrad.graph(GRADIENTS["straight_line"]()).source)


def test_forward_mode_is_one_sweep_with_the_users_lines_in_the_tooltips():
    gradient = GRADIENTS["jvp"]()
    nodes, edges = parse(astgrad.graph(gradient).source)
    assert "forward mode" in parse_title(astgrad.graph(gradient).source)
    assert all(a["fillcolor"] != "#fde2c8" for a in nodes.values())
    noted = [a["tooltip"] for a in nodes.values() if "\n(line " in a.get("tooltip", "")]
    assert noted and all(re.search(r"\(line \d+: ", t) for t in noted)


def parse_title(dot):
    return re.search(r'graph \[rankdir="TB" label="([^"]*)"', dot).group(1)
