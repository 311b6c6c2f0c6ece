"""A callable declared to have no derivative is one whose output does not move with its floating inputs.

Every declaration is sampled: each entry of the table without a reverse rule
(``defnondiff``), each builtin the transformer treats as giving no gradient,
and each integer result (``dtype=int``, ``astype(int)``). Random float inputs
are drawn; central differences of each numeric output along random
directions must be exactly zero (booleans, integers, shapes and dtypes must
not change at all). A new declaration without a sample here fails
``test_every_declaration_has_a_sample``; a wrong one fails the differences.

The engines are checked too, where user code can call the function: the tape
returns no ``grad_fn`` for it, and the generated gradient of
``sum(x * x) * summary(call)`` equals central differences of that function
(the engine treats the call as constant, and it is).
"""

import builtins
import importlib.util
import textwrap

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from astgrad import rules
from astgrad.rules import _extra, _support, losses, sliding_windows
from astgrad.transform.front import primitives
from astgrad.transform import runtime
from astgrad.transform.runtime import caller_state, checkpoints, checks, outputs, structural, tangents
from _numeric import gradient

EPS = 1e-6


def normal(*shape):
    return lambda rng: rng.standard_normal(shape)


def increasing(n):
    return lambda rng: np.sort(rng.standard_normal(n)) * 2


# entry -> (call, float inputs, source of the call in user code or None, taped)
# ``call(*floats)`` runs the entry; ``source`` is an expression of the floats a, b for the engines' check.
SAMPLES = {
    np.argmax: (lambda a: np.argmax(a, axis=1), [normal(3, 4)], "np.argmax(a, axis=1)", True),
    np.argmin: (lambda a: np.argmin(a), [normal(3, 4)], "np.argmin(a)", True),
    _extra.first_extreme_mask: (lambda a: _extra.first_extreme_mask(a, 1, True), [normal(3, 4)], None, False),
    sliding_windows.max_pool_indices: (lambda a: sliding_windows.max_pool_indices(a, (2, 2), (1, 2), ((1, 1), (0, 0)),
                                                                                 (1, 1), True), [normal(2, 3, 5, 4)], None, True),
    np.argwhere: (lambda a: np.argwhere(a > 0), [normal(3, 4)], "np.argwhere(a > 0)", True),
    np.flatnonzero: (lambda a: np.flatnonzero(a > 0.2), [normal(7)], "np.flatnonzero(a > 0.2)", True),
    np.searchsorted: (lambda a, b: np.searchsorted(a, b), [increasing(6), normal(4)], "np.searchsorted(np.sort(a), b)",
                      False),
    np.digitize: (lambda a, b: np.digitize(a, b), [normal(5), increasing(4)], "np.digitize(a, np.sort(b))", False),
    np.shape: (lambda a: np.shape(a), [normal(2, 3)], "np.shape(a)", True),
    np.ndim: (lambda a: np.ndim(a), [normal(2, 3)], "np.ndim(a)", True),
    np.size: (lambda a: np.size(a), [normal(2, 3)], "np.size(a)", True),
    np.argsort: (lambda a: np.argsort(a, axis=0), [normal(4, 3)], "np.argsort(a, axis=0)", True),
    np.zeros_like: (lambda a: np.zeros_like(a), [normal(2, 3)], "np.zeros_like(a)", True),
    np.ones_like: (lambda a: np.ones_like(a), [normal(2, 3)], "np.ones_like(a)", True),
    np.empty_like: (lambda a: (np.empty_like(a).shape, np.empty_like(a).dtype), [normal(2, 3)], None, False),
    np.equal: (lambda a, b: np.equal(a, b), [normal(4), normal(4)], "np.equal(a, b)", True),
    np.not_equal: (lambda a, b: np.not_equal(a, b), [normal(4), normal(4)], "a != b", True),
    np.less: (lambda a, b: np.less(a, b), [normal(4), normal(4)], "a < b", True),
    np.less_equal: (lambda a, b: np.less_equal(a, b), [normal(4), normal(4)], "a <= b", True),
    np.greater: (lambda a, b: np.greater(a, b), [normal(4), normal(4)], "a > b", True),
    np.greater_equal: (lambda a, b: np.greater_equal(a, b), [normal(4), normal(4)], "a >= b", True),
    np.logical_and: (lambda a, b: np.logical_and(a, b), [normal(4), normal(4)], "np.logical_and(a > 0, b)", True),
    np.logical_or: (lambda a, b: np.logical_or(a > 0, b > 0), [normal(4), normal(4)], "np.logical_or(a > 0, b > 0)",
                    True),
    np.logical_not: (lambda a: np.logical_not(a > 0), [normal(4)], "np.logical_not(a > 0)", True),
    np.logical_xor: (lambda a, b: np.logical_xor(a > 0, b > 0), [normal(4), normal(4)], "np.logical_xor(a > 0, b > 0)",
                     True),
    np.isnan: (lambda a: np.isnan(a), [normal(4)], "np.isnan(a)", True),
    np.isinf: (lambda a: np.isinf(a), [normal(4)], "np.isinf(a)", True),
    np.isfinite: (lambda a: np.isfinite(a), [normal(4)], "np.isfinite(a)", True),
    np.all: (lambda a: np.all(a > 0, axis=0), [normal(3, 2)], "np.all(a > -0.5)", True),
    np.any: (lambda a: np.any(a > 0), [normal(3, 2)], "np.any(a > 0.5)", True),
    np.floor_divide: (lambda a, b: np.floor_divide(a, b + 3), [normal(5), normal(5)], "(a * 7) // (b + 3)", True),
    np.nonzero: (lambda a: np.nonzero(a > 0), [normal(3, 3)], "np.nonzero(a > 0)", True),
    np.count_nonzero: (lambda a: np.count_nonzero(a > 0), [normal(6)], "np.count_nonzero(a > 0)", True),
    np.array_equal: (lambda a, b: np.array_equal(a, b), [normal(3), normal(3)], "np.array_equal(a, b)", True),
    np.allclose: (lambda a, b: np.allclose(a, b), [normal(3), normal(3)], "np.allclose(a, b)", True),
    np.isclose: (lambda a, b: np.isclose(a, b), [normal(3), normal(3)], "np.isclose(a, b)", True),
    np.result_type: (lambda a: np.result_type(a), [normal(3)], None, False),
    np.iscomplexobj: (lambda a: np.iscomplexobj(a), [normal(3)], "np.iscomplexobj(a)", True),
    np.isrealobj: (lambda a: np.isrealobj(a), [normal(3)], "np.isrealobj(a)", True),
    runtime.shape: (lambda a: runtime.shape(a), [normal(2, 3)], None, False),
    runtime.size: (lambda a: runtime.size(a), [normal(2, 3)], None, False),
    # the keys of a dict whose values move
    runtime.keys_of: (lambda a: runtime.keys_of({"a": a, "b": 2.0 * a}), [normal(3)], None, False),
    runtime.ndim: (lambda a: runtime.ndim(a), [normal(2, 3)], None, False),
    # only_shape keeps a number itself: generated code reads only the shape of what it returns
    runtime.only_shape: (lambda a: runtime.only_shape(a).shape, [normal(2, 3)], None, False),
    runtime.is_zero: (lambda a: runtime.is_zero(a), [normal(3)], None, False),
    runtime.check_seed: (lambda a: runtime.check_seed(a, (3,), "f"), [normal(3)], None, False),
    runtime.floats: (lambda a: runtime.floats(a), [normal(3)], None, False),
    runtime.checked: (lambda a: runtime.checked(a * 2.0), [normal(3)], None, False),
    _support.within: (lambda a, b: _support.within(a, b - 0.5, b + 0.5), [normal(4), normal(4)], None, False),
    outputs.scalar_output: (lambda a: outputs.scalar_output(float(a[0]), "f"), [normal(1)], None, False),
    outputs.aux_pair: (lambda a: outputs.aux_pair((a, a), "f"), [normal(2)], None, False),
    tangents.zero_tangent: (lambda a: tangents.zero_tangent(a), [normal(2, 3)], None, False),
    checks.not_joined: (lambda a: checks.not_joined(a, "a + b", "+"), [normal(2)], None, False),
    checks.not_a_dict: (lambda a: checks.not_a_dict(a, "for v in a"), [normal(2)], None, False),
    checks.written_through: (lambda a: checks.written_through(a, a[0], "a"), [normal(2, 2)], None,
                                     False),
    checks.a_number: (lambda a: checks.a_number(float(a[0]), "a += 1", "a = a + 1"), [normal(1)],
                              None, False),
    checks.written_outside: (lambda a: checks.written_outside([a], "items", False), [normal(2)],
                                     None, False),
    caller_state.caller_dict: (lambda a: caller_state.caller_dict({"h": a}, "p", {}, 'p["h"] = v'), [normal(2)],
                               None, False),
    checkpoints.fixed_state: (lambda a: checkpoints.fixed_state((a, a[0]), "the state"), [normal(3)], None, False),
}

#: declarations whose inputs are never floating values (integers, shapes, axes, indices): nothing to move
NO_FLOAT_INPUTS = {
    _extra.last_writes: "a shape and an index",
    np.bitwise_and: "integers (numpy refuses floats)", np.bitwise_or: "integers (numpy refuses floats)",
    np.invert: "integers and booleans (numpy refuses floats)",
    losses.safe_targets: "class indices",
    runtime.broadcast_shape: "shapes", runtime.reduced_shape: "a shape and axes", runtime.matmul_shape: "shapes",
    _support.reduced_count: "a shape and axes",
    outputs.not_scalar: "a shape (it raises)",
    # checks and masks generated code calls, whose results are None, a pass or a boolean mask: nothing to move
    checks.a_returned_number: "a check: None or a TypeError",
    checks.same_method: "a check: None or a TypeError",
    checks.an_array: "a check: None or a TypeError",
    runtime.array_kind: "a shape and a dtype",
    structural.written: "a boolean mask of what an item assignment wrote",
    structural.unselected: "a boolean mask of what np.where did not select",
    structural.unchosen: "boolean masks of what np.select did not take from each choice",
    structural.not_defaulted: "a boolean mask of where np.select did not take its default",
    structural.nth: "the masks unchosen made, and'ed",
}

#: builtins whose result the transformer treats as carrying no gradient
BUILTINS = {
    builtins.range: (lambda a: list(range(int(a[0] * 0) + 3)), "len(range(3))"),
    builtins.len: (lambda a: len(a), "len(a)"),
    builtins.int: (lambda a: int(a[0] * 10), "int(a[0] * 10)"),
    builtins.bool: (lambda a: bool(a[0] > 0), "bool(a[0] > 0)"),
    builtins.round: (lambda a: round(float(a[0] * 10)), "round(a[0] * 10)"),
    builtins.isinstance: (lambda a: isinstance(a, np.ndarray), "isinstance(a, np.ndarray)"),
    builtins.type: (lambda a: type(a[0]), None),
    builtins.hasattr: (lambda a: hasattr(a, "shape"), "hasattr(a, 'shape')"),
    builtins.callable: (lambda a: callable(a), "callable(a)"),
}
#: builtins whose result is text, not a number: it moves with a float (``str(0.1)`` is not ``str(0.2)``), but
#: arithmetic cannot read it, and ``print``'s result is None
TEXT = {builtins.str, builtins.repr, builtins.print}

#: results of an integer or boolean dtype: rounding, piecewise constant
INTEGER_RESULTS = {
    "np.sum(a, dtype=int)": lambda a: np.sum(a * 10, dtype=int),
    "np.cumsum(a, dtype=np.int64)": lambda a: np.cumsum(a * 10, dtype=np.int64),
    "a.astype(int)": lambda a: (a * 10).astype(int),
    "np.asarray(a * 10, dtype=int)": lambda a: np.asarray(a * 10, dtype=int),
    "np.linspace(a[0], a[1], 4, dtype=int)": lambda a: np.linspace(a[0] * 10, a[1] * 10, 4, dtype=int),
    "np.mean(a, dtype=int)": lambda a: np.mean(a * 10, dtype=int),
    "np.prod(a, dtype=bool)": lambda a: np.prod(a, dtype=bool),
    "np.linalg.norm(a, ord=0)": lambda a: np.linalg.norm(a, ord=0),
}


def _leaves(value):
    """The output as comparable leaves: arrays, numbers, shapes, dtypes."""
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _numeric(leaf) -> bool:
    return isinstance(leaf, (np.ndarray, np.generic, int, float)) and not isinstance(leaf, bool) \
        and np.asarray(leaf).dtype.kind in "fc"


def _assert_still(call, floats, rng, what):
    """``call(*floats)`` does not move: zero central differences of numbers, nothing else changes."""
    at = _leaves(call(*floats))
    for k, x in enumerate(floats):
        for _ in range(3):
            direction = rng.standard_normal(np.shape(x))
            moved = []
            for sign in (1, -1):
                point = [y + sign * EPS * direction if j == k else y for j, y in enumerate(floats)]
                moved.append(_leaves(call(*point)))
            up, down = moved
            assert len(up) == len(at) == len(down), what
            for leaf, hi, lo in zip(at, up, down):
                if _numeric(leaf):
                    difference = (np.asarray(hi) - np.asarray(lo)) / (2 * EPS)
                    assert np.all(difference == 0), f"{what} moves with its input {k}: {difference}"
                elif isinstance(leaf, np.ndarray):
                    assert np.array_equal(hi, leaf) and np.array_equal(lo, leaf), f"{what} changes with input {k}"
                else:
                    assert hi == leaf and lo == leaf, f"{what} changes with input {k}: {leaf!r} -> {hi!r}"


def _name(entry) -> str:
    return rules.qualified_name(entry)


def test_every_declaration_has_a_sample():
    declared = [r for r in rules.shipped() if not r.differentiable]
    missing = [r.name for r in declared if r.fn not in SAMPLES and r.fn not in NO_FLOAT_INPUTS]
    assert not missing, f"declared non-differentiable without a sample here: {missing}"
    stale = [_name(fn) for fn in list(SAMPLES) + list(NO_FLOAT_INPUTS) if rules.find(fn) is None
             or rules.find(fn).differentiable]
    assert not stale, f"samples for callables that are no longer declared non-differentiable: {stale}"
    assert set(primitives.BUILTIN_CONSTANTS) == set(BUILTINS) | TEXT


@pytest.mark.parametrize("entry", list(SAMPLES), ids=_name)
@pytest.mark.parametrize("seed", range(3))
def test_declared_output_does_not_move(entry, seed):
    call, makers, _, _ = SAMPLES[entry]
    rng = np.random.default_rng(seed)
    _assert_still(call, [make(rng) for make in makers], rng, _name(entry))


@pytest.mark.parametrize("entry", list(BUILTINS), ids=lambda b: b.__name__)
def test_builtin_without_gradient_does_not_move(entry):
    rng = np.random.default_rng(1)
    _assert_still(BUILTINS[entry][0], [rng.standard_normal(4)], rng, entry.__name__)


@pytest.mark.parametrize("text", list(INTEGER_RESULTS))
def test_integer_result_does_not_move(text):
    rng = np.random.default_rng(2)
    _assert_still(INTEGER_RESULTS[text], [rng.standard_normal(4)], rng, text)


# -- the engines -------------------------------------------------------------------

TAPED = [entry for entry, sample in SAMPLES.items() if sample[3]]


@pytest.mark.parametrize("entry", TAPED, ids=_name)
def test_tape_gives_no_gradient_node(entry):
    call, makers, _, _ = SAMPLES[entry]
    rng = np.random.default_rng(0)
    leaves = [torch.tensor(make(rng), requires_grad=True) for make in makers]
    for leaf in _leaves(call(*leaves)):
        assert not getattr(leaf, "requires_grad", False), f"{_name(entry)} recorded a gradient node on the tape"


def _generated_cases():
    cases = [(_name(entry), sample[2], len(sample[1]), [m for m in sample[1]])
             for entry, sample in SAMPLES.items() if sample[2] is not None]
    cases += [(entry.__name__, source, 1, [normal(4)]) for entry, (_, source) in BUILTINS.items() if source]
    cases += [(text, text, 1, [normal(4)]) for text in INTEGER_RESULTS if text != "a.astype(int)"]
    cases.append(("a.astype(int)", "(a * 10).astype(int)", 1, [normal(4)]))
    return cases


GENERATED = _generated_cases()


@pytest.fixture(scope="module")
def generated_module(tmp_path_factory):
    """One module of functions ``sum(a * a) * summary(call)``: grad needs their source in a file."""
    lines = ["import numpy as np", ""]
    for i, (_, source, count, _) in enumerate(GENERATED):
        params = "a, b" if count == 2 else "a"
        lines += [f"def f{i}({params}):",
                  f"    summary = np.sum(np.asarray({source}, dtype=float))",
                  "    return np.sum(a * a) * (summary + 1.5)", ""]
    path = tmp_path_factory.mktemp("declared") / "declared_constant.py"
    path.write_text(textwrap.dedent("\n".join(lines)))
    spec = importlib.util.spec_from_file_location("declared_constant", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("i", range(len(GENERATED)), ids=[case[0] for case in GENERATED])
def test_generated_gradient_treats_it_as_constant(generated_module, i):
    _, _, count, makers = GENERATED[i]
    f = getattr(generated_module, f"f{i}")
    rng = np.random.default_rng(4)
    args = [make(rng) for make in makers]
    got = astgrad.grad(f, wrt=tuple(range(count)))(*args)  # a tuple of gradients, one per argument
    for k in range(count):
        expected = gradient(lambda v, k=k: f(*[v if j == k else a for j, a in enumerate(args)]), args[k])
        np.testing.assert_allclose(got[k], expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("call", [np.unique, lambda a: np.full_like(a, a[0]), lambda a: np.sort_complex(a),
                                  lambda a: np.histogram(a, bins=3)[1], lambda a: np.histogram(a, 3, None, True)[0]],
                         ids=["unique", "full_like", "sort_complex", "histogram edges", "histogram density"])
def test_the_check_finds_an_output_that_moves(call):
    """The callables once declared here by mistake: the check above would have refused their declarations."""
    rng = np.random.default_rng(0)
    with pytest.raises(AssertionError, match="moves with its input"):
        _assert_still(call, [rng.standard_normal(6)], rng, "call")
