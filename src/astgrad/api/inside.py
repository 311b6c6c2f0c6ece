"""A generated gradient called inside a differentiated function: its derivatives are blocks of the hessian.

``df = grad(f)`` then ``grad(lambda x: df(x)[0])``: the call ``df(x)`` is
recorded as the primitive ``gradient_at(df, x)``, whose rules are hessian
blocks of ``f`` by forward over reverse (the generated jvp of the code
``grad(f, wrt=a)`` generates): the vector-Jacobian product with a cotangent
``g`` for argument ``a`` is ``H[a, w] g`` (``w`` the argument ``df`` is
taken with respect to; a sum over them for a tuple ``wrt``), and the
tangent along ``t`` in argument ``a`` is ``H[w, a] t``.  Only a plain
``grad`` of a plain function, called with every argument by position, is
taken this way; other gradient objects stay refused at the call.
"""

from __future__ import annotations

import inspect
import types
import weakref

import numpy as np

from . import compose as _compose, gradient
from ..rules import defbatch, defjvp, defvjp, maybe_sequence_outputs
from ..rules.batching import Unbatchable

#: gradient object -> {(row, column): hessian block as v -> H[row, column] v}
_BLOCKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: gradient object -> {batch dimensions of its arguments: its vmap, for a call inside a function vmap batches}
_VMAPPED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def gradient_at(gradient, *args):
    """``gradient(*args)``: a generated gradient called inside a differentiated function (rules: hessian blocks)."""
    return gradient(*args)


def refusal(gradient, keywords) -> str | None:
    """Why a call of ``gradient`` inside a differentiated function cannot be ``gradient_at``, or None."""
    fn = gradient.__wrapped__
    if gradient._mode != "grad" or gradient._aux or gradient._preserve:
        return ("a generated gradient called inside a differentiated function is differentiated only as grad(f) "
                "makes it (not value_and_grad, vjp, has_aux or preserve_result)")
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__astgrad_function__"):
        return "a generated gradient of a gradient called inside a differentiated function is not differentiated"
    params = list(inspect.signature(fn).parameters.values())
    if keywords or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
        return "a generated gradient called inside a differentiated function takes every argument by position"
    return None


def _block(gradient, row, column):
    """``v -> H[row, column] v`` at given arguments: the derivative of ``grad(f, wrt=row)`` along ``column``."""
    blocks = _BLOCKS.get(gradient)
    if blocks is None:
        blocks = _BLOCKS[gradient] = {}
    found = blocks.get((row, column))
    if found is None:
        found = blocks[(row, column)] = _compose._GradientTangent(gradient.__wrapped__, row, column, None)
    return found


def _varies(value) -> bool:
    """An argument a gradient flows to: a float (or float array), not an int, a bool or a container."""
    if isinstance(value, (bool, int, np.integer, np.bool_)):
        return False
    return isinstance(value, (float, np.floating)) or isinstance(value, np.ndarray) and value.dtype.kind == "f"


def _parameters(gradient):
    return list(inspect.signature(gradient.__wrapped__).parameters)


def _real(gradient, args):
    """Refuse complex arguments: the blocks are those of the hessian of a real function of real arguments."""
    for name, value in zip(_parameters(gradient), args):
        if isinstance(value, (complex, np.complexfloating)) or isinstance(value, np.ndarray) and \
                np.iscomplexobj(value):  # a list or tuple argument gets no block (_varies): not read here
            raise ValueError(f"astgrad: the derivative of {gradient!r} called inside a differentiated function is a "
                             f"hessian block, which is for real arguments; {name} is complex. Pass the real and "
                             "imaginary parts as two real arguments")


def gradient_at_cotangents(g, gradient, args):
    """The gradient of each argument of ``gradient_at(gradient, *args)`` for the cotangent ``g``."""
    _real(gradient, args)
    params = _parameters(gradient)
    rows = (g,) if gradient._single else tuple(g)
    out: list = []
    for k, value in enumerate(args):
        if not _varies(value):
            out.append(None)
            continue
        total = None
        for name, part in zip(gradient.wrt, rows):
            term = _block(gradient, params[k], name)(args, {}, part, "hessian")
            total = term if total is None else total + term
        out.append(total)
    return tuple(out)


@defvjp(gradient_at)
def gradient_at_vjp(g, ans, gradient, *args):
    return (None, *gradient_at_cotangents(g, gradient, args))


def gradient_at_jvp(t, ans, gradient, *args, argnum):
    """The tangent of ``gradient(*args)`` along ``t`` in argument ``argnum - 1``."""
    _real(gradient, args)
    column = _parameters(gradient)[argnum - 1]
    parts = tuple(_block(gradient, name, column)(args, {}, t, "hessian")
                  for name in gradient.wrt)
    return parts[0] if gradient._single else parts


defjvp(gradient_at, None, rest=gradient_at_jvp)
maybe_sequence_outputs.add(gradient_at)  # a tuple for a tuple wrt: g[0] in the caller is an item of a tuple


@defbatch(gradient_at)
def gradient_at_batched(bdims, gradient, *args):
    """Each example's gradient, the call ``gradient(*args)`` inside a function vmap batches: the per-example
    gradients of ``vmap(gradient)`` (its generated code batched), one array per example."""
    if not gradient._single:
        raise Unbatchable("astgrad.vmap: a gradient with respect to several arguments (a tuple of gradients per "
                          "example) called inside a function vmap batches; take one gradient per argument")
    per = _VMAPPED.setdefault(gradient, {})
    vmapped = per.get(tuple(bdims[1:]))
    if vmapped is None:  # made once per gradient and batch dimensions: its code is made at its first call
        from .batched import vmap  # the api imports this module
        vmapped = per[tuple(bdims[1:])] = vmap(gradient, in_axes=tuple(bdims[1:]))
    return vmapped(*args)
# generated code calls the rules themselves: a derivative through them would be a third one, not transformed
gradient_at_vjp.__astgrad_internal__ = True  # type: ignore[attr-defined]
gradient_at_jvp.__astgrad_internal__ = True  # type: ignore[attr-defined]


def _as_primitive(gradient, keywords):
    """``(gradient_at, None)`` for a differentiated function calling ``gradient``, or ``(None, why not)``: the
    transformer asks a gradient object it meets in a call (transform.expressions), which knows nothing of this
    module (it must not import the API)."""
    why = refusal(gradient, keywords)
    return (None, why) if why else (gradient_at, None)


gradient.GradientFunction._as_primitive = _as_primitive  # type: ignore[attr-defined]
