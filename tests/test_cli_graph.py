"""``astgrad graph FILE.py:FUNC``: the generated gradient's data flow as DOT, through a subprocess."""

import shutil

import pytest

from _dot_reader import by_label, parse
from test_cli import model, run  # noqa: F401  (model is a fixture)


def test_graph_prints_the_data_flow_of_the_generated_gradient(model):  # noqa: F811
    done = run("graph", f"{model}:loss", "--wrt", "w", "--wrt", "b")
    assert done.returncode == 0, done.stderr
    nodes, edges = parse(done.stdout)
    labels = by_label(nodes)
    assert {"w", "b", "dresult", "return (dw, db)"} <= set(labels)
    assert done.stdout.startswith("digraph dataflow {")


def test_graph_of_a_vjp(model):  # noqa: F811
    done = run("graph", f"{model}:double", "--mode", "vjp")
    assert done.returncode == 0, done.stderr
    assert "vector-Jacobian product of double" in done.stdout


def test_graph_writes_dot_text_by_suffix_and_refuses_a_file_without_one(model, tmp_path):  # noqa: F811
    done = run("graph", f"{model}:loss", "-o", tmp_path / "loss.dot")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "loss.dot").read_text() == run("graph", f"{model}:loss").stdout
    done = run("graph", f"{model}:loss", "-o", tmp_path / "loss")
    assert done.returncode == 1 and "no suffix" in done.stderr


def test_graph_of_a_refused_function_is_the_refusal(model):  # noqa: F811
    done = run("graph", f"{model}:refused")
    assert done.returncode == 1 and "try/except cannot be differentiated" in done.stderr


def test_graph_renders_svg(model, tmp_path):  # noqa: F811
    pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")
    done = run("graph", f"{model}:loss", "-o", tmp_path / "loss.svg")
    assert done.returncode == 0, done.stderr
    assert "</svg>" in (tmp_path / "loss.svg").read_text()
