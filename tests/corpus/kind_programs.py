"""Random programs mixing what numpy gives no derivative, narrower dtypes and odd types into float code.

A sibling of ``door_programs.py``, with the same module interface (``f(x, y)`` of two arrays of shape
(4,) returning a number, ``reset()`` and ``state()``), so ``test_door_programs.check_program`` checks
them: refused at the program's line, or numpy's value and the central-difference gradient.  Three kinds:

* ``nondiff_programs``: calls the table declares non-differentiable or integer-valued (``np.argmax``,
  ``np.sign``, ``np.round``, ``np.floor``, comparisons, ``np.unique``'s indices, ``np.searchsorted``,
  ``np.digitize``, ``astype(int)``, ...) whose result either multiplies a float value (a piecewise
  constant factor: its derivative is zero) or indexes one;
* ``dtype_programs``: float values written into arrays of int, bool, float32 and complex dtype by item
  assignment, augmented assignment, ``out=``, ``np.copyto``, ``fill`` and ``astype`` round trips (an
  int or bool target cuts the gradient, as numpy's cast does);
* ``type_programs``: ``np.matrix``, masked arrays, a trivial ndarray subclass, a subclass overriding
  ``__mul__``, ``Fraction``, ``Decimal``, 0-d arrays, numpy scalars and Python ints, as a helper's
  arguments, as globals and as closure values, meeting float arrays in ``*``, ``@``, ``np.multiply``,
  ``np.sum`` and ``**``.

Each is placed in ``f`` itself, in a branch, in a loop or in a helper ``f`` calls.
"""

from hypothesis import strategies as st

HEADER = '''import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np


class Sub(np.ndarray):
    pass


warnings.filterwarnings("ignore", "the matrix subclass", PendingDeprecationWarning)


class MulSub(np.ndarray):
    def __mul__(self, other):
        return np.add(np.asarray(self), np.asarray(other))


M = np.matrix(np.linspace(-0.6, 0.9, 16).reshape(4, 4))
MA = np.ma.array([0.8, -0.3, 0.45, 1.2], mask=[0, 1, 0, 0])
SUB = np.array([0.6, 1.1, -0.7, 0.35]).view(Sub)
MUL = np.array([0.2, -0.9, 0.65, 0.4]).view(MulSub)
FR = Fraction(3, 4)
DEC = Decimal("0.75")
Z0 = np.array(0.7)
F32 = np.float32(0.7)
I64 = np.int64(3)
PY = 3


def make():
    K = {closure}

    def reset():
        pass

    def state():
        return []
'''

FOOTER = '''    return f, reset, state


f, reset, state = make()
'''

CONSTANTS = st.sampled_from([-1.6, 0.7, 1.3, 2.1])

#: statements giving ``u`` (shape (4,)) from ``w`` (a float array of x) and ``y``, through a call numpy
#: gives no derivative: a factor that is piecewise constant, or an index
NONDIFF = ["u = y * np.argmax(w)", "u = w * y[np.argmax(w)]", "u = np.sign(w) * y", "u = np.round(w) * y + w",
           "u = np.round(w, 1) * y", "u = np.floor(w) + w * y", "u = np.ceil(w) * y", "u = np.trunc(w) * w",
           "u = np.rint(w) * y", "u = (w > 0.1) * y", "u = w * (y <= w)", "u = np.heaviside(w, 0.5) * y",
           "u = w * np.floor_divide(y, 0.5)", "u = np.isclose(w, y, atol=0.3) * w",
           "_, i = np.unique(np.round(w), return_index=True)\nu = np.sum(y[i]) * w",
           "u = y[np.clip(np.searchsorted(np.sort(w), 0.2), 0, 3)] * w",
           "u = y * np.digitize(w, [-0.5, 0.0, 0.5])", "u = w.astype(int) + y", "u = y * w.astype(int)",
           "u = y[np.argsort(w)] * w", "u = w * np.count_nonzero(w > 0)", "k = int(np.argmin(w))\nu = y * w[k]",
           "u = w[np.nonzero(w > 0)[0]].sum() * y", "u = w * np.sum(w > y)", "u = np.where(w > 0)[0].size * w",
           "u = y * np.mod(np.floor(w * 3), 2)", "u = w * np.argsort(np.argsort(y))",
           "_, i = np.unique(np.round(w), return_inverse=True)\nu = w * i",
           "u = np.take(y, np.argmin(w)) * w", "u = np.bincount(np.abs(w.astype(int)), minlength=4)[:4] * w"]


@st.composite
def _placed(draw, lines, names):
    """``lines`` (computing ``u`` from the names in ``names``) in ``f``, a branch, a loop or a helper."""
    where = draw(st.sampled_from(["inline", "inline", "branch", "loop", "helper"]))
    helper = ["    def helper(" + ", ".join(names) + "):", "        u = None"]
    if where == "helper":
        helper += ["        " + line for line in lines] + ["        return u"]
        call = ["u = helper(" + ", ".join(names) + ")"]
    else:
        helper += ["        return u"]
        call = list(lines)
    if where == "branch":
        call = ["u = y", f"if np.sum(x) > {draw(st.sampled_from([-0.5, 0.25, 0.7]))}:"] + ["    " + c for c in call]
    elif where == "loop":
        call = ["for i in range(2):"] + ["    " + c for c in call]
    return helper, call


def _module(helper, body, closure="np.array([1.1, 0.3, -0.4, 0.75])"):
    lines = helper + ["", "    def f(x, y):"] + ["        " + line for line in body]
    return HEADER.format(closure=closure) + "\n" + "\n".join(lines) + "\n\n" + FOOTER


@st.composite
def nondiff_programs(draw):
    """``f`` mixes a call numpy gives no derivative (a factor or an index) into float code."""
    lines = draw(st.sampled_from(NONDIFF)).split("\n")
    helper, call = draw(_placed(lines, ["w", "y"]))
    w = draw(st.sampled_from(["x * {c}", "np.sin(x) * {c}", "x * y * {c}", "x + y * {c}"])).format(c=draw(CONSTANTS))
    body = [f"w = {w}"] + call + ["return float(np.sum(u * u) + np.sum(u * x) + np.sum(w * y))"]
    return _module(helper, body)


DTYPES = ["int", "np.int32", "bool", "np.float32", "np.complex128", "float"]
#: statements writing float values of ``w`` and ``y`` into ``t``, an array of the drawn dtype
DTYPE_DOORS = ["t[1] = w[2] * 3.0", "t[:] = w * 2.5", "t[[0, 2]] = y[:2] * 3.0", "t[w > 0] = y[w > 0] * 2.0",
               "t += w * 2.0", "t *= w", "np.multiply(w, 2.5, out=t)", "np.multiply(w, 2.5, out=t, casting='unsafe')",
               "np.copyto(t, w * 2.5)", "np.copyto(t, w * 2.5, casting='unsafe')", "t.fill(w[0] * 2.5)",
               "t = (w * 2.5).astype({d}).astype(float)", "t = (w * 2.5).astype({d}) * y", "t[...] = w[1] * 2.0",
               "t[1:3] += y[:2] * 4.0", "np.add(t, w * 2.0, out=t, casting='unsafe')", "t.real[:] = w",
               "np.put(t, [0, 3], w[:2] * 2.0)"]


@st.composite
def dtype_programs(draw):
    """``f`` writes float values into an array of int, bool, float32 or complex dtype, then reads it."""
    dtype = draw(st.sampled_from(DTYPES))
    door = draw(st.sampled_from(DTYPE_DOORS)).format(d=dtype)
    start = draw(st.sampled_from(["np.zeros(4, {d})", "np.ones(4, dtype={d})", "(x * 2.0).astype({d})"]))
    lines = [f"t = {start.format(d=dtype)}"] + door.split("\n") + ["u = t * w + w"]
    helper, call = draw(_placed(lines, ["x", "w", "y"]))
    w = draw(st.sampled_from(["x * {c}", "np.sin(x) * {c}", "x * y * {c}"])).format(c=draw(CONSTANTS))
    body = [f"w = {w}"] + call + ["return float(np.sum(np.real(u * np.conj(u))) + np.sum(np.real(u) * y))"]
    return _module(helper, body)


#: odd values, by where they come from; ``{x}`` an array argument of ``f``
ODD_GLOBALS = ["M", "MA", "SUB", "MUL", "FR", "DEC", "Z0", "F32", "I64", "PY"]
ODD_CLOSURES = ["np.matrix(np.linspace(-0.6, 0.9, 16).reshape(4, 4))", "np.ma.array([0.8, -0.3, 0.45, 1.2], "
                "mask=[0, 1, 0, 0])", "np.array([0.6, 1.1, -0.7, 0.35]).view(Sub)",
                "np.array([0.2, -0.9, 0.65, 0.4]).view(MulSub)", "Fraction(3, 4)", "Decimal('0.75')",
                "np.array(0.7)", "np.float32(0.7)", "np.int64(3)", "3"]
ODD_ARGUMENTS = ["np.matrix({x})", "{x}.view(Sub)", "{x}.view(MulSub)", "np.ma.array({x}, mask=[0, 1, 0, 0])",
                 "np.ma.masked_greater({x}, 0.5)", "np.asmatrix({x})", "{x}[0]", "np.float32({x}[0])", "np.array({x}[0])", "3", "Fraction(1, 3)",
                 "np.int64(2)"]
#: how an odd value ``p`` meets a float array ``q`` of shape (4,)
MEETINGS = ["u = q * p", "u = p * q", "u = np.multiply(q, p)", "u = q ** 2 * p", "u = np.sum(p * q) * q",
            "u = q @ p + q", "u = p + q * q", "u = np.sum(q * p, axis=-1) * q", "u = q * p * q",
            "u = np.mean(p * q) + q", "u = np.dot(q, p) * q"]


@st.composite
def type_programs(draw):
    """An odd type (a subclass, a scalar type numpy gives other rules) as a helper's argument, a global or
    a closure value, meeting a float array."""
    meeting = draw(st.sampled_from(MEETINGS))
    source = draw(st.sampled_from(["argument", "global", "closure"]))
    closure = "np.array([1.1, 0.3, -0.4, 0.75])"
    q = draw(st.sampled_from(["x", "np.sin(x) * y", "x * y"]))
    if source == "argument":
        odd = draw(st.sampled_from(ODD_ARGUMENTS)).format(x=draw(st.sampled_from(["x", "y", "(x * y)"])))
        helper = ["    def helper(p, q):", "        " + meeting, "        return u"]
        call = [f"u = helper({odd}, {q})"]
    else:
        if source == "global":
            p = draw(st.sampled_from(ODD_GLOBALS))
        else:
            closure, p = draw(st.sampled_from(ODD_CLOSURES)), "K"
        helper, call = draw(_placed([f"p = {p}", f"q = {q}", meeting], ["x", "y"]))
    final = draw(st.sampled_from(["np.sum(np.multiply(u, u))", "np.sum(u * u)", "np.sum(u) * np.sum(y)"]))
    body = call + [f"return float({final} + np.sum(x * y))"]
    return _module(helper, body, closure)
