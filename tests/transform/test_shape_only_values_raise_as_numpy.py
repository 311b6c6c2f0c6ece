"""A value the gradient needs only for its shape (or not at all) raises what numpy raises, at every level.

At ``optimize=1`` and ``2`` such a value is replaced by its shape
computation where its operands are real floats; on other operands numpy
raises on dtypes and values (``int ** -1``, ``bool - bool``, ``~float``,
``1.0 / 0.0``, ``np.max`` of nothing), and the generated code computes it
as written.  Generated: every operation in OPERATIONS, written into every
program of PROGRAMS, meets every pair of OPERANDS, and the gradient is
compared with plain Python's run: the same exception type where it raises,
central differences where it does not.  One gradient meets the kinds in
turn, floats first and (for other functions) floats last: the adjoint a
gradient specialises for real float arguments (where the guard folds)
must never run for the others, nor theirs for floats.
"""

import importlib.util
import itertools
import warnings

import numpy as np
import pytest

import astgrad
from astgrad.transform import LEVELS

from tests._numeric import numeric_grad

OPERATIONS = ["a + b", "a - b", "a * b", "a / b", "a // b", "a % b", "a ** b", "-a", "~a", "a & b", "a << b",
              "a < b", "np.subtract(a, b)", "np.negative(a)", "np.maximum(a, b)", "np.power(a, b)",
              "np.max(a)", "np.sum(a - b)", "np.min(a, axis=0)", "a @ b"]

#: templates of a function of x (differentiated), a and b; ``{op}`` is one of OPERATIONS
PROGRAMS = {
    "unused": "def f(x, a, b):\n    y = {op}\n    return np.sum(x * x)\n",
    "shape_only": "def f(x, a, b):\n    d = x + {op}\n    return np.sum(d)\n",
    "chained": "def f(x, a, b):\n    t = {op}\n    d = x * 2.0 + t\n    return np.mean(d * 3.0)\n",
    "in_a_branch": "def f(x, a, b):\n    if np.sum(x) > 0:\n        y = x * ({op})\n    return np.sum(x * x)\n",
}

OPERANDS = {
    "float64": (np.array([1.0, 2.0, 4.0]), np.array([0.5, -1.0, 2.0])),
    "float32": (np.array([1.0, 2.0, 4.0], np.float32), np.array([0.5, 3.0, 2.0])),
    "float_zero": (np.array([1.0, 0.0, 4.0]), np.zeros(3)),
    "int": (np.array([1, 2, 3]), np.array([2, 1, 3])),
    "int_negative": (np.array([1, 2, 3]), np.array([-1, 1, 2])),
    "int_scalar_negative": (np.array([1, 2, 3]), -1),
    "int8_overflow": (np.array([1, 2, 3], np.int8), 300),
    "bool": (np.array([True, False, True]), np.array([False, False, True])),
    "python_floats_zero": (1.0, 0.0),
    "python_ints": (2, 3),
    "complex": (np.array([1.0, 2.0, 3.0]) + 1j, np.array([1.0, 2.0, 0.5])),
    "none": (None, np.ones(3)),
    "empty": (np.zeros(0), np.zeros(0)),
}


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    """Every program with every operation, in one module written to a file (astgrad reads source); a module
    for each order of calls, so that each order meets gradients no call has specialised yet."""
    names, text = {}, ["import numpy as np\n"]
    for i, (kind, op) in enumerate(itertools.product(PROGRAMS, OPERATIONS)):
        names[kind, op] = f"f{i}"
        text.append("\n" + PROGRAMS[kind].format(op=f"({op})").replace("def f(", f"def f{i}("))
    loaded = {}
    for n, order in enumerate(["floats first", "floats last"]):
        path = tmp_path_factory.mktemp("programs") / f"shape_only_programs{n}.py"
        path.write_text("".join(text))
        spec = importlib.util.spec_from_file_location(f"shape_only_programs{n}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        loaded.update({(order, *key): getattr(module, name) for key, name in names.items()})
    return loaded


def _run(f, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return f(*args), None
        except Exception as error:  # noqa: BLE001 - the behaviour compared
            return None, error


@pytest.mark.sweep(4)
@pytest.mark.parametrize("order", ["floats first", "floats last"])
@pytest.mark.parametrize("kind", sorted(PROGRAMS))
@pytest.mark.parametrize("op", OPERATIONS)
def test_the_gradient_raises_where_python_raises_else_matches_differences(programs, kind, op, order):
    # one gradient per function and level, called with every kind of operands in turn: the adjoint
    # specialised for real floats must never serve the others, nor theirs the floats
    f = programs[order, kind, op]
    x = np.array([0.5, 1.5, 2.5])
    checked = 0
    for name, (a, b) in (OPERANDS.items() if order == "floats first" else reversed(OPERANDS.items())):
        value, error = _run(f, x, a, b)
        if error is None and (np.iscomplexobj(value) or not np.isfinite(value)):
            continue  # no real or finite derivative to compare: not this test's question
        for level in LEVELS:
            grad = astgrad.grad(f, optimize=level)
            got, ours = _run(grad, x, a, b)
            where = f"{kind}: {op} with {name} operands at optimize={level}"
            if error is not None:
                assert isinstance(ours, type(error)), f"{where}: Python raises {error!r}, astgrad gave {ours or got!r}"
            else:
                assert ours is None, f"{where}: Python returns {value!r}, astgrad raised {ours!r}"
                with np.errstate(all="ignore"):
                    expected = numeric_grad(f, (x, a, b), 0)
                np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8, err_msg=where)
            checked += 1
    assert checked >= len(LEVELS) * 4


def test_a_value_on_floats_is_replaced_by_its_shape_and_guarded():
    def f(x, v):
        y = x + v
        return np.sum(y)

    source = astgrad.grad(f, optimize=2).source
    assert "y = Shaped(broadcast_shape(shape(x), shape(v))) if floats(x, v) else x + v" in source


@pytest.mark.parametrize("level", LEVELS)
def test_empty_max_raises_numpys_message(level):
    def f(x, a):
        return np.sum(x + np.max(a))

    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum which has no identity"):
        astgrad.grad(f, optimize=level)(np.ones(3), np.zeros((2, 0)))
