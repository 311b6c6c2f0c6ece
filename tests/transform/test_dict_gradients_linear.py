"""Dicts keyed by step cost one entry per step, not a copy of the dict.

``hs[t] = ...`` runs in place on a dict the function built (Python's own
write; the adjoint asks the dict only what it is), and the dict's gradient
is a ``GradientDict`` that only the generated code holds, so reading
``hs[t]`` adds one entry to it and ``hs[t] = v`` takes one out.  A copy per
step made a loop of n steps cost n * n.  The values are checked against
finite differences with reads of older steps and overwritten keys, where
an in-place slip would show.
"""

import numpy as np

import astgrad
from astgrad.rules.sequences import GradientDict
from astgrad.transform import runtime
from _numeric import numeric_grad

W = np.array([0.9, -0.7, 0.5])
X0 = np.array([0.3, 0.8, -0.6])


def steps(w, x0, n):
    hs = {}
    hs[-2] = x0 * 0.5
    hs[-1] = x0 * 1.0
    total = 0.0
    for t in range(n):
        hs[t] = np.tanh(w * hs[t - 1] + 0.3 * hs[t - 2])
        hs[t] = hs[t] * 1.1  # the key overwritten: the first value gets no gradient from later reads
        total = total + np.sum(hs[t] ** 2)
    return total + np.sum(hs[n - 1] * hs[0])


def test_a_long_dict_loop_matches_finite_differences():
    for wrt in (0, 1):
        got = astgrad.grad(steps, wrt=wrt)(W, X0, 40)
        np.testing.assert_allclose(got, numeric_grad(steps, (W, X0, 40), wrt), rtol=1e-6, atol=1e-9)


def test_the_primal_writes_the_dict_in_place():
    source = astgrad.show(steps)
    assert "put(hs, t," in source and "setitem(hs" not in source


def test_the_gradient_dict_grows_and_shrinks_in_place():
    items = {0: X0, 1: W}
    g = runtime.sequence_gradient(np.ones(3), items, 0)
    assert type(g) is GradientDict
    assert runtime.add_item(g, np.ones(3), items, 1) is g and set(g) == {0, 1}
    assert runtime.add_item(g, np.ones(3), items, 1) is g
    np.testing.assert_array_equal(g[1], 2.0 * np.ones(3))
    value = runtime.replacing_gradient(g, 1)
    assert runtime.replaced_gradient(g, 1) is g and set(g) == {0}
    np.testing.assert_array_equal(value, 2.0 * np.ones(3))


def test_a_dict_from_elsewhere_is_copied_once_not_changed():
    seed = {0: np.ones(3), 1: np.ones(3)}
    out = runtime.replaced_gradient(seed, 1)
    assert set(seed) == {0, 1} and set(out) == {0} and type(out) is GradientDict
    total = runtime.add_item(seed, np.ones(3), {0: X0}, 0)
    assert total is not seed and set(seed) == {0, 1}
    np.testing.assert_array_equal(seed[0], np.ones(3))
