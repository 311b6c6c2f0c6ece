"""numpy's ufuncs with two outputs on the tape: each output its own value, the piecewise constant ones without
a gradient, and keyword arguments refused rather than recorded as numpy's defaults."""

import numpy as np
import pytest

import astgrad


def test_the_tape_returns_both_outputs_as_numpy_does():
    x = np.array([2.3, -1.7, 5.5])
    y = np.array([0.7, 0.9, 1.3])
    t, u = astgrad.tensor(x, requires_grad=True), astgrad.tensor(y, requires_grad=True)
    for got, want in zip(np.divmod(t, u), np.divmod(x, y)):
        np.testing.assert_array_equal(got.detach().numpy(), want)
    for got, want in zip(np.modf(t), np.modf(x)):
        np.testing.assert_array_equal(got.detach().numpy(), want)
    for got, want in zip(np.frexp(t), np.frexp(x)):
        np.testing.assert_array_equal(got.detach().numpy(), want)
    quotient, remainder = np.divmod(t, u)
    assert not quotient.requires_grad and remainder.requires_grad


def test_keyword_arguments_are_refused_on_the_tape():
    t = astgrad.tensor(np.array([1.5, 2.5]), requires_grad=True)
    with pytest.raises(TypeError, match="numpy.modf on a Tensor takes no keyword arguments"):
        np.modf(t, casting="unsafe")
