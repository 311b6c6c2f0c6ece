"""The benchmark workloads of issue 7 at tiny sizes: gradients, never timings.

Each hand-written gradient is checked against central finite differences,
element by element; the generated and taped gradients are then checked
against the hand-written one, through the same adapters the benchmark
script times (benchmarks/systems.py).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from systems import as_numpy, prepare  # noqa: E402
from workloads import WORKLOADS  # noqa: E402

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
    grads = []
    for i in workload.wrt:
        base = np.array(args[i], dtype=np.float64)
        grad = np.zeros_like(base)
        for index in np.ndindex(base.shape):
            plus, minus = base.copy(), base.copy()
            plus[index] += eps
            minus[index] -= eps
            point_plus, point_minus = list(args), list(args)
            point_plus[i] = plus if base.ndim else float(plus)
            point_minus[i] = minus if base.ndim else float(minus)
            grad[index] = (value(point_plus) - value(point_minus)) / (2 * eps)
        grads.append(grad)
    return tuple(grads)


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
