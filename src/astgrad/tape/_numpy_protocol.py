"""numpy's dispatch protocols: plain numpy code called on Tensors is taped.

``np.sin(t)`` arrives in ``__array_ufunc__`` and ``np.sum(t, axis=0)`` in
``__array_function__``; both look the callable up in the shared rule table
and record it through ``apply_op``.  A callable with no rule raises an error
that names it and says how to register one, never a silent zero.
"""

from __future__ import annotations

import inspect

from typing import Any

import numpy as np

from .. import rules
from ..rules import _registry, find, lookup, raw
from . import _record
from ._dual import tangent_of
from ._kernels import kernel
from ._modes import _state
from ._record import FIRST, apply_nondiff, apply_op, is_tensor
from ._tensor import Tensor, extends

_UFUNC_NAMES: dict[Any, str] = {
    np.add: "AddBackward0", np.subtract: "SubBackward0", np.multiply: "MulBackward0",
    np.divide: "DivBackward0", np.power: "PowBackward1", np.negative: "NegBackward0",
    np.absolute: "AbsBackward0", np.maximum: "MaximumBackward0", np.minimum: "MinimumBackward0",
    np.matmul: "MmBackward0", np.log1p: "Log1PBackward0", np.arctan2: "Atan2Backward0",
}
_FUNCTION_NAMES: dict[Any, str | tuple[str, str]] = {
    np.mean: ("MeanBackward0", "MeanBackward1"), np.sum: ("SumBackward0", "SumBackward1"),
    np.max: ("MaxBackward1", "AmaxBackward0"), np.amax: ("MaxBackward1", "AmaxBackward0"),
    np.min: ("MinBackward1", "AminBackward0"), np.amin: ("MinBackward1", "AminBackward0"),
    np.reshape: "ViewBackward0", np.ravel: "ViewBackward0", np.transpose: "PermuteBackward0",
    np.swapaxes: "TransposeBackward0", np.moveaxis: "PermuteBackward0", np.expand_dims: "UnsqueezeBackward0",
    np.squeeze: "SqueezeBackward0", np.broadcast_to: "ExpandBackward0", np.concatenate: "CatBackward0",
    np.stack: "StackBackward0", np.where: "WhereBackward0", np.clip: "ClampBackward1",
    np.dot: "DotBackward0", np.outer: "MulBackward0", np.linalg.norm: "LinalgVectorNormBackward0",
    np.prod: "ProdBackward0", np.var: "VarBackward0", np.std: "StdBackward0", np.copy: "CloneBackward0",
}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def node_name(fn, kwargs) -> str:
    """The PyTorch-style node name for a numpy callable."""
    name = _UFUNC_NAMES.get(fn) or _FUNCTION_NAMES.get(fn)
    if isinstance(name, tuple):
        return name[0] if kwargs.get("axis") is None else name[1]
    if name:
        return name
    return _camel(getattr(fn, "__name__", "Function")) + "Backward0"


def _requires_grad(values) -> bool:
    for v in values:
        if isinstance(v, (list, tuple)):
            if _requires_grad(v):
                return True
        elif is_tensor(v) and (v._requires_grad or _record._dual and tangent_of(v) is not None):
            return True  # a tangent needs a rule as a gradient does
    return False


def _array_slots(args) -> tuple:
    slots: list[tuple[int, ...]] = []
    for i, arg in enumerate(args):
        if isinstance(arg, (Tensor, np.ndarray)):
            slots.append((i,))
        elif isinstance(arg, (list, tuple)):
            slots.extend((i, j) for j, a in enumerate(arg) if isinstance(a, (Tensor, np.ndarray)))
    return tuple(slots)


def _pieces(func, args, kwargs):
    """``np.split``/``np.array_split`` of a tensor: one slice node per piece."""
    ary, sections = args[0], args[1] if len(args) > 1 else kwargs["indices_or_sections"]
    axis = args[2] if len(args) > 2 else kwargs.get("axis", 0)
    ranges = func(np.arange(ary.shape[axis]), sections)
    lead = (slice(None),) * (axis % ary.ndim)
    pieces = []
    for r in ranges:
        start = int(r[0]) if len(r) else 0
        index = lead + (slice(start, start + len(r)),)
        pieces.append(apply_op("SplitBackward0", rules.getitem, (ary, index), slots=((0,),)))
    return pieces


def _split_along(axis_of):
    """``np.hsplit``/``vsplit``/``dsplit``: ``np.split`` along the axis each one picks."""
    def pieces(func, args, kwargs):
        sections = args[1] if len(args) > 1 else kwargs["indices_or_sections"]
        return _pieces(np.split, (args[0], sections, axis_of(args[0].ndim)), {})
    return pieces


def _gradient(func, args, kwargs):
    """``np.gradient``: one node per differenced axis."""
    f, varargs = args[0], args[1:]
    axes, spacings = rules.gradient_axes(f, varargs, kwargs.get("axis"))
    edge_order = kwargs.get("edge_order", 1)
    outputs = tuple(apply_op("GradientBackward0", rules.gradient_along, (f, h, a, edge_order),
                             slots=_array_slots((f, h)))
                    for a, h in zip(axes, spacings))
    return outputs[0] if len(outputs) == 1 else outputs


def _meshgrid(func, args, kwargs):
    """``np.meshgrid``: each output its vector reshaped and broadcast (recorded nodes), a tuple as numpy returns."""
    shapes = [np.shape(grid) for grid in func(*[np.zeros(np.size(x)) for x in args], **kwargs)]
    indexing = kwargs.get("indexing", "xy")
    outputs = []
    for i, (x, shape) in enumerate(zip(args, shapes)):
        layout = [1] * len(shape)
        layout[1 - i if indexing == "xy" and len(args) > 1 and i < 2 else i] = -1
        grid = np.broadcast_to(np.reshape(x, layout), shape)
        outputs.append(np.copy(grid) if kwargs.get("copy", True) else grid)
    return tuple(outputs)



def _broadcast_arrays(func, args, kwargs):
    """``np.broadcast_arrays``: each output its argument broadcast (a recorded node), a tuple as numpy returns."""
    shape = np.broadcast_shapes(*[np.shape(a._data if is_tensor(a) else a) for a in args])
    return tuple(np.broadcast_to(a, shape) for a in args)


def _unstack(func, args, kwargs):
    """``np.unstack``: one slice node per index along the axis, a tuple as numpy returns."""
    (x,) = args
    axis = kwargs.get("axis", 0) % x.ndim
    lead = (slice(None),) * axis
    return tuple(apply_op("UnbindBackward0", rules.getitem, (x, lead + (i,)), slots=((0,),))
                 for i in range(x.shape[axis]))


def _block(func, args, kwargs):
    """``np.block``: nested ``np.concatenate`` nodes, innermost lists along the last axis, as numpy joins them."""
    arrays = args[0] if args else kwargs["arrays"]
    depth = rules.joining.block_depth(arrays)
    ndim = max(depth, rules.joining.block_ndim(arrays))

    def join(item):
        if not isinstance(item, list):
            return np.reshape(item, (1,) * (ndim - np.ndim(item)) + np.shape(item))
        return np.concatenate([join(part) for part in item], axis=ndim - rules.joining.block_depth(item))
    return join(arrays) if depth else np.copy(arrays)

def _slogdet(func, args, kwargs):
    (a,) = args
    if np.iscomplexobj(a._data if is_tensor(a) else a):  # the phase of a complex determinant turns with a
        sign = apply_op("LinalgSlogdetBackward0", rules.slogdet_sign, (a,))
    else:
        sign = apply_nondiff(lambda x: np.linalg.slogdet(x)[0], (a,))
    return _SLOGDET_RESULT(sign, apply_op("LinalgSlogdetBackward0", rules.logabsdet, (a,)))


def _eigh(func, args, kwargs):
    a, uplo = args[0], (args[1] if len(args) > 1 else kwargs.get("UPLO", "L"))
    values = apply_op("LinalgEighBackward0", rules.eigh_values, (a, uplo), slots=((0,),))
    vectors = apply_op("LinalgEighBackward0", rules.eigh_vectors, (a, uplo), slots=((0,),))
    return _EIGH_RESULT(values, vectors)


def _svd(func, args, kwargs):
    a = args[0]
    full = args[1] if len(args) > 1 else kwargs.get("full_matrices", True)
    compute_uv = args[2] if len(args) > 2 else kwargs.get("compute_uv", True)
    hermitian = args[3] if len(args) > 3 else kwargs.get("hermitian", False)
    values = apply_op("LinalgSvdBackward0", rules.svd_values, (a, hermitian), slots=((0,),))
    if not compute_uv:
        return values
    u = apply_op("LinalgSvdBackward0", rules.svd_u, (a, full, hermitian), slots=((0,),))
    vh = apply_op("LinalgSvdBackward0", rules.svd_vh, (a, full, hermitian), slots=((0,),))
    return _SVD_RESULT(u, values, vh)


def _qr(func, args, kwargs):
    a = args[0]
    mode = args[1] if len(args) > 1 else kwargs.get("mode", "reduced")
    r = apply_op("LinalgQrBackward0", rules.qr_r, (a, mode), slots=((0,),))
    if mode == "r":
        return r
    return _QR_RESULT(apply_op("LinalgQrBackward0", rules.qr_q, (a, mode), slots=((0,),)), r)


def _lstsq(func, args, kwargs):
    a, b = args[0], args[1] if len(args) > 1 else kwargs["b"]
    rcond = args[2] if len(args) > 2 else kwargs.get("rcond", None)
    x = apply_op("LinalgLstsqBackward0", rules.lstsq_solution, (a, b, rcond), slots=((0,), (1,)))
    residuals = apply_op("LinalgLstsqBackward0", rules.lstsq_residuals, (a, b, rcond), slots=((0,), (1,)))
    rank = np.linalg.matrix_rank(a.detach().numpy() if is_tensor(a) else a)
    values = apply_op("LinalgSvdBackward0", rules.svd_values, (a,), slots=((0,),))
    return x, residuals, rank, values


def _eig(func, args, kwargs):
    (a,) = args
    values = apply_op("LinalgEigBackward0", rules.eig_values, (a,), slots=((0,),))
    return _EIG_RESULT(values, apply_op("LinalgEigBackward0", rules.eig_vectors, (a,), slots=((0,),)))


def _histogram(func, args, kwargs):
    """``np.histogram``: its counts and its edges, each a node (both move with the data or the weights)."""
    bound = inspect.signature(np.histogram).bind(*args, **kwargs)
    bound.apply_defaults()
    given = tuple(bound.arguments.values())
    slots = _array_slots(given)
    return (apply_op("HistogramBackward0", rules.histogram_counts, given, slots=slots),
            apply_op("HistogramBackward0", rules.histogram_edges, given, slots=slots))


_SLOGDET_RESULT = type(np.linalg.slogdet(np.eye(1)))
_EIG_RESULT = type(np.linalg.eig(np.eye(1)))
_QR_RESULT = type(np.linalg.qr(np.eye(1)))
_SVD_RESULT = type(np.linalg.svd(np.eye(1)))
_EIGH_RESULT = type(np.linalg.eigh(np.eye(1)))
#: numpy functions with several outputs: each output becomes its own node.
_MULTI_OUTPUT = {np.split: _pieces, np.array_split: _pieces, np.linalg.slogdet: _slogdet,
                 np.linalg.eigh: _eigh, np.linalg.svd: _svd, np.linalg.qr: _qr, np.linalg.lstsq: _lstsq,
                 np.linalg.eig: _eig, np.gradient: _gradient, np.histogram: _histogram, np.meshgrid: _meshgrid,
                 np.broadcast_arrays: _broadcast_arrays, np.block: _block,
                 np.hsplit: _split_along(lambda ndim: 1 if ndim > 1 else 0),
                 np.vsplit: _split_along(lambda ndim: 0), np.dsplit: _split_along(lambda ndim: 2)}
if hasattr(np, "unstack"):  # numpy 2.1 on
    _MULTI_OUTPUT[np.unstack] = _unstack



def _divmod(x, y):
    return np.floor_divide(x, y), np.remainder(x, y)


def _modf(x):
    fraction = rules.two_outputs.modf_fraction(x)
    return fraction, apply_nondiff(np.trunc, (x,))


def _frexp(x):
    return rules.two_outputs.frexp_mantissa(x), apply_nondiff(lambda a: np.frexp(a)[1], (x,))


#: numpy's ufuncs with two outputs: each output its own node, the piecewise constant ones none
_TWO_OUTPUTS: dict = {np.divmod: _divmod, np.modf: _modf, np.frexp: _frexp}

@extends(Tensor)
class NumpyProtocol:
    """numpy's ``__array_ufunc__``/``__array_function__`` for :class:`Tensor`."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or "out" in kwargs:
            return NotImplemented
        if ufunc in _TWO_OUTPUTS:
            if kwargs:  # the recorded outputs are numpy's defaults: a dtype or where= would change them unseen
                raise TypeError(f"astgrad: numpy.{ufunc.__name__} on a Tensor takes no keyword arguments "
                                f"({', '.join(kwargs)}); call it with the inputs alone")
            return _TWO_OUTPUTS[ufunc](*inputs)
        rule = find(ufunc)
        if rule is None and _requires_grad(inputs):
            lookup(ufunc)  # raises, naming the ufunc and defvjp
        if rule is None or not rule.differentiable:
            return apply_nondiff(ufunc, inputs, kwargs)
        if not kwargs and len(inputs) == 1 and isinstance(inputs[0], Tensor):
            return apply_op(node_name(ufunc, kwargs), ufunc, (inputs[0],), promote=True, rule=rule)
        return apply_op(node_name(ufunc, kwargs), ufunc, inputs, kwargs, promote=True)

    def __array_function__(self, func, types, args, kwargs):
        if not kwargs and len(args) == 1:  # np.mean(t), np.linalg.norm(t): _apply_function's first path, remembered
            entry = _one_tensor.get(func)
            if entry is not None and entry[0] == _registry._generation and type(args[0]) is Tensor:
                return apply_op(entry[1], func, args, None, None, False, entry[2], entry[3])
        if func is np.where and _state.in_backward and not kwargs:
            chosen = _constant_choice(*args)
            if chosen is not None:
                return chosen
        if func in _MULTI_OUTPUT:
            return _MULTI_OUTPUT[func](func, args, kwargs)
        return _apply_function(func, args, kwargs, True)

    @classmethod
    def _astgrad_apply(cls, fn, args, kwargs):
        """Entry for :func:`astgrad.primitive` functions called with Tensors."""
        return _apply_function(fn, args, kwargs)


def _constant_choice(condition=None, x=None, y=None):
    """In a rule run with ``create_graph``, ``np.where(flag, a, b)`` with a Python bool ``flag`` and a number on
    the side not taken: the tensor chosen, itself.

    The result has its shape and dtype (a number neither broadcasts nor
    promotes a floating tensor), so no ``WhereBackward0`` node enters the
    gradient's graph where PyTorch's formulas, which have no ``where``,
    put none.  ``None`` when the call is anything else.
    """
    if not isinstance(condition, (bool, np.bool_)):
        return None
    chosen, other = (x, y) if condition else (y, x)
    if is_tensor(chosen) and chosen._data.dtype.kind in "fc" and type(other) in (int, float, bool):
        return chosen
    return None


def _apply_function(fn, args, kwargs, dispatched: bool = False):
    """Record ``fn`` (a numpy function or a primitive) with its rule; its array arguments are the slots.

    ``dispatched``: called from ``__array_function__`` (``fn`` is a numpy function, which numpy hashes),
    which then takes a call of ``fn`` on one tensor without keywords to ``apply_op`` itself.
    """
    try:
        entry = _functions.get(fn)
    except TypeError:  # an unhashable callable
        entry = None
    if entry is None or entry[0] != _registry._generation:  # rules.generation(), inlined
        entry = _function_entry(fn)
    rule = entry[1]
    if not kwargs and len(args) == 1 and type(args[0]) is Tensor and rule is not None and rule.vjp is not None:
        name = entry[2]  # np.mean(t), np.linalg.norm(t): the common case, as below without the checks it skips
        name = name[0] if isinstance(name, tuple) else name
        if dispatched and fn is not np.where:  # (__array_function__ sends np.where's other calls elsewhere first)
            if len(_one_tensor) > 4096:
                _one_tensor.clear()
            _one_tensor[fn] = (entry[0], name, rule, entry[3])
        return apply_op(name, fn, (args[0],), rule=rule, impl=entry[3])
    if rule is None and _requires_grad((*args, *kwargs.values())):
        lookup(fn)  # raises, naming the function and defvjp
    if rule is None or rule.vjp is None:
        return apply_nondiff(fn, args, kwargs)
    if kwargs:
        refused = rule.refused_keyword(kwargs)
        if refused is not None and _requires_grad((*args, *kwargs.values())):
            raise TypeError(f"astgrad: {refused[0]}. {refused[1]}")
        args, kwargs = _bind_keywords(rule, args, kwargs)
    name = entry[2]
    if isinstance(name, tuple):
        name = name[0] if kwargs.get("axis") is None else name[1]
    if len(args) == 1 and isinstance(args[0], (Tensor, np.ndarray)):  # np.mean(t): the common case
        if not kwargs and isinstance(args[0], Tensor):
            return apply_op(name, fn, (args[0],), rule=rule, impl=entry[3])
        slots = FIRST
    else:
        slots = _array_slots(args)
    return apply_op(name, fn, args, kwargs, slots=slots, rule=rule, impl=entry[3])


def _bind_keywords(rule, args, kwargs):
    """Tensors passed by keyword (``np.select(c, v, default=t)``) moved to the positions the rule differentiates."""
    wanted = [key for key, value in kwargs.items() if _requires_grad((value,))]
    if not wanted:
        return args, kwargs
    bound = rule.bind_keywords(args, kwargs, wanted)
    if bound is None:
        raise TypeError(f"astgrad: {rule.name} gives no gradient to {wanted[0]}= passed by keyword; "
                        "pass that argument by position")
    return bound


_functions: dict = {}
#: (table generation, node name, rule, what computes fn) of each function recorded with one tensor and no
#: keywords: what ``__array_function__`` calls ``apply_op`` with for that call, without ``_apply_function``
_one_tensor: dict = {}


def _function_entry(fn) -> tuple:
    """``(table generation, rule or None, node name or (name, name with axis), what computes fn)``."""
    rule = find(fn)
    name = _UFUNC_NAMES.get(fn) or _FUNCTION_NAMES.get(fn)
    if not name:
        name = _camel(getattr(fn, "__name__", "Function")) + "Backward0"
    entry = (rules.generation(), rule, name, kernel(raw(fn)))
    try:
        if len(_functions) > 4096:
            _functions.clear()
        _functions[fn] = entry
    except TypeError:  # an unhashable callable: looked up every time
        pass
    return entry
