"""torch.nn's layers and losses: F.linear, leaky_relu, nll_loss, cross_entropy, binary_cross_entropy, nn.Linear.

Gradients against central differences and closed forms, node names as
PyTorch names them, printed forms and PyTorch's errors for bad input.
"""

import numpy as np
import pytest

import astgrad.torch as torch
from _taped import check_grad, mask_addresses

F = torch.nn.functional
RNG = np.random.default_rng(3)


def name(t):
    return type(t.grad_fn).__name__


# ------------------------------------------------------------------- linear


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 2, 3), (2, 1, 2, 3)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_gradients_match_finite_differences(shape, with_bias):
    arrays = [RNG.normal(size=shape), RNG.normal(size=(4, 3))] + ([RNG.normal(size=4)] if with_bias else [])
    grads = check_grad(lambda x, w, *b: F.linear(x, w, *b), *arrays)
    if with_bias:  # the bias gets the output's gradient summed over the batch: checked above, and shaped (4,)
        assert grads[2].shape == (4,)


@pytest.mark.parametrize("shape, with_bias, expected", [
    ((2, 3), True, "AddmmBackward0"), ((3,), True, "ViewBackward0"), ((2, 2, 3), True, "ViewBackward0"),
    ((2, 3), False, "MmBackward0"), ((3,), False, "SqueezeBackward4"), ((2, 2, 3), False, "UnsafeViewBackward0"),
])
def test_linear_node_names(shape, with_bias, expected):
    x = torch.ones(*shape, requires_grad=True)
    w = torch.ones(4, 3)
    out = F.linear(x, w, torch.zeros(4)) if with_bias else F.linear(x, w)
    assert name(out) == expected
    assert out.shape == shape[:-1] + (4,)


def test_linear_values_and_errors():
    x = torch.tensor([[1.0, 2.0, 3.0]])
    w = torch.tensor([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]])
    assert repr(F.linear(x, w, torch.tensor([0.5, 1.0]))) == "tensor([[-1.5000,  4.0000]])"
    with pytest.raises(RuntimeError, match=r"^mat1 and mat2 shapes cannot be multiplied \(1x3 and 2x3\)$"):
        F.linear(x, w.t())
    with pytest.raises(RuntimeError, match="linear takes a 2-D weight"):
        F.linear(x, torch.ones(3))


def test_nn_linear_is_a_module_with_two_parameters():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    assert repr(layer) == "Linear(in_features=3, out_features=2, bias=True)"
    assert repr(torch.nn.Linear(3, 2, bias=False)) == "Linear(in_features=3, out_features=2, bias=False)"
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    assert layer.weight.shape == (2, 3) and layer.bias.shape == (2,)
    assert all(p.requires_grad and p.is_leaf for p in layer.parameters())
    bound = 1 / np.sqrt(3)
    assert np.all(np.abs(layer.weight.detach().numpy()) <= bound)
    out = layer(torch.ones(4, 3))
    assert name(out) == "AddmmBackward0"
    out.sum().backward()
    np.testing.assert_allclose(layer.weight.grad.numpy(), np.full((2, 3), 4.0))
    np.testing.assert_allclose(layer.bias.grad.numpy(), [4.0, 4.0])
    layer.zero_grad()
    assert layer.weight.grad is None


def test_a_module_registers_its_layers_and_prints_them():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.hidden = torch.nn.Linear(3, 4)
            self.out = torch.nn.Linear(4, 1, bias=False)
            self.scale = 2.0

        def forward(self, x):
            return self.out(F.leaky_relu(self.hidden(x))) * self.scale

    net = Net()
    assert repr(net) == ("Net(\n  (hidden): Linear(in_features=3, out_features=4, bias=True)\n"
                         "  (out): Linear(in_features=4, out_features=1, bias=False)\n)")
    assert [n for n, _ in net.named_parameters()] == ["hidden.weight", "hidden.bias", "out.weight"]
    x = RNG.normal(size=(5, 3))
    loss = net(torch.tensor(x)).sum()
    loss.backward()
    w1, b1, w2 = (p.detach().numpy().astype(np.float64) for p in net.parameters())
    h = x @ w1.T + b1
    slope = np.where(h > 0, 1.0, 0.01)
    np.testing.assert_allclose(net.out.weight.grad.numpy(), 2 * (h * slope).sum(0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(net.hidden.bias.grad.numpy(), 2 * (slope * w2).sum(0), rtol=1e-5)
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        net.missing


def test_parameter_prints_as_pytorch_in_repr_and_in_print():
    p = torch.nn.Parameter(torch.ones(2))
    assert repr(p) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    assert str(p) == repr(p)
    assert str(torch.nn.Parameter(torch.ones(2), requires_grad=False)) == "Parameter containing:\ntensor([1., 1.])"


# --------------------------------------------------------------- leaky_relu


def test_leaky_relu_values_names_and_gradient_at_zero():
    x = torch.tensor([-2.0, 0.0, 3.0], requires_grad=True)
    y = F.leaky_relu(x)
    assert repr(y) == "tensor([-0.0200,  0.0000,  3.0000], grad_fn=<LeakyReluBackward0>)"
    y.sum().backward()
    assert repr(x.grad) == "tensor([0.0100, 0.0100, 1.0000])"  # PyTorch takes the slope at 0
    z = x * 1
    F.leaky_relu(z, 0.5, inplace=True)
    assert repr(z) == "tensor([-1.,  0.,  3.], grad_fn=<LeakyReluBackward1>)"
    check_grad(lambda a: F.leaky_relu(a, 0.2), RNG.normal(size=(3, 4)))


# ------------------------------------------------------------------- losses


def test_nll_loss_closed_form_and_names():
    scores = RNG.normal(size=(4, 3))
    target = np.array([2, 0, 1, 2])
    x = torch.tensor(scores, requires_grad=True)
    loss = F.nll_loss(x, torch.tensor(target))
    assert name(loss) == "NllLossBackward0"
    np.testing.assert_allclose(loss.item(), -scores[np.arange(4), target].mean())
    loss.backward()
    expected = np.zeros((4, 3))
    expected[np.arange(4), target] = -0.25
    np.testing.assert_array_equal(x.grad.numpy(), expected)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_with_weights_and_ignored_targets(reduction):
    target = torch.tensor([2, -100, 1, 0])
    weight = torch.tensor([0.5, 2.0, 3.0])
    grads = check_grad(lambda x: F.nll_loss(x, target, weight=weight, reduction=reduction), RNG.normal(size=(4, 3)))
    assert np.all(grads[0].numpy()[1] == 0)  # the ignored sample gets nothing
    x = torch.tensor([[0.0, -1.0, -2.0], [0.0, 0.0, 0.0], [-3.0, -4.0, -5.0], [-6.0, 0.0, 0.0]])
    got = F.nll_loss(x, target, weight=weight, reduction=reduction)
    per_sample = np.array([2.0 * 3.0, 0.0, 4.0 * 2.0, 6.0 * 0.5])
    expected = {"none": per_sample, "sum": per_sample.sum(), "mean": per_sample.sum() / (3.0 + 2.0 + 0.5)}[reduction]
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-6)


def test_nll_loss_of_one_sample_and_of_spatial_targets():
    check_grad(lambda x: F.nll_loss(x, torch.tensor(1)), RNG.normal(size=3))
    check_grad(lambda x: F.nll_loss(x, torch.tensor([[0, 2], [1, 1]])), RNG.normal(size=(2, 3, 2)))


def test_cross_entropy_is_nll_of_log_softmax():
    scores = RNG.normal(size=(3, 4))
    target = np.array([3, 0, 1])
    x = torch.tensor(scores, requires_grad=True)
    loss = F.cross_entropy(x, torch.tensor(target))
    assert name(loss) == "NllLossBackward0"
    assert type(loss.grad_fn.next_functions[0][0]).__name__ == "LogSoftmaxBackward0"
    loss.backward()
    soft = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
    onehot = np.eye(4)[target]
    np.testing.assert_allclose(loss.item(), -np.log(soft[np.arange(3), target]).mean(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), (soft - onehot) / 3, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_with_probability_targets(reduction):
    probabilities = torch.softmax(torch.tensor(RNG.normal(size=(3, 4))), 1)
    check_grad(lambda x: F.cross_entropy(x, probabilities, reduction=reduction), RNG.normal(size=(3, 4)))
    check_grad(lambda x: F.cross_entropy(x, torch.tensor([1, 0, 3]), reduction=reduction,
                                         weight=torch.tensor([1.0, 2.0, 0.5, 1.5])), RNG.normal(size=(3, 4)))


def test_binary_cross_entropy_closed_form_and_target_gradient():
    p, y = RNG.uniform(0.1, 0.9, size=5), RNG.uniform(0, 1, size=5)
    x = torch.tensor(p, requires_grad=True)
    t = torch.tensor(y, requires_grad=True)
    loss = F.binary_cross_entropy(x, t)
    assert name(loss) == "BinaryCrossEntropyBackward0"
    np.testing.assert_allclose(loss.item(), -(y * np.log(p) + (1 - y) * np.log(1 - p)).mean(), rtol=1e-12)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), (p - y) / (p * (1 - p)) / 5, rtol=1e-12)
    np.testing.assert_allclose(t.grad.numpy(), (np.log(1 - p) - np.log(p)) / 5, rtol=1e-12)
    for reduction in ("sum", "none"):
        check_grad(lambda a, b: F.binary_cross_entropy(a, b, weight=torch.tensor([1.0, 2.0, 3.0]),
                                                       reduction=reduction), RNG.uniform(0.1, 0.9, size=(2, 3)),
                   RNG.uniform(0, 1, size=(2, 3)))


def test_binary_cross_entropy_clamps_its_logarithms_as_pytorch():
    x = torch.tensor([0.0, 1.0], requires_grad=True)
    loss = F.binary_cross_entropy(x, torch.tensor([1.0, 0.0]), reduction="none")
    assert repr(loss) == "tensor([100., 100.], grad_fn=<BinaryCrossEntropyBackward0>)"
    loss.sum().backward()
    assert repr(x.grad) == "tensor([-1.0000e+12,  1.0000e+12])"


def test_losses_refuse_bad_input_in_pytorchs_words():
    x = torch.zeros(2, 3, requires_grad=True)
    with pytest.raises(IndexError, match="^Target 3 is out of bounds.$"):
        F.nll_loss(x, torch.tensor([3, 0]))
    with pytest.raises(RuntimeError, match="^expected scalar type Long but found Float$"):
        F.nll_loss(x, torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match=r"^Expected input batch_size \(2\) to match target batch_size \(3\).$"):
        F.cross_entropy(x, torch.tensor([1, 0, 1]))
    with pytest.raises(RuntimeError, match="^all elements of input should be between 0 and 1$"):
        F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match=r"^Using a target size \(torch.Size\(\[1\]\)\) that is different to the "
                                         r"input size \(torch.Size\(\[2\]\)\) is deprecated"):
        F.binary_cross_entropy(torch.tensor([0.5, 0.5]), torch.tensor([1.0]))
    with pytest.raises(ValueError, match="^avg is not a valid value for reduction$"):
        F.nll_loss(x, torch.tensor([1, 0]), reduction="avg")
    with pytest.raises(RuntimeError, match="^the derivative for 'weight' is not implemented.$"):
        F.nll_loss(x, torch.tensor([1, 0]), weight=torch.ones(3, requires_grad=True))
    with pytest.raises(NotImplementedError, match="label_smoothing"):
        F.cross_entropy(x, torch.tensor([1, 0]), label_smoothing=0.1)


def test_legacy_reduction_arguments_warn_and_choose_the_reduction():
    x = torch.tensor([[0.0, -1.0]])
    with pytest.warns(UserWarning, match="^size_average and reduce args will be deprecated, please use "
                                         "reduction='sum' instead.$"):
        assert F.nll_loss(x, torch.tensor([1]), size_average=False).item() == 1.0
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.mse_loss(torch.ones(2), torch.zeros(2), reduce=False).shape == (2,)


def test_losses_print_with_their_nodes():
    x = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    assert mask_addresses(repr(F.cross_entropy(x, torch.tensor([2])))) == (
        "tensor(0.4076, grad_fn=<NllLossBackward0>)")
