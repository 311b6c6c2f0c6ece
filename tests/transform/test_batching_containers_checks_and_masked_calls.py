"""Per-example gradients and batched hessians of code whose gradient holds tuples of batched values, checks and
ifs that call functions (``vmap(grad(f))``), each against a Python loop of ``grad`` over the examples and the
column-by-column hessian.

The mechanisms: a tuple holding a list or tuple of batched arrays pushed on the stack of generated code (the
decompositions' saved values); the gradient of a list or tuple of batched arrays grown item by item
(``getitem_gradient``, ``accumulate``, ``is_zero``); a function that only checks and raises called on each
example; ``if test: raise`` on a batched test raised where any example's test holds; an ``if`` on a batched test
whose branches call functions that only compute, masked, and one whose callee pushes on the stack, refused.
"""

import numpy as np
import pytest

import astgrad
from astgrad.api.directions import Directions
from astgrad.rules.batching import Unbatchable

RNG = np.random.default_rng(7)
MATRICES = RNG.normal(size=(4, 3, 3))
VECTORS = RNG.normal(size=(4, 6))


def looped(make):
    """``make()`` with the batched path turned off: one product per direction."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Directions, "run", lambda *args, **kwargs: None)
        return make()


def per_example(f, xs, *shared):
    """vmap(grad(f)) over the first axis of ``xs``, checked against a loop of grad."""
    gradient = astgrad.grad(f)
    batched = astgrad.vmap(gradient, in_axes=(0,) + (None,) * len(shared))(xs, *shared)
    np.testing.assert_allclose(batched, np.stack([gradient(x, *shared) for x in xs]), rtol=1e-9, atol=1e-12)
    return batched


def singular_vectors_squared(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(u ** 2 * np.arange(3.0)) + np.sum(s) + np.sum(vh[0] ** 2)


def eigenvectors_weighed(a):
    w, v = np.linalg.eigh(a + np.swapaxes(a, -1, -2))
    return np.sum(w * np.arange(3.0)) + np.sum(v[:, 0] ** 2 * np.arange(1.0, 4.0))


def halves(x):
    first, second = np.split(x, 2)
    return np.sum(first ** 2) + np.sum(second * np.arange(3.0)) + np.sum(first * second)


@pytest.mark.parametrize("f, xs", [(singular_vectors_squared, MATRICES), (eigenvectors_weighed, MATRICES),
                                   (halves, VECTORS)], ids=["svd", "eigh", "split"])
def test_per_example_gradients_through_tuples_of_batched_values(f, xs):
    per_example(f, xs)


@pytest.mark.parametrize("f, x", [(singular_vectors_squared, MATRICES[0]), (halves, VECTORS[0])], ids=["svd", "split"])
def test_hessians_through_tuples_of_batched_values_match_the_column_loop(f, x):
    hessian = astgrad.hessian(f)
    found = hessian(x)
    assert hessian.batched is True
    np.testing.assert_allclose(found, looped(lambda: astgrad.hessian(f)(x)), rtol=1e-8, atol=1e-10)


def eigenvalues_weighed(a):
    return np.sum(np.linalg.eigvalsh(a) * np.array([1.0, 2.0, 3.0]))


def test_a_check_raises_for_the_example_it_fails_as_the_loop_does():
    """eigvalsh's gradient checks each example's eigenvalues (a kink where two are equal and weighed apart)."""
    symmetric = MATRICES + np.swapaxes(MATRICES, -1, -2)
    per_example(eigenvalues_weighed, symmetric)
    tied = symmetric.copy()
    tied[2] = np.eye(3)  # three equal eigenvalues, weighed 1, 2, 3: no gradient
    gradient = astgrad.grad(eigenvalues_weighed)
    with pytest.raises(ValueError, match="repeated eigenvalues"):
        gradient(tied[2])
    with pytest.raises(ValueError, match="repeated eigenvalues"):
        astgrad.vmap(gradient)(tied)


def determinant(a):
    return np.linalg.det(a) ** 2


def test_an_if_on_a_batched_test_whose_branch_calls_a_function_is_masked():
    """det's gradient: inv where the determinant is nonzero, the adjugate (a function) where it is zero."""
    singular = MATRICES.copy()
    singular[1, 2] = singular[1, 0] + singular[1, 1]
    per_example(determinant, singular)
    hessian = astgrad.hessian(determinant)
    np.testing.assert_allclose(hessian(MATRICES[0]), looped(lambda: astgrad.hessian(determinant)(MATRICES[0])),
                               rtol=1e-8)


def doubled(v):
    return v * 2.0 + np.sum(v)


def branch_calls_a_pure_function(x):
    if np.sum(x) > 0.0:
        y = doubled(x)
    else:
        t = x ** 2  # bound on this branch only, read only there
        y = t * 3.0
    return np.sum(y * x)


def test_a_branch_calling_a_function_that_only_computes_is_masked_per_example():
    xs = VECTORS.copy()
    xs[1] = -np.abs(xs[1])
    xs[2] = np.abs(xs[2])
    values = astgrad.vmap(branch_calls_a_pure_function)(xs)
    np.testing.assert_allclose(values, [branch_calls_a_pure_function(x) for x in xs], rtol=1e-12)


def test_a_branch_of_a_gradient_whose_callee_pushes_on_the_stack_is_refused():
    """The gradient's forward sweep of doubled saves values on the stack in one branch: not masked."""
    with pytest.raises(astgrad.TransformError, match="does more than compute"):
        astgrad.vmap(astgrad.grad(branch_calls_a_pure_function))(VECTORS)


def read_after_one_branch(x):
    if np.sum(x) > 0.0:
        t = x * 2.0
    y = x + 1.0
    if np.sum(x) > 0.0:
        y = t
    return np.sum(y)


def test_a_name_bound_on_one_branch_and_read_after_it_is_refused():
    with pytest.raises(astgrad.TransformError, match="bound on one branch only"):
        astgrad.vmap(read_after_one_branch)(VECTORS)


def flattened(x):
    rest = np.shape(x)[:-1]
    return np.reshape(x, (-1,)), rest, 2.0


def through_a_tuple_of_batched_and_shared(x):
    flat, rest, scale = flattened(x)
    return np.sum(np.reshape(flat * scale, (rest[0], 3)) ** 2)


def through_a_tuple_joined(x):
    parts = halved(x)
    return np.sum(np.stack(parts) ** 2)


def halved(x):
    return x[:3], np.ones(3)


def test_a_callee_returning_batched_and_shared_values_keeps_the_shared_ones_unbatched():
    """The callee's shape stays one example's: the caller reshapes with it."""
    xs = RNG.normal(size=(4, 2, 3))
    per_example(through_a_tuple_of_batched_and_shared, xs)
    np.testing.assert_allclose(astgrad.vmap(through_a_tuple_joined)(VECTORS),
                               [through_a_tuple_joined(x) for x in VECTORS], rtol=1e-12)


def reshaped_along(w, x):
    layout = [1] * np.ndim(x)  # a new list of numbers: its items may be written
    layout[0] = -1
    shape = tuple(np.shape(x))
    shape += (1,)  # a tuple's += rebinds it
    return np.sum(np.reshape(x, shape)[..., 0] * np.reshape(w, layout))


def rows_sharing_an_array(x):
    rows = [np.zeros(3)] * 2  # both items are one array: a write through one changes the other
    rows[0][0] = 1.0
    return np.sum(rows[1] * x)


def test_a_list_of_numbers_made_by_repetition_may_be_written_and_a_tuple_extended():
    x = RNG.normal(size=(3, 2))
    ws = RNG.normal(size=(4, 3))
    gradient = astgrad.grad(reshaped_along)
    np.testing.assert_allclose(gradient(ws[0], x), np.sum(x, axis=1), rtol=1e-12)
    batched = astgrad.vmap(gradient, in_axes=(0, None))(ws, x)
    np.testing.assert_allclose(batched, np.stack([gradient(w, x) for w in ws]), rtol=1e-12)
    hessian = astgrad.hessian(reshaped_along)
    np.testing.assert_allclose(hessian(ws[0], x), np.zeros((3, 3)), atol=1e-12)


def rows_listed_from_one_array(x):
    z = np.zeros(3)
    rows = list((z, z))  # a new list, whose two items are one array
    rows[0][0] = 1.0
    return np.sum(rows[1] * x)


def rows_joined(x):
    first = [np.zeros(3)]
    rows = first + first  # a new list holding first's array twice
    rows[1][0] = 1.0
    return np.sum(rows[0] * x)


@pytest.mark.parametrize("f", [rows_sharing_an_array, rows_listed_from_one_array, rows_joined])
def test_a_new_list_holding_one_array_twice_written_through_an_item_is_refused(f):
    # in Python the gradient is [1, 0, 0]: the write reaches the other item; a copy-on-write reading gave zeros
    with pytest.raises(astgrad.TransformError, match="holds the items of what it was made from"):
        astgrad.grad(f)(np.arange(3.0))


def weighed_by_isinstance(p, x):
    scale = 2.0 if isinstance(p, np.ndarray) else 3.0
    kept = np.abs(p) > 0.1 * np.max(np.abs(p), initial=0.0)  # a mask: no gradient flows through the max
    return np.sum(np.where(kept, p, 0.0) * x) * scale


def test_isinstance_and_max_with_initial_of_batched_values_match_the_loop():
    """np.max's initial= (no gradient: the decompositions' reverse rules read it) and isinstance of each example."""
    x = RNG.normal(size=6)
    values = astgrad.vmap(weighed_by_isinstance, in_axes=(0, None))(VECTORS, x)
    np.testing.assert_allclose(values, [weighed_by_isinstance(p, x) for p in VECTORS], rtol=1e-12)
    per_example(weighed_by_isinstance, VECTORS, x)
    numbers = RNG.normal(size=4)  # each example a number: a Python float or a numpy scalar, which the batch
    with pytest.raises(Unbatchable, match="isinstance"):  # does not keep
        astgrad.vmap(weighed_by_isinstance, in_axes=(0, None))(numbers, 2.0)


def test_a_check_gets_each_examples_items_and_nones():
    from astgrad.transform.runtime.batched_items import each_example
    seen = []

    def check(name, x, parts):
        seen.append((name, x, parts))

    x = np.arange(6.0).reshape(2, 3)
    each_example(check, 2, (None, False, True), "f", x, (x * 2, None, np.array([None, None])))
    assert [s[0] for s in seen] == ["f", "f"]
    for k, (_, row, parts) in enumerate(seen):
        np.testing.assert_array_equal(row, x[k])
        np.testing.assert_array_equal(parts[0], 2 * x[k])
        assert parts[1] is None and parts[2] is None
