"""backend="numba" where Numba cannot serve: a located error, or with backend="auto" numpy and one warning.

Never a different number: a global read at each call would be frozen into
the compiled code, so it is refused; an index past the end raises (see
test_numba_values); what Numba cannot compile names the user's line.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import astgrad

WEIGHTS = np.array([1.0, 2.0, 3.0])


def weighted(x):
    return np.sum(x * WEIGHTS)


def gathers(x):
    y = x * 2.0
    y = y * y
    total = 0.0
    for i in range(3):
        total = total + y[i] * y[i]
    return total


def test_import_and_the_numpy_backend_never_import_numba(tmp_path):
    script = tmp_path / "uses_numpy.py"
    script.write_text("import sys, numpy as np, astgrad\n"
                      "def f(x):\n    return np.sum(np.sin(x))\n"
                      "astgrad.grad(f)(np.ones(3))\n"
                      "assert 'numba' not in sys.modules, 'numba imported'\n")
    subprocess.run([sys.executable, str(script)], check=True)


def test_an_unknown_backend_is_refused_at_once():
    with pytest.raises(ValueError, match="the backends are 'numpy'"):
        astgrad.grad(weighted, backend="jax")


def test_a_global_read_at_each_call_is_refused_not_frozen():
    pytest.importorskip("numba")
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(weighted, backend="numba")
    message = str(info.value)
    assert "`WEIGHTS`" in message and "test_numba_refusals.py:21" in message
    assert "return np.sum(x * WEIGHTS)" in message and "pass `WEIGHTS` as an argument" in message


def test_auto_falls_back_to_numpy_with_one_warning_and_reads_the_global_live():
    with pytest.warns(RuntimeWarning, match="backend='auto' runs the numpy backend here") as caught:
        gradient = astgrad.grad(weighted, backend="auto")
    assert len(caught) == 1
    np.testing.assert_array_equal(gradient(np.ones(3)), WEIGHTS)
    WEIGHTS[0] = 10.0
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once, when the gradient was made
            np.testing.assert_array_equal(gradient(np.ones(3)), [10.0, 2.0, 3.0])
    finally:
        WEIGHTS[0] = 1.0


def test_what_numba_cannot_compile_names_the_user_line_and_numbas_reason():
    """The gradient of y (a local rebound) starts as the number 0.0 and becomes an array in the loop."""
    pytest.importorskip("numba")
    gradient = astgrad.grad(gathers, backend="numba")
    with pytest.raises(astgrad.TransformError) as info:
        gradient(np.arange(4.0))
    message = str(info.value)
    assert "test_numba_refusals.py:28" in message and "for i in range(3):" in message
    assert "Cannot unify" in message and "generated line" in message and "backend='numpy'" in message
    with pytest.warns(RuntimeWarning, match="Cannot unify"):
        fallback = astgrad.grad(gathers, backend="auto")(np.arange(4.0))
    np.testing.assert_array_equal(fallback, astgrad.grad(gathers)(np.arange(4.0)))
    np.testing.assert_array_equal(fallback, 64.0 * np.arange(4.0) ** 3 * [1, 1, 1, 0])  # d sum((2x)^4) over x[:3]


def test_without_numba_installed_numba_says_how_to_get_it_and_auto_uses_numpy(monkeypatch):
    from astgrad.backends.numba import compiled
    monkeypatch.setattr(compiled, "available", lambda: False)

    def square(x):
        return x * x
    with pytest.raises(astgrad.TransformError, match=r"pip install 'astgrad\[numba\]'"):
        astgrad.grad(square, backend="numba")
    with pytest.warns(RuntimeWarning, match="needs Numba"):
        assert astgrad.grad(square, backend="auto")(3.0) == 6.0


def cubed_count(x, n):
    return x * (n * n * n)


def test_integer_products_are_refused_where_64_bits_would_overflow_silently():
    """Python's 2**66 is 0 in 64-bit integers: compiled, the gradient would be 0.0."""
    pytest.importorskip("numba")
    assert astgrad.grad(cubed_count)(1.0, 2 ** 22) == 2.0 ** 66
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(cubed_count, backend="numba")(1.0, 2 ** 22)
    assert "multiplies integers" in str(info.value) and "return x * (n * n * n)" in str(info.value)
    with pytest.warns(RuntimeWarning, match="multiplies integers"):
        assert astgrad.grad(cubed_count, backend="auto")(1.0, 2 ** 22) == 2.0 ** 66


def test_a_gradient_of_a_generated_gradient_is_left_to_the_numpy_backend():
    def cube(x):
        return x * x * x
    with pytest.raises(ValueError, match="not of a generated gradient"):
        astgrad.grad(astgrad.grad(cube), backend="numba")
    assert astgrad.grad(astgrad.grad(cube))(2.0) == pytest.approx(12.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # without Numba installed, "auto" says it runs numpy
        inner = astgrad.grad(cube, backend="auto")
    with pytest.raises(TypeError, match="generated"):  # a numba gradient's generated code is not differentiated
        astgrad.grad(inner)


def reciprocal(x):
    return 1.0 / x


def test_a_failure_only_the_compiled_code_has_is_said_and_auto_runs_numpy():
    """Numba divides numbers as Python does (ZeroDivisionError); numpy's float64 gives inf:
    the compiled code raises where the numpy adjoint returns -inf."""
    pytest.importorskip("numba")
    zero = np.float64(0.0)
    with np.errstate(divide="ignore"):
        expected = astgrad.grad(reciprocal)(zero)
        assert expected == -np.inf
        with pytest.raises(ZeroDivisionError) as info:
            astgrad.grad(reciprocal, backend="numba")(zero)
        assert "the numpy backend does not raise here" in "".join(info.value.__notes__)
        auto = astgrad.grad(reciprocal, backend="auto")
        with pytest.warns(RuntimeWarning, match="where numpy does not"):
            assert auto(zero) == expected
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # said once
            assert auto(zero) == expected


def scaled_sines(x):
    y = np.sin(x) * 3.0  # the line whose adjoint Numba's compiler is made to fail on below
    return np.sum(y * y)


def _compiler_fails_at(monkeypatch, name):
    """Numba's type inference raising a bare AssertionError (as it does on some lists of loop counters) while
    typing the variable ``name`` of the generated code."""
    from numba.core import typeinfer
    real = typeinfer.TypeInferer.add_type

    def add_type(self, var, tp, loc, unless_locked=False):
        if var == name:
            assert False  # noqa: B011  (a bare AssertionError, with no message, as Numba's own)
        return real(self, var, tp, loc, unless_locked)
    monkeypatch.setattr(typeinfer.TypeInferer, "add_type", add_type)


def test_an_assertion_inside_numbas_compiler_is_a_located_refusal(monkeypatch):
    pytest.importorskip("numba")
    gradient = astgrad.grad(scaled_sines, backend="numba")
    _compiler_fails_at(monkeypatch, "dx")  # the gradient's name, bound under the user's line 2 (its adjoint)
    with pytest.raises(astgrad.TransformError) as info:
        gradient(np.linspace(0.1, 1.0, 4))
    message = str(info.value)
    assert "Numba cannot compile the gradient of this line: AssertionError inside Numba's compiler" in message
    assert "y = np.sin(x) * 3.0" in message and "test_numba_refusals.py:149" in message and "backend='numpy'" in message
    assert "raised by the Numba-compiled gradient" not in message


def test_auto_runs_numpy_where_numbas_compiler_raises(monkeypatch):
    pytest.importorskip("numba")
    gradient = astgrad.grad(scaled_sines, backend="auto")
    _compiler_fails_at(monkeypatch, "dx")
    x = np.linspace(0.1, 1.0, 4)
    with pytest.warns(RuntimeWarning, match="AssertionError inside Numba's compiler"):
        got = gradient(x)
    np.testing.assert_allclose(got, 18.0 * np.sin(x) * np.cos(x), rtol=1e-13)
