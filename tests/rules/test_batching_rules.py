"""Every table entry with a batching rule, against a Python loop over examples: values and gradients.

Each sample case of ``samples.py`` whose entry has a batching rule of its
own becomes two module-level functions (the transformer reads source): one
returning the entry's value, one its outputs weighted into a number.  The
differentiated arguments get ``EXAMPLES`` draws stacked along a batch axis;
``vmap`` of the first, and of ``grad`` of the second, must give what a loop
over the examples gives, for the batch axis first (``in_axes=0``), last and
on one argument only (the others shared, ``in_axes=None``).  The elementwise
rule every ufunc shares is tested in tests/transform/test_vmap.py.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import astgrad
from astgrad.rules import find, first_extreme_mask, shipped, within
from astgrad.transform import runtime
from astgrad.transform.runtime.tangents import zero_tangent
from astgrad.rules.batching import Unbatchable, elementwise
from astgrad.api.vmapped import vmap_at_vjp
from astgrad.rules.losses import safe_targets
from astgrad.rules.sliding_windows import max_pool_indices

from .samples import CASES, case_id
from .test_table import draw, outputs
from .test_table_generated import parameters
from .test_batching_helpers import HELPERS_CHECKED, REFUSED_CHECKED

EXAMPLES = 3

BATCHED = [i for i, c in enumerate(CASES) if c.generated and getattr(find(c.entry), "batch", None) is not None]

#: the default run's sample (the suite's time): each entry's first case for values, a few entries' gradients;
#: every case with --runslow
FIRST = {i for i in BATCHED if all(CASES[j].entry is not CASES[i].entry for j in BATCHED if j < i)}
GRADIENT_SAMPLE = {"sum-axis1", "matmul-batched_mv", "getitem", "reshape", "solve", "tensordot", "take", "dot-vv",
                   "softmax", "repeat-array", "det", "imag"}


def _id(case):
    """The case's id, with ``scipy:`` in front for scipy's entries (scipy.linalg.det's cases beside numpy's), and
    ``sequences:`` for the list helpers' (``items + [item]`` beside ``np.append``)."""
    name = find(case.entry).name
    return ("scipy:" if name.startswith("scipy.") else "sequences:" if name.startswith("astgrad.rules.sequences.")
            else "") + case_id(case)


def _sampled(indices, default):
    """Cases of ``default`` run by default, the others with --runslow; of the entries sharing the elementwise
    rule (every ufunc), one first case in eight runs by default."""
    def marks(i):
        if _id(CASES[i]) not in default and i not in default:
            return pytest.mark.slow
        return pytest.mark.sweep(8) if find(CASES[i].entry).batch is elementwise else ()
    return [pytest.param(i, id=_id(CASES[i]), marks=marks(i)) for i in indices]

#: cases whose batched value vmap refuses at the user's line, with why
VALUE_REFUSED = {"svd-values": "compute_uv=False returns one array where the rule returns three (np.linalg.svdvals)",
                 "block-two_by_two": "a list of lists holding batched arrays (nested lists are refused where built)",
                 "block-promoted": "a list of lists holding batched arrays (nested lists are refused where built)",
                 "gradient-2d": "np.gradient along two axes returns a list (the rule gives one array)",
                 "gradient-spacings": "np.gradient along two axes returns a list (the rule gives one array)",
                 "qr-r": "mode='r' returns one array where the rule returns two (np.linalg.qr(a)[1])",
                 "scipy:svd-values": "compute_uv=False returns one array where the rule returns three (svdvals)",
                 "scipy:eigh-values": "eigvals_only=True returns one array where the rule returns two (eigvalsh)",
                 "unique": "each example decides the length of its result (rules/batching_selection.py)",
                 "unique-axis0": "each example decides the length of its result",
                 "unique-counts": "each example decides the length of its result"}

#: cases where vmap(grad(f)) refuses the code grad(f) generates, at its line (TransformError) or when it runs
#: (Unbatchable): what the batching sweep does not yet batch in generated code, not the entry's batching rule,
#: which the value test checks.  Pinned both ways: a case listed must refuse, one not listed must match the loop.
GRADIENT_REFUSED = {
    # a list of lists of batched arrays (np.block, np.array of a nested list), a list of batched arrays given to a
    # function that reads it as one array (matrix_power's powers, corrcoef's), a tuple of batched parts read by
    # gradient_tuple (select) or unpacked_gradient (slogdet), np.gradient's list of gradients
    "block", "block-promoted", "block-two_by_two", "module.array", "module.array-copy", "module.array-numbers",
    "module.asarray", "matrix_power", "matrix_power-inverse", "matrix_power-batch", "corrcoef", "corrcoef-columns_y",
    "select", "slogdet", "gradient-2d", "gradient-spacings",
    # no batching rule or no gradient in the reverse rule's code: np.searchsorted in
    # batched points (interp), np.take at batched indices (bincount), argpartition, ldexp; the forms the value
    # test refuses; the stack given to a callee that reads it other than by its pops (fftshift)
    "interp", "interp-left_right", "interp-number", "bincount-called",
    "partition", "partition-axis0", "frexp", "frexp_mantissa", "svd-values", "qr-r", "fftshift",
}
# scipy's entries (rules/batching_scipy_*.py): tuple() of a generator in the decompositions' reverse rules, an
# index that differs from example to example and tuples of batched factors read as arrays (lu), a masked if
# choosing a tuple (cho_factor), a function held in a variable and called (sqrtm, logm), a return inside a with
# block (dirichlet), a list of lists (expm), the forms the value test refuses
GRADIENT_REFUSED |= {f"scipy:{name}" for name in (
    "svd-tall", "svd-wide", "svd-square_full", "lu", "lu-permute_l", "lu-p_indices",
    "lu-upper_only", "lu_factor", "lu_solve-through_factor", "lu_solve-through_factor_transposed", "cho_factor",
    "cho_factor-lower", "cho_solve-through_factor", "cho_solve-through_lower_factor", "sqrtm", "logm",
    "dirichlet.logpdf", "dirichlet.logpdf-alpha", "dirichlet.pdf", "expm", "eigh-values", "svd-values")}
# Python's own and the selection entries (rules/batching_python.py, batching_selection.py): the gradient of a
# list given to max or min is a list of batched gradients, which the batched code would read as one array (max
# of an array, or of several items, batches), sum's rule takes the shape of a list of numbers; np.unique's
# value is refused (VALUE_REFUSED); np.histogram's gradient reads np.histogram_bin_edges, which has no rule, and
# searchsorted in each example's own edges
GRADIENT_REFUSED |= {"module.sum-builtin", "module.max-builtin", "module.min-builtin", "unique",
                     "unique-axis0", "unique-counts", "histogram", "histogram-density", "histogram-edges",
                     "histogram_counts", "histogram_edges"}
# the helpers' entries with a sample case: grad(f) of them is refused before vmap sees it (their reverse rules call
# helpers without a derivative rule: gradient_at_vjp, _gradient_like, a lambda)
GRADIENT_REFUSED |= {"gradient_at", "accumulate", "item", "stand_in"}

#: cases where vmap(grad(f)) raises another error (an error, never a number)
GRADIENT_RAISES: dict = {}


def _source(index, case, args, diff):
    params, call_args = parameters(case, args, diff)
    value = case.function(*args, **case.kwargs)
    n = len(outputs(value))
    several = isinstance(value, (tuple, list))
    weights = [f"w{k}" for k in range(n)]
    terms = [f"np.sum(out[{k}] * w{k})" if several else f"np.sum(out * w{k})" for k in range(n)]
    return (f"def value_{index}({', '.join(params)}):\n    return F{index}({', '.join(call_args)})\n\n\n"
            f"def loss_{index}({', '.join(params + weights)}):\n    out = F{index}({', '.join(call_args)})\n"
            f"    return {' + '.join(terms)}\n")


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    sources = ["import numpy as np\n"]
    for index in BATCHED:
        sources.append(_source(index, CASES[index], *draw(CASES[index])))
    path = tmp_path_factory.mktemp("batching") / "batching_cases.py"
    path.write_text("\n\n".join(sources))
    spec = importlib.util.spec_from_file_location("batching_cases", path)
    made = importlib.util.module_from_spec(spec)
    for index in BATCHED:
        case = CASES[index]
        setattr(made, f"F{index}", getattr(case.function, "generated_call", case.function))
    spec.loader.exec_module(made)
    return made


def _flat(args, diff):
    """The arguments as the generated functions take them (a differentiated list's items one by one) and
    whether each is differentiated."""
    flat, flags = [], []
    for arg, is_diff in zip(args, diff):
        for part in (arg if isinstance(arg, list) and is_diff else [arg]):
            flat.append(part)
            flags.append(is_diff)
    return flat, flags


def _examples(case):
    """``(shared, stacked, flags)``: the arguments of example 0, every example's differentiated ones stacked
    along a first axis, and which are differentiated."""
    draws = [_flat(*draw(case, seed=k)) for k in range(EXAMPLES)]
    shared, flags = draws[0]
    stacked = [np.stack([d[0][i] for d in draws]) if flag else None for i, flag in enumerate(flags)]
    return shared, stacked, flags


def _variants(flags):
    """in_axes to try: every differentiated argument batched first, the first one batched last (the others
    shared), and the first shared with the others batched."""
    diff = [i for i, f in enumerate(flags) if f]
    yield "first", [0 if f else None for f in flags]
    yield "last", [-1 if i == diff[0] else None for i in range(len(flags))]
    if len(diff) > 1:
        yield "one shared", [0 if f and i != diff[0] else None for i, f in enumerate(flags)]


def _arguments(shared, stacked, axes):
    """The call's arguments for these in_axes, and each example's."""
    args = [s if ax is None else np.moveaxis(b, 0, ax) for s, b, ax in zip(shared, stacked, axes)]
    examples = [[s if ax is None else b[k] for s, b, ax in zip(shared, stacked, axes)] for k in range(EXAMPLES)]
    return args, examples


def _same(batched, looped):
    if isinstance(looped[0], (tuple, list)):
        assert isinstance(batched, (tuple, list)) and len(batched) == len(looped[0])
        for i, part in enumerate(batched):
            _same(part, [r[i] for r in looped])
        return
    expected = np.stack([np.asarray(r) for r in looped])
    assert np.shape(batched) == expected.shape
    np.testing.assert_allclose(batched, expected, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("index", _sampled(BATCHED, FIRST))
def test_batched_value_matches_a_loop_over_examples(index, module):
    shared, stacked, flags = _examples(CASES[index])
    f = getattr(module, f"value_{index}")
    for _, axes in _variants(flags):
        args, examples = _arguments(shared, stacked, axes)
        if _id(CASES[index]) in VALUE_REFUSED:
            with pytest.raises((astgrad.TransformError, Unbatchable), match="astgrad.vmap"):
                astgrad.vmap(f, in_axes=tuple(axes))(*args)
            return
        _same(astgrad.vmap(f, in_axes=tuple(axes))(*args), [f(*e) for e in examples])


@pytest.mark.parametrize("index", _sampled(BATCHED, GRADIENT_SAMPLE))
def test_batched_gradient_matches_a_loop_over_examples(index, module):
    case = CASES[index]
    shared, stacked, flags = _examples(case)
    weights = [np.random.default_rng(1).uniform(0.5, 1.5, np.shape(o))
               for o in outputs(case.function(*draw(case)[0], **case.kwargs))]
    wrt = tuple(i for i, f in enumerate(flags) if f)
    gradient = astgrad.grad(getattr(module, f"loss_{index}"), wrt=wrt)
    for _, axes in _variants(flags):
        args, examples = _arguments(shared, stacked, axes)
        in_axes = tuple(axes) + (None,) * len(weights)
        if _id(case) in GRADIENT_REFUSED or _id(case) in GRADIENT_RAISES:
            with pytest.raises(GRADIENT_RAISES.get(_id(case), (astgrad.TransformError, Unbatchable))):
                astgrad.vmap(gradient, in_axes=in_axes)(*args, *weights)
            return
        _same(astgrad.vmap(gradient, in_axes=in_axes)(*args, *weights), [gradient(*e, *weights) for e in examples])


def without_a_gradient(x, y):
    kind = np.iscomplexobj(x) + 2 * np.isrealobj(y)
    flags = np.any(x > 0.5, axis=0) + np.all(np.isclose(x, y, atol=0.5)) + first_extreme_mask(x, 0, True)
    return kind + flags + np.argsort(x, axis=-1) + np.zeros_like(x) + np.ones_like(y) * 2.0 + np.empty_like(x).shape[0]


@pytest.mark.parametrize("in_axes", [0, (0, None), (None, 1)])
def test_batched_entries_without_a_gradient_match_a_loop_over_examples(in_axes):
    rng = np.random.default_rng(3)
    x, y = rng.uniform(size=(EXAMPLES, 2, 4)), rng.uniform(size=(2, EXAMPLES, 4))
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes, in_axes)
    x = x if axes[0] is not None else x[0]
    y = np.moveaxis(y, 1, 0) if axes[1] == 0 else y if axes[1] is not None else y[:, 0]
    examples = [[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip((x, y), axes)] for k in range(EXAMPLES)]
    _same(astgrad.vmap(without_a_gradient, in_axes=in_axes)(x, y), [without_a_gradient(*e) for e in examples])


#: entries with a batching rule and no sample case (no gradient): in the test above (within: clip's gradient), in
#: tests/transform/test_vmap.py (shapes, the helpers of generated gradients, argmax), in
#: tests/transform/test_batching_generated_code.py (is_zero, zero_tangent, result_type) or in
#: tests/rules/test_batching_numpy.py (comparisons, lookups, tests of whole arrays); vmap's own pullback
#: (vmap_at_vjp, the reverse rule of a call of a vmapped function) in tests/transform/test_gradient_through_vmap.py
NOT_SAMPLED = {vmap_at_vjp, np.iscomplexobj, np.isrealobj, np.any, np.all, np.isclose, first_extreme_mask, np.argsort, np.zeros_like,
               np.ones_like, np.empty_like, np.argmax, np.argmin, np.shape, np.size, np.ndim, runtime.shape, runtime.size,
               runtime.ndim, runtime.floats, runtime.checked, runtime.is_zero, zero_tangent,
               np.allclose, np.array_equal, np.count_nonzero, np.digitize, np.searchsorted, np.result_type, np.equal,
               np.not_equal, np.greater, np.greater_equal, np.less, np.less_equal, np.logical_and, np.logical_or,
               np.logical_xor, np.logical_not, np.bitwise_and, np.bitwise_or, np.invert, np.floor_divide, np.isfinite,
               np.isinf, np.isnan, safe_targets, max_pool_indices, within} | HELPERS_CHECKED | REFUSED_CHECKED


def test_every_batching_rule_is_checked_against_a_loop():
    with_rules = {entry.fn for entry in shipped() if entry.batch is not None}
    sampled = {CASES[i].entry for i in BATCHED}
    assert not with_rules - sampled - NOT_SAMPLED, sorted(map(str, with_rules - sampled - NOT_SAMPLED))
