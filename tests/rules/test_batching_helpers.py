"""The batching rules of the helpers generated code calls, of ``math``'s functions and the builtins, and the
refusals of functions whose result's length each example decides: each against a Python loop over examples.

A helper's rule is called as the batching sweep calls it, ``rule(bdims, *args)`` with the batched arguments
stacked along a first axis, and compared with the helper called on each example (values, or the same error);
a rule marked ``shared`` must give every example's answer once.  ``math`` and the builtins are called through
``vmap`` (values) and ``vmap(grad(f))`` (gradients).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import astgrad
from astgrad.rules import find, sequences
from astgrad.rules._extra import last_writes
from astgrad.rules._forward import add_tangents
from astgrad.rules._support import reduced_count, within
from astgrad.rules.linalg import einsum as einsum_gradient
from astgrad.rules.batching import HELPER_RULES, Unbatchable, helper_rule
from astgrad.rules.grids import meshgrid as meshgrid_gradient
from astgrad.rules.losses import _per_element
from astgrad.rules.selection import gradient as selection_gradient
from astgrad.rules.sequences import builtin_max, builtin_min
from astgrad.rules.shapes import broadcast_arrays as broadcast_arrays_gradient
from astgrad.transform import runtime
from astgrad.transform.runtime import attributes, caller_state, checkpoints, checks, outputs, structural
from astgrad.transform.runtime.tangents import jvp_tangent
from astgrad.api.inside import gradient_at

N = 3
RNG = np.random.default_rng(5)
X = RNG.normal(size=(N, 2, 4))
G = RNG.normal(size=(N, 4, 2))
V = RNG.normal(size=(N, 4))
B = V > 0.0


def _example(args, bdims, k):
    return [a[k] if b is not None else a for a, b in zip(args, bdims)]


def _outcome(call):
    try:
        return "value", call()
    except Exception as exc:  # noqa: BLE001  (the loop's error is the expected one)
        return "raises", type(exc)


def _same(got, want):
    if isinstance(want, (tuple, list)) and want and isinstance(want[0], (tuple, list)):
        for i, part in enumerate(got):
            _same(part, [w[i] for w in want])
        return
    if want[0] is None:
        assert got is None or all(v is None for v in np.ravel(got))
        return
    expected = np.stack([np.asarray(w) for w in want])
    assert np.shape(got) == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)


#: (helper, batched arguments, bdims): each checked against a loop of the helper
CASES = [
    (runtime.accumulate, (X, np.ones(4)), (0, None)),
    # np.einsum's reverse rule (generated gradients call it): one example's subscripts, a loop over examples
    (einsum_gradient, (RNG.normal(size=(N, 2, 4)), np.zeros((2, 4)), "ij,jk->ik", X[:, :, :3], RNG.normal(size=(3, 4))),
     (0, None, None, 0, None)),
    (einsum_gradient, (RNG.normal(size=(N, 3)), np.zeros(3), "iij,j->i", RNG.normal(size=(N, 3, 3, 2)),
                       RNG.normal(size=(N, 2))), (0, None, None, 0, 0)),
    (runtime.accumulate, (None, X), (None, 0)),
    (runtime.accumulate, (V, 2.0), (0, None)),
    (add_tangents, (X, X[0]), (0, None)),
    (runtime.getitem_gradient, (V[:, 1:3], np.zeros((N, 4)), slice(1, 3)), (0, 0, None)),
    (runtime.getitem_gradient, (np.ones(2), np.zeros((N, 4)), slice(1, 3)), (None, 0, None)),
    (sequences.part, (G, 1), (0, None)),
    (sequences.split_last, (G,), (0,)),
    (runtime.replacing_gradient, (G, 2), (0, None)),
    (runtime.replacing_gradient, (G, slice(1, 3)), (0, None)),
    (runtime.replaced_gradient, (G, slice(0, 2)), (0, None)),
    (runtime.unpacked_gradient, ([None, np.ones(4)], X), (None, 0)),
    (attributes.attribute, (X, "T"), (0, None)),
    (attributes.field, (X, "T"), (0, None)),
    (attributes.attribute_gradient, (G, X, "T", X), (0, 0, None, 0)),
    (attributes.item, (X, "D['M']"), (0, None)),
    (runtime.stand_in, (X,), (0,)),
    (runtime.in_place, (V, ((4,), np.dtype(np.float32)), "+"), (0, None, None)),
    (runtime.in_place, (V, ((5,), np.dtype(np.float64)), "+"), (0, None, None)),
    (runtime.in_place, (V, ((4,), np.dtype(np.int64)), "+"), (0, None, None)),
    (runtime.cast_into, (V, V.astype(np.float32), "same_kind"), (0, 0, None)),
    (runtime.cast_into, (V, V.astype(np.int64), "same_kind"), (0, 0, None)),
    (runtime.cast_into, (1.5, V, "same_kind"), (None, 0, None)),
    (jvp_tangent, (V, V * 0.5, "x of jvp(f)"), (0, 0, None)),
    (jvp_tangent, (V, np.ones(4), "x of jvp(f)"), (0, None, None)),
    (jvp_tangent, (V, np.ones(3), "x of jvp(f)"), (0, None, None)),
    (structural.written, (V, slice(1, 3)), (0, None)),
    (structural.written, (V, 2, B), (0, None, 0)),
    (structural.unselected, (V, B, True), (0, 0, None)),
    (structural.unselected, (V, B[0], False, B), (0, None, None, 0)),
    (structural.unselected, (V[0], B, True), (None, 0, None)),
    (structural.not_defaulted, (V, [B[0], ~B[1]]), (0, None)),
    (structural.cleaned, (B, V), (0, 0)),
    (structural.cleaned, (B[0], V), (None, 0)),
    (structural.cleaned, (B, V[0]), (0, None)),
    # checks: every example's answer (None, or the same error)
    (outputs.scalar_output, (V[:, 0], "f"), (0, None)),
    (outputs.scalar_output, (V, "f"), (0, None)),
    (outputs.not_scalar, ((4,), "f"), (None, None)),
    (outputs.aux_pair, (V, "f"), (0, None)),
    (checks.not_joined, (V, "x + y", "+"), (0, None, None)),
    (checks.not_a_dict, (V, "for v in x"), (0, None)),
    (checks.a_number, (V[:, 0], "x += v", "x = x + v"), (0, None, None)),
    (checks.a_number, (X, "x += v", "x = x + v"), (0, None, None)),
    (checks.a_returned_number, (V[:, 0], "e = f(x)", "x", "x[0] = 1", 3), (0, None, None, None, None)),
    (checks.a_returned_number, (X, "e = f(x)", "x", "x[0] = 1", 3), (0, None, None, None, None)),
    (checks.an_array, (X, "x += v", "z", "x = x + v"), (0, None, None, None)),
    (checks.an_array, (V[:, 0], "x += v", "z", "x = x + v"), (0, None, None, None)),
    (checks.same_method, (X, "sum", runtime.accumulate, "x.sum()"), (0, None, None, None)),
    (checks.written_through, (X, X[:, 1], "a[1]"), (0, 0, None)),
    (checks.written_through, (X, X[:, 1].copy(), "a[1]"), (0, 0, None)),
    (checks.written_outside, (X, "x", None), (0, None, None)),
    (caller_state.caller_dict, (X, "x", {}, "x[0] = v"), (0, None, None, None)),
    (checkpoints.fixed_state, (V, "the checkpoint"), (0, None)),
    (runtime.check_seed, (V, (4,), "f"), (0, None, None)),
    (runtime.check_seed, (V, (3,), "f"), (0, None, None)),
    (runtime.array_kind, (V,), (0,)),
]

#: helpers whose batched case is refused (a shape, index or count that differs from example to example; a list or
#: dict's gradient with a batch axis)
REFUSED = [
    (runtime.broadcast_shape, (np.array([[2, 3]] * N), (2, 3)), (0, None)),
    (runtime.reduced_shape, ((2, 3), np.array([0, 1, 0])), (None, 0)),
    (runtime.matmul_shape, (np.array([[2, 3]] * N), (3, 2)), (0, None)),
    (reduced_count, ((2, 3), np.array([0, 1, 0])), (None, 0)),
    (last_writes, ((4,), np.array([[1, 2]] * N)), (None, 0)),
    (runtime.keys_of, (V,), (0,)),
    (runtime.sequence_gradient, (V, [1.0, 2.0], 0), (0, None, None)),
    (runtime.add_item, (None, V, [1.0, 2.0], 0), (None, 0, None, None)),
    (structural.unchosen, ([V, V], [B[0], B[1]]), (0, None)),
    (structural.nth, (V, 0), (0, None)),
    (runtime.accumulate, (V, [1.0, 2.0]), (0, None)),
    (sequences.part, (V, np.array([0, 1, 0])), (0, 0)),
]

HELPERS_CHECKED = {fn for fn, _, _ in CASES + REFUSED} | {within, gradient_at, runtime.gradient_tuple, runtime.only_shape}


def _id(case):
    fn, args, bdims = case
    return f"{fn.__name__}-{'-'.join('b' if b is not None else 's' for b in bdims)}"


@pytest.mark.sweep(2)
@pytest.mark.parametrize("case", CASES, ids=[f"{_id(c)}-{i}" for i, c in enumerate(CASES)])
def test_a_helpers_batching_rule_matches_a_loop_over_examples(case):
    fn, args, bdims = case
    rule = find(fn).batch
    loop = [_outcome(lambda k=k: fn(*_example(args, bdims, k))) for k in range(N)]
    got = _outcome(lambda: rule(bdims, *args))
    if loop[0][0] == "raises":
        assert got == loop[0], (got, loop[0])
        return
    assert got[0] == "value", got
    if getattr(rule, "shared", False):
        assert all(w[1] == loop[0][1] for w in loop)
        assert got[1] == loop[0][1] if not isinstance(got[1], np.ndarray) else np.array_equal(got[1], loop[0][1])
        return
    _same(got[1], [w[1] for w in loop])


def test_only_shape_keeps_each_examples_shape_for_shape_to_read():
    shaped = find(runtime.only_shape).batch((0,), X)
    assert find(runtime.shape).batch((0,), shaped) == runtime.shape(runtime.only_shape(X[0]))
    _same(find(runtime.stand_in).batch((0,), shaped), [runtime.stand_in(runtime.only_shape(x)) for x in X])


@pytest.mark.parametrize("case", REFUSED, ids=[f"{_id(c)}-{i}" for i, c in enumerate(REFUSED)])
def test_a_helper_refuses_what_differs_from_example_to_example(case):
    fn, args, bdims = case
    with pytest.raises(Unbatchable, match="astgrad.vmap"):
        find(fn).batch(bdims, *args)


# -- math's functions and the builtins, through vmap ----------------------------------------------------

def _math(x):
    return math.sin(x) + math.cos(x) * math.tan(x) + math.exp(x) + math.log(x) + math.sqrt(x) + math.tanh(x)


def _log_base(x, b):
    return math.log(x, b)


def _builtins(x, y, v):
    return max([x, y]) + min(x, y, 0.5) + sum([x, y, 1.0]) + max(v) - min(v) + sum(v)


def test_math_batches_as_numpy_in_float64_and_raises_where_math_does():
    xs = np.array([0.3, 1.1, 2.5], dtype=np.float32)
    out = astgrad.vmap(_math)(xs)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [_math(x) for x in xs], rtol=1e-13)
    np.testing.assert_allclose(astgrad.vmap(astgrad.grad(_math))(xs.astype(np.float64)),
                               [astgrad.grad(_math)(float(x)) for x in xs], rtol=1e-12)
    bases = np.array([2.0, 10.0, 0.5])
    np.testing.assert_allclose(astgrad.vmap(_log_base)(xs, bases), [_log_base(*e) for e in zip(xs, bases)], rtol=1e-13)
    with pytest.raises(ZeroDivisionError):
        astgrad.vmap(_log_base, in_axes=(0, None))(xs, 1.0)
    for bad, error in ((np.array([1.0, 0.0]), ValueError), (np.array([1.0, -2.0]), ValueError),
                       (np.array([1.0, 800.0]), OverflowError), (np.array([1.0, np.inf]), ValueError)):
        with pytest.raises(error):
            [_math(x) for x in bad]  # the loop's error
        with pytest.raises(error):
            astgrad.vmap(_math)(bad)


def test_math_of_an_example_that_is_not_a_number_is_refused():
    with pytest.raises((astgrad.TransformError, Unbatchable), match="math.sin of an example that is not a number"):
        astgrad.vmap(lambda_free_sin)(np.ones((3, 2)))


def lambda_free_sin(x):
    return math.sin(x)


def test_builtins_batch_as_pythons_loop_nans_included():
    rng = np.random.default_rng(2)
    x, y, v = rng.normal(size=N), rng.normal(size=N), rng.normal(size=(N, 5))
    x[0], v[1, 0], v[2, 3] = np.nan, np.nan, np.nan  # max keeps a first NaN and skips a later one
    out = astgrad.vmap(_builtins)(x, y, v)
    np.testing.assert_array_equal(np.isnan(out), [np.isnan(_builtins(*e)) for e in zip(x, y, v)])
    np.testing.assert_allclose(out, [_builtins(*e) for e in zip(x, y, v)], rtol=1e-12)


def _max_of_rows(m):
    return max(m)


def test_builtin_max_of_an_example_with_rows_is_refused():
    with pytest.raises((astgrad.TransformError, Unbatchable), match="max of an example with more than one axis"):
        astgrad.vmap(_max_of_rows)(np.ones((3, 2, 2)))


# -- functions whose result's length each example decides --------------------------------------------

def _nonzero(x):
    return np.nonzero(x)[0]


def _flatnonzero(x):
    return np.flatnonzero(x)


def _argwhere(x):
    return np.argwhere(x)


REFUSED_CHECKED = {np.nonzero, np.flatnonzero, np.argwhere}


@pytest.mark.parametrize("f", [_nonzero, _flatnonzero, _argwhere])
def test_a_result_whose_length_each_example_decides_is_refused_at_the_line(f):
    with pytest.raises(astgrad.TransformError, match=r"astgrad.vmap: .*cannot be stacked; use the mask itself"):
        astgrad.vmap(f)(np.array([[0.0, 1.0], [2.0, 3.0]]))


# -- a gradient called inside a function vmap batches, and within ------------------------------------------

def _loss(x, w):
    return np.sum(np.tanh(x * w) ** 2)


_dloss = astgrad.grad(_loss)


def _calls_a_gradient(x, w):
    return _dloss(x, w) * 2.0 + within(x, -0.5, 0.5)


def test_gradient_tuple_gives_one_batched_gradient_per_argument():
    rule = find(runtime.gradient_tuple).batch
    got = rule((0, None), (V, V * 2.0, None), 2)
    _same(got, [runtime.gradient_tuple((v, v * 2.0, None), 2) for v in V])


def test_a_gradient_called_inside_batches_per_example():
    rng = np.random.default_rng(4)
    xs, w = rng.normal(size=(N, 4)), rng.normal(size=4)
    _same(astgrad.vmap(_calls_a_gradient, in_axes=(0, None))(xs, w), [_calls_a_gradient(x, w) for x in xs])


# -- a check kept as a statement of its own (core/batching.py writes its batching rule) -------------------

def _aliased_update(x):
    y = x * 1.0
    z = y
    y += np.sin(x)  # checked: y must be an array for z to see the write
    return y + z


def _returned_update(x):
    y = _twice(x)
    y += np.sin(x)  # checked: an array a called function returned may be shared; refused for every example
    return y


def _twice(x):
    return x * 2.0


def test_a_check_kept_as_a_statement_is_asked_of_every_example():
    xs = RNG.normal(size=(N, 3))
    _same(astgrad.vmap(_aliased_update)(xs), [_aliased_update(x) for x in xs])
    with pytest.raises(TypeError, match="writes into the ndarray a called function returned"):
        astgrad.grad(lambda_free_sum_of(_returned_update))(xs[0])  # one example: the check raises
    with pytest.raises(TypeError, match="writes into the ndarray a called function returned"):
        astgrad.vmap(_returned_update)(xs)


def lambda_free_sum_of(f):
    def total(x):
        return np.sum(f(x))
    return total


def _sum_of_a_grown_list(x):
    acc = []
    for i in range(3):
        acc.append(x * i)
    return sum(acc) + max([x[0], x[1]])


def test_the_builtins_take_a_list_grown_of_batched_values():
    xs = RNG.normal(size=(N, 3))
    _same(astgrad.vmap(_sum_of_a_grown_list)(xs), [_sum_of_a_grown_list(x) for x in xs])


# -- the reverse rules' helpers that take *args (rules/batching_rule_helpers.py) ------------------------------

W = RNG.normal(size=(N, 3))
U = RNG.normal(size=(N, 4))
GRID = RNG.normal(size=(N, 4, 3))  # the grid of a vector of 3 and one of 4 ("xy"), or of 4 and 3 ("ij")
#: (helper, arguments, bdims, keywords): the batching rule against the helper called on each example
RULE_HELPER_CASES = [
    (_per_element, (G, "mean", G, G[0], None), (0, None, 0, None, None), {}),
    (_per_element, (2.0, "mean", V, None), (None, None, 0, None), {}),
    (_per_element, (V, "sum", V, V), (0, None, 0, 0), {}),
    (_per_element, (1.5, "none", V[0], V), (None, None, None, 0), {}),
    (meshgrid_gradient, ([GRID, GRID * 2.0], [GRID, GRID], W, U), (0, 0, 0, 0), {}),
    (meshgrid_gradient, ([GRID, None], [GRID, GRID], U, W), (0, 0, 0, 0), {"indexing": "ij"}),
    (meshgrid_gradient, ([GRID[0], GRID[0]], [GRID, GRID], W[0], U), (None, 0, None, 0), {}),
    (broadcast_arrays_gradient, ([X, None], [X, X], X, V[:, :1]), (0, 0, 0, 0), {}),
    (broadcast_arrays_gradient, ([X[0], X[0]], [X, X], X[0], V[:, 1]), (None, 0, None, 0), {}),
    (selection_gradient, (X, X, X), (0, 0, 0), {"axis": 1}),
    (selection_gradient, (X, X, X, 0.5), (0, 0, 0, None), {"axis": 1, "edge_order": 2}),
    (selection_gradient, (X[0], X, X), (None, 0, 0), {"axis": -1}),
    (builtin_max, (V[:, 0], np.max(V, axis=1), V), (0, 0, 0), {}),
    (builtin_min, (V[:, 0], np.minimum(V[:, 1], V[:, 2]), V[:, 1], V[:, 2]), (0, 0, 0, 0), {}),
    (builtin_max, (1.0, np.maximum(V[:, 0], V[:, 3]), [V[:, 0], V[:, 3]]), (None, 0, 0), {}),
]


def _items_example(args, bdims, k):
    """Example ``k`` of the arguments, a list's items each (a None item stays None)."""
    return [a if b is None else type(a)(None if x is None else x[k] for x in a) if isinstance(a, list) else a[k]
            for a, b in zip(args, bdims)]


@pytest.mark.parametrize("case", RULE_HELPER_CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(RULE_HELPER_CASES)])
def test_a_reverse_rules_helper_taking_args_batches_as_a_loop(case):
    fn, args, bdims, kwargs = case
    rule = helper_rule(fn)
    loop = [fn(*_items_example(args, bdims, k), **kwargs) for k in range(N)]
    _same(rule(bdims, *args, **kwargs), loop)


def test_every_helper_batching_rule_has_a_case():
    assert set(HELPER_RULES) == {c[0] for c in RULE_HELPER_CASES}
