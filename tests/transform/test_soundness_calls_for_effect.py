"""A user function called for its effect on a value that carries a gradient: exact, or refused.

A call whose result reaches nothing differentiated (``reset(params)``, or
``r = scale(y)`` with ``r`` unused) runs as written, untransformed.  Where
that function writes into what it is given, Python's values change and the
adjoint, which never saw the write, would give the gradient of the values as
they were before: ``reset(params)`` replacing ``params["W"]`` by zeros gave
the gradient 3 where finite differences give 0.  Such calls are refused at
the call, naming the line that may write; a function that only reads
(printing, numpy reductions) runs as written and the gradient is exact.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad


def scale_in_place(a):
    a *= 0.0


def zeroed_by_a_helper(x):
    y = x * 1.0
    scale_in_place(y)
    return np.sum(y * 3.0)


def reset(p):
    p["W"] = np.zeros(2)


def replaced_by_a_helper(params):
    reset(params)
    return np.sum(params["W"] * 3.0)


def result_unused(params):
    r = reset(params)  # noqa: F841
    return np.sum(params["W"] * 3.0)


def through_names_of_the_value(params):
    w = params
    reset_through_a_name(w)
    return np.sum(params["W"] * 3.0)


def reset_through_a_name(q):
    r = q
    r["W"] = r["W"] * 0.0


def stored_then_written(x):
    y = x * 1.0
    write_an_item_of_what_it_holds(y)
    return np.sum(y * 3.0)


def write_an_item_of_what_it_holds(a):
    box = []
    box.append(a)
    box[0][0] = 0.0


def shuffled_by_a_generator(x):
    y = x * 1.0
    shuffle(y)
    return np.sum(y * np.arange(3.0))


def shuffle(a):
    np.random.default_rng(0).shuffle(a)


@pytest.mark.parametrize("fn, arg, line", [
    (zeroed_by_a_helper, np.ones(3), "a *= 0.0"),
    (replaced_by_a_helper, {"W": np.ones(2)}, 'p["W"] = np.zeros(2)'),
    (result_unused, {"W": np.ones(2)}, 'p["W"] = np.zeros(2)'),
    (through_names_of_the_value, {"W": np.ones(2)}, 'r["W"] = r["W"] * 0.0'),
    (stored_then_written, np.ones(3), "box[0][0] = 0.0"),
    (shuffled_by_a_generator, np.array([1.0, 2.0, 3.0]), "shuffle(a)"),
])
def test_a_helper_that_may_write_into_a_value_with_a_gradient_is_refused_at_the_call(fn, arg, line):
    with pytest.raises(astgrad.TransformError, match="which carries a gradient, and may change it") as info:
        astgrad.grad(fn)(arg)
    assert line in str(info.value) and "test_soundness_calls_for_effect.py" in str(info.value)


def test_forward_mode_refuses_it_too():
    with pytest.raises(astgrad.TransformError, match="may change it"):
        astgrad.jvp(zeroed_by_a_helper)(np.ones(3), np.ones(3))


def report(x, log):
    log.append(f"mean {np.mean(x):.3f} of {len(x)}")
    print("norm", np.linalg.norm(x))


def reported(x, log):
    report(x, log)
    return np.sum(np.sin(x) * 2.0)


def test_a_helper_that_only_reads_runs_as_written():
    x = np.array([0.3, -0.2, 0.5])
    log = []
    got = astgrad.grad(reported)(x, log)
    np.testing.assert_allclose(got, 2.0 * np.cos(x), rtol=1e-14)
    np.testing.assert_allclose(got, numeric_grad(reported, (x, []), 0), rtol=1e-7)
    assert log == ["mean 0.200 of 3"]
