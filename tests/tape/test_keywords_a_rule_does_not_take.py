"""A keyword that changes numpy's value but not the rule's (``where=``, ``mean=``) is refused at the call.

Before, the tape recorded ``np.sum(t, where=m)`` and failed inside ``backward()``;
the generated engine said the arguments do not match a rule's private name.
Both now name the function, the keyword and what to write instead.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch

X = np.array([1.0, 2.0, 3.0])
M = np.array([True, False, True])

CALLS = {
    "sum where": (lambda a: np.sum(a * a, where=M), "numpy.sum", "where"),
    "mean where": (lambda a: np.mean(a * a, where=M), "numpy.mean", "where"),
    "var where": (lambda a: np.var(a, where=M), "numpy.var", "where"),
    "var mean": (lambda a: np.var(a, mean=np.mean(a, keepdims=True)), "numpy.var", "mean"),
    "std mean": (lambda a: np.std(a, mean=np.mean(a, keepdims=True)), "numpy.std", "mean"),
    "max initial": (lambda a: np.max(a, initial=0.0), "numpy.max", "initial"),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_tape_refuses_at_the_call(name):
    f, fn, key = CALLS[name]
    t = torch.tensor(X.copy(), requires_grad=True)
    with pytest.raises(TypeError, match=rf"{fn}'s gradient rule takes no {key}= argument"):
        f(t)
    with torch.no_grad():  # no gradient asked: numpy's value
        np.testing.assert_allclose(f(torch.tensor(X.copy())).numpy(), f(X.copy()))


def sum_where(a):
    return np.sum(a * a, where=M)


def var_with_mean(a):
    return np.var(a, mean=np.mean(a, keepdims=True))


@pytest.mark.parametrize("f, fn, key", [(sum_where, "numpy.sum", "where"), (var_with_mean, "numpy.var", "mean")])
def test_generated_refuses_at_the_line(f, fn, key):
    with pytest.raises(astgrad.TransformError, match=rf"{fn}'s gradient rule takes no {key}= argument") as error:
        astgrad.grad(f)(X.copy())
    assert "test_keywords_a_rule_does_not_take.py" in str(error.value)
