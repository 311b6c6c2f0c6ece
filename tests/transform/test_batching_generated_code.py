"""The batching sweep over generated code: what hessian, jacrev and vmap(grad(f)) batch, checked against loops.

Each case runs the batched path and the loop (the batched path turned off,
or a Python loop of the unbatched function), and pins which path ran
(``.batched``): one batched call where the sweep can prove the numbers
right, the loop where it cannot, never a guess.
"""

import numpy as np
import pytest

import astgrad
from astgrad.api.directions import Directions
from astgrad.rules.batching import Unbatchable
from astgrad.transform.runtime.batched_items import zero_examples

X3 = np.array([0.3, -0.2, 0.5])


def looped(make):
    """``make()`` with the batched path turned off: one product per direction, as before batching."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Directions, "run", lambda *args, **kwargs: None)
        return make()


def several_returns(x):
    s = np.sum(x)
    if s > 0.5:
        return s * s
    if s > 0.0:
        return np.sum(np.exp(x))
    return -s


def rows_that_skip(x):
    s = np.sum(x * x)
    if s > 0.5:
        y = x * s
    else:
        y = x * 2.0
    return y[:2] + x[1]


@pytest.mark.parametrize("x", [X3, X3 * 2, -X3])
def test_jacrev_batches_a_vjp_that_skips_a_rule_for_a_zero_gradient(x):
    jacobian = astgrad.jacrev(several_returns)
    found = jacobian(x)
    assert jacobian.batched is True  # the seed's is_zero test: every example shares it
    np.testing.assert_allclose(found, looped(lambda: astgrad.jacrev(several_returns)(x)), rtol=1e-12)
    np.testing.assert_allclose(found, astgrad.grad(several_returns)(x), rtol=1e-12)


@pytest.mark.parametrize("x", [X3, X3 * 2])
def test_jacrev_of_rows_whose_gradients_are_zero_for_some_rows_matches_the_loop(x):
    jacobian = astgrad.jacrev(rows_that_skip)
    expected = looped(lambda: astgrad.jacrev(rows_that_skip)(x))
    np.testing.assert_allclose(jacobian(x), expected, rtol=1e-12)
    rows = np.stack([astgrad.grad(lambda x, i=i: rows_that_skip(x)[i])(x) for i in range(2)])
    np.testing.assert_allclose(expected, rows, rtol=1e-12)


def test_zero_examples_is_one_answer_for_every_example_or_raises():
    assert zero_examples(np.broadcast_to(0.0, (4,))) is True  # a shared 0.0 given the batch axis
    assert zero_examples(np.broadcast_to(None, (2,))) is True
    assert zero_examples(np.array([1.0, 2.0])) is False
    assert zero_examples(np.zeros((2, 3))) is False  # examples with axes: arrays, never the number zero
    assert zero_examples(np.zeros(3, dtype=int)) is False  # an int is no gradient's zero
    with pytest.raises(Unbatchable, match="some examples only"):
        zero_examples(np.array([0.0, 1.0]))


def zipped_pairs(x):
    s = 0.0
    for pair in zip(x, x * 2.0):
        s = s + pair[0] * pair[1]
    return s


def reshaped_by_pairs(x, w):
    shape = [n for pair in zip((2,), (3,)) for n in pair]
    return np.sum(np.reshape(np.tile(x, (2, 1)), shape) * w)


def test_a_loop_over_zip_bound_to_one_name_runs_and_differentiates():
    # the front end indexed the zip object itself (len(zip(...)): TypeError) and found no gradient rule for zip
    np.testing.assert_allclose(astgrad.grad(zipped_pairs)(X3), 4.0 * X3, rtol=1e-12)
    x, w = np.array([[0.5, -1.0, 2.0]]), np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(astgrad.grad(reshaped_by_pairs)(x, w), np.sum(w, axis=0, keepdims=True), rtol=1e-12)


def tiled(x, w):
    return np.sum(np.tile(x, (2, 1)) * w)


def test_per_example_gradients_through_the_comprehension_of_tiles_rule_match_a_loop():
    # np.tile's reverse rule reshapes by [n for pair in zip(reps, shape) for n in pair]: it raised TypeError
    xs = np.random.default_rng(0).standard_normal((4, 3))
    w = np.arange(6.0).reshape(2, 3)
    gradient = astgrad.grad(tiled)
    found = astgrad.vmap(gradient, in_axes=(0, None))(xs, w)
    np.testing.assert_allclose(found, np.stack([gradient(x, w) for x in xs]), rtol=1e-12)


def outer_and_dot(x, y):
    return np.dot(np.outer(x, y) @ y, x) + np.sum(np.square(y))


def dot_method(x, y):
    return x.dot(y) * x.dot(x)


def scaled(x, scale=2.0, shift=0.0):
    return np.sum(np.sin(x * scale) + shift)


def defaults_and_keywords(x):
    return scaled(x) + scaled(x, 3.0) + scaled(x, shift=1.5) + scaled(scale=x, x=x)


@pytest.mark.parametrize("f, args, wrt", [(outer_and_dot, (X3, np.array([0.1, 0.4, -0.3, 0.2])), (0, 1)),
                                          (dot_method, (X3, X3 * 2.0), (0, 1)),
                                          (defaults_and_keywords, (X3,), 0)])
def test_hessians_whose_callees_return_a_value_and_a_tuple_of_tangents_are_one_batched_call(f, args, wrt):
    # a callee's jvp returns (its value, the tuple of its tangents): a tuple holding batched tuples, refused before
    hessian = astgrad.hessian(f, wrt=wrt)
    found = hessian(*args)
    assert hessian.batched is True
    expected = looped(lambda: astgrad.hessian(f, wrt=wrt)(*args))
    for b, e in zip(np.asarray(found, dtype=object).ravel(), np.asarray(expected, dtype=object).ravel()):
        np.testing.assert_allclose(b, e, rtol=1e-12, atol=1e-14)


def power_by_recursion(x, n):
    if n == 0:
        return x * 0.0 + 1.0
    return x * power_by_recursion(x, n - 1)


def recursion(x):
    return np.sum(power_by_recursion(x, 4))


def test_the_hessian_of_a_recursive_function_is_one_batched_call():
    # the callee's tuple pushed on the stack and popped by another name: matched by the names of its items
    hessian = astgrad.hessian(recursion)
    found = hessian(X3)
    assert hessian.batched is True
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(recursion)(X3)), rtol=1e-12)
    np.testing.assert_allclose(found, np.diag(12.0 * X3 ** 2), rtol=1e-12)


def split_pieces(x):
    a, b, c = np.split(x, 3)
    return np.sum(a * c)


def test_per_example_gradients_of_a_rule_with_a_missing_gradient_in_its_tuple_match_a_loop():
    # the None of b's gradient, given the batch axis, is None again for `gi is None` (it was read as an array)
    xs = np.random.default_rng(1).standard_normal((3, 6))
    gradient = astgrad.grad(split_pieces)
    np.testing.assert_allclose(astgrad.vmap(gradient)(xs), np.stack([gradient(x) for x in xs]), rtol=1e-12)


def helper_inner(a, b):
    return np.sin(a) * b


def helper_outer(x, y):
    return helper_inner(x, y) + helper_inner(y, x) * 2.0


def nested_calls(x, y):
    return np.sum(helper_outer(x, y * y))


def test_a_callee_batched_two_ways_pops_each_tuple_by_its_own_name():
    # helper_inner's variants push tuples under one name and pop them under it: the names of the items, which
    # differ between its variants, must not decide the pop
    hessian = astgrad.hessian(nested_calls, wrt=(0, 1))
    found = hessian(X3, X3 + 0.5)
    assert hessian.batched is True
    expected = looped(lambda: astgrad.hessian(nested_calls, wrt=(0, 1))(X3, X3 + 0.5))
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(found[i][j], expected[i][j], rtol=1e-12, atol=1e-14)


def unpack_rows(x):
    first, second, third = x
    return np.sum(first * third)


def split_pair(x):
    return x * 2.0, np.exp(x)


def tuple_returning_helper(x):
    a, b = split_pair(x)
    return np.sum(a * b)


@pytest.mark.parametrize("f, x", [(unpack_rows, np.arange(6.0).reshape(3, 2) / 5.0), (tuple_returning_helper, X3)])
def test_hessians_through_unpacking_are_one_batched_call(f, x):
    # the tangent of unpacked_gradient: a comprehension over zip(parts, tangents), None kept for a missing part
    hessian = astgrad.hessian(f)
    found = hessian(x)
    assert hessian.batched is True
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(f)(x)), rtol=1e-12, atol=1e-14)


def test_a_rules_gradient_of_a_list_argument_is_not_read_as_a_tuple_of_batched_arrays():
    from astgrad.transform.runtime.batched_items import gradients_of_tuple, none_examples
    parts = [np.ones((2, 3)), np.zeros((2, 3))]
    assert gradients_of_tuple(tuple(parts), 3) == (parts[0], parts[1], None)
    with pytest.raises(Unbatchable, match="list or tuple argument"):
        gradients_of_tuple(parts, 1)  # one argument's gradient, a list: its items are not the arguments'
    assert none_examples(None) and none_examples(np.broadcast_to(None, (3,))) and not none_examples(parts[0])
    with pytest.raises(Unbatchable):
        none_examples(np.array([None, 1.0], dtype=object))


def aliased_list(x):
    parts = []
    kept = parts
    for i in range(3):
        parts.append(x * (i + 1.0))
    return np.sum(np.stack(kept) ** 2)


def test_split_pieces_hessian_grows_a_list_its_names_alone_hold():
    # the rule's list of pieces, grown with batched tangents: a new list of batched arrays
    hessian = astgrad.hessian(split_pieces)
    x = np.linspace(-1.0, 1.0, 6)
    found = hessian(x)
    assert hessian.batched is True
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(split_pieces)(x)), rtol=1e-12, atol=1e-14)


def test_a_list_another_name_holds_is_never_grown_as_a_new_list():
    # kept sees every append: a new list of batched arrays under parts alone would leave kept empty
    xs = np.random.default_rng(2).standard_normal((3, 4))
    try:
        found = astgrad.vmap(aliased_list)(xs)
    except (astgrad.TransformError, Unbatchable):
        return  # refused: the loop is the caller's
    np.testing.assert_allclose(found, np.stack([aliased_list(x) for x in xs]), rtol=1e-12)


def norms(x):
    return np.linalg.norm(x) + np.linalg.norm(x.reshape(2, 3), ord="fro")


def test_hessians_of_norms_batch_past_a_callee_refused_in_a_branch_that_does_not_run():
    # jvp__tolerance (np.max(initial=) has no jvp) stands in for a callee that raises its refusal when called;
    # it was refused at vmap's transform, though the branch calling it (ord=2) does not run here
    x = np.array([0.3, -0.2, 0.5, 1.0, -0.7, 0.4])
    hessian = astgrad.hessian(norms)
    found = hessian(x)
    assert hessian.batched is True
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(norms)(x)), rtol=1e-12, atol=1e-14)
    n = np.linalg.norm(x)
    np.testing.assert_allclose(found, 2 * (np.eye(6) / n - np.outer(x, x) / n ** 3), rtol=1e-10)


def test_zero_tangents_of_examples_are_batched_zeros_and_a_batched_none_stays_none():
    from astgrad.transform.runtime.batched_items import zero_tangents_of_examples
    np.testing.assert_array_equal(zero_tangents_of_examples(np.ones((2, 3), dtype=int)), np.zeros((2, 3)))
    nones = np.broadcast_to(None, (2,))
    assert zero_tangents_of_examples(nones) is nones


def spectral_norm(a, w):
    return np.linalg.norm(a, ord=2) * w + np.finfo(np.result_type(a, np.float32)).eps


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_per_example_gradients_of_a_spectral_norm_match_a_loop(dtype):
    # its rule sizes a tolerance with np.result_type and (before) np.max(initial=), which has no rule to
    # differentiate again: vmap(grad(f)) refused it
    xs = np.random.default_rng(4).standard_normal((3, 4, 3)).astype(dtype)
    gradient = astgrad.grad(spectral_norm)
    found = astgrad.vmap(gradient, in_axes=(0, None))(xs, 1.5)
    expected = np.stack([gradient(x, 1.5) for x in xs])
    assert found.dtype == expected.dtype
    np.testing.assert_allclose(found, expected, rtol=1e-5 if dtype is np.float32 else 1e-12)
    assert np.all(astgrad.vmap(spectral_norm, in_axes=(0, None))(xs, 1.5) ==
                  np.stack([spectral_norm(x, 1.5) for x in xs]))


def negated(x):
    flag = not np.all(x > 0.0)
    return np.where(flag, np.sum(x), np.sum(x) * 2.0)


def test_not_of_one_truth_value_per_example_matches_a_loop():
    from astgrad.transform.runtime.batched_items import not_examples
    xs = np.array([[1.0, 2.0], [-1.0, 2.0], [3.0, 0.5]])
    np.testing.assert_allclose(astgrad.vmap(negated)(xs), [negated(x) for x in xs])
    with pytest.raises(ValueError, match="ambiguous"):
        not_examples(np.ones((3, 2), dtype=bool))


def consumed_generators(x):
    axes = tuple(i for i in range(x.ndim) if i != 0)
    s = sum(np.sum(x[i] ** 2) for i in range(2))
    return np.sum(np.sum(x, axis=axes) * s) + max(v for v in (1.0, 2.0))


def shadowed_tuple(x):
    tuple = list
    return np.sum(x) + len(tuple(i for i in range(3)))


def test_a_generator_consumed_by_tuple_sum_or_max_is_read_as_the_list_comprehension():
    from _numeric import numeric_grad
    x = np.arange(6.0).reshape(2, 3) / 7
    np.testing.assert_allclose(astgrad.grad(consumed_generators)(x), numeric_grad(consumed_generators, (x,), 0),
                               rtol=1e-6)
    with pytest.raises(astgrad.TransformError, match="generator expressions are not supported"):
        astgrad.grad(shadowed_tuple)(x)  # tuple is not the builtin here: the generator is refused as before


def rolled(x, w):
    return np.sum(np.roll(x, (1, 2), axis=(0, 1)) * w)


def test_per_example_gradients_of_np_roll_match_a_loop():
    # np.roll's reverse rule negates its shifts with tuple(-s for s in shift): refused by vmap(grad(f)) before
    xs = np.random.default_rng(5).standard_normal((3, 2, 4))
    w = np.arange(8.0).reshape(2, 4)
    gradient = astgrad.grad(rolled)
    np.testing.assert_allclose(astgrad.vmap(gradient, in_axes=(0, None))(xs, w),
                               np.stack([gradient(x, w) for x in xs]), rtol=1e-12)
