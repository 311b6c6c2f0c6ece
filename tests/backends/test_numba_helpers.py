"""The Numba implementations of the runtime helpers give the numpy helpers' values.

Each helper is called from a small compiled function, on the shapes where a
generic implementation could go wrong (an axis stretched from 1, leading
axes added, a lower-rank gradient spread, negative indices), and compared
with the helper numpy runs. One compile per kind of arguments.
"""

import numpy as np
import pytest

from astgrad.rules import _extra, _support
from astgrad.transform import runtime

numba = pytest.importorskip("numba")


@pytest.fixture(scope="module")
def compiled():
    from astgrad.backends.numba import helpers
    helpers.register()

    @numba.njit(boundscheck=True)
    def unbroadcast(g, to):
        return runtime.unbroadcast(g, to)

    @numba.njit(boundscheck=True)
    def scatter(g, shape, index):
        return _extra.scatter(g, shape, index)

    @numba.njit(boundscheck=True)
    def reductions(g, shape):
        return (_support.expand_reduced(g, shape, 0, False), _support.reduced_count(shape, 1),
                runtime.reduced_shape(shape, 1, True), runtime.reduced_shape(shape, None, False))
    return unbroadcast, scatter, reductions


RNG = np.random.default_rng(3)


@pytest.mark.parametrize("g_shape, to", [((3, 4), (4,)), ((3, 4), (1, 4)), ((3, 4), (3, 1)), ((3, 4), (1, 1)),
                                         ((3, 4), (3, 4)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 3, 4)),
                                         ((4,), (3, 4)), ((3, 4), ())])
def test_unbroadcast(compiled, g_shape, to):
    g = RNG.standard_normal(g_shape)
    np.testing.assert_allclose(compiled[0](g, to), _support.unbroadcast(g, to), rtol=1e-13, atol=1e-15)
    assert np.shape(compiled[0](g, to)) == to


def test_unbroadcast_of_a_number_and_of_a_transposed_array(compiled):
    np.testing.assert_array_equal(compiled[0](2.5, (2, 3)), np.full((2, 3), 2.5))
    g = RNG.standard_normal((4, 3)).T  # not contiguous
    np.testing.assert_allclose(compiled[0](g, (3, 1)), _support.unbroadcast(g, (3, 1)), rtol=1e-13)
    np.testing.assert_allclose(compiled[0](g, (4,)), _support.unbroadcast(g, (4,)), rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
@pytest.mark.parametrize("g_shape, to", [((2, 3, 4), (2, 1, 4)), ((2, 3, 4), (1, 1, 1)), ((0, 4), (1, 4)),
                                         ((5, 1), (1, 1)), ((3, 4), (3, 4))])
def test_unbroadcast_at_the_same_rank_keeps_the_dtype_and_numpys_sum(compiled, dtype, g_shape, to):
    # where the shapes differ the sum is numpy's, run in object mode: the value, dtype and a C array as numpy's
    g = (RNG.standard_normal(g_shape) * 10).astype(dtype) if dtype is not np.complex128 else \
        RNG.standard_normal(g_shape) + 1j * RNG.standard_normal(g_shape)
    out = compiled[0](g, to)
    expected = _support.unbroadcast(g, to)
    assert out.shape == to and out.dtype == g.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-6 if dtype is np.float32 else 1e-13)
    if g.shape != to:
        assert out.flags.c_contiguous and out is not g


@pytest.mark.parametrize("dtype", [np.float32, np.complex128, np.int64])
def test_unbroadcast_summed_over_leading_axes_and_scatter_keep_numpys_dtype(compiled, dtype):
    # the zeros both start from are made from the dtype as a class (one compile of np.zeros): numpy's dtype
    g = (RNG.standard_normal((2, 3, 4)) * 10).astype(dtype) if dtype is not np.complex128 else \
        RNG.standard_normal((2, 3, 4)) + 1j * RNG.standard_normal((2, 3, 4))
    for got, want in [(compiled[0](g, (3, 1)), _support.unbroadcast(g, (3, 1))),  # _reduce_to: a lower rank
                      (compiled[0](g[0, 0], (2, 1, 4)), _support.unbroadcast(g[0, 0], (2, 1, 4))),  # spread
                      (compiled[1](g[0, 0], (3, 4), (1, slice(None))), _extra.scatter(g[0, 0], (3, 4), (1, slice(None)))),
                      (compiled[1](2.5, (4,), 2), _extra.scatter(2.5, (4,), 2)),
                      (compiled[1](2.5 - 1j, (4,), -1), _extra.scatter(2.5 - 1j, (4,), -1))]:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype is np.float32 else 1e-13)


@pytest.mark.parametrize("g_shape, to", [((3, 4), (3, 2)), ((3, 1), (3, 4)), ((2, 3, 4), (2, 3, 5))])
def test_unbroadcast_to_a_shape_it_does_not_broadcast_from_raises(compiled, g_shape, to):
    with pytest.raises(ValueError, match="does not broadcast"):
        compiled[0](np.ones(g_shape), to)


@pytest.mark.parametrize("index", [2, -1, slice(1, 4), slice(None, None, -2)])
def test_scatter_of_a_basic_index(compiled, index):
    x = RNG.standard_normal(5)
    g = x[index] * 3.0
    np.testing.assert_array_equal(compiled[1](g, (5,), index), _extra.scatter(g, (5,), index))


def test_scatter_into_a_matrix_by_a_tuple_of_int_and_slice(compiled):
    g = RNG.standard_normal(3)
    np.testing.assert_array_equal(compiled[1](g, (4, 3), (1, slice(None))), _extra.scatter(g, (4, 3), (1, slice(None))))


def test_reductions_expand_count_and_shape(compiled):
    g = RNG.standard_normal(4)  # the gradient of a sum over axis 0 of a (3, 4) array
    spread, count, kept, full = compiled[2](g, (3, 4))
    np.testing.assert_array_equal(spread, _support.expand_reduced(g, (3, 4), 0, False))
    assert count == _support.reduced_count((3, 4), 1) == 4
    assert kept == runtime.reduced_shape((3, 4), 1, True) == (3, 1)
    assert full == runtime.reduced_shape((3, 4), None, False) == ()


@pytest.fixture(scope="module")
def writes():
    from astgrad.backends.numba import helpers, shaping
    helpers.register()

    @numba.njit(boundscheck=True)
    def setitem(a, index, value):
        return _extra.setitem(a, index, value)

    @numba.njit(boundscheck=True)
    def rolls(x, shift):
        return shaping.rolled(x, shift, 0), shaping.rolled(x, -shift, 1), shaping.rolled(x, 2 * shift, -1)
    return setitem, rolls


@pytest.mark.parametrize("index, value_shape", [((1, slice(None)), (4,)), ((slice(None), 2), (3,)),
                                                ((slice(1, None), slice(None, None, -2)), (2, 2)),
                                                ((slice(None), slice(1, 3)), (2,)), ((slice(None), slice(1, 3)), ()),
                                                (-1, (1,)), ((2, -1), ())])
def test_an_array_or_a_number_written_into_a_part_of_a_matrix(writes, index, value_shape):
    """Written by loops: every rank of the part, a value broadcast along the part's first axis, a number."""
    a = RNG.standard_normal((3, 4))
    value = RNG.standard_normal(value_shape) if value_shape else 1.5
    np.testing.assert_array_equal(writes[0](a, index, value), _extra.setitem(a, index, value))


def test_a_value_that_does_not_broadcast_to_the_part_raises_as_numpy_does(writes):
    a = np.zeros((3, 4))
    with pytest.raises(ValueError):
        _extra.setitem(a, (slice(None), slice(1, 3)), np.ones(3))
    with pytest.raises(ValueError):
        writes[0](a, (slice(None), slice(1, 3)), np.ones(3))


def test_scatter_through_a_new_axis_and_of_a_number(compiled):
    g = RNG.standard_normal((4, 1))
    np.testing.assert_array_equal(compiled[1](g, (4,), (slice(None), None)), _extra.scatter(g, (4,), (slice(None), None)))
    np.testing.assert_array_equal(compiled[1](-0.0, (3, 2), (1, slice(None))), _extra.scatter(-0.0, (3, 2), (1, slice(None))))
    assert not np.signbit(compiled[1](-0.0, (3, 2), (1, slice(None)))).any()  # numpy's 0.0 + -0.0


@pytest.mark.parametrize("shift", [0, 1, -1, 3, 7, -9])
def test_roll_along_each_axis_by_any_shift(writes, shift):
    x = RNG.standard_normal((3, 4))
    for got, want in zip(writes[1](x, shift), (np.roll(x, shift, 0), np.roll(x, -shift, 1), np.roll(x, 2 * shift, -1))):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(writes[1](x.T, shift)[0], np.roll(x.T, shift, 0))  # not contiguous


@pytest.fixture(scope="module")
def where():
    from astgrad.backends.numba import helpers, shaping
    helpers.register()

    @numba.njit(boundscheck=True)
    def chosen(condition, a, b):
        return shaping.chosen(condition, a, b)
    return chosen


@pytest.mark.parametrize("condition, a, b", [
    ((3, 4), (3, 4), (3, 4)), ((3, 4), (4,), (3, 1)), ((4,), (3, 4), 0), ((3, 1), 2.5, (1, 4)), ((3, 4), (), (3, 4)),
    ((2, 3, 4), (3, 4), (4,)), ((0, 4), (4,), 1.0)])
def test_where_broadcasts_as_numpy_does(where, condition, a, b):
    def value(shape):
        return RNG.standard_normal(shape) if isinstance(shape, tuple) else shape
    c = RNG.standard_normal(condition) > 0
    args = (c, value(a), value(b))
    got, want = where(*args), np.where(*args)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_where_of_other_dtypes_and_of_shapes_that_do_not_broadcast(where):
    c = np.array([True, False, True])
    for a, b in [(np.arange(3), 0.5), (np.ones(3, np.float32), np.ones(3)), (np.arange(3), np.arange(3) * 2)]:
        # numpy's result dtype in each (Numba's own np.where for the first two)
        got, want = where(c, a, b), np.where(c, a, b)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError):
        np.where(c, np.ones(4), 0.0)
    with pytest.raises(ValueError):
        where(c, np.ones(4), 0.0)


# ------------------------------------------------------------------ getitem_gradient, cleaned

@pytest.mark.parametrize("index", [1, -1, slice(1, 3), (1, slice(None, None, 2))])
def test_getitem_gradient_of_an_array_is_numpys_scatter(index):
    from astgrad.backends.numba import helpers
    helpers.register()

    @numba.njit(boundscheck=True)
    def gradient(g, items, index):
        return runtime.getitem_gradient(g, items, index)
    items = RNG.standard_normal((4, 5)) if isinstance(index, tuple) else RNG.standard_normal(5)
    g = np.asarray(RNG.standard_normal(np.shape(items[index])))
    g = g if g.ndim else float(g)
    np.testing.assert_array_equal(gradient(g, items, index), runtime.getitem_gradient(g, items, index))


def test_getitem_gradient_of_a_list_is_not_compiled():
    from astgrad.backends.numba import helpers
    helpers.register()

    @numba.njit
    def gradient(g, items, index):
        return runtime.getitem_gradient(g, items, index)
    with pytest.raises(numba.core.errors.TypingError):
        gradient(1.0, [1.0, 2.0], 0)


def test_cleaned_with_a_mask_a_loop_may_not_make_is_numpys():
    from astgrad.backends.numba import helpers
    from astgrad.transform.runtime import structural
    helpers.register()

    @numba.njit
    def cleaned(trips, condition, grad):
        mask = None
        for _ in range(trips):
            mask = condition > 0
        return structural.cleaned(mask, grad)
    condition, grad = np.array([1.0, -1.0, 2.0]), np.array([0.5, 0.25, -1.0])
    for trips in (0, 2):
        want = structural.cleaned(None if trips == 0 else condition > 0, grad)
        np.testing.assert_array_equal(cleaned(trips, condition, grad), want)


def test_cleaned_of_a_numbers_gradient_at_a_mask_is_not_compiled():
    from astgrad.backends.numba import helpers
    from astgrad.transform.runtime import structural
    helpers.register()

    @numba.njit
    def cleaned(mask, grad):
        return structural.cleaned(mask, grad)
    with pytest.raises(numba.core.errors.TypingError):  # numpy zeroes it where the 0-d mask is True
        cleaned(np.array(True), 1.5)
