"""``np.exp`` of a float64 array in a loop the compiler vectorises.

Numba compiles ``np.exp`` of an array as a call of the C library's ``exp``
per element: about 3 ns an element where numpy's own loop (SIMD, AVX2 or
AVX-512) takes about 0.5 ns.  A Monte-Carlo step (``s * np.exp(... z[:, j])``
over 10^4 paths) spent most of its compiled forward sweep there, and the
compiled gradient lost to the numpy one.

``exp_of(x)`` is ``np.exp(x)``.  Compiled, for a float64 array, each element
is reduced to ``r = x - k ln 2`` (``k`` the nearest integer to ``x / ln 2``,
``ln 2`` split in two parts so that ``k`` times the first is exact), ``exp(r)``
on ``|r| <= ln 2 / 2`` by the rational form of fdlibm's ``__ieee754_exp``
(its published coefficients; error under one unit in the last place) and
multiplied by ``2 ** k`` made from its bits: no call and no branch, so LLVM
computes several elements at once.  That covers ``|x| <= 708``, where ``k``
is between -1022 and 1022 and every result is a normal float; an element
outside (an overflow to inf, a result 0 or subnormal, NaN, an infinity) is
computed again by the C library's ``exp``, as Numba's loop computes it.
Other kinds (numbers, float32, complex, integers) are Numba's ``np.exp``.

The numbers: within one unit in the last place of the C library's ``exp``
(tests/backends/test_numba_exponential.py counts the units over a million
points and the edges); numpy's SIMD ``exp`` differs from the C library's
by as much, so the compiled gradient and the numpy backend's still agree
to the last bits (docs/backends.md, "Where the numbers can differ").
"""

from __future__ import annotations

import numpy as np

#: 1 / ln 2, ln 2 in two parts (the first with 21 zero bits at its end: k * _LN2_HIGH is exact for |k| < 2**21)
_LOG2_E = 1.44269504088896338700e+00
_LN2_HIGH = 6.93147180369123816490e-01
_LN2_LOW = 1.90821492927058770002e-10
#: fdlibm's coefficients of R(r * r) in exp(r) = 1 + 2r / (R - r)
_P1 = 1.66666666666666019037e-01
_P2 = -2.77777777770155933842e-03
_P3 = 6.61375632143793436117e-05
_P4 = -1.65339022054652515390e-06
_P5 = 4.13813679705723846039e-08
#: where every result is a normal float and 2 ** k has an exponent field
_REACH = 708.0


def exp_of(x):
    """``np.exp(x)`` (the numpy module's meaning; compiled, the vectorised loop for a float64 array)."""
    return np.exp(x)


def register(numba, overload, types) -> None:
    """``exp_of``'s compiled implementations."""
    from llvmlite import ir

    @numba.extending.intrinsic
    def from_bits(typingctx, bits):
        """The float64 whose bits are the int64 ``bits``."""
        if not isinstance(bits, types.Integer):
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], ir.DoubleType())
        return types.float64(types.int64), codegen

    @overload(exp_of, jit_options={"error_model": "numpy"})
    def _exp_of(x):
        if not (isinstance(x, types.Array) and x.dtype == types.float64 and x.ndim > 0):
            return lambda x: np.exp(x)

        if x.ndim > 1:  # its elements in C order, through the loop below (a copy where x is a view)
            return lambda x: exp_of(np.ascontiguousarray(x).reshape(x.size)).reshape(x.shape)

        def implementation(x):
            out = np.empty(x.shape[0])
            outside = False
            for i in range(x.shape[0]):
                v = x[i]
                near = abs(v) <= _REACH  # False for NaN
                k = np.floor(v * _LOG2_E + 0.5) if near else 0.0
                high = v - k * _LN2_HIGH
                low = k * _LN2_LOW
                r = high - low
                t = r * r
                c = r - t * (_P1 + t * (_P2 + t * (_P3 + t * (_P4 + t * _P5))))
                out[i] = (1.0 - ((low - (r * c) / (2.0 - c)) - high)) * from_bits((np.int64(k) + 1023) << 52)
                outside |= not near
            if outside:  # the elements past the reach, by the C library's exp
                for i in range(x.shape[0]):
                    if not abs(x[i]) <= _REACH:
                        out[i] = np.exp(x[i])
            return out
        return implementation
