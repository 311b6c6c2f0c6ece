"""benchmarks/scientific.py at tiny sizes: every gradient it would time is checked, never a timing.

astgrad's gradient of each scientific program against central differences
of the program; each peer the benchmark would time (the tape, HIPS autograd,
and jax.jit on two of the ports, its compiles being slow) against astgrad's;
a peer that disagrees is refused a column, and what cannot run is a note
with the reason.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from _numeric import numeric_grad

pytest.importorskip("scipy")
BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_scientific_benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


scientific = _load("scientific")
PROGRAMS = scientific.PROGRAMS


def _numeric(program, args):
    return [numeric_grad(program.fn, args, i) for i in program.wrt]


@pytest.mark.parametrize("key", list(PROGRAMS))
def test_the_reference_matches_central_differences_and_the_timed_peers_match_it(key):
    program = PROGRAMS[key]
    args = program.make_inputs("test")
    with np.errstate(divide="ignore", invalid="ignore"):
        runners, notes, reference, _ = scientific.systems(program, "test", peers=("tape", "HIPS autograd"))
        numeric = _numeric(program, args)
        assert "primal" in runners
        assert ("astgrad.grad" in runners) != ("astgrad.grad" in notes)
        for got, want in zip(reference, numeric):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
        for name in ("tape", "HIPS autograd"):
            assert (name in runners) != (name in notes), name
            if name in runners:
                got = runners[name]()
                for g, r in zip(got, reference):
                    np.testing.assert_allclose(np.asarray(g), r, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("key", ["S1", "S8"])
def test_the_jax_ports_agree_with_astgrad(key):
    pytest.importorskip("jax")
    runners, notes, _, compile_seconds = scientific.systems(PROGRAMS[key], "test", peers=("jax.jit",))
    assert "jax.jit" in runners, notes.get("jax.jit")
    assert compile_seconds[key] > 0


def test_a_peer_off_in_the_seventh_digit_is_not_timed(monkeypatch):
    def wrong(program, args, _):
        def run():
            beta, log_r = scientific.astgrad.grad(program.fn, wrt=program.wrt)(*args)
            return beta * (1 + 1e-5), log_r
        return run
    monkeypatch.setitem(scientific.PEER_MAKERS, "tape", wrong)
    runners, notes, _, _ = scientific.systems(PROGRAMS["S8"], "test", peers=("tape",))
    assert "tape" not in runners
    assert notes["tape"].startswith("fails: gradient 0 differs from astgrad's by 1.0e-05")


def test_item_assignment_is_named_as_what_hips_autograd_cannot_run():
    pytest.importorskip("autograd")  # HIPS autograd: a reference peer, installed by hand, not by an extra
    with np.errstate(divide="ignore", invalid="ignore"):
        _, notes, _, _ = scientific.systems(PROGRAMS["S10"], "test", peers=("HIPS autograd",))
    assert notes["HIPS autograd"].startswith("cannot do item assignment (`inv_r[r2 == 0] = 0`)")
