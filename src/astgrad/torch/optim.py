"""``torch.optim``: ``SGD``, ``Adam`` and ``RMSprop``, with the update rules of PyTorch's documentation.

A step writes each parameter in place under ``no_grad`` (``p.sub_``), so the
parameter's version moves on as in PyTorch: a graph that saved the old value
refuses a later backward instead of using the new one.  The state (momentum,
moving averages) is kept as numpy arrays in the parameter's dtype.
"""

from __future__ import annotations

import numpy as np

from ..tape import Tensor, as_tensor, enable_grad, is_tensor, no_grad

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop"]


class Optimizer:
    """Parameter groups (``param_groups``), per-parameter ``state``, ``zero_grad`` and ``step(closure)``."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict = {}
        self.param_groups: list = []
        if is_tensor(params):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {params.type()}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if is_tensor(params) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor) or not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    g = p.grad.detach().numpy()
                    g = -g if group.get("maximize", False) else g
                    value = p.detach().numpy()
                    if group.get("weight_decay", 0):
                        g = g + group["weight_decay"] * value
                    state = self.state.setdefault(p, {})
                    state["step"] = state.get("step", 0) + 1
                    p.sub_(as_tensor(np.asarray(self._update(group, state, g, value), dtype=value.dtype)))
        return loss

    def _update(self, group: dict, state: dict, g: np.ndarray, value: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join(lines) + "\n)"


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


class SGD(Optimizer):
    """``b = momentum b + (1 - dampening) g`` (``b = g`` at the first step); ``p -= lr (g + momentum b)`` with
    ``nesterov``, else ``p -= lr b`` (``p -= lr g`` without momentum)."""

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False):
        _check(lr >= 0, f"Invalid learning rate: {lr}")
        _check(momentum >= 0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _update(self, group, state, g, value):
        momentum = group["momentum"]
        if momentum:
            if "momentum_buffer" in state:
                state["momentum_buffer"] = momentum * state["momentum_buffer"] + (1 - group["dampening"]) * g
            else:
                state["momentum_buffer"] = g.copy()
            g = g + momentum * state["momentum_buffer"] if group["nesterov"] else state["momentum_buffer"]
        return group["lr"] * g


class Adam(Optimizer):
    """Moving averages ``m``, ``v`` of the gradient and its square; ``p -= lr m_hat / (sqrt(v_hat) + eps)``.

    ``m_hat`` and ``v_hat`` undo the averages' bias towards zero; with
    ``amsgrad`` the largest ``v`` so far replaces ``v``.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False):
        _check(lr >= 0, f"Invalid learning rate: {lr}")
        _check(eps >= 0, f"Invalid epsilon value: {eps}")
        _check(0 <= betas[0] < 1, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0 <= betas[1] < 1, f"Invalid beta parameter at index 1: {betas[1]}")
        _check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, group, state, g, value):
        beta1, beta2 = group["betas"]
        step = state["step"]
        state["exp_avg"] = beta1 * state.get("exp_avg", 0) + (1 - beta1) * g
        state["exp_avg_sq"] = beta2 * state.get("exp_avg_sq", 0) + (1 - beta2) * g * g
        second = state["exp_avg_sq"]
        if group["amsgrad"]:
            second = state["max_exp_avg_sq"] = np.maximum(state.get("max_exp_avg_sq", second), second)
        denominator = np.sqrt(second) / np.sqrt(1 - beta2 ** step) + group["eps"]
        return group["lr"] / (1 - beta1 ** step) * state["exp_avg"] / denominator


class RMSprop(Optimizer):
    """``v = alpha v + (1 - alpha) g**2``; ``p -= lr g / (sqrt(v) + eps)`` (``v - mean(g)**2`` when ``centered``;
    with ``momentum`` the steps are averaged in a buffer)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
                 maximize=False):
        _check(lr >= 0, f"Invalid learning rate: {lr}")
        _check(eps >= 0, f"Invalid epsilon value: {eps}")
        _check(momentum >= 0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        _check(alpha >= 0, f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _update(self, group, state, g, value):
        alpha = group["alpha"]
        state["square_avg"] = alpha * state.get("square_avg", 0) + (1 - alpha) * g * g
        average = state["square_avg"]
        if group["centered"]:
            state["grad_avg"] = alpha * state.get("grad_avg", 0) + (1 - alpha) * g
            average = average - state["grad_avg"] ** 2
        scaled = g / (np.sqrt(average) + group["eps"])
        if group["momentum"] > 0:
            state["momentum_buffer"] = group["momentum"] * state.get("momentum_buffer", 0) + scaled
            return group["lr"] * state["momentum_buffer"]
        return group["lr"] * scaled
