"""Derivatives of generated gradients: ``grad(grad(f))`` transforms the generated code, never unwraps it.

The inner gradient's adjoint, as generated at optimize=1 (no writes in
place: a second sweep reads every value the first one computed), is a plain
Python function of ``f``'s arguments and, as keywords, of the seeds of its
sweep.  The outer transformation differentiates that function like any
user function; the seeds are constants (1.0, the seed of a scalar output)
passed at every call.  A third derivative differentiates the second one's
generated code the same way.  Nothing here imports the public API: it hands
in ``factory`` (``api._gradient_function``) to build and cache gradients.
"""

from __future__ import annotations

import inspect
import types

from .transform import runtime
from .transform.tangents import generated_stack


def adjoint_code(fn, factory):
    """``(function, constants)``: generated code computing ``fn``'s value, and the keywords it needs.

    ``function`` is generated at optimize=1 or below; ``constants`` are its
    seeds.  The code is read again when ``fn``'s was rebuilt (``f`` edited).
    """
    if isinstance(fn, HigherGradient):
        function, constants = adjoint_code(fn._inner, factory)
        outer, _ = factory(function, fn._wrt, "grad", False, False, min(fn._level, 1))
        inner_constants = constants
    else:
        outer = fn if fn._level <= 1 else factory(fn.__astgrad_function__, fn._wrt, "grad", False, False, 1)[0]
        inner_constants = {}
    if not outer._generated.current():
        outer._rebuild()
    function = outer._general.function
    if _solves_recurrences(function):  # optimize=1 solved a loop with helpers nothing differentiates: the loop
        outer = factory(outer.__astgrad_function__, outer._wrt, "grad", False, False, 0)[0]
        if not outer._generated.current():
            outer._rebuild()
        function = outer._general.function
    seeds = {name: 1.0 for name, p in inspect.signature(function).parameters.items()
             if p.kind is p.KEYWORD_ONLY and name not in outer._signature.parameters}
    return function, {**inner_constants, **seeds}


def _solves_recurrences(function) -> bool:
    """Whether ``function`` calls the helpers of a solved linear recurrence (transform/recurrences.py)."""
    helpers = (runtime.pop_numbers, runtime.linear_recurrence, runtime.shifted)
    return any(value is helper for value in function.__globals__.values() for helper in helpers)


def _refuse_stack(function, fn, mode):
    """Refuse reverse mode over a gradient that saves values on its stack (``f`` has a loop or a branch).

    Popping a saved value is a write the reverse sweep would have to undo;
    forward mode pushes and pops the tangents beside the values instead
    (transform/forward.py), so hessian and hvp differentiate such code.
    """
    stack = generated_stack(function)
    if stack is None or stack not in function.__code__.co_varnames:
        return
    inner = getattr(fn, "__qualname__", fn)
    raise TypeError(
        f"astgrad: {mode} of the generated gradient of {inner}: {inner} has a loop or a branch, so its gradient "
        f"saves values on a stack, and reverse mode does not differentiate such generated code again. For "
        f"second derivatives use astgrad.hessian(f) or astgrad.hvp(f) (forward over reverse, through "
        f"loops and branches), or the tape: x = astgrad.tensor(x0, requires_grad=True); (g,) = "
        f"astgrad.autograd.grad(f(x), x, create_graph=True); then differentiate g")


def _refuse_callees(function, fn):
    """Refuse generated code whose functions pass values to each other on a stack (f calls functions of its own).

    ``backward_g(_stack, dy)`` reads what ``forward_g(_stack, x)`` pushed: a
    dependence on ``x`` that a second transformation does not see, and
    whose derivative it would therefore drop.
    """
    module = function.__globals__
    callees = sorted(name for name, value in module.items() if isinstance(value, types.FunctionType)
                     and value.__globals__ is module and value is not function)
    if callees:
        inner = getattr(fn, "__qualname__", fn)
        raise TypeError(
            f"astgrad: the generated gradient {inner} calls generated functions of its own ({', '.join(callees)}): "
            f"the function it differentiates calls functions astgrad differentiates too, and the generated "
            f"engine does not differentiate such code again. Write the callee inline, or use the tape for this "
            f"higher derivative: x = astgrad.tensor(x0, requires_grad=True); (g,) = astgrad.autograd.grad(f(x), x, "
            f"create_graph=True); then differentiate g")


class HigherGradient:
    """The ``grad``, ``value_and_grad`` or ``vjp`` of a generated gradient, by generated code.

    Called like the gradient it differentiates (a ``vjp`` with the seed
    last); ``.source`` is the composed generated code.
    """

    def __init__(self, inner, wrt, mode, preserve_result, has_aux, level, factory):
        self._inner = inner
        self._wrt, self._mode, self._preserve, self._aux, self._level = wrt, mode, preserve_result, has_aux, level
        self._factory = factory
        self.__wrapped__ = inner
        for attribute in ("__module__", "__name__", "__qualname__"):
            setattr(self, attribute, getattr(inner, attribute, None))
        self.__doc__ = f"The {mode} of {getattr(inner, '__qualname__', inner)!r}, by generated code."

    def _outer(self):
        """The generated derivative of the inner gradient's current code, and the constants it is called with."""
        function, constants = adjoint_code(self._inner, self._factory)
        _refuse_callees(function, self._inner)
        _refuse_stack(function, self._inner, self._mode)
        outer, _ = self._factory(function, self._wrt, self._mode, self._preserve, self._aux, self._level)
        return outer, constants

    def __call__(self, *args, **kwargs):
        outer, constants = self._outer()
        return outer(*args, **kwargs, **constants)

    @property
    def source(self) -> str:
        """The generated code that computes this derivative (built at the first call, or now)."""
        return self._outer()[0].source

    @property
    def wrt(self) -> tuple:
        return self._outer()[0].wrt

    def __repr__(self):
        return f"<astgrad.{self._mode} of {self._inner!r}>"
