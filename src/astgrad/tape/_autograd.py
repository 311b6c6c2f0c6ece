"""``backward`` and ``grad``: argument checking in PyTorch's words, then the engine."""

from __future__ import annotations

import warnings

import numpy as np

from . import _examples, _record
from ._dual import BACKWARD_REFUSED
from ._engine import run_backward, store_retained_grad
from ._modes import _state
from ._record import edge_of, is_tensor
from ._tensor import Tensor, TensorMethodsBase, extends

NO_GRAD = "element 0 of tensors does not require grad and does not have a grad_fn"
CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter and its "
    "gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to "
    "avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters "
    "to None after use to break the cycle and avoid the leak. (Triggered internally at "
    "/__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp:1307.)"
)
ONLY_INPUTS_WARNING = (
    "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate gradient for "
    "other parts of the graph, please use torch.autograd.backward."
)
_warned_create_graph = False


def _as_sequence(value):
    if value is None:
        return None
    if is_tensor(value):
        return [value]
    return list(value)


def _initial_grads(outputs, grad_outputs, create_graph):
    """The seed gradient of each output, checked as PyTorch checks it."""
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    seeds = []
    for out, g in zip(outputs, grad_outputs):
        if g is None:
            if out._data.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            seed = np.ones(out._data.shape, dtype=out._data.dtype)
            seeds.append(Tensor._make(seed) if create_graph else seed)
            continue
        if not is_tensor(g):
            if isinstance(g, (list, tuple)):
                inner = type(g[0]).__name__ if len(g) else "list"
                raise TypeError(f"gradients can be either Tensors or None, but got {inner}")
            if isinstance(g, (float, int)):
                raise TypeError(f"'{type(g).__name__}' object is not iterable")
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        if g._data.shape != out._data.shape:
            raise RuntimeError(
                f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and output[0] has a shape "
                f"of {out.shape}."
            )
        data = g._data if g._data.dtype == out._data.dtype else g._data.astype(out._data.dtype)
        if create_graph:
            seeds.append(g if g._data.dtype == out._data.dtype else g.to(out.dtype))
        else:
            seeds.append(data)
    return seeds


def _roots(outputs):
    if _record._dual:
        raise RuntimeError(BACKWARD_REFUSED)
    roots = []
    for i, out in enumerate(outputs):
        if not out._requires_grad:
            raise RuntimeError(NO_GRAD.replace("element 0", f"element {i}"))
        roots.append(edge_of(out))
    return roots


def _partial_run(partial: bool, *args, **kwargs):
    """``run_backward``, counted in ``partial_backward`` when only some gradients are asked for."""
    if not partial:
        return run_backward(*args, **kwargs)
    _state.partial_backward += 1
    try:
        return run_backward(*args, **kwargs)
    finally:
        _state.partial_backward -= 1


def is_checkpoint_valid() -> bool:
    """False inside ``autograd.grad`` or ``backward(inputs=...)``, where a reentrant checkpoint cannot run."""
    return _state.partial_backward == 0


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate gradients of ``tensors`` into the leaves' ``.grad``."""
    global _warned_create_graph
    _examples.check_backward()
    outputs = _as_sequence(tensors)
    grad_tensors = _as_sequence(grad_tensors) if not isinstance(grad_tensors, (float, int)) else [grad_tensors]
    seeds = _initial_grads(outputs, grad_tensors, create_graph)
    roots = _roots(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph and not _warned_create_graph:
        _warned_create_graph = True
        warnings.warn(CREATE_GRAPH_WARNING, UserWarning, stacklevel=3)
    only = None
    capture = None
    if inputs is not None:
        inputs = _as_sequence(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        if not all(t._requires_grad for t in inputs):
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        only = {id(t) for t in inputs if t._grad_fn is None}
        capture = {edge_of(t): i for i, t in enumerate(inputs) if t._grad_fn is not None}
    captured = _partial_run(inputs is not None, roots, seeds, retain_graph=retain_graph, create_graph=create_graph,
                            capture=capture, only=only)
    if inputs is not None:
        for i, t in enumerate(inputs):
            if t._grad_fn is not None and i in captured and not t._retains_grad:  # else stored already
                store_retained_grad(t, captured[i])
    return None


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, as a tuple; ``.grad`` is untouched."""
    outputs = _as_sequence(outputs)
    inputs = _as_sequence(inputs)
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    if not only_inputs:
        warnings.warn(ONLY_INPUTS_WARNING, FutureWarning, stacklevel=2)
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, but got: "
            "allow_unused=False."
        )
    for t in inputs:
        if not t._requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    seeds = _initial_grads(outputs, _as_sequence(grad_outputs), create_graph)
    roots = _roots(outputs)
    if retain_graph is None:
        retain_graph = create_graph
    capture: dict = {}
    for i, t in enumerate(inputs):
        capture.setdefault(edge_of(t), i)
    captured = _partial_run(True, roots, seeds, retain_graph=retain_graph, create_graph=create_graph,
                            capture=capture, accumulate=False)
    result: list[Tensor | None] = []
    for i, t in enumerate(inputs):
        key = capture[edge_of(t)]
        g = captured.get(key)
        if g is None:
            if materialize_grads:
                result.append(Tensor._make(np.zeros_like(t._data)))
                continue
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. "
                    "Set allow_unused=True if this is the desired behavior."
                )
            result.append(None)
            continue
        if is_tensor(g):
            result.append(g)
        else:
            array = np.asarray(g)
            if array.dtype != t._data.dtype:
                array = array.astype(t._data.dtype)
            result.append(Tensor._make(np.array(array, copy=True)))
    return tuple(result)


@extends(Tensor)
class _BackwardMethod(TensorMethodsBase):
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) . gradient into every leaf's ``.grad``."""
        node = self._grad_fn
        if (not create_graph and inputs is None and node is not None and self._requires_grad
                and not _state.transforms and not _record._dual):
            # loss.backward() and y.backward(v): what ``backward`` below does for them, without its lists and checks
            data = self._data
            if gradient is None:
                if data.size == 1:
                    seed = np.array(1, data.dtype) if data.ndim == 0 else np.ones(data.shape, data.dtype)
                    run_backward(((node, 0),), (seed,), retain_graph=bool(retain_graph), create_graph=False)
                    return
            elif (type(gradient) is Tensor and gradient._data.shape == data.shape
                  and gradient._data.dtype == data.dtype):
                run_backward(((node, 0),), (gradient._data,), retain_graph=bool(retain_graph), create_graph=False)
                return
        backward([self], None if gradient is None else [gradient], retain_graph, create_graph, inputs=inputs)
