"""Batching rules of numpy's main namespace, the layers and the losses, against a Python loop over examples.

tests/rules/test_batching_rules.py checks every entry with a sample case
whose float arguments are batched; these check what it does not reach:
entries without a gradient (comparisons, lookups, tests of whole arrays),
batched integer and bool arguments (indices, targets, counts), batch axes
other than the first beside shared arguments, arguments of several ranks,
and the calls a rule refuses (an error, never a guess).
"""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from astgrad.rules.batching import Unbatchable
from astgrad.rules.losses import embedding, nll_loss, safe_targets, target_weights
from astgrad.rules.sliding_windows import max_pool_indices

N = 3


def _loop(f, in_axes, args):
    """``f`` of each example, stacked: a batched argument's example ``k`` is its item ``k`` along its axis."""
    results = [f(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, in_axes)]) for k in range(N)]
    if isinstance(results[0], (tuple, list)):
        return type(results[0])(np.stack([np.asarray(r[i]) for r in results]) for i in range(len(results[0])))
    return np.stack([np.asarray(r) for r in results])


def _same(batched, looped):
    if isinstance(looped, (tuple, list)):
        assert isinstance(batched, (tuple, list)) and len(batched) == len(looped)
        for b, loop in zip(batched, looped):
            _same(b, loop)
        return
    batched = np.asarray(batched)
    assert batched.shape == looped.shape
    if looped.dtype.kind in "biu":
        assert batched.dtype.kind == looped.dtype.kind
        np.testing.assert_array_equal(batched, looped)
    else:
        np.testing.assert_allclose(batched, looped, rtol=1e-10, atol=1e-12)


def check(f, in_axes, *args):
    _same(astgrad.vmap(f, in_axes=in_axes)(*args), _loop(f, in_axes, args))


rng = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def _seeded():
    """Each test's draws, whatever ran before it."""
    global rng
    rng = np.random.default_rng(0)


# -- entries without a gradient ------------------------------------------------------------------

def comparisons(x, y):
    a, b = x > y, np.less_equal(x, y)
    masks = np.logical_and(a, ~b) ^ np.logical_or(a, b) | np.logical_xor(a, np.logical_not(b))
    counts = np.bitwise_and(np.floor_divide(x * 10, 3).astype(int), 6) | np.bitwise_or(np.invert(a).astype(int), 8)
    tests = np.isfinite(x) + np.isinf(y) + np.isnan(x) + np.equal(x, y) + np.not_equal(x, y) + np.greater(x, y)
    return masks + counts + tests + np.greater_equal(x, y) + np.less(x, y)


def whole_arrays(x, y):
    close = np.allclose(x, y, atol=0.6) + 2 * np.array_equal(x, x) + 4 * np.array_equal(x, y)
    return close + np.count_nonzero(x > 0.5) + np.count_nonzero(x > y, axis=-1)


def lookups(x, bins):
    return np.digitize(x, bins) + np.searchsorted(bins, x, side="right") + (np.result_type(x, bins) == np.float64)


@pytest.mark.parametrize("f", [comparisons, whole_arrays])
@pytest.mark.parametrize("in_axes", [0, (1, None), (None, -1)])
def test_entries_without_a_gradient_match_a_loop(f, in_axes):
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes, in_axes)
    shapes = {0: (N, 2, 4), 1: (2, N, 4), -1: (2, 4, N), None: (2, 4)}
    x, y = (rng.uniform(size=shapes[a]) for a in axes)
    check(f, axes, x, y)


@pytest.mark.parametrize("in_axes", [(0, None), (1, None)])
def test_lookups_in_shared_bins_match_a_loop(in_axes):
    x = rng.uniform(size=(N, 5) if in_axes[0] == 0 else (5, N))
    check(lookups, in_axes, x, np.linspace(0.1, 0.9, 4))


def test_lookups_in_bins_of_each_example_are_refused():
    with pytest.raises((astgrad.TransformError, Unbatchable), match="astgrad.vmap"):
        astgrad.vmap(lookups, in_axes=(None, 0))(np.linspace(0, 1, 5), np.sort(rng.uniform(size=(N, 4)), axis=1))


# -- batched integer and bool arguments -------------------------------------------------------------

def taken(a, indices):
    return np.take_along_axis(a, indices, 1) + np.take_along_axis(a, indices, axis=-1)


@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None), (2, 1)])
def test_take_along_axis_with_indices_of_each_example(in_axes):
    a = rng.standard_normal({0: (N, 3, 4), None: (3, 4), 2: (3, 4, N)}[in_axes[0]])
    indices = rng.integers(0, 4, {0: (N, 3, 2), None: (3, 2), 1: (3, N, 2)}[in_axes[1]])
    check(taken, in_axes, a, indices)


def counted(x, w):
    return np.bincount(x, w, 6) + np.bincount(x, minlength=6)


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0), (1, 0)])
def test_bincount_of_each_examples_values(in_axes):
    x = rng.integers(0, 5, {0: (N, 7), None: (7,), 1: (7, N)}[in_axes[0]])
    w = rng.uniform(size={0: (N, 7), None: (7,)}[in_axes[1]])
    check(counted, in_axes, x, w)


def bincount(x):
    return np.bincount(x)


def bincount_of_five(x):
    return np.bincount(x, None, 5)


def test_bincount_of_examples_whose_counts_differ_in_length_raises():
    x = np.array([[0, 1, 2], [0, 1, 4], [1, 1, 1]])
    with pytest.raises(Unbatchable, match="different lengths"):
        astgrad.vmap(bincount)(x)
    check(bincount_of_five, (0,), x)


def losses_of_targets(scores, target, table):
    picked = nll_loss(scores, target, None, 2, "sum") + nll_loss(scores, target)
    weights = target_weights(scores, target, np.array([1.0, 2.0, 3.0, 4.0]), 2)
    return picked + np.sum(weights) + np.sum(embedding(table, safe_targets(target, 2)))


@pytest.mark.parametrize("in_axes", [(0, 0, None), (None, 0, 0), (0, None, 0), (1, 1, None)])
def test_losses_with_targets_of_each_example(in_axes):
    scores = rng.standard_normal({0: (N, 5, 4), None: (5, 4), 1: (5, N, 4)}[in_axes[0]])
    target = rng.integers(0, 4, {0: (N, 5), None: (5,), 1: (5, N)}[in_axes[1]])
    table = rng.standard_normal({0: (N, 4, 2), None: (4, 2)}[in_axes[2]])
    check(losses_of_targets, in_axes, scores, target, table)


def chosen(x, y, z):
    return np.select([x > 0, y > 0.5], [x * 2.0, y], z) + np.select([x < 0], [z])


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, None), (None, 0, None), (None, None, 0), (1, None, 0)])
def test_select_with_conditions_and_choices_of_several_ranks(in_axes):
    x = rng.standard_normal({0: (N, 3, 4), None: (3, 4), 1: (3, N, 4)}[in_axes[0]])
    y = rng.standard_normal({0: (N, 4), None: (4,)}[in_axes[1]])
    z = rng.standard_normal({0: (N, 3, 4), None: (3, 4)}[in_axes[2]])
    check(chosen, in_axes, x, y, z)


def pooled_indices(x):
    return max_pool_indices(x, (2, 2), (1, 2), ((0, 1), (1, 0)), (1, 1))


def test_max_pool_indices_of_each_example():
    check(pooled_indices, (1,), rng.standard_normal((2, N, 3, 5, 4)))


# -- several ranks, axes and settings ----------------------------------------------------------------

def dots(a, b):
    return np.vecdot(a, b) + np.vecdot(a, b, axis=0)


@pytest.mark.parametrize("in_axes,shapes", [((0, 0), [(N, 3, 3), (N, 3, 3)]), ((0, None), [(N, 3, 3), (3,)]),
                                            ((None, 1), [(3, 3), (3, N)]), ((2, None), [(3, 3, N), (3, 3)])])
def test_vecdot_contracts_each_operands_own_axis(in_axes, shapes):
    a, b = (rng.standard_normal(s) for s in shapes)
    check(dots, in_axes, a, b)


@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("n,m", [(5, 3), (3, 5), (4, 4), (2, 6), (6, 2), (1, 3)])
def test_convolve_and_correlate_of_vectors_of_each_example(mode, n, m):
    a = rng.standard_normal((N, n)) + 1j * rng.standard_normal((N, n))
    v = rng.standard_normal((m, N))

    def both(a, v):
        return np.convolve(a, v, mode) + np.correlate(a, v, mode) * 2 + np.correlate(v, a, mode)
    check(both, (0, 1), a, v)
    check(both, (None, 1), a[0], v)


def interpolated(x, xp, fp):
    return np.interp(x, xp, fp) + np.interp(x, xp, fp, -5.0, 7.0)


@pytest.mark.parametrize("in_axes", [(0, None, None), (None, 0, None), (None, None, 0), (0, 0, 0), (1, None, 0)])
def test_interp_with_points_and_values_of_each_example(in_axes):
    xp = np.sort(rng.uniform(0.1, 1, (N, 5)), axis=1)
    xp[:, 0], xp[0, 2] = 0.05, xp[0, 1]  # a repeated point in an example's xp: refused
    fp = rng.standard_normal((N, 5))
    x = np.concatenate([rng.uniform(-0.2, 1.2, (N, 6)), xp[:, :2], np.full((N, 1), np.nan)], axis=1)
    args = [x if in_axes[0] == 0 else x.T if in_axes[0] == 1 else x[0], xp if in_axes[1] == 0 else xp[1],
            fp if in_axes[2] == 0 else fp[0]]
    if in_axes[1] == 0:
        with pytest.raises(Unbatchable, match="increase strictly"):
            astgrad.vmap(interpolated, in_axes=in_axes)(*args)
        args[1] = np.sort(rng.uniform(0, 1, (N, 5)), axis=1) + np.arange(5) * 1e-3
    check(interpolated, in_axes, *args)


def shaped(x, y):
    grids = np.meshgrid(x, y, sparse=False)
    sparse = np.meshgrid(y, x, indexing="ij", sparse=True)
    joined = np.append(x, y) + np.sum(np.append(x[None], x[None], axis=0))
    return (np.atleast_3d(x), np.atleast_2d(y), grids[0] * grids[1], sparse[0] + sparse[1], joined,
            np.rot90(np.atleast_2d(x) * y[:, None], 1, (1, 0)), np.diagflat(y, -1), np.kron(x, y), np.vander(y, 3),
            np.ediff1d(x, to_begin=y[:1], to_end=2.0), np.broadcast_arrays(x[:, None], y)[0])


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1)])
def test_shapes_of_each_example(in_axes):
    x = rng.standard_normal({0: (N, 3), None: (3,)}[in_axes[0]])
    y = rng.standard_normal({0: (N, 4), None: (4,), 1: (4, N)}[in_axes[1]])
    check(shaped, in_axes, x, y)


def padded(x):
    return (np.pad(x, 1), np.pad(x, ((1, 2), (0, 1)), "reflect"), np.pad(x, (2, 1), "edge"),
            np.pad(x, ((1, 1), (2, 0)), "constant", constant_values=((1.0, 2.0), (3.0, 4.0))),
            np.pad(x, 2, "linear_ramp", end_values=(5.0, -1.0)), np.pad(x, 1, "mean", stat_length=2),
            np.pad(x, 3, "wrap"), np.pad(x, (1, 2), "symmetric", reflect_type="odd"))


@pytest.mark.parametrize("in_axes", [0, 1, 2])
def test_pad_adds_nothing_along_the_batch_axis(in_axes):
    x = np.moveaxis(rng.standard_normal((N, 3, 4)), 0, in_axes)
    check(padded, (in_axes,), x)


def statistics(x, q):
    return (np.quantile(x, q, axis=1), np.percentile(x, q * 100, axis=(0, 1), keepdims=True),
            np.median(x, axis=-1), np.nanvar(x, axis=0, ddof=1), np.amax(x, axis=(0, 2)), np.amin(x, axis=1),
            np.partition(x, 1, axis=None), np.trapezoid(x, dx=0.5, axis=1), np.cumulative_sum(x, axis=2))


@pytest.mark.parametrize("in_axes", [(0, None), (None, 0), (2, 0)])
def test_statistics_with_quantiles_shared_or_of_each_example(in_axes):
    x = rng.standard_normal({0: (N, 3, 4, 5), None: (3, 4, 5), 2: (3, 4, N, 5)}[in_axes[0]])
    q = rng.uniform(size={None: (2,), 0: (N, 2)}[in_axes[1]])
    check(statistics, in_axes, x, q)


def polynomials(p, x):
    return (np.polyval(p, x), np.polyadd(p, [1.0, 2.0, 3.0, 4.0]), np.polysub([2.0], p), np.polyder(p, 2),
            np.polyint(p, 2, [1.0, -1.0]), np.polymul(p, [1.0, 2.0]))


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 0)])
def test_polynomials_of_each_example(in_axes):
    p = rng.uniform(0.5, 1.5, {0: (N, 3), None: (3,)}[in_axes[0]])
    x = rng.standard_normal({0: (N, 2, 2), None: (2, 2)}[in_axes[1]])
    check(polynomials, in_axes, p, x)


def polymul(p):
    return np.polymul(p, [1.0, 2.0])


def test_polymul_of_a_leading_zero_raises():
    with pytest.raises(Unbatchable, match="leading zero"):
        astgrad.vmap(polymul)(np.array([[0.0, 1.0], [1.0, 2.0]]))


def grids(start, stop):
    return (np.linspace(start, stop, 4, axis=-1), np.logspace(start, stop, 3, base=2.0),
            np.geomspace(np.exp(start), np.exp(stop), 5, axis=1), np.full((2, 3), start[0]),
            np.full_like(stop, start[1]), np.array([start[0], stop[1]]), np.asarray([start, start]))


@pytest.mark.parametrize("in_axes", [(0, 0), (0, None), (None, 1)])
def test_grids_and_filled_arrays_of_each_example(in_axes):
    start = rng.standard_normal({0: (N, 2), None: (2,)}[in_axes[0]])
    stop = rng.standard_normal({0: (N, 2), None: (2,), 1: (2, N)}[in_axes[1]])
    check(grids, in_axes, start, stop)


def covariances(x, y, w):
    return (np.cov(x, y), np.cov(x, rowvar=False, bias=True), np.cov(x, aweights=w, ddof=2),
            np.cov(x, fweights=np.array([1, 2, 1, 3]), aweights=w), np.cov(x[0]), np.corrcoef(x, y),
            np.corrcoef(x[1], rowvar=False), np.corrcoef(x, rowvar=False))


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, None), (None, 1, None), (None, None, 0), (2, None, 0)])
def test_covariances_of_each_example(in_axes):
    x = rng.standard_normal({0: (N, 3, 4), None: (3, 4), 2: (3, 4, N)}[in_axes[0]])
    y = rng.standard_normal({0: (N, 4), None: (4,), 1: (4, N)}[in_axes[1]])
    w = rng.uniform(0.5, 2.0, {0: (N, 4), None: (4,)}[in_axes[2]])
    check(covariances, in_axes, x, y, w)


def layers(x, w, b):
    return (astgrad.rules.linear(x, w, b), astgrad.rules.sliding_windows.convolution(x[:, :, None], w[:, :, None], b),
            astgrad.rules.layer_norm(x, (3,), b[:3], b[1:]))


@pytest.mark.parametrize("in_axes", [(0, 0, 0), (0, None, None), (None, 0, None), (None, None, 0), (1, 2, None)])
def test_layers_with_weights_of_each_example(in_axes):
    x = rng.standard_normal({0: (N, 2, 3), None: (2, 3), 1: (2, N, 3)}[in_axes[0]])
    w = rng.standard_normal({0: (N, 4, 3), None: (4, 3), 2: (4, 3, N)}[in_axes[1]])
    b = rng.standard_normal({0: (N, 4), None: (4,)}[in_axes[2]])
    check(layers, in_axes, x, w, b)


def past_the_first_axis(x):
    return np.nanvar(x, axis=-3)


def taken_past_the_first_axis(x):
    return np.take_along_axis(x, np.zeros((1, 1), int), axis=-3)


@pytest.mark.parametrize("f", [past_the_first_axis, taken_past_the_first_axis])
def test_an_axis_past_an_examples_first_raises_rather_than_name_the_batch_axis(f):
    with pytest.raises(np.exceptions.AxisError):
        astgrad.vmap(f)(rng.standard_normal((N, 2, 2)))


def variance_of_each_ddof(x, ddof):
    return np.nanvar(x, 0, None, None, ddof)


def test_a_setting_of_each_example_is_refused_not_broadcast():
    with pytest.raises((astgrad.TransformError, Unbatchable), match="differs from example to example"):
        astgrad.vmap(variance_of_each_ddof, in_axes=(None, 0))(rng.standard_normal((4, 3)), np.array([0, 1, 2]))
