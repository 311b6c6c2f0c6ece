"""jacobian, hessian, hvp, elementwise_grad and grad to any order, by generated code.

References: central differences of the function (jacobian) and of its
generated gradient (hessian), closed forms, and the tape's
``torch.autograd.functional``.  The adversarial part: every corpus function
gets a hessian equal to the differences of its gradient, or a located
refusal; never another number.
"""

import math
import warnings

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from astgrad.torch.autograd import functional
from corpus.functions import CASES
from _numeric import gradient

RNG = np.random.default_rng(3)
X3 = np.array([0.3, -0.2, 0.5])
A = RNG.normal(size=(3, 3))
W = RNG.normal(size=(2, 3))
M = RNG.normal(size=(2, 3))


def numeric_jacobian(f, x):
    """d f(x)[i] / d x[j] by central differences, shaped f(x).shape + x.shape."""
    out_shape = np.shape(f(np.asarray(x, dtype=np.float64)))
    rows = [gradient(lambda a, i=i: np.asarray(f(a), dtype=np.float64).reshape(-1)[i], x)
            for i in range(int(np.prod(out_shape)))]
    return np.stack(rows).reshape(out_shape + np.shape(x))


# ----------------------------------------------------------------- jacobian

def tanh_layer(x):
    return np.tanh(W @ x)


def softmax(x):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def outer_product(x):
    return np.outer(x, x)


def cumulative(x):
    return np.cumsum(x * x)


def normalise(x):
    return x / np.linalg.norm(x)


def matrix_power(m):
    return m @ m.T


def polar(p):
    return np.array([p[0] * np.cos(p[1]), p[0] * np.sin(p[1])])


def broadcast_to_rows(x):
    return x + np.zeros((2, 1)) + np.exp(x)


def reduce_rows(m):
    return np.sum(m ** 2, axis=1)


def scalar_to_vector(t):
    return np.array([np.sin(t), np.cos(t), t ** 2])


def sine(x):
    return np.sin(x)


def quadratic_form(x):
    return x @ A @ x


def logsumexp(x):
    return np.log(np.sum(np.exp(x)))


JACOBIAN_CASES = [
    (tanh_layer, X3), (softmax, X3), (outer_product, X3), (cumulative, X3), (normalise, X3),
    (matrix_power, M), (polar, np.array([1.5, 0.4])), (broadcast_to_rows, X3), (reduce_rows, M),
    (scalar_to_vector, 0.7), (quadratic_form, X3), (logsumexp, X3), (sine, X3),
]


@pytest.mark.parametrize("f, x", JACOBIAN_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_jacobian_matches_finite_differences(f, x):
    found = astgrad.jacobian(f)(x)
    expected = numeric_jacobian(f, x)
    assert np.shape(found) == np.shape(f(x)) + np.shape(x)
    np.testing.assert_allclose(found, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("f, x", JACOBIAN_CASES, ids=lambda v: getattr(v, "__name__", ""))
def test_jacfwd_by_forward_mode_matches_finite_differences_and_jacrev(f, x):
    found = astgrad.jacfwd(f)(x)
    np.testing.assert_allclose(found, numeric_jacobian(f, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(found, astgrad.jacrev(f)(x), rtol=1e-12, atol=1e-14)


def test_jacfwd_of_several_arguments():
    def affine(W, b, x):
        return np.tanh(W @ x + b)

    b = np.array([0.1, -0.3])
    forward = astgrad.jacfwd(affine, (0, 2))(W, b, X3)
    reverse = astgrad.jacobian(affine, (0, 2))(W, b, X3)
    for found, expected in zip(forward, reverse):
        np.testing.assert_allclose(found, expected, rtol=1e-12, atol=1e-14)
    jacobian_fn = astgrad.jacfwd(affine)
    jacobian_fn(W, b, X3)
    assert jacobian_fn.batched is True  # every column from one call of the jvp batched over its tangent
    assert "def vmap_jvp_affine" in jacobian_fn.source


def test_jacobian_closed_forms():
    s = np.tanh(W @ X3)
    np.testing.assert_allclose(astgrad.jacobian(tanh_layer)(X3), (1 - s ** 2)[:, None] * W, rtol=1e-12)
    p = softmax(X3)
    np.testing.assert_allclose(astgrad.jacrev(softmax)(X3), np.diag(p) - np.outer(p, p), atol=1e-14)
    r, a = 1.5, 0.4
    np.testing.assert_allclose(astgrad.jacobian(polar)(np.array([r, a])),
                               [[math.cos(a), -r * math.sin(a)], [math.sin(a), r * math.cos(a)]], rtol=1e-12)
    np.testing.assert_allclose(astgrad.jacobian(quadratic_form)(X3), (A + A.T) @ X3, rtol=1e-12)


def test_jacobian_of_several_arguments_and_of_a_matrix_argument():
    def affine(W, b, x):
        return np.tanh(W @ x + b)

    b = np.array([0.1, -0.3])
    dW, db = astgrad.jacobian(affine, (0, 1))(W, b, X3)
    assert dW.shape == (2, 2, 3) and db.shape == (2, 2)
    np.testing.assert_allclose(dW, numeric_jacobian(lambda w: affine(w, b, X3), W), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(db, numeric_jacobian(lambda c: affine(W, c, X3), b), rtol=1e-6, atol=1e-8)
    assert astgrad.jacobian(affine, "x")(W, b, X3).shape == (2, 3)


def test_jacobian_agrees_with_the_tape():
    found = astgrad.jacobian(tanh_layer)(X3)
    taped = functional.jacobian(lambda x: torch.tanh(torch.tensor(W) @ x), torch.tensor(X3))
    np.testing.assert_allclose(found, taped.numpy(), rtol=1e-12)


def test_jacobian_of_a_tuple_or_dict_output_has_its_structure():
    """Refused once; JAX's nesting now (tests/transform/test_jacobians_of_trees_and_aux.py has the rest)."""
    pair = astgrad.jacobian(lambda x: (x, 2 * x))(X3)
    assert isinstance(pair, tuple) and len(pair) == 2
    np.testing.assert_allclose(pair[0], np.eye(3))
    np.testing.assert_allclose(pair[1], 2 * np.eye(3))
    named = astgrad.jacobian(lambda x: {"a": x * 2.0})(X3)
    assert list(named) == ["a"]
    np.testing.assert_allclose(named["a"], 2 * np.eye(3))


def test_elementwise_grad_is_the_derivative_of_an_elementwise_function():
    x = np.linspace(-2, 2, 7)
    np.testing.assert_allclose(astgrad.elementwise_grad(lambda x: np.tanh(x))(x), 1 - np.tanh(x) ** 2, rtol=1e-12)
    np.testing.assert_allclose(astgrad.elementwise_grad(lambda x: x ** 3)(x), 3 * x ** 2, rtol=1e-12)


def test_elementwise_grad_of_another_function_sums_the_jacobians_columns():
    """Not checked, as in HIPS autograd: it is the gradient of the sum of the outputs."""
    np.testing.assert_allclose(astgrad.elementwise_grad(tanh_layer)(X3),
                               np.sum(numeric_jacobian(tanh_layer, X3), axis=0), rtol=1e-6)


# ------------------------------------------------------------------ hessian

def rosenbrock(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def rosenbrock_hessian(x):
    n = len(x)
    h = np.zeros((n, n))
    for i in range(n - 1):
        h[i, i] += 1200 * x[i] ** 2 - 400 * x[i + 1] + 2
        h[i + 1, i + 1] += 200
        h[i, i + 1] = h[i + 1, i] = -400 * x[i]
    return h


def test_hessian_closed_forms():
    np.testing.assert_allclose(astgrad.hessian(quadratic_form)(X3), A + A.T, rtol=1e-12)
    p = softmax(X3)
    np.testing.assert_allclose(astgrad.hessian(logsumexp)(X3), np.diag(p) - np.outer(p, p), atol=1e-14)
    x = np.array([0.5, -1.2, 0.8, 1.1])
    np.testing.assert_allclose(astgrad.hessian(rosenbrock)(x), rosenbrock_hessian(x), rtol=1e-12)
    np.testing.assert_allclose(astgrad.hessian(lambda x: np.sum(np.sin(x) * x))(X3),
                               np.diag(2 * np.cos(X3) - X3 * np.sin(X3)), atol=1e-15)


def test_hessian_of_a_matrix_argument_and_its_blocks():
    def loss(W, x):
        return np.sum(np.tanh(W @ x) ** 2)

    H = astgrad.hessian(loss)(W, X3)
    assert H.shape == (2, 3, 2, 3)
    reference = numeric_jacobian(lambda w: astgrad.grad(loss)(w, X3), W)
    np.testing.assert_allclose(H, reference, rtol=1e-6, atol=1e-7)

    def two(x, y):
        return np.sum(x * x * y) + np.sum(y ** 3)

    (hxx, hxy), (hyx, hyy) = astgrad.hessian(two, (0, 1))(X3, X3 + 1)
    np.testing.assert_allclose(hxx, np.diag(2 * (X3 + 1)), atol=1e-15)
    np.testing.assert_allclose(hxy, np.diag(2 * X3), atol=1e-15)
    np.testing.assert_allclose(hyx, hxy.T, atol=1e-15)
    np.testing.assert_allclose(hyy, np.diag(6 * (X3 + 1)), atol=1e-14)


def test_forward_over_reverse_and_reverse_over_reverse_agree():
    """hessian is the forward sweep over the generated gradient; jacobian(grad(f)) is its reverse twin."""
    x = np.array([0.5, -1.2, 0.8, 1.1])
    for f in (rosenbrock, logsumexp, quadratic_form):
        point = x if f is rosenbrock else X3
        np.testing.assert_allclose(astgrad.hessian(f)(point), astgrad.jacobian(astgrad.grad(f))(point),
                                   rtol=1e-12, atol=1e-14)


def test_hvp_is_the_hessian_times_v_without_the_hessian():
    x = np.array([0.5, -1.2, 0.8, 1.1])
    v = np.array([1.0, -2.0, 0.5, 3.0])
    np.testing.assert_allclose(astgrad.hvp(rosenbrock)(x, v), astgrad.hessian(rosenbrock)(x) @ v, rtol=1e-12)
    np.testing.assert_allclose(astgrad.hvp(rosenbrock)(x, v), rosenbrock_hessian(x) @ v, rtol=1e-12)


def test_hessian_and_hvp_agree_with_the_tape():
    x = np.array([0.5, -1.2, 0.8, 1.1])
    v = np.array([1.0, -2.0, 0.5, 3.0])

    def taped(x):
        return torch.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    np.testing.assert_allclose(astgrad.hessian(rosenbrock)(x), functional.hessian(taped, torch.tensor(x)).numpy(),
                               rtol=1e-12)
    _, product = functional.hvp(taped, torch.tensor(x), torch.tensor(v))
    np.testing.assert_allclose(astgrad.hvp(rosenbrock)(x, v), product.numpy(), rtol=1e-12)


SCALE = [2.0]


def scaled_cube(x):
    return np.sum(SCALE[0] * x ** 3)


def test_a_hessian_reads_globals_when_it_runs():
    assert np.allclose(astgrad.hessian(scaled_cube)(X3), np.diag(12 * X3))
    SCALE[0] = 3.0
    try:
        assert np.allclose(astgrad.hessian(scaled_cube)(X3), np.diag(18 * X3))
    finally:
        SCALE[0] = 2.0


def _array_cases():
    found = []
    for case in CASES:
        x = case.args[case.wrt] if isinstance(case.wrt, int) else None
        if isinstance(x, np.ndarray) and x.dtype.kind == "f" and case.id != "own_default" \
                and np.ndim(case.f(*case.args)) == 0:
            found.append(case)
    return found


ARRAY_CASES = _array_cases()
#: corpus functions whose hessian the generated engine computes today (the rest are refused, located)
EXPECTED_TO_WORK = 54  # loops, branches and callees: forward mode through the gradient's stack


def _hessian_or_refusal(case):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return astgrad.hessian(case.f, case.wrt)(*case.args)
    except (TypeError, astgrad.TransformError) as exc:
        return exc


@pytest.mark.sweep(4)
@pytest.mark.parametrize("case", ARRAY_CASES, ids=lambda c: c.id)
def test_a_corpus_hessian_is_the_derivative_of_the_gradient_or_a_located_refusal(case):
    found = _hessian_or_refusal(case)
    if isinstance(found, Exception):
        message = str(found)
        assert "astgrad" in message or ".py" in message or "<astgrad" in message, message
        return
    gradient_fn = astgrad.grad(case.f, case.wrt)
    x = case.args[case.wrt]

    def at(moved):
        args = list(case.args)
        args[case.wrt] = moved
        return gradient_fn(*args)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_allclose(found, numeric_jacobian(at, x), rtol=1e-5, atol=1e-5)


def test_most_corpus_hessians_are_computed():
    computed = [case.id for case in ARRAY_CASES if not isinstance(_hessian_or_refusal(case), Exception)]
    assert len(computed) >= EXPECTED_TO_WORK, computed


# -------------------------------------------------------- grad to any order

def test_derivatives_of_sin_to_the_fourth():
    g = astgrad.grad
    sin = sine
    for x in (0.5, -1.3, 2.0):
        assert g(sin)(x) == pytest.approx(math.cos(x), rel=1e-14)
        assert g(g(sin))(x) == pytest.approx(-math.sin(x), rel=1e-14)
        assert g(g(g(sin)))(x) == pytest.approx(-math.cos(x), rel=1e-14)
        assert g(g(g(g(sin))))(x) == pytest.approx(math.sin(x), rel=1e-14)


def test_third_derivative_of_a_product():
    def wave(x):
        return np.sin(x) * np.exp(x)

    x = 0.7
    e, s, c = math.exp(x), math.sin(x), math.cos(x)
    assert astgrad.grad(astgrad.grad(astgrad.grad(wave)))(x) == pytest.approx(2 * e * (c - s), rel=1e-13)


def test_the_composed_source_is_generated_code_of_generated_code():
    def cube(x):
        return x ** 3

    second = astgrad.grad(astgrad.grad(cube))
    assert second(2.0) == 12.0
    assert "the gradient of dcube" in second.source and "def ddcube" in second.source


def test_a_second_derivative_of_a_function_calling_its_own_functions():
    def inner(x):
        return x ** 3

    def outer(x):
        return inner(x) * 2.0

    assert astgrad.grad(astgrad.grad(outer))(1.5) == pytest.approx(18.0, rel=1e-14)  # by forward mode
    assert astgrad.grad(outer)(1.5) == pytest.approx(13.5)


def test_a_second_derivative_follows_an_edited_function():
    def f(x):
        return x ** 3

    second = astgrad.grad(astgrad.grad(f))
    assert second(2.0) == 12.0
    f.__code__ = (lambda x: x ** 4).__code__
    assert second(2.0) == 48.0
