"""Graph nodes: one per recorded operation, named as PyTorch names them.

A node keeps what its rule (from the shared table) needs: the arguments the
operation was called with and, when the rule reads it, the output.  Tensors
the rule only inspects for ``shape``/``dtype`` are kept as metadata, so
freeing the graph after ``backward()`` drops the arrays themselves and only
nodes whose rules read saved values refuse a second backward, as in PyTorch.

Long: a node's making (``attach_node``), its backward (``apply``, with the
paths of one and two operands spelled out, since every operation runs them)
and its release read and write the same slots in the same layout; they stay
in one module so that they change together.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, cast

import numpy as np

from ..rules import Rule, unbroadcast
from ..rules._introspect import argument_usage
from ._compat import IGNORE_ERRORS, restore, set_errors
from ._format import legacy_type_name
from ._kernels import vjp_kernel
from ._modes import _state
from ._tensor import Tensor

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

_sequence = itertools.count()
FIRST: tuple = ((0,),)  # the slots of a node of one tensor, and of two operands, as the recording door spells them
BOTH: tuple = ((0,), (1,))
_new = object.__new__  # making an object without calling its class: see attach_node
_weak = weakref.ref


class Meta:
    """What a rule may read of a freed argument: shape, ndim, dtype, size."""

    __slots__ = ("shape", "ndim", "dtype", "size")

    def __init__(self, array):
        if isinstance(array, np.ndarray):
            self.shape, self.ndim, self.dtype, self.size = array.shape, array.ndim, array.dtype, array.size
            return
        self.shape = np.shape(array)
        self.ndim = len(self.shape)
        self.dtype = getattr(array, "dtype", None)
        self.size = int(np.prod(self.shape)) if self.shape else 1


def meta_of(array) -> Meta:
    """``Meta(array)``, made without a call of the class for an array (every node of a rule that reads a shape)."""
    if type(array) is not np.ndarray:
        return Meta(array)
    meta = _new(Meta)
    meta.shape, meta.ndim, meta.dtype, meta.size = array.shape, array.ndim, array.dtype, array.size
    return meta


class Node:
    """Base of every ``grad_fn``; subclasses carry PyTorch's names."""

    __slots__ = (
        "next_functions", "_metadata", "_seq", "_pre_hooks", "_post_hooks", "__weakref__",
    )

    def __init__(self):
        self.next_functions: tuple = ()
        self._metadata = None  # made on first use: most nodes never get metadata or hooks
        self._seq = next(_sequence)
        self._pre_hooks: tuple | list = ()  # callables hook(grad) -> grad | None, for output 0
        self._post_hooks: tuple | list = ()

    @property
    def metadata(self) -> dict:
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def name(self) -> str:
        return type(self).__name__

    def register_hook(self, fn):
        if not isinstance(self._post_hooks, list):
            self._post_hooks = []
        self._post_hooks.append(fn)
        return _NodeHookHandle(self._post_hooks, fn)

    def register_prehook(self, fn):
        return _NodeHookHandle(self.pre_hook_list(), fn, add=True)

    def pre_hook_list(self) -> list:
        """The list tensor hooks on this node's output are added to."""
        if not isinstance(self._pre_hooks, list):
            self._pre_hooks = []
        return self._pre_hooks


class _NodeHookHandle:
    def __init__(self, hooks, fn, add=False):
        self._hooks, self._fn = hooks, fn
        if add:
            hooks.append(fn)

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


class FunctionNode(Node):
    """A recorded call ``fn(*args, **kwargs)`` whose backward is a table rule."""

    __slots__ = (
        "_rule", "_plan", "_args", "_kwargs", "_slots", "_slot_meta", "_has_meta", "_ans", "_ans_meta",
        "_saved", "_freed", "_needs_saved",
    )
    # set by attach_node, which makes every FunctionNode
    _rule: Rule
    _plan: _Plan
    _args: Any  # a tuple or a list as recorded, a list once released
    _kwargs: dict
    _slots: tuple
    _slot_meta: Any  # the recorded arrays until _meta() has run, then its list (or the door's tuple)
    _has_meta: bool
    _ans: Any
    _ans_meta: Meta | None
    _saved: list | tuple
    _freed: bool
    _needs_saved: bool

    def _meta(self) -> list:
        """(shape, dtype or None) of each slot with an edge (None for the others), for un-broadcasting.

        Taken from the arrays the operation ran on, on first use: nodes that
        backward never reaches do not pay for it.
        """
        if self._has_meta:
            return self._slot_meta
        raw_args = self._slot_meta
        meta: list = []
        for s, edge in zip(self._slots, self.next_functions):
            if edge[0] is None:
                meta.append(None)
                continue
            value = raw_args[s[0]] if len(s) == 1 else raw_args[s[0]][s[1]]
            if isinstance(value, np.ndarray):
                meta.append((value.shape, value.dtype))
            else:
                meta.append(((), None) if isinstance(value, (int, float, complex)) else (np.shape(value), None))
        self._slot_meta = meta
        self._has_meta = True
        return meta

    # -- saved values ---------------------------------------------------------

    def _release(self) -> None:
        """Free saved arrays after a backward without ``retain_graph``."""
        if self._freed:
            return
        self._freed = True
        self._ans = None
        if not self._has_meta:
            self._meta()  # drops the recorded arrays
        dropped = self._plan.dropped
        if not dropped:
            return
        args = self._args = list(self._args)
        for i, as_meta in dropped:
            data = args[i]
            if isinstance(data, Tensor):
                data = data._data
            elif not isinstance(data, np.ndarray):  # numbers stay, and lists of arrays: rules index into them
                continue
            args[i] = meta_of(data) if as_meta else None

    def _check_saved(self) -> None:
        if self._freed and self._needs_saved:
            raise RuntimeError(SECOND_BACKWARD)
        for tensor, counter, version, op in self._saved:
            if counter.value != version:
                ans_meta = self._ans_meta if self._ans_meta is not None else Meta(self._ans)
                if tensor is not None:  # a saved input is named by its history now, as PyTorch does
                    op = _op_name(tensor)
                raise RuntimeError(_version_message(tensor, ans_meta, counter.value, version, op))

    def _rebind_output(self, counter) -> None:
        """The output was written into another tensor (in place): check that tensor's version."""
        self._saved = [(None, counter, counter.value, op) if tensor is None else (tensor, c, v, op)
                       for tensor, c, v, op in self._saved]

    @property
    def _arg_usage(self) -> tuple:
        return self._plan.arg_usage

    @property
    def _ans_usage(self) -> str:
        return self._plan.ans_usage

    def saved_argument(self, index):
        """The value saved for positional argument ``index`` (``_saved_self``...)."""
        if self._freed and self._plan.arg_usage[index] == "value":
            raise RuntimeError(SECOND_BACKWARD)
        return self._args[index]

    def __getattr__(self, name):
        """PyTorch's ``_saved_self``, ``_saved_other``, ``_saved_result``, ``_saved_exponent``, ``_saved_alpha``."""
        field = name[len("_saved_"):] if name.startswith("_saved_") else None
        if field is None or field not in _saved_fields(self):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        if field == "alpha":
            return 1
        if field == "result":
            if self._ans is None:
                raise RuntimeError(SECOND_BACKWARD)
            return Tensor._from_node(self._ans, self)
        index = 0 if field == "self" else 1
        if field == "exponent" and not _has_array(self._args[index]):
            return self._args[index]
        value = self.saved_argument(index)
        if self._freed:
            raise RuntimeError(SECOND_BACKWARD)
        if not isinstance(value, Tensor):
            return Tensor._make(np.asarray(value))
        return value

    def __dir__(self):
        return sorted(set(super().__dir__()) | {f"_saved_{f}" for f in _saved_fields(self)})

    # -- backward --------------------------------------------------------------

    def apply(self, grad, create_graph: bool, wrap):
        """Gradients for each slot (``None`` for slots without an edge)."""
        if self._saved or self._freed:
            self._check_saved()
        plan = self._plan
        if self._freed and plan.ans_usage == "value":
            raise RuntimeError(SECOND_BACKWARD)
        args = self._args
        if not create_graph and not self._kwargs:  # the common case: the rule called with arrays, by position
            ans = self._ans if self._ans is not None else self._ans_meta
            token = set_errors(IGNORE_ERRORS)  # inf and nan at singular points are results, as in torch
            try:
                if len(args) == 2:  # one operation on two operands, without a tuple to unpack
                    a, b = args
                    out = plan.vjp(grad, ans,
                                   a._data if isinstance(a, Tensor) else _raw(a) if isinstance(a, (list, tuple)) else a,
                                   b._data if isinstance(b, Tensor) else _raw(b) if isinstance(b, (list, tuple)) else b)
                elif len(args) == 1:
                    a = args[0]
                    out = plan.vjp(grad, ans,
                                   a._data if isinstance(a, Tensor) else _raw(a) if isinstance(a, (list, tuple)) else a)
                else:
                    out = plan.vjp(grad, ans, *_arrays(args))
            finally:
                restore(token)
        else:
            if create_graph:
                ans = wrap(self._ans, self) if self._ans is not None else self._ans_meta
            else:
                args = _arrays(args)
                ans = self._ans if self._ans is not None else self._ans_meta
            token = set_errors(IGNORE_ERRORS)
            if create_graph:
                outer, _state.in_backward = _state.in_backward, True
            try:
                out = plan.vjp(grad, ans, *args, **self._kwargs) if self._kwargs else plan.vjp(grad, ans, *args)
            finally:
                restore(token)
                if create_graph:
                    _state.in_backward = outer
        metas = self._slot_meta if self._has_meta else self._meta()
        slots = self._slots
        if slots is FIRST:  # one tensor (its slot has the edge, else there were no node): no loop
            g = out if not isinstance(out, tuple) else out[0] if out else None
            if g is None:
                raise RuntimeError(f"the rule for {self._rule.name} returned no gradient for argument 0, "
                                   "which requires grad")
            shape, dtype = metas[0]
            if type(g) is np.ndarray and g.shape == shape and (dtype is None or g.dtype == dtype):
                return [g]
            return [self._fitted(g, shape, dtype, 0)]
        if slots is BOTH:  # two operands (x * y, x + 2): no loop
            if isinstance(out, tuple):
                g0, g1 = (out[0] if out else None), (out[1] if len(out) > 1 else None)
            else:
                g0, g1 = out, None
            meta0, meta1 = metas
            if meta0 is None:
                g0 = None
            else:
                if g0 is None:
                    raise RuntimeError(f"the rule for {self._rule.name} returned no gradient for argument 0, "
                                       "which requires grad")
                shape, dtype = meta0
                if not (type(g0) is np.ndarray and g0.shape == shape and (dtype is None or g0.dtype == dtype)):
                    g0 = self._fitted(g0, shape, dtype, 0)
            if meta1 is None:
                g1 = None
            else:
                if g1 is None:
                    raise RuntimeError(f"the rule for {self._rule.name} returned no gradient for argument 1, "
                                       "which requires grad")
                shape, dtype = meta1
                if not (type(g1) is np.ndarray and g1.shape == shape and (dtype is None or g1.dtype == dtype)):
                    g1 = self._fitted(g1, shape, dtype, 1)
            return [g0, g1]
        if not isinstance(out, tuple):
            out = (out,)
        grads: list = []
        returned = len(out)
        for slot, meta in zip(slots, metas):
            if meta is None:  # no edge
                grads.append(None)
                continue
            g = out[slot[0]] if slot[0] < returned else None
            if g is not None and len(slot) > 1:
                g = g[slot[1]]
            if g is None:
                raise RuntimeError(
                    f"the rule for {self._rule.name} returned no gradient for argument {slot[0]}, "
                    "which requires grad"
                )
            shape, dtype = meta
            if type(g) is np.ndarray and g.shape == shape and (dtype is None or g.dtype == dtype):
                grads.append(g)  # the common case: nothing to reduce or cast
            else:
                grads.append(self._fitted(g, shape, dtype, len(grads)))
        return grads

    def _fitted(self, g, shape, dtype, index: int):
        """The rule's gradient ``g`` for slot ``index`` summed back to the slot's ``shape`` and cast to its ``dtype``."""
        if type(g) is np.ndarray and g.shape == shape:
            return _cast(g, dtype)
        fitted = unbroadcast(g, shape)
        if shape_of(fitted) != shape:  # a rule's gradient that un-broadcasting cannot fit: never stored
            raise RuntimeError(invalid_gradient(self.name(), index, shape_of(g), shape))
        g = fitted
        if dtype is not None and getattr(g, "dtype", None) != dtype:
            g = _cast(g, dtype) if hasattr(g, "astype") else _cast(np.asarray(g), dtype)
        return g



def attach_node(result, rule: Rule, name: str, args, kwargs, slots, edges, raw_args, mask: int, meta=None):
    """Give ``result`` (the operation's output, a new tensor) a node called ``name`` for ``rule``; returns ``result``.

    ``args`` and ``kwargs`` are the call's, ``raw_args`` its arguments as arrays, ``edges`` the
    ``next_functions`` of ``slots``; ``mask`` has bit i set when positional argument i has an edge.
    ``meta`` is what ``_meta()`` would make of ``raw_args``, when the caller has it at hand (the recording
    door's fast paths: every slot with an edge is a tensor's array there), else it is made on first use.
    The node is made without a call of its class (``cls(...)`` with an ``__init__`` costs every operation
    a tuple of the arguments and two calls more).
    """
    node: FunctionNode = _new(_node_classes.get(name) or node_class(name))
    node.next_functions = edges
    node._metadata = None  # made on first use: most nodes never get metadata or hooks
    node._seq = next(_sequence)
    node._pre_hooks = ()  # callables hook(grad) -> grad | None, for output 0
    node._post_hooks = ()
    node._rule = rule
    node._kwargs = kwargs
    node._slots = slots
    count = len(args)
    node._plan = plan = _plans.get((rule, count, mask)) or _plan(rule, count, mask)
    node._args = args
    if meta is None:
        node._slot_meta = raw_args  # the arrays as recorded, until _meta() takes their shapes and dtypes
        node._has_meta = False
    else:
        node._slot_meta = meta
        node._has_meta = True
    node._freed = False
    result._grad_fn = node
    result._requires_grad = True
    if not plan.saves:  # x + y: the rule reads no value, so nothing to save, keep or version-check
        node._ans = node._ans_meta = None
        node._saved = ()
        node._needs_saved = False
        return result
    ans = result._data
    node._ans = ans if plan.keep_ans else None  # a rule that never reads the output gets None
    node._ans_meta = meta_of(ans) if plan.ans_usage == "meta" else None
    # (tensor, version counter, version at save, None) per saved tensor; the output's entry has
    # no tensor and its node's name
    saved: list | None = None
    needs_saved = False
    for i in plan.read_args:
        arg = args[i]
        if isinstance(arg, Tensor):
            counter = arg._version_counter
            if saved is None:
                saved = []
            saved.append((arg, counter, counter.value, None))
        elif isinstance(arg, (list, tuple)):
            for t in _tensors_in(arg):
                if saved is None:
                    saved = []
                saved.append((t, t._version_counter, t._version_counter.value, None))
            needs_saved = needs_saved or _has_array(arg)
        elif isinstance(arg, np.ndarray):
            needs_saved = True
    if plan.keep_ans:
        counter = result._version_counter
        if saved is None:
            saved = []
        saved.append((None, counter, counter.value, name))
    node._saved = saved or ()
    node._needs_saved = needs_saved or saved is not None
    return result


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: it adds gradients into ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"


def accumulation_node(leaf) -> AccumulateGrad:
    """The leaf's AccumulateGrad node: the same one while a graph holds it."""
    node = leaf._acc_ref() if leaf._acc_ref is not None else None
    if node is None:  # AccumulateGrad(leaf), without a call of the class: a leaf's first use in every graph
        node = _new(AccumulateGrad)
        node.next_functions = ()
        node._metadata = None
        node._seq = next(_sequence)
        node._pre_hooks = node._post_hooks = ()
        node.variable = leaf
        leaf._acc_ref = _weak(node)
    return node


_node_classes: dict[str, type] = {}


def node_class(name: str) -> type:
    """The FunctionNode subclass called ``name`` (``AddBackward0``...).

    Its ``__module__`` is ``builtins`` so the default repr reads
    ``<AddBackward0 object at 0x...>`` exactly as PyTorch's does.
    """
    cls = _node_classes.get(name)
    if cls is None:
        cls = type(name, (FunctionNode,), {"__slots__": (), "__module__": "builtins"})
        _node_classes[name] = cls
    return cls


for _cls in (Node, FunctionNode, AccumulateGrad):
    _cls.__module__ = "builtins"


# ---------------------------------------------------------------- helpers


def shape_of(value) -> tuple:
    """The shape of an array, a Tensor or a number, without converting a Tensor."""
    return tuple(value.shape) if hasattr(value, "shape") else np.shape(value)


def invalid_gradient(name: str, index: int, got, expected) -> str:
    """PyTorch's words for a gradient whose shape is not its input's."""
    return (f"Function {name} returned an invalid gradient at index {index} - got {list(got)} "
            f"but expected shape compatible with {list(expected)}")


def _cast(g, dtype):
    """``g`` as ``dtype``; a real argument takes the real part of a complex gradient (docs/rules.md)."""
    if np.dtype(g.dtype).kind == "c" and np.dtype(dtype).kind != "c":  # np.dtype: a Tensor's dtype is a DType
        g = g.real
    return g.astype(dtype)


def _raw(value):
    if isinstance(value, Tensor):
        return value._data
    if isinstance(value, list):
        return [_raw(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_raw(v) for v in value)
    return value






def _tensors_in(value):
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Tensor)]
    return []


def _has_array(value):
    if isinstance(value, (list, tuple)):
        return any(_has_array(v) for v in value)
    return isinstance(_raw(value), np.ndarray)


class _Plan:
    """What every node of one rule, arity and edge pattern computes and keeps; made once, shared."""

    __slots__ = ("vjp", "arg_usage", "ans_usage", "keep_ans", "read_args", "dropped", "saves")

    def __init__(self, rule: Rule, count: int, mask: int):
        needed = tuple(bool(mask >> i & 1) for i in range(count))  # rules skip gradients no input needs
        vjp = cast(Callable[..., Any], rule.vjp)  # a rule the tape records has its reverse rule
        self.vjp: Callable[..., Any]
        if all(needed):
            self.vjp, usage = vjp_kernel(vjp), rule.usage
        else:  # ``x * 3`` neither keeps nor version-checks ``x``, as in PyTorch
            self.vjp, usage = rule.specialized(needed), rule.usage_for(needed)
        self.arg_usage = tuple(argument_usage(vjp, usage, i) for i in range(count))
        self.ans_usage = argument_usage(vjp, usage, -1)
        self.keep_ans = self.ans_usage == "value"
        self.read_args = tuple(i for i, u in enumerate(self.arg_usage) if u == "value")
        self.dropped = tuple((i, u == "meta") for i, u in enumerate(self.arg_usage) if u != "value")
        self.saves = bool(self.read_args) or self.ans_usage in ("value", "meta")  # a node keeps a value or a shape


_plans: dict = {}


def _plan(rule: Rule, count: int, mask: int) -> _Plan:
    """The plan for nodes of ``rule`` with ``count`` positional arguments and edges ``mask``."""
    if len(_plans) > 4096:
        _plans.clear()
    plan = _plans[(rule, count, mask)] = _Plan(rule, count, mask)
    return plan


def _arrays(args):
    """``args`` with tensors replaced by their arrays (also inside lists), as rules take them."""
    return [a._data if isinstance(a, Tensor) else _raw(a) if isinstance(a, (list, tuple)) else a for a in args]


_SAVED_FIELDS = {
    "AddBackward0": ("alpha",), "SubBackward0": ("alpha",),
    "MulBackward0": ("self", "other"), "DivBackward0": ("self", "other"),
    "PowBackward0": ("self", "exponent"), "PowBackward1": ("self", "exponent", "result"),
}


def _saved_fields(node) -> tuple:
    """Which ``_saved_*`` attributes a node shows: PyTorch's for common ops, else what its rule reads."""
    fields = _SAVED_FIELDS.get(type(node).__name__)
    if fields is not None:
        return fields
    fields = ()
    if node._arg_usage and node._arg_usage[0] == "value":
        fields += ("self",)
    if node._ans_usage == "value":
        fields += ("result",)
    return fields


def _op_name(tensor) -> str | None:
    grad_fn = getattr(tensor, "_grad_fn", None)
    if grad_fn is None:
        return None
    return type(grad_fn).__name__


def _version_message(tensor, ans_meta, now, expected, op_name) -> str:
    meta = ans_meta if tensor is None else Meta(tensor._data)
    shape = ", ".join(str(n) for n in meta.shape)
    described = f"[{legacy_type_name(meta.dtype)} [{shape}]]"
    if op_name:
        op = op_name[: -len("Backward0")] if op_name.endswith("Backward0") else op_name
        described += f", which is output 0 of {op},"
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: {described} is at version {now}; expected version {expected} instead. Hint: "
        "enable anomaly detection to find the operation that failed to compute its gradient, with "
        "torch.autograd.set_detect_anomaly(True, check_nan=False)."
    )
