"""The benchmark workloads of issue 7 at tiny sizes: gradients, never timings.

Each hand-written gradient is checked against central finite differences,
element by element; the generated and taped gradients are then checked
against the hand-written one, through the same adapters the benchmark
script times (benchmarks/systems.py), and so is each expert gradient.
"""

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from _numeric import gradient

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name):
    """``benchmarks/<name>.py`` as a module of its own, without putting benchmarks/ on sys.path."""
    spec = importlib.util.spec_from_file_location(f"_benchmarks_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


_systems = _load("systems")
as_numpy, prepare = _systems.as_numpy, _systems.prepare
WORKLOADS = _load("workloads").WORKLOADS

KEYS = list(WORKLOADS)


def _scalar_objective(workload, args):
    args = list(args)
    seed = args.pop() if workload.vjp else None

    def value(point):
        out = workload.fn(*point)
        return float(np.sum(out * seed)) if workload.vjp else float(out)
    return args, value


def central_differences(workload, args, eps=1e-6):
    """d value / d args[i] for each i in ``wrt``, one element at a time."""
    args, value = _scalar_objective(workload, args)

    def along(i):
        return lambda moved: value([moved if j == i else a for j, a in enumerate(args)])
    return tuple(np.asarray(gradient(along(i), args[i], eps)) for i in workload.wrt)


@pytest.mark.parametrize("key", KEYS)
def test_hand_written_gradient_matches_central_differences(key):
    workload = WORKLOADS[key]
    args = workload.make_inputs("test")
    hand = as_numpy(workload.hand_grads(*args))
    numeric = central_differences(workload, args)
    assert len(hand) == len(numeric) == len(workload.wrt)
    for got, want in zip(hand, numeric):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def _check_against_hand(system, key):
    workload = WORKLOADS[key]
    args = workload.make_inputs("test")
    hand = as_numpy(workload.hand_grads(*args))
    got = as_numpy(prepare(system, workload, args)())
    assert len(got) == len(hand)
    for g, h in zip(got, hand):
        assert g.shape == h.shape
        np.testing.assert_allclose(g, h, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("key", KEYS)
def test_expert_gradient_matches_hand_written(key):
    _check_against_hand("expert", key)


@pytest.mark.parametrize("key", ["W2", "W8"])
def test_expert_gradient_matches_hand_written_at_full_size(key):
    workload = WORKLOADS[key]
    args = workload.make_inputs("full")
    hand, expert = as_numpy(workload.hand_grads(*args)), as_numpy(workload.expert_grads(*args))
    for e, h in zip(expert, hand):
        assert e.shape == h.shape
        np.testing.assert_allclose(e, h, rtol=1e-10, atol=1e-12 * np.max(np.abs(h)))


@pytest.mark.parametrize("key", KEYS)
def test_generated_gradient_matches_hand_written(key):
    _check_against_hand("generated", key)


@pytest.mark.parametrize("key", KEYS)
def test_taped_gradient_matches_hand_written(key):
    _check_against_hand("taped", key)


def test_the_workloads_are_those_of_the_issue():
    assert KEYS == [f"W{i}" for i in range(1, 9)]
    assert WORKLOADS["W5"].vjp and not any(WORKLOADS[k].vjp for k in KEYS if k != "W5")
    full = {key: WORKLOADS[key].make_inputs("full") for key in ("W2", "W3", "W4", "W6", "W7", "W8")}
    assert full["W2"][1] == 1000
    assert [a.shape for a in full["W3"]] == [(64, 64), (64,), (64, 10), (32, 64), (32, 10)]
    assert [a.shape for a in full["W4"]] == [(1024, 1024), (1024,), (1024, 10), (512, 1024), (512, 10)]
    assert full["W6"][0].shape == (1_000_000,)
    assert [a.shape for a in full["W7"]] == [(512, 100), (256, 512), (256, 100)]
    assert [a.shape for a in full["W8"]] == [(64, 128), (128, 128), (128,), (50, 16, 64), (16, 128)]
