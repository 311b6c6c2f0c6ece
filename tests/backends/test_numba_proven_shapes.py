"""backend="numba": elementwise loops and adds at a slice without the line as written, where shapes are proven one.

An upwind step's four ``np.where`` lines are loops (loops.py's
``elementwise_tried``) whose test at run time, every array of one shape,
the shape analysis proves (front/same_shapes.py: slices of one array, a
gradient of its value's shape); ``proven_loops`` then drops the line as
written beside each loop, and ``proven_adds`` the ``total + scatter`` path of
``add_at`` where the total is proven of the shape it is added at.  Each
compiled gradient is compared with the numpy backend's and with central
differences; where the proof must fail (an operand of another shape, which
broadcasts) the line as written stays and gives numpy's numbers.  Small sizes,
each gradient compiled once.
"""

import numpy as np
import pytest

import _numeric
import astgrad

numba = pytest.importorskip("numba")

from astgrad.backends.numba import compiled as compiled_module, helpers, loops  # noqa: E402


def upwind(nu, u0, dx, dt, steps):
    u = u0.copy()
    for _ in range(steps):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    return np.sum(u ** 2) * dx


def upwind_masked(nu, u0, mask, dx, dt, steps):
    """``mask``, a parameter, has its own shape: nothing proves it the slices' (a (1,) mask broadcasts)."""
    u = u0.copy()
    for _ in range(steps):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(mask, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    return np.sum(u ** 2) * dx


U0 = np.array([0.3, -0.5, 1.2, 0.8, -0.1, 0.6, -0.9])


def _check(fn, args, wrt, optimize=None):
    gradient = astgrad.grad(fn, wrt=wrt, backend="numba", optimize=optimize)
    got = gradient(*args)
    want = astgrad.grad(fn, wrt=wrt, optimize=optimize)(*args)
    for position, a, b in zip(wrt, got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        numeric = _numeric.numeric_grad(lambda *xs: fn(*xs), args, position)
        np.testing.assert_allclose(np.asarray(a, dtype=np.float64), numeric, rtol=1e-5, atol=1e-7)
    return gradient


def test_the_upwind_steps_loops_run_without_the_lines_as_written_and_give_numpys_gradient():
    gradient = _check(upwind, (0.05, U0, 0.1, 0.01, 4), (0, 1))
    source = gradient.source
    assert source.count("elementwise_proven(") == 4 and "elementwise_tried(" not in source
    assert "chosen(saved_value" not in source  # no np.where as written, the loops' or a fallback's
    assert source.count("if _done") == source.count("add_elementwise(")  # only the adds keep a line as written
    assert "add_at_proven(du0, dahead, shape(u)" in source and " add_at(" not in source


@pytest.mark.parametrize("optimize", [0, 1])
def test_the_upwind_step_at_lower_levels_gives_numpys_gradient(optimize):
    _check(upwind, (0.05, U0, 0.1, 0.01, 3), (0, 1), optimize)


def test_float32_arrays_where_the_loop_does_not_run_give_numpys_gradient():
    """The loop runs on float64 arrays only: elsewhere ``elementwise_proven`` computes the line as written."""
    args = (0.05, U0.astype(np.float32), 0.1, 0.01, 3)
    got = astgrad.grad(upwind, wrt=(0, 1), backend="numba")(*args)
    want = astgrad.grad(upwind, wrt=(0, 1))(*args)
    for a, b in zip(got, want):
        assert np.asarray(a).dtype == np.asarray(b).dtype
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mask", [np.array([True]), np.array([True, False, False, True, True])],
                         ids=["broadcast", "slice-shaped"])
def test_a_mask_of_its_own_shape_proves_nothing_of_the_where_and_gives_numpys_gradient(mask):
    """No loop reads the mask (its shape unproven, the rule's products stay apart); the adds are proven."""
    gradient = _check(upwind_masked, (0.05, U0, mask, 0.1, 0.01, 3), (0, 1))
    assert "elementwise_proven(" not in gradient.source and "unbroadcast(chosen(mask, dt5, 0)" in gradient.source


def upwind_unproven(nu, u0, dx, dt, steps):
    u = u0.copy()
    for _ in range(steps):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    return np.sum(u ** 2) * dx


def test_where_the_proof_fails_the_lines_as_written_stay_and_give_numpys_gradient(monkeypatch):
    """The upwind step with the shape proof answering no: each loop keeps its test and the line as written
    beside it, and ``add_at`` its path for a total of another shape, as before the proof."""
    monkeypatch.setattr(compiled_module, "_one_shape", lambda ctx: lambda names: False)
    source = _check(upwind_unproven, (0.05, U0, 0.1, 0.01, 3), (0, 1)).source
    assert "elementwise_proven(" not in source and "add_at_proven(" not in source
    assert source.count("elementwise_tried(") == 4 and source.count("if _done") == 6


def upwind_state(nu, u0, dx, dt, steps):
    u = u0.copy()
    for _ in range(steps):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / dx
        u[1:-1] = u[1:-1] - dt * advect + nu * dt / dx ** 2 * (ahead - back)
    return u * 2.0


def test_a_vjp_seeds_the_proof_with_its_outputs_shape_and_gives_numpys_values():
    """The proof reads a gradient as of its value's shape; the seed of a vjp is refused at another shape."""
    seed = np.linspace(-1.0, 1.0, U0.size)
    pullback = astgrad.vjp(upwind_state, wrt=(0, 1), backend="numba")
    got = pullback(0.05, U0, 0.1, 0.01, 3, seed)
    want = astgrad.vjp(upwind_state, wrt=(0, 1))(0.05, U0, 0.1, 0.01, 3, seed)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    assert pullback.source.count("elementwise_proven(") == 4
    with pytest.raises(ValueError, match="seed has shape"):
        pullback(0.05, U0, 0.1, 0.01, 3, np.array([1.0]))


@pytest.fixture(scope="module")
def compiled():
    helpers.register()

    @numba.njit
    def proven(a, b, c):
        return loops.elementwise_proven("chosen(_0, (_1 * _2), (_1 * (-1.0)))", a, b, c)

    @numba.njit
    def added(total, g, to):
        return loops.add_at_proven(total, g, to, slice(1, None))
    return proven, added


def test_the_proven_helpers_compute_numpys_values(compiled):
    proven, added = compiled
    c, b, x = np.array([True, False, True]), np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    np.testing.assert_array_equal(proven(c, b, x), np.where(c, b * x, -b))
    np.testing.assert_array_equal(added(np.zeros(3), np.array([1.0, 2.0]), (3,)), [0.0, 1.0, 2.0])


def test_a_proof_that_failed_after_all_is_an_error_not_a_wrong_number(compiled):
    """The loops keep their test: shapes that differ raise (numpy would have broadcast)."""
    proven, added = compiled
    with pytest.raises(ValueError, match="proven one shape"):
        proven(np.array([True, False, True]), np.array([2.0]), np.array([4.0, 5.0, 6.0]))
    with pytest.raises(ValueError, match="proven one shape"):
        added(np.zeros(4), np.array([1.0, 2.0]), (3,))


@pytest.fixture(scope="module")
def writes():
    from astgrad.rules import _extra
    from astgrad.transform import runtime
    helpers.register()
    return numba.njit(lambda a, i, v: _extra.setitem(a, i, v)), numba.njit(lambda t, g, s, i: runtime.add_at(t, g, s, i))


BROADCASTS = [(np.s_[1:3], (2, 3)), (np.s_[1:3], (1, 3)), (np.s_[1:3], (3,)), (np.s_[1:3], (2, 1)), (np.s_[0:0], (1, 3)),
              (np.s_[1:3], (1, 1)), (np.s_[1:3], ()), (np.s_[1:3], (1,))]


def test_a_write_and_an_add_at_a_slice_broadcast_the_value_as_numpy_does(writes):
    """The loops of a write (and of an add) into a part broadcast the value themselves (no np.broadcast_to)."""
    setitem, add_at = writes
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 3))
    for index, shape in BROADCASTS:
        v = rng.normal(size=shape)
        want = a.copy()
        want[index] = v
        np.testing.assert_array_equal(setitem(a, index, v), want)
        want = a.copy()
        want[index] += v
        np.testing.assert_array_equal(add_at(a.copy(), v, a.shape, index), want)
    for index, shape in [(np.s_[1:3], (3, 3)), (np.s_[1:3], (2,)), (np.s_[0:0], (2, 3))]:
        v = rng.normal(size=shape)
        with pytest.raises(ValueError):
            a.copy()[index] = v
        with pytest.raises(ValueError):
            setitem(a, index, v)
        with pytest.raises(ValueError):
            add_at(a.copy(), v, a.shape, index)
