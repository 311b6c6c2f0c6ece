"""Whether what a user function returns is always new memory: ``step(h[:, t - 1, :])`` shares nothing with ``h``.

The aliasing check counts a call's result as sharing memory with what it
is given (``f(x)`` may return ``x`` or a view of it), which refuses the
preallocated-state loop ``h[:, t, :], c = step(x[:, t, :], h[:, t - 1, :], c)``.
Read from the callee's source, conservatively: every value it returns is
made by an operation that allocates (arithmetic on arrays, a numpy function
that returns a new array, a literal, another such function's result), or
is a local name bound only to such values.  A parameter, a subscript (a
view), an attribute, or anything else counts as shared.  What the callee
does to its arguments is checked where it is transformed (a write into a
parameter is refused there), so the result is all that matters here.
"""

from __future__ import annotations

import numpy as np

from ..ir.compat import gast
from .parse import MISSING, FunctionSource
from .primitives import is_user_function
from ..runtime.checks import READ_ONLY_BUILTINS
from .writes import _out_position

#: builtins that keep no reference to what they are given
_KEEPS_NOTHING = READ_ONLY_BUILTINS | {range, enumerate, zip}

#: operators whose result is a new array or number whatever their operands (lists have none of them)
_NUMERIC = (gast.Sub, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow, gast.MatMult)


def returns_fresh(fn, fresh_fn, depth=0) -> bool:
    """Whether every value ``fn`` returns is new memory; ``fresh_fn(obj)``: a callable that returns a new array."""
    if depth > 4 or not is_user_function(fn):
        return False
    try:
        source = FunctionSource(fn)
    except Exception:  # no source: nothing to prove it with
        return False
    tree = source.tree
    params = {a.id for a in tree.args.posonlyargs + tree.args.args + tree.args.kwonlyargs}
    bindings: dict = {}
    returns = []
    for node in gast.walk(tree):
        if isinstance(node, (gast.FunctionDef, gast.Lambda, gast.ClassDef)) and node is not tree:
            return False
        if isinstance(node, gast.Return):
            returns.append(node.value)
        elif isinstance(node, gast.Assign):
            for target in node.targets:
                _bind(target, node.value, bindings)
        elif isinstance(node, gast.AugAssign) and isinstance(node.target, gast.Name):
            bindings.setdefault(node.target.id, []).append(node)  # x += v: x's own memory (checked as x)
        elif isinstance(node, (gast.For, gast.comprehension)):
            _bind(node.target, None, bindings)
        elif isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and node.id not in bindings:
            bindings.setdefault(node.id, []).append(None)  # bound some other way: unknown
    local = set(bindings) | params
    proof = _Proof(source, local, params, bindings, fresh_fn, depth)
    return bool(returns) and all(r is not None and proof.fresh(r) for r in returns) and proof.keeps_nothing(tree)


def _bind(target, value, bindings):
    if isinstance(target, gast.Name):
        bindings.setdefault(target.id, []).append(value)
    elif isinstance(target, (gast.Tuple, gast.List)):
        items = value.elts if isinstance(value, (gast.Tuple, gast.List)) and len(value.elts) == len(target.elts) \
            else [None] * len(target.elts)
        for t, v in zip(target.elts, items):
            _bind(t, v, bindings)


class _Proof:
    def __init__(self, source, local, params, bindings, fresh_fn, depth):
        self.source, self.local, self.params, self.bindings = source, local, params, bindings
        self.fresh_fn, self.depth, self.seen = fresh_fn, depth, set()

    def fresh(self, node) -> bool:
        if isinstance(node, gast.Constant):
            return True
        if isinstance(node, (gast.Tuple, gast.List)):
            return all(self.fresh(e) for e in node.elts)
        if isinstance(node, gast.BinOp):
            if isinstance(node.op, _NUMERIC):
                return True
            if isinstance(node.op, (gast.Add, gast.Mult)):  # a list + a list joins: one side must be an array
                return self.array(node.left) or self.array(node.right)
            return False
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, (gast.USub, gast.UAdd, gast.Invert))
        if isinstance(node, gast.Call):
            return self.array(node)
        if isinstance(node, gast.Name):
            return self.name(node.id)
        return False

    def array(self, node) -> bool:
        """``node`` is surely a new array or number (not a list): what ``+`` and ``*`` then compute is too."""
        if isinstance(node, gast.Call):
            if any(k.arg in ("out", "copy") or k.arg is None for k in node.keywords) \
                    or any(isinstance(a, gast.Starred) for a in node.args):
                return False
            obj = self.source.resolve_expr(node.func, self.local)
            if obj is MISSING:
                return False
            if self.fresh_fn(obj):  # an output passed by position is returned: np.dot(a, b, out), np.add(a, b, c)
                at = _out_position(obj, node.func)
                return at is None or len(node.args) <= at
            return is_user_function(obj) and returns_fresh(obj, self.fresh_fn, self.depth + 1)
        if isinstance(node, gast.BinOp):
            return isinstance(node.op, _NUMERIC) or self.fresh(node)
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.op, (gast.USub, gast.UAdd, gast.Invert))
        if isinstance(node, gast.Name):
            return self.name(node.id)
        # a float times a list is an error, never a repetition; an int (a bool) repeats it
        return isinstance(node, gast.Constant) and type(node.value) in (float, complex)

    def keeps_nothing(self, tree) -> bool:
        """No value the function is given can be kept anywhere once it returns: it stores into no item or
        attribute, ``x op= v`` only rebinds its own new arrays, and every call is of a function named
        statically (no method of a value), a user function's proved alike."""
        for node in gast.walk(tree):
            if isinstance(node, (gast.Assign, gast.AugAssign)):
                targets = node.targets if isinstance(node, gast.Assign) else [node.target]
                if any(isinstance(t, (gast.Subscript, gast.Attribute, gast.Starred))
                       for target in targets for t in gast.walk(target)):
                    return False
                if isinstance(node, gast.AugAssign) and not self.own(node.target.id):
                    return False
            elif isinstance(node, gast.Call) and not self.keeps_nothing_call(node):
                return False
        return True

    def keeps_nothing_call(self, node) -> bool:
        """A call named statically of a numpy or math function, a builtin that keeps nothing, or a user
        function proved to return new arrays and keep nothing (a class or a bound method may keep what it is given)."""
        obj = self.source.resolve_expr(node.func, self.local)
        if obj is MISSING or isinstance(obj, type):
            return False
        if is_user_function(obj):
            return returns_fresh(obj, self.fresh_fn, self.depth + 1)
        try:
            if obj in _KEEPS_NOTHING:
                return True
        except TypeError:  # unhashable
            return False
        return self.fresh_fn(obj) or (getattr(obj, "__module__", None) or "").partition(".")[0] in ("numpy", "math")

    def own(self, name) -> bool:
        """``name`` holds a new array of this function's own (``x += v`` then writes into nothing else)."""
        made = [v for v in self.bindings.get(name, []) if not isinstance(v, gast.AugAssign)]
        return bool(made) and name not in self.params and all(v is not None and self.fresh(v) for v in made)

    def name(self, name) -> bool:
        if name in self.params or name not in self.bindings or name in self.seen:
            return False
        self.seen.add(name)
        try:
            return all(v is not None and (isinstance(v, gast.AugAssign) or self.fresh(v)) for v in self.bindings[name])
        finally:
            self.seen.discard(name)


def numpy_allocates(obj, fresh_ids) -> bool:
    """A ufunc, or a numpy function in ``fresh_ids`` (aliasing's list of those that return a new array)."""
    return isinstance(obj, np.ufunc) or id(obj) in fresh_ids
