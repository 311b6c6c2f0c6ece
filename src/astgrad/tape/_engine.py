"""The backward pass: walk the graph from the outputs, call each node's rule.

Nodes run in dependency order (a node runs once every consumer of its
output has contributed), ties broken by creation order, newest first, as in
PyTorch.  Every edge points at an older node (an operation's inputs exist
before its node is made, which takes the next creation number), so running
the newest node reached so far, every time, is that order: the nodes that
feed it a gradient are all newer, reached before it, and have run.  No pass
over the graph counts the edges first; an edge to a newer node, which would
break this, is refused before any ``.grad`` changes.  Gradients for leaves
are collected and committed only when the whole pass succeeded, so an error
leaves every ``.grad`` as it was.
"""

from __future__ import annotations

import heapq
import threading
from sys import getrefcount

import numpy as np

from .. import rules
from ._graph import AccumulateGrad, invalid_gradient, shape_of
from ._modes import _state
from ._record import apply_op
from ._tensor import Tensor


def run_backward(roots, grads, *, retain_graph: bool, create_graph: bool, capture=None,
                 accumulate: bool = True, only=None):
    """Backpropagate ``grads`` from the ``roots`` nodes.

    ``roots`` is a list of ``(node, output_nr)`` pairs, ``grads`` the matching
    output gradients (arrays, or Tensors when ``create_graph``).
    ``capture`` maps ``(node, output_nr)`` to a slot in the returned dict: the
    gradient flowing into that point is recorded there (``autograd.grad``).
    With ``accumulate`` the leaves' ``.grad`` are updated (restricted to the
    leaves in ``only`` when given); returns the captured gradients.
    """
    wrap = _wrap if create_graph else None
    if len(roots) == 1:  # backward() of one output: the common case
        node = roots[0][0]
        buffers: dict = {} if node is None else {node: grads[0]}  # the gradient reaching each node so far
    else:
        buffers = {}
        for (node, nr), g in zip(roots, grads):
            if node is not None:
                buffers[node] = g if node not in buffers else buffers[node] + g
    # (-creation number, node) of the nodes reached and not run: numbers are unique, so nodes are never compared;
    # while only one node is reached and not run, it is ``alone`` instead (a chain of operations: no heap)
    if len(buffers) == 1:
        alone, ready = next(iter(buffers)), []
    else:
        alone, ready = None, [(-node._seq, node) for node in buffers]
        heapq.heapify(ready)
    captured: dict = {}
    pending_leaves: list = []
    pending_retained: list = []
    visited: list = []
    state = _state
    was_enabled = state.enabled  # is_grad_enabled(), then set_grad_enabled(create_graph), inlined
    state.enabled = bool(create_graph)
    pop, push = heapq.heappop, heapq.heappush
    try:
        while alone is not None or ready:
            if alone is not None:
                node, alone = alone, None
            else:
                node = pop(ready)[1]
            grad = buffers.pop(node)
            if type(node) is AccumulateGrad:
                if node.variable._hooks:
                    grad = _run_hooks(node, grad, pending_retained)
                if capture is not None and (node, 0) in capture:
                    captured[capture[(node, 0)]] = grad
                if accumulate and (only is None or id(node.variable) in only):
                    expected = node.variable._data.shape
                    if (grad.shape if type(grad) is np.ndarray else shape_of(grad)) != expected:  # before any .grad changes
                        raise RuntimeError(invalid_gradient(node.name(), 0, shape_of(grad), expected))
                    pending_leaves.append((node.variable, grad))
                continue
            visited.append(node)
            if node._pre_hooks or node._metadata:
                grad = _run_hooks(node, grad, pending_retained)
            if capture is not None and (node, 0) in capture:
                captured[capture[(node, 0)]] = grad
            input_grads = node.apply(grad, create_graph, wrap)
            if node._post_hooks:
                for hook in node._post_hooks:
                    hook(input_grads, (grad,))
            for (child, _), g in zip(node.next_functions, input_grads):
                if child is None or g is None:
                    continue
                if child in buffers:
                    buffers[child] = buffers[child] + g
                else:  # reached for the first time: an older node, else it may have run without this gradient
                    if child._seq > node._seq:
                        raise RuntimeError(f"astgrad: the graph has an edge from {node.name()} to the newer "
                                           f"{child.name()}; its gradients cannot be ordered (an internal error)")
                    buffers[child] = g
                    if alone is None and not ready:
                        alone = child
                    else:
                        if alone is not None:
                            push(ready, (-alone._seq, alone))
                            alone = None
                        push(ready, (-child._seq, child))
    finally:
        state.enabled = was_enabled
    if not retain_graph:
        for node in visited:
            node._release()
    grad = g = input_grads = None  # (the walk's last arrays: a leaf's gradient counts its holders below)
    for i in range(len(pending_leaves)):
        variable, grad = pending_leaves[i]
        pending_leaves[i] = None
        if type(grad) is np.ndarray and not create_graph and grad.dtype == variable._data.dtype:
            with _ACCUMULATING:  # accumulate_grad's commonest case, inlined
                if variable._grad is None:
                    variable._grad = Tensor._make(grad if _alone(grad) else np.array(grad, copy=True))
                else:
                    variable._grad._data += grad
        else:
            accumulate_grad(variable, grad, create_graph)
    for tensor, grad in pending_retained:
        store_retained_grad(tensor, grad)
    return captured


_ACCUMULATING = threading.Lock()  # around every read-modify-write of a .grad during backward


def _alone(grad, holders: int = 0) -> bool:
    """Whether a leaf's first gradient may become its ``.grad`` itself, not a copy (PyTorch steals the buffer
    when nothing else holds it).

    Only an array that owns its memory (no view of another: ``base`` is
    None), is writeable, and that nothing but ``run_backward``'s local
    ``grad`` refers to: no other array is a view of it (a view holds its
    base), no tensor, seed, hook, retained or captured gradient, second leaf
    nor saved value holds it.  A ``.grad`` sharing memory with any of those
    would change when they do, or change them at the next accumulation.
    ``holders`` counts references known besides (a test's wrapper of this).
    """
    return grad.base is None and getrefcount(grad) == _ALONE + holders and grad.flags.writeable


def _count_alone() -> int:
    """``getrefcount`` of an array only ``run_backward``'s loop holds, read as ``_alone`` reads it there."""
    pending_leaves: list = [(None, np.empty(1))]
    for i in range(len(pending_leaves)):
        variable, grad = pending_leaves[i]
        pending_leaves[i] = None
        return _probe(grad)
    raise AssertionError("unreachable")


def _probe(grad) -> int:
    return getrefcount(grad)  # as ``_alone`` calls it: the caller's local, this parameter, getrefcount's argument


_ALONE = _count_alone()


def accumulate_grad(leaf, grad, create_graph: bool) -> None:
    """Add ``grad`` (an array, or a Tensor when ``create_graph``) into the leaf's ``.grad``."""
    if isinstance(grad, Tensor):
        array = grad._data
    else:
        array = np.asarray(grad)
    if array.dtype != leaf._data.dtype:
        array = array.astype(leaf._data.dtype)
    if create_graph and isinstance(grad, Tensor) and grad._requires_grad:
        with _ACCUMULATING:  # threads backpropagating into one leaf: each addition lands
            if leaf._grad is None:
                leaf._grad = apply_op("CopyBackwards", rules.astype, (grad, leaf._data.dtype), slots=((0,),))
            else:
                leaf._grad = leaf._grad + grad
        return
    with _ACCUMULATING:
        if leaf._grad is None:
            leaf._grad = Tensor._make(np.array(array, copy=True))
        else:
            leaf._grad._data += array


def store_retained_grad(tensor, grad) -> None:
    """Add ``grad`` into the ``.grad`` of a non-leaf that retains its gradient."""
    grad = grad if isinstance(grad, Tensor) else Tensor._make(np.array(grad, dtype=tensor._data.dtype))
    with _ACCUMULATING:
        if tensor._grad is None:
            tensor._grad = Tensor._make(grad._data.copy()) if not grad._requires_grad else grad
        else:
            tensor._grad = tensor._grad + grad


def _run_hooks(node, grad, retained_out):
    """Tensor hooks in registration order; ``retain_grad`` targets go to ``retained_out``.

    Hooks see a Tensor, as in PyTorch, also when the pass runs on arrays.
    """
    if isinstance(node, AccumulateGrad):
        hooks, retained = node.variable._hooks, None
    else:
        hooks, retained = node._pre_hooks, node.metadata.get("_retained")
    if hooks:
        on_arrays = not isinstance(grad, Tensor)
        value = Tensor._make(np.asarray(grad)) if on_arrays else grad
        for hook in list(hooks):
            result = hook(value)
            if result is None:
                continue
            name = getattr(hook, "__name__", repr(hook))
            if np.shape(result) != np.shape(value):
                raise RuntimeError(f"hook '{name}' has changed the size of value")
            if getattr(result, "dtype", None) != value.dtype:
                raise RuntimeError(
                    f"hook '{name}' has changed the type of value (was {value.type()} got "
                    f"{result.type() if isinstance(result, Tensor) else type(result).__name__})"
                )
            value = result
        grad = value._data if on_arrays else value
    if retained is not None:
        tensor = retained()
        if tensor is not None:
            retained_out.append((tensor, grad))
    return grad


def _wrap(array, grad_fn):
    """A Tensor for a saved output, attached to the node that made it."""
    return Tensor._from_node(array, grad_fn)
