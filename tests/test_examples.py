"""The example scripts run and print what they should: the tutorials what PyTorch prints (TORCH_SEMANTICS.md section 1)."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

# Section 1 of TORCH_SEMANTICS.md: the article's whole stdout under PyTorch.
PYTORCH_ARTICLE_OUTPUT = """\
tensor([[1., 1.],
        [1., 1.]], requires_grad=True)
tensor([[3., 3.],
        [3., 3.]], grad_fn=<AddBackward0>)
<AddBackward0 object at 0x7f71b2c8a320>
tensor([[27., 27.],
        [27., 27.]], grad_fn=<MulBackward0>) tensor(27., grad_fn=<MeanBackward0>)
False
True
<SumBackward0 object at 0x7f71d40cbf70>
tensor([[4.5000, 4.5000],
        [4.5000, 4.5000]])
tensor([-150.3182,  805.0087,  969.5453], grad_fn=<MulBackward0>)
tensor([1.0240e+02, 1.0240e+03, 1.0240e-01])
True
True
False
True
False
tensor(True)
"""

ADDRESS = re.compile(r" at 0x[0-9a-f]+>")
RANDOM_VECTOR = re.compile(r"^tensor\(\[[-\d., ]+\], grad_fn=<MulBackward0>\)$")
POWER_OF_TWO_GRAD = re.compile(r"^tensor\(\[(\S+), (\S+), (\S+)\]\)$")


def run(name: str) -> str:
    result = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True,
                            check=True, timeout=120)
    return result.stdout


def normalise(line: str) -> str:
    """Mask what differs between runs: object addresses and random values."""
    line = ADDRESS.sub(" at 0x...>", line)
    if RANDOM_VECTOR.match(line):
        return "<random vector, grad_fn=<MulBackward0>>"
    match = POWER_OF_TWO_GRAD.match(line)
    if match:
        values = [float(v.rstrip(",")) for v in match.groups()]
        scale = values[1]
        assert scale == 2 ** round(__import__("math").log2(scale)), line
        assert values == pytest.approx([scale * 0.1, scale, scale * 0.0001], rel=1e-4), line
        return "<gradient v * 2**k>"
    return line


def test_article_matches_pytorch_line_for_line():
    ours = [normalise(l) for l in run("tutorial_article.py").splitlines()]
    theirs = [normalise(l) for l in PYTORCH_ARTICLE_OUTPUT.splitlines()]
    assert ours == theirs


def test_notebook_is_the_article_without_detach():
    ours = [normalise(l) for l in run("tutorial_notebook.py").splitlines()]
    theirs = [normalise(l) for l in PYTORCH_ARTICLE_OUTPUT.splitlines()]
    assert ours == theirs[:-3]


def test_variable_tutorial_runs_with_creator_alias():
    lines = [normalise(l) for l in run("tutorial_variable.py").splitlines()]
    theirs = [normalise(l) for l in PYTORCH_ARTICLE_OUTPUT.splitlines()]
    assert lines[:7] == theirs[:7]  # x, y, creator, z and out
    assert lines[7:9] == theirs[10:12]  # x.grad = 4.5
    assert lines[9] == "<random vector, grad_fn=<MulBackward0>>"
    assert lines[10] == "<gradient v * 2**k>"
    assert lines[11].startswith("tensor([") and "grad" not in lines[11]  # x.data has no autograd suffix


def test_main_example_shows_the_adjoint_the_chain_and_three_agreeing_gradients():
    out = run("main.py")
    assert "def dtutorial(x, *, dresult=1.0):" in out
    assert "# grad of line 22: z = y * y * 3" in out
    assert ("grad_fn chain: MeanBackward0 -> MulBackward0 -> MulBackward0 -> AddBackward0 -> "
            "torch::autograd::AccumulateGrad") in out
    assert "x.grad = tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])" in out
    assert "dtutorial(ones(2, 2)) = [[4.5, 4.5], [4.5, 4.5]]" in out
    for pair in ("generated vs taped", "generated vs numeric", "taped vs numeric"):
        assert f"| x | {pair} |" in out
    assert "MISMATCH" not in out


def test_dask_logistic_regression_at_a_small_size():
    pytest.importorskip("dask.distributed")
    result = subprocess.run([sys.executable, str(EXAMPLES / "dask_logistic_regression.py"), "--rows", "30000",
                             "--chunk-rows", "10000", "--steps", "3", "--workers", "1", "--threads", "2",
                             "--no-processes"], capture_output=True, text=True, check=True, timeout=120)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("30,000 rows x 50 features") and "in 3 chunks of 10,000 rows" in lines[0]
    assert lines[1].startswith("check: the Dask gradient on 20,000 rows equals numpy's")
    losses = [float(re.search(r"loss (\S+)", line)[1]) for line in lines if line.startswith("step ")]
    assert len(losses) == 3
    assert losses[0] == pytest.approx(np.log(2.0), abs=1e-6)  # w = 0: every probability is 1/2
    assert losses[0] > losses[1] > losses[2]


def test_predator_prey_fit_recovers_the_rates_with_a_checked_gradient():
    pytest.importorskip("scipy")
    lines = run("predator_prey_fit.py").splitlines()
    check = re.search(r"largest relative difference (\S+)$", lines[0])
    assert lines[0].startswith("gradient check at the first guess (generated vs numeric)")
    assert float(check[1]) < 1e-5
    assert re.match(r"L-BFGS-B: \d+ iterations, \d+ evaluations, loss \S+$", lines[1])
    rates = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in lines[3:6]}
    assert rates["true"] == [1.0, 0.1, 0.075, 1.5]
    # five per cent noise on 31 observations of each species: the fit lands within a few per cent of the truth
    np.testing.assert_allclose(rates["fitted"], rates["true"], rtol=0.05)
    assert np.max(np.abs(np.log(np.divide(rates["guess"], rates["true"])))) > 0.15  # it started far from it
