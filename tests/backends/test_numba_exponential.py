"""The compiled ``np.exp`` of a float64 array (backends/numba/exponential.py), and the sums of a step's numbers.

``exp_of`` is counted in units in the last place against the C library's
``exp`` (what Numba's own ``np.exp`` calls) over a million points, and
compared exactly where it hands an element to that ``exp`` (past 708 in
magnitude, infinities, NaN); numbers, float32, integer, empty, 0-d and
non-contiguous arrays give what Numba's ``np.exp`` gives.

A Monte-Carlo pricer (benchmarks/simulations.py's S13 in small) exercises
the rest at every optimize level against the numpy backend and central
differences: ``exp_of`` in the forward sweep, and the gradient of the
numbers ``vol`` and ``rate`` summed in one loop from names the reverse
sweep reads back from its stack (Numba types them "None or an array").
Where the proofs do not hold (``vol`` an array, so the sum is not to a
number; float32 normals meeting float64 numbers; the normals a transposed
view; an integer array) the text is computed as written and gives the
same numbers.
"""

import math

import numpy as np
import pytest

import _numeric
import astgrad

numba = pytest.importorskip("numba")


@pytest.fixture(scope="module")
def kernels():
    from astgrad.backends.numba import exponential, helpers
    helpers.register()
    return numba.njit(lambda x: exponential.exp_of(x)), numba.njit(lambda x: np.exp(x))


def _units(a, b):
    """The distance of two float64 arrays in units in the last place (both finite and of one sign here)."""
    return np.abs(a.view(np.int64) - b.view(np.int64))


def test_within_one_unit_of_the_c_library_and_exact_where_it_hands_over(kernels):
    fast, libm = kernels
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708, 708, 400_000), rng.uniform(-1, 1, 400_000),
                        rng.standard_normal(200_000) * 1e-9, [0.0, -0.0, 708.0, -708.0, 0.5 * math.log(2)]])
    assert _units(fast(x), libm(x)).max() <= 1
    past = np.array([708.0000001, -708.0000001, 709.78, 709.79, 710.0, 1e300, -720.0, -745.1, -745.2, -746.0,
                     -1e300, np.inf, -np.inf, np.nan])
    np.testing.assert_array_equal(fast(past), libm(past))  # inf, subnormals, 0, NaN: the C library's own
    mixed = np.concatenate([x[:1000], past])  # one element past the reach: the others keep the loop's values
    np.testing.assert_array_equal(fast(mixed)[1000:], libm(past))
    assert _units(fast(mixed)[:1000], libm(x[:1000])).max() <= 1


@pytest.mark.parametrize("kind", ["float", "float32 array", "int array", "empty", "0-d", "2-d", "transposed",
                                  "strided"])
def test_other_kinds_and_layouts_give_numbas_exp(kernels, kind):
    fast, libm = kernels
    m = np.random.default_rng(1).standard_normal((5, 4))
    x = {"float": 0.3, "float32 array": m.astype(np.float32), "int array": np.arange(-3, 4), "empty": np.zeros((0, 3)),
         "0-d": np.array(0.7), "2-d": m, "transposed": m.T, "strided": m[:, 1]}[kind]
    got, want = fast(x), libm(x)
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype
    np.testing.assert_allclose(got, want, rtol=3e-16, atol=0)


def asian(spot, vol, rate, z):
    n_paths, n_steps = z.shape
    dt = 1.0 / n_steps
    s = spot * np.ones(n_paths)
    total = np.zeros(n_paths)
    for j in range(n_steps):
        s = s * np.exp((rate - 0.5 * vol ** 2) * dt + vol * np.sqrt(dt) * z[:, j])
        total = total + s
    payoff = np.maximum(total / n_steps - 95.0, 0.0)
    return np.exp(-rate) * np.mean(payoff)


Z = np.random.default_rng(2).standard_normal((40, 5))
CASES = {
    "numbers": (100.0, 0.25, 0.03, Z),
    "vol an array": (100.0, np.full(40, 0.25), 0.03, Z),  # vol's gradient an array: not a sum to a number
    "float32 normals": (100.0, 0.25, 0.03, Z.astype(np.float32)),
    "a transposed view": (100.0, 0.25, 0.03, np.ascontiguousarray(Z.T).T),
    "integer normals": (100.0, 0.25, 0.03, np.round(Z).astype(np.int64)),
}


@pytest.mark.sweep(3)
@pytest.mark.parametrize("level", [0, 1, 2])
@pytest.mark.parametrize("case", list(CASES))
def test_the_pricers_gradient_is_numpys_and_central_differences(case, level):
    args = CASES[case]
    g = astgrad.grad(asian, wrt=(0, 1, 2), backend="numba", optimize=level)
    got = g(*args)
    if case == "numbers":
        assert "exp_of(" in g.source and ("held_shape(t5)" in g.source) == (level > 0)  # fused at level 1 and up
    for position, a, b in zip((0, 1, 2), got, astgrad.grad(asian, wrt=(0, 1, 2), optimize=level)(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(a, _numeric.numeric_grad(asian, args, position), rtol=1e-5, atol=1e-7)
