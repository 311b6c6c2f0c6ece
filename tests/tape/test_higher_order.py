"""torch.autograd.grad, higher-order gradients and backward(inputs=...) (sections 6 and 7)."""

import warnings

import numpy as np
import pytest

import astgrad
import astgrad.tape._autograd as tape_autograd
import astgrad.torch as torch
from _taped import numeric_vjp

SECOND_TIME = "^Trying to backward through the graph a second time"


def leaf(*values, dtype=None):
    return torch.tensor(list(values), dtype=dtype, requires_grad=True)


# ------------------------------------------------------------ autograd.grad


def test_grad_returns_a_tuple_and_leaves_dot_grad_alone():
    x = leaf(1.0, 2.0, 3.0)
    result = torch.autograd.grad((x ** 2).sum(), x)
    assert isinstance(result, tuple)
    assert repr(result) == "(tensor([2., 4., 6.]),)"
    assert x.grad is None


def test_grad_is_exported_by_the_package_and_the_facade():
    assert torch.autograd.grad is astgrad.autograd.grad


def test_grad_outputs_weights_the_outputs():
    x = leaf(1.0, 2.0, 3.0)
    result = torch.autograd.grad(x ** 2, x, grad_outputs=torch.tensor([1.0, 0.1, 0.01]))
    assert repr(result) == "(tensor([2.0000, 0.4000, 0.0600]),)"
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar outputs$"):
        torch.autograd.grad(x ** 2, x)


def test_grad_of_several_inputs_and_sequence_outputs():
    x, w = leaf(1.0, 2.0, 3.0), torch.tensor(2.0, requires_grad=True)
    assert repr(torch.autograd.grad((x * w).sum(), [x, w])) == "(tensor([2., 2., 2.]), tensor(6.))"
    a = leaf(1.0, 2.0)
    assert repr(torch.autograd.grad([(a * 2).sum(), (a * a).sum()], (a,))) == "(tensor([4., 6.]),)"


def test_allow_unused_and_materialize_grads():
    x, w = leaf(1.0, 1.0), leaf(5.0, 5.0)
    assert repr(torch.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)) == "(tensor([2., 2.]), None)"
    both = torch.autograd.grad((x * 2).sum(), [x, w], allow_unused=True, materialize_grads=True)
    assert repr(both) == "(tensor([2., 2.]), tensor([0., 0.]))"
    assert repr(torch.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)) == repr(both)
    with pytest.raises(ValueError, match="^Expected allow_unused to be True or not passed when "
                                         r"materialize_grads=True, but got: allow_unused=False\.$"):
        torch.autograd.grad((x * 2).sum(), [x, w], allow_unused=False, materialize_grads=True)


def test_grad_with_respect_to_an_intermediate():
    x = leaf(1.0, 2.0)
    y = x * 3
    (gy,) = torch.autograd.grad((y * y).sum(), y)
    assert repr(gy) == "tensor([ 6., 12.])"
    assert x.grad is None


def test_grad_dtype_is_the_input_dtype():
    x = leaf(1.0, 2.0)
    (g,) = torch.autograd.grad((x.double() * 2).sum(), x)
    assert g.dtype == torch.float32


def test_retain_graph_defaults_to_create_graph():
    a = leaf(1.0, 2.0)
    y = (a * a).sum()
    assert repr(torch.autograd.grad(y, a, create_graph=True)) == "(tensor([2., 4.], grad_fn=<AddBackward0>),)"
    assert repr(torch.autograd.grad(y, a)) == "(tensor([2., 4.]),)"
    with pytest.raises(RuntimeError, match=SECOND_TIME):
        torch.autograd.grad(y, a)


# ------------------------------------------------------------- higher order


def test_cube_at_three_first_and_second_derivative():
    x = torch.tensor(3.0, requires_grad=True)
    (g,) = torch.autograd.grad(x ** 3, x, create_graph=True)
    assert repr(g) == "tensor(27., grad_fn=<MulBackward0>)"
    assert g.grad_fn.next_functions[0] == (None, 0)
    assert g.grad_fn.next_functions[1][0] is not None
    (g2,) = torch.autograd.grad(g, x)
    assert repr(g2) == "tensor(18.)"


def test_square_sum_second_derivative():
    x = torch.tensor(3.0, requires_grad=True)
    (g,) = torch.autograd.grad((x * x).sum(), x, create_graph=True)
    assert repr(g) == "tensor(6., grad_fn=<AddBackward0>)"
    assert repr(torch.autograd.grad(g, x)) == "(tensor(2.),)"


def test_vector_cube_then_backward_through_the_gradient():
    v = leaf(1.0, 2.0)
    (gv,) = torch.autograd.grad((v ** 3).sum(), v, create_graph=True)
    assert repr(gv) == "tensor([ 3., 12.], grad_fn=<MulBackward0>)"
    gv.sum().backward()
    assert repr(v.grad) == "tensor([ 6., 12.])"


def test_sin_at_two():
    x = torch.tensor(2.0, requires_grad=True)
    (d1,) = torch.autograd.grad(torch.sin(x), x, create_graph=True)
    assert repr(d1) == "tensor(-0.4161, grad_fn=<MulBackward0>)"
    (d2,) = torch.autograd.grad(d1, x)
    assert repr(d2) == "tensor(-0.9093)"


@pytest.mark.parametrize("f, second", [
    (lambda x: x.exp(), lambda x: np.exp(x)),
    (lambda x: x.tanh(), lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2),
    (lambda x: x.sigmoid(), lambda x: (s := 1 / (1 + np.exp(-x))) * (1 - s) * (1 - 2 * s)),
    (lambda x: x.log(), lambda x: -1 / x ** 2),
    (lambda x: x.sqrt(), lambda x: -0.25 * x ** -1.5),
    (lambda x: 1 / x, lambda x: 2 / x ** 3),
    (lambda x: x ** x, lambda x: x ** x * (np.log(x) + 1) ** 2 + x ** (x - 1)),
])
def test_second_derivatives_against_closed_forms(f, second):
    values = np.array([0.5, 1.0, 2.0])
    x = torch.tensor(values, requires_grad=True)
    (g,) = torch.autograd.grad(f(x).sum(), x, create_graph=True)
    (h,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), second(values), rtol=1e-10)


def test_hessian_vector_product_matches_finite_differences_of_the_gradient():
    def gradient(a):
        x = torch.tensor(a, requires_grad=True)
        (g,) = torch.autograd.grad((x.sin() * x.sum() + (x * x).exp()).sum(), x, create_graph=True)
        return x, g

    a = np.array([0.3, -0.7, 1.1])
    x, g = gradient(a)
    v = np.array([1.0, 0.5, -2.0])
    (hv,) = torch.autograd.grad(g, x, grad_outputs=torch.tensor(v))

    def g_of(t):
        with torch.enable_grad():
            leaf_t = torch.tensor(t._data.copy(), requires_grad=True)
            (gt,) = torch.autograd.grad((leaf_t.sin() * leaf_t.sum() + (leaf_t * leaf_t).exp()).sum(), leaf_t)
        return gt

    (expected,) = numeric_vjp(g_of, [a], v)
    np.testing.assert_allclose(hv.numpy(), expected, rtol=1e-6)


def test_backward_with_create_graph_gives_copy_backwards_and_warns_once():
    tape_autograd._warned_create_graph = False
    x = torch.tensor(3.0, requires_grad=True)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        (x ** 3).backward(create_graph=True)
        (leaf(1.0) * 2).backward(create_graph=True)
    assert len(record) == 1 and record[0].category is UserWarning
    assert str(record[0].message).startswith(
        "Using backward() with create_graph=True will create a reference cycle between the parameter "
        "and its gradient which can cause a memory leak."
    )
    assert str(record[0].message).endswith("(Triggered internally at "
                                           "/__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:1307.)")
    assert repr(x.grad) == "tensor(27., grad_fn=<CopyBackwards>)"
    g = x.grad
    x.grad = None
    g.backward()
    assert repr(x.grad) == "tensor(18.)"


def test_backward_with_create_graph_on_a_vector():
    x = leaf(1.0, 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x * x * 1.5).sum().backward(create_graph=True)
    assert repr(x.grad) == "tensor([3., 3.], grad_fn=<CopyBackwards>)"
    c = leaf(1.0, 1.0)  # measured: a gradient that depends on no leaf carries no graph
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (c * 3).sum().backward(create_graph=True)
    assert repr(c.grad) == "tensor([3., 3.])"


def test_grads_carry_no_graph_without_create_graph():
    x = leaf(1.0, 2.0)
    (x ** 3).sum().backward()
    assert not x.grad.requires_grad and x.grad.is_leaf and x.grad.grad_fn is None


# --------------------------------------------------------- backward(inputs=)


def test_backward_inputs_accumulates_only_into_the_listed_leaves():
    a, b = leaf(1.0, 2.0), leaf(3.0, 4.0)
    (a * b).sum().backward(inputs=[a])
    assert repr(a.grad) == "tensor([3., 4.])"
    assert b.grad is None
    (a * b).sum().backward(inputs=b)
    assert repr(b.grad) == "tensor([1., 2.])"
    assert repr(a.grad) == "tensor([3., 4.])"


def test_backward_inputs_with_a_non_leaf_fills_its_grad():
    a = leaf(1.0, 2.0)
    y = a * 2
    (y * y).sum().backward(inputs=[y])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repr(y.grad) == "tensor([4., 8.])"
    assert a.grad is None


def test_autograd_backward_function_matches_the_method():
    x1, x2 = torch.ones(2, 2, requires_grad=True), torch.ones(2, 2, requires_grad=True)
    out1 = ((x1 + 2) * (x1 + 2) * 3).mean()
    out2 = ((x2 + 2) * (x2 + 2) * 3).mean()
    torch.autograd.backward(out1)
    torch.autograd.backward([out2], [torch.tensor(2.0)])
    assert torch.equal(x1.grad * 2, x2.grad)
    assert x2.grad.tolist() == [[9.0, 9.0], [9.0, 9.0]]


def test_gradient_of_another_dtype_is_cast_and_a_gradient_that_requires_grad_is_accepted():
    f = torch.ones(3, requires_grad=True)
    (f * 2).backward(torch.ones(3, dtype=torch.bool))
    (f * 2).backward(torch.ones(3, dtype=torch.int64))
    (f * 2).backward(torch.ones(3, dtype=torch.float64))
    assert repr(f.grad) == "tensor([6., 6., 6.])"
    h = torch.ones(3, requires_grad=True)
    (h * 2).backward(torch.ones(3, requires_grad=True))
    assert repr(h.grad) == "tensor([2., 2., 2.])"


def test_one_element_outputs_take_an_implicit_gradient():
    x = torch.ones(1, requires_grad=True)
    (x * 2).backward()
    assert repr(x.grad) == "tensor([2.])"
    m = torch.ones(1, 1, requires_grad=True)
    (m * 3).backward()
    assert repr(m.grad) == "tensor([[3.]])"


def test_failed_backward_leaves_every_grad_as_it_was():
    x, w = leaf(1.0, 2.0), leaf(3.0, 4.0)
    (x * w).sum().backward()
    before = (x.grad, x.grad.tolist(), w.grad, w.grad.tolist())
    u = leaf(1.0, 1.0)
    z = x * 3
    z.register_hook(lambda g: (_ for _ in ()).throw(ValueError("boom")))
    with pytest.raises(ValueError, match="boom"):
        (x * w + z + u).sum().backward()
    assert (x.grad, x.grad.tolist(), w.grad, w.grad.tolist()) == before
    assert u.grad is None


def test_failed_backward_from_a_version_error_changes_nothing():
    x, w = leaf(1.0, 2.0), leaf(3.0, 4.0)
    y = x.exp()
    out = (y + x * w).sum()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()
    assert x.grad is None and w.grad is None


def test_failed_autograd_grad_does_not_free_the_graph():
    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    z = y * 1
    z.register_hook(lambda g: (_ for _ in ()).throw(ValueError("boom")))
    with pytest.raises(ValueError):
        torch.autograd.grad(z, x)
    assert repr(torch.autograd.grad(y, x)) == "(tensor([2., 4.]),)"


def test_empty_or_non_differentiable_inputs_are_refused():
    x = leaf(1.0, 2.0)
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `backward\(\)` cannot be empty\.$"):
        (x * x).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match="^can't retain_grad on Tensor that has requires_grad=False$"):
        (x * x).sum().backward(inputs=[torch.ones(2)])
    with pytest.raises(RuntimeError, match=r"^`inputs` argument to `grad\(\)` cannot be empty\.$"):
        torch.autograd.grad((x * x).sum(), [])
    assert x.grad is None


def test_grad_argument_variants_measured_on_pytorch():
    x = leaf(1.0, 2.0)
    y = x * 2
    assert repr(torch.autograd.grad(y.sum(), y)) == "(tensor([1., 1.]),)"
    assert repr(torch.autograd.grad(x, x, torch.ones(2))) == "(tensor([1., 1.]),)"
    assert repr(torch.autograd.grad((x * x).sum(), [x, x], retain_graph=True)) == (
        "(tensor([2., 4.]), tensor([2., 4.]))")
    outputs = [x * 2, x * 3]
    assert repr(torch.autograd.grad(outputs, x, grad_outputs=[torch.ones(2), torch.ones(2)])) == (
        "(tensor([5., 5.]),)")
    assert repr(torch.autograd.grad((x * x).sum(), x, grad_outputs=[None])) == "(tensor([2., 4.]),)"
    with pytest.warns(FutureWarning, match="^only_inputs argument is deprecated"):
        assert repr(torch.autograd.grad((x * x).sum(), x, only_inputs=False)) == "(tensor([2., 4.]),)"


def test_hooks_apply_inside_create_graph():
    x = leaf(1.0, 2.0)
    x.register_hook(lambda g: g * 2)
    (g,) = torch.autograd.grad((x ** 3).sum(), x, create_graph=True)
    assert repr(g) == "tensor([ 6., 24.], grad_fn=<MulBackward0>)"
    (h,) = torch.autograd.grad(g.sum(), x)
    assert repr(h) == "tensor([24., 48.])"


def test_backward_inputs_on_a_tensor_that_also_retains_grad_stores_once():
    a = leaf(1.0, 2.0)
    y = a * 2
    y.retain_grad()
    (y * y).sum().backward(inputs=[y])
    assert repr(y.grad) == "tensor([4., 8.])" and a.grad is None


def test_create_graph_builds_pytorchs_graph_for_a_power():
    """PyTorch's formula for x ** 3 is grad * (3 * x.pow(2)): a product by a Scalar (MulBackward1), no where."""
    x = torch.tensor(3.0, requires_grad=True)
    (g,) = torch.autograd.grad(x ** 3, x, create_graph=True)
    assert repr(g) == "tensor(27., grad_fn=<MulBackward0>)"
    (first, _), (second, _) = g.grad_fn.next_functions
    assert first is None
    assert type(second).__name__ == "MulBackward1"
    assert [type(n).__name__ for n, _ in second.next_functions] == ["PowBackward0"]
    assert repr(torch.autograd.grad(g, x)) == "(tensor(18.),)"
    for exponent, expected in ((0, "tensor(0.)"), (1, "tensor(0.)"), (0.5, "tensor(-0.0481)"), (-1, "tensor(0.0741)")):
        y = torch.tensor(3.0, requires_grad=True)
        (d1,) = torch.autograd.grad(y ** exponent, y, create_graph=True)
        d2 = torch.autograd.grad(d1, y, allow_unused=True, materialize_grads=True)[0] if d1.requires_grad else None
        assert repr(d2 if d2 is not None else torch.tensor(0.0)) == expected


def test_numbers_outside_backward_keep_mulbackward0():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    assert type((x * 3).grad_fn).__name__ == "MulBackward0"
    assert type((3 * x).grad_fn).__name__ == "MulBackward0"
    assert type(np.where(False, 0, x).grad_fn).__name__ == "WhereBackward0"
