"""Derivatives of generated gradients: ``grad(grad(f))`` transforms the generated code, never unwraps it.

The inner gradient's adjoint, as generated at optimize=1 (no writes in
place: a second sweep reads every value the first one computed), is a plain
Python function of ``f``'s arguments and, as keywords, of the seeds of its
sweep.  The outer transformation differentiates that function like any
user function; the seeds are constants (1.0, the seed of a scalar output)
passed at every call.  A third derivative differentiates the second one's
generated code the same way.  Nothing here imports the public API: it hands
in ``factory`` (``api._gradient_function``) to build and cache gradients.

Where the inner code saves values on a stack or calls generated functions
of its own (``f`` has a loop, a branch or a callee), reverse mode cannot
differentiate it again: the outer derivative is then the generated jvp of
that code, one per element of the ``wrt`` arguments (forward over reverse,
as hessian).  A derivative of such a derivative is forward mode over ``f``'s
own jvp, a jvp of a jvp (``_forward_chain``): forward code keeps ``f``'s
loops and branches as they are and has no stack to follow.
"""

from __future__ import annotations

import ast
import inspect
import types
import weakref

import numpy as np

from ..transform import runtime
from ..transform.pipeline import build_forward
from ..transform.ir.errors import TransformError
from ..transform.runtime import checkpoints
from ..transform.front.locate import bind_now, own_signature
from ..transform.runtime.origins import add_location, user_line
from ..transform.runtime.tangents import generated_stack
from .callables import resolve_wrt
from .generated import GeneratedCallable


def adjoint_code(fn, factory, trees=frozenset()):
    """``(function, constants)``: generated code computing ``fn``'s value, and the keywords it needs.

    ``function`` is generated at optimize=1 or below; ``constants`` are its
    seeds.  The code is read again when ``fn``'s was rebuilt (``f`` edited).
    ``trees``: the wrt parameters holding dicts, lists or tuples (the
    gradient's variant for them).
    """
    if isinstance(fn, HigherGradient):
        function, constants = adjoint_code(fn._inner, factory)
        outer, _ = factory(function, fn._wrt, "grad", False, False, min(fn._level, 1))
        inner_constants = constants
    else:
        outer = fn if fn._level <= 1 else factory(fn.__astgrad_function__, fn._wrt, "grad", False, False, 1)[0]
        inner_constants = {}
    if outer._refused is not None:  # its code calls the functions its parameters hold, made per call: not here
        raise outer._refused.with_traceback(None)
    if not outer._generated.current():
        outer._rebuild()
    generated = outer._for_trees(trees) if trees else outer._general
    if _facts(generated.function)[1]:  # optimize=1 solved a loop with helpers nothing differentiates: the loop
        outer = factory(outer.__astgrad_function__, outer._wrt, "grad", False, False, 0)[0]
        if not outer._generated.current():
            outer._rebuild()
        generated = outer._for_trees(trees) if trees else outer._general
    _refuse_checkpointed(generated)
    function = generated.function
    seeds = {name: 1.0 for name in _facts(function)[0] if name not in outer._signature.parameters}
    return function, {**inner_constants, **seeds}


_CHECKPOINT_HELPERS = (checkpoints.kept, checkpoints.segments, checkpoints.binomial, checkpoints.restored)


def _refuse_checkpointed(generated) -> None:
    """A derivative of a gradient whose code recomputes (``astgrad.checkpoint``, ``astgrad.checkpointed``) is
    refused at the marker's line: that code keeps states in lists and runs the steps again from copies, which
    no sweep differentiates again.  (jvp of the function itself ignores the markers: it keeps nothing.)"""
    names = {name for name, value in generated.function.__globals__.items()
             if any(value is helper for helper in _CHECKPOINT_HELPERS)}
    if not names:
        return
    lines = sorted({node.lineno for node in ast.walk(ast.parse(generated.source))
                    if isinstance(node, ast.Name) and node.id in names})
    where = next((origin for origin in map(lambda n: user_line(generated, n), lines) if origin is not None), None)
    filename, line, text = where[:3] if where is not None else ("<unknown>", 0, "")
    raise TransformError("a derivative of a gradient (hessian, hvp, grad of grad) through checkpointed code is not "
                         "supported: the gradient runs the checkpointed steps again from kept copies, which astgrad "
                         "does not differentiate again", filename, line, len(text) - len(text.lstrip()), text,
                         "Drop astgrad.checkpoint / astgrad.checkpointed for the second derivative (it then keeps "
                         "what the saved gradient keeps), or use astgrad.jvp, which keeps nothing and ignores them.")


#: generated function -> (its keyword-only parameters, whether it solves recurrences, whether it needs forward mode)
_FACTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _facts(function) -> tuple:
    """What each call reads of a generated function, found once: its text never changes."""
    found = _FACTS.get(function)
    if found is None:
        keywords = [name for name, p in inspect.signature(function).parameters.items() if p.kind is p.KEYWORD_ONLY]
        found = _FACTS[function] = (keywords, _solves_recurrences(function), _needs_forward(function))
    return found


def _solves_recurrences(function) -> bool:
    """Whether ``function`` calls the helpers of a solved linear recurrence (transform/passes/recurrences.py)."""
    helpers = (runtime.pop_numbers, runtime.linear_recurrence, runtime.shifted)
    return any(value is helper for value in function.__globals__.values() for helper in helpers)


class HigherGradient(GeneratedCallable):
    """The ``grad``, ``value_and_grad`` or ``vjp`` of a generated gradient, by generated code.

    Called like the gradient it differentiates (a ``vjp`` with the seed
    last); ``.source`` is the composed generated code.  Reverse mode over
    the inner code where it is straight-line (one sweep gives every
    partial); forward mode over it where it saves values on a stack or calls
    functions of its own (f has a loop, a branch or a callee): one generated
    jvp per element of the ``wrt`` arguments, as hessian does.
    """

    def __init__(self, inner, wrt, mode, preserve_result, has_aux, level, factory):
        self._inner = inner
        self._wrt, self._mode, self._preserve, self._aux, self._level = wrt, mode, preserve_result, has_aux, level
        self._factory = factory
        self._forward: tuple | None = None  # the last forward route built: (function it differentiates, names, Generated)
        self.__wrapped__ = inner
        for attribute in ("__module__", "__name__", "__qualname__"):
            setattr(self, attribute, getattr(inner, attribute, None))
        self.__doc__ = f"The {mode} of {getattr(inner, '__qualname__', inner)!r}, by generated code."

    def _route(self):
        """``(outer, code)``: the generated reverse-mode derivative of the inner code (or None), and that code."""
        code = lower_code(self._inner, self._factory)
        if not code.pick and not _facts(code.function)[2]:
            outer, _ = self._factory(code.function, self._wrt, self._mode, self._preserve, self._aux, self._level)
            return outer, code
        return None, code

    def _outer(self):
        """The generated derivative of the inner gradient's current code, and the constants it is called with."""
        outer, code = self._route()
        return (outer if outer is not None else self._tangents(code)), code.constants

    def _tangents(self, code):
        """The generated jvp of ``code.function`` along the ``wrt`` parameters (built once per code and wrt)."""
        names = _wrt_names(code.function, self._wrt)
        last = self._forward
        if last is None or last[0] is not code.function or last[1] != names or not last[2].current():
            generated = build_forward(code.function, names, self._level)
            self._forward = last = (code.function, names, generated, _Shown(generated, names))
        return last[3]

    def __call__(self, *args, **kwargs):
        inner_wrt = getattr(self._inner, "_wrt", None)
        if self._mode == "vjp" and args and isinstance(inner_wrt, (tuple, list)) and len(inner_wrt) == 1 \
                and isinstance(args[-1], (tuple, list)) and len(args[-1]) == 1:
            args = (*args[:-1], args[-1][0])  # grad(f, wrt=(0,)) returns (g,); its code returns g: seed it so
        outer, code = self._route()
        if outer is not None:
            f = _user_function(self._inner)
            if f.__defaults__ or f.__kwdefaults__:  # the generated code has none of f's defaults: bind them here
                seed = args[-1:] if self._mode == "vjp" else ()
                bound = bind_now(f, own_signature(f), args[:len(args) - len(seed)], kwargs)
                args, kwargs = (*bound.args, *seed), bound.kwargs
            return outer(*args, **kwargs, **code.constants)
        return self._by_tangents(code, args, kwargs)

    def _by_tangents(self, code, args, kwargs):
        """Forward over the inner code: the partial along each element of each ``wrt`` argument, one jvp each."""
        what = getattr(self._inner, "__qualname__", self._inner)
        if self._aux:
            raise TypeError(f"has_aux=True requires the function to return a pair (loss, aux); the generated gradient "
                            f"{what} returns its gradient alone")
        seed = None
        if self._mode == "vjp":
            if not args:
                raise TypeError(f"a vjp is called as f_vjp(*args, seed): {self!r} was given no seed")
            *args, seed = args
            several = isinstance(getattr(self._inner, "_wrt", None), (tuple, list)) and len(self._inner._wrt) > 1
            if isinstance(seed, dict) or isinstance(seed, (tuple, list)) != several \
                    or several and len(seed) != len(self._inner._wrt):
                raise ValueError(f"vjp: the seed is a {type(seed).__name__}, but the gradient of {what} is "
                                 f"{f'a tuple of {len(self._inner._wrt)} arrays' if several else 'one array'}; "
                                 f"give the seed {'as a tuple of arrays of their shapes' if several else 'as an array of its shape'}")
        by_seed = seed is not None and (isinstance(seed, (tuple, list)) or np.ndim(seed) != 0)  # seed . (columns of J)
        self._tangents(code)
        assert self._forward is not None, "_tangents builds the forward route"
        function, names, generated = self._forward[:3]
        bound = inspect.signature(function).bind_partial(*args, **kwargs, **code.constants)
        for name, value in code.defaults.items():  # a jvp's tangents follow the parameters: it has no defaults
            bound.arguments.setdefault(name, value)
        bound = inspect.signature(function).bind(*bound.args, **bound.kwargs)
        bound.apply_defaults()
        inputs = [bound.arguments[name] for name in names]
        for name in code.scalars:  # the code computes the lower derivative along 1.0 in this argument
            if np.ndim(bound.arguments[name]) != 0:
                raise TypeError(f"grad requires a scalar output; {what} returns an array of shape "
                                f"{np.shape(bound.arguments[name])} (its argument {name!r} has that shape): use "
                                f"astgrad.hessian, or differentiate one element of it")
        for name, x in zip(names, inputs):
            if not isinstance(x, (float, int, np.ndarray, np.floating, np.integer)) or isinstance(x, bool) \
                    or np.iscomplexobj(x):
                raise TypeError(f"astgrad.{self._mode} of the generated gradient {what}, which saves values on a "
                                f"stack or calls generated functions of its own, is by forward mode and takes real "
                                f"numbers and arrays; the argument {name!r} is a {type(x).__name__}")
        zeros = [np.zeros(np.shape(x)) if isinstance(x, np.ndarray) else 0.0 for x in inputs]
        value, found = None, []
        for i, x in enumerate(inputs):
            partials = np.zeros(np.shape(x))
            for index in np.ndindex(*np.shape(x)):
                u = np.zeros(np.shape(x))
                u[index] = 1.0
                direction = u if isinstance(x, np.ndarray) else float(u)
                tangents = [direction if j == i else z for j, z in enumerate(zeros)]
                try:
                    out, tangent = generated.run(*bound.args, *tangents, **bound.kwargs)
                except Exception as exc:
                    add_location(generated, exc, f"the generated jvp of {what}")
                    raise
                out, tangent = _picked(out, code.pick), _picked(tangent, code.pick)
                if by_seed and isinstance(seed, (tuple, list)):  # the gradient of several arguments, a tuple
                    value = tuple(_seeded(o, s, what) for o, s in zip(out, seed))
                    partials[index] = sum(np.sum(np.asarray(s) * t) for s, t in zip(seed, tangent))
                elif by_seed:
                    value = _seeded(out, seed, what)
                    partials[index] = np.sum(np.asarray(seed) * tangent)
                else:
                    value = _scalar(out, self._mode, what)
                    partials[index] = tangent
            found.append(partials if isinstance(x, np.ndarray) else float(partials))
        if value is None:  # no element to vary: the value is still f's
            out = _picked(generated.run(*bound.args, *zeros, **bound.kwargs)[0], code.pick)
            value = (tuple(_seeded(o, s, what) for o, s in zip(out, seed)) if by_seed and isinstance(seed, (tuple, list))
                     else _seeded(out, seed, what) if by_seed else _scalar(out, self._mode, what))
        if seed is not None and not by_seed:
            found = [np.multiply(seed, g) if isinstance(g, np.ndarray) else seed * g for g in found]
        gradient = tuple(found) if isinstance(self._wrt, (tuple, list)) else found[0]
        if self._mode == "value_and_grad":
            return value, gradient
        return (gradient, value) if self._preserve else gradient

    @property
    def source(self) -> str:
        """The generated code that computes this derivative (built at the first call, or now)."""
        return self._outer()[0].source

    @property
    def wrt(self) -> tuple:
        return self._outer()[0].wrt

    def __repr__(self):
        return f"<astgrad.{self._mode} of {self._inner!r}>"


def _user_function(fn):
    """The user's function under a generated gradient and any gradients of it."""
    while isinstance(fn, HigherGradient):
        fn = fn._inner
    return fn.__astgrad_function__


class _Shown:
    """What ``.source`` and ``.wrt`` read of a forward route: the generated jvp, and the names it varies."""

    def __init__(self, generated, names):
        self.source, self.wrt = generated.source, tuple(names)


class _Code:
    """Generated code computing a gradient: ``function(*args, **constants)``, the item at index path ``pick``.

    Code made by forward mode (a jvp along 1.0) is right only where the
    arguments ``scalars`` name are numbers: each call checks that they are.
    """

    def __init__(self, function, constants, pick=(), scalars=(), defaults=None):
        self.function, self.constants, self.pick, self.scalars = function, constants, pick, scalars
        self.defaults = defaults or {}  # the user's positional defaults, where ``function`` lost them


def _picked(value, pick):
    for index in pick:
        value = value[index]
    return value


def _positional(function) -> list:
    return [p.name for p in inspect.signature(function).parameters.values() if p.kind is not p.KEYWORD_ONLY]


def _wrt_names(function, wrt) -> list:
    """The parameter names ``wrt`` (a position, a name, or a tuple of them) means in ``function``."""
    return resolve_wrt(wrt, _positional(function), function.__qualname__)[0]


def _scalar(value, mode, what):
    if np.ndim(value) != 0 or isinstance(value, (tuple, list, dict)) or np.iscomplexobj(value):
        raise TypeError(f"{mode} requires a scalar output; the gradient of {what} returns "
                        f"{'an array of shape ' + str(np.shape(value)) if isinstance(value, np.ndarray) else 'a ' + type(value).__name__}"
                        f": use vjp, or reduce it, e.g. np.sum")
    return value


def _seeded(value, seed, what):
    """``value``, the output a vjp's array ``seed`` weighs, checked to have the seed's shape."""
    if not isinstance(value, (np.ndarray, np.floating, float, int)) or isinstance(value, bool) \
            or np.iscomplexobj(value):
        raise TypeError(f"vjp of the generated gradient {what} takes real arrays; it returns a "
                        f"{type(value).__name__}")
    if np.shape(value) != np.shape(seed):
        raise ValueError(f"vjp: the seed has shape {np.shape(seed)} but the gradient of {what} has shape "
                         f"{np.shape(value)}; the seed has the shape of the output")
    return value


def _needs_forward(function) -> bool:
    """Whether reverse mode cannot differentiate ``function`` again: it saves values on a stack, calls callees,
    or calls a rule whose derivative is by forward mode only (``__astgrad_forward_only__``: a vmapped call's
    reverse rule, api/vmapped.py)."""
    stack = generated_stack(function)
    module = function.__globals__
    return stack is not None and stack in function.__code__.co_varnames or any(
        isinstance(value, types.FunctionType) and (value.__globals__ is module and value is not function
                                                   or getattr(value, "__astgrad_forward_only__", False))
        for value in module.values())


def lower_code(fn, factory) -> _Code:
    """The code that computes ``fn`` (a generated gradient, or a HigherGradient by either route)."""
    if not isinstance(fn, HigherGradient):
        return _Code(*adjoint_code(fn, factory))
    outer, code = fn._route()
    if outer is not None:
        return _Code(*adjoint_code(fn, factory))
    return _forward_chain(fn, fn)


def _forward_chain(fn, owner) -> _Code:
    """``fn``'s value by forward mode alone: the jvp of the jvp ... of ``f``, each along 1.0 in its argument.

    Forward mode over the forward-over-reverse code of ``fn`` would have to
    follow two stacks; ``f``'s own jvp has none (forward code keeps its
    loops and branches as they are), nor has a jvp of a jvp.  Each level
    differentiates along one number, so its code is right only where that
    argument is a number (``scalars``, checked at each call).  The generated
    functions are cached on ``owner``.
    """
    inner = fn._inner if isinstance(fn, HigherGradient) else None
    if isinstance(fn._wrt, (tuple, list)):
        raise TypeError(f"grad requires a scalar output; {fn!r} returns a tuple of {len(fn._wrt)} partial "
                        f"derivatives: differentiate the grad of one argument (wrt=one name)")
    if inner is None:
        f = fn.__astgrad_function__
        code = _Code(f, {}, defaults={p.name: p.default for p in inspect.signature(f).parameters.values()
                                      if p.default is not p.empty and p.kind is not p.KEYWORD_ONLY})
    else:
        code = _forward_chain(inner, owner)
    names = _wrt_names(code.function, fn._wrt)
    generated = _cached_forward(owner, len(code.pick), code.function, names, 1)
    tangent = list(inspect.signature(generated.function).parameters)[len(_positional(code.function))]
    return _Code(generated.function, {**code.constants, tangent: 1.0}, (1,) + code.pick, code.scalars + tuple(names),
                 code.defaults)


def _cached_forward(owner, depth, function, names, level):
    """``build_forward(function, names, level)``, the ``depth``-th of a chain, kept on ``owner`` until stale."""
    cache = owner.__dict__.setdefault("_forward_codes", {})
    key = (function, tuple(names), level)
    found = cache.get(depth)
    if found is None or found[0] != key or not found[1].current():
        found = cache[depth] = (key, build_forward(function, names, level))
    return found[1]
