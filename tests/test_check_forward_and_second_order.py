"""check_grads with modes=("rev", "fwd") and order=2 (HIPS autograd's spelling), in one table.

The adversarial case: a rule whose first derivative is right and whose own
derivative is wrong (it reads its input through np.round, which has no
derivative) passes every first-order check; order=2 must catch it.
"""

import numpy as np
import pytest

import astgrad
from astgrad import GradientMismatch, check_grads

X = np.array([0.3, -0.2, 0.5])


def wave(x):
    return np.sum(np.sin(x) * x ** 2)


def test_forward_and_second_order_rows_share_the_table():
    report = check_grads(wave, X, modes=("rev", "fwd"), order=2)
    labels = {row[0] for row in report.rows}
    assert labels == {"x", "x (fwd)", "x (rev, order 2)", "x (fwd, order 2)"}
    pairs = {(row[0], row[1]) for row in report.rows}
    for label in ("x (fwd)", "x (rev, order 2)", "x (fwd, order 2)"):
        assert {(label, "generated vs taped"), (label, "generated vs numeric")} <= pairs
    assert not report.skipped


def test_second_order_values_are_hessian_vector_products():
    report = check_grads(wave, X, modes=("rev",), order=2)
    hv = report.gradients["generated (rev, order 2)"][0]
    rng = np.random.default_rng(7)
    v = rng.standard_normal(3)
    hessian = np.diag((2 - X ** 2) * np.sin(X) + 4 * X * np.cos(X))
    np.testing.assert_allclose(hv, hessian @ v, rtol=1e-12)


def test_fwd_alone_checks_tangents_only():
    report = check_grads(wave, X, modes=("fwd",))
    assert {row[0] for row in report.rows} == {"x (fwd)"}


def test_a_wrong_second_derivative_passes_order_1_and_fails_order_2(isolated_rules):
    @astgrad.primitive
    def cube(x):
        return x ** 3

    astgrad.defvjp(cube, lambda g, ans, x: g * 3 * np.round(x, 12) ** 2)
    astgrad.defjvp(cube, lambda t, ans, x: t * 3 * np.round(x, 12) ** 2)

    def f(x):
        return np.sum(cube(x))

    check_grads(f, X, modes=("rev", "fwd"))
    with pytest.raises(GradientMismatch) as info:
        check_grads(f, X, modes=("rev", "fwd"), order=2)
    failing = {row[0] for row in info.value.report.rows if not row[-1]}
    assert failing == {"x (rev, order 2)", "x (fwd, order 2)"}


def test_a_non_scalar_function_skips_generated_second_order_with_a_reason():
    W = np.full((2, 3), 0.3)

    def layer(W, x):
        return np.tanh(W @ x)

    report = check_grads(layer, W, X, wrt=(0, 1), modes=("rev", "fwd"), order=2)
    assert "scalar output" in report.skipped["generated (rev, order 2)"]
    assert {"W (rev, order 2)", "x (fwd, order 2)", "W (fwd)"} <= {row[0] for row in report.rows}


def test_unknown_modes_and_orders_are_refused():
    with pytest.raises(ValueError, match="unknown modes"):
        check_grads(wave, X, modes=("sideways",))
    with pytest.raises(ValueError, match="order=3"):
        check_grads(wave, X, order=3)
