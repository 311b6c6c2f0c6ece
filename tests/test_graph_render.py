"""Rendering astgrad.graph's DOT: SVG and PNG through the graphviz package and dot, a clear error without them."""

import shutil
import sys

import pytest

import astgrad
import astgrad.torch as torch


def small_graph():
    x = torch.ones(3, requires_grad=True)
    return astgrad.graph((x * 2).sum(), names={"x": x})


def test_without_the_graphviz_package_rendering_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz raises ImportError
    graph = small_graph()
    with pytest.raises(ImportError, match=r"pip install 'astgrad\[viz\]'"):
        graph.pipe("svg")
    assert graph._repr_svg_() is None  # a notebook shows the text repr instead
    assert "digraph" in graph.source and "MulBackward0" in str(graph)


def test_without_dot_rendering_says_what_to_install(monkeypatch):
    pytest.importorskip("graphviz")
    monkeypatch.setenv("PATH", "")
    with pytest.raises(RuntimeError, match="dot program"):
        small_graph().pipe("svg")


def test_the_text_is_written_without_anything_installed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    path = small_graph().save(str(tmp_path / "graph.dot"))
    assert open(path).read() == small_graph().source
    with pytest.raises(ValueError, match="no suffix"):
        small_graph().save(str(tmp_path / "graph"))


def test_the_repr_says_what_it_holds():
    assert repr(small_graph()) == "<astgrad.graph of the tape of a tensor: 5 nodes, 4 edges; DOT text in .source>"


@pytest.fixture
def dot_installed():
    pytest.importorskip("graphviz")
    if shutil.which("dot") is None:
        pytest.skip("Graphviz's dot program is not installed")


def test_svg_shows_the_node_names(dot_installed):
    svg = small_graph().pipe("svg").decode()
    assert svg.lstrip().startswith(("<?xml", "<svg")) and "</svg>" in svg
    for text in ("MulBackward0", "SumBackward0", "AccumulateGrad", "x"):
        assert f">{text}</text>" in svg
    assert small_graph()._repr_svg_() == svg


def test_png_is_written_by_suffix(dot_installed, tmp_path):
    path = small_graph().save(str(tmp_path / "graph.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_generated_code_renders_too(dot_installed):
    def f(x):
        return (x * x).sum()
    svg = astgrad.graph(astgrad.grad(f)).pipe("svg").decode()
    assert "return dx" in svg


def formats(value):
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    data, _ = interactive.InteractiveShell.instance().display_formatter.format(value)
    return data


def test_a_notebook_shows_the_picture(dot_installed):
    data = formats(small_graph())
    assert "</svg>" in data["image/svg+xml"] and data["text/plain"].startswith("<astgrad.graph of the tape")


def test_a_notebook_without_graphviz_shows_the_text_repr(monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    data = formats(small_graph())
    assert "image/svg+xml" not in data and data["text/plain"].startswith("<astgrad.graph of the tape")


def test_a_function_defined_in_a_cell_is_drawn():
    interactive = pytest.importorskip("IPython.core.interactiveshell")
    shell = interactive.InteractiveShell.instance()
    for cell in ["import astgrad", "def cell_f(x):\n    y = x * 3\n    return (y * y).sum()",
                 "picture = astgrad.graph(astgrad.grad(cell_f))"]:
        result = shell.run_cell(cell, store_history=True)
        assert result.success, result.error_in_exec or result.error_before_exec
    source = shell.user_ns["picture"].source
    assert 'label="def dcell_f(x, dresult)"' in source and 'label="y = x * 3"' in source
