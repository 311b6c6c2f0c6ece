"""Graph nodes: one per recorded operation, named as PyTorch names them.

A node keeps what its rule (from the shared table) needs: the arguments the
operation was called with and, when the rule reads it, the output.  Tensors
the rule only inspects for ``shape``/``dtype`` are kept as metadata, so
freeing the graph after ``backward()`` drops the arrays themselves and only
nodes whose rules read saved values refuse a second backward, as in PyTorch.
"""

from __future__ import annotations

import inspect
import itertools
import weakref

import numpy as np

from ..rules import Rule, unbroadcast
from ._modes import quiet, restore

SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they "
    "have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

_sequence = itertools.count()
Tensor = None  # bound by ``_tensor`` once the class exists (it imports this module first)


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


class Node:
    """Base of every ``grad_fn``; subclasses carry PyTorch's names."""

    __slots__ = (
        "next_functions", "_metadata", "_seq", "_pre_hooks", "_post_hooks", "__weakref__",
    )

    def __init__(self):
        self.next_functions = ()
        self._metadata = None  # made on first use: most nodes never get metadata or hooks
        self._seq = next(_sequence)
        self._pre_hooks = ()  # callables hook(grad) -> grad | None, for output 0
        self._post_hooks = ()

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
        "_rule", "_args", "_kwargs", "_slots", "_slot_meta", "_ans", "_ans_meta",
        "_saved", "_freed", "_needs_saved", "_arg_usage", "_ans_usage", "_needed",
    )

    def __init__(self, rule: Rule, args, kwargs, slots, edges, ans, ans_version, ans_grad_fn_name,
                 raw_args=None):
        self.next_functions = edges  # Node.__init__, inlined: this runs for every recorded op
        self._metadata = None
        self._seq = next(_sequence)
        self._pre_hooks = ()
        self._post_hooks = ()
        self._rule = rule
        self._kwargs = kwargs
        self._slots = slots
        count = len(args)
        mask = 0  # bit i: positional argument i has an edge
        for slot, edge in zip(slots, edges):
            if edge[0] is not None:
                mask |= 1 << slot[0]
        needed = _NEEDED.get((count, mask), _needed)  # rules skip gradients no input needs
        self._needed = needed if needed is not _needed else _needed(count, mask)
        self._arg_usage, self._ans_usage = _usages_cache.get((rule, count, self._needed)) or _usages(
            rule, count, self._needed)
        self._args = list(args)
        if raw_args is None:
            raw_args = [_raw(a) for a in args]
        self._slot_meta = meta = []  # (shape, dtype or None) of each slot, for un-broadcasting
        for s in slots:
            value = raw_args[s[0]] if len(s) == 1 else raw_args[s[0]][s[1]]
            if isinstance(value, np.ndarray):
                meta.append((value.shape, value.dtype))
            else:
                meta.append(((), None) if isinstance(value, (int, float, complex)) else (np.shape(value), None))
        usage = self._ans_usage  # the output's Meta is made from it if a version check fails
        self._ans = ans if usage == "value" else None
        self._ans_meta = Meta(ans) if usage == "meta" else None  # a rule that never reads it gets None
        # (description, version counter, version at save, grad_fn name) per saved tensor
        self._saved = saved = []
        needs_saved = False
        for arg, usage in zip(args, self._arg_usage):
            if usage != "value":
                continue
            if isinstance(arg, Tensor):
                counter = arg._version_counter
                grad_fn = arg._grad_fn
                saved.append((arg, counter, counter.value, None if grad_fn is None else type(grad_fn).__name__))
            elif isinstance(arg, (list, tuple)):
                for t in _tensors_in(arg):
                    saved.append((t, t._version_counter, t._version_counter.value, _op_name(t)))
                needs_saved = needs_saved or _has_array(arg)
            elif isinstance(arg, np.ndarray):
                needs_saved = True
        if self._ans is not None and ans_version is not None:
            saved.append((None, ans_version, ans_version.value, ans_grad_fn_name))
        self._needs_saved = needs_saved or bool(saved)
        self._freed = False

    # -- saved values ---------------------------------------------------------

    def _release(self) -> None:
        """Free saved arrays after a backward without ``retain_graph``."""
        if self._freed:
            return
        self._freed = True
        args = self._args
        for i, usage in enumerate(self._arg_usage):
            if usage == "value":
                continue
            arg = args[i]
            data = arg._data if isinstance(arg, Tensor) else arg
            if isinstance(data, np.ndarray):  # lists of arrays stay: rules index into them
                args[i] = Meta(data) if usage == "meta" else None
        self._ans = None

    def _check_saved(self) -> None:
        if self._freed and self._needs_saved:
            raise RuntimeError(SECOND_BACKWARD)
        for tensor, counter, version, op in self._saved:
            if counter.value != version:
                ans_meta = self._ans_meta if self._ans_meta is not None else Meta(self._ans)
                raise RuntimeError(_version_message(tensor, ans_meta, counter.value, version, op))

    def _rebind_output(self, counter) -> None:
        """The output was written into another tensor (in place): check that tensor's version."""
        self._saved = [(None, counter, counter.value, op) if tensor is None else (tensor, c, v, op)
                       for tensor, c, v, op in self._saved]

    def saved_argument(self, index):
        """The value saved for positional argument ``index`` (``_saved_self``...)."""
        if self._freed and self._arg_usage[index] == "value":
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
            from ._tensor import Tensor

            return Tensor._from_node(self._ans, self)
        index = 0 if field == "self" else 1
        if field == "exponent" and not _has_array(self._args[index]):
            return self._args[index]
        value = self.saved_argument(index)
        if self._freed:
            raise RuntimeError(SECOND_BACKWARD)
        if not hasattr(value, "_version"):
            from ._tensor import Tensor

            return Tensor._make(np.asarray(value))
        return value

    def __dir__(self):
        return sorted(set(super().__dir__()) | {f"_saved_{f}" for f in _saved_fields(self)})

    # -- backward --------------------------------------------------------------

    def apply(self, grad, create_graph: bool, wrap):
        """Gradients for each slot (``None`` for slots without an edge)."""
        if self._saved or self._freed:
            self._check_saved()
        if create_graph:
            args = self._args
            ans = wrap(self._ans, self) if self._ans is not None else self._ans_meta
        else:
            args = [a._data if isinstance(a, Tensor) else _raw(a) if isinstance(a, (list, tuple)) else a
                    for a in self._args]
            ans = self._ans if self._ans is not None else self._ans_meta
        if self._freed and self._ans_usage == "value":
            raise RuntimeError(SECOND_BACKWARD)
        needed = self._needed
        vjp = self._rule.vjp if needed is None else (_variants.get((self._rule, needed))
                                                    or _variant(self._rule, needed))
        token = quiet()  # inf and nan at singular points are results, as in torch
        try:
            out = vjp(grad, ans, *args, **self._kwargs) if self._kwargs else vjp(grad, ans, *args)
        finally:
            restore(token)
        if not isinstance(out, tuple):
            out = (out,)
        grads = []
        returned = len(out)
        for slot, edge, meta in zip(self._slots, self.next_functions, self._slot_meta):
            if edge[0] is None:
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
            if type(g) is np.ndarray and g.shape == shape:  # the common case: nothing to reduce
                if dtype is not None and g.dtype != dtype:
                    g = g.astype(dtype)
                grads.append(g)
                continue
            g = unbroadcast(g, shape)
            if dtype is not None and getattr(g, "dtype", None) != dtype:
                g = g.astype(dtype) if hasattr(g, "astype") else np.asarray(g, dtype=dtype)
            grads.append(g)
        return grads


class AccumulateGrad(Node):
    """The node of a leaf that requires grad: it adds gradients into ``.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        super().__init__()
        self.variable = variable

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"


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


def _raw(value):
    data = getattr(value, "_data", None)
    if data is not None and hasattr(value, "_version"):
        return data
    if isinstance(value, list):
        return [_raw(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_raw(v) for v in value)
    return value


def _at(args, slot):
    value = args[slot[0]]
    return value[slot[1]] if len(slot) > 1 else value


def _dtype_of(value):
    data = _raw(value)
    return data.dtype if isinstance(data, np.ndarray) else None


def _tensors_in(value):
    if hasattr(value, "_version") and hasattr(value, "_data"):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if hasattr(v, "_version") and hasattr(v, "_data")]
    return []


def _has_array(value):
    if isinstance(value, (list, tuple)):
        return any(_has_array(v) for v in value)
    return isinstance(_raw(value), np.ndarray)


_NEEDED: dict = {}


def _needed(count: int, mask: int):
    """``needed`` flags for ``count`` arguments whose edges are the bits of ``mask``; ``None`` when all are."""
    needed = tuple(bool(mask >> i & 1) for i in range(count))
    if len(_NEEDED) < 4096:
        _NEEDED[(count, mask)] = needed if not all(needed) else None
    return needed if not all(needed) else None


_variants: dict = {}


def _variant(rule: Rule, needed: tuple):
    """``rule.specialized(needed)``, kept here so a node's backward finds it with one lookup."""
    vjp = _variants[(rule, needed)] = rule.specialized(needed)
    return vjp


_usages_cache: dict = {}


def _usages(rule: Rule, count: int, needed):
    """``(usage of each of count positional arguments, usage of the output)``.

    The usage is that of the rule's variant for the gradients this node
    computes (``needed``): ``x * 3`` neither keeps nor version-checks ``x``,
    as in PyTorch.  Computed once per rule, arity and pattern.
    """
    key = (rule, count, needed)
    usages = _usages_cache.get(key)
    if usages is None:
        usage = rule.usage if needed is None else rule.usage_for(needed)
        usages = _usages_cache[key] = (tuple(_usage_of(rule, usage, i) for i in range(count)),
                                       _usage_of(rule, usage, -1))
    return usages


_params_cache: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _usage_of(rule: Rule, usage: dict, index: int) -> str:
    """Usage of positional argument ``index`` in ``usage`` (-1: the output)."""
    params = _params_cache.get(rule)
    if params is None:
        sig = inspect.signature(rule.vjp)
        params = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        _params_cache[rule] = params
    position = 1 if index < 0 else index + 2
    if position >= len(params):
        return "value"
    return usage.get(params[position], "value")


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
    from ._format import legacy_type_name

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
