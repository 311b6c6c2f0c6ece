"""Random programs that write through numpy's doors into every kind of object, for a differential test.

A sibling of ``aliasing_programs.py``.  Each program is a module whose ``f(x, y)`` (x and y of shape
(4,)) first reads everything it could write (``u = G * x + K * y + buf * x + ...``, a value the adjoint
keeps), then writes through one door, in ``f`` itself, in a branch or a loop, or in a helper ``f`` calls:

* the doors: a ufunc's output by position (``np.maximum(t, 0.1, t)``), a ufunc method's own
  (``np.add.accumulate(e, 0, None, t)``), a function's or an array method's (``np.cumsum(e, 0, None, t)``,
  ``t.clip(lo, hi, t)``), ``out=``, ``copy=False``, ``overwrite_input=True``, ``t.fill``, ``t.sort``, a
  bound method kept in a name, ``exec``, item and augmented assignment, ``globals()[...]``,
  ``sys.modules[__name__]``, a random generator's ``out`` (which sets the result's shape), and
  ``globals()["SCALE"] = ...`` rebinding a global ``f`` read;
* the objects written: the argument ``x``, a local array, views of it (``a[::-1]``, ``a.reshape(-1)``,
  ``np.asarray(a)``, ``a.T``), a global, a closure's array, a default argument, what a function returns
  and a property.

Most such programs must be refused; the rest must give numpy's own numbers.  ``reset()`` puts every
global, closure and default back, and ``state()`` reads them, so that numpy's run, astgrad's run and
each finite difference start alike and end alike.
"""

from hypothesis import strategies as st

HEADER = '''import sys

import numpy as np

G0 = np.array([0.8, -0.3, 0.45, 1.2])
G = G0.copy()
BOX0 = np.array([0.6, 1.1, -0.7, 0.35])
BOX = BOX0.copy()
H0 = np.array([0.2, -0.9, 0.65, 0.4])
SCALE = 1.5


class Holder:
    def __init__(self):
        self.arr = H0.copy()

    @property
    def data(self):
        return self.arr


H = Holder()


def get_box():
    return BOX


def make():
    K0 = np.array([1.1, 0.3, -0.4, 0.75])
    K = K0.copy()

    def reset():
        global SCALE
        G[...] = G0
        BOX[...] = BOX0
        H.arr[...] = H0
        K[...] = K0
        SCALE = 1.5

    def state():
        return [G.copy(), BOX.copy(), H.arr.copy(), K.copy(), SCALE]
'''

FOOTER = '''    return f, reset, state


f, reset, state = make()
'''

#: what may be written, by kind; ``reachable`` ones a helper reaches without being given them
TARGETS = {"argument": ["x"], "local": ["a"], "view": ["v", "a[::-1]", "a.reshape(-1)", "np.asarray(a)", "a.T"],
           "global": ["G"], "closure": ["K"], "default": ["buf"], "returned": ["get_box()", "H.data"]}
REACHABLE = ["G", "K", "box", "get_box()", "H.data"]
NAMES = {"x", "a", "v", "buf", "box", "p"}  # augmented assignment: locals (G, K would need global, nonlocal)

#: statements writing into ``{t}`` (``{e}`` a new array of shape (4,)); some only where ``{t}`` is a name
DOORS = ["np.maximum({t}, 0.1, {t})", "np.add({e}, {t}, {t})", "np.multiply({e}, 2.0, out={t})",
         "np.add.accumulate({e}, 0, None, {t})", "np.cumsum({e}, 0, None, {t})", "np.clip({t}, -0.5, 0.5, {t})",
         "{t}.clip(-0.5, 0.5, {t})", "s = np.sum(np.nan_to_num({t}, copy=False, nan=0.0)) * 0.1",
         "s = np.median({t}, overwrite_input=True)", "{t}.fill(0.3)", "{t}.sort()", "w = {t}.fill\nw(0.3)",
         "exec('{t}[0] = 0.5')", "{t}[1] = np.sum({e}) * 0.2", "np.random.default_rng(1).random(out={t})",
         "np.random.default_rng(1).standard_normal(None, np.float64, {t})"]
NAME_DOORS = ["{t} += {e}", "{t} *= 0.5"]
#: doors that reach a global by a string, whatever the target
STRING_DOORS = ["globals()['G'][0] = 0.5", "globals()['SCALE'] = 2.5", "sys.modules[__name__].G[2] = 0.5"]
CONSTANTS = st.sampled_from([-0.5, 0.25, 0.7])


@st.composite
def _door(draw, target, e):
    doors = DOORS + (NAME_DOORS if target in NAMES else [])
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(STRING_DOORS)).split("\n")
    return draw(st.sampled_from(doors)).format(t=target, e=e).split("\n")


@st.composite
def door_programs(draw):
    """Source of a module defining ``f(x, y)``, ``reset()`` and ``state()``; ``f`` returns a number."""
    where = draw(st.sampled_from(["inline", "inline", "branch", "loop", "helper given", "helper reaches"]))
    helper = ["    def helper(p, q, box=BOX):"]
    if where == "helper reaches":
        target = draw(st.sampled_from(REACHABLE))
        helper += ["        " + line for line in draw(_door(target, "np.sin(q)"))]
        call = ["helper(None, x)"]
        read = "BOX" if target == "box" else target
    else:
        kind = draw(st.sampled_from(sorted(TARGETS) + ["local"] * 3))  # a local: where most doors are exact
        read = draw(st.sampled_from(TARGETS[kind]))
        if where == "helper given":
            helper += ["        " + line for line in draw(_door("p", "np.sin(q)"))]
            call = [f"helper({read}, x)"]
        else:
            e = draw(st.sampled_from(["np.sin(x)", "(x * y)", "np.cos(y) * 0.5"]))
            call = draw(_door(read, e))
            helper += ["        pass"]
    if where == "branch":
        call = [f"if np.sum(x) > {draw(CONSTANTS)}:"] + ["    " + line for line in call]
    elif where == "loop":
        call = ["for i in range(2):"] + ["    " + line for line in call]
    body = ["a = x * 1.3", "v = a[::-1]", "s = 0.0", "u = G * x + K * y + buf * x + SCALE * y + a * y + H.data * x"]
    body += call
    body += [f"return float(np.sum(u * u) + np.sum({read} * x) + s)"]
    lines = helper + ["        return None", "", "    def f(x, y, buf=BOX):"] + ["        " + line for line in body]
    return HEADER + "\n" + "\n".join(lines) + "\n\n" + FOOTER
