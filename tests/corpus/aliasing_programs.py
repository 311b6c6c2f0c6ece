"""Random programs that write through views and aliases, for the aliasing differential test.

A sibling of ``programs.py``: every vector has shape (4,), and matrices (4, 4) made by ``np.outer``
give rows and columns that are views.  Names are made fresh (arithmetic), as views (``a[::-1]``,
``a[:]``, ``a.T``, ``a.reshape(4)``, ``m[1]``, ``m[:, 2]``, ``m.T[0]``), as plain aliases
(``b = a``) or put in lists and tuples, and then written in place (``+=``, ``-=``, ``*=``, ``/=``,
``a[1] = ...``, ``a[:2] += ...``, ``out=a``, ``a.sort()``, ``a.fill(...)``, ``np.copyto(a, ...)``,
``rng.shuffle(a)``, ``lst.reverse()``, ``lst += [...]``),
in branches and loops, the parameters ``x`` and ``y`` included.  Many such programs write memory
that another name reads, which the transformer must refuse; the others it must reproduce.
"""

import itertools

from hypothesis import strategies as st

CONSTANTS = st.sampled_from([-1.5, -0.5, 0.25, 0.7, 1.3])
VECTOR_VIEWS = ["{}[::-1]", "{}[:]", "{}.T", "{}.reshape(4)", "np.reshape({}, (4,))"]
MATRIX_VIEWS = ["{}[1]", "{}[:, 2]", "{}.T[0]", "{}[::-1][3]"]
FRESH = ["np.sin({a})", "({a} * {b})", "({a} + {b})", "np.tanh({a}) * 1.5", "({a} * 0.5 - {b})",
         "np.cos({a}) * {b}", "({a} * {c})"]
WRITES = ["{t} += {e}", "{t} -= {e}", "{t} *= np.tanh({e})", "{t} /= ({e} * {e} + 1.0)",
          "{t}[1] = np.sum({e}) * 0.3", "{t}[:2] += ({e})[2:]", "np.add({t}, {e}, out={t})",
          "np.multiply(np.sin({e}), {t}, out={t})", "{t}.sort()", "{t}.fill(np.sum({e}) * 0.1)",
          "np.copyto({t}, np.cos({e}))", "{t}[::-1] *= {c}", "np.clip({t}, -0.9, 0.8, {t})",
          "{t}.clip(-0.7, 0.9, {t})", "np.dot(np.outer({e}, {e}) * 0.2, {e}, {t})",
          "np.random.default_rng(1).shuffle({t})"]


class _State:
    def __init__(self):
        self.vectors = ["x", "y"]
        self.matrices = []
        self.containers = []  # ("l0", 2): a list or tuple of two vectors
        self.lists = set()
        self.fresh = (f"v{i}" for i in itertools.count())
        self.owned = []  # names last bound to a new array no other name has seen yet

    def shared(self, name):
        if name in self.owned:
            self.owned.remove(name)

    def leaves(self):
        return self.vectors + [f"{c}[{i}]" for c, n in self.containers for i in range(n)]


@st.composite
def _vector(draw, state, depth=1):
    """An expression of shape (4,) that is a new array (never a bare name)."""
    leaves = state.leaves()
    a = draw(st.sampled_from(leaves))
    if depth > 0 and draw(st.booleans()):
        a = draw(_vector(state, depth - 1))
    template = draw(st.sampled_from(FRESH))
    return template.format(a=a, b=draw(st.sampled_from(leaves)), c=draw(CONSTANTS))


@st.composite
def _statement(draw, state, depth):
    kinds = ["write", "write", "write", "fresh", "view", "alias"]
    if depth == 0:
        kinds += ["matrix", "container", "if", "for"]
    kind = draw(st.sampled_from(kinds))
    top = depth == 0
    if kind == "write":
        # mostly into a name that owns its array, so that many programs are exact rather than refused
        names = state.owned if state.owned and draw(st.integers(0, 3)) else state.vectors
        template = draw(st.sampled_from(WRITES))
        return [template.format(t=draw(st.sampled_from(names)), e=draw(_vector(state)), c=draw(CONSTANTS))]
    if kind == "matrix":
        name = next(state.fresh).replace("v", "m")
        line = f"{name} = np.outer({draw(_vector(state, 0))}, {draw(st.sampled_from(state.leaves()))})"
        state.matrices.append(name)
        return [line]
    if kind == "container" and state.containers and draw(st.booleans()):
        name, _ = draw(st.sampled_from(state.containers))
        if name in state.lists and draw(st.booleans()):  # a list changed in place (a tuple cannot be)
            return [f"{name}.reverse()"] if draw(st.booleans()) else [f"{name} += [{draw(_vector(state, 0))}]"]
    if kind == "container":
        name = next(state.fresh).replace("v", "l")
        items = draw(st.lists(st.sampled_from(state.vectors), min_size=2, max_size=2))
        for item in items:
            state.shared(item)
        if draw(st.booleans()):
            line = f"{name} = [{items[0]}, {items[1]}]"
            state.lists.add(name)
        else:
            line = f"{name} = ({items[0]}, {items[1]})"
        state.containers.append((name, 2))
        return [line]
    if kind in ("if", "for"):
        inner = []
        for _ in range(draw(st.integers(1, 3))):
            inner += ["    " + line for line in draw(_statement(state, depth + 1))]
        if kind == "for":
            return [f"for i in range({draw(st.integers(1, 3))}):"] + inner
        head = [f"if np.sum({draw(_vector(state, 0))}) > {draw(CONSTANTS)}:"] + inner
        if draw(st.booleans()):
            head += ["else:"] + ["    " + line for line in draw(_statement(state, depth + 1))]
        return head
    # fresh, view or alias: inside a block only names that exist are assigned, so none is unbound after
    target = next(state.fresh) if top and draw(st.booleans()) else draw(st.sampled_from(state.vectors))
    state.shared(target)
    if kind == "fresh":
        value = draw(_vector(state))
        if top:
            state.owned.append(target)
    elif kind == "view" and state.matrices and draw(st.booleans()):
        value = draw(st.sampled_from(MATRIX_VIEWS)).format(draw(st.sampled_from(state.matrices)))
    elif kind == "view":
        source = draw(st.sampled_from(state.vectors))
        state.shared(source)
        # reshapes only outside loops: there the zero adjoint 0.0 of a rebound name reaches
        # np.reshape(g, shape), which crashes (a known bug of zero adjoints, not of aliasing)
        value = draw(st.sampled_from(VECTOR_VIEWS if top else VECTOR_VIEWS[:3])).format(source)
    else:
        value = draw(st.sampled_from(state.leaves()))
        state.shared(value)
    if target not in state.vectors:
        state.vectors.append(target)
    return [f"{target} = {value}"]


@st.composite
def aliasing_programs(draw):
    """Source of a module defining ``f(x, y)`` with x and y of shape (4,), returning a number."""
    state = _State()
    body = []
    for _ in range(draw(st.integers(2, 7))):
        body += ["    " + line for line in draw(_statement(state, 0))]
    terms = [f"np.sum({draw(st.sampled_from(state.leaves()))} * {draw(st.sampled_from(state.leaves()))})"
             for _ in range(draw(st.integers(1, 3)))]
    terms += [f"np.sum({m} * {m}) * 0.1" for m in state.matrices]
    return "\n".join(["import numpy as np", "", "", "def f(x, y):"] + body
                     + [f"    return {' + '.join(terms)}", ""])
