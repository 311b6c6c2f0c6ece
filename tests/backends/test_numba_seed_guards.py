"""backend="numba": a callee's seed tested once, its item adds in place, and rows stacked by index.

Three rewrites shorten what Numba compiles for issue 32's S2 (RK4 taking a
right-hand side that returns ``np.array([...])`` of numbers):

* the numpy backend's ``computed_seeds`` (a callee's backward function
  tests its seed once, ``if not computed and is_zero(dresult): return ...``,
  and none of the sixteen rules after it) applies under Numba too: the
  guard returns zeros of the parameters (lower.py ``_seed_guard_zeros``),
  and every call passes ``computed`` so its calls compile one function;
* ``d = added_item(d, g, shape(x), i)`` for ``d = add_at(...)`` where ``d`` is
  the array ``scatter(..., shape(x), k)`` made just before (lower.py
  ``_items_added_in_place``): compiled, ``d[i] += g`` where the types allow;
* ``np.stack`` of 1-d arrays copies each row by index (helpers.py).

Each is checked where it applies and where its proof or its types fail (a
seed that is the placeholder, a negative index meeting a positive one, a row
of a 2-d array, a complex total, strided items) against the numpy backend
and central differences.  Numbers change only where a computed zero meets an
infinity: toward PyTorch's NaN, as the numpy backend gives at optimize=2.
"""

import numpy as np
import pytest

import _numeric
import astgrad

numba = pytest.importorskip("numba")


def rhs(t, y, p):  # S2's Lotka-Volterra, one item read through a negative index
    return np.array([p[0] * y[0] - p[1] * y[0] * y[-1], p[2] * y[0] * y[1] - p[3] * y[1]])


def steps(f, y0, t, p):
    ys = [y0]
    for i in range(len(t) - 1):
        h = t[i + 1] - t[i]
        y = ys[i]
        k1 = f(t[i], y, p)
        k2 = f(t[i] + h / 2, y + h / 2 * k1, p)
        ys.append(y + h / 2 * (k1 + k2))
    return np.stack(ys)


def fitted(p, y0, f, t, flag):
    """Heun's steps of ``f``; one more call of ``f`` whose value has a gradient on one branch only (on the
    other its seed is the placeholder), and one of a callee that reads rows of a 2-d array."""
    path = steps(f, y0, t, p)
    probe = f(0.0, y0, p)
    if flag > 0:
        extra = np.sum(probe * probe)
    else:
        extra = 0.0
    rows = np.stack([y0, 2.0 * y0])
    return np.sum((path - 0.5) ** 2) + extra + row_mix(rows, p)


def row_mix(rows, p):
    return np.sum(rows[0] * p[0] + rows[1] * p[1] - rows[-1] * p[2])


def _check(fn, args, wrt=(0,)):
    gradient = astgrad.grad(fn, wrt=wrt, backend="numba")
    got = gradient(*args)
    want = astgrad.grad(fn, wrt=wrt)(*args)
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    for position, a, b in zip(wrt, got, want):
        assert np.shape(a) == np.shape(b)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, _numeric.numeric_grad(fn, args, position), rtol=1e-6, atol=1e-8)
    return gradient


def test_a_callees_seed_is_tested_once_and_its_item_adds_run_in_place():
    t = np.linspace(0.0, 1.0, 6)
    p = np.array([1.1, 0.4, 0.9, 0.3, 0.0])[:4]
    gradient = _check(fitted, (p, np.array([1.0, 0.5]), rhs, t, 1))
    _check(fitted, (p, np.array([1.0, 0.5]), rhs, t, 0))
    text = gradient.source
    backward = text[text.index("def backward_rhs"):]
    backward = backward[:backward.index("\ndef ")]
    assert backward.count("is_zero(") == 1  # the seed's test, and no rule's
    assert "return zeros_like_gradient(y), zeros_like_gradient(p)" in backward
    assert "added_item(" in backward and "add_at(" not in backward
    # each call of backward_rhs passes ``computed`` (bool(...) where some pass True and some False)
    calls = [line for line in text.splitlines() if "backward_rhs(" in line and "def " not in line]
    assert calls and all(line.rstrip().endswith(("True)", "False)", "True))", "False))")) for line in calls)


def test_a_computed_zero_meeting_an_infinity_gives_the_numpy_backends_nan():
    def spread(y, p):
        return np.array([p[0] * y[0], p[1] * y[1]])

    def loss(p, y):
        return np.sum(spread(y, p) * np.array([0.0, 1.0]))

    p, y = np.array([0.5, 2.0]), np.array([np.inf, 3.0])
    want = astgrad.grad(loss)(p, y)
    got = astgrad.grad(loss, backend="numba")(p, y)
    np.testing.assert_array_equal(got, want)  # [nan, 3]: 0 * inf, as PyTorch gives
    assert np.isnan(got[0]) and got[1] == 3.0


def test_an_item_add_of_complex_numbers_into_a_complex_total_and_a_float_scale():
    def rotate(z, w):
        return np.array([w[0] * z[0] + w[1] * z[1], w[1] * z[0] - w[0] * z[-1]])

    def loss(w, z):
        return np.sum(np.abs(rotate(z, w)) ** 2)

    w, z = np.array([0.7, -0.2]), np.array([1.0 + 2.0j, -0.5 + 0.25j])
    want = astgrad.grad(loss)(w, z)
    got = astgrad.grad(loss, backend="numba")(w, z)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_allclose(got, _numeric.numeric_grad(loss, (w, z), 0), rtol=1e-6)


def test_rows_stacked_by_index_from_strided_items_and_refused_lengths():
    from astgrad.backends.numba import helpers
    from astgrad.backends.numba.shaping import stacked
    helpers.register()

    @numba.njit
    def stack(items):
        return stacked(items)

    m = np.arange(12.0).reshape(3, 4)
    items = [m[:, 0], m[:, 2], m[::-1, 3]]  # strided and reversed 1-d views
    np.testing.assert_array_equal(stack(items), np.stack(items))
    with pytest.raises(ValueError, match="same shape"):
        stack([m[:, 0], m[0, ::2]])


def test_an_item_added_in_place_only_where_the_types_allow_it():
    from astgrad.backends.numba import helpers, lower
    from astgrad.transform import runtime
    helpers.register()

    @numba.njit
    def add(total, g, index):
        return lower.added_item(total, g, total.shape, index)

    for total, g, index in [(np.zeros(3), 2.5, -1), (np.zeros(3), 2, 0),  # in place
                            (np.zeros((2, 3)), np.arange(3.0), 1),  # a row: add_at as written
                            (np.zeros(3), 1.0 + 2.0j, 2),  # a complex number widens a float array: as written
                            (np.zeros(3, dtype=complex), 1.5, 1)]:
        want = runtime.add_at(total.copy(), g, total.shape, index)
        got = add(total.copy(), g, index)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(IndexError):
        add(np.zeros(3), 1.0, 3)


def test_rk4s_right_hand_side_gradient_compiles_once_for_all_four_calls():
    from test_numba_first_compile import fit, lotka_volterra
    args = (np.array([1.1, 0.4, 0.9, 0.3]), np.array([1.0, 0.5]), lotka_volterra, np.linspace(0.0, 1.0, 5))
    gradient = _check(fit, args)
    # k2 and k3's seeds are proven computed (True), k1's and k4's are not (False): one function for both
    assert len(gradient._generated.namespace["backward_lotka_volterra"].signatures) == 1


def _squashed(a, b):  # its forward saves one value, the result: the guard has no parameter to take zeros of
    np.cos(a) / (b[0] * b + 1.0)
    return np.tanh(a)


def discarded(x, y):  # the call's value is overwritten unread: its backward gets the seed 0.0
    y = _squashed(np.roll(y, 1) + x, x)
    y = -(x * 2.0)
    return np.sum(y * y) + np.sum(x * y)


def kept(x, y):
    return np.sum(_squashed(x, y) * y) + np.sum(_squashed(y * 2.0, x))


@pytest.mark.parametrize("fn", [discarded, kept])
def test_a_guard_whose_forward_saves_one_value_returns_zeros_of_the_parameter(fn):
    """The forward pushes its result alone (not a tuple); the guard's ``0.0`` for ``a``'s gradient must be
    zeros of ``a`` where the rule's gradient is an array (Numba types the two returns as one), so the
    parameter joins the pushed value."""
    _check(fn, (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])), wrt=(0, 1))


def _second_only(a, b):  # ``a`` unread: its gradient is the number 0.0
    return b[0] * np.sqrt(b * b + 1.0)


def overwritten_by_a_call(x, y):
    y = np.sqrt(x * x + 1.0)
    for _ in range(2):
        x = _second_only(x, y * 0.5)  # dx = the call's gradient of x, 0.0, where the loop's other lines add arrays
    return np.sum(x * y)


def overwritten_once(x, y):
    x = _second_only(x, y) * np.tanh(x)
    return np.sum(x * y)


@pytest.mark.parametrize("fn", [overwritten_by_a_call, overwritten_once])
def test_a_callees_unread_parameter_gets_zeros_of_its_shape(fn):
    """``return 0.0, db``: the gradient of a parameter the callee never reads; compiled, zeros of the parameter
    (saved with the forward's values), so that the caller's gradient holds one type."""
    _check(fn, (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])), wrt=(0, 1))
