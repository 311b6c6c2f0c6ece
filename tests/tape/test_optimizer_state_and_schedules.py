"""torch.optim beyond one step: AdamW, Adagrad and Adadelta against their closed forms, state dicts that resume a
run exactly, the arguments refused, and learning-rate schedules against their closed forms.

PyTorch's own numbers are pinned by transcripts/optimizers.py; here the
references are the update rules written out (float64 parameters, the
gradient of sum(p**2) / 2, which is p itself).
"""

import copy
import io
import math
import warnings

import numpy as np
import pytest

import astgrad.torch as torch

P0 = np.array([1.0, -2.0])


def run(optimizer_type, steps=2, **options):
    p = torch.tensor(P0, requires_grad=True)
    optimizer = optimizer_type([p], **options)
    for _ in range(steps):
        optimizer.zero_grad()
        ((p * p).sum() / 2).backward()
        optimizer.step()
    return p.detach().numpy()


def test_adamw_scales_the_parameter_before_the_adam_step():
    lr, wd, eps = 0.1, 0.5, 1e-8
    p1 = P0 * (1 - lr * wd) - lr * P0 / (np.abs(P0) + eps)  # the first Adam step is lr * sign(g)
    np.testing.assert_allclose(run(torch.optim.AdamW, steps=1, lr=lr, weight_decay=wd), p1, rtol=1e-12)
    coupled = P0 - lr * (P0 + wd * P0) / (np.abs(P0 + wd * P0) + eps)
    np.testing.assert_allclose(run(torch.optim.Adam, steps=1, lr=lr, weight_decay=wd), coupled, rtol=1e-12)


def test_adagrad_divides_by_the_root_of_the_summed_squares():
    lr, decay, start, eps = 0.1, 0.5, 0.25, 1e-10
    s1 = start + P0 ** 2
    p1 = P0 - lr * P0 / (np.sqrt(s1) + eps)
    s2 = s1 + p1 ** 2
    p2 = p1 - lr / (1 + decay) * p1 / (np.sqrt(s2) + eps)
    np.testing.assert_allclose(run(torch.optim.Adagrad, lr=lr, lr_decay=decay, initial_accumulator_value=start), p2,
                               rtol=1e-12)


def test_adadelta_scales_by_the_ratio_of_running_roots():
    lr, rho, eps = 1.0, 0.9, 1e-6
    v1 = (1 - rho) * P0 ** 2
    d1 = np.sqrt(eps) / np.sqrt(v1 + eps) * P0
    u1 = (1 - rho) * d1 ** 2
    p1 = P0 - lr * d1
    v2 = rho * v1 + (1 - rho) * p1 ** 2
    d2 = np.sqrt(u1 + eps) / np.sqrt(v2 + eps) * p1
    np.testing.assert_allclose(run(torch.optim.Adadelta, lr=lr, rho=rho), p1 - lr * d2, rtol=1e-12)


@pytest.mark.parametrize("name, options", [
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)), ("Adam", dict(lr=0.05, amsgrad=True)),
    ("AdamW", dict(lr=0.05)), ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adadelta", dict(rho=0.5)),
])
def test_a_run_resumed_from_a_saved_state_dict_continues_bit_for_bit(name, options):
    def make():
        return torch.nn.Parameter(torch.tensor([[0.5, -1.5], [2.0, 0.25]]))

    def steps(p, optimizer, ks):
        for k in ks:
            optimizer.zero_grad()
            ((p * (k + 1)).sin().sum() + (p ** 2).sum()).backward()
            optimizer.step()

    straight = make()
    steps(straight, getattr(torch.optim, name)([straight], **options), range(5))
    first = make()
    optimizer = getattr(torch.optim, name)([first], **options)
    steps(first, optimizer, range(2))
    file = io.BytesIO()
    torch.save({"model": {"p": first.detach()}, "optimizer": optimizer.state_dict()}, file)
    file.seek(0)
    checkpoint = torch.load(file)
    resumed = make()
    with torch.no_grad():
        resumed.copy_(checkpoint["model"]["p"])
    again = getattr(torch.optim, name)([resumed], lr=123.0)  # the settings come from the checkpoint
    again.load_state_dict(checkpoint["optimizer"])
    steps(resumed, again, range(2, 5))
    np.testing.assert_array_equal(resumed.detach().numpy(), straight.detach().numpy())


def test_loading_copies_the_state_and_casts_it_to_the_parameters_dtype():
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0], dtype=torch.float64))
    optimizer = torch.optim.Adam([p])
    p.grad = torch.ones(2, dtype=torch.float64)
    optimizer.step()
    saved = optimizer.state_dict()
    assert saved["state"][0]["exp_avg"] is optimizer.state[p]["exp_avg"]  # PyTorch's state dict is live too
    q = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    other = torch.optim.Adam([q])
    other.load_state_dict(saved)
    assert other.state[q]["exp_avg"].dtype == torch.float32 and other.state[q]["step"].dtype == torch.float32
    saved["state"][0]["exp_avg"].mul_(100)
    np.testing.assert_allclose(other.state[q]["exp_avg"].numpy(), [0.1, 0.1], rtol=1e-6)


def test_zero_grad_keeps_the_gradient_tensor_when_asked():
    p = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([p], lr=0.1)
    (p * 3).sum().backward()
    grad = p.grad
    optimizer.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0]
    optimizer.zero_grad()
    assert p.grad is None


@pytest.mark.parametrize("options, message", [
    (dict(fused=True), "fused=True is not supported"), (dict(capturable=True), "capturable=True is not supported"),
    (dict(differentiable=True), "differentiable=True is not supported"),
    (dict(lr=torch.tensor(0.1)), "a Tensor lr is not supported"),
])
def test_options_that_would_change_what_a_step_means_are_refused(options, message):
    with pytest.raises(ValueError, match=message):
        torch.optim.Adam([torch.nn.Parameter(torch.ones(1))], **options)


def test_complex_parameters_are_refused():
    """PyTorch updates the real and imaginary parts apart; numpy's g * g of a complex g is another number."""
    with pytest.raises(TypeError, match="complex parameters are not supported"):
        torch.optim.Adam([torch.nn.Parameter(torch.tensor([1 + 2j]))])


def test_sets_of_parameters_in_a_group_are_refused():
    with pytest.raises(TypeError, match="ordered collections"):
        torch.optim.SGD([{"params": {torch.nn.Parameter(torch.ones(1))}}], lr=0.1)


def rates(make, epochs=12):
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.4)
    scheduler = make(optimizer)
    seen = [scheduler.get_last_lr()[0]]
    for _ in range(epochs):
        optimizer.step()
        scheduler.step()
        seen.append(optimizer.param_groups[0]["lr"])
    return seen


def test_schedules_follow_their_closed_forms():
    lr = 0.4
    np.testing.assert_allclose(rates(lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5)),
                               [lr * 0.5 ** (e // 3) for e in range(13)], rtol=1e-14)
    np.testing.assert_allclose(rates(lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.8)),
                               [lr * 0.8 ** e for e in range(13)], rtol=1e-14)
    np.testing.assert_allclose(rates(lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [2, 7], 0.1)),
                               [lr * 0.1 ** ((e >= 2) + (e >= 7)) for e in range(13)], rtol=1e-14)
    cosine = [0.01 + (lr - 0.01) * (1 + math.cos(math.pi * e / 5)) / 2 for e in range(13)]  # periodic past T_max
    np.testing.assert_allclose(rates(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 5, eta_min=0.01)),
                               cosine, rtol=1e-12)
    np.testing.assert_allclose(rates(lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 1 / (e + 1))),
                               [lr / (e + 1) for e in range(13)], rtol=1e-14)


def test_a_scheduler_resumes_from_its_state_dict():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, 6)
    for _ in range(3):
        optimizer.step()
        scheduler.step()
    saved_scheduler, saved_optimizer = copy.deepcopy(scheduler.state_dict()), copy.deepcopy(optimizer.state_dict())
    later = [scheduler.step() or scheduler.get_last_lr()[0] for _ in range(3)]
    fresh = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.4)
    fresh.load_state_dict(saved_optimizer)
    resumed = torch.optim.lr_scheduler.CosineAnnealingLR(fresh, 6)
    resumed.load_state_dict(saved_scheduler)
    assert [resumed.step() or resumed.get_last_lr()[0] for _ in range(3)] == later


def test_stepping_the_scheduler_first_warns_once():
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        scheduler.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scheduler.step()


class SignSGD(torch.optim.Optimizer):
    """A user's optimizer, as PyTorch's tutorials write one: its own step, state kept in self.state."""

    def __init__(self, params, lr=0.01):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self.state[p]["n"] = self.state[p].get("n", 0) + 1
                    p.add_(p.grad.sign(), alpha=-group["lr"])


def test_a_users_optimizer_steps_under_a_scheduler_without_the_step_order_warning():
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0, 0.5]))
    optimizer = SignSGD([w], lr=0.1)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            optimizer.zero_grad()
            (w ** 3).sum().backward()
            optimizer.step()
            scheduler.step()
    np.testing.assert_allclose(w.detach().numpy(), [1 - 0.175, -2 - 0.175, 0.5 - 0.175], rtol=1e-6)
    copied = copy.deepcopy(optimizer)  # the noted step is the class's: a copy steps its own parameters
    copied.param_groups[0]["params"][0].grad = torch.ones(3)
    copied.step()
    assert w.tolist() != copied.param_groups[0]["params"][0].tolist() and optimizer.state_dict()["state"][0]["n"] == 3
