"""Reading a field of an object that carries a gradient: ``layer.W`` on a dataclass, a named tuple, a registered class.

``obj.name`` is the primitive ``attribute`` (its rules are in helper_rules).
An object's gradient is a list of one item per child, the children being
what ``values.trees.children`` gives (a dataclass's fields in order, a registered
class's ``flatten``), as a list's gradient is one item per item; the
gradient is rebuilt as an object of the class when it is returned
(``values/returned.py``).
"""

from __future__ import annotations

import types

import numpy as np

from ...values import trees as _trees
from ...rules._lazy import is_lazy
from ...rules.sequences import GradientList
from . import is_zero
from .value_types import other_meaning

__all__ = ["attribute", "field", "item", "attribute_gradient", "attribute_tangent"]


def attribute(obj, name):
    """``obj.name``: the rule table's entry for reading an attribute of a value that carries a gradient."""
    return getattr(obj, name)


def field(obj, name):
    """``obj.name`` as generated code reads it (``self.M``, ``config.M``): refused where numpy gives it another meaning.

    Arguments, globals and closure variables are looked at where they
    enter; a field of an object enters here (and an item of what it holds
    through ``item``).  An ``np.matrix`` there would be computed with as a
    matrix while the rules are ndarray's.
    """
    value = getattr(obj, name)
    if type(value) is not np.ndarray:
        owner = obj.__name__ if isinstance(obj, types.ModuleType) else \
            obj.__qualname__ if isinstance(obj, type) else type(obj).__qualname__
        why = other_meaning(value, f"{owner}.{name}")
        if why is not None:
            raise TypeError(f"astgrad: {owner}.{name}, which the differentiated code reads as a field of an "
                            f"object, is {why}.")
    return value


def item(value, where):
    """``D['M']`` as generated code reads an item of a global container or of a field (``self.cfg['M']``):
    refused where numpy gives the item another meaning.  Only the item read is looked at, so a loop over
    a long list pays one type test a read."""
    if type(value) is not np.ndarray and (why := other_meaning(value, where)) is not None:
        raise TypeError(f"astgrad: {where}, an item the differentiated code reads, is {why}.")
    return value


def attribute_gradient(g, obj, name, value):
    """The gradient of ``obj`` from ``g`` flowing into ``obj.name``, which read ``value``.

    ``obj`` is a dataclass instance, a named tuple or a registered class's
    (docs/pytrees.md); its gradient is a list of one item per child, ``g``
    at the child ``value`` is.  A field is found by its name, anything
    else (a property, ``__getattr__``) by identity with one child; a value
    that is no child (computed), or the same object as two children that
    take gradients, or a child that changed since it was read is an error.
    """
    if g is None:
        return None
    if name == "T" and _is_array(obj):  # x.T on what might have been an object with a field T
        return np.transpose(g)
    found, position = _child_at(obj, name, value)
    if position is None:
        return None
    out = GradientList([None] * len(found))
    out[position] = g
    return out


def attribute_tangent(t, obj, name, value):
    """The tangent of ``obj.name`` (which read ``value``) from ``t``, the tangent of ``obj`` (its structure)."""
    if is_zero(t):
        return None
    if name == "T" and _is_array(obj):
        return np.transpose(t)
    _, position = _child_at(obj, name, value)
    if position is None:
        return None
    if isinstance(t, (list, tuple)):
        return t[position]
    return _trees.children(t)[0][position]


def _is_array(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) or is_lazy(value)


def _child_at(obj, name, value):
    """``(children, position)``: ``obj``'s children and the one ``obj.name`` read (None: no gradient goes there)."""
    names = _trees.field_names(obj)
    if names is None and not _trees.is_object(obj):
        raise TypeError(f"astgrad: .{name} of a {type(obj).__qualname__} carries a gradient, and astgrad does not "
                        f"know what a {type(obj).__qualname__} holds; make it a dataclass or register it with "
                        f"astgrad.register_pytree (docs/pytrees.md)")
    found = list(obj) if names is not None and isinstance(obj, tuple) else _trees.children(obj)[0]
    if names is not None and name in names:
        position = names.index(name)
        if found[position] is not value:
            raise TypeError(f"astgrad: {type(obj).__qualname__}.{name} holds another value than the one read "
                            f"(it was changed after the read); the gradient would go to the new one")
    else:
        positions = [i for i, child in enumerate(found) if child is value]
        keys = _trees.keys_of(obj) if _trees.is_object(obj) else list(range(len(found)))
        taking = [i for i in positions if _trees.is_tree(found[i]) or _trees.differentiated((keys[i],), found[i])]
        if not positions:
            raise TypeError(f"astgrad: {type(obj).__qualname__}.{name} is not one of its children (a property or "
                            f"__getattr__ computed it), so its gradient has nowhere to go; compute it from the "
                            f"children in the differentiated function instead")
        if len(taking) > 1:
            raise TypeError(f"astgrad: {type(obj).__qualname__}.{name} is the same object as {len(taking)} of its "
                            f"children, so astgrad cannot tell which one the gradient is for; store copies")
        if not taking:
            return found, None
        position = taking[0]
    return found, position
