"""Fourier transforms, convolutions and interpolation of complex values follow the convention of docs/rules.md.

For a real-valued ``L`` of a complex ``z`` both engines must return ``dL/dx
- i dL/dy``, computed here from central differences along the real and the
imaginary axis of each element (``test_complex_convention.convention``).
The transforms are holomorphic (no conjugate in their rules); ``correlate``
conjugates its second operand and ``irfft`` reads only parts of its input,
so a forgotten conjugation or a missing factor of two gives another number
here, which the forward-versus-reverse check alone would not see.
"""

import numpy as np
import pytest

import astgrad
from astgrad.tape import tensor
from _numeric import gradient
from test_complex_convention import convention

RNG = np.random.default_rng(7)
Z6 = RNG.standard_normal(6) + 1j * RNG.standard_normal(6)
Z5 = RNG.standard_normal(5) + 1j * RNG.standard_normal(5)
Z34 = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
V3 = RNG.standard_normal(3) + 1j * RNG.standard_normal(3)
WEIGHTS = 0.7 - 1.3j


def fft_padded(z):
    return np.sum(np.abs(np.fft.fft(z, 8)) ** 2 * np.arange(8))


def ifft_cut(z):
    return np.real(np.sum(np.fft.ifft(z, 4, norm="ortho") * WEIGHTS * np.arange(1, 5)))


def fft2_of_matrix(z):
    return np.sum(np.abs(np.fft.fft2(z)) * np.arange(4))


def ifftn_shaped(z):
    return np.sum(np.imag(np.fft.ifftn(z, (4, 3), (0, 1)) ** 2))


def irfft_even(z):
    return np.sum(np.fft.irfft(z) * np.arange(8))  # reads Re z[0] and Re z[-1] only


def irfft_odd(z):
    return np.sum(np.fft.irfft(z, 9, norm="forward") ** 2)


def irfft_cut(z):
    return np.sum(np.fft.irfft(z, 6) * np.linspace(1, 2, 6))


def convolve_same(z):
    return np.sum(np.abs(np.convolve(z, V3 * z[:3], "same")) ** 2)


def correlate_full(z):
    return np.real(np.sum(np.correlate(z, V3 + z[1:4], "full") * WEIGHTS))


def correlate_longer_second(z):
    return np.real(np.sum(np.correlate(V3, z, "same") * np.arange(1, 7)))


def interp_of_complex_values(z):
    return np.sum(np.abs(np.interp(np.linspace(-0.5, 5.5, 9), np.arange(6.0), z)) ** 2)


def vecdot_both_sides(z):
    return np.real(np.sum(np.vecdot(z[:3] * (1 + 0.5j), z[3:] + V3) * WEIGHTS))


FUNCTIONS = {
    fft_padded: Z6, ifft_cut: Z6, fft2_of_matrix: Z34, ifftn_shaped: Z34, irfft_even: Z5, irfft_odd: Z5,
    irfft_cut: Z5, convolve_same: Z6, correlate_full: Z6, correlate_longer_second: Z6,
    interp_of_complex_values: Z6, vecdot_both_sides: Z6,
}


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_both_engines_follow_the_convention(f):
    z = FUNCTIONS[f]
    expected = convention(f, z)
    np.testing.assert_allclose(astgrad.grad(f)(z), expected, rtol=1e-6, atol=1e-7)
    leaf = tensor(z, requires_grad=True)
    f(leaf).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-6, atol=1e-7)


def rfft_power(x):
    return np.sum(np.abs(np.fft.rfft(x)) ** 2)


def test_rfft_of_complex_values_is_refused_as_numpy_refuses_it():
    with pytest.raises(TypeError):
        np.fft.rfft(Z6)
    x = np.real(Z6)
    np.testing.assert_allclose(astgrad.grad(rfft_power)(x), gradient(rfft_power, x), rtol=1e-6, atol=1e-7)


def power_spectrum_of_real_signal(x):
    return np.sum(np.abs(np.fft.fft(x * np.hanning(6))) ** 2)


def test_a_real_signal_gets_a_real_gradient():
    x = np.real(Z6)
    got = astgrad.grad(power_spectrum_of_real_signal)(x)
    leaf = tensor(x, requires_grad=True)
    power_spectrum_of_real_signal(leaf).backward()
    assert got.dtype == np.float64 and leaf.grad.dtype == leaf.dtype
    np.testing.assert_allclose(got, gradient(power_spectrum_of_real_signal, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(leaf.grad.numpy(), got, rtol=1e-12)


try:
    from scipy import signal
except ImportError:  # scipy is optional: only the two tests below need it
    signal = None


def scipy_correlate_2d(z):
    return np.sum(np.abs(signal.correlate(z, Z34[:2, :3] + z[1:3, 1:4], "same")) ** 2)


def scipy_convolve_valid(z):
    return np.real(np.sum(signal.convolve(Z34[:2, :2], z, "valid") * WEIGHTS))


@pytest.mark.parametrize("f", [scipy_correlate_2d, scipy_convolve_valid], ids=lambda f: f.__name__)
def test_scipy_signal_follows_the_convention(f):
    if signal is None:
        pytest.skip("scipy is not installed")
    np.testing.assert_allclose(astgrad.grad(f)(Z34), convention(f, Z34), rtol=1e-6, atol=1e-7)
