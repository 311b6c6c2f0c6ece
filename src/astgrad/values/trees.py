"""Containers of arrays (pytrees): dicts, lists, tuples and objects, nested, whose leaves are the values.

A ``wrt`` argument may be such a tree; its gradient is a tree of the same
structure.  The containers are dicts, lists and tuples (named tuples too),
dataclass instances (their fields, in order) and instances of classes given
to :func:`register_pytree` (the children their ``flatten`` returns).  A
leaf is anything else: an array, a number, a Tensor, or a value that
carries no gradient (``None``, a string, a bool, an integer array), whose
gradient is ``None`` in a dict, list or tuple; an object's field that
carries none (a Python int among them: a size, a count) keeps its value in
the object's gradient.  Each leaf is its own input: two keys holding the
same array get one gradient each (the partial derivative through that
key), as in JAX and HIPS autograd.  A gradient's leaves are always
distinct arrays.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable

import numpy as np

CONTAINERS = (dict, list, tuple)

#: classes given to register_pytree: class -> (flatten, unflatten)
_REGISTERED: dict = {}


def register_pytree(cls: type, flatten: Callable, unflatten: Callable) -> type:
    """Make instances of ``cls`` containers whose children are what ``flatten`` returns.

    ``flatten(obj)`` returns ``(children, aux)``: a sequence of the values
    that get gradients (arrays, numbers, or containers themselves) and
    anything else needed to build an instance again; ``unflatten(aux,
    children)`` builds one (JAX's ``register_pytree_node`` convention).  A
    gradient with respect to such an object is ``unflatten(aux, gradients)``.
    Only ``cls`` itself is registered, not its subclasses.  Returns ``cls``.
    """
    if not isinstance(cls, type):
        raise TypeError(f"register_pytree takes a class, not {type(cls).__name__} {cls!r}")
    if not callable(flatten) or not callable(unflatten):
        raise TypeError("register_pytree(cls, flatten, unflatten): flatten and unflatten must be callable")
    if cls in (dict, list, tuple) or dataclasses.is_dataclass(cls) or issubclass(cls, tuple):
        raise TypeError(f"register_pytree: {cls.__qualname__} is a container already (dicts, lists, tuples, named "
                        f"tuples and dataclasses are followed as they are)")
    _REGISTERED[cls] = (flatten, unflatten)
    return cls


class Field(str):
    """A dataclass field's name on a path (``.w``), told apart from a dict's key."""

    __slots__ = ()

    def __repr__(self):
        return f"Field({str(self)!r})"


class Child(int):
    """The position of a registered class's child on a path, as its ``flatten`` returns it."""

    __slots__ = ()

    def __repr__(self):
        return f"Child({int(self)})"


def is_object(value) -> bool:
    """A container that is no dict, list or tuple: a dataclass instance or a registered class's."""
    return type(value) in _REGISTERED or dataclasses.is_dataclass(value) and not isinstance(value, type)


def is_tree(value) -> bool:
    return isinstance(value, CONTAINERS) or is_object(value)


def children(obj):
    """``(children, aux)`` of an object (``is_object``): its fields' values, or what its ``flatten`` returns."""
    registered = _REGISTERED.get(type(obj))
    if registered is not None:
        found, aux = registered[0](obj)
        return list(found), aux
    return [getattr(obj, f.name) for f in dataclasses.fields(obj)], None


def field_names(obj):
    """The names of an object's children, when they are attributes (a dataclass's fields, a named tuple's); else None."""
    if dataclasses.is_dataclass(obj) and type(obj) not in _REGISTERED:
        return [f.name for f in dataclasses.fields(obj)]
    fields = getattr(type(obj), "_fields", None)
    if isinstance(obj, tuple) and isinstance(fields, tuple):
        return list(fields)
    return None


def rebuild_object(obj, values, aux=None):
    """An object of ``obj``'s class whose children are ``values``: ``unflatten(aux, values)``, or a dataclass
    instance made without running ``__init__`` (as ``copy`` makes one) and its fields set, frozen or not."""
    registered = _REGISTERED.get(type(obj))
    if registered is not None:
        return registered[1](aux, list(values))
    out = object.__new__(type(obj))
    for f, value in zip(dataclasses.fields(obj), values):
        object.__setattr__(out, f.name, value)
    return out


def keys_of(obj):
    """The path keys of an object's children: its fields, or positions."""
    names = field_names(obj)
    found, _ = children(obj)
    return [Field(n) for n in names] if names is not None else [Child(i) for i in range(len(found))]


def leaves(tree, path=()):
    """``[(path, leaf)]`` in order, dicts in their own key order; ``path`` is the keys from the top."""
    if isinstance(tree, dict):
        return [item for key, value in tree.items() for item in leaves(value, path + (key,))]
    if isinstance(tree, (list, tuple)):
        return [item for i, value in enumerate(tree) for item in leaves(value, path + (i,))]
    if is_object(tree):
        return [item for key, value in zip(keys_of(tree), children(tree)[0]) for item in leaves(value, path + (key,))]
    return [(path, tree)]


def differentiated(path, leaf) -> bool:
    """Whether a leaf gets a gradient: one that has one, except a Python int that is an object's field."""
    if not has_gradient(leaf):
        return False
    return not (path and isinstance(path[-1], (Field, Child)) and type(leaf) is int)


def path_text(path) -> str:
    """``['W1'][0].w``: the path as Python indexes it (a registered class's child as ``<child 0>``)."""
    return "".join(f".{key}" if isinstance(key, Field) else f"<child {int(key)}>" if isinstance(key, Child)
                   else f"[{key!r}]" for key in path)


def get(tree, path):
    for key in path:
        tree = children(tree)[0][keys_of(tree).index(key)] if isinstance(key, (Field, Child)) else tree[key]
    return tree


def replace(tree, path, value):
    """A copy of ``tree`` with the leaf at ``path`` replaced; the containers along the path are new."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return like(tree, {k: replace(v, rest, value) if k == key else v for k, v in tree.items()})
    if is_object(tree):
        found, aux = children(tree)
        position = keys_of(tree).index(key)
        return rebuild_object(tree, [replace(v, rest, value) if i == position else v for i, v in enumerate(found)], aux)
    return like(tree, [replace(v, rest, value) if i == key else v for i, v in enumerate(tree)])


def rebuild(tree, values):
    """``tree`` with its leaves replaced, in order, by ``values`` (an iterator)."""
    if isinstance(tree, dict):
        return like(tree, {key: rebuild(value, values) for key, value in tree.items()})
    if isinstance(tree, (list, tuple)):
        return like(tree, [rebuild(value, values) for value in tree])
    if is_object(tree):
        found, aux = children(tree)
        return rebuild_object(tree, [rebuild(value, values) for value in found], aux)
    return next(values)


def like(container, items):
    """A container of ``container``'s type holding ``items`` (a dict for a dict, a list for a list or tuple)."""
    kind = type(container)
    if kind is dict or kind is list or kind is tuple:
        return items if kind is not tuple else tuple(items)
    if isinstance(container, dict):  # OrderedDict, defaultdict: a copy keeps what the type adds
        out = container.copy()
        out.clear()
        out.update(items)
        return out
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def tree_map(fn: Callable, tree):
    """``fn`` applied to each leaf, in a tree of ``tree``'s structure."""
    return rebuild(tree, iter([fn(leaf) for _, leaf in leaves(tree)]))


def tree_flatten(tree) -> tuple[list, Any]:
    """``(leaves, structure)``: the leaves in order, and what :func:`tree_unflatten` needs to put them back."""
    return [leaf for _, leaf in leaves(tree)], _Structure(tree)


def tree_unflatten(structure, values: Iterable):
    """A tree of ``structure`` (from :func:`tree_flatten`) holding ``values`` as its leaves, in order."""
    if not isinstance(structure, _Structure):
        raise TypeError(f"tree_unflatten takes the structure tree_flatten returned, not {type(structure).__name__}")
    values = list(values)
    if len(values) != structure.count:
        raise ValueError(f"tree_unflatten: the structure has {structure.count} leaves, and {len(values)} were given")
    return rebuild(structure.tree, iter(values))


class _Structure:
    """A tree's structure: the tree itself (rebuilt around new leaves, never changed), and its leaf count."""

    __slots__ = ("tree", "count", "_paths")

    def __init__(self, tree):
        found = leaves(tree)
        self.tree, self.count, self._paths = tree, len(found), tuple(path for path, _ in found)

    def __eq__(self, other):
        return isinstance(other, _Structure) and self._paths == other._paths and _shape_of(self.tree) == _shape_of(other.tree)

    def __hash__(self):
        return hash(self._paths)

    def __repr__(self):
        return f"PyTreeDef({_shape_of(self.tree)})"


def _shape_of(tree):
    """The tree with each leaf written ``*``: what two structures must share to be equal."""
    if isinstance(tree, dict):
        return "{" + ", ".join(f"{k!r}: {_shape_of(v)}" for k, v in tree.items()) + "}"
    if isinstance(tree, (list, tuple)):
        items = ", ".join(_shape_of(v) for v in tree)
        return f"[{items}]" if isinstance(tree, list) else f"{type(tree).__name__}({items})"
    if is_object(tree):
        return f"{type(tree).__qualname__}(" + ", ".join(_shape_of(v) for v in children(tree)[0]) + ")"
    return "*"


def has_gradient(leaf) -> bool:
    """Whether a leaf is a number or an array of numbers: the leaves that get a gradient."""
    if leaf is None or isinstance(leaf, (bool, np.bool_, str, bytes)):
        return False
    if isinstance(leaf, (int, float, complex, np.number)):
        return True
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind in "iufc"
    return hasattr(leaf, "detach") and hasattr(leaf, "numpy")  # a Tensor
