"""A generated module runs in a plain dict where it reads nothing live, in a ``LiveGlobals`` where it does.

CPython caches a global read only in a plain dict; ``LiveGlobals`` (a
subclass) reads the user's globals and closures anew on every call.  The
gradient of a function that reads a global array or a closure's number must
still see the value it has at each call.
"""

import numpy as np

import astgrad
from astgrad.transform.back.namespace import LiveGlobals

WEIGHTS = np.array([1.0, 2.0, 3.0])


def _plain(x):
    return np.sum(np.sin(x) * x)


def _reads_a_global(x):
    return np.sum(WEIGHTS * x * x)


def test_a_module_reading_nothing_live_runs_in_a_plain_dict():
    g = astgrad.grad(_plain)
    x = np.array([0.1, 0.2, 0.3])
    np.testing.assert_allclose(g(x), np.cos(x) * x + np.sin(x))
    assert type(g._generated.function.__globals__) is dict


def test_a_global_array_rebound_between_calls_is_seen():
    global WEIGHTS
    g = astgrad.grad(_reads_a_global)
    x = np.array([0.5, -1.0, 2.0])
    saved = WEIGHTS
    try:
        np.testing.assert_allclose(g(x), 2 * WEIGHTS * x)
        assert isinstance(g._generated.function.__globals__, LiveGlobals)
        WEIGHTS = np.array([-1.0, 0.5, 4.0])
        np.testing.assert_allclose(g(x), 2 * WEIGHTS * x)
    finally:
        WEIGHTS = saved


def test_a_closure_number_changed_between_calls_is_seen():
    scale = 2.0

    def f(x):
        return np.sum(scale * x ** 3)
    g = astgrad.grad(f)
    x = np.array([1.0, -2.0])
    np.testing.assert_allclose(g(x), 3 * scale * x ** 2)
    scale = 5.0
    np.testing.assert_allclose(g(x), 3 * scale * x ** 2)
