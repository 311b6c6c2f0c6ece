"""Derivative rules for numpy's elementwise functions and for ``math``.

Each rule reads like the math it implements.  ``g`` is the incoming
gradient, ``ans`` the primitive's output.  Shapes are not reconciled here:
the engines un-broadcast every returned gradient centrally.

A unary elementwise function has a diagonal Jacobian, so where its reverse
rule is ``g * f'(x)`` (holomorphic, or real) that same rule is its forward
rule, read with ``g`` as the tangent: it is registered twice, not written
twice.  Binary functions get one forward rule per argument (``t`` the
tangent of that argument).

Long: one table of about 160 short entries, one per ufunc or ``math``
function, each a line or two of calculus; kept in one place so that every
elementwise derivative can be read, and compared with its neighbours, on
one page.  Entries that are more than a formula live in their own modules.
"""

from __future__ import annotations

import math

import numpy as np

from ._registry import defjvp, defnondiff, defvjp

# ---------------------------------------------------------------- unary ufuncs


@defvjp(np.negative)
def negative(g, ans, x):
    return -g


@defvjp(np.positive)
def positive(g, ans, x):
    return g


@defvjp(np.exp)
def exp(g, ans, x):
    return g * ans


@defvjp(np.exp2)
def exp2(g, ans, x):
    return g * ans * np.log(2.0)


@defvjp(np.expm1)
def expm1(g, ans, x):
    return g * (ans + 1)


@defvjp(np.log)
def log(g, ans, x):
    return g / x


@defvjp(np.log2)
def log2(g, ans, x):
    return g / (x * np.log(2.0))


@defvjp(np.log10)
def log10(g, ans, x):
    return g / (x * np.log(10.0))


@defvjp(np.log1p)
def log1p(g, ans, x):
    return g / (x + 1)


@defvjp(np.sqrt)
def sqrt(g, ans, x):
    return g / (2 * ans)


@defvjp(np.cbrt)
def cbrt(g, ans, x):
    return g / (3 * ans * ans)


@defvjp(np.square)
def square(g, ans, x):
    return g * 2 * x


@defvjp(np.reciprocal)
def reciprocal(g, ans, x):
    return -g * ans * ans


@defvjp(np.absolute)
def absolute(g, ans, x):
    return np.real(g) * np.conj(np.sign(x))


@defvjp(np.fabs)
def fabs(g, ans, x):
    return g * np.sign(x)


@defvjp(np.sinc)
def sinc(g, ans, x):
    return g * np.where(x == 0, 0, (np.cos(np.pi * x) - ans) / np.where(x == 0, 1, x))


@defvjp(np.sin)
def sin(g, ans, x):
    return g * np.cos(x)


@defvjp(np.cos)
def cos(g, ans, x):
    return -g * np.sin(x)


@defvjp(np.tan)
def tan(g, ans, x):
    return g * (1 + ans * ans)


@defvjp(np.arcsin)
def arcsin(g, ans, x):
    return g / np.sqrt(1 - x * x)


@defvjp(np.arccos)
def arccos(g, ans, x):
    return -g / np.sqrt(1 - x * x)


@defvjp(np.arctan)
def arctan(g, ans, x):
    return g / (1 + x * x)


@defvjp(np.sinh)
def sinh(g, ans, x):
    return g * np.cosh(x)


@defvjp(np.cosh)
def cosh(g, ans, x):
    return g * np.sinh(x)


@defvjp(np.tanh)
def tanh(g, ans, x):
    return g * (1 - ans * ans)


@defvjp(np.arcsinh)
def arcsinh(g, ans, x):
    return g / np.sqrt(x * x + 1)


@defvjp(np.arccosh)
def arccosh(g, ans, x):
    return g / np.sqrt(x * x - 1)


@defvjp(np.arctanh)
def arctanh(g, ans, x):
    return g / (1 - x * x)


@defvjp(np.deg2rad)
def deg2rad(g, ans, x):
    return g * (np.pi / 180)


@defvjp(np.rad2deg)
def rad2deg(g, ans, x):
    return g * (180 / np.pi)


defvjp(np.degrees, rad2deg)
defvjp(np.radians, deg2rad)


def step(g, ans, x, *args, **kwargs):
    """Piecewise-constant functions: zero gradient everywhere."""
    return g * 0


@defvjp(np.sign)
def sign(g, ans, x):
    """Zero for real ``x``; ``z / |z|`` of a complex ``z`` is smooth away from 0 (docs/rules.md)."""
    if not np.iscomplexobj(x):
        return g * 0
    modulus = np.abs(x)
    return np.where(modulus == 0, 0, (g - np.real(g * ans) * np.conj(ans)) / np.where(modulus == 0, 1, modulus))


for _step in (np.floor, np.ceil, np.rint, np.trunc, np.round, np.around, np.fix):
    defvjp(_step, step)


# ------------------------------------------------- forward rules, unary
# the reverse rule of a diagonal, symmetric Jacobian (g * f'(x)) is its forward rule

for _fn, _rule in ((np.negative, negative), (np.positive, positive), (np.exp, exp), (np.exp2, exp2),
                   (np.expm1, expm1), (np.log, log), (np.log2, log2), (np.log10, log10), (np.log1p, log1p),
                   (np.sqrt, sqrt), (np.cbrt, cbrt), (np.square, square), (np.reciprocal, reciprocal),
                   (np.sinc, sinc), (np.sin, sin), (np.cos, cos), (np.tan, tan), (np.arcsin, arcsin),
                   (np.arccos, arccos), (np.arctan, arctan), (np.sinh, sinh), (np.cosh, cosh), (np.tanh, tanh),
                   (np.arcsinh, arcsinh), (np.arccosh, arccosh), (np.arctanh, arctanh), (np.deg2rad, deg2rad),
                   (np.rad2deg, rad2deg), (np.degrees, rad2deg), (np.radians, deg2rad), (np.fabs, fabs),
                   (np.floor, step), (np.ceil, step), (np.rint, step), (np.trunc, step), (np.round, step),
                   (np.around, step), (np.fix, step)):
    defjvp(_fn, _rule)


@defjvp(np.absolute)
def absolute_jvp(t, ans, x):
    return np.real(np.conj(np.sign(x)) * t)


@defjvp(np.sign)
def sign_jvp(t, ans, x):
    """Zero for real ``x``; for complex ``z``, d(z/|z|) = (t - ans Re(conj(ans) t)) / |z|."""
    if not np.iscomplexobj(x):
        return t * 0
    modulus = np.abs(x)
    return np.where(modulus == 0, 0, (t - ans * np.real(np.conj(ans) * t)) / np.where(modulus == 0, 1, modulus))


# --------------------------------------------------------------- binary ufuncs


@defvjp(np.add)
def add(g, ans, x, y):
    return g, g


@defvjp(np.subtract)
def subtract(g, ans, x, y):
    return g, -g


@defvjp(np.multiply)
def multiply(g, ans, x, y):
    return g * y, g * x


@defvjp(np.divide)
def divide(g, ans, x, y):
    return g / y, -g * x / (y * y)


@defvjp(np.power)
def power(g, ans, x, y):
    return (
        g * np.where(y == 0, 0, y * x ** np.where(y == 0, 1, y - 1)),
        g * np.where((x == 0) & (y >= 0), 0, ans * np.log(np.where(x == 0, 1, x))),
    )


@defvjp(np.maximum)
def maximum(g, ans, x, y):
    return g * ((x > y) + (x == y) / 2), g * ((y > x) + (x == y) / 2)


@defvjp(np.minimum)
def minimum(g, ans, x, y):
    return g * ((x < y) + (x == y) / 2), g * ((y < x) + (x == y) / 2)


@defvjp(np.float_power)
def float_power(g, ans, x, y):
    return power(g, ans, x, y)


@defvjp(np.fmax)
def fmax(g, ans, x, y):
    x_wins = (x > y) | np.isnan(y)
    y_wins = (y > x) | np.isnan(x)
    return g * (x_wins + (x == y) / 2), g * (y_wins + (x == y) / 2)


@defvjp(np.fmin)
def fmin(g, ans, x, y):
    x_wins = (x < y) | np.isnan(y)
    y_wins = (y < x) | np.isnan(x)
    return g * (x_wins + (x == y) / 2), g * (y_wins + (x == y) / 2)


@defvjp(np.copysign)
def copysign(g, ans, x, y):
    return g * np.sign(x) * np.sign(ans), None


@defvjp(np.remainder)
def remainder(g, ans, x, y):
    return g, -g * np.floor_divide(x, y)



def fmod_quotient(x, y, ans):
    """The whole number of ``y`` that ``np.fmod`` took away from ``x`` (rounded toward zero), read off its result."""
    return np.rint((x - ans) / y)


@defvjp(np.fmod)
def fmod(g, ans, x, y):
    # between jumps fmod is x - q y with q constant; at a jump (x a multiple of y) the slopes of the branch numpy took
    return g, -g * fmod_quotient(x, y, ans)

@defvjp(np.arctan2)
def arctan2(g, ans, y, x):
    return g * x / (x * x + y * y), -g * y / (x * x + y * y)


@defvjp(np.hypot)
def hypot(g, ans, x, y):
    # at (0, 0) hypot is not differentiable: the zero subgradient, as for a norm
    at_zero = ans == 0
    return g * np.where(at_zero, 0, x / np.where(at_zero, 1, ans)), g * np.where(at_zero, 0, y / np.where(at_zero, 1, ans))


@defvjp(np.logaddexp)
def logaddexp(g, ans, x, y):
    return g * np.exp(x - ans), g * np.exp(y - ans)


@defvjp(np.logaddexp2)
def logaddexp2(g, ans, x, y):
    return g * 2 ** (x - ans), g * 2 ** (y - ans)



# ------------------------------------------------ forward rules, binary


def add_jvp(t, ans, x, y):
    return t


def subtract_jvp_y(t, ans, x, y):
    return -t


def multiply_jvp_x(t, ans, x, y):
    return t * y


def multiply_jvp_y(t, ans, x, y):
    return x * t


def divide_jvp_x(t, ans, x, y):
    return t / y


def divide_jvp_y(t, ans, x, y):
    return -t * x / (y * y)


def power_jvp_x(t, ans, x, y):
    return t * np.where(y == 0, 0, y * x ** np.where(y == 0, 1, y - 1))


def power_jvp_y(t, ans, x, y):
    return t * np.where((x == 0) & (y >= 0), 0, ans * np.log(np.where(x == 0, 1, x)))


def maximum_jvp_x(t, ans, x, y):
    return t * ((x > y) + (x == y) / 2)


def maximum_jvp_y(t, ans, x, y):
    return t * ((y > x) + (x == y) / 2)


def minimum_jvp_x(t, ans, x, y):
    return t * ((x < y) + (x == y) / 2)


def minimum_jvp_y(t, ans, x, y):
    return t * ((y < x) + (x == y) / 2)


def fmax_jvp_x(t, ans, x, y):
    return t * (((x > y) | np.isnan(y)) + (x == y) / 2)


def fmax_jvp_y(t, ans, x, y):
    return t * (((y > x) | np.isnan(x)) + (x == y) / 2)


def fmin_jvp_x(t, ans, x, y):
    return t * (((x < y) | np.isnan(y)) + (x == y) / 2)


def fmin_jvp_y(t, ans, x, y):
    return t * (((y < x) | np.isnan(x)) + (x == y) / 2)


def copysign_jvp(t, ans, x, y):
    return t * np.sign(x) * np.sign(ans)


def remainder_jvp_y(t, ans, x, y):
    return -t * np.floor_divide(x, y)



def fmod_jvp_y(t, ans, x, y):
    return -t * fmod_quotient(x, y, ans)

def arctan2_jvp_y(t, ans, y, x):
    return t * x / (x * x + y * y)


def arctan2_jvp_x(t, ans, y, x):
    return -t * y / (x * x + y * y)


def hypot_jvp_x(t, ans, x, y):
    return t * np.where(ans == 0, 0, x / np.where(ans == 0, 1, ans))


def hypot_jvp_y(t, ans, x, y):
    return t * np.where(ans == 0, 0, y / np.where(ans == 0, 1, ans))


def logaddexp_jvp_x(t, ans, x, y):
    return t * np.exp(x - ans)


def logaddexp_jvp_y(t, ans, x, y):
    return t * np.exp(y - ans)


def logaddexp2_jvp_x(t, ans, x, y):
    return t * 2 ** (x - ans)


def logaddexp2_jvp_y(t, ans, x, y):
    return t * 2 ** (y - ans)


defjvp(np.add, add_jvp, add_jvp)
defjvp(np.subtract, add_jvp, subtract_jvp_y)
defjvp(np.multiply, multiply_jvp_x, multiply_jvp_y)
defjvp(np.divide, divide_jvp_x, divide_jvp_y)
defjvp(np.power, power_jvp_x, power_jvp_y)
defjvp(np.float_power, power_jvp_x, power_jvp_y)
defjvp(np.maximum, maximum_jvp_x, maximum_jvp_y)
defjvp(np.minimum, minimum_jvp_x, minimum_jvp_y)
defjvp(np.fmax, fmax_jvp_x, fmax_jvp_y)
defjvp(np.fmin, fmin_jvp_x, fmin_jvp_y)
defjvp(np.copysign, copysign_jvp, None)
defjvp(np.remainder, add_jvp, remainder_jvp_y)
defjvp(np.fmod, add_jvp, fmod_jvp_y)
defjvp(np.arctan2, arctan2_jvp_y, arctan2_jvp_x)
defjvp(np.hypot, hypot_jvp_x, hypot_jvp_y)
defjvp(np.logaddexp, logaddexp_jvp_x, logaddexp_jvp_y)
defjvp(np.logaddexp2, logaddexp2_jvp_x, logaddexp2_jvp_y)

# --------------------------------------------------------- math on floats


@defvjp(math.sin)
def math_sin(g, ans, x):
    return g * math.cos(x)


@defvjp(math.cos)
def math_cos(g, ans, x):
    return -g * math.sin(x)


@defvjp(math.tan)
def math_tan(g, ans, x):
    return g * (1 + ans * ans)


@defvjp(math.exp)
def math_exp(g, ans, x):
    return g * ans


@defvjp(math.log)
def math_log(g, ans, x):
    return g / x


@defvjp(math.sqrt)
def math_sqrt(g, ans, x):
    return g / (2 * ans)


@defvjp(math.tanh)
def math_tanh(g, ans, x):
    return g * (1 - ans * ans)


for _math_fn, _rule in ((math.sin, math_sin), (math.cos, math_cos), (math.tan, math_tan), (math.exp, math_exp),
                        (math.log, math_log), (math.sqrt, math_sqrt), (math.tanh, math_tanh)):
    defjvp(_math_fn, _rule)

# --------------------------------------------------- no gradient flows here

defnondiff(
    np.argwhere, np.flatnonzero, np.searchsorted, np.digitize,
    np.bitwise_and, np.bitwise_or, np.invert,
    np.shape, np.ndim, np.size, np.argsort, np.zeros_like, np.ones_like,
    np.empty_like, np.equal, np.not_equal, np.less, np.less_equal,
    np.greater, np.greater_equal, np.logical_and, np.logical_or, np.logical_not,
    np.logical_xor, np.isnan, np.isinf, np.isfinite, np.all, np.any,
    np.floor_divide, np.nonzero, np.count_nonzero, np.array_equal,
    np.allclose, np.isclose, np.result_type, np.iscomplexobj, np.isrealobj,
)
