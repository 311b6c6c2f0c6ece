"""Containers of arrays (pytrees): dicts, lists and tuples, nested, whose leaves are the values.

A ``wrt`` argument may be such a tree; its gradient is a tree of the same
structure.  A leaf is anything that is not a dict, list or tuple: an
array, a number, a Tensor, or a value that carries no gradient (``None``,
a string, a bool, an integer array), whose gradient is ``None``.  Each
leaf is its own input: two keys holding the same array get one gradient
each (the partial derivative through that key), as in JAX and HIPS
autograd.  A gradient's leaves are always distinct arrays.
"""

from __future__ import annotations

import numpy as np

CONTAINERS = (dict, list, tuple)


def is_tree(value) -> bool:
    return isinstance(value, CONTAINERS)


def leaves(tree, path=()):
    """``[(path, leaf)]`` in order, dicts in their own key order; ``path`` is the keys from the top."""
    if isinstance(tree, dict):
        return [item for key, value in tree.items() for item in leaves(value, path + (key,))]
    if isinstance(tree, (list, tuple)):
        return [item for i, value in enumerate(tree) for item in leaves(value, path + (i,))]
    return [(path, tree)]


def path_text(path) -> str:
    """``['W1'][0]``: the path as Python indexes it."""
    return "".join(f"[{key!r}]" for key in path)


def get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def replace(tree, path, value):
    """A copy of ``tree`` with the leaf at ``path`` replaced; the containers along the path are new."""
    if not path:
        return value
    key, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return like(tree, {k: replace(v, rest, value) if k == key else v for k, v in tree.items()})
    return like(tree, [replace(v, rest, value) if i == key else v for i, v in enumerate(tree)])


def rebuild(tree, values):
    """``tree`` with its leaves replaced, in order, by ``values`` (an iterator)."""
    if isinstance(tree, dict):
        return like(tree, {key: rebuild(value, values) for key, value in tree.items()})
    if isinstance(tree, (list, tuple)):
        return like(tree, [rebuild(value, values) for value in tree])
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


def tree_map(fn, tree):
    """``fn`` applied to each leaf, in a tree of ``tree``'s structure."""
    return rebuild(tree, iter([fn(leaf) for _, leaf in leaves(tree)]))


def has_gradient(leaf) -> bool:
    """Whether a leaf is a number or an array of numbers: the leaves that get a gradient."""
    if leaf is None or isinstance(leaf, (bool, np.bool_, str, bytes)):
        return False
    if isinstance(leaf, (int, float, complex, np.number)):
        return True
    if isinstance(leaf, np.ndarray):
        return leaf.dtype.kind in "iufc"
    return hasattr(leaf, "detach") and hasattr(leaf, "numpy")  # a Tensor
