"""Method calls whose function astgrad can know when it transforms: ``self.forward(x)``, ``model.predict(x)``.

A call ``recv.m(...)`` runs whatever ``recv``'s class (or ``recv`` itself)
holds under ``m`` when it runs, which a transform made once cannot know in
general.  Some receivers say their class: the first parameter of a
function defined in a class body (``self``, never rebound in the function)
is an instance of that class, a parameter annotated with a class
(``model: Model``) one of it, ``self.layer1`` holds what that class's
``__init__`` stores there (``self.layer1 = Dense(...)``, one class) or its
dataclass field is annotated with, and a global or closure object is an
instance of its class now.  There the method is looked up in the class and called as
the plain function it is, ``Cls.m(recv, ...)``, transformed like any
callee; a check before the call (``same_method``) refuses, where it runs,
a receiver for which ``recv.m`` would be another function (a subclass
overriding ``m``, a function stored on the instance, another object in
the global), so the function differentiated is the one that runs.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing

from .callee_writes import _library
from ..ir.compat import gast
from .parse import MISSING
from .primitives import is_user_function


def method_of(n, func):
    """The plain function ``func`` (``recv.m``) calls, when the class of ``recv`` is known here; else None.

    A call whose result is not used (``self.log()``, ``box.reset()``) is left as it was, a call kept for
    its effect and run as written (normalize.may_write, checks.written_by_call).
    """
    statement = isinstance(n.stmt, gast.Expr) and getattr(n.stmt.value, "func", None) is func
    if not isinstance(func, gast.Attribute) or statement:
        return None
    recv = func.value
    if isinstance(recv, gast.Name):
        cls = receiver_class(n, recv.id)
    elif isinstance(recv, gast.Attribute) and isinstance(recv.value, gast.Name):  # self.layer1.forward(x)
        cls = attribute_class(n, recv.value.id, recv.attr)
    else:
        return None
    if cls is None:
        return None
    found = _in_class(cls, func.attr)
    if not is_user_function(found) or _library(found) or found.__module__.partition(".")[0] == "astgrad":
        return None  # a library's method (a Tensor's, an array's) is a primitive or refused, never transformed
    n.src.dependencies.record_attr(cls, func.attr, found)  # Dense.forward replaced: transform again
    return found


def receiver_class(n, name):
    """The class of what ``name`` holds, where it is the method's own ``self`` or a global object; else None."""
    if name in n.locals:
        fn = n.src.fn
        code = fn.__code__
        if name not in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount] or _rebound(n.src.tree, name):
            return None
        annotated = _hints(fn).get(name)
        if isinstance(annotated, type):  # def loss(model: Model, x)
            return annotated
        return defining_class(fn) if code.co_varnames[0] == name else None
    obj = n.static(gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None))
    if obj is MISSING or isinstance(obj, (type, types.ModuleType)) or callable(obj) and not hasattr(obj, "__dict__"):
        return None
    return type(obj)


def attribute_class(n, name, attr):
    """The class of ``name.attr``: a global object's attribute's now; for ``self``, the one class its class's
    ``__init__`` stores there (``self.layer1 = Dense(...)``) or a dataclass field is annotated with."""
    if name not in n.locals:
        obj = n.static(gast.Name(id=name, ctx=gast.Load(), annotation=None, type_comment=None))
        if obj is MISSING or isinstance(obj, (type, types.ModuleType)):
            return None
        value = inspect.getattr_static(obj, attr, MISSING)
        return None if value is MISSING else type(value)
    owner = receiver_class(n, name)
    if owner is None:
        return None
    if attr in getattr(owner, "__dataclass_fields__", {}) and isinstance(_hints(owner).get(attr), type):
        return _hints(owner)[attr]
    init = _in_class(owner, "__init__")
    found = _stored_in_init(init, attr) if is_user_function(init) else set()
    return found.pop() if len(found) == 1 else None


def _stored_in_init(init, attr) -> set:
    """The classes ``init`` calls to make what it stores in ``self.<attr>`` (``self.<attr> = Cls(...)``)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError):
        return {None}
    args = tree.body[0].args.args if tree.body and isinstance(tree.body[0], ast.FunctionDef) else []
    if not args:
        return {None}
    me, found = args[0].arg, set()
    for node in ast.walk(tree):
        value: ast.expr | None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets, value = [node.target], node.value
        else:
            continue
        for target in targets:
            if isinstance(target, ast.Attribute) and target.attr == attr and isinstance(target.value, ast.Name) \
                    and target.value.id == me:
                made = value.func if isinstance(value, ast.Call) else None
                cls = init.__globals__.get(made.id) if isinstance(made, ast.Name) else None
                found.add(cls if isinstance(cls, type) else None)
    return found


def _hints(obj) -> dict:
    """``obj``'s annotations as classes (string annotations evaluated as ``typing`` does); {} if that fails."""
    try:
        return typing.get_type_hints(obj)
    except Exception:  # a name the annotation uses is not defined: no class to go by
        return {}


def defining_class(fn):
    """The class in whose body ``fn`` is defined (found by its qualified name from its module), or None."""
    parts = fn.__qualname__.split(".")
    if len(parts) < 2 or "<locals>" in parts:
        return None
    owner = fn.__globals__.get(parts[0], MISSING)
    for part in parts[1:-1]:
        owner = getattr(owner, part, MISSING) if isinstance(owner, type) else MISSING
    if not isinstance(owner, type) or owner.__dict__.get(parts[-1]) is not fn:
        return None
    return owner


def _in_class(cls, name):
    """What ``cls`` holds under ``name`` along its MRO, without running descriptors; None if absent."""
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _rebound(tree, name) -> bool:
    return any(isinstance(node, gast.Name) and node.id == name and isinstance(node.ctx, (gast.Store, gast.Del))
               for node in gast.walk(tree))
