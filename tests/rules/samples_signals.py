"""Sample calls for convolution, ``np.fft``, quantiles, ``np.interp``, ``meshgrid``, ``full`` and ``bincount``.

``samples`` adds these to ``CASES`` and ``EDGES``.  A transform with a
complex output is sampled through a helper returning its real and imaginary
parts (the table's tests weigh real outputs); complex inputs are checked by
``test_forward_rules_complex`` (every direct case) and by
``test_complex_signals.py`` against the convention's finite differences.
"""

from __future__ import annotations

import numpy as np

from astgrad import rules

from .samples import Arg, Case, const, fixed, normal, positive, scalar, spaced


def knots(n):
    """Strictly increasing knots between about -2 and 2."""
    return Arg(lambda rng: np.cumsum(rng.uniform(0.5, 1.0, n)) - 0.4 * n)


def with_nan(*shape):
    """Distinct values with a NaN at the second place (what the nan functions skip)."""
    def make(rng):
        n = int(np.prod(shape))
        values = rng.permutation(n) * 0.37 + rng.uniform(0, 0.1, n) - n * 0.15
        values[1] = np.nan
        return values.reshape(shape)
    return Arg(make)


def between(lo, hi, *shape):
    return Arg(lambda rng: rng.uniform(lo, hi, shape))


def parts(y):
    return np.real(y), np.imag(y)


def fft_padded(a):
    return parts(np.fft.fft(a, 8))


def fft_cut_ortho(a):
    return parts(np.fft.fft(a, 4, 0, "ortho"))


def ifft_rows(a):
    return parts(np.fft.ifft(a, axis=1))


def ifft_padded_forward(a):
    return parts(np.fft.ifft(a, 7, norm="forward"))


def fft2_plain(a):
    return parts(np.fft.fft2(a))


def fft2_shaped(a):
    return parts(np.fft.fft2(a, (4, 2)))


def ifft2_plain(a):
    return parts(np.fft.ifft2(a, norm="ortho"))


def fftn_axes(a):
    return parts(np.fft.fftn(a, axes=(0, 2)))


def ifftn_shaped(a):
    return parts(np.fft.ifftn(a, (3, 5), (1, 2)))


def rfft_even(a):
    return parts(np.fft.rfft(a))


def rfft_odd_padded(a):
    return parts(np.fft.rfft(a, 7, norm="ortho"))


def rfft2_plain(a):
    return parts(np.fft.rfft2(a))


def rfftn_shaped(a):
    return parts(np.fft.rfftn(a, (4, 6), (0, 1), norm="forward"))


def irfft_default(c):
    return np.fft.irfft(c)


def irfft_odd_ortho(c):
    return np.fft.irfft(c, 7, norm="ortho")


def irfft_cut(c):
    return np.fft.irfft(c, 4, axis=0)


def irfft2_plain(c):
    return np.fft.irfft2(c)


def irfftn_shaped(c):
    return np.fft.irfftn(c, (3, 5), (0, 1), norm="forward")


def fftshift_both(x):
    return np.fft.fftshift(x), np.fft.ifftshift(x, axes=1)


def bincount_weighted(w):
    return np.bincount(np.array([3, 0, 3, 1]), w)


def meshgrid_sparse(x, y, z):
    return np.meshgrid(x, y, z, sparse=True, indexing="ij")


def meshgrid_xy3(x, y, z):
    return np.meshgrid(x, y, z)


def full_taped(shape, fill_value):
    """``np.full`` on the tape through ``rules.apply`` (numpy does not dispatch it to Tensors)."""
    return rules.apply(np.full, shape, fill_value)


full_taped.generated_call = np.full  # generated code calls np.full itself


def signal_cases():
    cases = []
    for mode in ("full", "same", "valid"):
        cases += [Case(np.convolve, [normal(5), normal(3), const(mode)], name=mode),
                  Case(np.convolve, [normal(3), normal(6), const(mode)], name=f"{mode}_shorter_first")]
        cases += [Case(np.correlate, [normal(5), normal(3), const(mode)], name=mode),
                  Case(np.correlate, [normal(2), normal(5), const(mode)], name=f"{mode}_shorter_first"),
                  Case(np.correlate, [normal(4), normal(7), const(mode)], name=f"{mode}_even_shorter_first")]
    cases += [
        Case(np.fft.fft, [normal(6)], call=fft_padded, name="padded"),
        Case(np.fft.fft, [normal(6, 2)], call=fft_cut_ortho, name="cut_ortho"),
        Case(np.fft.ifft, [normal(2, 5)], call=ifft_rows),
        Case(np.fft.ifft, [normal(5)], call=ifft_padded_forward, name="padded_forward"),
        Case(np.fft.fft2, [normal(3, 4)], call=fft2_plain), Case(np.fft.fft2, [normal(3, 4)], call=fft2_shaped, name="s"),
        Case(np.fft.ifft2, [normal(2, 3, 4)], call=ifft2_plain),
        Case(np.fft.fftn, [normal(3, 2, 4)], call=fftn_axes),
        Case(np.fft.ifftn, [normal(2, 4, 4)], call=ifftn_shaped),
        Case(np.fft.rfft, [normal(6)], call=rfft_even), Case(np.fft.rfft, [normal(5)], call=rfft_odd_padded, name="odd"),
        Case(np.fft.rfft2, [normal(3, 4)], call=rfft2_plain),
        Case(np.fft.rfftn, [normal(3, 5)], call=rfftn_shaped),
        Case(np.fft.irfft, [normal(5)], call=irfft_default),
        Case(np.fft.irfft, [normal(3)], call=irfft_odd_ortho, name="odd_ortho"),
        Case(np.fft.irfft, [normal(4, 2)], call=irfft_cut, name="cut"),
        Case(np.fft.irfft2, [normal(3, 4)], call=irfft2_plain),
        Case(np.fft.irfftn, [normal(2, 3)], call=irfftn_shaped),
        Case(np.fft.fftshift, [normal(3, 4)], call=fftshift_both),
        Case(np.fft.ifftshift, [normal(5)]),
    ]
    return cases


def statistics_cases():
    return [
        Case(np.median, [spaced(7)]), Case(np.median, [spaced(3, 4)], {"axis": 1}, name="even_axis1"),
        Case(np.median, [spaced(2, 3, 2)], {"axis": (0, 2), "keepdims": True}, name="axes_keepdims"),
        Case(np.nanmedian, [with_nan(6)]), Case(np.nanmedian, [with_nan(3, 3)], {"axis": 0}, name="axis0"),
        Case(np.quantile, [spaced(3, 4), between(0.05, 0.95)]),
        Case(np.quantile, [spaced(3, 5), between(0.05, 0.95, 2)], {"axis": 1}, name="many_q"),
        Case(np.quantile, [spaced(2, 3, 2), between(0.05, 0.95)], {"axis": (0, 2), "keepdims": True},
             name="axes_keepdims"),
        Case(np.nanquantile, [with_nan(2, 4), between(0.05, 0.95, 3)], {"axis": 1}),
        Case(np.percentile, [spaced(6), between(5.0, 95.0, 2)]),
        Case(np.nanpercentile, [with_nan(7), between(5.0, 95.0)]),
        Case(np.nanmax, [with_nan(3, 4)]), Case(np.nanmax, [with_nan(3, 4)], {"axis": 1}, name="axis1"),
        Case(np.nanmin, [with_nan(3, 4)], {"axis": 0, "keepdims": True}, name="axis0_keepdims"),
    ]


def grid_cases():
    return [
        Case(np.interp, [between(-3.0, 3.0, 2, 5), knots(5), normal(5)]),
        Case(np.interp, [between(-3.0, 3.0, 8), knots(4), normal(4), scalar(), scalar()], name="left_right"),
        Case(np.interp, [scalar(-1.0, 1.0), knots(3), normal(3)], name="number"),
        Case(np.meshgrid, [normal(3), normal(4)]),
        Case(np.meshgrid, [normal(2), normal(3), normal(2)], {"indexing": "ij"}, name="ij"),
        Case(np.meshgrid, [normal(2), normal(3), normal(2)], call=meshgrid_xy3, name="xy3"),
        Case(np.meshgrid, [normal(2), normal(3), normal(4)], call=meshgrid_sparse, name="sparse"),
        Case(np.full, [const((2, 3)), scalar()], call=full_taped),
        Case(np.full, [const((2, 3)), normal(3)], call=full_taped, name="row"),
        Case(np.bincount, [const(np.array([0, 2, 2, 5])), positive(4)]),
        Case(np.bincount, [const(np.array([1, 1, 0])), positive(3), const(5)], name="minlength"),
        Case(np.bincount, [positive(4)], call=bincount_weighted, name="called"),
        Case(np.trapezoid, [normal(3, 5)]), Case(np.trapezoid, [normal(3, 5), knots(5)], name="x"),
        Case(np.trapezoid, [normal(4, 3), knots(4)], {"axis": 0}, name="x_axis0"),
        Case(np.trapezoid, [normal(2, 4), Arg(lambda rng: np.sort(rng.uniform(0, 3, (2, 4)), axis=1))], name="x_2d"),
        Case(np.trapezoid, [normal(2, 4), const(None), scalar()], name="dx"),
    ]


def product_aliases_cases():
    """The array API's names for products and transposes: the rules of the numpy functions they equal."""
    return [
        Case(np.linalg.matmul, [normal(2, 3, 4), normal(4, 2)]),
        Case(np.linalg.outer, [normal(3), normal(4)]),
        Case(np.linalg.tensordot, [normal(2, 3, 4), normal(3, 4, 2)]),
        Case(np.linalg.tensordot, [normal(2, 3), normal(3, 4)], {"axes": 1}, name="axes1"),
        Case(np.matrix_transpose, [normal(2, 3, 4)]), Case(np.linalg.matrix_transpose, [normal(3, 4)]),
        Case(np.vecdot, [normal(2, 3), normal(3)]), Case(np.vecdot, [normal(3, 2), normal(3, 2)], {"axis": 0},
                                                         name="axis0"),
        Case(np.linalg.vecdot, [normal(4, 3), normal(4, 3)]),
    ]


def breadth_cases():
    return signal_cases() + statistics_cases() + grid_cases() + product_aliases_cases()


def breadth_edges():
    """Kinks: ties of order statistics, quantiles at a knot, interp at and beyond its knots; expected gradients
    for unit output weights (``samples.EDGES``)."""
    return [
        # the two middle values of an even count: smooth there, central differences agree
        Case(np.median, [fixed([4.0, 1.0, 3.0, 2.0])], name="even", expected=[[0.0, 0.0, 0.5, 0.5]]),
        # tied order statistics share their weight evenly, as tied maxima do
        Case(np.median, [fixed([3.0, 1.0, 3.0])], name="tie", expected=[[0.5, 0.0, 0.5]]),
        Case(np.median, [fixed([1.0, 2.0, 2.0, 5.0])], name="tie_even", expected=[[0.0, 0.5, 0.5, 0.0]]),
        # q (n - 1) a whole number: the segment to the right, for the slope in q
        Case(np.quantile, [fixed([5.0, 1.0, 4.0, 2.0, 3.0]), fixed(0.25)], name="knot",
             expected=[[0.0, 0.0, 0.0, 1.0, 0.0], 4.0]),
        # q = 1 is the maximum, and gets max's gradient; its slope in q is the last segment's
        Case(np.quantile, [fixed([1.0, 3.0, 3.0]), fixed(1.0)], name="top_tie", expected=[[0.0, 0.5, 0.5], 0.0]),
        Case(np.quantile, [fixed([1.0, 3.0, 2.0]), fixed(0.0)], name="bottom", expected=[[1.0, 0.0, 0.0], 2.0]),
        Case(np.nanmedian, [fixed([np.nan, 2.0, 1.0, np.nan])], name="nan", expected=[[0.0, 0.5, 0.5, 0.0]]),
        Case(np.median, [fixed([2.0])], name="one_value", expected=[[1.0]]),
        Case(np.nanmax, [fixed([[1.0, np.nan, 3.0, 3.0], [np.nan, 2.0, 0.5, np.nan]])], {"axis": 1}, name="tie_nan",
             expected=[[[0.0, 0.0, 0.5, 0.5], [0.0, 1.0, 0.0, 0.0]]]),
        # x at a knot: the segment to its right; at the last knot the last segment; outside: fp's ends
        Case(np.interp, [fixed([0.0, 1.0, 3.0, -1.0, 4.0]), const(np.array([0.0, 1.0, 3.0])),
                         const(np.array([0.0, 2.0, 3.0]))], name="knots", expected=[[2.0, 0.5, 0.5, 0.0, 0.0]]),
        Case(np.interp, [const(np.array([0.0, 1.0, 3.0, -1.0, 4.0, 2.0])), fixed([0.0, 1.0, 3.0]),
                         fixed([0.0, 2.0, 3.0])], name="knots_in_xp_fp",
             expected=[[-2.0, -0.75, -0.75], [2.0, 1.5, 2.5]]),
        Case(np.interp, [fixed([0.5, 2.0]), const(np.array([1.0])), fixed([3.0]), fixed(-1.0), fixed(7.0)],
             name="one_knot", expected=[[0.0, 0.0], [0.0], 1.0, 1.0]),
    ]
