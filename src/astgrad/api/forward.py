"""``astgrad.jvp``: the Jacobian-vector product by generated forward-mode code.

``jvp(f, wrt)(*args, tangents)`` returns ``(f(*args), J u)``: the value and
its directional derivative along ``tangents`` (the direction of the ``wrt``
arguments).  The generated function (``.source``) runs ``f`` and its tangent
side by side, each operation followed by its tangent (transform/core/forward.py).
Cached on ``f`` as ``grad`` is, and transformed again once anything it was
built from changed.
"""

from __future__ import annotations

import functools
import inspect
import sys

import numpy as np

from ..values import dask as _dask
from .callables import split
from .generated import GeneratedCallable
from ..values import trees as _trees
from ..values.trees import is_tree
from .higher import HigherGradient, adjoint_code, lower_code
from ..values.returned import _finish
from .arguments import arguments_of_plain_types, refuse_other_meanings
from .gradient import (_PLAIN, _composable, _freeze, _generated_inside, _gradient_function, _gradients_of,
                       _higher_order_error, _level, _wrt_names, function_variant, refused_for_functions)
from ..transform.ir.errors import TransformError
from ..transform.front.locate import bind_now, own_signature
from ..transform.pipeline import build_forward
from ..transform.runtime.checks import arguments_in
from ..transform.runtime.origins import add_location

__all__ = ["jvp"]


class JvpFunction(GeneratedCallable):
    """A generated Jacobian-vector product, called with ``f``'s arguments and then the tangents."""

    def __init__(self, fn, wrt, level):
        self.__astgrad_function__ = fn
        functools.update_wrapper(self, fn)
        self.__dict__.pop("__astgrad_gradients__", None)  # fn's own cache, copied with fn.__dict__
        self._wrt = wrt
        self._level = level
        self._rebuild()

    def _rebuild(self, stage=None):
        fn = self.__astgrad_function__
        signature = own_signature(fn)
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
            from ..transform import check
            check(fn)  # the located error for *args / **kwargs
        self._signature = signature
        self._names, self._single = _wrt_names(fn, signature, self._wrt)
        params = list(signature.parameters.values())
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        # positional calls with every argument given (and one more, the tangents) skip Signature.bind
        self._arity = len(params) + 1 if plain else -1
        self._positions = [[p.name for p in params].index(n) for n in self._names] if plain else []
        self._tree_variants = {}  # frozenset of the wrt names that hold containers -> Generated
        self._function_variants, self._called, self._refused = {}, (), None  # see api.function_variant
        try:
            generated = build_forward(fn, self._names, self._level, stage)
        except TransformError as exc:
            self._called = refused_for_functions(exc, fn, signature, self._names)
            if not self._called or stage is not None:
                raise
            # made per function a parameter holds, at the call; no fast path (it does not look at functions)
            self._refused, self._generated, self._shown = exc, None, None
            return None
        if stage is not None:
            return generated.shown
        self._generated = self._shown = generated
        return generated.source

    @property
    def source(self) -> str:
        if self._generated is None and self._shown is None:
            raise AttributeError(f"the jvp of {self.__astgrad_function__.__qualname__} is made at the first call, for the "
                                 f"functions its parameters {', '.join(self._called)} hold: call it first")
        return (self._generated or self._shown).source

    def _as_callee(self):
        """What a differentiated function calling this jvp runs instead (transform/front/generated_calls.py).

        ``(generated, parameters, wrt names, their positions or None, single)``:
        the current generated code for arrays, ``f``'s parameter names, and
        where each ``wrt`` argument is among them (None unless every parameter
        is positional).
        """
        if self._refused is not None:  # made per function a parameter holds: not called from generated code
            raise self._refused.with_traceback(None)
        if not self._generated.current():
            self._rebuild()
        parameters = list(self._signature.parameters)
        return self._generated, parameters, list(self._names), self._positions if self._arity >= 0 else None, \
            self._single

    @property
    def wrt(self) -> tuple:
        return tuple(self._names)

    def __repr__(self):
        return f"<astgrad.jvp of {self.__wrapped__.__qualname__} wrt {', '.join(self._names)}>"

    def __call__(self, *args, **kwargs):
        if not kwargs and len(args) == self._arity and self._generated is not None and self._generated.current():
            tangents = (args[-1],) if self._single else args[-1]
            if type(tangents) is tuple and len(tangents) == len(self._positions) and all(
                    type(t) is np.ndarray and type(a := args[i]) is np.ndarray and t.shape == a.shape
                    for t, i in zip(tangents, self._positions)) and all(type(a) in _PLAIN for a in args[:-1]):
                return self._run(self._generated, args[:-1], tangents, {})
        return self._call_general(args, kwargs)

    def _run(self, generated, args, tangents, kwargs):
        try:
            if "dask.array" in sys.modules and _dask.any_lazy_leaf([*args, *tangents, *kwargs.values()]):
                return _dask.jvp_lazily(generated.run, args, tangents, kwargs)
            return generated.run(*args, *tangents, **kwargs)
        except Exception as exc:
            add_location(generated, exc, f"the generated jvp of {self.__wrapped__.__qualname__}")
            raise

    def _call_general(self, args, kwargs):
        if not args:
            raise TypeError(f"a jvp is called as f_jvp(*args, tangents): {self!r} was given no tangents")
        *args, tangents = args
        if (self._generated or self._shown) is not None and not (self._generated or self._shown).current():
            self._rebuild()
        bound = bind_now(self.__wrapped__, self._signature, args, kwargs)
        arguments_of_plain_types(bound, self._names, f"astgrad.jvp of {self.__wrapped__.__qualname__}")
        if self._single:
            tangents = (tangents,)
        elif not isinstance(tangents, (tuple, list)) or len(tangents) != len(self._names):
            raise TypeError(f"{self!r}: the tangents are a tuple of {len(self._names)}, one for each of "
                            f"{', '.join(self._names)}; got {type(tangents).__name__}")
        refuse_other_meanings({f"tangent of {name}": t for name, t in zip(self._names, tangents)},
                              f"astgrad.jvp of {self.__wrapped__.__qualname__}")
        tangents = [_tangent(name, bound.arguments[name], t) for name, t in zip(self._names, tangents)]
        trees = frozenset(name for name in self._names if is_tree(bound.arguments[name]))
        if self._called:
            generated = function_variant(self, bound.arguments, trees, lambda functions: build_forward(
                self.__astgrad_function__, self._names, self._level, trees=tuple(sorted(trees)), callables=functions))
            self._shown = generated  # the one .source shows
        else:
            generated = self._for_trees(trees) if trees else self._generated
        return self._run(generated, bound.args, tangents, bound.kwargs)

    def _for_trees(self, trees):
        """The generated code for arguments ``trees`` holding dicts, lists or tuples: built once per set of names."""
        generated = self._tree_variants.get(trees)
        if generated is None or not generated.current():
            generated = self._tree_variants[trees] = build_forward(self.__astgrad_function__, self._names,
                                                                   self._level, trees=tuple(sorted(trees)))
        return generated



def _arguments(frame_locals):
    """The differentiated arguments of a running JvpFunction._call_general (tree arguments only come that way)."""
    bound = frame_locals.get("bound")
    return None if bound is None else {name: bound.arguments.get(name) for name in frame_locals["self"]._names}


def _fast_arguments(frame_locals):
    """The differentiated arguments of a running JvpFunction.__call__ that took the fast path (all positional)."""
    self, args = frame_locals.get("self"), frame_locals.get("args")
    if self is None or args is None or frame_locals.get("kwargs") or len(args) != self._arity:
        return None
    return {name: args[i] for name, i in zip(self._names, self._positions)}


arguments_in(JvpFunction._call_general.__code__, _arguments)
arguments_in(JvpFunction.__call__.__code__, _fast_arguments)

def _tangent(name, value, tangent):
    """The tangent of argument ``name`` as the generated code takes it: an array of ``value``'s shape."""
    if is_tree(value):
        if not _same_structure(value, tangent):
            raise ValueError(f"astgrad.jvp: the tangent of {name} must have {name}'s structure (the same dict "
                             f"keys, list and tuple lengths, and leaf shapes); got {_describe(tangent)} for "
                             f"{_describe(value)}")
        return tangent
    if isinstance(tangent, (list, tuple)):  # numbers in a list, where an array goes
        tangent = np.asarray(tangent)
        tangent = tangent if tangent.dtype.kind in "fc" else tangent.astype(np.float64)
    if np.shape(tangent) != np.shape(value):
        raise ValueError(f"astgrad.jvp: the tangent of {name} has shape {np.shape(tangent)}, and {name} "
                         f"has shape {np.shape(value)}; a tangent is a direction of its argument's shape")
    if isinstance(value, np.ndarray) and not isinstance(tangent, np.ndarray) and not _dask.is_lazy(tangent):
        return np.asarray(tangent, dtype=np.result_type(tangent, 1.0))
    return tangent


def _same_structure(value, tangent) -> bool:
    if isinstance(value, dict):
        return isinstance(tangent, dict) and list(value) == list(tangent) and all(
            _same_structure(value[k], tangent[k]) for k in value)
    if isinstance(value, (list, tuple)):
        return isinstance(tangent, (list, tuple)) and len(value) == len(tangent) and all(
            _same_structure(v, t) for v, t in zip(value, tangent))
    if _trees.is_object(value):
        return type(tangent) is type(value) and _same_structure(_trees.children(value)[0], _trees.children(tangent)[0])
    return not is_tree(tangent) and np.shape(value) == np.shape(tangent)


def _describe(tree) -> str:
    if _trees.is_object(tree):
        return f"{type(tree).__qualname__}{_describe(tuple(_trees.children(tree)[0]))}"
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_describe(v)}" for k, v in tree.items()) + "}"
    if isinstance(tree, (list, tuple)):
        inner = ", ".join(_describe(v) for v in tree)
        return f"[{inner}]" if isinstance(tree, list) else f"({inner})"
    return f"shape {np.shape(tree)}"


def jvp(f=None, wrt=0, *, has_aux: bool = False, optimize: int | None = None):
    """``f_jvp(*args, tangents) -> (f(*args), J u)``: the Jacobian-vector product by generated code.

    ``wrt`` is a parameter position, a name, or a tuple of them; ``tangents``
    is one array (or number) of the argument's shape for a single ``wrt``, a
    tuple of them for a tuple.  The result's tangent has the structure of
    ``f``'s value.  With ``has_aux=True``, ``f`` returns ``(output, aux)``
    and the result is ``(output, J u, aux)`` (JAX's order), the tangent of
    ``output`` alone.  ``optimize`` is the level, as for :func:`astgrad.grad`.
    """
    if f is None:
        return lambda fn: jvp(fn, wrt, has_aux=has_aux, optimize=optimize)
    if has_aux:
        return JvpWithAux(f, jvp(f, wrt, optimize=optimize))
    level = _level(optimize, "jvp")
    inner = _generated_inside(f)
    if inner is not None and inner is f and _composable(f):
        return JvpOfGradient(f, wrt, level)
    if inner is not None:
        raise _higher_order_error(f, inner, "jvp")
    fn, wrt, rebind = split(f, wrt, "jvp")
    key = (fn.__code__, _freeze(wrt), "jvp", level)
    per_fn = _gradients_of(fn)
    cached = per_fn.get(key)
    if cached is None:
        for old in [k for k in per_fn if k[0] is not fn.__code__]:
            del per_fn[old]
        per_fn[key] = cached = JvpFunction(fn, wrt, level)
    return rebind(cached)


class JvpWithAux(GeneratedCallable):
    """``jvp(f, has_aux=True)``: ``(output, J u, aux)`` for ``f`` returning ``(output, aux)``.

    Runs ``f``'s jvp, whose value and tangent are pairs, and keeps the
    tangent of the output (aux's is computed and dropped).
    """

    def __init__(self, f, product):
        self.__wrapped__ = f
        self.__name__ = getattr(product, "__name__", "jvp")
        self.__qualname__ = getattr(f, "__qualname__", repr(f))
        self._product = product

    @property
    def source(self) -> str:
        return self._product.source

    def __repr__(self):
        return f"<astgrad.jvp of {self.__qualname__} with aux>"

    def __call__(self, *args, **kwargs):
        value, tangent = self._product(*args, **kwargs)
        if not (isinstance(value, tuple) and len(value) == 2):
            raise TypeError(f"astgrad.jvp(..., has_aux=True): {self.__qualname__} must return a pair (output, aux); "
                            f"it returned {type(value).__name__}")
        return value[0], tangent[0], value[1]


class JvpOfGradient(GeneratedCallable):
    """``jvp(grad(f))``: the forward sweep over the code ``grad(f)`` generates (forward over reverse, see higher.py).

    Called as ``jvp(f)`` is, ``(*args, tangents)``; returns the gradient and
    its tangent, ``H u`` for a scalar ``f`` (``hvp`` is this tangent alone).
    """

    def __init__(self, gradient, wrt, level):
        self.__wrapped__ = gradient
        self._gradient, self._wrt, self._level, self._last = gradient, wrt, level, None
        self._signature = inspect.signature(gradient)

    def __repr__(self):
        return f"<astgrad.jvp of {self._gradient!r}>"

    def __call__(self, *args, **kwargs):
        if not args:
            raise TypeError(f"a jvp is called as f_jvp(*args, tangents): {self!r} was given no tangents")
        *primals, tangents = args
        bound = self._signature.bind(*primals, **kwargs)
        bound.apply_defaults()
        names = self._gradient.wrt
        originals = [bound.arguments[name] for name in names]
        trees = frozenset(name for name, value in zip(names, originals) if is_tree(value))
        function, constants = gradient_code(self._gradient, trees)
        defaults = function.__kwdefaults__ or {}
        constants = {k: c for k, c in constants.items() if k not in defaults or defaults[k] != c}
        self._last = product = jvp(function, self._wrt, optimize=self._level)
        value, tangent = product(*primals, tangents, **kwargs, **constants)
        if len(names) == 1:  # the gradient's code returns one array, also for a tuple wrt of one name (wrt=(0,))
            value, tangent = (value,), (tangent,)
        if isinstance(self._gradient._wrt, (tuple, list)):
            return (tuple(_finish(v, o) for v, o in zip(value, originals)),
                    tuple(_finish(t, o) for t, o in zip(tangent, originals)))
        return _finish(value[0], originals[0]), _finish(tangent[0], originals[0])

    @property
    def source(self) -> str:
        """The generated jvp of the gradient's generated code (as of the last call)."""
        return self._last.source if self._last is not None else ""


def gradient_code(gradient, trees=frozenset()):
    """``(function, constants)``: the generated code ``gradient`` (``grad(f)``, or ``grad`` of that) runs.

    A ``grad(grad(f))`` that goes by forward mode (f has a loop, a branch or
    a callee) is refused: its code (``lower_code``) is a jvp of a jvp whose
    value is one item of what it returns, right only at numbers, which a
    jvp of it does not read so (a wrong number, not an error: reverse mode
    over its lower code did not follow the callees' stack).
    """
    if isinstance(gradient, HigherGradient):
        if trees:
            raise TypeError(f"astgrad: a derivative of {gradient!r} at dicts, lists or tuples is not generated; use "
                            f"astgrad.hessian or astgrad.hvp of the function itself")
        code = lower_code(gradient, _gradient_function)
        if code.pick or code.scalars:
            inner = getattr(gradient._inner, "__qualname__", gradient._inner)
            raise TypeError(
                f"astgrad: hessian, hvp or jvp of {gradient!r}, a second derivative that differentiates the generated "
                f"gradient of {inner} by forward mode (the function has a loop, a branch or a callee): not generated. "
                f"For a scalar x, grad(grad(grad(f))) gives the third derivative; otherwise use the tape: "
                f"x = astgrad.tensor(x0, dtype=np.float64, requires_grad=True); (g,) = astgrad.autograd.grad(f(x), x, "
                f"create_graph=True); (h,) = astgrad.autograd.grad(g, x, create_graph=True); then differentiate h")
        return code.function, code.constants
    return adjoint_code(gradient, _gradient_function, trees)


def _tangent_function(fn, wrt, level=None):
    """For transformations of generated code: ``fn``'s jvp (a function of ``(*args, *tangents)``, no checks).

    ``fn`` may be a generated function (an adjoint): its text is registered
    in linecache under its code's filename, which the transform reads as it
    reads a user's file.  ``wrt`` lists parameter names.
    """
    return build_forward(fn, list(wrt), _level(level, "jvp")).function
