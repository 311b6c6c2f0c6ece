"""backward() misuse and bad input get PyTorch's errors, not numpy tracebacks (issue 2, section 12)."""

import re

import pytest

import astgrad.torch as torch

SECOND_TIME = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


def raises(cls, message):
    return pytest.raises(cls, match="^" + re.escape(message) + "$")


def test_non_scalar_backward_without_gradient():
    x = torch.ones(3, requires_grad=True)
    with raises(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    assert x.grad is None
    (x[:1] * 2).backward()  # one element, not 0-d: allowed
    assert repr(x.grad) == "tensor([2., 0., 0.])"


@pytest.mark.parametrize("grad_shape, out_shape", [((2,), (3,)), ((1, 3), (3,)), ((4,), (2, 2)), ((1,), ()), ((), (1,))])
def test_wrong_gradient_shape(grad_shape, out_shape):
    x = torch.ones(out_shape, requires_grad=True)
    with raises(RuntimeError, f"Mismatch in shape: grad_output[0] has a shape of torch.Size({list(grad_shape)}) "
                              f"and output[0] has a shape of torch.Size({list(out_shape)})."):
        (x * 2).backward(torch.ones(grad_shape))


def test_gradient_of_the_wrong_kind():
    x = torch.ones(3, requires_grad=True)
    with raises(TypeError, "gradients can be either Tensors or None, but got float"):
        (x * 2).backward([1.0, 1.0, 1.0])
    with raises(TypeError, "'float' object is not iterable"):
        (x * 2).sum().backward(2.0)


@pytest.mark.parametrize("make", [
    lambda: torch.ones(2),
    lambda: torch.ones(2, requires_grad=True).detach() * 2,
    lambda: _under_no_grad(),
])
def test_backward_of_a_tensor_that_does_not_require_grad(make):
    with raises(RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"):
        make().sum().backward()


def _under_no_grad():
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        return x * 2


@pytest.mark.parametrize("build", [
    lambda x: x.exp().sum(), lambda x: (x * x).sum(), lambda x: ((x + 2) * (x + 2) * 3).mean(),
])
def test_second_backward_through_freed_saved_tensors(build):
    x = torch.ones(2, 2, requires_grad=True)
    out = build(x)
    out.backward()
    first = x.grad.clone()
    with raises(RuntimeError, SECOND_TIME):
        out.backward()
    assert torch.equal(x.grad, first)  # the failed call changed nothing


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_repeated_backward_without_saved_tensors_works_and_accumulates(reduce):
    x = torch.ones(2, 2, requires_grad=True)
    y = getattr(x + 2, reduce)()
    y.backward()
    g = x.grad
    y.backward()
    assert x.grad is g
    expected = "tensor([[2., 2.],\n        [2., 2.]])" if reduce == "sum" else "tensor([[0.5000, 0.5000],\n        [0.5000, 0.5000]])"
    assert repr(x.grad) == expected


def test_retain_graph_then_plain_then_error():
    x = torch.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [6.0, 6.0]
    with raises(RuntimeError, SECOND_TIME):
        y.backward()


def test_backward_returns_none_and_gradient_scales():
    x = torch.ones(2, 2, requires_grad=True)
    out = ((x + 2) * (x + 2) * 3).mean()
    assert out.backward(torch.tensor(2.0), retain_graph=True) is None
    assert repr(x.grad) == "tensor([[9., 9.],\n        [9., 9.]])"
    x.grad = None
    out.backward(torch.tensor(0.5))
    assert repr(x.grad) == "tensor([[2.2500, 2.2500],\n        [2.2500, 2.2500]])"


def test_backward_on_a_leaf_copies_the_gradient():
    s = torch.tensor(2.0, requires_grad=True)
    s.backward()
    assert repr(s.grad) == "tensor(1.)"
    v = torch.ones(3, requires_grad=True)
    g = torch.tensor([1.0, 2.0, 3.0])
    v.backward(g)
    assert torch.equal(v.grad, g) and v.grad is not g


def test_leaf_used_several_times_and_leaf_not_reached():
    x = torch.ones(2, requires_grad=True)
    unused = torch.ones(2, requires_grad=True)
    (x * x + x).sum().backward()
    assert repr(x.grad) == "tensor([3., 3.])" and unused.grad is None


@pytest.mark.parametrize("shape, other, expected", [
    ((3,), (4, 1), (3, 1)), ((2, 3), (3, 2), None), ((1, 3), (2,), None),
])
def test_broadcasting_results_and_shapes(shape, other, expected):
    a, b = torch.ones(shape, requires_grad=True), torch.ones(other, requires_grad=True)
    if expected is None:
        with pytest.raises(RuntimeError, match=r"^The size of tensor a \(\d\) must match the size of tensor b \(\d\) "
                                               r"at non-singleton dimension \d$"):
            a + b
    else:
        (a * b).sum().backward()
        assert a.grad.shape == a.shape and b.grad.shape == b.shape


@pytest.mark.parametrize("expression, message", [
    ("torch.ones(3) + torch.ones(2)",
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("torch.ones(2, 3) * torch.ones(3, 2)",
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 1"),
    ("torch.ones(3, requires_grad=True) - torch.ones(2)",
     "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"),
    ("torch.ones(2, 3) @ torch.ones(2, 3)", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ("torch.ones(2, 3).mm(torch.ones(2, 3))", "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"),
    ("torch.ones(2) @ torch.ones(3, 4)", "mat1 and mat2 shapes cannot be multiplied (1x2 and 3x4)"),
    ("torch.ones(2, 3) @ torch.ones(2)", "size mismatch, got input (2), mat (2x3), vec (2)"),
    ("torch.ones(2, 3).mv(torch.ones(2))", "size mismatch, got input (2), mat (2x3), vec (2)"),
    ("torch.ones(3) @ torch.ones(2)",
     "inconsistent tensor size, expected tensor [3] and src [2] to have the same number of elements, "
     "but got 3 and 2 elements respectively"),
    ("torch.ones(3).dot(torch.ones(2))",
     "inconsistent tensor size, expected tensor [3] and src [2] to have the same number of elements, "
     "but got 3 and 2 elements respectively"),
    ("torch.ones(2, 3).t().view(-1)",
     "view size is not compatible with input tensor's size and stride (at least one dimension spans across "
     "two contiguous subspaces). Use .reshape(...) instead."),
    ("torch.ones(6).view(4)", "shape '[4]' is invalid for input of size 6"),
    ("torch.ones(6).reshape(4, 2)", "shape '[4, 2]' is invalid for input of size 6"),
    ("torch.tensor([1, 2]).mean()",
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
    ("bool(torch.tensor([1., 2.]))", "Boolean value of Tensor with more than one value is ambiguous"),
    ("torch.tensor([1., 2.]).item()", "a Tensor with 2 elements cannot be converted to Scalar"),
    ("torch.cat([torch.ones(2, 3), torch.ones(2, 2)])",
     "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 2 for tensor number 1 in the list."),
    ("torch.stack([torch.ones(2), torch.ones(3)])",
     "stack expects each tensor to be equal size, but got [2] at entry 0 and [3] at entry 1"),
    ("torch.ones(3).permute(1, 0)",
     "permute(sparse_coo): number of dimensions in the tensor input does not match the length of the desired "
     "ordering of dimensions i.e. input.dim() = 1 is not equal to len(dims) = 2"),
    ("torch.ones(3).expand(2, 4)",
     "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1.  "
     "Target sizes: [2, 4].  Tensor sizes: [3]"),
])
def test_bad_input_gets_torch_runtime_errors(expression, message):
    with raises(RuntimeError, message):
        eval(expression, {"torch": torch})


@pytest.mark.parametrize("expression, message", [
    ("torch.ones(3).sum(dim=3)", "Dimension out of range (expected to be in range of [-1, 0], but got 3)"),
    ("torch.ones(2, 3).mean(-3)", "Dimension out of range (expected to be in range of [-2, 1], but got -3)"),
    ("torch.ones(3).unsqueeze(5)", "Dimension out of range (expected to be in range of [-2, 1], but got 5)"),
    ("torch.ones(3).transpose(0, 2)", "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    ("torch.ones(3).squeeze(3)", "Dimension out of range (expected to be in range of [-1, 0], but got 3)"),
    ("torch.ones(3).norm(dim=2)", "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    ("torch.ones(3)[0, 0]", "too many indices for tensor of dimension 1"),
    ("torch.ones(3).max(dim=4)", "Dimension out of range (expected to be in range of [-1, 0], but got 4)"),
    ("torch.ones(3)[5]", "index 5 is out of bounds for dimension 0 with size 3"),
    ("torch.ones(2, 3)[:, -4]", "index -4 is out of bounds for dimension 1 with size 3"),
])
def test_bad_dimensions_and_indices_get_torch_index_errors(expression, message):
    with raises(IndexError, message):
        eval(expression, {"torch": torch})


def test_float_of_a_multi_element_tensor():
    with raises(ValueError, "only one element tensors can be converted to Python scalars"):
        float(torch.tensor([1.0, 2.0]))
