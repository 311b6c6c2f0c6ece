"""Complex inputs: both engines return dL/dx - i dL/dy for z = x + iy (docs/rules.md).

The reference is computed here from central differences along the real and
the imaginary axis of each element, independently of the rule table.  The
functions mix holomorphic steps (products, exp, sin) with the ones that are
not (abs, conj, real, imag, vdot, var, norm): a rule that forgot to
conjugate gives the mirror image, which both engines would share.
"""

import numpy as np
import pytest

import astgrad
from astgrad.tape import tensor
from _numeric import directional

Z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.7 - 1.1j])


def convention(f, z, eps=1e-6):
    """dL/dx - i dL/dy of real-valued ``f`` at each element of ``z``."""
    out = np.zeros_like(z)
    for i in np.ndindex(z.shape):
        step = np.zeros_like(z)
        step[i] = 1.0
        out[i] = directional(f, z, step, eps) - 1j * directional(f, z, 1j * step, eps)
    return out


def squared_modulus(z):
    return np.sum(np.abs(z) ** 2)


def real_of_product_with_conjugate(z):
    return np.sum(np.real(z * np.conj(z)))


def real_of_exp(z):
    return np.sum(np.real(np.exp(z)))


def modulus_of_sine(z):
    return np.sum(np.abs(np.sin(z)))


def modulus_of_square(z):
    return np.sum(np.abs(z * z))


def imaginary_part_of_cube(z):
    return np.sum(np.imag(z * z * z))


def modulus_of_vdot(z):
    return np.abs(np.vdot(z * (1 + 0.5j), z + 1))


def variance(z):
    return np.var(z * z)


def standard_deviation(z):
    return np.std(np.exp(z))


def norm_of_exp(z):
    return np.linalg.norm(np.exp(z))


def angle_of_square(z):
    return np.sum(np.angle(z * z) * np.array([1.0, 2.0, 3.0]))


def angle_in_degrees(z):
    return np.sum(np.angle(np.exp(z), deg=True))


def real_if_close_of_product(z):
    # z * conj(z) has no imaginary part: numpy returns the real array
    return np.sum(np.real_if_close(z * np.conj(z)) * np.array([1.0, 2.0, 3.0]))


def real_if_close_kept_complex(z):
    return np.sum(np.abs(np.real_if_close(z * z)))


FUNCTIONS = [
    squared_modulus, real_of_product_with_conjugate, real_of_exp, modulus_of_sine, modulus_of_square,
    imaginary_part_of_cube, modulus_of_vdot, variance, standard_deviation, norm_of_exp,
    angle_of_square, angle_in_degrees, real_if_close_of_product, real_if_close_kept_complex,
]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_both_engines_follow_the_documented_convention(f):
    expected = convention(f, Z)
    generated = astgrad.grad(f)(Z)
    leaf = tensor(Z, requires_grad=True)
    f(leaf).backward()
    taped = leaf.grad.numpy()
    np.testing.assert_allclose(generated, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(taped, expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(generated, taped, rtol=1e-12, atol=1e-14)


def test_squared_modulus_is_twice_the_conjugate():
    np.testing.assert_allclose(astgrad.grad(squared_modulus)(Z), 2 * np.conj(Z))


def test_real_argument_through_complex_values_gets_the_real_part(recwarn):
    def f(x):
        return np.sum(np.abs(x * (1 + 2j)) ** 2)

    x = np.array([1.0, -2.0])
    generated = astgrad.grad(f)(x)
    leaf = tensor(x, requires_grad=True)
    f(leaf).backward()
    assert generated.dtype == np.float64 and leaf.grad.dtype == leaf.dtype
    np.testing.assert_allclose(generated, 10 * x)
    np.testing.assert_allclose(leaf.grad.numpy(), 10 * x)
    assert astgrad.grad(f)(1.5) == pytest.approx(15.0)
    assert not [w for w in recwarn if issubclass(w.category, np.exceptions.ComplexWarning)]


def test_second_order_on_the_tape_conjugates_too():
    leaf = tensor(Z, requires_grad=True)
    (grad,) = astgrad.autograd.grad(squared_modulus(leaf), leaf, create_graph=True)
    np.testing.assert_allclose(grad.detach().numpy(), 2 * np.conj(Z))
    # grad = 2 conj(z), so sum(Re(w * grad)) = 2 sum(a x + b y) for w = a + ib:
    # its gradient in the convention is 2 (a - ib) = 2 conj(w)
    w = np.array([0.5 - 1.0j, 2.0 + 0.0j, -1.0 + 0.25j])
    np.real(np.sum(grad * w)).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), 2 * np.conj(w))


def sign_times(z):
    return np.sum(np.real(np.sign(z) * np.array([1.0 - 2.0j, 0.5j, 3.0])))


def test_sign_of_complex_values_is_differentiated():
    expected = convention(sign_times, Z)
    leaf = tensor(Z, requires_grad=True)
    sign_times(leaf).backward()
    np.testing.assert_allclose(astgrad.grad(sign_times)(Z), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_second_order_of_modulus_on_the_tape():
    weights = np.array([1.0, 1.0j, 2.0 - 1.0j])

    def outer(z):  # the reference: a real function of the generated first derivative
        return np.sum(np.real(astgrad.grad(modulus_of_square)(z) * weights))

    leaf = tensor(Z, requires_grad=True)
    (first,) = astgrad.autograd.grad(modulus_of_square(leaf), leaf, create_graph=True)
    np.sum(np.real(first * weights)).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), convention(outer, Z, eps=1e-5), rtol=1e-5, atol=1e-7)


def test_modulus_on_the_tape_is_real_as_in_numpy():
    leaf = tensor(Z, requires_grad=True)
    assert np.abs(leaf).dtype == np.abs(Z).dtype
    assert abs(leaf.to(np.complex64)).dtype == np.float32


def parts_by_attribute(z):
    return np.sum((z * z.conj()).real) + np.sum(z.imag ** 3) + np.sum(np.exp(z).real)


def test_real_imag_and_conj_attributes_on_the_tape():
    leaf = tensor(Z, requires_grad=True)
    parts_by_attribute(leaf).backward()
    np.testing.assert_allclose(leaf.grad.numpy(), convention(parts_by_attribute, Z), rtol=1e-6, atol=1e-8)
    report = astgrad.check_grads(parts_by_attribute, Z)
    assert "taped" in report.gradients and "numeric" in report.gradients, report.skipped


def test_real_tensor_parts_follow_pytorch_outside_check_grads():
    t = tensor(np.array([1.0, 2.0]), requires_grad=True)
    assert t.real is t and t.conj() is t
    with pytest.raises(RuntimeError, match="imag is not implemented"):
        t.imag


_RNG = np.random.default_rng(0)
_A = _RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3)) + 2 * np.eye(3)
_V = _RNG.standard_normal(4) + 1j * _RNG.standard_normal(4)
_W = _RNG.standard_normal((3, 3)) + 1j * _RNG.standard_normal((3, 3))
_T = _RNG.standard_normal((5, 3)) + 1j * _RNG.standard_normal((5, 3))  # tall: pinv's a^H terms do not vanish
_B = _RNG.standard_normal(5) + 1j * _RNG.standard_normal(5)

# real-valued functions of a complex argument through many table entries: each engine returns the
# convention's gradient or refuses, never another number
SWEEP = {
    "det": (lambda a: np.abs(np.linalg.det(a)), _A),
    "inv": (lambda a: np.sum(np.abs(np.linalg.inv(a)) ** 2), _A),
    "solve": (lambda a: np.sum(np.abs(np.linalg.solve(a, np.ones(3))) ** 2), _A),
    "slogdet": (lambda a: np.linalg.slogdet(a)[1], _A),
    "slogdet_phase": (lambda a: np.real(np.linalg.slogdet(a)[0] * (0.3 - 1.2j)) + np.linalg.slogdet(a)[1], _A),
    "pinv": (lambda a: np.sum(np.abs(np.linalg.pinv(a)) ** 2), _A),
    "pinv_tall": (lambda a: np.real(np.sum(np.linalg.pinv(a) * (0.4 + 0.9j))), _T),
    "lstsq": (lambda a: np.real(np.sum(np.linalg.lstsq(a, _B)[0] * (0.3 - 0.7j))) + np.sum(np.linalg.lstsq(a, _B)[1]),
              _T),
    "logabsdet_times_complex": (lambda a: np.real((0.5 + 2.0j) * np.exp(0.1j * np.linalg.slogdet(a)[1])), _A),
    "frobenius": (lambda a: np.linalg.norm(a), _A),
    "nuclear": (lambda a: np.linalg.norm(a, "nuc"), _A),
    "spectral": (lambda a: np.linalg.norm(a, 2), _A),
    "svdvals": (lambda a: np.sum(np.linalg.svd(a, compute_uv=False)), _A),
    "qr": (lambda a: np.sum(np.abs(np.linalg.qr(a)[1]) ** 2), _A),
    "matmul": (lambda a: np.sum(np.abs(a @ _W) ** 2), _A),
    "einsum": (lambda a: np.abs(np.einsum("ij,ji->", a, _W)), _A),
    "trace": (lambda a: np.abs(np.trace(a @ a)), _A),
    "norm1": (lambda z: np.linalg.norm(z, 1), _V),
    "norm3": (lambda z: np.linalg.norm(z, 3), _V),
    "norm_inf": (lambda z: np.linalg.norm(z, np.inf), _V),
    "builtin_abs": (lambda z: np.sum(abs(z) ** 2), _V),
    "builtin_sum": (lambda z: np.abs(sum(z)), _V),
    "cumsum": (lambda z: np.sum(np.abs(np.cumsum(z))), _V),
    "cumprod": (lambda z: np.sum(np.abs(np.cumprod(z))), _V),
    "prod": (lambda z: np.abs(np.prod(z)), _V),
    "mean": (lambda z: np.abs(np.mean(z * z)), _V),
    "dot": (lambda z: np.abs(np.dot(z, z)), _V),
    "inner": (lambda z: np.abs(np.inner(z, z)), _V),
    "outer": (lambda z: np.sum(np.abs(np.outer(z, z))), _V),
    "sqrt": (lambda z: np.sum(np.abs(np.sqrt(z))), _V),
    "log": (lambda z: np.sum(np.abs(np.log(z))), _V),
    "power": (lambda z: np.sum(np.abs(z ** 2.5)), _V),
    "divide": (lambda z: np.sum(np.abs(1 / z)), _V),
    "tanh": (lambda z: np.sum(np.abs(np.tanh(z))), _V),
    "arctan": (lambda z: np.sum(np.abs(np.arctan(z))), _V),
    "angle": (lambda z: np.sum(np.angle(z) ** 2), _V),
    "max_of_abs": (lambda z: np.max(np.abs(z)), _V),
    "where": (lambda z: np.sum(np.abs(np.where(np.abs(z) > 1, z, z * z))), _V),
    "sinc": (lambda z: np.sum(np.abs(np.sinc(z))), _V),
}


@pytest.mark.parametrize("name", sorted(SWEEP))
def test_complex_sweep_gives_the_convention_or_refuses(name):
    f, z = SWEEP[name]
    expected = convention(f, z)
    try:
        generated = astgrad.grad(f)(z)
    except Exception:  # a refusal is allowed; a different number is not
        generated = None
    if generated is not None:
        np.testing.assert_allclose(generated, expected, rtol=1e-4, atol=1e-6)
    leaf = tensor(z, requires_grad=True)
    try:
        f(leaf).backward()
    except Exception:
        return
    np.testing.assert_allclose(leaf.grad.numpy(), expected, rtol=1e-4, atol=1e-6)
