"""The update rules: ``SGD``, ``Adam``, ``AdamW``, ``RMSprop``, ``Adagrad`` and ``Adadelta``.

Each ``_update`` is PyTorch's single-tensor step for one parameter written
with numpy, operation for operation (``lerp`` as PyTorch's kernel computes
it, ``addcdiv`` as ``p + value * a / b``), on arrays of the parameter's
dtype; Python numbers join them as PyTorch's scalars do, in that dtype.
``g`` arrives negated under ``maximize``; ``state["step"]`` has already been
counted.  The state's arrays are written in place (``out=``, ``[...] =``),
so ``state_dict()`` sees them.
"""

from __future__ import annotations

import numpy as np

from ...tape import as_tensor, tensor
from .optimizer import Optimizer, buffer, check

__all__ = ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta"]


def lerp(start: np.ndarray, end: np.ndarray, weight: float) -> np.ndarray:
    """``start + weight (end - start)``, from the nearer end as PyTorch's kernel computes it."""
    if abs(weight) < 0.5:
        return start + weight * (end - start)
    return end - (end - start) * (1 - weight)


class SGD(Optimizer):
    """``b = momentum b + (1 - dampening) g`` (``b = g`` at the first step); ``p -= lr (g + momentum b)`` with
    ``nesterov``, else ``p -= lr b`` (``p -= lr g`` without momentum)."""

    _step_counted = False

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        check(lr >= 0, f"Invalid learning rate: {lr}")
        check(momentum >= 0, f"Invalid momentum value: {momentum}")
        check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def _update(self, group, state, p, g):
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p
        momentum = group["momentum"]
        if momentum != 0:
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = as_tensor(g.copy())
                b = state["momentum_buffer"].numpy()
            else:
                b = state["momentum_buffer"].numpy()
                b[...] = b * momentum + (1 - group["dampening"]) * g
            g = g + momentum * b if group["nesterov"] else b
        return p + -group["lr"] * g


class Adam(Optimizer):
    """Moving averages ``m``, ``v`` of the gradient and its square; ``p -= lr m_hat / (sqrt(v_hat) + eps)``.

    ``m_hat`` and ``v_hat`` undo the averages' bias towards zero; with
    ``amsgrad`` the largest ``v`` so far replaces ``v``.  The weight decay
    adds ``weight_decay p`` to the gradient, or with
    ``decoupled_weight_decay`` (AdamW) scales ``p`` by ``1 - lr weight_decay``
    first.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        check(lr >= 0, f"Invalid learning rate: {lr}")
        check(eps >= 0, f"Invalid epsilon value: {eps}")
        check(0 <= betas[0] < 1, f"Invalid beta parameter at index 0: {betas[0]}")
        check(0 <= betas[1] < 1, f"Invalid beta parameter at index 1: {betas[1]}")
        check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _update(self, group, state, p, g):
        m, v = buffer(state, "exp_avg", p), buffer(state, "exp_avg_sq", p)
        lr, weight_decay, (beta1, beta2) = group["lr"], group["weight_decay"], group["betas"]
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                p = p * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p
        m[...] = lerp(m, g, 1 - beta1)
        v[...] = v * beta2 + (1 - beta2) * g * g
        step = self._steps(state)
        step_size = lr / (1 - beta1 ** step)
        bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
        if group["amsgrad"]:
            largest = buffer(state, "max_exp_avg_sq", p)
            np.maximum(largest, v, out=largest)
            denominator = np.sqrt(largest) / bias_correction2_sqrt + group["eps"]
        else:
            denominator = np.sqrt(v) / bias_correction2_sqrt + group["eps"]
        return p + -step_size * m / denominator


class AdamW(Adam):
    """Adam with the weight decay decoupled from the gradient (``weight_decay=1e-2`` by default)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """``v = alpha v + (1 - alpha) g**2``; ``p -= lr g / (sqrt(v) + eps)`` (``v - mean(g)**2`` when ``centered``;
    with ``momentum`` the steps are averaged in a buffer)."""

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check(lr >= 0, f"Invalid learning rate: {lr}")
        check(eps >= 0, f"Invalid epsilon value: {eps}")
        check(momentum >= 0, f"Invalid momentum value: {momentum}")
        check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        check(alpha >= 0, f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def _update(self, group, state, p, g):
        alpha, momentum = group["alpha"], group["momentum"]
        square_avg = buffer(state, "square_avg", p)  # made in PyTorch's order, which state_dict() shows
        momentum_buffer = buffer(state, "momentum_buffer", p) if momentum > 0 else None
        grad_avg = buffer(state, "grad_avg", p) if group["centered"] else None
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p
        square_avg[...] = square_avg * alpha + (1 - alpha) * g * g
        if grad_avg is not None:
            grad_avg[...] = lerp(grad_avg, g, 1 - alpha)
            average = np.sqrt(square_avg + -1 * grad_avg * grad_avg)
        else:
            average = np.sqrt(square_avg)
        average = average + group["eps"]
        if momentum_buffer is not None:
            momentum_buffer[...] = momentum_buffer * momentum + g / average
            return p + -group["lr"] * momentum_buffer
        return p + -group["lr"] * g / average


class Adagrad(Optimizer):
    """``s += g**2``; ``p -= lr / (1 + (step - 1) lr_decay) g / (sqrt(s) + eps)``, ``s`` starting at
    ``initial_accumulator_value``."""

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        check(lr >= 0, f"Invalid learning rate: {lr}")
        check(lr_decay >= 0, f"Invalid lr_decay value: {lr_decay}")
        check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        check(initial_accumulator_value >= 0,
              f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        check(eps >= 0, f"Invalid epsilon value: {eps}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))

    def _add_state(self, group):
        """As PyTorch, the running sum exists from the start: ``state_dict()`` shows it before any step."""
        for p in group["params"]:
            state = self.state[p]
            state["step"] = tensor(0.0)
            state["sum"] = as_tensor(np.full_like(p.detach().numpy(), group["initial_accumulator_value"]))

    def _update(self, group, state, p, g):
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p
        rate = group["lr"] / (1 + (self._steps(state) - 1) * group["lr_decay"])
        total = state["sum"].numpy()
        total[...] = total + 1 * g * g
        return p + -rate * g / (np.sqrt(total) + group["eps"])


class Adadelta(Optimizer):
    """``v = rho v + (1 - rho) g**2``; ``d = sqrt(u + eps) / sqrt(v + eps) g``; ``u = rho u + (1 - rho) d**2``;
    ``p -= lr d``."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        check(lr >= 0, f"Invalid learning rate: {lr}")
        check(0 <= rho <= 1, f"Invalid rho value: {rho}")
        check(eps >= 0, f"Invalid epsilon value: {eps}")
        check(weight_decay >= 0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      capturable=capturable, foreach=foreach, differentiable=differentiable))

    def _update(self, group, state, p, g):
        rho, eps = group["rho"], group["eps"]
        square_avg, acc_delta = buffer(state, "square_avg", p), buffer(state, "acc_delta", p)
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * p
        square_avg[...] = square_avg * rho + (1 - rho) * g * g
        delta = np.sqrt(acc_delta + eps) / np.sqrt(square_avg + eps) * g
        acc_delta[...] = acc_delta * rho + (1 - rho) * delta * delta
        return p + -group["lr"] * delta
