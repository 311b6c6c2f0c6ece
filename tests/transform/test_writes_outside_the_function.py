"""Writes into a global's object (``config["lr"] = 0.1``, ``state.calls += 1``) run as written.

They carry no gradient: the generated code keeps them in the primal, once
per call as Python runs them, and the adjoint has nothing for them.  A
value that depends on a ``wrt`` argument stored there would come back as a
constant when read, a gradient silently lost: refused, located.
"""

import types

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import TransformError, UnsupportedSyntaxError
from _numeric import numeric_grad

CONFIG = {"lr": 0.0, "opt": {"steps": 0}}
STATE = types.SimpleNamespace(calls=0, last_scale=None)
CACHE = {}
X = np.array([0.5, -1.0, 2.0])


def configured(x, scale):
    CONFIG["lr"] = 0.1
    CONFIG["opt"]["steps"] += 1
    STATE.calls = STATE.calls + 1
    STATE.last_scale = scale
    CONFIG["seen"] = scale * 2.0
    return np.sum(np.sin(x) * CONFIG["lr"] * CONFIG["seen"])


def helper_counts(x):
    STATE.calls += 1
    return x * x


def calls_a_helper(x):
    total = 0.0
    for _ in range(3):
        total = total + np.sum(helper_counts(x))
    return total


def test_writes_into_a_global_dict_and_object_run_as_written():
    steps, calls = CONFIG["opt"]["steps"], STATE.calls
    got = astgrad.grad(configured)(X, 3.0)
    np.testing.assert_allclose(got, 0.1 * 6.0 * np.cos(X), rtol=1e-12)
    np.testing.assert_allclose(got, numeric_grad(configured, (X, 3.0), 0), rtol=1e-6)
    assert CONFIG["lr"] == 0.1 and CONFIG["seen"] == 6.0 and STATE.last_scale == 3.0
    after = CONFIG["opt"]["steps"], STATE.calls
    astgrad.grad(configured)(X, 3.0)
    assert (CONFIG["opt"]["steps"], STATE.calls) == (after[0] + 1, after[1] + 1)  # once per gradient call
    assert after[0] > steps and after[1] > calls


def test_a_called_function_writes_once_per_call():
    before = STATE.calls
    got = astgrad.grad(calls_a_helper)(X)
    np.testing.assert_allclose(got, 6.0 * X, rtol=1e-12)
    assert STATE.calls == before + 3


def into_a_global(x):
    CACHE["h"] = x * 2.0
    return np.sum(CACHE["h"])


def into_a_global_attribute(x):
    STATE.last = np.tanh(x)
    return np.sum(x)


def nested_into_a_global(x):
    CONFIG["opt"]["x"] = x[0]
    return np.sum(x * x)


@pytest.mark.parametrize("f", [into_a_global, into_a_global_attribute, nested_into_a_global])
def test_a_value_that_carries_a_gradient_is_refused(f):
    with pytest.raises(TransformError, match="depends on the differentiated arguments") as info:
        astgrad.grad(f)(X)
    assert "test_writes_outside_the_function.py" in str(info.value)


def attribute_of_a_local(x):
    y = types.SimpleNamespace()
    y.value = x
    return np.sum(x)


def test_an_attribute_of_a_local_is_still_refused():
    with pytest.raises(UnsupportedSyntaxError, match="assigning to an attribute"):
        astgrad.grad(attribute_of_a_local)(X)


WEIGHTS = np.array([1.0, 2.0, 3.0])


def into_a_global_array(x):
    y = np.sum(x * WEIGHTS)
    WEIGHTS[0] = 100.0
    return y


def test_a_write_into_a_global_array_raises_when_it_runs():
    # the adjoint of x * WEIGHTS reads WEIGHTS after the function ran: it would see 100.0
    with pytest.raises(TypeError, match="writes into a 'ndarray' object the function does not own") as info:
        astgrad.grad(into_a_global_array)(X)
    assert "test_writes_outside_the_function.py" in "".join(info.value.__notes__)
    assert WEIGHTS[0] == 1.0
