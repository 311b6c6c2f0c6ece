"""hessian and jacfwd run every direction in one call of batched generated code, or the column loop.

The batched path gives the tangent of each argument every basis vector
along a leading axis and batches the generated jvp over it (api/directions.py).
Each test compares it with the column loop it replaces (the same transform
with the batched path turned off) and with an independent reference
(central differences, a closed form), and pins which path ran
(``.batched``): the fast path where it should be taken, the loop, never a
guess, where the code is not batched.
"""

import numpy as np
import pytest

import astgrad
from astgrad.api.directions import Directions
from _numeric import gradient

RNG = np.random.default_rng(7)
LEVELS = (0, 1, 2)
LAM = 0.01


def looped(make):
    """``make()`` with the batched path turned off: one product per direction, as before batching."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Directions, "run", lambda *args, **kwargs: None)
        return make()


def numeric_hessian(f, x, *rest):
    """d^2 f / dx^2 by central differences of the generated gradient (checked against differences itself elsewhere)."""
    g = astgrad.grad(f)
    return np.stack([gradient(lambda a, k=k: np.ravel(g(a, *rest))[k], x) for k in range(np.size(x))]
                    ).reshape(np.shape(x) + np.shape(x))


def logistic_loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * LAM * np.sum(w * w)


def logistic_data(n=12, samples=30):
    X = RNG.standard_normal((samples, n)) / np.sqrt(n)
    y = (RNG.uniform(size=samples) < 0.5).astype(np.float64)
    return RNG.standard_normal(n) * 0.1, X, y


@pytest.mark.parametrize("level", LEVELS)
def test_the_benchmark_hessian_takes_the_batched_path_and_matches_the_closed_form(level):
    w, X, y = logistic_data()
    hessian = astgrad.hessian(logistic_loss, optimize=level)
    found = hessian(w, X, y)
    assert hessian.batched is True
    assert "batched over" in hessian.source
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    np.testing.assert_allclose(found, (X.T * (p * (1 - p))) @ X / len(y) + LAM * np.eye(len(w)), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(logistic_loss, optimize=level)(w, X, y)),
                               rtol=1e-13, atol=1e-15)


def several(x, W, s):
    return np.sum(np.tanh(W @ x) ** 2) + s * np.sum(W * W * x[0]) + s ** 3 * np.sum(x * x * x)


@pytest.mark.parametrize("level", LEVELS)
def test_hessian_of_several_arguments_is_batched_block_by_block(level):
    x, W, s = RNG.normal(size=4), RNG.normal(size=(3, 4)), 0.7
    hessian = astgrad.hessian(several, wrt=(0, 1, 2), optimize=level)
    found = hessian(x, W, s)
    assert hessian.batched is True
    expected = looped(lambda: astgrad.hessian(several, wrt=(0, 1, 2), optimize=level)(x, W, s))
    shapes = [np.shape(x), np.shape(W), ()]
    for i in range(3):
        for j in range(3):
            assert np.shape(found[i][j]) == shapes[i] + shapes[j]
            np.testing.assert_allclose(found[i][j], expected[i][j], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(found[0][0], numeric_hessian(several, x, W, s), rtol=1e-6, atol=1e-7)
    # the mixed block against differences of the gradient with respect to W
    dW = astgrad.grad(several, wrt=1)
    mixed = np.stack([gradient(lambda a, k=k: np.ravel(dW(a, W, s))[k], x) for k in range(W.size)]).reshape(3, 4, 4)
    np.testing.assert_allclose(found[1][0], mixed, rtol=1e-6, atol=1e-7)


def with_int_and_bool_constants(x, n, flags):
    mask = x > 0.0
    scale = 2 if n > 1 else 3
    total = np.sum(np.where(mask, x ** 3, x ** 2)) * scale
    picked = x[flags] * n
    return total + np.sum(picked * picked) + float(True) * np.sum(x[1:] * x[:-1])


@pytest.mark.parametrize("level", LEVELS)
def test_hessian_of_a_function_with_int_and_bool_constants(level):
    x = np.array([0.4, -0.3, 0.9, -1.2])
    flags = np.array([True, False, True, True])
    hessian = astgrad.hessian(with_int_and_bool_constants, optimize=level)
    found = hessian(x, 3, flags)
    assert hessian.batched is True
    expected = looped(lambda: astgrad.hessian(with_int_and_bool_constants, optimize=level)(x, 3, flags))
    np.testing.assert_allclose(found, expected, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(found, numeric_hessian(with_int_and_bool_constants, x, 3, flags), rtol=1e-6,
                               atol=1e-6)


def of_a_number(a, x):
    return np.sum(np.sin(a * x)) * a ** 2


@pytest.mark.parametrize("level", LEVELS)
def test_hessian_and_jacfwd_at_a_python_number(level):
    x = np.array([0.1, 0.5, -0.2])
    hessian = astgrad.hessian(of_a_number, optimize=level)
    found = hessian(0.8, x)
    assert hessian.batched is True
    expected = looped(lambda: astgrad.hessian(of_a_number, optimize=level)(0.8, x))
    assert np.shape(found) == np.shape(expected) == ()
    np.testing.assert_allclose(found, expected, rtol=1e-13)
    np.testing.assert_allclose(found, gradient(lambda a: astgrad.grad(of_a_number)(a, x), 0.8), rtol=1e-6)
    jacobian = astgrad.jacfwd(of_a_number, wrt=(0, 1), optimize=level)
    found = jacobian(0.8, x)
    assert jacobian.batched is True
    expected = looped(lambda: astgrad.jacfwd(of_a_number, wrt=(0, 1), optimize=level)(0.8, x))
    for a, b in zip(found, expected):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-13)


def layer(x, W, b):
    return np.tanh(W @ x + b) * 2.0 + x[:3] ** 2


@pytest.mark.parametrize("level", LEVELS)
def test_jacfwd_of_several_arguments_in_one_sweep(level):
    x, W, b = RNG.normal(size=4), RNG.normal(size=(3, 4)), RNG.normal(size=3)
    jacobian = astgrad.jacfwd(layer, wrt=(0, 1, 2), optimize=level)
    found = jacobian(x, W, b)
    assert jacobian.batched is True
    assert "batched over" in jacobian.source
    expected = looped(lambda: astgrad.jacfwd(layer, wrt=(0, 1, 2), optimize=level)(x, W, b))
    reverse = astgrad.jacobian(layer, wrt=(0, 1, 2))(x, W, b)
    for a, b_, c in zip(found, expected, reverse):
        assert np.shape(a) == np.shape(b_) == np.shape(c)
        np.testing.assert_allclose(a, b_, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    one = astgrad.jacfwd(layer, optimize=level)
    np.testing.assert_allclose(one(x, W, b), found[0], rtol=1e-13)
    assert one.batched is True


def of_a_dict(params, x):
    return np.sum(np.tanh(params["w"] * x) ** 2) + params["c"] ** 2 * np.sum(params["w"])


def test_dict_arguments_take_the_column_loop():
    params, x = {"w": np.array([0.3, -0.6, 0.2]), "c": 1.3}, np.array([0.5, 1.0, -1.5])
    hessian = astgrad.hessian(of_a_dict)
    found = hessian(params, x)
    assert hessian.batched is False  # a tangent holding a dict is not batched: the loop
    g = astgrad.grad(lambda w, c, x: np.sum(np.tanh(w * x) ** 2) + c ** 2 * np.sum(w), wrt=0)
    np.testing.assert_allclose(found["w"]["w"], np.stack([gradient(lambda w, k=k: g(w, params["c"], x)[k],
                                                                   params["w"]) for k in range(3)]), rtol=1e-6)
    jacobian = astgrad.jacfwd(of_a_dict)
    found = jacobian(params, x)
    assert jacobian.batched is False
    np.testing.assert_allclose(found["w"], astgrad.grad(of_a_dict)(params, x)["w"], rtol=1e-13)


def with_a_callee(x):
    return np.sum(helper(x) ** 2)


def helper(x):
    return np.sin(x) * x


def stacked_squares(x):
    return np.sum(np.concatenate([x, x ** 2]) ** 2)


def test_a_callee_is_batched_and_code_the_batching_sweep_refuses_takes_the_column_loop():
    x = np.array([0.3, -0.7, 1.1])
    hessian = astgrad.hessian(with_a_callee)
    found = hessian(x)
    assert hessian.batched is True  # the jvp calls the callee's pair's jvps, given the stacks: vmap batches them
    np.testing.assert_allclose(found, numeric_hessian(with_a_callee, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(with_a_callee)(x)), rtol=1e-13, atol=1e-15)
    hessian = astgrad.hessian(stacked_squares)
    found = hessian(x)
    assert hessian.batched is False  # np.concatenate's gradient is a list of parts: vmap refuses it
    np.testing.assert_allclose(found, np.diag(2 + 12 * x ** 2), rtol=1e-13, atol=1e-15)
    jacobian = astgrad.jacfwd(helper)
    assert jacobian.batched is None  # not called yet
    found = jacobian(x)
    np.testing.assert_allclose(found, np.diag(np.cos(x) * x + np.sin(x)), rtol=1e-13, atol=1e-15)


def test_float32_and_int_arguments_give_the_loops_values_and_dtypes():
    x32 = np.array([0.4, -0.3, 0.9], dtype=np.float32)
    hessian = astgrad.hessian(lambda x: np.sum(x ** 3) * np.sum(x))
    found = hessian(x32)
    expected = looped(lambda: astgrad.hessian(lambda x: np.sum(x ** 3) * np.sum(x))(x32))
    assert found.dtype == expected.dtype
    np.testing.assert_allclose(found, expected, rtol=1e-6)
    xi = np.array([1, -2, 3])
    found = astgrad.jacfwd(layer)(xi, np.ones((3, 3)), np.zeros(3))
    expected = looped(lambda: astgrad.jacfwd(layer)(xi, np.ones((3, 3)), np.zeros(3)))
    assert found.dtype == expected.dtype
    np.testing.assert_allclose(found, expected, rtol=1e-13)


def test_an_error_of_the_function_is_raised_as_by_the_loop():
    def mismatched(x, W):
        return np.sum(np.tanh(W @ x))

    x, W = RNG.normal(size=4), RNG.normal(size=(3, 5))
    with pytest.raises(ValueError):
        looped(lambda: astgrad.hessian(mismatched)(x, W))
    with pytest.raises(ValueError):
        astgrad.hessian(mismatched)(x, W)


def test_the_batched_code_is_made_again_when_the_function_changes():
    def f(x):
        return np.sum(x ** 3)

    def g(x):
        return np.sum(np.sin(x) * x)

    x = np.array([0.2, -0.5, 0.8])
    hessian = astgrad.hessian(f)
    np.testing.assert_allclose(hessian(x), np.diag(6 * x), rtol=1e-13)
    f.__code__ = g.__code__
    found = hessian(x)
    assert hessian.batched is True
    np.testing.assert_allclose(found, np.diag(2 * np.cos(x) - x * np.sin(x)), rtol=1e-13, atol=1e-15)
    jacobian = astgrad.jacfwd(f)
    np.testing.assert_allclose(jacobian(x), np.sin(x) + x * np.cos(x), rtol=1e-13)


def test_the_same_array_as_two_arguments():
    def f(a, b):
        return np.sum(a * a * b) + np.sum(np.exp(a - b))

    x = np.array([0.2, -0.5, 0.8])
    hessian = astgrad.hessian(f, wrt=(0, 1))
    found = hessian(x, x)
    assert hessian.batched is True
    expected = looped(lambda: astgrad.hessian(f, wrt=(0, 1))(x, x))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(found[i][j], expected[i][j], rtol=1e-13, atol=1e-15)


def test_hvp_is_one_column_and_never_batched():
    w, X, y = logistic_data()
    v = RNG.normal(size=w.shape)
    hvp = astgrad.hvp(logistic_loss)
    np.testing.assert_allclose(hvp(w, X, y, v), astgrad.hessian(logistic_loss)(w, X, y) @ v, rtol=1e-12)
    assert hvp.batched is None
    assert "batched over" not in hvp.source


# -- jacrev: every row from one call of the vjp batched over its seed ----------------------------------

def unused_and_numbers(x, W, s, n):
    return np.tanh(W @ x) * s ** 2 + n


@pytest.mark.parametrize("level", LEVELS)
def test_jacrev_of_several_arguments_in_one_sweep(level):
    x, W, b = RNG.normal(size=4), RNG.normal(size=(3, 4)), RNG.normal(size=3)
    jacobian = astgrad.jacrev(layer, wrt=(0, 1, 2), optimize=level)
    found = jacobian(x, W, b)
    assert jacobian.batched is True
    assert "batched over" in jacobian.source
    expected = looped(lambda: astgrad.jacrev(layer, wrt=(0, 1, 2), optimize=level)(x, W, b))
    forward = astgrad.jacfwd(layer, wrt=(0, 1, 2))(x, W, b)
    for a, b_, c in zip(found, expected, forward):
        assert np.shape(a) == np.shape(b_) == np.shape(c) and a.dtype == b_.dtype
        np.testing.assert_allclose(a, b_, rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(a, c, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(found[0], np.stack([gradient(lambda v, k=k: layer(v, W, b)[k], x) for k in range(3)]),
                               rtol=1e-6, atol=1e-8)


def test_jacrev_at_numbers_float32_and_an_argument_without_a_gradient():
    x, W = RNG.normal(size=4).astype(np.float32), RNG.normal(size=(3, 4)).astype(np.float32)
    for wrt in ((0, 1, 2, 3), (2,), (3,)):
        found = astgrad.jacrev(unused_and_numbers, wrt=wrt)(x, W, 0.7, 2.0)
        expected = looped(lambda wrt=wrt: astgrad.jacrev(unused_and_numbers, wrt=wrt)(x, W, 0.7, 2.0))
        for a, b in zip(found, expected):
            assert np.shape(a) == np.shape(b) and np.result_type(a) == np.result_type(b)
            np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    s_row = astgrad.jacrev(unused_and_numbers, wrt=2)(x, W, 0.7, 2.0)
    np.testing.assert_allclose(s_row, 2 * 0.7 * np.tanh(W @ x), rtol=1e-5)


def test_jacrev_of_a_callee_is_batched_and_with_aux_takes_the_row_loop():
    x = np.array([0.3, -0.7, 1.1])
    jacobian = astgrad.jacrev(lambda v: helper(v) * 2.0)
    found = jacobian(x)
    np.testing.assert_allclose(found, np.diag(2 * (np.cos(x) * x + np.sin(x))), rtol=1e-13, atol=1e-15)
    assert jacobian.batched is True  # the vjp calls the callee's pair, which vmap batches

    def with_aux(v):
        return np.tanh(v), {"n": 1}

    jacobian = astgrad.jacrev(with_aux, has_aux=True)
    found, aux = jacobian(x)
    np.testing.assert_allclose(found, np.diag(1 - np.tanh(x) ** 2), rtol=1e-13, atol=1e-15)
    assert aux == {"n": 1} and jacobian.batched is False


def test_directions_of_big_arguments_run_in_chunks_with_the_same_numbers(monkeypatch):
    from astgrad.api import directions

    w, X, y = logistic_data()
    x, W, b = RNG.normal(size=4), RNG.normal(size=(3, 4)), RNG.normal(size=3)
    whole = (astgrad.hessian(logistic_loss)(w, X, y), astgrad.jacfwd(layer, wrt=(0, 1))(x, W, b),
             astgrad.jacrev(layer, wrt=(0, 1))(x, W, b))
    monkeypatch.setattr(directions, "CHUNK", 5 * (w.size + X.size + y.size))  # 5 directions a call: 3 calls
    hessian = astgrad.hessian(logistic_loss)
    np.testing.assert_allclose(hessian(w, X, y), whole[0], rtol=1e-14, atol=1e-16)
    assert hessian.batched is True
    monkeypatch.setattr(directions, "CHUNK", 2 * (x.size + W.size + b.size))  # 2 directions a call
    forward, reverse = astgrad.jacfwd(layer, wrt=(0, 1)), astgrad.jacrev(layer, wrt=(0, 1))
    for found, expected in zip(forward(x, W, b) + reverse(x, W, b), whole[1] + whole[2]):
        np.testing.assert_allclose(found, expected, rtol=1e-14, atol=1e-16)
    assert forward.batched and reverse.batched


SHIFT = np.array([0.5, -0.5, 1.0])


def with_keywords(x, W=None, *, scale=2.0, shift=SHIFT):
    W = np.eye(3) if W is None else W
    return np.sum(np.tanh(W @ x + shift) ** 2) * scale


def test_keyword_only_parameters_defaults_and_arguments_given_by_name():
    """The gradient's code has none of f's defaults: hessian passes every argument (it raised TypeError when a
    call left one to its default)."""
    x, W = RNG.normal(size=3), RNG.normal(size=(3, 3))
    for call in (lambda t: t(x), lambda t: t(x=x, W=W, scale=0.5), lambda t: t(x, W, shift=np.zeros(3))):
        hessian = astgrad.hessian(with_keywords)
        found = call(hessian)
        assert hessian.batched is True
        np.testing.assert_allclose(found, looped(lambda: call(astgrad.hessian(with_keywords))), rtol=1e-13, atol=1e-15)
        forward, reverse = astgrad.jacfwd(with_keywords), astgrad.jacrev(with_keywords)
        np.testing.assert_allclose(call(forward), call(astgrad.grad(with_keywords)), rtol=1e-13, atol=1e-15)
        np.testing.assert_allclose(call(reverse), call(astgrad.grad(with_keywords)), rtol=1e-13, atol=1e-15)
        assert forward.batched is True
        assert reverse.batched is True  # the vjp saves the branch on W on its stack, which vmap batches
    v = RNG.normal(size=3)
    np.testing.assert_allclose(astgrad.hvp(with_keywords)(x, v), astgrad.hessian(with_keywords)(x) @ v, rtol=1e-13)


def differences_to_the_fourth(x):
    return np.sum(np.diff(x) ** 4) + np.sum(np.diff(np.outer(x, x), n=2, axis=0) ** 3)


def test_hessian_through_np_diff_matches_differences_and_the_column_loop():
    """np.diff's reverse rule is differentiated again: it builds its pad widths whole (a list written item by
    item was refused by the aliasing check, so this hessian raised)."""
    x = np.array([0.3, -0.7, 1.1, 0.4])
    hessian = astgrad.hessian(differences_to_the_fourth)
    found = hessian(x)
    np.testing.assert_allclose(found, numeric_hessian(differences_to_the_fourth, x), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(differences_to_the_fourth)(x)), rtol=1e-12)
