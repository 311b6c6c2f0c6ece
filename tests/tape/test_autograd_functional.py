"""torch.autograd.functional on the tape: jacobian, hessian, vjp, jvp, vhp, hvp.

Values against central differences (of the function, and of its gradient for
second derivatives) and closed forms; return structures, create_graph and
strict as PyTorch documents them.
"""

import numpy as np
import pytest

import astgrad.torch as torch
from _numeric import gradient
from astgrad.torch.autograd.functional import hessian, hvp, jacobian, jvp, vhp, vjp

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 3))
B = RNG.normal(size=(2, 3))


def numeric_jacobian(f, x):
    """d f(x)[i] / d x[j] from central differences, shaped ``f(x).shape + x.shape`` (f maps arrays to arrays)."""
    out_shape = np.shape(f(np.asarray(x, dtype=np.float64)))
    rows = [gradient(lambda a, i=i: np.asarray(f(a), dtype=np.float64).reshape(-1)[i], x)
            for i in range(int(np.prod(out_shape)))]
    return np.stack(rows).reshape(out_shape + np.shape(x)) if rows else np.zeros(out_shape + np.shape(x))


def on_tensors(f):
    """``f`` (written for tensors) as a function of float64 arrays, untaped."""
    def call(a):
        with torch.no_grad():
            return f(torch.tensor(a)).numpy()
    return call


def t64(a):
    return torch.tensor(np.asarray(a, dtype=np.float64))


FUNCTIONS = {
    "exp of rows summed": lambda x: x.exp().sum(dim=1),
    "x sin x": lambda x: x * x.sin(),
    "matrix times vector": lambda x: t64(A) @ x.reshape(-1)[:3],
    "softmax": lambda x: torch.softmax(x.reshape(-1), 0),
    "cube": lambda x: x.pow(3),
    "cumulative sum": lambda x: x.reshape(-1).cumsum(0),
    "norm": lambda x: x.norm(),
    "outer product": lambda x: torch.outer(x.reshape(-1), x.reshape(-1).cos()),
    "tanh of a product": lambda x: (t64(B) @ x.reshape(3, -1)).tanh(),
    "rational": lambda x: x / (1 + x * x),
    "log-sum-exp": lambda x: x.exp().sum().log(),
    "sigmoid of a mean": lambda x: x.mean(dim=0).sigmoid(),
    "max along rows": lambda x: x.max(dim=1).values,
}


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_equals_finite_differences(name, strategy):
    f = FUNCTIONS[name]
    x = RNG.normal(size=(3, 2))
    got = jacobian(f, t64(x), strategy=strategy, vectorize=strategy == "forward-mode")
    assert got.requires_grad is False and got.grad_fn is None
    expected = numeric_jacobian(on_tensors(f), x)
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6, atol=1e-8)


def test_jacobian_of_a_linear_map_is_its_matrix():
    x = t64(RNG.normal(size=3))
    np.testing.assert_array_equal(jacobian(lambda v: t64(A) @ v, x).numpy(), A)
    np.testing.assert_array_equal(jacobian(lambda v: t64(A) @ v, x, vectorize=True, strategy="forward-mode").numpy(),
                                  A)


def test_jacobian_structures_follow_the_tuples_given_and_returned():
    x, y = t64([1.0, 2.0]), t64([0.5, -1.0, 3.0])
    one = jacobian(lambda a: a * 2, x)
    assert isinstance(one, torch.Tensor) and one.shape == (2, 2)
    per_input = jacobian(lambda a, b: a.sum() * b, (x, y))
    assert isinstance(per_input, tuple) and [p.shape for p in per_input] == [(3, 2), (3, 3)]
    np.testing.assert_array_equal(per_input[0].numpy(), np.outer([0.5, -1.0, 3.0], [1.0, 1.0]))
    np.testing.assert_array_equal(per_input[1].numpy(), 3.0 * np.eye(3))
    per_output = jacobian(lambda a: (a * 2, a.sum()), x)
    assert isinstance(per_output, tuple) and [p.shape for p in per_output] == [(2, 2), (2,)]
    both = jacobian(lambda a, b: (a * b[:2], b.sum()), (x, y))
    assert [[block.shape for block in row] for row in both] == [[(2, 2), (2, 3)], [(2,), (3,)]]
    np.testing.assert_array_equal(both[0][1].numpy(), [[0.5 * 0 + 1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    one_tuple = jacobian(lambda a: a * 3, (x,))
    assert isinstance(one_tuple, tuple) and len(one_tuple) == 1


def test_an_output_that_does_not_depend_on_an_input_gets_zeros_or_a_strict_error():
    x, y = t64([1.0, 2.0]), t64([3.0])
    jx, jy = jacobian(lambda a, b: a * 2, (x, y))
    np.testing.assert_array_equal(jy.numpy(), np.zeros((2, 1)))
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function is independent of input 1. "
                                           "This is not allowed in strict mode.$"):
        jacobian(lambda a, b: a * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="^Output 0 of the user-provided function does not require gradients"):
        jacobian(lambda a: torch.ones(2), x, strict=True)


def test_the_user_inputs_are_left_alone_and_captured_tensors_are_constants():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 5.0], requires_grad=True)
    got = jacobian(lambda a: a * w, x)
    np.testing.assert_array_equal(got.numpy(), np.diag([3.0, 5.0]))
    assert x.grad is None and w.grad is None
    assert got.grad_fn is None


def test_jacobian_works_under_no_grad():
    with torch.no_grad():
        got = jacobian(lambda a: a * a, t64([1.0, 2.0]))
    np.testing.assert_array_equal(got.numpy(), np.diag([2.0, 4.0]))


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_hessian_closed_forms(strategy):
    x = t64(RNG.normal(size=3))
    quadratic = hessian(lambda v: v @ (t64(A) @ v) / 2, x, outer_jacobian_strategy=strategy,
                        vectorize=strategy == "forward-mode")
    np.testing.assert_allclose(quadratic.numpy(), (A + A.T) / 2, rtol=1e-12)
    cubes = hessian(lambda v: v.pow(3).sum(), x, outer_jacobian_strategy=strategy,
                    vectorize=strategy == "forward-mode")
    np.testing.assert_allclose(cubes.numpy(), np.diag(6 * x.numpy()), rtol=1e-12)


@pytest.mark.parametrize("name, f", [
    ("log-sum-exp", lambda v: v.exp().sum().log()),
    ("sin of a product", lambda v: (v[0] * v[1]).sin() + v[2] ** 2 * v[0]),
    ("norm", lambda v: v.norm()),
    ("softmax entropy", lambda v: -(torch.softmax(v, 0) * torch.log_softmax(v, 0)).sum()),
])
def test_hessian_equals_finite_differences_of_the_gradient(name, f):
    x = RNG.normal(size=3)
    got = hessian(f, t64(x))

    def grad_at(a):
        t = torch.tensor(a, requires_grad=True)
        (g,) = torch.autograd.grad(f(t), t)
        return g.numpy()

    np.testing.assert_allclose(got.numpy(), numeric_jacobian(grad_at, x), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got.numpy(), got.numpy().T, rtol=1e-10, atol=1e-12)


def test_hessian_of_several_inputs_is_a_tuple_of_tuples():
    x, y = t64([1.0, 2.0]), t64([3.0])
    blocks = hessian(lambda a, b: (a * a).sum() * b.sum(), (x, y))
    assert [[b.shape for b in row] for row in blocks] == [[(2, 2), (2, 1)], [(1, 2), (1, 1)]]
    np.testing.assert_array_equal(blocks[0][0].numpy(), 6.0 * np.eye(2))
    np.testing.assert_array_equal(blocks[0][1].numpy(), [[2.0], [4.0]])
    np.testing.assert_array_equal(blocks[1][0].numpy(), [[2.0, 4.0]])
    np.testing.assert_array_equal(blocks[1][1].numpy(), [[0.0]])


def test_hessian_refuses_a_function_with_more_than_one_output():
    with pytest.raises(RuntimeError, match="^The Tensor returned by the function given to hessian should contain "
                                           "a single element$"):
        hessian(lambda a: a * a, t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="^The function given to hessian should return a single Tensor$"):
        hessian(lambda a: (a.sum(), a.sum()), t64([1.0, 2.0]))


def test_hessian_strict_refuses_a_linear_function():
    with pytest.raises(RuntimeError, match="^While computing the hessian, found that the jacobian of the "
                                           "user-provided function with respect to input 0 is independent"):
        hessian(lambda a: (a * 2).sum(), t64([1.0, 2.0]), strict=True)
    np.testing.assert_array_equal(hessian(lambda a: (a * 2).sum(), t64([1.0, 2.0])).numpy(), np.zeros((2, 2)))


def test_third_derivative_of_sin_through_create_graph():
    x = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    second = hessian(lambda a: a.sin(), x, create_graph=True)
    assert second.grad_fn is not None
    (third,) = torch.autograd.grad(second, x)
    np.testing.assert_allclose(second.item(), -np.sin(0.7), rtol=1e-14)
    np.testing.assert_allclose(third.item(), -np.cos(0.7), rtol=1e-14)


def test_vjp_and_jvp_against_the_jacobian():
    f = FUNCTIONS["tanh of a product"]
    x = t64(RNG.normal(size=(3, 2)))
    jac = jacobian(f, x).numpy()
    u, v = RNG.normal(size=(2, 2)), RNG.normal(size=(3, 2))
    value, left = vjp(f, x, t64(u))
    np.testing.assert_allclose(value.numpy(), on_tensors(f)(x.numpy()), rtol=1e-14)
    np.testing.assert_allclose(left.numpy(), np.einsum("ij,ijkl->kl", u, jac), rtol=1e-12)
    value, right = jvp(f, x, t64(v))
    assert value.grad_fn is None and right.grad_fn is None
    np.testing.assert_allclose(right.numpy(), np.einsum("ijkl,kl->ij", jac, v), rtol=1e-12)
    np.testing.assert_allclose((u * right.numpy()).sum(), (left.numpy() * v).sum(), rtol=1e-12)


def test_jvp_equals_a_directional_finite_difference():
    f = FUNCTIONS["x sin x"]
    x, v = RNG.normal(size=4), RNG.normal(size=4)
    _, got = jvp(f, t64(x), t64(v))
    for i in range(4):
        expected = (on_tensors(f)(x + 1e-6 * v)[i] - on_tensors(f)(x - 1e-6 * v)[i]) / 2e-6
        np.testing.assert_allclose(got.numpy()[i], expected, rtol=1e-6)


def test_products_of_tuples_keep_their_structure():
    def adder(a, b):
        return 2 * a + 3 * b

    x, y = t64([1.0, 2.0]), t64([3.0, 4.0])
    value, grads = vjp(adder, (x, y), t64([1.0, 1.0]))
    assert repr(value) == "tensor([11., 16.], dtype=torch.float64)"
    assert repr(grads) == "(tensor([2., 2.], dtype=torch.float64), tensor([3., 3.], dtype=torch.float64))"
    value, tangent = jvp(adder, (x, y), (t64([1.0, 0.0]), t64([0.0, 1.0])))
    assert repr(tangent) == "tensor([2., 3.], dtype=torch.float64)"
    value, both = jvp(lambda a: (a * 2, a.sum()), x, t64([1.0, 1.0]))
    assert repr(both) == "(tensor([2., 2.], dtype=torch.float64), tensor(2., dtype=torch.float64))"


def test_hvp_and_vhp_against_the_hessian():
    def f(a, b):
        return (a.sin() * b.sum()).sum() + (a * a * a).sum()

    x, y = t64(RNG.normal(size=3)), t64(RNG.normal(size=2))
    blocks = hessian(f, (x, y))
    full = np.block([[blocks[0][0].numpy(), blocks[0][1].numpy()], [blocks[1][0].numpy(), blocks[1][1].numpy()]])
    u, w = RNG.normal(size=3), RNG.normal(size=2)
    value, right = hvp(f, (x, y), (t64(u), t64(w)))
    np.testing.assert_allclose(value.item(), f(x, y).item(), rtol=1e-14)
    np.testing.assert_allclose(np.concatenate([r.numpy() for r in right]), full @ np.concatenate([u, w]), rtol=1e-12)
    _, left = vhp(f, (x, y), (t64(u), t64(w)))
    np.testing.assert_allclose(np.concatenate([r.numpy() for r in left]), np.concatenate([u, w]) @ full,
                               rtol=1e-12)


def test_hvp_of_a_quadratic_is_the_symmetric_part_times_v():
    x, v = t64(RNG.normal(size=3)), RNG.normal(size=3)
    _, got = hvp(lambda a: a @ (t64(A) @ a), x, t64(v))
    np.testing.assert_allclose(got.numpy(), (A + A.T) @ v, rtol=1e-12)


def test_create_graph_results_carry_history_and_differentiate_again():
    x = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    value, g = vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
    assert value.grad_fn is not None and g.grad_fn is not None
    (h,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), 6 * x.detach().numpy())
    _, hv = hvp(lambda a: (a ** 3).sum(), x, torch.ones(2, dtype=torch.float64), create_graph=True)
    (third,) = torch.autograd.grad(hv.sum(), x)
    np.testing.assert_allclose(third.numpy(), [6.0, 6.0])


def test_v_may_be_omitted_only_for_single_elements():
    x = t64([2.0])
    assert repr(vjp(lambda a: a * a, x)[1]) == "tensor([4.], dtype=torch.float64)"
    assert repr(jvp(lambda a: a * a, x)[1]) == "tensor([4.], dtype=torch.float64)"
    assert repr(hvp(lambda a: (a ** 3).sum(), x)[1]) == "tensor([12.], dtype=torch.float64)"
    with pytest.raises(RuntimeError, match="^The vector v can only be None if the user-provided function returns "
                                           "a single Tensor with a single element.$"):
        vjp(lambda a: a * a, t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="^The vector v can only be None if the input to the user-provided "
                                           "function is a single Tensor with a single element.$"):
        jvp(lambda a: a * a, t64([1.0, 2.0]))


def test_bad_v_and_bad_inputs_are_refused_in_pytorchs_words():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"^v has invalid size: should be torch.Size\(\[2\]\) but got "
                                           r"torch.Size\(\[3\]\).$"):
        vjp(lambda a: a * 2, x, t64([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"^Entry 1 in v has invalid size: should be torch.Size\(\[2\]\)"):
        jvp(lambda a, b: a * b, (x, x), (x, t64([1.0])))
    with pytest.raises(RuntimeError, match="^v is a tuple of invalid length: should be 2 but got 1.$"):
        jvp(lambda a, b: a * b, (x, x), (x,))
    with pytest.raises(RuntimeError, match="^The given v should contain a single Tensor.$"):
        vjp(lambda a: a * 2, x, (x, x))
    with pytest.raises(TypeError, match="^The inputs given to jacobian must be either a Tensor or a tuple of "
                                        "Tensors but the given inputs has type <class 'list'>.$"):
        jacobian(lambda a: a, [1.0, 2.0])
    with pytest.raises(TypeError, match="^The inputs given to vjp must be either a Tensor or a tuple of Tensors "
                                        "but the value at index 1 has type <class 'float'>.$"):
        vjp(lambda a, b: a, (x, 1.0))
    with pytest.raises(TypeError, match="^The outputs of the user-provided function given to hvp must be either "
                                        "a Tensor or a tuple of Tensors but the given outputs of the "
                                        "user-provided function has type <class 'float'>.$"):
        hvp(lambda a: 1.0, x, x)
    with pytest.raises(RuntimeError, match="^The function given to vhp should return a single Tensor$"):
        vhp(lambda a: (a.sum(),), x, x)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require gradients$"):
        jacobian(lambda a: a * 2, torch.tensor([1, 2]))


def test_strategies_and_options_pytorch_does_not_combine():
    x = t64([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        jacobian(lambda a: a * a, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="`create_graph=True` and `strategy=\"forward-mode\"`"):
        jacobian(lambda a: a * a, x, strategy="forward-mode", vectorize=True, create_graph=True)
    with pytest.raises(RuntimeError, match="`strict=True` and `strategy=\"forward-mode\"`"):
        jacobian(lambda a: a * a, x, strategy="forward-mode", vectorize=True, strict=True)
    with pytest.raises(AssertionError, match="^Expected strategy to be either"):
        jacobian(lambda a: a * a, x, strategy="sideways")
    np.testing.assert_array_equal(jacobian(lambda a: a * a, x, vectorize=True).numpy(), np.diag([2.0, 4.0]))


def test_strict_products():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="^The output of the user-provided function is independent of input 1"):
        vjp(lambda a, b: a * 2, (x, x), t64([1.0, 1.0]), strict=True)
    with pytest.raises(RuntimeError, match="^While computing the hessian, found that the jacobian"):
        hvp(lambda a: (a * 2).sum(), x, x, strict=True)
    _, zero = hvp(lambda a: (a * 2).sum(), x, x)
    assert repr(zero) == "tensor([0., 0.], dtype=torch.float64)"


def test_the_facade_exposes_the_module_as_pytorch_does():
    import astgrad.torch.autograd.functional as functional

    assert torch.autograd.functional is functional
    assert {"jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"} <= set(functional.__all__)
