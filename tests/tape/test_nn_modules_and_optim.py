"""torch.nn containers, activations and loss modules; torch.optim's SGD, Adam and RMSprop.

Optimizer steps are compared with the update rules of PyTorch's
documentation written out for two steps (float64 parameters, the gradient
of sum(p**2) / 2, which is p itself).
"""

import math

import numpy as np
import pytest

import astgrad.torch as torch

nn = torch.nn


def test_sequential_registers_numbered_layers_and_prints_them():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1), nn.Flatten(0, 1))
    assert repr(model) == ("Sequential(\n  (0): Linear(in_features=3, out_features=4, bias=True)\n  (1): ReLU()\n"
                           "  (2): Linear(in_features=4, out_features=1, bias=True)\n"
                           "  (3): Flatten(start_dim=0, end_dim=1)\n)")
    assert [n for n, _ in model.named_parameters()] == ["0.weight", "0.bias", "2.weight", "2.bias"]
    assert len(model) == 4 and isinstance(model[1], nn.ReLU) and len(model[:2]) == 2
    x = torch.randn(5, 3)
    expected = nn.functional.linear(nn.functional.relu(nn.functional.linear(x, model[0].weight, model[0].bias)),
                                    model[2].weight, model[2].bias).flatten(0, 1)
    np.testing.assert_array_equal(model(x).detach().numpy(), expected.detach().numpy())


@pytest.mark.parametrize("layer, text, function", [
    (nn.ReLU(), "ReLU()", lambda x: x.relu()),
    (nn.ReLU(inplace=True), "ReLU(inplace=True)", lambda x: x.relu()),
    (nn.LeakyReLU(0.2), "LeakyReLU(negative_slope=0.2)", lambda x: nn.functional.leaky_relu(x, 0.2)),
    (nn.Tanh(), "Tanh()", lambda x: x.tanh()),
    (nn.Sigmoid(), "Sigmoid()", lambda x: x.sigmoid()),
    (nn.Softmax(dim=1), "Softmax(dim=1)", lambda x: x.softmax(1)),
    (nn.LogSoftmax(1), "LogSoftmax(dim=1)", lambda x: x.log_softmax(1)),
    (nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)", lambda x: x.flatten(1)),
])
def test_activation_modules(layer, text, function):
    assert repr(layer) == text
    x = torch.randn(2, 3)
    np.testing.assert_array_equal(layer(x.clone()).numpy(), function(x).numpy())


def test_loss_modules_call_their_functions():
    x, y = torch.randn(3, 4, requires_grad=True), torch.tensor([0, 3, 1])
    assert repr(nn.MSELoss()) == "MSELoss()"
    assert nn.MSELoss(reduction="sum")(x, torch.zeros(3, 4)).item() == pytest.approx((x ** 2).sum().item())
    assert nn.CrossEntropyLoss()(x, y).item() == nn.functional.cross_entropy(x, y).item()
    weight = torch.tensor([1.0, 2.0, 0.5, 1.0])
    assert nn.NLLLoss(weight=weight)(x, y).item() == nn.functional.nll_loss(x, y, weight=weight).item()
    p = torch.tensor([0.2, 0.9])
    assert nn.BCELoss(reduction="none")(p, torch.tensor([0.0, 1.0])).shape == (2,)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"


def leaf(*values):
    return torch.tensor(list(values), dtype=torch.float64, requires_grad=True)


def run(optimizer_type, steps=2, **options):
    """The parameters after ``steps`` steps on sum(p**2) / 2 from [1, -2] (the gradient is p)."""
    p = leaf(1.0, -2.0)
    optimizer = optimizer_type([p], **options)
    for _ in range(steps):
        optimizer.zero_grad()
        ((p * p).sum() / 2).backward()
        optimizer.step()
    return p.detach().numpy()


P0 = np.array([1.0, -2.0])


def test_sgd_steps():
    np.testing.assert_allclose(run(torch.optim.SGD, lr=0.1), P0 * 0.9 * 0.9)
    # momentum 0.5: b1 = g1 = p0; p1 = 0.9 p0; b2 = 0.5 p0 + 0.9 p0; p2 = p1 - 0.1 b2
    np.testing.assert_allclose(run(torch.optim.SGD, lr=0.1, momentum=0.5), 0.9 * P0 - 0.1 * 1.4 * P0)
    # nesterov: step g + 0.5 b; first step 1.5 p0
    p1 = P0 - 0.1 * 1.5 * P0
    b2 = 0.5 * P0 + p1
    np.testing.assert_allclose(run(torch.optim.SGD, lr=0.1, momentum=0.5, nesterov=True),
                               p1 - 0.1 * (p1 + 0.5 * b2))
    np.testing.assert_allclose(run(torch.optim.SGD, steps=1, lr=0.1, weight_decay=1.0), P0 * 0.8)
    np.testing.assert_allclose(run(torch.optim.SGD, steps=1, lr=0.1, maximize=True), P0 * 1.1)


def test_adam_steps():
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    p1 = P0 - lr * P0 / (np.abs(P0) + eps)  # first step: m_hat = g, v_hat = g**2
    m = b1 * (1 - b1) * P0 + (1 - b1) * p1
    v = b2 * (1 - b2) * P0 ** 2 + (1 - b2) * p1 ** 2
    p2 = p1 - lr * (m / (1 - b1 ** 2)) / (np.sqrt(v / (1 - b2 ** 2)) + eps)
    np.testing.assert_allclose(run(torch.optim.Adam, lr=lr), p2, rtol=1e-12)
    # amsgrad keeps the largest v: here the first step's, since |p1| < |p0|
    v_max = np.maximum((1 - b2) * P0 ** 2, v)
    p2_ams = p1 - lr * (m / (1 - b1 ** 2)) / (np.sqrt(v_max / (1 - b2 ** 2)) + eps)
    np.testing.assert_allclose(run(torch.optim.Adam, lr=lr, amsgrad=True), p2_ams, rtol=1e-12)


def test_rmsprop_steps():
    lr, alpha, eps = 0.01, 0.99, 1e-8
    v1 = (1 - alpha) * P0 ** 2
    p1 = P0 - lr * P0 / (np.sqrt(v1) + eps)
    v2 = alpha * v1 + (1 - alpha) * p1 ** 2
    np.testing.assert_allclose(run(torch.optim.RMSprop, lr=lr), p1 - lr * p1 / (np.sqrt(v2) + eps), rtol=1e-12)
    # centered, with momentum 0.5
    a1 = (1 - alpha) * P0
    s1 = P0 / (np.sqrt(v1 - a1 ** 2) + eps)
    q1 = P0 - lr * s1
    a2 = alpha * a1 + (1 - alpha) * q1
    w2 = alpha * v1 + (1 - alpha) * q1 ** 2
    buffer = 0.5 * s1 + q1 / (np.sqrt(w2 - a2 ** 2) + eps)
    np.testing.assert_allclose(run(torch.optim.RMSprop, lr=lr, centered=True, momentum=0.5), q1 - lr * buffer,
                               rtol=1e-10)


def test_a_step_moves_the_version_so_a_stale_graph_refuses_backward():
    p = leaf(1.0, 2.0)
    optimizer = torch.optim.SGD([p], lr=0.1)
    loss = (p * p).sum()
    loss.backward(retain_graph=True)
    optimizer.step()
    assert p._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_zero_grad_step_with_closure_and_errors():
    p = leaf(3.0)
    optimizer = torch.optim.SGD([{"params": [p], "lr": 0.5}], lr=0.1)
    assert optimizer.param_groups[0]["lr"] == 0.5 and optimizer.param_groups[0]["momentum"] == 0

    def closure():
        optimizer.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert optimizer.step(closure).item() == 9.0
    assert p.item() == 0.0  # 3 - 0.5 * 6
    optimizer.zero_grad()
    assert p.grad is None
    untouched = leaf(1.0)
    torch.optim.Adam([untouched]).step()  # no gradient: no change
    assert untouched.item() == 1.0
    with pytest.raises(ValueError, match="^Invalid learning rate: -1$"):
        torch.optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match="^optimizer got an empty parameter list$"):
        torch.optim.Adam([])
    with pytest.raises(ValueError, match="^can't optimize a non-leaf Tensor$"):
        torch.optim.SGD([p * 2], lr=0.1)
    with pytest.raises(TypeError, match="should be an iterable of Tensors or dicts"):
        torch.optim.SGD(p, lr=0.1)


def test_the_optim_tutorial_fits_a_cubic():
    """PyTorch's "optim" example: RMSprop fitting sin(x) with a cubic (200 points, lr 1e-2 and 500 steps where it
    has 2000, 1e-3 and 2000), ending near the least-squares cubic."""
    torch.manual_seed(0)
    x = torch.linspace(-math.pi, math.pi, 200)
    y = torch.sin(x)
    xx = x.unsqueeze(-1).pow(torch.tensor([1, 2, 3]))
    model = nn.Sequential(nn.Linear(3, 1), nn.Flatten(0, 1))
    loss_fn = nn.MSELoss(reduction="sum")
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-2)
    for _ in range(500):
        loss = loss_fn(model(xx), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    least_squares = np.linalg.lstsq(np.c_[np.ones(200), xx.numpy()], y.numpy(), rcond=None)[0]
    np.testing.assert_allclose(model[0].weight.detach().numpy()[0], least_squares[1:], atol=0.005)
    assert abs(model[0].bias.item()) < 0.005
