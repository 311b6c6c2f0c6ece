"""astgrad.vmap: every batching rule against a Python loop over the examples, in_axes and out_axes, refusals.

The reference is the function itself run one example at a time and the
results stacked (``np.stack([f(x_i) for x_i in xs])``).
"""

import os
import pathlib

import numpy as np
import pytest

import astgrad
import golden_functions as g

RNG = np.random.default_rng(7)
N = 4  # examples


def looped(f, in_axes, args, out_axes=0):
    """The reference: f run on each example, the results stacked along ``out_axes``."""
    axes = in_axes if isinstance(in_axes, tuple) else (in_axes,) * len(args)
    size = next(np.shape(a)[ax] for a, ax in zip(args, axes) if ax is not None)
    results = []
    for i in range(size):
        example = [a if ax is None else np.take(a, i, axis=ax) for a, ax in zip(args, axes)]
        results.append(f(*example))
    if isinstance(results[0], tuple):
        return tuple(np.stack(parts, axis=out_axes) for parts in zip(*results))
    return np.stack(results, axis=out_axes)


def check(f, in_axes, *args, out_axes=0):
    batched = astgrad.vmap(f, in_axes=in_axes, out_axes=out_axes)(*args)
    expected = looped(f, in_axes, args, out_axes)
    if isinstance(expected, tuple):
        assert isinstance(batched, tuple) and len(batched) == len(expected)
        for b, e in zip(batched, expected):
            assert b.shape == e.shape
            np.testing.assert_allclose(b, e, rtol=1e-12, atol=1e-12)
    else:
        assert np.shape(batched) == expected.shape
        np.testing.assert_allclose(batched, expected, rtol=1e-12, atol=1e-12)
    return batched


def r(*shape):
    return RNG.normal(size=shape)


# -- elementwise: one rule for every ufunc, aligned where an example's ranks differ ------------------

def unary(x):
    return np.exp(np.sin(x)) - np.tanh(x) * np.abs(x) + np.sqrt(x * x + 1.0) - x ** 2


def binary(x, y):
    return np.maximum(x, y) + x * y / (1.0 + y * y) - np.arctan2(x, y)


def comparisons(x, y):
    return np.where(x > y, x, y) + np.where(x <= 0.5, 1.0, -x) + np.clip(x, -0.5, 0.5)


@pytest.mark.parametrize("shape", [(N,), (N, 3), (N, 2, 3)])
def test_unary_ufuncs_match_a_loop(shape):
    check(unary, 0, r(*shape))


@pytest.mark.parametrize("xs, ys, in_axes", [
    ((N, 3), (N, 3), 0),            # both batched, same rank
    ((N, 3), (3,), (0, None)),      # unbatched operand of the example's rank
    ((N, 3), (2, 3), (0, None)),    # unbatched operand of a larger rank: x gets a new axis after the batch axis
    ((N,), (2, 3), (0, None)),      # a batched number per example against an unbatched matrix
    ((N, 2, 3), (N, 3), 0),         # batched operands of different example ranks
    ((N, 3), (N, 2, 3), 0),
    ((2, 3), (N, 3), (None, 0)),    # the unbatched operand first
    ((N,), (N, 2, 3), 0),
])
def test_elementwise_operands_broadcast_as_each_example_does(xs, ys, in_axes):
    check(binary, in_axes, r(*xs), r(*ys))
    check(comparisons, in_axes, r(*xs), r(*ys))


def ranks_known_only_at_run_time(x, y, n):
    for _ in range(n):
        x = x * 1.0  # assigned in a loop: the analysis gives it no one rank
    return x + y


def test_elementwise_alignment_at_run_time_when_ranks_are_unknown():
    check(ranks_known_only_at_run_time, (0, None, None), r(N, 3), r(2, 3), 2)
    check(ranks_known_only_at_run_time, (0, 0, None), r(N, 3), r(N, 2, 3), 2)


# -- reductions: the axis is shifted by one ------------------------------------------------------

def reductions(x):
    return (np.sum(x, axis=0) + np.mean(x, axis=-1, keepdims=True) * np.max(x) - np.min(x, axis=(0, 1))
            + np.prod(x, axis=1) + np.std(x, axis=1) + np.var(x, axis=0, ddof=1) + x.sum() + x.mean(axis=0))


def argreductions(x):
    return np.argmax(x) + np.argmin(x, axis=0) * 10


def cumulative(x):
    return np.cumsum(x, axis=1), np.cumsum(x)


def test_reductions_match_a_loop():
    check(reductions, 0, r(N, 3, 3))


def test_argmax_argmin_and_cumsum_match_a_loop():
    check(argreductions, 0, r(N, 3, 5))
    check(cumulative, 0, r(N, 3, 5))


# -- products -------------------------------------------------------------------------------------

def matmul(a, b):
    return a @ b


def dot(a, b):
    return np.dot(a, b)


@pytest.mark.parametrize("a, b, in_axes", [
    ((N, 3), (N, 3), 0), ((N, 3), (N, 3, 2), 0), ((N, 2, 3), (N, 3), 0), ((N, 2, 3), (N, 3, 4), 0),
    ((N, 3), (3, 2), (0, None)), ((N, 3), (3,), (0, None)), ((N, 2, 3), (3, 4), (0, None)),
    ((N, 2, 3), (3,), (0, None)), ((N, 5, 2, 3), (3, 4), (0, None)),
    ((3,), (N, 3), (None, 0)), ((2, 3), (N, 3), (None, 0)), ((3,), (N, 3, 2), (None, 0)),
    ((2, 3), (N, 3, 4), (None, 0)), ((2, 3), (N, 5, 3, 4), (None, 0)),
])
def test_matmul_and_dot_match_a_loop(a, b, in_axes):
    check(matmul, in_axes, r(*a), r(*b))
    if len(a) - (in_axes in (0,) or in_axes[0] == 0) <= 2 and len(b) - (in_axes in (0,) or in_axes[1] == 0) <= 2:
        check(dot, in_axes, r(*a), r(*b))


@pytest.mark.parametrize("a, b, in_axes", [
    ((N, 5, 2, 3), (N, 5, 3, 4), 0), ((N, 5, 2, 3), (3,), (0, None)), ((5, 2, 3), (N, 3), (None, 0)),
    ((2, 3), (N, 5, 3, 4), (None, 0)), ((N, 3), (5, 3, 4), (0, None)), ((N, 2, 3), (N, 5, 3, 4), 0),
])
def test_matmul_of_stacks_matches_a_loop(a, b, in_axes):
    check(matmul, in_axes, r(*a), r(*b))


# -- shapes and indexing --------------------------------------------------------------------------

def shapes(x):
    return np.swapaxes(np.reshape(x.T, (2, -1)), 0, 1)


def more_shapes(x):
    return np.squeeze(np.expand_dims(x, -1)), np.expand_dims(x, 0), np.moveaxis(x, 0, -1), np.transpose(x, (1, 0))


def joined(x, y):
    return np.concatenate((x, y), axis=-1), np.stack([x, y]), np.stack((x, y), axis=-1), np.concatenate([x, x])


def indexed(x):
    return x[0] + x[-1, 1:] .sum() + x[1:3, ::2].sum() + x[..., 0].sum() + x[None, 0].sum() + x[np.array([0, 2])].sum()


def indexed_by_a_name(x, i):
    return x[i] * 2


def test_shape_operations_match_a_loop():
    check(shapes, 0, r(N, 3, 4))
    check(more_shapes, 0, r(N, 3, 4))
    check(more_shapes, 2, r(3, 4, N))


def test_squeeze_never_removes_the_batch_axis():
    check(more_shapes, 0, r(1, 1, 4))


def test_joining_matches_a_loop_with_unbatched_parts_given_the_batch_axis():
    check(joined, 0, r(N, 3, 2), r(N, 3, 2))
    check(joined, (0, None), r(N, 3, 2), r(3, 2))
    check(joined, (None, 1), r(3, 2), r(3, N, 2))


def test_indexing_with_constants_slices_and_names_matches_a_loop():
    check(indexed, 0, r(N, 4, 3))
    check(indexed_by_a_name, (0, None), r(N, 4, 3), 2)
    check(indexed_by_a_name, (0, None), r(N, 4, 3), (slice(1, 3), 0))


def test_an_index_that_differs_by_example_is_refused():
    with pytest.raises(astgrad.TransformError, match="differs from example to example"):
        astgrad.vmap(indexed_by_a_name)(r(N, 4, 3), np.arange(N))


# -- in_axes, out_axes, values shared by every example -------------------------------------------

def layer(x, W, b):
    return np.tanh(x @ W + b)


def shared_result(x, W):
    return W * 2.0


def pair(x, W):
    return x @ W, np.sum(x)


def test_in_axes_int_none_tuple_and_negative():
    x, W, b = r(N, 3), r(3, 2), r(2)
    check(layer, (0, None, None), x, W, b)
    check(layer, (1, None, None), x.T.copy(), W, b)
    check(layer, (-1, None, None), x.T.copy(), W, b)
    check(layer, (0, 0, None), x, r(N, 3, 2), b)
    check(layer, (None, 2, 0), r(3), r(3, 2, N), r(N, 2))


def test_out_axes_moves_the_batch_axis_of_each_result():
    check(layer, (0, None, None), r(N, 3), r(3, 2), r(2), out_axes=1)
    check(layer, (0, None, None), r(N, 3), r(3, 2), r(2), out_axes=-1)
    check(pair, (0, None), r(N, 3), r(3, 2), out_axes=-1)


def test_a_result_every_example_shares_is_stacked():
    check(shared_result, (0, None), r(N, 3), r(3, 2))


def test_bad_in_axes_are_refused():
    x = r(N, 3)
    with pytest.raises(ValueError, match="differ in size"):
        astgrad.vmap(layer, (0, 0, None))(x, r(N + 1, 3, 2), r(2))
    with pytest.raises(ValueError, match="no argument has a batch axis"):
        astgrad.vmap(layer, None)(x, r(3, 2), r(2))
    with pytest.raises(ValueError, match="has 2 axes"):
        astgrad.vmap(layer, (2, None, None))(x, r(3, 2), r(2))
    with pytest.raises(ValueError, match="one for each"):
        astgrad.vmap(layer, (0, None))(x, r(3, 2), r(2))
    with pytest.raises(TypeError, match="out_axes"):
        astgrad.vmap(layer, out_axes=None)


# -- control flow ---------------------------------------------------------------------------------

def loop_shared(x, n):
    total = 0.0
    for i in range(n):
        total = total + x * i
        if n > 2:
            total = total * 0.5
    return total


def branch_on_example(x):
    if np.sum(x) > 0:
        return x
    return -x


def while_on_example(x):
    while np.max(x) < 10.0:
        x = x * 2.0
    return x


def loop_over_example(x):
    total = 0.0
    for v in x:
        total = total + v
    return total


def test_loops_and_branches_on_shared_values_match_a_loop():
    check(loop_shared, (0, None), r(N, 3), 4)
    check(loop_shared, (0, None), r(N, 3), 0)  # zero trips: the shared 0.0 is stacked


def masked_branches(x, w):
    s = np.sum(x)
    if s > 0:
        y = x * w
        z = s
    else:
        y = -x
        z = 2.0
    return y * z


def test_an_if_on_a_batched_test_whose_branches_only_compute_chooses_per_example():
    xs = np.array([[1.0, 2.0, -0.5], [-1.0, -2.0, 0.5], [0.1, -0.3, 0.1], [3.0, -3.1, 0.0]])  # both signs
    check(branch_on_example, 0, xs)
    check(masked_branches, (0, None), xs, r(3))
    assert "masked(" in astgrad.vmap(masked_branches, in_axes=(0, None)).source


def test_a_loop_over_each_examples_items_matches_a_loop():
    # every example has the same number of items (one example's shape): the loop runs over them, batched
    check(loop_over_example, 0, r(N, 3))
    check(loop_over_example, 0, r(N, 3, 2))


@pytest.mark.parametrize("f, what", [(while_on_example, "while loop's test")])
def test_control_flow_on_a_batched_value_is_refused_at_its_line(f, what):
    with pytest.raises(astgrad.TransformError, match=what) as info:
        astgrad.vmap(f)(r(N, 3))
    line = next(i for i, text in enumerate(open(__file__).read().splitlines(), 1)
                if text.strip().startswith(("if np.sum(x) > 0", "while np.max(x)", "for v in x"))
                and i > f.__code__.co_firstlineno)
    assert info.value.lineno == line and info.value.filename == __file__


# -- refusals: no rule, user calls, what only one example means -----------------------------------

@astgrad.primitive
def without_a_batching_rule(x):
    return np.sin(x)


astgrad.defvjp(without_a_batching_rule, lambda g, ans, x: g * np.cos(x))


def no_rule(x):
    return without_a_batching_rule(x)


def shape_of(x):
    return x.reshape(x.shape[0], -1)


def lower_triangle_of_a_vector(x):
    return np.tril(x[0])


def unpacks(x):
    a, b = x
    return a + b


def test_unpacking_each_examples_items_matches_a_loop():
    check(unpacks, 0, r(N, 2, 3))
    check(unpacks, 1, r(2, N))
    with pytest.raises(ValueError):  # three items per example, two names: numpy's error, as the loop's
        astgrad.vmap(unpacks)(r(N, 3, 2))


@pytest.mark.parametrize("f, message", [
    (no_rule, "no batching rule for .*without_a_batching_rule"),
    (lower_triangle_of_a_vector, "np.tril of an example of fewer than two axes"),
])
def test_what_has_no_batched_form_is_refused_at_the_users_line(f, message):
    with pytest.raises(astgrad.TransformError, match=message) as info:
        astgrad.vmap(f)(r(N, 2, 2))
    assert info.value.filename == __file__ and info.value.lineno == f.__code__.co_firstlineno + 1


def scale_and_sum(v, w, k=2.0):
    return np.tanh(v * w) * k, np.sum(v)


def power(v, n):
    if n == 0:
        return v * 0.0 + 1.0
    return v * power(v, n - 1)


def of_shared(w):
    return np.sum(w) * w


def calls_user_functions(x, w):
    a, s = scale_and_sum(x, w, k=3.0)
    pair = scale_and_sum(w, x)
    return a * s + power(x, 3) + of_shared(w) + pair[0]


def test_calls_of_user_functions_given_batched_values_match_a_loop():
    check(calls_user_functions, (0, None), r(N, 3), r(3))
    source = astgrad.vmap(calls_user_functions, in_axes=(0, None)).source
    assert "vmap_power" in source and "vmap_scale_and_sum" in source
    check(calls_user_functions, (None, 0), r(3), r(N, 3))
    check(calls_user_functions, 0, r(N, 3), r(N, 3))


def calls_with_a_test_on_its_value(x):
    return np.sum(halved_until_small(x))


def halved_until_small(v):
    if np.sum(v * v) > 1.0:
        return halved_until_small(v / 2.0)
    return v


def test_a_callee_whose_test_reads_a_batched_value_is_refused_at_its_line():
    with pytest.raises(astgrad.TransformError, match="test has a batch axis") as info:
        astgrad.vmap(calls_with_a_test_on_its_value)(r(N, 3))
    assert info.value.lineno == halved_until_small.__code__.co_firstlineno + 1


def item_writes(x, w):
    y = np.zeros(4)
    y[0] = x[1] * 2.0
    y[1:3] = x[:2] * w
    y[[3]] = np.sum(x)
    counts = np.zeros(2, dtype=int)
    counts[1] = x[0] * 10.0  # cast to an integer, as numpy does
    m = np.ones((2, 3))
    m[1] = x
    m[:, 0] = w
    return y + counts[1] + np.sum(m, axis=0)[0]


def item_writes_into_a_batched_array(x, w):
    z = x * 1.0
    z[0] = w[0]  # a shared value into each example's array
    z[1:] = z[1:] * 2.0
    return z


def test_item_writes_match_a_loop():
    xs = r(N, 3)
    check(item_writes, (0, None), xs, r(2))
    check(item_writes, (None, 0), r(3), r(N, 2))
    check(item_writes, 0, xs, r(N, 2))
    check(item_writes_into_a_batched_array, (0, None), xs, r(2))


def written_at_the_examples_index(i, x):
    y = np.zeros(3)
    y[i] = x[0]
    return y


def written_into_a_shared_argument(x, y):
    y[0] = x[1]
    return y * x


def test_item_writes_at_an_index_of_each_example_or_into_a_shared_argument_are_refused():
    with pytest.raises(astgrad.TransformError, match="index that differs from example to example") as info:
        astgrad.vmap(written_at_the_examples_index)(np.array([0, 2, 1, 0]), r(N, 3))
    assert info.value.lineno == written_at_the_examples_index.__code__.co_firstlineno + 2
    y = np.ones(3)
    with pytest.raises(astgrad.TransformError, match="would change the caller's array y"):
        astgrad.vmap(written_into_a_shared_argument, in_axes=(0, None))(r(N, 3), y)
    assert np.array_equal(y, np.ones(3))


def item_written_loss(x, w):
    y = np.zeros(3)
    for i in range(3):
        y[i] = np.sin(x[i] * w[i])
    return np.sum(y * y)


def test_per_example_gradients_of_code_that_writes_items_match_a_loop_of_grad():
    xs, w = r(N, 3), r(3)
    gradient = astgrad.grad(item_written_loss, wrt=(0, 1))
    found = astgrad.vmap(gradient, in_axes=(0, None))(xs, w)
    for k in range(2):
        np.testing.assert_allclose(found[k], np.stack([gradient(x, w)[k] for x in xs]), rtol=1e-13, atol=1e-15)
    hessian = astgrad.hessian(item_written_loss)
    np.testing.assert_allclose(hessian(xs[0], w), np.diag(np.diag(hessian(xs[0], w))), atol=1e-15)
    assert hessian.batched is True


def test_vmap_of_other_generated_functions_is_refused_not_looped():
    for generated in (astgrad.value_and_grad(looped_loss), astgrad.jvp(unary),
                      astgrad.grad(astgrad.grad(looped_loss))):
        with pytest.raises(TypeError, match="Loop over the examples"):
            astgrad.vmap(generated)


# -- the rule table, the cache ---------------------------------------------------------------------

@astgrad.primitive
def scaled_rows(x):
    return x * np.arange(1, x.shape[-1] + 1)


astgrad.defvjp(scaled_rows, lambda g, ans, x: g * np.arange(1, x.shape[-1] + 1))


def uses_scaled_rows(x):
    return scaled_rows(x) + 1.0


def test_a_users_batching_rule_is_used_and_survives_a_new_gradient_rule():
    with pytest.raises(astgrad.TransformError, match="defbatch"):
        astgrad.vmap(uses_scaled_rows)(r(N, 3))
    astgrad.defbatch(scaled_rows, lambda bdims, x: scaled_rows(x))
    try:
        check(uses_scaled_rows, 0, r(N, 3))
        astgrad.defvjp(scaled_rows, lambda g, ans, x: g * np.arange(1, x.shape[-1] + 1))
        assert astgrad.rules.find(scaled_rows).batch is not None
    finally:
        astgrad.rules._registry._TABLE.pop(scaled_rows)
        astgrad.rules._registry.changed()


activation = np.tanh


def reads_a_global(x):
    return activation(x) * 2.0


def test_cached_on_the_function_and_made_again_when_a_global_it_read_changes():
    global activation
    assert astgrad.vmap(reads_a_global) is astgrad.vmap(reads_a_global)
    x = r(N, 3)
    check(reads_a_global, 0, x)
    activation = np.sin
    try:
        np.testing.assert_allclose(astgrad.vmap(reads_a_global)(x), np.sin(x) * 2.0)
    finally:
        activation = np.tanh


# -- the generated source --------------------------------------------------------------------------

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden" / "vmap_batched_layer.py"


def test_generated_source_matches_golden_file():
    v = astgrad.vmap(g.batched_layer, in_axes=(0, None, None))
    x, W, b = r(N, 4), r(4, 3), r(3)
    np.testing.assert_allclose(v(x, W, b), looped(g.batched_layer, (0, None, None), (x, W, b)), rtol=1e-12)
    if os.environ.get("ASTGRAD_REGEN_GOLDEN") == "1":
        GOLDEN.write_text(v.source)
    assert v.source == GOLDEN.read_text()


# -- per-example gradients: vmap(grad(f)) ---------------------------------------------------------

def mlp_loss(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    out = h @ W2 + b2
    return np.mean((out - y) ** 2)


def test_per_example_gradients_of_an_mlp_match_a_loop_of_grad():
    W1, b1, W2, b2 = r(5, 4), r(4), r(4, 3), r(3)
    X, Y = r(N + 3, 5), r(N + 3, 3)
    gradient = astgrad.grad(mlp_loss, wrt=(0, 1, 2, 3))
    per_example = astgrad.vmap(gradient, in_axes=(None, None, None, None, 0, 0))(W1, b1, W2, b2, X, Y)
    loop = [gradient(W1, b1, W2, b2, x, y) for x, y in zip(X, Y)]
    for i, part in enumerate(per_example):
        np.testing.assert_allclose(part, np.stack([grads[i] for grads in loop]), rtol=1e-12, atol=1e-14)
    # and the loop of astgrad.grad against finite differences, the independent reference
    from _numeric import gradient as numeric
    np.testing.assert_allclose(loop[0][0], numeric(lambda w: mlp_loss(w, b1, W2, b2, X[0], Y[0]), W1), atol=1e-7)


def test_per_example_gradients_batched_over_parameters_too():
    W1, b1, W2, b2 = r(N, 5, 4), r(4), r(4, 3), r(3)
    X, Y = r(N, 5), r(N, 3)
    gradient = astgrad.grad(mlp_loss)
    batched = astgrad.vmap(gradient, in_axes=(0, None, None, None, 0, 0))(W1, b1, W2, b2, X, Y)
    np.testing.assert_allclose(batched, np.stack([gradient(w, b1, W2, b2, x, y) for w, x, y in zip(W1, X, Y)]),
                               rtol=1e-12, atol=1e-14)


def cross_entropy(W1, b1, W2, b2, x, y):
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    s = z - np.max(z)
    return np.log(np.sum(np.exp(s))) - np.sum(s * y)


def test_per_example_gradients_whose_code_checks_an_unread_value_match_a_loop_of_grad():
    # the gradient computes the loss only for what numpy raises (checked(... if floats(...) else ...))
    W1, b1, W2, b2 = r(5, 4), r(4), r(4, 3), r(3)
    X, Y = r(N, 5), np.eye(3)[[0, 2, 1, 2]]
    gradient = astgrad.grad(cross_entropy, wrt=(0, 1, 2, 3))
    batched = astgrad.vmap(gradient, in_axes=(None, None, None, None, 0, 0))
    per_example = batched(W1, b1, W2, b2, X, Y)
    assert "checked(" in batched.source
    loop = [gradient(W1, b1, W2, b2, x, y) for x, y in zip(X, Y)]
    for i, part in enumerate(per_example):
        np.testing.assert_allclose(part, np.stack([grads[i] for grads in loop]), rtol=1e-12, atol=1e-14)
    from _numeric import gradient as numeric
    np.testing.assert_allclose(loop[1][2], numeric(lambda w: cross_entropy(W1, b1, w, b2, X[1], Y[1]), W2), atol=1e-7)


def looped_loss(x, n):
    for _ in range(n):
        x = np.sin(x)
    return np.sum(x)


def test_per_example_gradients_of_code_with_a_stack_match_a_loop_of_grad():
    # the gradient pushes y on its stack each trip and pops it in the reverse loop: batched values, batched
    xs = r(N, 3)
    gradient = astgrad.grad(looped_loss)
    batched = astgrad.vmap(gradient, in_axes=(0, None))
    np.testing.assert_allclose(batched(xs, 3), np.stack([gradient(x, 3) for x in xs]), rtol=1e-13, atol=1e-15)
    assert "push_batched" in batched.source and "pop_batched" in batched.source
    from _numeric import gradient as numeric
    np.testing.assert_allclose(gradient(xs[1], 3), numeric(lambda v: looped_loss(v, 3), xs[1]), atol=1e-8)


def shared_then_batched(x, w, n):
    y = w  # every example's, until the first trip makes it the example's own
    for i in range(n):
        y = np.sin(y * x) + i
    return np.sum(y * y)


def test_a_name_pushed_shared_then_batched_pops_with_the_batch_axis():
    xs, w = r(N, 3), r(3)
    gradient = astgrad.grad(shared_then_batched, wrt=(0, 1))
    found = astgrad.vmap(gradient, in_axes=(0, None, None))(xs, w, 3)
    for part, k in zip(found, range(2)):
        np.testing.assert_allclose(part, np.stack([gradient(x, w, 3)[k] for x in xs]), rtol=1e-13, atol=1e-15)


def trips_of_the_example(x):
    while np.sum(x * x) < 10.0:
        x = x * 1.5
    return np.sum(x)


def branch_with_effect(x):
    log = []
    if np.sum(x) > 0:
        log.append(x)
    return np.sum(x) * len(log)


def test_per_example_trip_counts_and_branches_are_refused_at_the_users_line():
    gradient = astgrad.grad(trips_of_the_example)
    with pytest.raises(astgrad.TransformError, match="each example may stop at its own trip"):
        astgrad.vmap(gradient)(r(N, 3))
    with pytest.raises(astgrad.TransformError, match="test has a batch axis") as info:
        astgrad.vmap(branch_with_effect)(r(N, 3))
    assert info.value.lineno == branch_with_effect.__code__.co_firstlineno + 2


def test_a_stack_gives_back_a_value_of_the_kind_its_push_had_or_raises():
    from astgrad.rules.batching import Unbatchable
    from astgrad.transform.runtime.batched_stack import pop_batched, pop_shared, push_batched
    items = [np.ones(2)]
    push_batched(items, np.zeros((N, 2)))
    with pytest.raises(Unbatchable, match="with a batch axis where"):
        pop_shared(items)
    np.testing.assert_array_equal(pop_batched(items, N), np.ones((N, 2)))  # shared: every example's
    push_batched(items, (np.zeros((N, 2)), np.ones(N)), True)
    with pytest.raises(Unbatchable, match="a tuple or list of values with a batch axis where it expected one array"):
        pop_batched(items, N)
    push_batched(items, np.zeros((N, 2)))
    with pytest.raises(Unbatchable, match="an array with a batch axis where it expected a tuple or list"):
        pop_batched(items, N, True)
    items.append((1.0, np.ones(2)))
    popped = pop_batched(items, N, True)
    assert type(popped) is tuple and np.shape(popped[0]) == (N,) and np.shape(popped[1]) == (N, 2)
    assert items == []


# -- where a wrong number could hide ---------------------------------------------------------------

def clipped_by_a_keyword(x, m):
    return np.clip(x, a_min=m, a_max=None)


def test_a_keyword_operand_of_larger_rank_aligns_the_batched_one():
    # N == 2 == m's first axis would broadcast (2, 3) against (2, 3) without the new axis: a wrong number
    check(clipped_by_a_keyword, (0, None), r(2, 3), r(2, 3))


def plus_a_module_array(x):
    return x + np.eye(3)[0:2] + SHARED


SHARED = np.ones((2, 3))


def test_operands_of_unknown_rank_align_when_it_runs():
    check(plus_a_module_array, 0, r(2, 3))


def break_leaves_it_batched(x, n):
    y = 0.0
    for i in range(n):
        y = x * i
        if i == 1:
            break
        y = 1.0
    return y


def test_a_value_batched_on_the_path_of_a_break_stays_batched_after_the_loop():
    check(break_leaves_it_batched, (0, None), r(N, 3), 3)
    check(break_leaves_it_batched, (0, None), r(N, 3), 1)


def matmul_of_a_number(x, W):
    return x @ W


def test_matmul_of_a_number_per_example_is_refused_not_broadcast():
    with pytest.raises(astgrad.TransformError, match="a number"):
        astgrad.vmap(matmul_of_a_number, (0, None))(r(3), r(3, 2))  # each example is a number: numpy refuses x @ W


def draws(x):
    return x + np.random.normal(size=3)


def test_random_draws_are_refused():
    with pytest.raises(astgrad.TransformError, match="draws random numbers"):
        astgrad.vmap(draws)(r(N, 3))


def writes_an_item(x):
    y = x * 1.0
    y[0] = 2.0
    return y


def test_an_item_write_into_a_batched_array_writes_each_examples_item():
    check(writes_an_item, 0, r(N, 3))


# -- every entry of the table with a batching rule, against a loop ---------------------------------

from astgrad import rules as _rules  # noqa: E402
from astgrad.rules import _support  # noqa: E402
from astgrad.transform import runtime as _runtime  # noqa: E402
from astgrad.transform.runtime import structural as _structural, tangents as _tangents  # noqa: E402
from astgrad.api import vmapped as _vmapped  # noqa: E402


def activations(x):
    return _rules.relu(x) + _rules.sigmoid(x) * 2.0 + _rules.astype(x, np.float32) + np.copy(x)


def helpers_of_gradients(x, m):
    s = _runtime.shape(m)
    total = _runtime.size(x) + _runtime.ndim(x)
    spread = _support.filled(np.sum(x), s) + _support.expand_reduced(np.sum(x, axis=0), _runtime.shape(x), 0)
    summed = _runtime.unbroadcast(x * 2.0, (1, 3)) + _support.unbroadcast(x, (3,))
    return spread * total + summed + _runtime.T(x)


def helpers_of_jvps(x, m):
    spread = _tangents.tangent_of(x[0], m) + _tangents.tangent_of(x, m)
    kept = _structural.cleaned(m > 0.0, x) + _structural.cleaned(None, x)
    scattered = _rules.scatter(x[1], (4, 3), 2) + _rules.scatter(x[:2], (4, 3), np.array([3, 0]))
    return spread + kept + scattered[1:] + _rules.scatter(x[0, 0], (3, 3), np.s_[1:, 2])


def test_the_helpers_batched_jvps_call_match_a_loop():
    check(helpers_of_jvps, (0, None), r(N, 3, 3), r(3, 3))


def test_activations_and_casts_match_a_loop():
    batched = check(activations, 0, r(N, 3))
    assert batched.dtype == np.float64


def test_the_helpers_generated_gradients_call_match_a_loop():
    check(helpers_of_gradients, (0, None), r(N, 3, 3), r(3, 3))


def one_examples_shape(x):
    total = 0.0
    for i in range(len(x)):
        total = total + x[i] * x.shape[0] + np.shape(x)[-1] + x.ndim + x.size + np.size(x, 0) + np.ndim(x)
    return total


def norms_and_products(x, y):
    return (np.linalg.norm(x) + np.linalg.norm(x, axis=0) + np.linalg.norm(x, 1) + abs(np.sum(x)),
            np.outer(x, y), np.cumprod(x, axis=0), np.ravel(x))


def test_one_examples_shape_is_shared_and_a_loop_over_its_length_runs():
    check(shape_of, 0, r(N, 3, 2, 2))
    check(one_examples_shape, 0, r(N, 3))
    check(one_examples_shape, 0, r(N, 3, 2))


def test_norms_outer_cumprod_ravel_match_a_loop():
    check(norms_and_products, 0, r(N, 3), r(N, 2))
    check(norms_and_products, (0, None), r(N, 3), r(2))
    check(norms_and_products, (None, 0), r(3), r(N, 2))


def calls_a_vmap(xs, w):
    return astgrad.vmap(unary, in_axes=1, out_axes=1)(xs) * w


def test_a_vmapped_call_in_a_vmapped_function_matches_a_loop():
    check(calls_a_vmap, (0, None), r(N, 3, 5), r(3, 1))
    check(calls_a_vmap, (None, 0), r(3, 5), r(N, 3, 1))


def loss_through_a_vmap(xs, w):
    return np.sum(astgrad.vmap(unary, in_axes=1, out_axes=1)(xs) * w)


def test_per_example_gradients_through_a_vmapped_call_match_a_loop():
    check(astgrad.grad(loss_through_a_vmap, (0, 1)), (0, None), r(N, 3, 5), r(3, 1))
    check(astgrad.grad(loss_through_a_vmap, 1), (None, 0), r(3, 5), r(N, 3, 1))


#: each batching rule's function, and the cases above that run it against a loop
COVERED = {
    _vmapped.vmap_at: calls_a_vmap, _vmapped.vmap_at_vjp: loss_through_a_vmap,
    np.where: comparisons, np.clip: comparisons, _rules.relu: activations, _rules.sigmoid: activations,
    _rules.astype: activations, np.copy: activations,
    np.sum: reductions, np.mean: reductions, np.prod: reductions, np.max: reductions, np.min: reductions,
    np.std: reductions, np.var: reductions, np.argmax: argreductions, np.argmin: argreductions,
    np.cumsum: cumulative, np.matmul: matmul, np.dot: dot, np.cumprod: norms_and_products,
    np.linalg.norm: norms_and_products, np.outer: norms_and_products, np.ravel: norms_and_products,
    np.shape: one_examples_shape, np.ndim: one_examples_shape, np.size: one_examples_shape,
    np.reshape: shapes, np.transpose: more_shapes, np.swapaxes: shapes, np.moveaxis: more_shapes,
    np.expand_dims: more_shapes, np.squeeze: more_shapes, np.concatenate: joined, np.stack: joined,
    _rules.getitem: indexed,
    _runtime.shape: helpers_of_gradients, _runtime.size: helpers_of_gradients, _runtime.ndim: helpers_of_gradients,
    _runtime.unbroadcast: helpers_of_gradients, _support.unbroadcast: helpers_of_gradients,
    _runtime.T: helpers_of_gradients, _support.filled: helpers_of_gradients,
    _support.expand_reduced: helpers_of_gradients,
    _tangents.tangent_of: helpers_of_jvps, _structural.cleaned: helpers_of_jvps, _rules.scatter: helpers_of_jvps,
    _runtime.floats: cross_entropy, _runtime.checked: cross_entropy,
    _rules.setitem: item_writes, _rules.written: item_written_loss, _rules.through_cast: item_written_loss,
}


def test_every_case_here_runs_a_shipped_batching_rule():
    # every rule against a loop: here, and each table entry's sample case in tests/rules/test_batching_rules.py
    with_rules = {entry.fn for entry in _rules.shipped() if entry.batch is not None}
    assert set(COVERED) <= with_rules, sorted(map(str, set(COVERED) - with_rules))


def list_into_numpy(x):
    parts = [x, x * 2.0]
    return np.sum(parts, axis=0) + parts[1]


def test_a_list_of_batched_arrays_is_indexed_but_never_read_as_one_array():
    with pytest.raises(astgrad.TransformError, match="batch axis second") as info:
        astgrad.vmap(list_into_numpy)(r(N, 3))
    assert info.value.lineno == list_into_numpy.__code__.co_firstlineno + 2


def items_indexed(x):
    parts = (x, x * 2.0)
    return parts[1] + np.stack(parts)[0]


def test_items_of_a_tuple_of_batched_arrays_match_a_loop():
    check(items_indexed, 0, r(N, 3))


def first_row_plus(x, m):
    row, = m  # one row: unpacked, not bound as the matrix
    return x + row[0]


def test_unpacking_one_item_of_a_shared_value_binds_the_item():
    check(first_row_plus, (0, None), r(N, 3), r(1, 3))


def imaginary_part_weighted(x, w):
    return np.sum(np.imag(x * 1j) * w)


def test_per_example_gradients_have_the_dtype_and_structure_grad_gives():
    # grad of a real argument is the real part, of a tuple wrt a tuple, one example as each batch item
    for wrt in (0, (0,), (0, 1)):
        gradient = astgrad.grad(imaginary_part_weighted, wrt=wrt)
        xs, w = r(N, 3), r(3)
        batched = astgrad.vmap(gradient, in_axes=(0, None))(xs, w)
        looped_ = [gradient(x, w) for x in xs]
        if isinstance(wrt, tuple):
            assert isinstance(batched, tuple) and len(batched) == len(wrt)
            for i, part in enumerate(batched):
                assert part.dtype == np.float64
                np.testing.assert_allclose(part, np.stack([g[i] for g in looped_]), rtol=1e-12)
        else:
            assert batched.dtype == np.float64
            np.testing.assert_allclose(batched, np.stack(looped_), rtol=1e-12)


# -- in_axes and out_axes per item of a tuple ------------------------------------------------------------

def pair_sum(pair, w):
    a, b = pair
    return a * w + np.sum(b), b * 2.0


def test_in_axes_per_item_of_a_tuple_argument_and_out_axes_per_item_of_the_result():
    a, b, w = r(N, 3), r(4, N), r(3)
    found = astgrad.vmap(pair_sum, in_axes=((0, 1), None), out_axes=(0, 1))((a, b), w)
    each = [pair_sum((a[k], b[:, k]), w) for k in range(N)]
    np.testing.assert_allclose(found[0], np.stack([e[0] for e in each]), rtol=1e-12)
    np.testing.assert_allclose(found[1], np.stack([e[1] for e in each], axis=1), rtol=1e-12)
    shared = astgrad.vmap(pair_sum, in_axes=((0, None), None))((a, b[:, 0]), w)  # b shared by every example
    each = [pair_sum((a[k], b[:, 0]), w) for k in range(N)]
    np.testing.assert_allclose(shared[1], np.stack([e[1] for e in each]), rtol=1e-12)


@pytest.mark.parametrize("in_axes, out_axes, message", [
    (((0, (0, None)), None), 0, "in_axes"),  # a tuple in a tuple's entry: not a prefix of the pair's item
    (0, (0, "x"), "out_axes"),
    (((0, 1, 0), None), 0, "in_axes is not a tree prefix of the arguments: it has a tuple of 3 for pair, which is "
                           "a tuple of 2"),
])
def test_bad_per_item_axes_are_refused(in_axes, out_axes, message):
    with pytest.raises((TypeError, ValueError), match=message):
        astgrad.vmap(pair_sum, in_axes=in_axes, out_axes=out_axes)((r(N, 3), r(N, 4)), r(3))


def test_out_axes_per_item_need_a_tuple_of_as_many_results():
    with pytest.raises(ValueError, match="out_axes"):
        astgrad.vmap(lambda x: x * 2.0, out_axes=(0, 1))(r(N, 3))


def pair_loss(pair, w):
    a, b = pair
    return np.sum(np.sin(a) * w) + np.sum(b * b)


def test_per_example_gradients_of_a_tuple_argument_batched_per_item_match_a_loop_of_grad():
    a, b, w = r(N, 3), r(N, 2), r(3)
    gradient = astgrad.grad(pair_loss)
    found = astgrad.vmap(gradient, in_axes=((0, 0), None))((a, b), w)
    each = [gradient((a[k], b[k]), w) for k in range(N)]
    assert isinstance(found, tuple) and len(found) == 2
    for i in range(2):
        np.testing.assert_allclose(found[i], np.stack([e[i] for e in each]), rtol=1e-12)


def calls_a_per_item_vmap(x):
    return np.sum(astgrad.vmap(pair_loss, in_axes=((0, 0), None))((x, x), np.ones(3)))


def test_a_per_item_vmap_called_inside_a_gradient_is_refused_at_its_call():
    with pytest.raises(astgrad.TransformError, match="a batch axis per item"):
        astgrad.grad(calls_a_per_item_vmap)(r(N, 3))
