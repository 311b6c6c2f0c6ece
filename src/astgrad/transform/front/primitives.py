"""How Python syntax maps onto the rule table.

Operators map to numpy ufuncs (``a + b`` is ``np.add``), array methods and
attributes to numpy functions (``x.sum(axis=1)`` is ``np.sum(x, axis=1)``,
``x.T`` is ``np.transpose(x)``), builtins to their numpy counterparts where
one exists.  ``classify`` says what the transformer does with a callable.
"""

from __future__ import annotations

import builtins
import random
import types

import numpy as np

from ... import rules
from .. import runtime
from ..runtime import attributes
from ..ir.compat import gast

BINARY_OPS = {
    gast.Add: np.add, gast.Sub: np.subtract, gast.Mult: np.multiply,
    gast.Div: np.divide, gast.Pow: np.power, gast.MatMult: np.matmul,
    gast.FloorDiv: np.floor_divide, gast.Mod: np.remainder,
}
UNARY_OPS = {gast.USub: np.negative, gast.UAdd: np.positive}

#: array (and Tensor) methods -> (numpy callable, positional args packed into one tuple)
METHODS = {
    "sum": (np.sum, False), "mean": (np.mean, False), "max": (np.max, False),
    "min": (np.min, False), "prod": (np.prod, False), "var": (np.var, False),
    "std": (np.std, False), "dot": (np.dot, False), "reshape": (np.reshape, True),
    "view": (np.reshape, True), "transpose": (np.transpose, True), "ravel": (np.ravel, False),
    "flatten": (np.ravel, False), "squeeze": (np.squeeze, False), "swapaxes": (np.swapaxes, False),
    "clip": (np.clip, False), "clamp": (np.clip, False), "astype": (rules.astype, False),
    "round": (np.round, False), "exp": (np.exp, False), "log": (np.log, False),
    "sin": (np.sin, False), "cos": (np.cos, False), "tanh": (np.tanh, False),
    "sqrt": (np.sqrt, False), "abs": (np.absolute, False), "sigmoid": (rules.sigmoid, False),
    "relu": (rules.relu, False), "pow": (np.power, False), "matmul": (np.matmul, False),
    "mm": (np.matmul, False), "t": (np.transpose, False), "norm": (np.linalg.norm, False),
    "argmax": (np.argmax, False), "argmin": (np.argmin, False),
    "cumsum": (np.cumsum, False), "cumprod": (np.cumprod, False), "ptp": (np.ptp, False),
    "trace": (np.trace, False), "diagonal": (np.diagonal, False), "repeat": (np.repeat, False),
    "take": (np.take, False), "all": (np.all, False), "any": (np.any, False),
    "nonzero": (np.nonzero, False), "argsort": (np.argsort, False), "square": (np.square, False),
    "tan": (np.tan, False), "log1p": (np.log1p, False), "expm1": (np.expm1, False),
    "sign": (np.sign, False), "floor": (np.floor, False), "ceil": (np.ceil, False),
    "reciprocal": (np.reciprocal, False), "neg": (np.negative, False), "permute": (np.transpose, True),
    "unsqueeze": (np.expand_dims, False), "add": (np.add, False), "sub": (np.subtract, False),
    "mul": (np.multiply, False), "div": (np.divide, False), "maximum": (np.maximum, False),
    "minimum": (np.minimum, False),
}
#: methods that return the value itself (a copy the gradient flows through)
COPY_METHODS = {"copy", "clone", "item", "numpy", "tolist"}
#: methods whose result the gradient does not flow through
STOP_METHODS = {"detach"}
#: attributes that carry no gradient
META_ATTRIBUTES = {"shape", "ndim", "size", "dtype", "requires_grad", "is_leaf"}

#: builtins with a numpy counterpart
BUILTIN_PRIMITIVES = {builtins.abs: np.absolute}
#: builtins that return their argument's value (gradient flows through)
BUILTIN_COPIES = {builtins.float}
#: builtins whose result carries no gradient
#: calls that only set or read the global random state: no gradient, and nothing they are given changes
RANDOM_STATE = {np.random.seed, np.random.set_state, np.random.get_state, random.seed, random.setstate, random.getstate}

BUILTIN_CONSTANTS = {
    builtins.range, builtins.len, builtins.int, builtins.bool, builtins.print,
    builtins.isinstance, builtins.str, builtins.round, builtins.type, builtins.repr,
    builtins.hasattr, builtins.callable,
}


def is_user_function(obj) -> bool:
    """A Python function the transformer should differentiate through."""
    return isinstance(obj, types.FunctionType) and not hasattr(obj, "__astgrad_primitive__")


def _internal(fn) -> bool:
    """A helper of the generated code (transform/runtime/__init__.py and its kin), never a user's.

    Rule helpers (``astgrad.rules``) are plain numpy code and are transformed
    like a user's function; the runtime's helpers handle lists, tuples and
    missing gradients, and get rules or a refusal.
    """
    return str(getattr(fn, "__module__", "")).startswith("astgrad.transform.") or \
        getattr(fn, "__astgrad_internal__", False)  # a helper elsewhere in astgrad (api/inside.py)


def unwrap_gradient_object(obj):
    """``grad(f)`` objects called inside a function stand for ``f``."""
    inner = getattr(obj, "__astgrad_function__", None)
    return inner if inner is not None else obj


def classify(fn):
    """('prim', rule) | ('nondiff', None) | ('copy', None) | ('call', None) | ('opaque', message)."""
    if fn in BUILTIN_PRIMITIVES:
        return "prim", rules.lookup(BUILTIN_PRIMITIVES[fn])
    try:
        if fn in BUILTIN_COPIES:
            return "copy", None
        if fn in BUILTIN_CONSTANTS or fn in RANDOM_STATE:
            return "nondiff", None
    except TypeError:
        pass
    rule = rules.find(fn)
    if rule is not None:
        return ("prim", rule) if rule.differentiable else ("nondiff", None)
    if is_user_function(fn) and _internal(fn):
        return "opaque", (f"{rules.qualified_name(fn)} is a helper of astgrad's own and has no derivative rule; astgrad "
                          f"does not differentiate it through its source. Generated code calls it (a higher derivative "
                          f"through it is not supported yet: hessian and hvp, forward mode, differentiate the helpers of "
                          f"containers and lists); use the tape, astgrad.torch.autograd.functional.hessian, for this one")
    if is_user_function(fn) and not rules.library_function(fn):
        return "call", None
    try:  # a library's function (never transformed from its source), a builtin, an object: its rule's advice
        rules.lookup(fn)
    except rules.NoRuleError as exc:
        return "opaque", str(exc)
    return "opaque", "no gradient rule"


#: numpy functions returning a tuple or list of arrays: their outputs' gradients are sequences
SEQUENCE_OUTPUTS = {f for f in (
    getattr(np, "split", None), getattr(np, "array_split", None), getattr(np, "hsplit", None),
    getattr(np, "vsplit", None), getattr(np, "dsplit", None), np.linalg.eigh, np.linalg.slogdet,
    np.linalg.svd, np.linalg.qr, np.linalg.eig, np.linalg.lstsq, np.meshgrid, np.broadcast_arrays, np.histogram,
    np.unique)
    if f is not None}
_UNIQUE_FLAGS = ((1, "return_index"), (2, "return_inverse"), (3, "return_counts"))


def returns_sequence(op) -> bool:
    """Whether a primitive operation's result is a tuple or list (``np.linalg.svd(a, compute_uv=False)`` is not)."""
    if op.fn not in SEQUENCE_OUTPUTS:
        return op.fn in rules.sequence_outputs
    if op.fn is np.linalg.svd:
        flag = op.kwargs.get("compute_uv", op.args[2] if len(op.args) > 2 else None)
        return not (isinstance(flag, gast.Constant) and not flag.value)
    if op.fn is np.unique:  # a tuple with any of its flags, else the values alone
        flags = [op.kwargs.get(key, op.args[i] if len(op.args) > i else None) for i, key in _UNIQUE_FLAGS]
        return any(flag is not None and not (isinstance(flag, gast.Constant) and not flag.value) for flag in flags)
    if op.fn is np.linalg.qr:
        mode = op.kwargs.get("mode", op.args[1] if len(op.args) > 1 else None)
        return not (isinstance(mode, gast.Constant) and mode.value == "r")
    return True


#: numpy functions (besides ufuncs) whose array arguments the rules compute with: a list given there is
#: passed as ``np.asarray(list)``, which is what numpy makes of it
ARRAY_ARGUMENTS = {np.dot, np.vdot, np.inner, np.outer, np.kron, np.cross, np.tensordot, np.clip}


def needs_unbroadcast(fn) -> bool:
    """Whether a rule's gradients may have the output's (broadcast) shape."""
    if isinstance(fn, np.ufunc):
        return fn.nin >= 2
    return fn not in _SHAPE_KEEPING


_SHAPE_KEEPING: set = {
    np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod, np.var, np.std,
    np.linalg.norm, np.reshape, np.ravel, np.squeeze, np.expand_dims, np.transpose,
    np.swapaxes, np.moveaxis, np.concatenate, np.stack, rules.getitem, rules.scatter,
    rules.sigmoid, rules.relu, rules.max_along, rules.min_along, rules.vector_norm,
    rules.astype, attributes.attribute,
    runtime.gradient_tuple,  # its value's gradient is a tuple where the value is (a rule's gradients): never summed
}
_SHAPE_KEEPING = {getattr(rules.find(f), "fn", f) for f in _SHAPE_KEEPING}
