"""A custom ``autograd.Function`` whose forward returns several tensors: one backward call with every gradient."""

import numpy as np

import astgrad.torch as torch
from _numeric import gradient

CALLS = []


class SinCos(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin(), x.cos()

    @staticmethod
    def backward(ctx, g_sin, g_cos):
        (x,) = ctx.saved_tensors
        CALLS.append((g_sin.detach().numpy().copy(), g_cos.detach().numpy().copy()))
        return g_sin * x.cos() - g_cos * x.sin()


X = np.array([0.5, 1.0, 2.0])


def test_backward_runs_once_with_both_gradients():
    CALLS.clear()
    x = torch.tensor(X, requires_grad=True)
    s, c = SinCos.apply(x)
    (s * 2 + c * 3 + s * c).sum().backward()
    assert len(CALLS) == 1
    np.testing.assert_allclose(CALLS[0][0], 2 + np.cos(X))
    np.testing.assert_allclose(CALLS[0][1], 3 + np.sin(X))
    expected = gradient(lambda a: np.sum(2 * np.sin(a) + 3 * np.cos(a) + np.sin(a) * np.cos(a)), X)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6)


def test_an_output_without_gradient_gets_zeros():
    CALLS.clear()
    x = torch.tensor(X, requires_grad=True)
    s, c = SinCos.apply(x)
    (c ** 2).sum().backward()
    assert len(CALLS) == 1
    np.testing.assert_array_equal(CALLS[0][0], np.zeros(3))
    np.testing.assert_allclose(x.grad.numpy(), gradient(lambda a: np.sum(np.cos(a) ** 2), X), rtol=1e-6)


def test_each_backward_pass_calls_backward_once():
    CALLS.clear()
    x = torch.tensor(X, requires_grad=True)
    s, c = SinCos.apply(x)
    loss = (s + c).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    assert len(CALLS) == 2
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.cos(X) - np.sin(X)), rtol=1e-12)


def test_second_derivative_through_the_gathered_backward():
    x = torch.tensor(X, requires_grad=True)
    s, c = SinCos.apply(x)
    (g,) = torch.autograd.grad((s * c).sum(), x, create_graph=True)  # d/dx sin x cos x = cos 2x
    np.testing.assert_allclose(g.detach().numpy(), np.cos(2 * X), rtol=1e-12)
    (h,) = torch.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(h.numpy(), gradient(lambda a: np.sum(np.cos(2 * a)), X), rtol=1e-6)


def test_nodes_are_named_after_the_function_and_an_integer_output_has_none():
    class ValueAndIndex(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.max(), x.argmax()

        @staticmethod
        def backward(ctx, g, g_index):
            (x,) = ctx.saved_tensors
            out = torch.zeros_like(x)
            out[x.argmax()] = g
            return out

    x = torch.tensor(X, requires_grad=True)
    value, index = ValueAndIndex.apply(x)
    assert type(value.grad_fn).__name__ == "ValueAndIndexBackward" and index.grad_fn is None
    value.backward()
    assert x.grad.tolist() == [0.0, 0.0, 1.0]
    s, c = SinCos.apply(torch.tensor(X))  # no input requires grad: nothing recorded
    assert s.grad_fn is None and c.grad_fn is None
