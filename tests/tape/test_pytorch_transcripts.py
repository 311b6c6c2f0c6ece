"""Programs written against PyTorch, run with ``import astgrad.torch as torch``, print what PyTorch printed.

Each ``transcripts/NAME.py`` imports ``torch``; ``NAME.txt`` is what it
printed (standard output and errors) under PyTorch 2.13 on the CPU, recorded
once.  Here the program runs in a fresh process with only its import changed,
and its output must match line for line: printed tensors, modules and
devices, ``grad_fn`` names, gradients, and the messages of the errors it
catches.
"""

import os
import pathlib
import subprocess
import sys

import pytest

import astgrad

HERE = pathlib.Path(__file__).parent / "transcripts"
PROGRAMS = sorted(HERE.glob("*.py"))


def as_astgrad(source: str) -> str:
    assert "\nimport torch\n" in source
    return source.replace("\nimport torch\n", "\nimport astgrad.torch as torch\n")


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_prints_what_pytorch_printed(program):
    source_root = str(pathlib.Path(astgrad.__file__).parents[1])  # this astgrad, wherever it is imported from
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([source_root, os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", as_astgrad(program.read_text())], capture_output=True, text=True,
                         cwd=HERE, env=environment, timeout=120)
    assert run.returncode == 0, run.stderr
    expected = program.with_suffix(".txt").read_text()
    assert (run.stdout + run.stderr).splitlines() == expected.splitlines()
