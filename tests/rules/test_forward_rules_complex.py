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

from ._dual import Dual


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
