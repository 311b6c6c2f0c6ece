"""torch.nn basics: functional losses and activations (values, node names, gradients) and Parameter."""

import numpy as np
import pytest

import astgrad.torch as torch
from astgrad import rules
from _taped import check_grad, grad_of

F = torch.nn.functional


def test_functional_values_and_node_names():
    x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    target = torch.ones(3)
    assert repr(F.softmax(x, 0)) == "tensor([0.1402, 0.2312, 0.6285], grad_fn=<SoftmaxBackward0>)"
    assert repr(F.log_softmax(x, dim=0)) == "tensor([-1.9644, -1.4644, -0.4644], grad_fn=<LogSoftmaxBackward0>)"
    assert repr(F.mse_loss(x, target)) == "tensor(0.4167, grad_fn=<MseLossBackward0>)"
    assert repr(F.mse_loss(x, target, reduction="sum")) == "tensor(1.2500, grad_fn=<MseLossBackward0>)"
    assert repr(F.mse_loss(x, target, reduction="none")) == (
        "tensor([0.2500, 0.0000, 1.0000], grad_fn=<MseLossBackward0>)")
    assert repr(F.relu(x - 1)) == "tensor([0., 0., 1.], grad_fn=<ReluBackward0>)"
    for spelled in (torch.softmax(x, 0), x.softmax(0), x.softmax(dim=0)):
        assert type(spelled.grad_fn).__name__ == "SoftmaxBackward0"
    for spelled in (torch.log_softmax(x, 0), x.log_softmax(dim=0)):
        assert type(spelled.grad_fn).__name__ == "LogSoftmaxBackward0"


@pytest.mark.parametrize("f, expected", [
    (lambda x: F.softmax(x, 0)[0], "tensor([ 0.1206, -0.0324, -0.0881])"),
    (lambda x: F.log_softmax(x, 0)[0], "tensor([ 0.8598, -0.2312, -0.6285])"),
    (lambda x: F.mse_loss(x, torch.ones(3)), "tensor([-0.3333,  0.0000,  0.6667])"),
])
def test_functional_gradients_from_the_semantics_file(f, expected):
    assert grad_of([0.5, 1.0, 2.0], f) == expected


@pytest.mark.parametrize("f", [
    lambda x: F.softmax(x, 1), lambda x: F.softmax(x, 0), lambda x: F.log_softmax(x, -1),
    lambda x: F.log_softmax(x, 0) * 3,
])
def test_softmax_gradients_match_finite_differences(f, rng):
    check_grad(f, rng.normal(size=(2, 3)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_gradients_match_finite_differences(reduction, rng):
    check_grad(lambda a, b: F.mse_loss(a, b, reduction=reduction), rng.normal(size=(2, 3)), rng.normal(size=(2, 3)))


def test_softmax_rules_run_on_arrays_too():
    x = np.array([[0.5, 1.0, 2.0], [1000.0, 0.0, -1000.0]])
    np.testing.assert_allclose(rules.softmax(x, 1).sum(axis=1), [1.0, 1.0])
    np.testing.assert_allclose(rules.log_softmax(x, 1)[1], [0.0, -1000.0, -2000.0])  # no overflow
    np.testing.assert_allclose(rules.log_softmax(x, 1)[0], np.log(rules.softmax(x, 1)[0]))
    g = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    grad, _ = rules.lookup(rules.softmax).vjp(g, rules.softmax(x, 1), x, 1)
    assert np.all(np.isfinite(grad))


def test_second_derivative_through_softmax():
    x = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(F.log_softmax(x, 0)[0], x, create_graph=True)
    (h,) = torch.autograd.grad(g[0], x)
    p = np.exp(x.detach().numpy()) / np.exp(x.detach().numpy()).sum()
    np.testing.assert_allclose(h.numpy(), [-p[0] * (1 - p[0]), p[0] * p[1], p[0] * p[2]], rtol=1e-12)


def test_implicit_softmax_dimension_warns():
    x = torch.tensor([[0.5, 1.0], [2.0, 3.0]])
    with pytest.warns(UserWarning, match="^Implicit dimension choice for softmax has been deprecated. "
                                         "Change the call to include dim=X as an argument.$"):
        out = F.softmax(x)
    np.testing.assert_allclose(out.numpy().sum(axis=1), [1.0, 1.0], rtol=1e-6)


def test_mse_loss_arguments():
    x = torch.tensor([0.5, 1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="^x is not a valid value for reduction$"):
        F.mse_loss(x, torch.ones(3), reduction="x")
    with pytest.warns(UserWarning, match=r"^Using a target size \(torch.Size\(\[2, 3\]\)\) that is different to "
                                         r"the input size \(torch.Size\(\[3\]\)\)"):
        assert repr(F.mse_loss(x, torch.ones(2, 3))) == "tensor(0.4167, grad_fn=<MseLossBackward0>)"


# ------------------------------------------------------------- Parameter


def test_parameter_repr_and_leafness():
    p = torch.nn.Parameter(torch.ones(2))
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert p.is_leaf and p.requires_grad
    assert repr(torch.nn.Parameter(torch.ones(2), requires_grad=False)) == "Parameter containing:\ntensor([1., 1.])"
    (p * 3).sum().backward()
    assert repr(p.grad) == "tensor([3., 3.])"
