"""Grad modes: whether operations are recorded, per thread.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode``
work as context managers and as decorators (bare or called), and restore the
previous mode on exit, also when the block raises.
"""

from __future__ import annotations

import functools
import inspect
import threading

__all__ = ["is_grad_enabled", "is_inference_mode_enabled", "no_grad", "enable_grad", "set_grad_enabled",
           "inference_mode"]


class _State(threading.local):
    enabled = True  # each thread starts with grad enabled; a class default is read without a miss
    numpy_methods = False  # array methods keep numpy's meaning (check_grads running numpy code)
    inference = False  # inside an inference_mode() block
    in_backward = False  # a rule is computing gradients with create_graph: its numbers are PyTorch's Scalars
    fresh_version: type | None = None  # inside a looping vmap's example: the version-counter class of tensors made in it
    transforms = 0  # how many torch.func transformations are running a user's function (backward() is refused)
    randomness: str | None = None  # inside a looping vmap (or jacfwd): its randomness, "error", "same" or "different"
    partial_backward = 0  # inside autograd.grad or backward(inputs=...): a reentrant checkpoint refuses to run


_state = _State()

WRITE_REFUSED = ("astgrad: vmap runs the function once per example, so an in-place write into a tensor made "
                 "outside the example (a captured tensor, a parameter, or the mapped input itself) would happen "
                 "once per example instead of once; write the out-of-place form (y = x + 1 rather than x.add_(1)) "
                 "or write only into tensors the function makes")


def check_write(tensor) -> None:
    """Inside a looping vmap's example (module _examples), refuse a write into a tensor the example did not make."""
    fresh = _state.fresh_version
    if fresh is not None and type(tensor._version_counter) is not fresh:
        raise RuntimeError(WRITE_REFUSED)
#: the active forward_ad.dual_level()'s token, or None (module _dual; global, as PyTorch's levels are)
dual_level: list = [None]


def is_grad_enabled() -> bool:
    """True when operations on tensors that require grad are recorded."""
    return _state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside an ``inference_mode()`` block (or a function it decorates)."""
    return _state.inference


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class numpy_methods:
    """Inside the block, Tensor methods whose meaning differs mean what numpy's mean.

    ``x.var()`` is numpy's (``ddof=0``), ``x.max(0)`` returns values only,
    ``x.size`` is a number... so numpy code taped for cross-checking computes
    what it computes on arrays.  Per thread, like the grad mode.
    """

    def __enter__(self):
        self._prev = _state.numpy_methods
        _state.numpy_methods = True

    def __exit__(self, exc_type, exc, tb):
        _state.numpy_methods = self._prev
        return False


class _GradMode:
    """Base of the mode switches: context manager and decorator."""

    _mode: bool

    def __new__(cls, func=None, *args, **kwargs):
        self = super().__new__(cls)
        if callable(func) and cls is not set_grad_enabled:  # bare decorator: @no_grad
            self.__init__()  # type: ignore[misc]  # cls is this class or no_grad/enable_grad, whose __init__ takes no argument
            return self(func)
        return self

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set_enabled(self._mode)
        return None

    def __exit__(self, exc_type, exc, tb):
        _set_enabled(self._prev)
        return False

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            raise TypeError(f"{type(self).__name__} cannot decorate the generator function {func.__name__}")
        mode_type = type(self)
        args = self._args()

        @functools.wraps(func)
        def wrapper(*a, **kw):
            with mode_type(*args):
                return func(*a, **kw)

        return wrapper

    def _args(self):
        return ()


class no_grad(_GradMode):
    """Do not record operations inside the block (or the decorated function)."""

    _mode = False


class enable_grad(_GradMode):
    """Record operations again, for example inside a ``no_grad`` block."""

    _mode = True


class inference_mode(_GradMode):
    """Like ``no_grad`` for this engine: nothing is recorded."""

    def __init__(self, mode: bool = True):
        self._inference = bool(mode)
        self._mode = not self._inference

    def __enter__(self):
        self._prev_inference = _state.inference
        _state.inference = self._inference
        return super().__enter__()

    def __exit__(self, exc_type, exc, tb):
        _state.inference = self._prev_inference
        return super().__exit__(exc_type, exc, tb)

    def _args(self):
        return (self._inference,)


class set_grad_enabled(_GradMode):
    """Set the grad mode: as a call it applies at once, as a context it is undone on exit."""

    def __init__(self, mode: bool):
        self._prev = is_grad_enabled()
        self._mode = bool(mode)
        _set_enabled(self._mode)

    def __enter__(self):
        return None

    def __exit__(self, exc_type, exc, tb):
        _set_enabled(self._prev)
        return False

    def _args(self):
        return (self._mode,)

    def __call__(self, func):
        _set_enabled(self._prev)  # used as a decorator: do not change the mode now
        return super().__call__(func)

    def __repr__(self):
        return f"torch.autograd.grad_mode.set_grad_enabled(mode={self._mode})"


no_grad.__module__ = enable_grad.__module__ = "torch.autograd.grad_mode"
inference_mode.__module__ = set_grad_enabled.__module__ = "torch.autograd.grad_mode"
