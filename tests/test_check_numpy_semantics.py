"""check_grads runs numpy code on the tape with numpy's meaning of array methods.

Each function below is correct numpy code whose value would change if the
tape gave the method PyTorch's meaning (``x.var()`` unbiased, ``x.max(0)`` a
``(values, indices)`` pair, ``x.size`` a method...).  check_grads must run
all three methods and agree; the taped value must be numpy's value.  Outside
check_grads the Tensor keeps PyTorch's meaning.
"""

import warnings

import numpy as np
import pytest

import astgrad
from astgrad.tape import tensor
from astgrad.tape._modes import numpy_methods

X = np.random.default_rng(0).standard_normal((3, 4))
WEIGHTS = np.arange(12.0).reshape(4, 3) - 5.0


def variance(x):
    return x.var()


def deviation_along_axis(x):
    return np.sum(x.std(0) * np.arange(4.0)) + x.std(1, keepdims=True).sum()


def positional_variance(x):
    return np.sum(x.var(1, None, None, 1))  # axis=1, dtype=None, out=None, ddof=1


def max_along_axis(x):
    return np.sum(x.max(0) * 2.0)  # a (values, indices) pair times 2 would repeat the pair


def min_keepdims(x):
    return np.sum(x.min(1, None, True) * np.arange(3.0).reshape(3, 1))


def mean_by_size(x):
    return x.sum() / x.size


def sum_positional_dtype(x):
    return np.sum(x.sum(0, np.float64) ** 2) + x.mean(1, None, None, True).sum()


def transpose_two_axes(x):
    return np.sum(x.transpose(1, 0) * WEIGHTS)


def transpose_of_three_dims(x):
    cube = x.reshape(3, 2, 2)
    return np.sum(cube.transpose(2, 0, 1) * np.arange(12.0).reshape(2, 3, 2)) + np.sum(cube.T ** 2)


def flatten_is_a_copy(x):
    row = x[0]
    flat = row.flatten()
    flat *= 3.0  # on an alias this would also scale row
    return np.sum(flat) + np.sum(row * row)


def fortran_order(x):
    return np.sum(x.reshape(4, 3, order="F") * WEIGHTS) + np.sum(x.ravel("F") * np.arange(12.0))


def dot_and_astype(x):
    return np.sum(x.dot(x.T).astype(np.float64) ** 2) + np.sum(x.copy() * (x > 0))


FUNCTIONS = [
    variance, deviation_along_axis, positional_variance, max_along_axis, min_keepdims, mean_by_size,
    sum_positional_dtype, transpose_two_axes, transpose_of_three_dims, flatten_is_a_copy, fortran_order,
    dot_and_astype,
]


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_check_grads_runs_numpy_code_with_numpy_meaning(f):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # .T of 3-D is no deprecation in numpy; generated text compiles cleanly
        report = astgrad.check_grads(f, X)
    expected = ["taped", "numeric"] if f is flatten_is_a_copy else ["generated", "taped", "numeric"]
    assert list(report.gradients) == expected, report.skipped  # the transformer refuses flat *= 3


@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_taped_value_is_numpys(f):
    with numpy_methods():
        taped = f(tensor(X.copy(), requires_grad=True))
    np.testing.assert_allclose(taped.detach().numpy(), f(X.copy()), rtol=1e-12)


def test_outside_check_grads_the_tensor_keeps_pytorchs_meaning():
    t = tensor(X)
    assert float(t.var()) == pytest.approx(np.var(X, ddof=1))
    values, indices = t.max(0)
    np.testing.assert_array_equal(indices.numpy(), np.argmax(X, axis=0))
    assert tuple(t.size()) == X.shape and t.size(1) == 4
    assert t.transpose(0, 1).shape == (4, 3)
    row = t[0]
    assert row.flatten() is row


def test_the_mode_is_restored_after_a_failing_function():
    def broken(x):
        raise ValueError("user error")

    with pytest.raises(ValueError):
        with numpy_methods():
            broken(X)
    assert float(tensor(X).var()) == pytest.approx(np.var(X, ddof=1))


@pytest.mark.parametrize("call", [
    lambda x: x.sum(out=np.zeros(())), lambda x: x.max(initial=5.0), lambda x: x.var(where=x > 0),
])
def test_arguments_the_tape_cannot_honour_are_refused(call):
    with numpy_methods(), pytest.raises(TypeError, match="not supported on the tape"):
        call(tensor(X, requires_grad=True))


def test_complex_arguments_are_checked_in_the_documented_convention():
    z = np.array([1.0 + 2.0j, -0.5 + 0.3j, 0.7 - 1.1j])
    report = astgrad.check_grads(lambda v: np.sum(np.abs(np.sin(v)) ** 2), z)
    assert list(report.gradients) == ["generated", "taped", "numeric"], report.skipped
    assert np.iscomplexobj(report.gradients["numeric"][0])


def test_complex_arguments_of_a_wrong_rule_are_caught():
    @astgrad.primitive
    def modulus(v):
        return np.abs(v)

    @astgrad.defvjp(modulus)
    def modulus_vjp(g, ans, v):
        return g * np.sign(v)  # the conjugate is missing: right for real, wrong for complex

    def f(v):
        return np.sum(modulus(v) ** 2)

    astgrad.check_grads(f, np.array([1.0, -2.0]))
    with pytest.raises(astgrad.GradientMismatch):
        astgrad.check_grads(f, np.array([1.0 + 2.0j, -0.5 + 0.3j]))


def test_large_complex_arguments_use_a_complex_direction():
    z = np.random.default_rng(2).standard_normal(300) * (1 + 0.5j)
    report = astgrad.check_grads(lambda v: np.sum(np.abs(np.exp(v)) ** 2), z)
    assert report.directional and report.ok


def test_reshape_in_memory_order_is_refused_by_both_engines():
    def f(x):
        return np.sum(np.reshape(x, (4, 3), order="A") * WEIGHTS)

    with pytest.raises(ValueError, match="order='A'"):
        astgrad.grad(f)(X)
    leaf = tensor(X, requires_grad=True)
    with pytest.raises(ValueError, match="order='A'"):
        f(leaf).backward()


def test_numpy_spellings_the_tape_also_accepts():
    t = tensor(X, requires_grad=True)
    np.testing.assert_array_equal(t.round(2).detach().numpy(), np.round(X, 2))
    assert t.item(5) == X.item(5) and t.itemsize == X.itemsize and t.nbytes == X.nbytes
    np.testing.assert_array_equal(t.argsort(0).numpy(), X.argsort(0))
    report = astgrad.check_grads(lambda x: np.sum(x.round(3) * x), X)
    assert "taped" in report.gradients
