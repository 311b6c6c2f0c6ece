"""backend="numba": the pipeline astgrad compiles with rewrites array expressions only where operations fuse.

A single elementwise operation on arrays runs Numba's own implementation of
the operator (its ufunc loop) instead of an array expression of its own,
which would compile one more function; two or more operations that meet
are still one expression, one loop.  The values (and dtypes) must be the
ones Numba's default pipeline computes, for every operator and dtype the
generated code can meet, including division by zero, NaN, infinities,
integer floor division and powers, and mixed dtypes.
"""

import re

import numpy as np
import pytest

numba = pytest.importorskip("numba")

from astgrad.backends.numba import pipeline  # noqa: E402

_OPS = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b, "neg": lambda a, b: -a, "pos": lambda a, b: +a, "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b, "ne": lambda a, b: a != b, "eq": lambda a, b: a == b,
    "exp": lambda a, b: np.exp(a), "maximum": lambda a, b: np.maximum(a, b), "abs": lambda a, b: np.abs(a),
    "power": lambda a, b: np.power(a, b), "floor_divide": lambda a, b: np.floor_divide(a, b),
    "sqrt": lambda a, b: np.sqrt(a), "log": lambda a, b: np.log(a), "tanh": lambda a, b: np.tanh(a),
    "fused": lambda a, b: a * b + a / (b - 1.5),
}

_INPUTS = {
    "float64": (np.array([1.5, -2.0, 0.0, np.nan, np.inf, 3.0, -np.inf, -0.0, 1e308, 2.5]),
                np.array([0.0, 2.0, -0.0, 1.0, 2.0, -3.0, np.inf, 0.0, 10.0, np.nan])),
    "float32": (np.array([1.5, -2.0, 0.0, 7.0], np.float32), np.array([0.0, 2.0, 3.0, -1.5], np.float32)),
    "int64": (np.array([7, -7, 0, 5, 3]), np.array([2, 2, 3, 0, 1])),
    "mixed": (np.array([7, -7, 0, 5]), np.array([0.5, -2.0, 0.0, 3.0])),
    "scalar": (np.array([[1.0, 2.0], [-3.0, 0.5]]), 2.0),
}


def _compiled(fn, pipeline_class):
    return numba.njit(pipeline_class=pipeline_class)(fn)


@pytest.mark.parametrize("kind", sorted(_INPUTS))
@pytest.mark.parametrize("op", sorted(_OPS))
def test_values_are_numba_defaults_and_numpys(op, kind):
    fn = _OPS[op]
    a, b = _INPUTS[kind]
    if op in ("pow", "power") and kind == "int64":
        b = np.abs(b)  # numpy refuses negative integer powers
    default = _compiled(fn, None)(a, b)
    ours = _compiled(fn, pipeline.compiler())(a, b)
    assert ours.dtype == default.dtype
    np.testing.assert_array_equal(ours, default)


def test_floor_division_of_infinity_is_numpys_nan():
    # Numba's ufunc loop for ``//`` gives inf; numpy and Numba's array expression (kept for ``//``) give nan
    a, b = np.array([np.inf, -np.inf, 7.0]), np.array([2.0, 2.0, 2.0])
    with np.errstate(all="ignore"):
        expected = a // b
    np.testing.assert_array_equal(_compiled(_OPS["floordiv"], pipeline.compiler())(a, b), expected)


def _array_expressions(fn, *args):
    """How many array-expression functions the compiled ``fn`` defines in its LLVM module."""
    dispatcher = _compiled(fn, pipeline.compiler())
    dispatcher(*args)
    (text,) = dispatcher.inspect_llvm().values()
    return len(set(re.findall(r"define[^@]*@\S*__numba_array_expr_\w+", text)))


def test_single_operations_compile_no_expression_function_and_fused_ones_one():
    x = np.arange(4.0)

    def single(a, b):
        c = a * b
        d = c - a
        return np.exp(d)

    def fused(a, b):
        return np.exp(a * b - a)

    assert _array_expressions(single, x, x) == 0
    assert _array_expressions(fused, x, x) == 1


def test_numbas_own_rewrites_are_unchanged():
    from numba.core.rewrites import registry
    from numba.np.ufunc.array_exprs import RewriteArrayExprs
    pipeline.compiler()
    assert RewriteArrayExprs in registry.rewrite_registry.rewrites["after-inference"]
    x = np.arange(4.0)

    @numba.njit
    def single(a, b):
        return a * b

    single(x, x)
    (text,) = single.inspect_llvm().values()
    assert "__numba_array_expr_" in text
