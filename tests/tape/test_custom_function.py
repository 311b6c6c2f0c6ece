"""torch.autograd.Function: user-written forward and backward, as in PyTorch's "new autograd functions" example."""

import numpy as np
import pytest

import astgrad.torch as torch
from _taped import check_grad


class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


class MyReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


class Scaled(torch.autograd.Function):
    """A number among the inputs: its gradient is None."""

    @staticmethod
    def forward(ctx, input, scale):
        ctx.scale = scale
        ctx.seen = ctx.needs_input_grad
        return input * scale

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.scale, None


def test_the_legendre_example_matches_its_closed_form_and_finite_differences():
    x = torch.linspace(-1, 1, 5, requires_grad=True)
    y = LegendrePolynomial3.apply(x)
    assert repr(y) == ("tensor([-1.0000,  0.4375,  0.0000, -0.4375,  1.0000],\n"
                       "       grad_fn=<LegendrePolynomial3Backward>)")
    assert type(y.grad_fn).__name__ == "LegendrePolynomial3Backward"
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    values = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * (5 * values ** 2 - 1), rtol=1e-6)
    check_grad(lambda a: LegendrePolynomial3.apply(a * 0.5) * a, np.random.default_rng(0).normal(size=4))


def test_the_relu_example_writes_into_its_gradient():
    x = torch.tensor([-1.0, 2.0, 3.0], requires_grad=True)
    MyReLU.apply(x * 2).sum().backward()
    assert repr(x.grad) == "tensor([0., 2., 2.])"


def test_numbers_among_the_inputs_and_needs_input_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = Scaled.apply(x, 3.0)
    assert len(y.grad_fn.next_functions) == 1
    y.sum().backward()
    assert repr(x.grad) == "tensor([3., 3.])"
    plain = Scaled.apply(torch.ones(2), 2.0)
    assert plain.grad_fn is None and not plain.requires_grad
    ctx_seen = []

    class Spy(Scaled):
        @staticmethod
        def forward(ctx, input, scale):
            ctx_seen.append(ctx.needs_input_grad)
            return input * scale

    Spy.apply(x, 2.0)
    assert ctx_seen == [(True, False)]


def test_a_none_gradient_is_zero():
    class HalfBlind(torch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * 2, None

    a, b = torch.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    (HalfBlind.apply(a, b).sum() + (b * 3).sum()).backward()
    assert repr(a.grad) == "tensor([2., 2.])"
    assert repr(b.grad) == "tensor([3., 3.])"


def test_second_derivatives_through_a_taped_backward():
    x = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(LegendrePolynomial3.apply(x), x, create_graph=True)
    assert g.grad_fn is not None
    (h,) = torch.autograd.grad(g, x)
    assert h.item() == pytest.approx(15 * 0.5)


def test_once_differentiable_refuses_a_graph_of_its_gradient():
    class NumpyExp(torch.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            result = torch.tensor(np.exp(input.numpy()))
            ctx.save_for_backward(result)
            return result

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return torch.tensor(grad_output.numpy() * result.numpy())

    x = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    NumpyExp.apply(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="^trying to differentiate twice a function that was marked with "
                                           "@once_differentiable$"):
        torch.autograd.grad(NumpyExp.apply(x).sum(), x, create_graph=True)


def test_a_saved_tensor_written_in_place_is_refused():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    y = LegendrePolynomial3.apply(b)
    with torch.no_grad():
        b.add_(1)
    with pytest.raises(RuntimeError, match=r"^one of the variables needed for gradient computation has been "
                                           r"modified by an inplace operation: \[torch.FloatTensor \[2\]\], which "
                                           r"is output 0 of Mul, is at version 1; expected version 0 instead"):
        y.sum().backward()


def test_misuse_is_refused_in_pytorchs_words():
    class TooFew(Scaled):
        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^function TooFewBackward returned an incorrect number of gradients "
                                           r"\(expected 2, got 1\)$"):
        TooFew.apply(x, 2.0).sum().backward()

    class WrongShape(MyReLU):
        @staticmethod
        def backward(ctx, grad_output):
            return torch.ones(3)

    with pytest.raises(RuntimeError, match=r"^Function WrongShapeBackward returned an invalid gradient at index 0 "
                                           r"- got \[3\] but expected shape compatible with \[2\]$"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward method is "
                                           "deprecated"):
        MyReLU()(x)

    assert x.grad is None


def test_a_second_backward_through_saved_tensors_is_pytorchs_error():
    """The node's saved tensors are freed by the first backward; retain_graph keeps them, as in PyTorch."""
    x = torch.tensor([0.5, -1.0], requires_grad=True)
    y = LegendrePolynomial3.apply(x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * 1.5 * (5 * np.array([0.5, -1.0]) ** 2 - 1), rtol=1e-6)
    with pytest.raises(RuntimeError, match=r"^Trying to backward through the graph a second time \(or directly "
                                           r"access saved tensors after they have already been freed\)"):
        y.backward()
