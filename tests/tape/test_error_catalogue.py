"""The error catalogue of TORCH_SEMANTICS.md section 12: one test per row, exact class and message."""

import re
import warnings

import numpy as np
import pytest

import astgrad.torch as torch
from astgrad.torch.autograd import Variable

SECOND_TIME = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)
NON_LEAF_HINT = (
    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable "
    "in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
)
HINT = (
    " Hint: enable anomaly detection to find the operation that failed to compute its gradient, with "
    "torch.autograd.set_detect_anomaly(True, check_nan=False)."
)
NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
    "for more information. (Triggered internally at "
    "/__w/pytorch/pytorch/build/aten/src/ATen/core/TensorBody.h:493.)"
)


def raises(cls, message):
    """``pytest.raises`` for an exact message and an exact class."""
    return pytest.raises(cls, match="^" + re.escape(message) + "$")


def leaf(*values, dtype=None):
    return torch.tensor(list(values), dtype=dtype, requires_grad=True)


def test_implicit_grad_needs_scalar_output():
    with raises(RuntimeError, "grad can be implicitly created only for scalar outputs"):
        (leaf(1.0, 2.0) * 2).backward()


@pytest.mark.parametrize("build", [
    lambda x: x.exp().sum(),
    lambda x: (x * x).sum(),
    lambda x: ((x + 2) * (x + 2) * 3).mean(),
])
def test_second_backward_through_saved_tensors(build):
    y = build(leaf(1.0, 2.0))
    y.backward()
    with raises(RuntimeError, SECOND_TIME):
        y.backward()


def test_second_autograd_grad_and_saved_access_after_backward():
    x = leaf(1.0, 2.0)
    y = (x * x).sum()
    torch.autograd.grad(y, x)
    with raises(RuntimeError, SECOND_TIME):
        torch.autograd.grad(y, x)
    with raises(RuntimeError, SECOND_TIME):
        y.grad_fn.next_functions[0][0]._saved_self


def test_backward_of_tensor_without_grad():
    with raises(RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"):
        torch.ones(2).sum().backward()
    with raises(RuntimeError, "element 0 of tensors does not require grad and does not have a grad_fn"):
        torch.autograd.grad(torch.ones(2).sum(), leaf(1.0))


def test_requires_grad_false_on_non_leaf():
    y = leaf(1.0) * 2
    with raises(RuntimeError, NON_LEAF_HINT):
        y.requires_grad_(False)
    with raises(RuntimeError, NON_LEAF_HINT):
        y.requires_grad = False


def test_requires_grad_attribute_true_on_non_leaf_raises_but_method_does_not():
    y = leaf(1.0) * 2
    with raises(RuntimeError, "you can only change requires_grad flags of leaf variables."):
        y.requires_grad = True
    assert y.requires_grad_(True) is y


@pytest.mark.parametrize("make", [
    lambda: torch.tensor([1, 2], requires_grad=True),
    lambda: torch.ones(2, dtype=torch.long, requires_grad=True),
    lambda: torch.arange(3, requires_grad=True),
    lambda: torch.tensor([True], requires_grad=True),
    lambda: Variable(torch.tensor([1, 2]), requires_grad=True),
])
def test_integer_factories_cannot_require_grad(make):
    with raises(RuntimeError, "Only Tensors of floating point and complex dtype can require gradients"):
        make()


def test_integer_requires_grad_method_and_attribute_wordings():
    t = torch.tensor([1, 2])
    with raises(RuntimeError, "only Tensors of floating point dtype can require gradients"):
        t.requires_grad_()
    with raises(RuntimeError, "only Tensors of floating point and complex dtype can require gradients"):
        t.requires_grad = True
    assert repr(t.requires_grad_(False)) == "tensor([1, 2])"


@pytest.mark.parametrize("op", [
    lambda x: x.add_(1), lambda x: x.__iadd__(1), lambda x: x.mul_(2), lambda x: x.zero_(),
    lambda x: x.fill_(0.0), lambda x: x.copy_(torch.ones(3)), lambda x: x.clamp_(0), lambda x: x.exp_(),
])
def test_in_place_on_leaf_that_requires_grad(op):
    x = torch.ones(3, requires_grad=True)
    with raises(RuntimeError, "a leaf Variable that requires grad is being used in an in-place operation."):
        op(x)
    assert x._version == 0 and repr(x) == "tensor([1., 1., 1.], requires_grad=True)"


def test_in_place_through_view_of_leaf():
    message = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    x = torch.ones(3, requires_grad=True)
    with raises(RuntimeError, message):
        x[0] = 5.0
    with raises(RuntimeError, message):
        x[:2].mul_(2)
    assert repr(x) == "tensor([1., 1., 1.], requires_grad=True)"


def test_in_place_on_leaf_allowed_under_no_grad_and_through_data():
    x = torch.ones(3, requires_grad=True)
    with torch.no_grad():
        x.add_(1)
        x[0] = 5.0
    x.data.mul_(2)
    assert repr(x) == "tensor([10.,  4.,  4.], requires_grad=True)"
    assert x.is_leaf and x.grad_fn is None


def _saves_own_output(fn, x):
    y = fn(x)
    return y, y.sum()


def _saved_by_a_product(y):
    return y, (y * y).sum()


@pytest.mark.parametrize("build, described", [
    (lambda: _saves_own_output(torch.exp, leaf(1.0, 2.0)), "[torch.FloatTensor [2]], which is output 0 of Exp,"),
    (lambda: _saved_by_a_product(torch.ones(3, requires_grad=True) + 1),
     "[torch.FloatTensor [3]], which is output 0 of Add,"),
    # a saved input is named by the node that wrote it last: the add_ below, not the product that made it
    (lambda: _saved_by_a_product(torch.ones(2, 2, requires_grad=True) * 1),
     "[torch.FloatTensor [2, 2]], which is output 0 of Add,"),
    (lambda: _saves_own_output(torch.sigmoid, leaf(1.0, 2.0, dtype=torch.float64)),
     "[torch.DoubleTensor [2]], which is output 0 of Sigmoid,"),
    (lambda: _saved_by_a_product(torch.tensor(1.0, requires_grad=True) + 1),
     "[torch.FloatTensor []], which is output 0 of Add,"),
])
def test_saved_non_leaf_modified_in_place(build, described):
    y, out = build()
    y.add_(1)
    message = ("one of the variables needed for gradient computation has been modified by an inplace "
               f"operation: {described} is at version 1; expected version 0 instead." + HINT)
    with raises(RuntimeError, message):
        out.backward()


@pytest.mark.parametrize("write, op", [(lambda y: y.mul_(2), "Mul"), (lambda y: y.sigmoid_(), "Sigmoid"),
                                       (lambda y: y.add_(1).exp_(), "Exp")])
def test_a_saved_input_is_named_by_its_last_in_place_write(write, op):
    y = torch.ones(2, 2, requires_grad=True) + 1
    out = (y * y).sum()
    write(y)
    version = 2 if op == "Exp" else 1
    message = ("one of the variables needed for gradient computation has been modified by an inplace operation: "
               f"[torch.FloatTensor [2, 2]], which is output 0 of {op}, is at version {version}; expected version 0 "
               "instead." + HINT)
    with raises(RuntimeError, message):
        out.backward()


@pytest.mark.parametrize("modify", ["no_grad", "detach"])
def test_saved_leaf_modified_in_place(modify):
    x = torch.ones(3, requires_grad=True)
    y = (x * x).sum()
    if modify == "no_grad":
        with torch.no_grad():
            x.add_(1)
    else:
        x.detach().add_(1)
    message = ("one of the variables needed for gradient computation has been modified by an inplace "
               "operation: [torch.FloatTensor [3]] is at version 1; expected version 0 instead." + HINT)
    with raises(RuntimeError, message):
        y.backward()


def test_non_leaf_grad_access_warns_and_returns_none():
    y = leaf(1.0) * 2
    with pytest.warns(UserWarning) as record:
        assert y.grad is None
    assert [str(w.message) for w in record] == [NON_LEAF_GRAD]


def test_grad_of_tensor_without_grad_or_retained_does_not_warn():
    y = leaf(1.0) * 2
    y.retain_grad()
    y.backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.ones(2).grad is None
        assert repr(y.grad) == "tensor([1.])"


@pytest.mark.parametrize("grad_shape, out_shape", [
    ((2,), (3,)), ((1, 3), (3,)), ((4,), (2, 2)), ((1,), ()), ((), (1,)),
])
def test_gradient_shape_mismatch(grad_shape, out_shape):
    y = torch.ones(out_shape, requires_grad=True) * 2
    message = (f"Mismatch in shape: grad_output[0] has a shape of torch.Size({list(grad_shape)}) and "
               f"output[0] has a shape of torch.Size({list(out_shape)}).")
    with raises(RuntimeError, message):
        y.backward(torch.ones(grad_shape))


def test_gradient_of_wrong_type():
    y = torch.ones(3, requires_grad=True) * 2
    with raises(TypeError, "gradients can be either Tensors or None, but got float"):
        y.backward([1.0, 1.0, 1.0])
    with raises(TypeError, "'float' object is not iterable"):
        y.sum().backward(2.0)


def test_numpy_refused_while_grad_mode_is_on():
    message = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
    x = torch.ones(2, requires_grad=True)
    for call in (x.numpy, (x * 2).numpy, lambda: np.asarray(x)):
        with raises(RuntimeError, message):
            call()
    with torch.no_grad():
        assert repr(x.numpy()) == "array([1., 1.], dtype=float32)"
        assert np.asarray(x).dtype == np.float32


def test_autograd_grad_unused_input():
    x, w = leaf(1.0, 2.0), leaf(1.0, 2.0)
    message = ("The differentiated Tensor at index 1 appears to not have been used in the graph. "
               "Set allow_unused=True if this is the desired behavior.")
    with raises(RuntimeError, message):
        torch.autograd.grad((x * 2).sum(), [x, w])


def test_autograd_grad_input_without_grad():
    with raises(RuntimeError, "One of the differentiated Tensors does not require grad"):
        torch.autograd.grad((leaf(1.0) * 2).sum(), torch.ones(1))


def test_hook_and_retain_grad_need_requires_grad():
    t = torch.ones(2)
    with raises(RuntimeError, "cannot register a hook on a tensor that doesn't require gradient"):
        t.register_hook(lambda g: g)
    with raises(RuntimeError, "can't retain_grad on Tensor that has requires_grad=False"):
        t.retain_grad()


def test_hook_changing_the_size():
    x = leaf(1.0, 2.0)
    y = x * 2
    y.register_hook(lambda g: g.sum())
    with raises(RuntimeError, "hook '<lambda>' has changed the size of value"):
        y.sum().backward()

    def widen(g):
        return torch.ones(3)

    x.register_hook(widen)
    with raises(RuntimeError, "hook 'widen' has changed the size of value"):
        (x * 3).sum().backward()


def test_assigning_grad_of_wrong_size_dtype_or_type():
    x = torch.ones(2, requires_grad=True)
    with raises(RuntimeError, "attempting to assign a gradient of size '[3]' to a tensor of size '[2]'. "
                              "Please ensure that the gradient and the tensor are the same size"):
        x.grad = torch.ones(3)
    with raises(RuntimeError, (
        "attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype 'Float'. The "
        "gradient must match the tensor's grad_dtype (defaults to the tensor's dtype). You can set the "
        "tensor's grad_dtype attribute with a specific dtype, or None to allow any dtype. Set grad_dtype "
        "with caution. Diverging the dtypes of a tensor and its gradient may break downstream systems "
        "that assume they match."
    )):
        x.grad = torch.ones(2, dtype=torch.float64)
    with raises(TypeError, "assigned grad expected to be a Tensor or None but got grad of type float"):
        x.grad = 1.0
    assert x.grad is None


def test_assigning_valid_grads():
    x = torch.ones(2, requires_grad=True)
    g = torch.tensor([3.0, 4.0])
    x.grad = g
    assert x.grad is g
    x.grad = None
    assert x.grad is None
    c = torch.ones(2)
    c.grad = torch.ones(2)
    assert repr(c.grad) == "tensor([1., 1.])"


def test_zero_of_missing_grad():
    x = torch.ones(2, requires_grad=True)
    with raises(AttributeError, "'NoneType' object has no attribute 'zero_'"):
        x.grad.zero_()


def test_integer_data_for_tensor_that_requires_grad():
    x = torch.ones(2, requires_grad=True)
    with raises(RuntimeError, "data set to a tensor that requires gradients must be floating point or complex dtype"):
        x.data = torch.tensor([1, 2])


def test_detach_in_place_on_a_view():
    v = (leaf(1.0, 2.0) * 1)[:1]
    with raises(RuntimeError, (
        "Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel "
        "(DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP "
        "buckets, and hence detach_() cannot be called on these gradients. To fix this error, please "
        "refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
    )):
        v.detach_()


def test_conversions_of_multi_element_tensors():
    t = torch.tensor([1.0, 2.0])
    with raises(RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"):
        bool(t)
    with raises(RuntimeError, "a Tensor with 2 elements cannot be converted to Scalar"):
        t.item()
    with raises(ValueError, "only one element tensors can be converted to Python scalars"):
        float(t)


def test_mean_of_integers():
    with raises(RuntimeError, "mean(): could not infer output dtype. Input dtype must be either a floating "
                              "point or complex dtype. Got: Long"):
        torch.tensor([1, 2]).mean()


def test_shape_errors():
    with raises(RuntimeError, "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"):
        torch.ones(3) + torch.ones(2)
    with raises(RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"):
        torch.ones(2, 3) @ torch.ones(2, 3)
    with raises(RuntimeError, "inconsistent tensor size, expected tensor [3] and src [2] to have the same "
                              "number of elements, but got 3 and 2 elements respectively"):
        torch.ones(3) @ torch.ones(2)
    with raises(RuntimeError, "view size is not compatible with input tensor's size and stride (at least "
                              "one dimension spans across two contiguous subspaces). Use .reshape(...) instead."):
        torch.ones(2, 3).t().view(-1)


def test_creator_is_kept_as_a_deprecated_alias():
    # A deliberate departure (section 11): PyTorch raises AttributeError here.
    y = leaf(1.0) * 2
    with pytest.warns(DeprecationWarning, match="grad_fn"):
        assert y.creator is y.grad_fn


def test_variable_of_a_list():
    with raises(TypeError, "Variable data has to be a tensor, but got list"):
        Variable([1.0, 2.0])
