"""Every entry of the derivative table through the tape, checked against finite differences.

One parametrized test over the table (see ``samples.py``): the taped engine
in float64 and float32 against central differences in float64.
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from astgrad import rules
from _numeric import gradient

from .samples import CASES, case_id

TAPED = [c for c in CASES if c.tape]


def draw(case, seed=0):
    rng = np.random.default_rng(seed)
    return [a.draw(rng) for a in case.args], [a.diff for a in case.args]


def outputs(result):
    """The float arrays among a call's outputs (a tuple, a list or one array)."""
    items = result if isinstance(result, (tuple, list)) else (result,)
    return [o for o in items if np.asarray(o if not hasattr(o, "_data") else o._data).dtype.kind == "f"]


def weights_for(values, case=None, seed=1):
    """Random weights of each output's shape; ones for a case with ``expected`` gradients."""
    rng = np.random.default_rng(seed)
    shapes = [np.shape(v._data if hasattr(v, "_data") else v) for v in values]
    if case is not None and case.expected is not None:
        return [np.ones(shape) for shape in shapes]
    return [rng.uniform(0.5, 1.5, shape) for shape in shapes]


def loss_numpy(case, args, weights):
    outs = outputs(case.function(*args, **case.kwargs))
    return float(sum(np.sum(np.asarray(o) * w) for o, w in zip(outs, weights)))


def numeric_gradients(case, args, diff, weights, eps=1e-6):
    grads = []
    for i, (arg, is_diff) in enumerate(zip(args, diff)):
        if not is_diff:
            grads.append(None)
            continue
        parts = arg if isinstance(arg, list) else [arg]
        part_grads = []
        for j, part in enumerate(parts):
            part = np.asarray(part, dtype=np.float64)

            def loss_at(moved, i=i, j=j, arg=arg, parts=parts, ndim=part.ndim):
                new_args = list(args)
                if isinstance(arg, list):
                    new_args[i] = [moved if k == j else p for k, p in enumerate(parts)]
                else:
                    new_args[i] = moved if ndim else float(moved)
                return loss_numpy(case, new_args, weights)
            part_grads.append(gradient(loss_at, part, eps))
        grads.append(part_grads if isinstance(arg, list) else part_grads[0])
    return grads


def reference_gradients(case, args, diff, weights):
    """A case's ``expected`` gradients (one per differentiated argument), else central differences."""
    if case.expected is None:
        return numeric_gradients(case, args, diff, weights)
    expected = iter(case.expected)
    return [np.asarray(next(expected), dtype=np.float64) if is_diff else None for is_diff in diff]


def taped_gradients(case, args, diff, weights, dtype):
    def tensor(value):
        return astgrad.tensor(np.asarray(value, dtype=dtype), requires_grad=True)

    leaves = []
    call_args = []
    for arg, is_diff in zip(args, diff):
        if not is_diff:
            call_args.append(arg)
        elif isinstance(arg, list):
            parts = [tensor(p) for p in arg]
            leaves.append(parts)
            call_args.append(parts)
        else:
            leaves.append(tensor(arg))
            call_args.append(leaves[-1])
    outs = outputs(case.function(*call_args, **case.kwargs))
    loss = sum((o * w).sum() for o, w in zip(outs, weights))
    loss.backward()
    grads = []
    for leaf in leaves:
        grads.append([p.grad for p in leaf] if isinstance(leaf, list) else leaf.grad)
    return grads


def compare(taped, numeric, rtol, atol):
    numeric = [g for g in numeric if g is not None]
    assert len(taped) == len(numeric)
    for t, n in zip(taped, numeric):
        if isinstance(n, list):
            compare(t, n, rtol, atol)
            continue
        assert t is not None, "the tape gave no gradient"
        np.testing.assert_allclose(t.numpy(), n, rtol=rtol, atol=atol)


def test_every_entry_has_a_case():
    """Every rule astgrad ships (not rules a test or a user registers) has a sample case."""
    tested = {c.entry for c in CASES}  # equality: scipy.stats.norm.cdf is a new bound method at each read
    shipped = [r for r in rules.shipped() if r.differentiable]
    missing = [r.name for r in shipped if r.fn not in tested]
    assert not missing, f"table entries without a sample case in tests/rules/samples.py: {missing}"


@pytest.mark.parametrize("case", TAPED, ids=case_id)
def test_taped_float64_matches_finite_differences(case):
    args, diff = draw(case)
    weights = weights_for(outputs(case.function(*args, **case.kwargs)))
    numeric = numeric_gradients(case, args, diff, weights)
    taped = taped_gradients(case, args, diff, weights, np.float64)
    compare(taped, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", TAPED, ids=case_id)
def test_taped_float32_matches_finite_differences(case):
    args, diff = draw(case)
    weights = weights_for(outputs(case.function(*args, **case.kwargs)))
    numeric = numeric_gradients(case, args, diff, weights)
    taped = taped_gradients(case, args, diff, weights, np.float32)
    for t in [g for leaf in taped for g in (leaf if isinstance(leaf, list) else [leaf])]:
        assert t.dtype == astgrad.tape.float32, "a float32 leaf gets a float32 gradient"
    compare(taped, numeric, rtol=2e-3, atol=2e-3)

