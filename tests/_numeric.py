"""Central finite differences in float64: the independent reference for every test directory.

Two questions, asked of a scalar function of one value:

* ``gradient(f, x)``: df/dx, one element at a time (``x`` a number or an array);
* ``directional(f, x, v)``: d/dt f(x + t v) at t = 0, two evaluations.

Every evaluation gets a fresh array (code under test may write into its
argument).  ``numeric_grad`` and ``assert_grad`` are the same reference for a
function of several arguments.
"""

import dataclasses

import numpy as np


def gradient(f, x, eps=1e-6):
    """df/dx by central differences; ``f`` returns a number, ``x`` is a number or an array.

    A Python number (or a 0-d value) is passed to ``f`` as a float and its
    gradient is a float; an array is passed as a float64 array.
    """
    if np.ndim(x) == 0 and not isinstance(x, np.ndarray):
        x = float(x)
        return (float(f(x + eps)) - float(f(x - eps))) / (2 * eps)
    x = np.asarray(x, dtype=np.float64)
    out = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[index] += eps
        down[index] -= eps
        out[index] = (float(f(up)) - float(f(down))) / (2 * eps)
    return out


def directional(f, x, v, eps=1e-6):
    """d/dt f(x + t v) at t = 0 by one central difference (``f`` returns a number)."""
    x, v = _float64(x), _float64(v)  # complex stays complex: a step along i is a direction too
    return (float(f(x + eps * v)) - float(f(x - eps * v))) / (2 * eps)


def _float64(a):
    a = np.asarray(a)
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def numeric_grad(f, args, index, eps=1e-6, kwargs=None):
    """d sum(f(*args)) / d args[index] by central differences."""
    kwargs = kwargs or {}
    args = list(args)

    def at(value):
        trial = list(args)
        trial[index] = value
        return float(np.sum(f(*trial, **kwargs)))

    return gradient(at, args[index], eps)


def assert_grad(gradient_fn, f, *args, wrt=(0,), rtol=1e-5, atol=1e-6):
    """Compare a generated gradient with finite differences for each wrt position."""
    got = gradient_fn(*args)
    got = got if len(wrt) > 1 else (got,)
    for value, index in zip(got, wrt):
        expected = numeric_grad(f, args, index)
        assert np.shape(value) == np.shape(expected), (np.shape(value), np.shape(expected))
        np.testing.assert_allclose(value, expected, rtol=rtol, atol=atol)


def replaced(tree, path, value):
    """A copy of ``tree`` (nested dicts, lists, tuples, named tuples, dataclasses) with the leaf at index path
    ``path`` set to ``value`` (a dataclass's field by its name, through ``dataclasses.replace``)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {k: replaced(v, rest, value) if k == head else v for k, v in tree.items()}
    if dataclasses.is_dataclass(tree):
        return dataclasses.replace(tree, **{head: replaced(getattr(tree, head), rest, value)})
    items = [replaced(v, rest, value) if i == head else v for i, v in enumerate(tree)]
    return type(tree)(*items) if hasattr(type(tree), "_fields") else type(tree)(items)


def tree_gradient(f, tree, eps=1e-6):
    """df/dtree for ``tree`` a (nested) dict, list, tuple or dataclass of numbers and arrays, in its structure.

    Each leaf is varied alone, in a fresh copy of the tree (two keys holding
    one array are two inputs); leaves that are not numbers or float arrays
    (None, strings, bools) get ``None``; a dataclass's field that is one, or
    a Python int, keeps its value (as astgrad's gradients of objects do).
    """
    def visit(node, path, field=False):
        if isinstance(node, dict):
            return {k: visit(v, path + (k,)) for k, v in node.items()}
        if dataclasses.is_dataclass(node):
            fields = {fd.name: visit(getattr(node, fd.name), path + (fd.name,), True) for fd in dataclasses.fields(node)}
            return dataclasses.replace(node, **fields)
        if isinstance(node, (list, tuple)):
            items = [visit(v, path + (i,)) for i, v in enumerate(node)]
            return type(node)(*items) if hasattr(type(node), "_fields") else type(node)(items)
        if node is None or isinstance(node, (bool, str)) or field and type(node) is int:
            return node if field else None
        return gradient(lambda value: f(replaced(tree, path, value)), node, eps)

    return visit(tree, ())
