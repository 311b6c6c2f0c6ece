"""Arguments in, gradients out: Tensors unwrapped for the generated code, gradients finished as their arguments.

A gradient comes back with its argument's type, shape and dtype (a float
for a float, a Tensor for a Tensor, a container in the container's
structure, a lazy Dask array for a Dask argument or a Dask gradient).
"""

from __future__ import annotations

from sys import getrefcount

import numpy as np

from . import dask as _dask, trees as _trees
from .trees import has_gradient, is_tree
from ..rules._lazy import is_lazy


def _is_tensor(value) -> bool:
    return hasattr(type(value), "_astgrad_apply") and hasattr(value, "detach") and hasattr(value, "numpy")


def _unwrap(value):
    """Tensors as numpy arrays, also inside (nested) dicts, lists and tuples."""
    if _is_tensor(value):
        return value.detach().numpy()
    if is_tree(value) and any(_is_tensor(leaf) for _, leaf in _trees.leaves(value)):
        return _trees.tree_map(_unwrap, value)
    return value


def _finish(grad, original):
    """The gradient with its argument's type and shape (a float for a float)."""
    if type(original) in (float, int) and type(grad) in (float, np.float64):
        return float(grad)  # the common number case of the branch below
    if _is_tensor(original):
        from ..tape import tensor
        data = _finish(grad, original.detach().numpy())
        return tensor(data, dtype=original.dtype)
    if is_tree(original):
        return _finish_tree(grad, original)
    if is_lazy(grad) or is_lazy(original):
        return _dask.finish(grad, original)
    if grad is None:
        grad = 0.0
    if isinstance(original, (float, int)) and not isinstance(original, bool):
        return float(np.real(np.sum(grad)))
    shape = np.shape(original)
    dtype = np.result_type(original) if np.issubdtype(np.result_type(original), np.inexact) else np.float64
    if np.iscomplexobj(grad) and np.dtype(dtype).kind != "c":
        grad = np.real(grad)  # a real argument's gradient is the real part (docs/rules.md)
    out = np.array(grad, dtype=dtype, copy=True)
    if out.shape != shape:
        out = np.array(np.broadcast_to(out, shape), dtype=dtype)
    if isinstance(original, np.generic):
        return out[()]
    return out


def _finish_tree(grad, original):
    """The gradient of a dict, list or tuple, in its structure: zeros for leaves that got none.

    The generated code gives a dict's gradient only the keys it read, a list's
    ``None`` for items without one, or an array whose rows are the items'
    gradients (numpy read the list as one array).  A leaf that carries no
    gradient (None, a string, a bool) gets ``None``.
    """
    if _trees.is_object(original):
        return _finish_object(grad, original)
    if isinstance(original, dict):
        parts = grad if isinstance(grad, dict) else _nothing(grad, original)
        if not parts.keys() <= original.keys():
            raise RuntimeError(f"astgrad: the gradient of a dict has keys it does not: "
                               f"{sorted(map(repr, parts.keys() - original.keys()))}; please report this with the function")
        return _trees.like(original, {key: _leaf(parts.get(key), value) for key, value in original.items()})
    items: list | tuple
    if isinstance(grad, (list, tuple)):
        items = grad
    elif (type(grad) is np.ndarray or is_lazy(grad)) and grad.ndim:
        items = list(grad)
    else:
        items = list(_nothing(grad, original) or [None] * len(original))
    if len(items) != len(original):  # never cut short or padded: that would be a wrong number
        raise RuntimeError(f"astgrad: the gradient of a {type(original).__name__} of {len(original)} items has "
                           f"{len(items)}; please report this with the function")
    return _trees.like(original, [_leaf(g, o) for g, o in zip(items, original)])


def _finish_object(grad, original):
    """The gradient of a dataclass or registered object: an object of its class whose children are their
    gradients (the generated code gives a list, one item per child, ``None`` where none flowed); a child
    that gets no gradient (a string, a Python int, None) keeps its value."""
    found, aux = _trees.children(original)
    if isinstance(grad, (list, tuple)) and not _trees.is_object(grad):
        parts = list(grad)
    else:
        parts = list(_nothing(grad, original) or [None] * len(found))
    if len(parts) != len(found):
        raise RuntimeError(f"astgrad: the gradient of a {type(original).__qualname__} of {len(found)} children has "
                           f"{len(parts)}; please report this with the function")
    keys = _trees.keys_of(original)
    return _trees.rebuild_object(original, [_finish(g, o) if _trees.is_tree(o) or _trees.differentiated((key,), o)
                                            else o for g, o, key in zip(parts, found, keys)], aux)


def _nothing(grad, original) -> dict:
    """``{}`` for the gradient of a container nothing flowed into (None, or the 0.0 a join writes); else raise."""
    if grad is None or isinstance(grad, float) and grad == 0.0:
        return {}
    raise RuntimeError(f"astgrad: the gradient of a {type(original).__name__} came out as {type(grad).__name__}; "
                       f"please report this with the function")


def _leaf(grad, original):
    if not is_tree(original) and not has_gradient(original):
        return None
    return _finish(grad, original)


def finish_examples(grad, original, batched, size, sole=False):
    """The gradient of every example, batch axis first, with the dtype and shape of the argument's example
    (``values.returned._finish`` one example at a time): a real argument's is the real part, floats for
    integers and numbers, spread over the argument's shape where the code gave a number.

    ``sole``: nothing but the caller holds ``grad`` (``handed_over``), so an array already of that shape and
    dtype is returned as it is, not copied (a per-example weight gradient can be hundreds of megabytes)."""
    if isinstance(grad, (dict, list, tuple)):
        return grad
    shape = (size,) + (np.shape(original)[1:] if batched else np.shape(original))
    kind = np.result_type(original)
    dtype = kind if np.issubdtype(kind, np.inexact) and type(original) not in (float, int) else np.float64
    if sole and type(grad) is np.ndarray and grad.shape == shape and grad.dtype == dtype:
        return grad
    if grad is None:
        grad = 0.0
    if np.iscomplexobj(grad) and np.dtype(dtype).kind != "c":
        grad = np.real(grad)  # a real argument's gradient is the real part (docs/rules.md)
    out = np.array(grad, dtype=dtype, copy=True)  # never an array the generated code holds
    return out if out.shape == shape else np.array(np.broadcast_to(out, shape), dtype=dtype)


def handed_over(results: list) -> list:
    """``results`` (a list only the caller holds) as pairs ``(value, sole)``, each item taken out of the list as
    it is read: ``sole`` where nothing else refers to the value, an array that owns its memory and may be
    written, so that returning it gives the caller nothing anybody else holds or sees (no argument, global,
    saved value, other result, nor view of one: a view holds its base, and so counts)."""
    out = []
    for k in range(len(results)):
        value = results[k]
        results[k] = None
        sole = type(value) is np.ndarray and value.base is None and value.flags.writeable and _count(value) == _SOLE
        out.append((value, sole))
        del value
    return out


def _count(value) -> int:
    return getrefcount(value)  # the caller's local, this parameter, getrefcount's own argument (as _probe reads it)


def _probe() -> int:
    """``_count`` of an array that only ``handed_over``'s loop holds, read as ``handed_over`` reads it."""
    results: list = [np.empty(1)]
    for k in range(len(results)):
        value = results[k]
        results[k] = None
        return _count(value)
    raise AssertionError("unreachable")


_SOLE = _probe()
