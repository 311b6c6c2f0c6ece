"""Sample calls for statistics, nan scans, the array-API names, polynomials, grids and ``hfft`` (issue: the numpy
API people use).

``samples`` adds these to ``CASES`` and ``EDGES``.  ``np.cov``'s ``aweights``
are differentiated (its ``fweights`` are integer counts and constants); the
edge samples pin the conventions docs/rules.md writes down: NaNs get 0, a
zero in a NaN product is exact, a zero norm gets the zero subgradient and
``fmod``, ``divmod``, ``modf`` and ``frexp`` at a jump have the slopes of the branch numpy took.
"""

from __future__ import annotations

import numpy as np

from astgrad import rules

from .samples import Arg, Case, const, fixed, normal, positive, spaced
from .samples_signals import parts, with_nan


def between(lo, hi, *shape):
    return Arg(lambda rng: rng.uniform(lo, hi, shape))


def away_from_multiples(*shape):
    """Dividends well inside one period of a divisor in (0.8, 1.2), either sign: no jump of fmod nearby."""
    return Arg(lambda rng: (rng.integers(0, 3, shape) + rng.uniform(0.3, 0.6, shape)) * rng.choice([-1.0, 1.0], shape))


def away_from_powers_of_two(*shape):
    """Numbers of either sign well inside an octave: no jump of frexp's mantissa nearby."""
    return Arg(lambda rng: 2.0 ** (rng.integers(-2, 3, shape) + rng.uniform(0.15, 0.85, shape))
               * rng.choice([-1.0, 1.0], shape))


def block_two_by_two(a, b, c, d):
    return np.block([[a, b], [c, d]])


def block_promoted(a, b, c):
    return np.block([[[a], [b]], [[c], [b]]])  # depth 3: each array promoted to 3-D


def ihfft_parts(a):
    return parts(np.fft.ihfft(a))


def ihfft_ortho_parts(a):
    return parts(np.fft.ihfft(a, 6, norm="ortho"))


def cov_weighted(m, aweights):
    return np.cov(m, None, True, False, None, np.array([1, 2, 1, 3, 1]), aweights)


def cov_weighted_ddof(m, aweights):
    return np.cov(m, None, False, False, 2, None, aweights)


def numpy_api_cases():
    return [
        Case(np.cov, [normal(3, 5)]),
        Case(np.cov, [normal(6, 2)], {"rowvar": False}, name="columns"),
        Case(np.cov, [normal(5)], {"bias": True}, name="one_variable_bias"),
        Case(np.cov, [normal(2, 5), normal(5)], {"ddof": 2}, name="y_ddof"),
        Case(np.cov, [normal(3, 5), const(None), const(True), const(False), const(None),
                      const(np.array([1, 2, 1, 3, 1]))], name="fweights"),
        Case(np.cov, [normal(2, 5), positive(5)], call=cov_weighted, name="weights"),
        Case(np.cov, [normal(5, 2), positive(5)], call=cov_weighted_ddof, name="aweights_ddof"),
        Case(np.corrcoef, [normal(3, 6)]),
        Case(np.corrcoef, [normal(6, 2), normal(6)], {"rowvar": False}, name="columns_y"),
        Case(np.nanvar, [with_nan(3, 4)]), Case(np.nanvar, [with_nan(3, 4)], {"axis": 1, "ddof": 1}, name="axis1"),
        Case(np.nanstd, [with_nan(3, 4)]),
        Case(np.nanstd, [with_nan(3, 4)], {"axis": 0, "keepdims": True}, name="axis0_keepdims"),
        Case(np.nanprod, [with_nan(3, 4)]), Case(np.nanprod, [with_nan(3, 4)], {"axis": 1}, name="axis1"),
        Case(np.nancumsum, [with_nan(3, 4)]), Case(np.nancumsum, [with_nan(3, 4)], {"axis": 0}, name="axis0"),
        Case(np.nancumprod, [with_nan(3, 4)]), Case(np.nancumprod, [with_nan(3, 4)], {"axis": 1}, name="axis1"),
        Case(np.cumulative_sum, [normal(5)]),
        Case(np.cumulative_sum, [normal(3, 4)], {"axis": 1, "include_initial": True}, name="initial"),
        Case(np.cumulative_prod, [normal(5)], {"include_initial": True}, name="initial"),
        Case(np.cumulative_prod, [normal(3, 4)], {"axis": 0}, name="axis0"),
        Case(np.linalg.vector_norm, [normal(3, 4)]),
        Case(np.linalg.vector_norm, [normal(3, 4)], {"axis": 1, "ord": 3, "keepdims": True}, name="axis_ord3"),
        Case(np.linalg.vector_norm, [spaced(2, 3, 2)], {"axis": (0, 2), "ord": 1}, name="axes_ord1"),
        Case(np.linalg.matrix_norm, [normal(2, 3, 4)]),
        Case(np.linalg.matrix_norm, [normal(3, 3)], {"ord": "nuc"}, name="nuc"),
        Case(np.linalg.matrix_norm, [normal(2, 3, 3)], {"ord": 2, "keepdims": True}, name="spectral"),
        Case(np.linalg.trace, [normal(2, 3, 4)]), Case(np.linalg.trace, [normal(4, 4)], {"offset": 1}, name="offset"),
        Case(np.linalg.diagonal, [normal(2, 3, 4)]),
        Case(np.linalg.diagonal, [normal(4, 3)], {"offset": -1}, name="offset"),
        Case(np.linalg.cross, [normal(4, 3), normal(4, 3)]),
        Case(np.linalg.cross, [normal(3, 2), normal(3, 1)], {"axis": 0}, name="axis0"),
        Case(np.vander, [normal(4)]), Case(np.vander, [normal(3), const(5), const(True)], name="increasing"),
        Case(np.logspace, [normal(), normal()], {"num": 5}),
        Case(np.logspace, [normal(3), normal(2, 1), const(4), const(False), positive()], {"axis": 1},
             name="base_axis1"),
        Case(np.geomspace, [positive(), positive()], {"num": 6}),
        Case(np.geomspace, [between(-2.0, -0.5, 2), between(-3.0, -1.0, 2)], {"num": 4, "endpoint": False, "axis": -1},
             name="negative_axis"),
        Case(np.block, [Arg([normal(3), normal(2), normal()])]),
        Case(np.block, [normal(2, 2), normal(2, 3), normal(3, 4), normal(3, 1)], call=block_two_by_two,
             name="two_by_two"),
        Case(np.block, [normal(3), normal(2, 3), normal(3)], call=block_promoted, name="promoted"),
        Case(np.dstack, [Arg([normal(4), normal(1, 4), normal(1, 4, 2)])]),
        Case(np.diagflat, [normal(2, 2)]), Case(np.diagflat, [normal(3)], {"k": -1}, name="below"),
        Case(np.ediff1d, [normal(2, 3)]),
        Case(np.ediff1d, [normal(4), normal(2), normal()], name="ends"),
        Case(np.fmod, [away_from_multiples(2, 3), between(0.8, 1.2, 2, 3)]),
        Case(np.fmod, [away_from_multiples(4, 3), between(-1.2, -0.8, 3)], name="bcast_negative"),
        Case(np.polyval, [normal(4), normal(3, 2)]), Case(np.polyval, [normal(1), normal()], name="constant"),
        Case(np.polyadd, [normal(4), normal(2)]), Case(np.polysub, [normal(2), normal(5)]),
        Case(np.polymul, [normal(3), normal(4)]),
        Case(np.polyder, [normal(5)]), Case(np.polyder, [normal(5), const(3)], name="third"),
        Case(np.polyint, [normal(4)]), Case(np.polyint, [normal(3), const(2), normal(2)], name="twice_k"),
        Case(np.polyint, [normal(3), const(3), normal()], name="one_k"),
        Case(np.fft.hfft, [normal(5)]), Case(np.fft.hfft, [normal(3, 4)], {"n": 7, "axis": 0, "norm": "ortho"},
                                               name="odd_ortho"),
        Case(np.fft.ihfft, [normal(7)], call=ihfft_parts),
        Case(np.fft.ihfft, [normal(5)], call=ihfft_ortho_parts, name="padded_ortho"),
        Case(np.divmod, [away_from_multiples(2, 3), between(0.8, 1.2, 2, 3)]),
        Case(np.divmod, [away_from_multiples(4, 3), between(-1.2, -0.8, 3)], name="bcast_negative"),
        Case(np.modf, [away_from_multiples(3, 4)]), Case(rules.two_outputs.modf_fraction, [away_from_multiples(5)]),
        Case(np.frexp, [away_from_powers_of_two(3, 4)]),
        Case(rules.two_outputs.frexp_mantissa, [away_from_powers_of_two(5)]),
        Case(np.broadcast_arrays, [normal(3, 1), normal(4)]),
        Case(np.broadcast_arrays, [normal(2, 3), normal(), normal(3)], name="three"),
        *([Case(np.unstack, [normal(3, 4)]), Case(np.unstack, [normal(2, 3, 2)], {"axis": 1}, name="axis1")]
          if hasattr(np, "unstack") else []),
    ]


def numpy_api_edges():
    return [
        Case(np.nanvar, [fixed([1.0, np.nan, 3.0, 4.0])], name="nan"),
        Case(np.nanstd, [fixed([2.0, np.nan, 2.0])], name="equal", expected=[[0.0, 0.0, 0.0]]),
        Case(np.nanprod, [fixed([0.0, np.nan, 3.0, 2.0])], name="nan_zero", expected=[[6.0, 0.0, 0.0, 0.0]]),
        Case(np.nancumsum, [fixed([1.0, np.nan, 3.0])], name="nan", expected=[[3.0, 0.0, 1.0]]),
        Case(np.nancumprod, [fixed([2.0, np.nan, 0.0, 3.0])], name="nan_zero"),
        Case(np.cumulative_prod, [fixed([2.0, 0.0, 3.0])], {"include_initial": True}, name="zero"),
        Case(np.linalg.vector_norm, [fixed([0.0, 0.0, 0.0])], name="zero", expected=[[0.0, 0.0, 0.0]]),
        Case(np.linalg.matrix_norm, [fixed([[0.0, 0.0], [0.0, 0.0]])], name="zero_fro", expected=[[[0.0, 0.0]] * 2]),
        # at x = 2 y fmod jumps from y to 0 (x > 0): numpy's quotient there is 2, so y gets -2
        Case(np.fmod, [fixed([2.0, -3.0]), fixed([1.0, 1.5])], name="jump", expected=[[1.0, 1.0], [-2.0, 2.0]]),
        Case(np.divmod, [fixed([2.0, -3.0]), fixed([1.0, 1.5])], name="jump", expected=[[1.0, 1.0], [-2.0, 2.0]]),
        Case(np.modf, [fixed([2.0, -1.0])], name="whole", expected=[[1.0, 1.0]]),
        Case(np.frexp, [fixed([1.0, -4.0])], name="power_of_two", expected=[[0.5, 0.125]]),
        Case(np.vander, [fixed([0.0, 1.5])], name="zero"),
        Case(np.polyval, [fixed([1.0, -2.0, 0.5]), fixed([0.0, 1.0])], name="zero"),
    ]
