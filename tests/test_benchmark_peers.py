"""benchmarks/jvp.py and benchmarks/hessian.py time only numbers they have checked, peers missing or not.

At small sizes: astgrad's jvp of every workload against the hand-written
gradient, each installed peer's jvp (HIPS autograd, JAX eager and jit,
torch.func) against astgrad's value and tangent, and every timed hessian
against the closed form.  A peer that is not installed is a note, never a
failure.  Nothing here is timed.
"""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

BENCHMARKS = pathlib.Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_peers_benchmark_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


jvp = _load("jvp")
hessian = _load("hessian")
peers = sys.modules["peers"]


@pytest.mark.parametrize("key", list(jvp.WORKLOADS))
def test_every_timed_jvp_agrees_with_astgrad(key):
    runners, notes, tangent = jvp.systems(jvp.WORKLOADS[key], "test")
    assert {"primal", "astgrad.jvp"} <= set(runners)
    for peer in peers.PEERS:
        assert peer in runners or any(note.startswith(f"{peer}: ") for note in notes), peer
    assert np.all(np.isfinite(tangent))


def test_a_wrong_peer_tangent_stops_the_benchmark(monkeypatch):
    def wrong(workload, args, tangents, _):
        return lambda: (workload.fn(*args), 1.0 + 1e-6)  # a tangent off in the seventh digit
    real = peers.jvp_runners

    def with_a_wrong_peer(workload, args, tangents):
        runners, compile_seconds = real(workload, args, tangents)
        runners["HIPS autograd"] = wrong(workload, args, tangents, None)
        return runners, compile_seconds
    monkeypatch.setattr(peers, "jvp_runners", with_a_wrong_peer)
    with pytest.raises(AssertionError, match="HIPS autograd: tangent"):
        jvp.systems(jvp.WORKLOADS["W1"], "test")


def test_a_missing_peer_is_a_note_not_a_failure(monkeypatch):
    def not_installed(name):
        raise peers.Unavailable(f"not installed (No module named '{name}')")
    monkeypatch.setattr(peers, "_import", not_installed)
    runners, notes, _ = jvp.systems(jvp.WORKLOADS["W3"], "test")
    assert set(runners) == {"primal", "astgrad.jvp", "astgrad.grad"}
    assert sorted(n.split(":")[0] for n in notes) == sorted(peers.PEERS)
    X, y, w = hessian.make_data(5, samples=10)
    found, _, notes = hessian.systems(w, X, y)
    assert all(name.startswith(("astgrad", "closed form", "tape:")) for name in found), sorted(found)
    peer_notes = [n for n in notes if not n.startswith("astgrad")]
    assert len(peer_notes) == 4 and all("not installed" in n for n in peer_notes)


def test_every_timed_hessian_equals_the_closed_form():
    X, y, w = hessian.make_data(12, samples=30)
    expected = hessian.closed_form(w, X, y)
    found, extra, _ = hessian.systems(w, X, y)
    for name, run in found.items():
        np.testing.assert_allclose(run(), expected, rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(extra["astgrad.hvp (one column)"](), expected @ np.ones(12), rtol=1e-9)
