"""A call run as written (its result unused, no rule) that is given a value carrying a gradient and stores it.

``dense1.forward(x)`` storing ``self.output = x @ self.W`` and then
``np.sum(dense1.output)``, or ``KEPT.append(x * 2.0)`` then ``KEPT[-1]``:
the generated code runs the call as written, and what it stored, read
back, is a constant to the adjoint.  That gradient was a silent zero; it
is now refused where the call runs, located.  A call that stores nothing
(it prints) still runs.
"""

import numpy as np
import pytest

import astgrad


class Dense:
    def __init__(self, W):
        self.W = W

    def forward(self, x):
        self.output = x @ self.W


dense1 = Dense(np.ones((3, 2)))
KEPT: list = []


def through_a_layer_object(x):
    dense1.forward(x)
    return np.sum(dense1.output)


def through_a_global_list(x):
    KEPT.append(x * 2.0)
    return np.sum(KEPT[-1])


def report(v):
    print("norm", np.sum(v))


def reported(x):
    report(x)
    return np.sum(x * 3.0)


@pytest.mark.parametrize("f, line", [(through_a_layer_object, "dense1.forward(x)"),
                                     (through_a_global_list, "KEPT.append(x * 2.0)")])
def test_a_stored_value_that_carries_a_gradient_is_refused_where_the_call_runs(f, line):
    with pytest.raises(TypeError, match="carries a gradient") as info:
        astgrad.grad(f)(np.ones((2, 3)))
    assert line in str(info.value)
    assert any(line in note for note in info.value.__notes__)


def test_a_call_that_stores_nothing_still_runs(capsys):
    np.testing.assert_allclose(astgrad.grad(reported)(np.ones(2)), [3.0, 3.0])
    assert "norm 2.0" in capsys.readouterr().out


def test_the_same_calls_on_constants_still_run():
    def constant(x):
        dense1.forward(np.ones((1, 3)))
        KEPT.append(np.zeros(2))
        return np.sum(x * np.sum(dense1.output))
    np.testing.assert_allclose(astgrad.grad(constant)(np.ones(2)), [6.0, 6.0])
