"""Gradients at ties and kinks (6.1), grad dtypes (3), grad modes (9) and torch.nn basics."""

import warnings

import numpy as np
import pytest

import astgrad.torch as torch
from astgrad import rules
from _taped import check_grad

F = torch.nn.functional


def grad_of(values, f, dtype=None):
    x = torch.tensor(values, dtype=dtype, requires_grad=True)
    f(x).sum().backward()
    return repr(x.grad)


# ------------------------------------------------------------------ 6.1


@pytest.mark.parametrize("values, f, expected", [
    ([1.0, 3.0, 3.0], lambda x: x.max(), "tensor([0.0000, 0.5000, 0.5000])"),
    ([5.0, 5.0, 5.0, 5.0], lambda x: x.max(), "tensor([0.2500, 0.2500, 0.2500, 0.2500])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: x.max(), "tensor([[0.3333, 0.3333],\n        [0.0000, 0.3333]])"),
    ([1.0, 3.0, 3.0], lambda x: x.min(), "tensor([1., 0., 0.])"),
    ([1.0, 3.0, 3.0], lambda x: x.max(dim=0).values, "tensor([0., 1., 0.])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: x.max(dim=1).values, "tensor([[1., 0.],\n        [0., 1.]])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: torch.amax(x, dim=1), "tensor([[0.5000, 0.5000],\n        [0.0000, 1.0000]])"),
    ([-1.0, 0.0, 2.0], lambda x: x.abs(), "tensor([-1.,  0.,  1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.relu(), "tensor([0., 0., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: F.relu(x), "tensor([0., 0., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(min=0), "tensor([0., 1., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(0, 2), "tensor([0., 1., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(max=0), "tensor([1., 1., 0.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.sign(), "tensor([0., 0., 0.])"),
    ([0.0, 4.0], lambda x: x.sqrt(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: x ** 0.5, "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: x.sqrt() * 0, "tensor([nan, 0.])"),
    ([0.0, 4.0], lambda x: x.log(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: x ** 2, "tensor([0., 8.])"),
    ([0.0, 4.0], lambda x: x ** 0, "tensor([0., 0.])"),
    ([0.0, 4.0], lambda x: x ** 1.5, "tensor([0., 3.])"),
    ([0.0, 0.0, 0.0], lambda x: x.norm(), "tensor([0., 0., 0.])"),
    ([3.0, 4.0], lambda x: x.norm(), "tensor([0.6000, 0.8000])"),
    ([-1.0, 4.0], lambda x: torch.where(x > 0, x.sqrt(), 0), "tensor([   nan, 0.2500])"),
    ([0.0], lambda x: x / x, "tensor([nan])"),
])
def test_ties_kinks_and_singular_points(values, f, expected):
    with np.errstate(all="ignore"):
        assert grad_of(values, f) == expected


def test_forward_values_at_singular_points():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    assert repr(x.sqrt()) == "tensor([0., 2.], grad_fn=<SqrtBackward0>)"
    assert repr(x.log()) == "tensor([  -inf, 1.3863], grad_fn=<LogBackward0>)"
    values, indices = torch.tensor([1.0, 3.0, 3.0], requires_grad=True).max(dim=0)
    assert repr(values) == "tensor(3., grad_fn=<MaxBackward0>)" and repr(indices) == "tensor(1)"


def test_maximum_gives_half_to_each_side_on_equality():
    z, w = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 0.0], requires_grad=True)
    torch.maximum(z, w).sum().backward()
    assert repr(z.grad) == "tensor([0.5000, 1.0000])" and repr(w.grad) == "tensor([0.5000, 0.0000])"
    z.grad = w.grad = None
    torch.max(z, w).sum().backward()
    assert repr(z.grad) == "tensor([0.5000, 1.0000])" and repr(w.grad) == "tensor([0.5000, 0.0000])"


# --------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dtype, expected", [
    (torch.float32, "tensor([2., 2.])"),
    (torch.float64, "tensor([2., 2.], dtype=torch.float64)"),
    (torch.float16, "tensor([2., 2.], dtype=torch.float16)"),
])
def test_a_grad_has_its_leafs_dtype(dtype, expected):
    assert grad_of([1.0, 1.0], lambda x: x.double() * 2, dtype=dtype) == expected


def test_float32_leaf_in_a_float64_computation_gets_a_float32_grad():
    x = torch.ones(2, requires_grad=True)
    (x * torch.ones(2, dtype=torch.float64) * 2).sum().backward()
    assert x.grad.dtype == torch.float32
    s = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    (x * s).sum().backward()
    assert repr(s.grad) == "tensor(2., dtype=torch.float64)"


# ----------------------------------------------------------------- modes


def test_is_grad_enabled_nesting_and_restoring():
    x = torch.ones(2, requires_grad=True)
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        assert repr(x * 2) == "tensor([2., 2.])"
        with torch.no_grad():
            assert not torch.is_grad_enabled()
        with torch.enable_grad():
            assert torch.is_grad_enabled()
            assert repr(x * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    with pytest.raises(KeyError):
        with torch.no_grad():
            raise KeyError
    assert torch.is_grad_enabled()


def test_inference_mode_behaves_like_no_grad():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
        assert not torch.is_grad_enabled()
    assert not y.requires_grad and repr(y) == "tensor([2., 2.])"
    assert x.requires_grad and torch.is_grad_enabled()
    with torch.inference_mode(False):
        assert (x * 2).requires_grad

    @torch.inference_mode()
    def double(t):
        return t * 2

    assert not double(x).requires_grad and double.__name__ == "double"


def test_set_grad_enabled_as_call_and_context():
    x = torch.ones(2, requires_grad=True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    mode = torch.set_grad_enabled(False)
    try:
        assert not torch.is_grad_enabled()
        assert repr(mode) == "torch.autograd.grad_mode.set_grad_enabled(mode=False)"
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()


def test_decorators_bare_and_called_keep_the_name():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad
    def bare(t):
        return t * 2

    @torch.no_grad()
    def called(t):
        return t * 2

    @torch.enable_grad()
    def recorded(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert (bare.__name__, called.__name__) == ("bare", "called")
    with torch.no_grad():
        assert recorded(x).requires_grad


def test_requires_grad_propagation():
    a, b = torch.ones(2, requires_grad=True), torch.ones(2)
    assert (a + b).requires_grad and not (b + b).requires_grad and (a * 0).requires_grad
    assert torch.cat([a, b]).requires_grad and (a @ a).requires_grad and a.clone().requires_grad
    assert not (a > 0).requires_grad and not a.argmax().requires_grad and not a.long().requires_grad
    assert not torch.where(a > 0, b, b).requires_grad and not torch.zeros_like(a).requires_grad


# ------------------------------------------------------------ functional


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
