"""Every forward (tangent) rule of the table against finite differences and against its own reverse rule.

For each sample case (``samples.py``), with random tangents ``u`` of the
differentiated arguments and random weights ``w`` of the outputs:

* ``<w, J u>`` from the forward rules equals the central difference of
  ``sum(w * f(args + s u))`` at ``s = 0``;
* ``<w, J u>`` equals ``<J^T w, u>``, the reverse rule's side (called
  directly for a case that calls its entry, through the tape for a case
  that calls a helper composing several primitives).

A case calling its entry directly runs the entry's forward rules; a case
calling a helper runs each primitive's forward rules in turn (``_dual``).
"""

from __future__ import annotations

import numpy as np
import pytest

from astgrad import rules
from _numeric import directional

from ._dual import Dual
from .samples import CASES, EDGES, case_id, edge_id
from .test_table import draw, taped_gradients

#: shipped entries without forward rules, each with its reason (none yet)
WITHOUT_FORWARD: dict = {}


def _direction(arg, rng):
    if isinstance(arg, list):
        return [_direction(item, rng) for item in arg]
    if np.ndim(arg) == 0 and not isinstance(arg, np.ndarray):
        return float(rng.uniform(-1, 1))
    return rng.uniform(-1, 1, np.shape(arg))


def directions(args, diff, seed=2):
    rng = np.random.default_rng(seed)
    return [_direction(a, rng) if d else None for a, d in zip(args, diff)]


def moved(args, us, s):
    """The arguments moved by ``s`` along the tangents ``us``."""
    def move(a, u):
        if u is None:
            return a
        if isinstance(a, list):
            return [move(x, v) for x, v in zip(a, u)]
        return a + s * u if isinstance(a, np.ndarray) else float(a + s * u)
    return [move(a, u) for a, u in zip(args, us)]


def _items(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


def _floating(x) -> bool:
    return np.asarray(x).dtype.kind == "f"


def forward(case, args, us):
    """The case's outputs and their tangents (``None`` where an output has none)."""
    if case.call is None:
        entry = rules.lookup(case.entry)
        ans = case.entry(*args, **case.kwargs)
        out = rules.tangent_of_call(entry, us, ans, args, case.kwargs)
        return _items(ans), _items(out) if isinstance(ans, (tuple, list)) else [out]
    duals = [a if u is None else (Dual(a, u) if not isinstance(a, list) else [Dual(x, v) for x, v in zip(a, u)])
             for a, u in zip(args, us)]
    result = _items(case.function(*duals, **case.kwargs))
    return ([o.value if isinstance(o, Dual) else o for o in result],
            [o.tangent if isinstance(o, Dual) else None for o in result])


def weights(values, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 1.5, np.shape(v)) if _floating(v) else None for v in values]


def weighted(values, ws):
    return float(sum(np.sum(np.asarray(v) * w) for v, w in zip(values, ws) if w is not None))


def jvp_side(case, args, us, ws):
    values, tangents = forward(case, args, us)
    return float(sum(np.sum(np.real(w * (0 if t is None else t))) for t, w in zip(tangents, ws) if w is not None))


def vjp_side(case, args, diff, us, ws):
    """``<J^T w, u>``: the reverse rule called directly, or the tape on a helper."""
    if case.call is None:
        entry = rules.lookup(case.entry)
        ans = case.entry(*args, **case.kwargs)
        g = ws if isinstance(ans, (tuple, list)) else ws[0]
        grads = entry.specialized(tuple(diff))(g, ans, *args, **case.kwargs)  # as the tape calls it
        grads = grads if isinstance(grads, tuple) else (grads,)
    else:
        present = [w for w in ws if w is not None]
        taped = iter(taped_gradients(case, args, diff, present, np.float64))
        grads = [next(taped) if d else None for d in diff]
    total = 0.0
    for a, u, g in zip(args, us, grads):
        if u is None:
            continue
        for part, du, dg in (zip(a, u, g) if isinstance(a, list) else [(a, u, g)]):
            dg = dg.numpy() if hasattr(dg, "numpy") else dg
            total += float(np.sum(np.real(rules.unbroadcast(dg, np.shape(part)) * du)))
    return total


def test_every_entry_has_forward_rules():
    """Each entry astgrad ships has a forward rule, unless it is in the reasoned allow-list."""
    missing = [r.name for r in rules.shipped() if r.differentiable and not r.has_jvp and r.name not in WITHOUT_FORWARD]
    assert not missing, f"table entries without forward rules (defjvp beside their defvjp): {missing}"


def test_every_differentiated_sample_argument_has_a_forward_rule():
    """Not just some argument: every one a sample differentiates (a tangent there is never dropped)."""
    missing = []
    for case in CASES:
        entry = rules.lookup(case.entry)
        if case.call is None and entry.name not in WITHOUT_FORWARD:
            missing += [f"{case_id(case)} argument {i}" for i, a in enumerate(case.args)
                        if a.diff and entry.jvp_for(i) is None]
    assert not missing, missing


#: a helper the tape cannot run (scipy.linalg.cho_factor's tuple) has no taped reverse side and no Dual path
FORWARD_CASES = [c for c in CASES if rules.lookup(c.entry).name not in WITHOUT_FORWARD and (c.tape or c.call is None)]


@pytest.mark.parametrize("case", FORWARD_CASES, ids=case_id)
def test_forward_rule_matches_finite_differences(case):
    args, diff = draw(case)
    us = directions(args, diff)
    values, _ = forward(case, args, us)
    ws = weights(values)
    numeric = directional(lambda s: weighted(_items(case.function(*moved(args, us, s), **case.kwargs)), ws), 0.0, 1.0)
    np.testing.assert_allclose(jvp_side(case, args, us, ws), numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case", FORWARD_CASES, ids=case_id)
def test_forward_rule_agrees_with_reverse_rule(case):
    """<w, J u> == <J^T w, u>: the pair describes one Jacobian."""
    args, diff = draw(case)
    us = directions(args, diff)
    values, _ = forward(case, args, us)
    ws = weights(values)
    np.testing.assert_allclose(jvp_side(case, args, us, ws), vjp_side(case, args, diff, us, ws), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", [c for c in EDGES if rules.lookup(c.entry).name not in WITHOUT_FORWARD], ids=edge_id)
def test_forward_rule_agrees_with_reverse_rule_at_edges(case):
    """At ties, zeros and kinks the forward rule picks the same subgradient as the reverse rule."""
    args, diff = draw(case)
    us = directions(args, diff)
    values, _ = forward(case, args, us)
    ws = weights(values)
    np.testing.assert_allclose(jvp_side(case, args, us, ws), vjp_side(case, args, diff, us, ws), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("case", [c for c in EDGES if c.expected is None], ids=edge_id)
def test_forward_rule_matches_finite_differences_at_edges(case):
    """Where central differences are the reference of the reverse rule's edge test, they are the forward rule's too."""
    args, diff = draw(case)
    us = directions(args, diff)
    values, _ = forward(case, args, us)
    ws = weights(values)
    numeric = directional(lambda s: weighted(_items(case.function(*moved(args, us, s), **case.kwargs)), ws), 0.0, 1.0)
    np.testing.assert_allclose(jvp_side(case, args, us, ws), numeric, rtol=1e-5, atol=1e-6)


def _float32(a):
    if isinstance(a, list):
        return [_float32(x) for x in a]
    return np.asarray(a, np.float32) if isinstance(a, np.ndarray) else a


@pytest.mark.parametrize("case", [c for c in FORWARD_CASES if c.call is None and c.tape], ids=case_id)
def test_float32_values_get_float32_tangents(case):
    """A float32 output's tangent is float32 (rules multiply by float64 constants) and close to float64's."""
    args, diff = draw(case)
    us = directions(args, diff)
    _, exact = forward(case, args, us)
    values, tangents = forward(case, [_float32(a) if d else a for a, d in zip(args, diff)], [_float32(u) for u in us])
    for value, tangent, reference in zip(values, tangents, exact):
        if tangent is None or np.asarray(value).dtype != np.float32:
            continue
        assert np.asarray(tangent).dtype == np.float32
        np.testing.assert_allclose(tangent, reference, rtol=2e-3, atol=2e-3)
