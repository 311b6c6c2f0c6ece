"""Edge samples of the derivative table (``samples.EDGES``) through both engines.

Zeros in products, ties in max/min/sort, reductions of equal values, matrices
read through one triangle: central differences (or the sample's ``expected``
gradients at a kink) in float64, with no NaN and no RuntimeWarning from the
engines.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from .samples import EDGES, edge_id
from .test_table import compare, draw, outputs, reference_gradients, taped_gradients, weights_for
from .test_table_generated import build_module, generated_against_numeric


def test_edge_samples_are_for_shipped_entries():
    from astgrad import rules

    shipped = {r.fn for r in rules.shipped() if r.differentiable}  # equality: scipy.stats.dirichlet.logpdf is a
    assert all(case.entry in shipped for case in EDGES)  # new bound method at each read


@pytest.mark.parametrize("case", [c for c in EDGES if c.tape], ids=edge_id)
def test_taped_edge_sample(case):
    args, diff = draw(case)
    weights = weights_for(outputs(case.function(*args, **case.kwargs)), case)
    reference = reference_gradients(case, args, diff, weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        taped = taped_gradients(case, args, diff, weights, np.float64)
    compare(taped, reference, rtol=1e-5, atol=1e-6)


@pytest.fixture(scope="module")
def edge_module(tmp_path_factory):
    return build_module(EDGES, tmp_path_factory.mktemp("edges"), "edge_cases")


@pytest.mark.parametrize("index", range(len(EDGES)), ids=[edge_id(c) for c in EDGES])
def test_generated_edge_sample(index, edge_module):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        result, reference, _ = generated_against_numeric(index, edge_module, np.float64, EDGES)
    for got, want in zip(result, reference):
        np.testing.assert_allclose(np.asarray(got, dtype=np.float64), want, rtol=1e-5, atol=1e-6)


def eigenvectors_of(a):
    return np.sum(np.linalg.eigh(a)[1] ** 3)


def eigenvalues_of(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * np.array([1.0, 1.0, 2.0]))


def test_eigenvectors_of_repeated_eigenvalues_are_refused_in_both_engines():
    a = np.diag([1.0, 1.0, 2.0])
    import astgrad

    with pytest.raises(ValueError, match="two eigenvalues are equal"):
        astgrad.grad(eigenvectors_of)(a)
    with pytest.raises(ValueError, match="two eigenvalues are equal"):
        eigenvectors_of(astgrad.tensor(a, requires_grad=True)).backward()
    # the eigenvalues alone have a gradient (equal weights on the repeated pair)
    np.testing.assert_allclose(astgrad.grad(eigenvalues_of)(a), np.diag([1.0, 1.0, 2.0]), atol=1e-12)


def complex_eigenvalues(a):
    return np.sum(np.linalg.eigh(a)[0] * np.array([1.0, 2.0]))


def complex_cholesky(a):
    return np.sum(np.abs(np.linalg.cholesky(a)))


@pytest.mark.parametrize("f", [complex_eigenvalues, complex_cholesky])
def test_complex_hermitian_one_triangle_readers_are_refused_in_both_engines(f):
    import astgrad

    a = np.array([[2.0, 1 - 1j], [1 + 1j, 3.0]])
    with pytest.raises(ValueError, match="complex Hermitian"):
        astgrad.grad(f)(a)
    with pytest.raises(ValueError, match="complex Hermitian"):
        f(astgrad.tensor(a, requires_grad=True)).backward()


def weighted_det(a):
    return np.real(np.linalg.det(a) * (1 - 2j))


def test_det_of_a_singular_complex_matrix_has_the_cofactor_gradient():
    import astgrad

    a, b, c = 1 + 1j, 2 - 1j, 2 + 0.5j
    m = np.array([[a, b], [c, b * c / a]])  # det = 0
    cofactor = np.array([[m[1, 1], -c], [-b, a]])
    want = cofactor * (1 - 2j)  # dL/dx - i dL/dy of L = Re(w det) is w det'(z): no conjugate
    np.testing.assert_allclose(astgrad.grad(weighted_det)(m), want, atol=1e-12)
    t = astgrad.tensor(m, requires_grad=True)
    weighted_det(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), want, atol=1e-12)
