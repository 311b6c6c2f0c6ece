"""``torch.optim.Optimizer``: parameter groups, per-parameter state, ``zero_grad``, ``step`` and state dicts.

A step writes each parameter in place under ``no_grad`` (``p.copy_``), so
the parameter's version moves on as in PyTorch: a graph that saved the old
value refuses a later backward instead of using the new one.  The state
(momentum, moving averages, the step count) is kept in tensors of the
parameter's dtype, as PyTorch keeps it, so ``state_dict()`` holds what
PyTorch's holds and ``torch.save`` writes it.  Each algorithm (algorithms.py)
computes its update with numpy in the parameter's dtype, in the order of
operations of PyTorch's single-tensor implementation (the one PyTorch runs
on the CPU): the numbers agree with PyTorch's to rounding.
"""

from __future__ import annotations

import collections
import copy
import functools
import warnings

import numpy as np

from ...tape import Tensor, as_tensor, enable_grad, is_tensor, no_grad, tensor

__all__ = ["Optimizer"]

UNSUPPORTED = {
    "fused": "fused kernels are PyTorch's own; leave fused=None (the numbers are the same)",
    "capturable": "CUDA graph capture needs CUDA; leave capturable=False",
    "differentiable": "a step the tape records is not supported; leave differentiable=False",
}


class Optimizer:
    """Parameter groups (``param_groups``), per-parameter ``state``, ``zero_grad`` and ``step(closure)``.

    A subclass gives its ``defaults`` and ``_update(group, state, p, g)``,
    which returns the parameter's new value (numpy arrays in, numpy array
    out) and updates ``state`` in place; ``_step_counted`` says whether its
    state holds a ``step`` tensor, as PyTorch's does for every algorithm but
    SGD.
    """

    _step_counted = True

    def __init_subclass__(cls, **kwargs):
        """A subclass's own ``step`` (a user's optimizer) also notes that it ran, for the schedulers' warning."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is None:
            return

        @functools.wraps(step)
        def noted(self, *args, **kwargs):
            self._opt_called = True
            return step(self, *args, **kwargs)

        cls.step = noted  # type: ignore[method-assign]

    def __init__(self, params, defaults: dict):
        for key, advice in UNSUPPORTED.items():
            if defaults.get(key):
                raise ValueError(f"astgrad.torch.optim: {key}=True is not supported: {advice}")
        if is_tensor(defaults.get("lr")):
            raise ValueError("astgrad.torch.optim: a Tensor lr is not supported; pass a Python float")
        self.defaults = defaults
        self.state: collections.defaultdict = collections.defaultdict(dict)
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

    def add_param_group(self, param_group: dict) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group).__name__}")
        group = dict(param_group)
        params = group["params"]
        if isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        given = [params] if is_tensor(params) else list(params)
        names = [p[0] for p in given if isinstance(p, tuple)]  # model.named_parameters(): (name, tensor) pairs
        group["params"] = [p[1] if isinstance(p, tuple) else p for p in given]
        if names:
            if len(names) != len(given):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            group["param_names"] = names
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {type(p).__name__}")
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
            if p.is_complex():  # PyTorch updates the real and imaginary parts apart, and its .grad is conjugated
                raise TypeError("astgrad.torch.optim: complex parameters are not supported; optimize the real and "
                                "imaginary parts as two real parameters")
        for key, value in self.defaults.items():
            group.setdefault(key, value)
        if len({id(p) for p in group["params"]}) != len(group["params"]):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        for other in self.param_groups:
            if ("param_names" in group) != ("param_names" in other):
                kind = "with names" if "param_names" in group else "without names"
                raise ValueError(f"all optimizer param groups should be with/without names. cannot add param group "
                                 f"{kind} to the optimizer")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)
        self._add_state(group)

    def _add_state(self, group: dict) -> None:
        """State a parameter has before its first step (Adagrad's running sum); none by default."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear every parameter's ``.grad``: ``None`` (the default), or zeros kept in place with ``False``."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    def step(self, closure=None):
        """One update of every parameter that has a ``.grad``; returns what ``closure`` (re-evaluating the loss)
        returned."""
        self._opt_called = True  # read by the learning rate schedulers, which warn when they step first
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state.get(p, {})
                    if self._step_counted:
                        count = state.setdefault("step", tensor(0.0))
                        count.add_(1)
                    value = p.detach().numpy()
                    g = p.grad.detach().numpy()
                    new = self._update(group, state, value.copy(), -g if group["maximize"] else g)
                    p.copy_(as_tensor(np.asarray(new, dtype=value.dtype)))
                    if state:  # SGD without momentum keeps none, and PyTorch's state then stays empty
                        self.state[p] = state
        return loss

    def _update(self, group: dict, state: dict, p: np.ndarray, g: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _steps(self, state: dict) -> float:
        return float(state["step"].item())

    def state_dict(self) -> dict:
        """``{"state": {index: state}, "param_groups": [group with "params" as indices]}``, as PyTorch packs it.

        The state's tensors are the optimizer's own (not copies), as in PyTorch.
        """
        index: dict = {}
        groups = []
        for group in self.param_groups:
            packed = {key: value for key, value in group.items() if key != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: value for p, value in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take the state and the settings of ``state_dict``'s groups; the parameters stay this optimizer's."""
        state_dict = copy.deepcopy(state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(self.param_groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        by_index: dict = {}
        for group, saved in zip(self.param_groups, saved_groups):
            by_index.update(zip(saved["params"], group["params"]))
        state: collections.defaultdict = collections.defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key not in by_index:
                state[key] = value
                continue
            p = by_index[key]
            state[p] = {name: (item.to(p.dtype) if is_tensor(item) and name != "step" else item)
                        for name, item in value.items()}
        self.state = state
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group:
                saved.setdefault("param_names", group["param_names"])
        self.param_groups = saved_groups

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {key}: {group[key]}\n" for key in sorted(group) if key != "params")
        return text + ")"


def check(condition: bool, message: str) -> None:
    """PyTorch's argument checks: a ``ValueError`` with its message when ``condition`` fails."""
    if not condition:
        raise ValueError(message)


def buffer(state: dict, key: str, like: np.ndarray, fill: float = 0.0) -> np.ndarray:
    """The numpy array of ``state[key]``, a tensor like ``like`` made (filled with ``fill``) at the first call.

    The array shares the tensor's memory: writing into it (``out=`` or
    ``[...] =``) updates the state the optimizer's ``state_dict`` holds.
    """
    if key not in state:
        state[key] = as_tensor(np.full_like(like, fill))
    return state[key].numpy()
