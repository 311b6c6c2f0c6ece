"""Forward rules on complex values follow the convention of docs/rules.md, as the reverse rules do.

A tangent is the complex directional derivative ``d/ds f(z + s u)`` for real
``s``, so for the real-valued functions of ``tests/test_complex_convention.py``
the tangent along a complex ``u`` is ``Re sum(G * u)`` for the convention's
gradient ``G = dL/dx - i dL/dy``: checked against central differences along
``u`` and against the tape's gradient.  A refusal is allowed where the
reverse rules refuse; another number is not.
"""

import numpy as np
import pytest

from astgrad.tape import tensor
from _numeric import directional
from test_complex_convention import FUNCTIONS, SWEEP, Z

from astgrad import rules

from ._dual import Dual
from .samples import CASES, case_id
from .test_forward_rules import directions
from .test_table import draw


def _forward(f, z, u):
    out = f(Dual(z, u))
    assert isinstance(out, Dual), "the output lost its tangent"
    assert np.isrealobj(out.value)
    return out.tangent


def _direction(z, seed=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, np.shape(z)) + 1j * rng.uniform(-1, 1, np.shape(z))


def _taped(f, z, u):
    leaf = tensor(z, requires_grad=True)
    f(leaf).backward()
    return float(np.real(np.sum(leaf.grad.numpy() * u)))


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_tangent_is_the_directional_derivative_along_a_complex_direction(f):
    u = _direction(Z)
    tangent = _forward(f, Z, u)
    assert abs(np.imag(tangent)) < 1e-12, "a real output has a real tangent"
    np.testing.assert_allclose(np.real(tangent), directional(f, Z, u), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(np.real(tangent), _taped(f, Z, u), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_complex_sweep_gives_the_directional_derivative_or_refuses(name):
    f, z = SWEEP[name]
    u = _direction(z)
    try:
        tangent = _forward(f, z, u)
    except ValueError as refusal:
        assert "astgrad" in str(refusal)
        return
    assert abs(np.imag(tangent)) < 1e-10, "a real output has a real tangent"
    np.testing.assert_allclose(np.real(tangent), directional(f, z, u), rtol=1e-5, atol=1e-7)


def test_the_phase_of_a_complex_determinant_moves():
    """slogdet's sign is piecewise constant for a real matrix only; for a complex one it has a tangent."""
    a = SWEEP["det"][1]
    u = _direction(a)
    weights = np.array(0.3 - 1.2j)

    def phase(m):
        return np.real(np.linalg.slogdet(m)[0] * weights)

    np.testing.assert_allclose(np.real(_forward(phase, a, u)), directional(phase, a, u), rtol=1e-6, atol=1e-8)


def _complex(a, rng):
    if isinstance(a, list):
        return [_complex(x, rng) for x in a]
    return a + 1j * rng.uniform(-0.3, 0.3, a.shape) if isinstance(a, np.ndarray) else a


_DIRECT = [c for c in CASES if c.call is None]


@pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")  # astype to float64 drops .imag, as asked
@pytest.mark.parametrize("case", _DIRECT, ids=case_id)
def test_rule_pair_agrees_on_complex_samples(case):
    """Re sum(w * jvp(u)) == Re sum(vjp(w) * u) for complex inputs, tangents and weights (real for a real output).

    A pair that both forget a conjugation agrees with itself, so the sweep in
    test_complex_convention holds the finite-difference side; this finds the
    rules where the two directions disagree.  Entries numpy or astgrad refuse
    for complex values are skipped.
    """
    rng = np.random.default_rng(5)
    args, diff = draw(case)
    args = [_complex(a, rng) if d else a for a, d in zip(args, diff)]
    us = [None if u is None else _complex(u, rng) for u in directions(args, diff)]
    entry = rules.lookup(case.entry)
    try:
        ans = case.entry(*args, **case.kwargs)
    except TypeError:
        pytest.skip("numpy does not run this on complex values")
    except ValueError as refusal:  # an entry that is itself a rule of astgrad's (a vmapped call's reverse rule)
        assert "astgrad" in str(refusal)
        pytest.skip("refused for complex values")
    outs = list(ans) if isinstance(ans, (tuple, list)) else [ans]
    ws = [None if np.asarray(o).dtype.kind not in "fc" else
          (_complex(rng.uniform(0.5, 1.5, np.shape(o)), rng) if np.iscomplexobj(o) else rng.uniform(0.5, 1.5, np.shape(o)))
          for o in outs]
    try:
        out = rules.tangent_of_call(entry, us, ans, args, case.kwargs)
        grads = entry.vjp(ws if isinstance(ans, (tuple, list)) else ws[0], ans, *args, **case.kwargs)
    except ValueError as refusal:
        assert "astgrad" in str(refusal)
        pytest.skip("refused for complex values")
    tangents = list(out) if isinstance(ans, (tuple, list)) else [out]
    forward = sum(float(np.real(np.sum(w * t))) for w, t in zip(ws, tangents) if w is not None and t is not None)
    grads = grads if isinstance(grads, tuple) else (grads,)
    reverse = 0.0
    for a, u, g in zip(args, us, grads):
        if u is None:
            continue
        for part, du, dg in (zip(a, u, g) if isinstance(a, list) else [(a, u, g)]):
            reverse += float(np.real(np.sum(rules.unbroadcast(dg, np.shape(part)) * du)))
    np.testing.assert_allclose(forward, reverse, rtol=1e-8, atol=1e-9)
