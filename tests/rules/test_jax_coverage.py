"""docs/rules.md's list of what jax.numpy differentiates and the table lacks is the output of benchmarks/jax_coverage.py.

Recomputing it asks JAX for the gradient of a few hundred functions (about
half a minute of CPU), so the comparison runs with ``--runslow``; the fast
tests keep the list honest between runs: a function given a rule must leave
it (regenerate), and every function on it has its reason.
"""

import importlib.util
import pathlib
import re
import sys

import pytest

from astgrad import rules

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "rules.md"


def _script():
    spec = importlib.util.spec_from_file_location("jax_coverage", ROOT / "benchmarks" / "jax_coverage.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _section(text, script):
    start, end = text.index(script.START), text.index(script.END) + len(script.END)
    return text[start:end] + "\n"


def _listed(text, script):
    return re.findall(r"^- `([\w.]+)`", _section(text, script), re.MULTILINE)


def _resolve(dotted):
    module, name = dotted.rsplit(".", 1)
    __import__(module)
    return getattr(sys.modules[module], name)


def test_a_listed_function_still_has_no_entry_in_the_table():
    script = _script()
    listed = _listed(DOC.read_text(), script)
    assert listed, "the generated block of docs/rules.md lists nothing"
    gained = [name for name in listed if rules.find(_resolve(name)) is not None]
    assert not gained, (f"{gained} have entries now: regenerate docs/rules.md's list with "
                        "`python benchmarks/jax_coverage.py`")


def test_every_listed_function_has_its_reason():
    script = _script()
    assert set(_listed(DOC.read_text(), script)) <= set(script.REASONS)


@pytest.mark.slow
def test_the_list_is_what_the_script_computes_from_numpy_jax_and_the_table():
    pytest.importorskip("jax")
    script = _script()
    assert _section(DOC.read_text(), script) == script.section(), (
        "docs/rules.md's list is out of date: regenerate it with `python benchmarks/jax_coverage.py`")
