"""Second derivatives through convolution, the Fourier transforms, quantiles and interp: right, or refused.

The rules of these entries call helpers of their own (placements, fits,
order weights), which the generated hessian may not differentiate: then it
must refuse with astgrad's error, never give another number.  The tape runs
the rules on Tensors (``create_graph=True``).  The reference is central
differences of the generated gradient.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import TransformError
from _numeric import gradient

V = np.array([0.5, -1.0, 2.0])
A = np.array([0.3, 1.2, -0.7, 2.1, 0.9])


def convolved(a):
    return np.sum(np.convolve(a, a[:3] * V, "same") ** 2)


def quantiles(a):
    return np.median(a * a) + np.quantile(a ** 3, 0.3)


def spectrum(a):
    return np.sum(np.abs(np.fft.rfft(a * a)) ** 2) + np.sum(np.real(np.fft.fft(a) ** 2))


def interpolated(a):
    return np.sum(np.interp(np.linspace(0, 2, 5), np.array([0.0, 1.0, 2.0]), a[:3] ** 2) ** 2)


def _reference(f):
    first = astgrad.grad(f)
    return np.array([gradient(lambda y, i=i: first(y)[i], A, 1e-5) for i in range(len(A))])


@pytest.mark.parametrize("f", [convolved, quantiles, spectrum, interpolated], ids=lambda f: f.__name__)
def test_generated_hessian_is_right_or_refused(f):
    try:
        hessian = astgrad.hessian(f)(A)
    except TransformError as refusal:
        assert "astgrad" in type(refusal).__module__
        return
    np.testing.assert_allclose(hessian, _reference(f), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", [convolved, quantiles, spectrum, interpolated], ids=lambda f: f.__name__)
def test_double_backward_on_the_tape_matches_differences(f):
    leaf = astgrad.tensor(A, requires_grad=True)
    (first,) = astgrad.autograd.grad(f(leaf), leaf, create_graph=True)
    rows = [astgrad.autograd.grad(first[i], leaf, retain_graph=True)[0].numpy() for i in range(len(A))]
    np.testing.assert_allclose(np.array(rows), _reference(f), rtol=1e-4, atol=1e-5)
