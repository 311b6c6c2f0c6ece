"""Groups of elementwise operations get one adjoint expression per operand (transform/core/fusion.py).

Every case is checked against central differences; the generated source is
checked for the collected form where that is the point, and for the
fallback (one rule per operation) where fusing would change a value.
"""

import ast

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir import compat
from astgrad.transform.core.fusion import Algebra, NotFusable

from _numeric import assert_grad, gradient

X = np.array([0.3, -0.2, 0.5])
M = np.array([[0.4, -1.3, 0.8], [1.1, 0.2, -0.6]])


# -- the algebra ---------------------------------------------------------------

def code(algebra, p):
    return compat.to_source(algebra.expr(p)).strip().removeprefix("(").removesuffix(")")


def poly(text, env=None):
    algebra = Algebra(boolean=lambda name: False)  # names hold numbers here
    return algebra, algebra.poly(compat.parse(text).body[0].value, env or {})


def test_like_terms_are_collected_and_powers_counted():
    algebra, p = poly("0.1 * x * x + x * 0.1 * x - 0.01 * x * x * x")
    assert len(p.terms) == 2
    assert code(algebra, p) == "(0.2 - 0.01 * x) * x * x"  # x * x taken out: four operations, not six


def test_a_monomial_divides_and_a_sum_stays_a_denominator():
    algebra, p = poly("g * x / (2 * y)")
    assert p.monomial() and code(algebra, p) == "g * x / y / 2"
    algebra, p = poly("g / (x + y)")
    assert code(algebra, p) == "1 / (x + y) * g"


def test_an_integer_coefficient_is_not_inverted_inexactly():
    algebra, p = poly("x / 3 + x / 3")
    assert code(algebra, p) == "2 * x / 3"
    algebra, p = poly("x / 0.5")
    assert code(algebra, p) == "2.0 * x"


def test_a_factor_common_to_every_term_is_taken_out_once():
    algebra, p = poly("a * b * c + a * b * d")
    assert code(algebra, p) == "(c + d) * a * b"  # the sum first: numpy multiplies a and b into it


def test_zero_coefficients_refuse_rather_than_drop_a_nan():
    with pytest.raises(NotFusable):
        poly("x * 0")
    with pytest.raises(NotFusable):
        poly("x - x")


def test_temporaries_in_env_are_written_out():
    algebra = Algebra(boolean=lambda name: False)
    t5 = algebra.poly(compat.parse("0.1 * x").body[0].value, {})
    p = algebra.poly(compat.parse("t5 * x").body[0].value, {"t5": t5})
    assert code(algebra, p) == "0.1 * x * x"


def test_large_products_stay_unexpanded():
    algebra, p = poly("(a + b + c + d + e) * (f + g + h + i)")
    assert len(p.terms) == 1  # 20 terms would be more work than the two sums: one opaque atom


# -- generated code --------------------------------------------------------------

def scalar_loop(x, n):
    total = 0.0
    for _ in range(n):
        x = np.sin(x) * 0.9 + 0.1 * x * x - 0.01 * x * x * x
        total = total + x
    return total


def elementwise(x):
    return np.sum(np.exp(np.sin(x)) * x ** 2)


def adjoint_lines(source, target):
    return [line.strip() for line in source.splitlines() if line.strip().startswith(f"{target} = ")]


def test_scalar_loop_adjoint_is_the_derivative_written_once():
    # the derivative as one line, dx = dx * (0.9 * np.cos(x) + ...): pinned by tests/golden/fused_scalar_loop.py
    g = astgrad.grad(scalar_loop)
    assert g(0.5, 30) == pytest.approx(assert_scalar(scalar_loop, 0.5, 30), rel=1e-6)


def assert_scalar(f, x, *rest, eps=1e-6):
    return gradient(lambda moved: f(moved, *rest), x, eps)


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_elementwise_sum_is_one_expression_of_saved_values():
    g = astgrad.grad(elementwise)
    lines = adjoint_lines(g.source, "dx")
    assert len(lines) == 1 and "np.cos(x)" in lines[0], g.source
    # the square is not kept: x is read instead (a check computes it only where x is not floats)
    assert "= x ** 2" not in g.source.split("grad of line")[0]
    assert_grad(g, elementwise, X)


def shared(a, b, c):
    return np.sum(np.tanh(a + b * 2.0 + c))


def test_operands_with_the_same_gradient_share_one_array():
    g = astgrad.grad(shared, wrt=(0, 1, 2))
    assert sum("1 - " in line for line in g.source.splitlines()) == 1, g.source
    assert_grad(g, shared, X, X * 0.5, X[::-1].copy(), wrt=(0, 1, 2))


def broadcast_leaves(x, row):
    return np.sum((x + row) * row / (1.0 + x * x))


def test_broadcast_operands_are_summed_back():
    g = astgrad.grad(broadcast_leaves, wrt=(0, 1))
    assert_grad(g, broadcast_leaves, M, X, wrt=(0, 1))
    assert "unbroadcast" in g.source


def reassigned_in_loop(x, n):
    y = x
    for _ in range(n):
        y = y * x + np.sin(y) - y / (1.0 + x * x)
    return np.sum(y)


def test_a_name_reassigned_from_itself_reads_its_old_value():
    assert_grad(astgrad.grad(reassigned_in_loop), reassigned_in_loop, X, 3)


def result_read_by_its_rule(x, n):
    for _ in range(n):
        x = np.sqrt(x * x + 1.0)  # sqrt's rule reads the result, whose name is also the operand
    return np.sum(x)


def test_a_rule_reading_the_result_under_the_operands_name_falls_back():
    g = astgrad.grad(result_read_by_its_rule)
    assert "__astgrad" not in g.source
    assert_grad(g, result_read_by_its_rule, X, 2)


def sqrt_times_zero(x):
    return np.sum(np.sqrt(x) * 0.0)


def test_multiplying_by_zero_keeps_the_rules_nan():
    with np.errstate(all="ignore"):
        got = astgrad.grad(sqrt_times_zero)(np.array([0.0, 4.0]))
    assert np.isnan(got[0]) and got[1] == 0.0


def with_constant_array(x):
    return np.sum(np.cos(x * M) * M + x)


def test_an_inactive_operand_is_a_factor():
    assert_grad(astgrad.grad(with_constant_array), with_constant_array, X)


def inner(a, b):
    return a * np.exp(b) - b * b


def outer(x, y):
    return np.sum(inner(x, y) * y)


def test_fused_groups_in_called_functions_read_only_what_is_kept():
    assert_grad(astgrad.grad(outer, wrt=(0, 1)), outer, X, X * 2, wrt=(0, 1))


def branchy(x):
    if np.sum(x) > 0:
        y = np.sin(x) * x + x
    else:
        y = x ** 3 - x
    return np.sum(y * y)


@pytest.mark.parametrize("x", [X, -X])
def test_groups_inside_branches(x):
    assert_grad(astgrad.grad(branchy), branchy, x)


def float32_chain(x):
    return np.sum(np.exp(x) * x * 0.5 + x / 3.0)


def test_float32_stays_float32():
    x = X.astype(np.float32)
    got = astgrad.grad(float32_chain)(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.exp(x) * (x + 1) * 0.5 + 1 / 3.0, rtol=1e-5)


def rnn(Wh, xs, h):
    for t in range(xs.shape[0]):
        h = np.tanh(xs[t] + h @ Wh + 0.1)
    return np.sum(h * h)


def test_values_no_fused_adjoint_reads_are_not_saved():
    g = astgrad.grad(rnn)
    tree = ast.parse(g.source)
    popped = {n.targets[0].id for n in ast.walk(tree) if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Call) and ast.unparse(n.value) == "_stack.pop()"}
    loop = next(n for n in ast.walk(tree) if isinstance(n, ast.For) and "reversed" in ast.unparse(n.iter))
    loads = {n.id for n in ast.walk(loop) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    assert popped and popped <= loads  # every value popped back is read by the adjoint
    Wh = np.array([[0.5, -0.3, 0.2], [0.1, 0.4, -0.2], [0.3, 0.0, 0.6]])
    xs = np.array([[[0.1, 0.2, -0.3]], [[0.4, -0.1, 0.2]]])
    assert_grad(g, rnn, Wh, xs, np.zeros((1, 3)))


def h0(a, b):
    return a * -1.5


def branch_left_empty(x, y):
    v0 = np.sin(x)
    x = h0(x, v0)
    if np.sum(x) > -1.5:
        v0 = x * 1.0       # v0 is dead here: the branch's adjoint has nothing left to pop
        v0 += np.tanh(x)
    return np.sum(x * x) + np.sum(x * y)


def test_a_branch_whose_adjoint_is_all_dropped_still_compiles():
    assert_grad(astgrad.grad(branch_left_empty, wrt=(0, 1)), branch_left_empty, X, X * 2, wrt=(0, 1))


def softmax_xent(W, X, Y):
    logits = X @ W
    m = np.max(logits, axis=1, keepdims=True)
    lse = m + np.log(np.sum(np.exp(logits - m), axis=1, keepdims=True))
    return -np.mean(np.sum(Y * (logits - lse), axis=1))


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_arrays_are_released_after_their_last_read():
    g = astgrad.grad(softmax_xent)
    source = g.source
    released = {name.strip() for line in source.splitlines() if line.strip().startswith("del ")
                for name in line.strip()[4:].split(",")}
    assert {"logits", "t3"} <= released  # primal arrays the adjoint is done with
    assert "lse = Shaped(" in source  # read for its shape only: not computed, nothing to free
    assert not released & {"W", "X", "Y", "dresult", "dW"}  # never a parameter or the result
    assert "dt5" not in released  # -dresult is a number: nothing to free
    assert "unbroadcast(-" not in source  # a shared gradient is summed first, then negated
    rng = np.random.default_rng(0)
    W, X = rng.standard_normal((4, 3)), rng.standard_normal((5, 4))
    Y = np.eye(3)[[0, 2, 1, 1, 0]]
    assert_grad(g, softmax_xent, W, X, Y)


def shared_under_a_number_seed(x):
    y = np.sin(x)
    w = np.cos(x)
    return np.sum(np.tanh(y + w))  # dy and dw share one array


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_a_number_seed_passes_through_a_group_of_operands_of_its_shape():
    g = astgrad.grad(shared_under_a_number_seed)
    assert "filled(" not in g.source  # the sum's seed stays dresult: tanh's group takes a number
    assert_grad(g, shared_under_a_number_seed, X)


def broadcast_under_a_number_seed(x, row):
    return np.sum(np.tanh(x + row))  # row (3,) broadcast over x (2, 3): the seed must be spread


def test_a_number_seed_is_spread_before_a_group_that_broadcasts():
    g = astgrad.grad(broadcast_under_a_number_seed, wrt=(0, 1))
    assert_grad(g, broadcast_under_a_number_seed, M, X, wrt=(0, 1))


def clipped(x, y):
    v0 = x * 1.0
    v0 -= np.tanh(np.maximum(x, 0.1))  # maximum's rule is a sum of comparisons
    return np.sum(v0 * v0) + np.sum(x * y)


def masked(x, m, n):
    return np.sum(x * m - x * n)  # m and n are boolean masks: m - n is not arithmetic in numpy


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_boolean_factors_are_never_negated_or_subtracted_from_each_other():
    x = np.array([0.3, -0.2, 0.1])
    assert_grad(astgrad.grad(clipped, wrt=(0, 1)), clipped, x, x * 2, wrt=(0, 1))
    m, n = x > 0, x < 0.2
    np.testing.assert_array_equal(astgrad.grad(masked)(x, m, n), m * 1.0 - n)
    source = astgrad.grad(masked).source
    assert "1.0 * m - n" in source, source
