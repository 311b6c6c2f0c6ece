"""check_grads and the gradcheck fixture: agreement, mismatch tables, skipped modes."""

import math
import textwrap

import numpy as np
import pytest

import astgrad
from astgrad.check import GradientMismatch, check_grads

TAPE_AND_NUMERIC = ("taped", "numeric")


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def test_agreeing_methods_return_a_report():
    report = check_grads(tutorial, np.ones((2, 2)), modes=TAPE_AND_NUMERIC)
    assert report.ok
    assert set(report.gradients) == {"taped", "numeric"}
    np.testing.assert_allclose(report.gradients["taped"][0], np.full((2, 2), 4.5))
    np.testing.assert_allclose(report.gradients["numeric"][0], np.full((2, 2), 4.5), rtol=1e-6)
    assert "| x | taped vs numeric |" in str(report)


def test_several_arguments_by_name_and_position():
    def f(a, b, c):
        return np.sum(np.sin(a) * b) + c

    report = check_grads(f, np.arange(3.0), np.ones(3), 2.0, wrt=("a", 1), modes=TAPE_AND_NUMERIC)
    np.testing.assert_allclose(report.gradients["taped"][0], np.cos(np.arange(3.0)))
    np.testing.assert_allclose(report.gradients["taped"][1], np.sin(np.arange(3.0)))


def test_non_scalar_output_is_checked_as_a_vector_jacobian_product():
    def f(x):
        return np.tanh(x) * x

    report = check_grads(f, np.linspace(-1, 1, 5), modes=TAPE_AND_NUMERIC)
    assert report.ok


def test_wrong_rule_is_caught_because_numeric_differences_disagree():
    @astgrad.primitive
    def cube(x):
        return x ** 3

    astgrad.defvjp(cube, lambda g, ans, x: g * 2 * x ** 2)  # wrong: should be 3 x**2

    def f(x):
        return np.sum(cube(x))

    with pytest.raises(GradientMismatch) as caught:
        check_grads(f, np.array([1.0, 2.0]), modes=TAPE_AND_NUMERIC)
    message = str(caught.value)
    assert isinstance(caught.value, AssertionError)
    assert "MISMATCH" in message and "taped vs numeric" in message
    row = caught.value.report.rows[0]
    assert row[2] == pytest.approx(4.0, rel=1e-4)  # at x = 2: 12 (true) vs 8 (wrong rule)
    assert row[4] == "[1]"


def test_a_mode_that_cannot_run_is_reported_as_skipped_with_its_reason():
    def f(x):
        return math.sin(x) * x

    with pytest.raises(GradientMismatch) as caught:
        check_grads(f, 0.7, modes=TAPE_AND_NUMERIC)
    assert "skipped taped" in str(caught.value)
    assert "fewer than two methods" in str(caught.value)


def test_large_inputs_use_a_random_direction():
    def f(x):
        return np.sum(np.exp(np.sin(x)) * x ** 2)

    x = np.linspace(-1, 1, 1000)
    report = check_grads(f, x, modes=TAPE_AND_NUMERIC)
    assert report.directional and report.ok
    assert np.ndim(report.gradients["numeric"][0]) == 0


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown modes"):
        check_grads(tutorial, np.ones(2), modes=("taped", "symbolic"))


USER_TESTS = textwrap.dedent(
    """
    import numpy as np
    import astgrad

    def loss(w):
        return np.sum(np.tanh(w) ** 2)

    @astgrad.primitive
    def bad_square(x):
        return x * x

    astgrad.defvjp(bad_square, lambda g, ans, x: g * x)   # should be 2 x

    def bad_loss(w):
        return np.sum(bad_square(w))

    def test_right(gradcheck):
        gradcheck(loss, np.array([0.1, -0.4, 0.9]), modes=("taped", "numeric"))

    def test_wrong(gradcheck):
        gradcheck(bad_loss, np.array([0.5, 1.5]), modes=("taped", "numeric"))
    """
)


def test_fixture_passes_a_right_function_and_fails_a_wrong_one_readably(pytester, monkeypatch):
    import os
    import pathlib

    package_root = str(pathlib.Path(astgrad.__file__).resolve().parents[1])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([package_root, os.environ.get("PYTHONPATH", "")]))
    pytester.makepyfile(test_user=USER_TESTS)
    from importlib.metadata import entry_points

    installed = any(ep.name == "astgrad.pytest_plugin" for ep in entry_points(group="pytest11"))
    extra = () if installed else ("-p", "astgrad.pytest_plugin")  # running from a source tree
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *extra)
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "gradients disagree" in output and "MISMATCH" in output
    assert "astgrad/check.py" not in output  # no traceback into the library


# ------------------------------------------------------------ all three methods


def loss_with_control_flow(w, x):
    h = np.tanh(x @ w)
    if np.sum(h) > 0:
        h = h * h
    return np.mean(h)


def test_generated_taped_and_numeric_agree():
    rng = np.random.default_rng(0)
    report = check_grads(loss_with_control_flow, rng.standard_normal((3, 2)), rng.standard_normal((4, 3)),
                         wrt=(0, 1))
    assert set(report.gradients) == {"generated", "taped", "numeric"} and not report.skipped
    assert len(report.rows) == 6 and report.ok


@astgrad.primitive
def softplus(x):
    return np.log1p(np.exp(x))


def softplus_total(x):
    return np.sum(softplus(x))


def test_wrong_rule_makes_both_engines_agree_and_the_numeric_estimate_object():
    astgrad.defvjp(softplus, lambda g, ans, x: g * np.exp(x))  # wrong: should be g * sigmoid(x)
    with pytest.raises(GradientMismatch) as caught:
        check_grads(softplus_total, np.array([-1.0, 0.5, 2.0]))
    rows = {row[1]: row[-1] for row in caught.value.report.rows}
    assert rows == {"generated vs taped": True, "generated vs numeric": False, "taped vs numeric": False}
    astgrad.defvjp(softplus, lambda g, ans, x: g / (1 + np.exp(-x)))  # the right rule
    assert check_grads(softplus_total, np.array([-1.0, 0.5, 2.0])).ok


def scaled_sine(x, scale):
    return math.sin(x) * scale


def test_python_float_arguments_skip_the_tape_with_a_reason():
    report = check_grads(scaled_sine, 0.7, 2.0, wrt=(0, 1))
    assert set(report.gradients) == {"generated", "numeric"}
    assert "Python float" in report.skipped["taped"]
    assert report.gradients["generated"][0] == pytest.approx(math.cos(0.7) * 2.0)


def large_valued(x):
    return np.sum(np.exp(x) * 1e5) + np.sum(x)


def test_numeric_rounding_noise_of_large_valued_functions_is_allowed_for():
    x = np.array([2.0, 3.0, 4.5])
    report = check_grads(large_valued, x)
    assert report.ok and report.numeric_noise > 1e-6
    np.testing.assert_allclose(report.gradients["generated"][0], np.exp(x) * 1e5 + 1)


def test_the_noise_allowance_does_not_hide_a_wrong_gradient():
    @astgrad.primitive
    def shifted_exp(x):
        return np.exp(x) * 1e5

    astgrad.defvjp(shifted_exp, lambda g, ans, x: g * ans * 1.001)  # 0.1% too large

    def f(x):
        return np.sum(shifted_exp(x))

    with pytest.raises(GradientMismatch):
        check_grads(f, np.array([2.0, 3.0]), modes=("taped", "numeric"))
