"""The tape's kernels (``_kernels``) give numpy's numbers, bit for bit, in numpy's dtype.

A kernel replaces a numpy function on the recording path; one that rounded
differently would change every taped value and gradient downstream without
an error.  Each is compared with the numpy function it stands for over
shapes, dtypes, layouts and keywords, on the values ``apply_op`` records
(a 0-d array where numpy gives a scalar).
"""

import itertools

import numpy as np
import pytest

from astgrad.tape import _kernels

SHAPES = [(), (1,), (3,), (7,), (2, 2), (3, 5), (4, 1, 3), (0,), (2, 0)]
DTYPES = [np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int64, np.bool_]


def _arrays():
    rng = np.random.default_rng(7)
    for shape, dtype in itertools.product(SHAPES, DTYPES):
        values = rng.standard_normal(shape) * 10 ** rng.uniform(-3, 3, shape)
        if np.dtype(dtype).kind == "c":
            values = values + 1j * rng.standard_normal(shape)
        array = np.asarray(values > 0 if dtype is np.bool_ else values).astype(dtype)
        yield array
        if array.ndim >= 1 and array.shape[-1] > 1:
            yield array[..., ::2]  # not contiguous
        if array.ndim == 2:
            yield array.T


def _same(mine, numpy_result):
    mine, theirs = np.asarray(mine), np.asarray(numpy_result)
    assert mine.dtype == theirs.dtype and mine.shape == theirs.shape
    assert mine.tobytes() == theirs.tobytes() or (np.isnan(mine).all() and np.isnan(theirs).all())


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning")
@pytest.mark.parametrize("kernel, fn, kwargs", [
    (_kernels.norm, np.linalg.norm, {}),
    (_kernels.mean, np.mean, {}),
    (_kernels.mean, np.mean, {"axis": None}),
    (_kernels.mean, np.mean, {"axis": 0}),
    (_kernels.sum, np.sum, {}),
    (_kernels.sum, np.sum, {"axis": -1, "keepdims": True}),
], ids=["norm", "mean", "mean-axis-None", "mean-axis-0", "sum", "sum-axis-keepdims"])
def test_kernel_gives_numpys_numbers(kernel, fn, kwargs):
    for array in _arrays():
        with np.errstate(all="ignore"):
            try:
                expected = fn(array, **kwargs)
            except (ValueError, TypeError, np.exceptions.AxisError) as error:
                with pytest.raises(type(error)):
                    kernel(array, **kwargs)
                continue
            _same(kernel(array, **kwargs), expected)


@pytest.mark.filterwarnings("ignore:Mean of empty slice:RuntimeWarning", "ignore:invalid value encountered")
@pytest.mark.parametrize("kwargs", [{}, {"axis": None}, {"axis": 0}, {"keepdims": True}],
                         ids=["all", "axis-None", "axis-0", "keepdims"])
def test_mean_vjp_kernel_gives_the_rules_numbers(kwargs):
    """The node's kernel for np.mean's reverse rule: the rule's own gradient, bit for bit, in its dtype."""
    from astgrad.rules.reductions import mean as rule
    for array in _arrays():
        with np.errstate(all="ignore"):
            try:
                ans = np.asarray(np.mean(array, **kwargs))
            except (ValueError, TypeError, np.exceptions.AxisError):
                continue
            for g in (np.ones_like(ans) * 0.37, 1.0, np.full(ans.shape, 3, dtype=np.float32)):
                try:
                    expected = rule(g, ans, array, **kwargs)
                except ZeroDivisionError:  # a Python float over no elements
                    with pytest.raises(ZeroDivisionError):
                        _kernels.mean_vjp(g, ans, array, **kwargs)
                    continue
                _same(_kernels.mean_vjp(g, ans, array, **kwargs), expected)
    assert _kernels.vjp_kernel(rule) is _kernels.mean_vjp
