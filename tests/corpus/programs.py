"""Random programs for property-based tests: a small grammar rendered as source.

The transformer reads functions through ``inspect``, so a drawn program is
written to a module file and imported.  Every value is an array of shape
(3,) that no other name aliases (so ``v += ...`` writes nowhere else, as
the transformer assumes); conditions compare sums with constants, so branches, loop exits and
trip counts depend on the data; unary operations are bounded so values
stay finite.
"""

import importlib.util
import itertools
import os
import sys

from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

CONSTANTS = st.sampled_from([-1.5, -0.5, 0.25, 0.7, 1.3, 2.0])
UNARY = ["np.sin({})", "np.cos({})", "np.tanh({})", "({} * {})", "(-{})", "np.exp(np.sin({}))",
         "np.sqrt({} * {} + 1.0)", "np.maximum({}, 0.1)", "{}[[2, 0, 1]]", "np.roll({}, 1)",
         "np.clip({}, a_min=-0.83, a_max=0.87)"]
BINARY = ["({} + {})", "({} - {})", "({} * {})", "({} / ({} * {} + 1.0))", "(np.sum({}) * {})",
          "(np.mean({}, keepdims=True) + {})", "({}[0] * {})", "np.where({} > 0, {}, 0.5 * {})",
          "(np.dot({}, {}) * 0.3 + 0.0 * {})"]


@st.composite
def expressions(draw, names, depth=2, fresh_array=False):
    """An expression of shape (3,); with ``fresh_array`` never a bare name (an alias)."""
    if depth == 0 and fresh_array:
        return f"({draw(st.sampled_from(names))} * {draw(CONSTANTS)})"
    if depth == 0 or not fresh_array and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(names))
    if draw(st.booleans()):
        template = draw(st.sampled_from(UNARY))
        inner = draw(expressions(names, depth - 1))
        return template.format(*[inner] * template.count("{}"))
    if draw(st.integers(0, 4)) == 0:
        return f"({draw(expressions(names, depth - 1))} * {draw(CONSTANTS)})"
    template = draw(st.sampled_from(BINARY))
    a = draw(expressions(names, depth - 1))
    b = draw(expressions(names, depth - 1))
    if template.startswith("np.where"):  # a fresh array, as are all the others
        return template.format(a, b, b)
    if template.startswith("(np.dot"):
        return template.format(a, b, b)
    if template.count("{}") == 3:
        return template.format(a, b, b)
    return template.format(a, b)


@st.composite
def statements(draw, names, helpers, depth, fresh, loop_locals=False):
    """A list of source lines (unindented) that may assign ``names`` or new names.

    With ``loop_locals`` a ``for`` body may begin by binding a name of its own (``w3 = x * 0.7``, read
    by the rest of the body, pushed each trip) and end by reading the loop index, which an inner loop
    of the body may have rebound.
    """
    kind = draw(st.sampled_from(["assign", "assign", "augmented", "call", "if", "for", "while"]
                                if depth > 0 else ["assign", "augmented", "call"]))
    locals_ = [n for n in names if n not in ("x", "y")]  # `x += ...` would write into the caller's array
    if kind == "call" and not helpers or kind == "augmented" and not locals_:
        kind = "assign"
    # inside a block, only names that already exist are assigned, so none is unbound afterwards
    target = draw(st.sampled_from(names)) if depth < 2 or draw(st.booleans()) else next(fresh)
    if kind == "assign":
        return [f"{target} = {draw(expressions(names, fresh_array=True))}"], target
    if kind == "augmented":
        # in place on a fresh product that nothing has read yet, with a right side that does not
        # read it: PyTorch's rules for in-place updates then let the tape run it too
        target = draw(st.sampled_from(locals_))
        op = draw(st.sampled_from(["+=", "*=", "-="]))
        others = [n for n in names if n != target]
        return [f"{target} = {draw(expressions(names))} * 1.0",
                f"{target} {op} np.tanh({draw(expressions(others, 1))})"], None
    if kind == "call":
        helper = draw(st.sampled_from(helpers))
        a, b = draw(st.sampled_from(names)), draw(expressions(names, 1))
        return [f"{target} = {helper}({a}, {b})"], target
    body = lambda: _block(draw, names, helpers, depth - 1, fresh, loop_locals)  # noqa: E731
    if kind == "if":
        test = f"np.sum({draw(expressions(names, 1))}) > {draw(CONSTANTS)}"
        lines = [f"if {test}:"] + body()
        if draw(st.booleans()):
            lines += ["else:"] + body()
        return lines, None
    if kind == "for":
        count = draw(st.integers(0, 3))
        lines = [f"for i in range({count}):"]
        if loop_locals and draw(st.booleans()):
            local = next(fresh).replace("v", "w")
            value = draw(expressions(names, draw(st.integers(0, 2)), fresh_array=True))
            lines.append(f"    {local} = {value}" + (" * (i + 0.5)" if draw(st.booleans()) else ""))
            lines += _block(draw, names + [local], helpers, depth - 1, fresh, loop_locals)
        else:
            lines += body()
        if loop_locals and draw(st.booleans()):
            target = draw(st.sampled_from(names))
            lines.append(f"    {target} = {draw(expressions(names, 1))} * (i * 0.25 + 1.0)")
        if draw(st.booleans()):
            lines += [f"    if np.sum({draw(st.sampled_from(names))}) > {draw(CONSTANTS)}:", "        break"]
        return lines, None
    variable = draw(st.sampled_from(names))
    counter = next(fresh).replace("v", "k")
    return [f"{counter} = 0",
            f"while np.sum({variable} * {variable}) < {draw(st.sampled_from([2.0, 5.0, 20.0]))} and {counter} < 4:",
            f"    {variable} = np.tanh({variable}) * 1.7 + {draw(expressions(names, 1))} * 0.1",
            f"    {counter} = {counter} + 1"], None


def _block(draw, names, helpers, depth, fresh, loop_locals=False):
    lines = []
    for _ in range(draw(st.integers(1, 2))):
        new, _ = draw(statements(names, helpers, depth, fresh, loop_locals))
        lines += ["    " + line for line in new]
    return lines


@st.composite
def programs(draw, loop_locals=False):
    """Source of a module defining helpers ``h0``, ``h1`` and ``f(x, y)`` (``loop_locals``: see ``statements``)."""
    lines = ["import numpy as np", ""]
    helpers = []
    for h in range(draw(st.integers(0, 2))):
        params = ["a", "b"]
        body = [f"    c = {draw(expressions(params))}"]
        if draw(st.booleans()):
            body += [f"    if np.sum(c) > {draw(CONSTANTS)}:", f"        c = {draw(expressions(params + ['c']))}"]
        if helpers and draw(st.booleans()):
            body += [f"    c = {draw(st.sampled_from(helpers))}(c, a)"]
        lines += [f"def h{h}(a, b):"] + body + [f"    return {draw(expressions(params + ['c'], 1, fresh_array=True))}", "", ""]
        helpers.append(f"h{h}")
    names = ["x", "y"]
    fresh = (f"v{i}" for i in itertools.count())
    body = []
    for _ in range(draw(st.integers(1, 5))):
        new, target = draw(statements(names, helpers, 2, fresh, loop_locals))
        body += ["    " + line for line in new]
        if target and target not in names:
            names.append(target)
    result = draw(st.sampled_from(names))
    lines += ["def f(x, y):"] + body + [f"    return np.sum({result} * {result}) + np.sum(x * y)", ""]
    return "\n".join(lines)


def load(source, directory, name):
    """Write ``source`` to ``directory/name.py`` and import it (inspect must find the file)."""
    path = directory / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def fresh_run(**common):
    """``settings`` of a ``--runslow`` run: new random programs each time, and a failure that replays.

    A failure prints its program (the tests ``note`` it) and a ``@reproduce_failure(...)`` line to
    paste above the test; with ``ASTGRAD_HYPOTHESIS_DB=<directory>`` it is also saved there, and the
    next run with the same setting tries it first.
    """
    directory = os.environ.get("ASTGRAD_HYPOTHESIS_DB")
    return dict(common, derandomize=False, print_blob=True,
                database=DirectoryBasedExampleDatabase(directory) if directory else None)
