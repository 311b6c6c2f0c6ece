"""A copy of a transform's state that later passes can mutate while the original stays as it was.

The pipeline keeps a function's state at the point where the arguments'
ranks or kinds are first read (pipeline.Kept) and runs the rest of the
passes once per specialised variant, each on its own ``fork`` of it: the
passes rewrite trees, sets and name counters in place, so every variant
needs copies of all of them, linked to each other as the originals are
(one Names shared by the module and its namespace stays one).

What is copied: builtin lists, dicts, sets and tuples, gast nodes, and
instances of the transformer's own classes (a class defined under
``astgrad.transform``, outside ``runtime``, whose objects run in generated
code).  Everything else is shared: functions, modules, numpy objects,
rules, exceptions and every object of the user's.  A class of the
transformer that holds the user's objects names those attributes in
``_fork_shares`` (shared as they are), or copies itself with ``__fork__``
(``copy`` forks a part, ``memo`` maps originals to their copies).  A
node's context (``Load``, ``Store``) has no fields and is replaced, never
changed: it is shared.
"""

from __future__ import annotations

from typing import Any

from .compat import gast

_ATOMS = {str, int, float, bool, bytes, complex, type(None),
          gast.Load, gast.Store, gast.Del}  # a node's context: no fields, replaced rather than changed


def _own(cls) -> bool:
    """Whether ``cls``'s objects are transform-time state of the transformer, copied field by field."""
    module = cls.__module__
    if not isinstance(module, str):  # a class whose __module__ is a slot of its instances (Python 3.10)
        return False
    return module.startswith("astgrad.transform.") and not module.startswith("astgrad.transform.runtime") \
        and not issubclass(cls, BaseException)


def fork(root: Any) -> Any:
    """A deep copy of ``root`` as described above, sharing what is not the transformer's state."""
    memo: dict[int, Any] = {}

    def copy(obj: Any) -> Any:
        cls = type(obj)
        if cls in _ATOMS:
            return obj
        found = memo.get(id(obj), memo)
        if found is not memo:
            return found
        made: Any
        if cls is list:
            made = memo[id(obj)] = []
            made.extend([copy(x) for x in obj])
        elif cls is dict:
            made = memo[id(obj)] = {}
            for key, value in obj.items():
                made[copy(key)] = copy(value)
        elif cls is set:
            made = memo[id(obj)] = set()
            made.update([copy(x) for x in obj])
        elif cls is tuple or cls is frozenset:
            items = [copy(x) for x in obj]
            made = obj if all(a is b for a, b in zip(items, obj)) else cls(items)
            memo[id(obj)] = made
        else:
            plan = _PLANS.get(cls)
            if plan is None:
                plan = _PLANS[cls] = _plan(cls)
            if plan is _SHARED:
                return obj
            if plan is _OWN_COPY:
                return cls.__fork__(obj, copy, memo)
            made = memo[id(obj)] = cls.__new__(cls)  # type: ignore[call-overload]
            shared, slots = plan
            fields = made.__dict__ if hasattr(made, "__dict__") else None
            if fields is not None:
                for name, value in obj.__dict__.items():
                    fields[name] = value if name in shared else copy(value)
            for name in slots:
                if hasattr(obj, name):
                    value = getattr(obj, name)
                    object.__setattr__(made, name, value if name in shared else copy(value))
        return made

    return copy(root)


_SHARED, _OWN_COPY = "shared", "__fork__"
#: class -> how ``fork`` copies its objects: _SHARED, _OWN_COPY, or (attributes shared, slots)
_PLANS: dict = {}


def _plan(cls):
    if not (issubclass(cls, gast.AST) or _own(cls)):
        return _SHARED
    if hasattr(cls, "__fork__"):
        return _OWN_COPY
    slots = [name for klass in cls.__mro__ for name in klass.__dict__.get("__slots__", ())
             if name not in ("__dict__", "__weakref__")]
    return frozenset(getattr(cls, "_fork_shares", ())), slots
