"""The arguments of a generated gradient, checked for types numpy gives other meanings before any work.

``transform.value_types`` says which (``np.matrix``, masked arrays, ndarray
subclasses that define operators or methods, ``Fraction``, ``Decimal``);
here each argument, and each leaf of a container argument, is refused with
a ``TypeError`` naming its path, or viewed as the plain ndarray it is.
"""

from __future__ import annotations

import numpy as np

from ..values.trees import is_tree, leaves, path_text, tree_map
from ..transform.runtime.value_types import other_meaning, viewed_as_plain


def plain(value):
    """``value`` as the engines compute with it: a subclass of ndarray that changes no meaning (also inside
    a container) as the ndarray it views."""
    if is_tree(value):
        return tree_map(plain, value) if any(viewed_as_plain(leaf) for _, leaf in leaves(value)) else value
    return value.view(np.ndarray) if viewed_as_plain(value) else value


def refuse_other_meanings(arguments: dict, what: str) -> None:
    """Raise ``TypeError`` for the first argument (or leaf of a container argument) numpy gives another meaning.

    ``arguments`` maps parameter names to values; ``what`` names the gradient (``astgrad.grad of f``).
    """
    for name, value in arguments.items():
        items = leaves(value) if is_tree(value) else (((), value),)
        for path, leaf in items:
            where = f"{name}{path_text(path)}"
            why = other_meaning(leaf, where)
            if why is not None:
                raise TypeError(f"{what}: the argument {where} is {why}.")


def arguments_of_plain_types(bound, wrt, what: str) -> None:
    """Refuse (``refuse_other_meanings``) or view as plain ndarrays (``plain``) the arguments of ``bound``, in place.

    A differentiated argument that is None or text is refused too: numpy raises a TypeError for it where
    it computes, and the generated code may compute only its shape there (``np.shape(None)`` is ``()``).
    """
    for name in wrt:
        value = bound.arguments.get(name)
        if value is None or isinstance(value, (str, bytes)):
            raise TypeError(f"{what}: the argument {name} is {value!r}, which numpy does not compute with as a "
                            f"number (it raises TypeError), so it has no derivative. Pass a number or an array.")
    refuse_other_meanings(bound.arguments, what)
    for name, value in bound.arguments.items():
        if type(value) is not np.ndarray:
            bound.arguments[name] = plain(value)
