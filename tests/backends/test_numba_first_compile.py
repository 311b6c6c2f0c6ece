"""backend="numba": text that compiles in less time, and the numbers it still gives.

Two rewrites shorten what Numba compiles for a gradient: a callee pair called
once (outside loops and branches) hands its saves to its backward function
directly instead of through a list of one tuple (``callees.single_saves``),
and ``np.stack``'s gradient is cut into rows of the array's own layout
(``lower.rows``), so the helpers its items reach are not compiled a second
time for Numba's "any layout".  Each is checked where it applies and where it
must not (a callee called twice or in a loop, an array that is not
C-contiguous) against the numpy backend and central differences.
"""

import numpy as np
import pytest

import _numeric
import astgrad

numba = pytest.importorskip("numba")


def lotka_volterra(t, y, p):
    return np.array([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])


def rk4(f, y0, t, p):  # issue 32's S2: f called four times a step, its saves on a list
    ys = [y0]
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = ys[i]
        k1 = f(t[i], y, p)
        k2 = f(t[i] + h / 2, y + h / 2 * k1, p)
        k3 = f(t[i] + h / 2, y + h / 2 * k2, p)
        k4 = f(t[i] + h, y + h * k3, p)
        ys.append(y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4))
    return np.stack(ys)


def fit(p, y0, f, t):
    return np.sum((rk4(f, y0, t, p) - 0.5) ** 2)


def fit_twice(p, y0, f, t):
    return np.sum(rk4(f, y0, t, p) ** 2) + np.sum(rk4(f, 2.0 * y0, t, p))


def _check(fn, args, optimize=None):
    gradient = astgrad.grad(fn, wrt=(0,), backend="numba", optimize=optimize)
    got = gradient(*args)
    want = astgrad.grad(fn, wrt=(0,), optimize=optimize)(*args)
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    for position, a, b in zip((0,), got, want):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, _numeric.numeric_grad(fn, args, position), rtol=1e-6, atol=1e-8)
    return gradient.source


# optimize=0 and 1: Numba cannot type the list of loop counters the reverse loop pops there (an
# AssertionError in its type inference, before this rewrite too); the default level compiles
def test_a_callee_called_once_hands_its_saves_over_without_a_list():
    text = _check(fit, (np.array([1.1, 0.4, 0.9, 0.3]), np.array([1.0, 0.5]), lotka_volterra, np.linspace(0.0, 1.0, 5)))
    assert "_saves_forward_rk4" not in text and "backward_rk4(_saves," in text
    assert "_saves_forward_lotka_volterra.append(" in text  # called in a loop: a list, popped in the reverse loop
    assert "rows(" in text


def test_a_callee_called_twice_keeps_its_list_and_a_view_argument_gives_the_same_numbers():
    p = np.array([1.1, 0.0, 0.4, 0.0, 0.9, 0.0, 0.3])[::2]  # a view: not C-contiguous
    text = _check(fit_twice, (p, np.array([1.0, 0.5]), lotka_volterra, np.linspace(0.0, 1.0, 5)))
    assert "backward_rk4(_saves," not in text and text.count("= []") >= 2  # two calls: each pops from a list


def test_rows_are_lists_rows_and_keep_a_c_contiguous_arrays_layout():
    from astgrad.backends.numba import helpers, lower
    helpers.register()

    @numba.njit
    def cut(g):
        return lower.rows(g)

    base = np.arange(24.0).reshape(4, 6)
    for g in (base, base.reshape(2, 3, 4), np.asfortranarray(base), base[:, ::2], base[::-1], np.arange(5.0)):
        got = cut(g)
        assert len(got) == len(list(g))
        for a, b in zip(got, list(g)):
            np.testing.assert_array_equal(a, b)
    item = numba.typeof(base)
    rows = cut.overloads[(item,)].signature.return_type
    assert rows.dtype.layout == "C"  # the rows of a C-contiguous array: Numba's list(g) types them "A"
    assert cut.overloads[(numba.typeof(np.asfortranarray(base)),)].signature.return_type.dtype.layout == "A"



def _cube_sum(x):
    return np.sum(x ** 3) * 0.5


def test_the_first_compile_sets_the_collectors_objects_aside_and_puts_them_back(monkeypatch):
    """Numba's first compile runs with the process's objects frozen (compiled._freeze), the later calls
    without; afterwards the frozen count is what it was, and the gradient is the closed form's.  Where
    objects are frozen already (Python 3.12 starts with a few hundred) the compile leaves them alone."""
    import gc

    from astgrad.backends.numba import compiled
    froze = []
    monkeypatch.setattr(compiled, "_freeze", lambda real=compiled._freeze: froze.append(real()) or froze[-1])
    before = gc.get_freeze_count()
    x = np.linspace(-1.0, 2.0, 5)
    gradient = astgrad.grad(_cube_sum, backend="numba")
    np.testing.assert_allclose(gradient(x), 1.5 * x ** 2, rtol=1e-14)
    np.testing.assert_allclose(gradient(2 * x), 6.0 * x ** 2, rtol=1e-14)
    assert froze == [before == 0] and gc.isenabled()
    assert gc.get_freeze_count() == 0 if before == 0 else 0 < gc.get_freeze_count() <= before


def test_a_freeze_of_the_callers_and_a_disabled_collector_are_left_as_they_were():
    import gc
    x = np.linspace(-1.0, 2.0, 5)
    gc.freeze()  # the caller's own (a server before it forks): not undone
    try:
        frozen = gc.get_freeze_count()
        gradient = astgrad.grad(lambda y: np.sum(y ** 3) * 0.5, backend="numba")
        np.testing.assert_allclose(gradient(x), 1.5 * x ** 2, rtol=1e-14)
        assert 0 < gc.get_freeze_count() <= frozen  # some freed by their counts meanwhile; none put back
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        gradient = astgrad.grad(lambda z: np.sum(z ** 3) * 0.5, backend="numba")
        np.testing.assert_allclose(gradient(x), 1.5 * x ** 2, rtol=1e-14)
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.enable()
