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
from astgrad.rules import find, first_extreme_mask, shipped
from astgrad.transform import runtime
from astgrad.transform.runtime.tangents import zero_tangent
from astgrad.rules.batching import Unbatchable, elementwise
from astgrad.api.vmapped import vmap_at_vjp
from astgrad.rules.losses import safe_targets
from astgrad.rules.sliding_windows import max_pool_indices

from .samples import CASES, case_id
from .test_table import draw, outputs
from .test_table_generated import parameters

EXAMPLES = 3

BATCHED = [i for i, c in enumerate(CASES) if c.generated and getattr(find(c.entry), "batch", None) is not None]

#: the default run's sample (the suite's time): each entry's first case for values, a few entries' gradients;
#: every case with --runslow
FIRST = {i for i in BATCHED if all(CASES[j].entry is not CASES[i].entry for j in BATCHED if j < i)}
GRADIENT_SAMPLE = {"sum-axis1", "matmul-batched_mv", "getitem", "reshape", "solve", "tensordot", "take", "dot-vv",
                   "softmax", "repeat-array", "det", "imag"}


def _id(case):
    """The case's id, with ``scipy:`` in front for scipy's entries (scipy.linalg.det's cases beside numpy's)."""
    return ("scipy:" if find(case.entry).name.startswith("scipy.") else "") + case_id(case)


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
                 "scipy:eigh-values": "eigvals_only=True returns one array where the rule returns two (eigvalsh)"}

#: cases where vmap(grad(f)) refuses the code grad(f) generates, at its line (TransformError) or when it runs
#: (Unbatchable): what the batching sweep does not yet batch in generated code, not the entry's batching rule,
#: which the value test checks.  Pinned both ways: a case listed must refuse, one not listed must match the loop.
GRADIENT_REFUSED = {
    # a tuple the reverse rule extends (+=) or an array it writes items of, which the aliasing check refuses; a
    # loop over a list of batched arrays
    "concatenate", "concatenate-axis1",
    "hstack", "hstack-1d", "vstack", "split", "array_split", "matrix_power", "matrix_power-inverse",
    "matrix_power-batch",
    # the reverse rule's own code: an item write the aliasing check refuses, an expression statement, a call
    # of a helper with *args
    "clip", "einsum", "einsum-contract", "einsum-implicit_outer",
    "einsum-trace", "einsum-diagonal", "einsum-ellipsis", "einsum-ellipsis_implicit",
    # helpers of reverse rules without a batching rule, containers of batched arrays on the stack, a branch
    # on a batched test that calls a function
    "det", "slogdet", "eigh", "svd-tall", "svd-wide", "svd-batch_full", "svd-values",
    "svdvals", "eigvalsh",
    # the same, in the reverse rules of the entries of numpy's main namespace, the losses and the layers (their
    # batching rules pass the value test): a helper's *args, a list of lists or a tuple of gradients on the
    # stack, isinstance on a batched value, a branch on a batched test around a loop
    "binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits-none",
    "binary_cross_entropy_with_logits-weighted_sum", "bincount-called", "block", "block-promoted",
    "block-two_by_two", "broadcast_arrays", "broadcast_arrays-three", "convolution", "corrcoef",
    "corrcoef-columns_y", "divmod", "divmod-bcast_negative", "dsplit", "eigh_values", "eigh_vectors",
    "frexp", "frexp_mantissa", "geomspace", "geomspace-negative_axis", "gradient", "gradient-2d", "gradient-axis",
    "gradient-spacings", "hsplit", "huber_loss", "huber_loss-delta_none", "interp", "interp-left_right",
    "interp-number", "linspace-axis1", "logspace", "logspace-base_axis1", "median", "median-axes_keepdims",
    "median-even_axis1", "meshgrid", "meshgrid-ij", "meshgrid-sparse", "meshgrid-xy3", "modf", "module.array",
    "module.array-copy", "module.array-numbers", "module.asarray", "nanmedian", "nanmedian-axis0", "nanpercentile",
    "nanquantile", "partition", "partition-axis0", "percentile", "polyadd", "polyder", "polyder-third",
    "polyint", "polyint-one_k", "polyint-twice_k", "polymul", "polysub", "polyval", "polyval-constant", "quantile",
    "quantile-axes_keepdims", "quantile-many_q", "row_stack", "select", "smooth_l1_loss", "smooth_l1_loss-beta_sum",
    "smooth_l1_loss-l1", "sort_complex",
    "unstack", "unstack-axis1", "vsplit",
    # numpy.linalg's and numpy.fft's entries (rules/batching_linalg.py, batching_fourier.py), whose reverse rules
    # the batching sweep does not yet batch: np.result_type of a batched value and containers of batched arrays
    # (qr, eig), an if on a batched rank test (lstsq), np.max(initial=) (the svd primitives), pops the stack
    # gives batched where it expected shared (eigh_values, eig_values), a tuple of batched parts indexed by
    # getitem_gradient (the transforms' cases take real and imaginary parts), an item write the aliasing check
    # refuses (irfft, hfft), a generator expression (np.linalg.diagonal's rule), the stack given to a callee
    "svd_values", "svd_u", "svd_vh", "qr-tall", "qr-wide", "qr-batch", "qr-r",
    "qr_q", "qr_r", "lstsq", "lstsq-matrix", "lstsq-wide", "lstsq_solution", "lstsq_residuals", "eig", "eigvals",
    "eig_values", "eig_vectors", "fft-padded", "fft-cut_ortho", "ifft", "ifft-padded_forward", "fft2", "fft2-s",
    "ifft2", "fftn", "ifftn", "rfft", "rfft-odd", "rfft2", "rfftn", "irfft-odd_ortho", "irfft-cut",
    "irfftn", "fftshift", "ihfft", "ihfft-padded_ortho",
}
# scipy's entries (rules/batching_scipy_*.py), for the same kinds of reason in their reverse rules' code, and: a
# function held in a parameter and called (the location-scale families, sqrtm, logm), an if binding a name on one
# branch (dirichlet), an expression statement (lu_solve)
GRADIENT_REFUSED |= {f"scipy:{name}" for name in (
    "det", "expm", "sqrtm", "logm", "cho_factor", "cho_factor-lower", "cho_solve-through_factor",
    "cho_solve-through_lower_factor", "lu_factor", "lu_solve-through_factor",
    "lu_solve-through_factor_transposed", "lu", "lu-permute_l", "lu-p_indices", "lu-upper_only", "eigh-values", "eigh",
    "eigh-upper", "eigvalsh", "eigvalsh-upper", "svd-tall", "svd-wide", "svd-square_full", "svd-values", "svdvals",
    "dirichlet.logpdf", "dirichlet.logpdf-alpha", "dirichlet.pdf")}

#: cases where vmap(grad(f)) raises another error (an error, never a number): the reverse rule's axes, a tuple the
#: batched code reads as an array index
GRADIENT_RAISES: dict = {"layer_norm": TypeError, "layer_norm-plain": TypeError}


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


#: entries with a batching rule and no sample case (no gradient): in the test above, in
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
               np.isinf, np.isnan, safe_targets, max_pool_indices}


def test_every_batching_rule_is_checked_against_a_loop():
    with_rules = {entry.fn for entry in shipped() if entry.batch is not None}
    sampled = {CASES[i].entry for i in BATCHED}
    assert not with_rules - sampled - NOT_SAMPLED, sorted(map(str, with_rules - sampled - NOT_SAMPLED))
