"""Adjoints specialised on the ranks of the arguments: never the adjoint of other ranks.

A gradient is transformed again at the first call with arguments of new
ranks, and that adjoint folds the rank tests of the rules (the four-way
ladder of ``@``) and drops ``unbroadcast`` where the ranks prove it the
identity.  Each test here is a way that could give a wrong number: an
adjoint reused for other ranks, a rank that changes in a loop or depends on
a branch, an index that is an int once and a bool the next time, shapes of
one rank that broadcast for some sizes only.  Every value is checked against
finite differences.
"""

import numpy as np
import pytest

import astgrad
from _numeric import assert_grad

RNG = np.random.default_rng(7)


def normal(*shape):
    return RNG.normal(size=shape)


def layer(W, x):
    return np.sum(np.tanh(x @ W) ** 2)


def test_one_gradient_called_with_every_rank_pair_of_matmul():
    """Each signature gets its adjoint; going back to one seen before reuses the right one."""
    g = astgrad.grad(layer, wrt=(0, 1))
    cases = [(normal(3, 2), normal(4, 3)), (normal(3, 2), normal(3)), (normal(3), normal(4, 3)),
             (normal(3), normal(3)), (normal(2, 3, 2), normal(4, 3)), (normal(3, 2), normal(4, 3)),
             (normal(2, 3, 2), normal(2, 4, 3)), (normal(3), normal(2, 4, 3))]
    for W, x in cases:
        assert_grad(g, layer, W, x, wrt=(0, 1))


def test_stacks_of_matrices_of_one_rank_that_broadcast_for_some_sizes():
    """(1, 3, 2) and (2, 3, 2) have one rank; only one broadcasts over the stack: unbroadcast stays."""
    g = astgrad.grad(layer, wrt=(0, 1))
    for W, x in [(normal(2, 3, 2), normal(2, 4, 3)), (normal(1, 3, 2), normal(2, 4, 3)),
                 (normal(2, 3, 2), normal(1, 4, 3))]:
        assert_grad(g, layer, W, x, wrt=(0, 1))
    assert "unbroadcast" in g.source


def add_then_layer(W, a, b):
    return np.sum(np.tanh((a + b) @ W))


@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((3, 1), (3, 4)), ((3, 4), (1, 4)), ((1, 1), (3, 4))])
def test_elementwise_operands_of_one_rank_broadcast_for_some_shapes(shapes):
    g = astgrad.grad(add_then_layer, wrt=(0, 1, 2))
    assert_grad(g, add_then_layer, normal(4, 2), normal(*shapes[0]), normal(*shapes[1]), wrt=(0, 1, 2))


def shrink(W, x, n):
    for _ in range(n):
        x = np.sum(x, axis=0)
    return np.sum(np.tanh(x @ W))


def test_a_rank_that_changes_in_a_loop():
    """Same argument ranks, and ``x`` meets ``@`` with rank 2 or rank 1 depending on n."""
    g = astgrad.grad(shrink, wrt=(0, 1))
    W, x = normal(3, 2), normal(2, 4, 3)
    for n in (1, 2, 0, 1):
        assert_grad(g, shrink, W, x, n, wrt=(0, 1))
    assert "ndim(" in g.source  # x has no one rank: the rule keeps its general form


def branchy(W, x, flag):
    if flag > 0:
        y = x
    else:
        y = np.mean(x, axis=0)
    return np.sum(np.sin(y @ W))


def test_a_rank_that_depends_on_a_branch():
    g = astgrad.grad(branchy, wrt=(0, 1))
    W, x = normal(3, 2), normal(4, 3)
    for flag in (1.0, -1.0, 1.0):
        assert_grad(g, branchy, W, x, flag, wrt=(0, 1))


def picked(W, x, i):
    return np.sum(np.tanh(x[i] @ W))


@pytest.mark.parametrize("index", [1, True, False, np.int64(1), np.array(1), np.array([0, 2]),
                                   np.array([True, False, True])])
def test_an_index_that_is_an_int_or_a_bool_or_an_array(index):
    """``x[1]`` drops an axis, ``x[True]`` adds one, ``x[array]`` keeps the rank."""
    g = astgrad.grad(picked, wrt=(0, 1))
    W, x = normal(3, 2), normal(3, 3)
    g(W, x, 1)  # an int index first: the adjoint for an int is cached
    assert_grad(g, picked, W, x, index, wrt=(0, 1))


def scaled(a, W, x):
    return np.sum(np.tanh((a * x) @ W))


@pytest.mark.parametrize("a", [0.7, np.float64(0.7), np.array(0.7), 2, np.array([0.7, 1.1, 0.3])])
def test_numbers_0d_arrays_and_arrays_in_one_position(a):
    g = astgrad.grad(scaled, wrt=(0, 1))
    W, x = normal(3, 2), normal(4, 3)
    g(1.5, W, x)
    assert_grad(g, scaled, float(a) if np.ndim(a) == 0 and not isinstance(a, np.ndarray) else a,
                W, x, wrt=(0, 1))


def test_integer_and_float_arrays_of_one_rank():
    g = astgrad.grad(layer)
    W = normal(3, 2)
    for x in (RNG.integers(-3, 3, size=(4, 3)), normal(4, 3), RNG.integers(-3, 3, size=(4, 3)).astype(np.float32)):
        assert_grad(g, layer, W, x, rtol=1e-4)


def test_a_list_argument_has_no_rank_and_gets_the_general_adjoint():
    g = astgrad.grad(layer)
    W, x = normal(3, 2), normal(4, 3)
    assert_grad(g, layer, W, x.tolist())
    assert_grad(g, layer, W, x)
    assert_grad(g, layer, W, x[0].tolist())


def inner_layer(W, x):
    return np.tanh(x @ W)


def outer(W, x):
    return np.sum(inner_layer(W, x) @ W.T)


def test_a_called_function_keeps_its_general_form_and_is_right_for_every_rank():
    g = astgrad.grad(outer, wrt=(0, 1))
    for x in (normal(4, 3), normal(3)):
        assert_grad(g, outer, normal(3, 3), x, wrt=(0, 1))


def test_keywords_and_tensors_take_the_adjoint_of_their_ranks():
    g = astgrad.grad(layer, wrt=(0, 1))
    W, x = normal(3, 2), normal(4, 3)
    expected = g(W, x)
    for got in (g(W=W, x=x), g(astgrad.tensor(W), x=astgrad.tensor(x))):
        np.testing.assert_allclose(np.asarray(got[0]), expected[0])
        np.testing.assert_allclose(np.asarray(got[1]), expected[1])
    x1 = normal(3)
    assert_grad(lambda W, x: g(W=W, x=x), layer, W, x1, wrt=(0, 1))


def test_a_vjp_specialised_on_its_arguments_not_its_seed():
    f = astgrad.vjp(inner_layer, wrt=(0, 1))
    for W, x in [(normal(3, 2), normal(4, 3)), (normal(3, 2), normal(3))]:
        seed = normal(*np.shape(x @ W))
        got = f(W, x, seed)
        assert_grad(lambda W, x: f(W, x, seed), lambda W, x: np.sum(inner_layer(W, x) * seed), W, x, wrt=(0, 1))
        assert len(got) == 2


def stacked(x, y):
    return np.sum(np.tanh(x @ y))


def test_more_signatures_than_are_kept_use_the_general_adjoint():
    g = astgrad.grad(stacked, wrt=(0, 1))
    for rx in range(1, 6):
        for ry in range(1, 6):
            x, y = 0.3 * np.ones((2,) * rx), RNG.normal(size=(2,) * ry)
            assert_grad(g, stacked, x, y, wrt=(0, 1))
    assert len(g.sources) == 1 + 16


G = np.ones((3, 2))


def with_global(x):
    return np.sum(np.tanh(x @ G))


def test_a_global_array_whose_rank_changes_between_calls():
    """Globals are read when the adjoint runs; their rank is never assumed."""
    global G
    g = astgrad.grad(with_global)
    x = normal(4, 3)
    try:
        for value in (normal(3, 2), normal(3), normal(2, 3, 2), normal(3, 2)):
            G = value
            assert_grad(g, with_global, x)
    finally:
        G = np.ones((3, 2))


def test_source_is_the_adjoint_that_ran_last_and_sources_has_each():
    def layer(W, x):  # a function of its own: grad(f) is cached on f
        return np.sum(np.tanh(x @ W) ** 2)
    g = astgrad.grad(layer, wrt=(0, 1))
    general = g.source
    assert "ndim(" in general
    g(normal(3, 2), normal(4, 3))
    matrices = g.source
    assert "for a 2-d float W and a 2-d float x" in matrices and "ndim(" not in matrices  # float: see below
    g(normal(3, 2), normal(3))
    assert "for a 2-d float W and a 1-d float x" in g.source
    g(normal(3, 2), normal(5, 3))
    assert g.source == matrices
    assert g.sources == {"any": general, "a 2-d float W and a 2-d float x": matrices,
                         "a 2-d float W and a 1-d float x": g.sources["a 2-d float W and a 1-d float x"]}
    g(normal(3, 2), np.ones((5, 3), int))  # an unused ** of integers is computed (test_real_floats_in_the_signature)
    assert "for a 2-d float W and a 2-d integer x" in g.source and "floats(" in g.source


def made_and_solved(q, x, F):
    """Ranks of new arrays (np.zeros(n), np.eye(n)), of inv and solve, and of vector @ vector (a number)."""
    n = F.shape[0]
    v = np.zeros(n) + x
    P = q * np.eye(n) + F @ F.T
    w = np.linalg.solve(P, v)
    s = v @ w
    K = P @ np.linalg.inv(P + np.eye(n))
    return s * np.sum(K @ v) + np.sum(np.ones(n) * w)


def test_ranks_of_new_arrays_inverses_solves_and_dot_products():
    """The rules' rank tests fold on these locals (vector @ vector is rank 0, never -1): values against finite
    differences, for a vector x and for a number x (which broadcasts)."""
    F = normal(3, 3)
    g = astgrad.grad(made_and_solved, wrt=(0, 1))
    assert_grad(g, made_and_solved, 0.7, normal(3), F, wrt=(0, 1))
    assert_grad(g, made_and_solved, 0.7, 0.3, F, wrt=(0, 1))
