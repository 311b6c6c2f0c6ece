"""``torch.utils.checkpoint``: a call that keeps its inputs, not its intermediates, and reruns in backward.

Both of PyTorch's variants, with its warnings and errors:

* ``use_reentrant=True`` (and, with PyTorch's warning, when it is not
  given): a custom Function, ``CheckpointFunction``, runs the function under
  ``no_grad`` and keeps only its tensor arguments; its backward reruns the
  function with grad enabled on detached copies and calls ``backward`` on
  the rerun's outputs, so tensors the function reads from elsewhere (a
  module's weights) get their ``.grad`` from that inner pass.  Only tensor
  arguments that require grad make the output require grad, and it refuses
  ``autograd.grad`` and ``backward(inputs=...)``, as PyTorch does.
* ``use_reentrant=False``: the function runs once recorded, to learn which
  leaves it reads (its arguments and, say, a module's weights); the
  recording is then dropped and one ``CheckpointBackward`` node from those
  leaves to the outputs is kept, whose backward reruns the function and
  asks ``autograd.grad`` for exactly those leaves.  So ``autograd.grad``
  works and the output requires grad when a weight does.  Two differences
  from PyTorch, both refusals rather than guesses: the output's
  ``grad_fn`` is that one node (PyTorch shows the last operation's), and a
  function that reads a non-leaf tensor computed outside it (not passed as
  an argument) is refused.  Differentiating it twice (``create_graph=True``)
  works as PyTorch's: the backward pass then reruns the function recorded,
  on views of the arguments, so the gradients it returns depend on them.

``preserve_rng_state`` (default True) saves the default generator's state
before the forward and restores it around the rerun, so ``torch.rand``
inside draws the same numbers twice.  The arguments saved are
version-checked: writing one in place before backward is PyTorch's error,
never a gradient of the new values.
"""

from __future__ import annotations

import warnings

from ...tape import (
    AccumulateGrad, Node, backward, enable_grad, generator_state, grad, is_checkpoint_valid,
    is_grad_enabled, is_tensor, set_generator_state,
)
from ..autograd.function import Function
from ..nn import Sequential

__all__ = ["CheckpointError", "checkpoint", "checkpoint_sequential", "detach_variable", "noop_context_fn"]

REENTRANT_MISSING = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
    "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is recommended, but if "
    "you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants."
)
SEQUENTIAL_REENTRANT_MISSING = (
    "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. In "
    "version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is recommended, but "
    "if you need to preserve the current default behavior, you can pass use_reentrant=True. Refer to docs for more "
    "details on the differences between the two variants."
)
NO_INPUT_GRAD = "None of the inputs have requires_grad=True. Gradients will be None"
REENTRANT_PARTIAL = (
    "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` parameter "
    "to .backward(). To resolve this error, you can either set use_reentrant=False, or call .backward() without "
    "passing the `inputs` argument."
)
NOTHING_TO_DIFFERENTIATE = "none of output has requires_grad=True, this checkpoint() is not necessary"
CONTEXT_REENTRANT = "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
CONTEXT_REFUSED = ("astgrad.torch: checkpoint(context_fn=...) is not supported; call checkpoint without context_fn "
                   "(the rerun runs in the grad mode of the backward pass)")
OUTSIDE_TENSOR = (
    "astgrad.torch: checkpoint(use_reentrant=False): {name} reads a tensor that was computed outside it and "
    "requires grad (its grad_fn is {node}) without taking it as an argument; pass that tensor as an argument of "
    "checkpoint, or use use_reentrant=True"
)
RERUN_DIFFERS = (
    "torch.utils.checkpoint: Recomputed values for the following tensors have different metadata than during the "
    "forward pass.\n{described}."
)


class CheckpointError(RuntimeError):
    pass


def noop_context_fn():
    return None


def detach_variable(inputs) -> tuple:
    """Each tensor of the tuple ``inputs`` detached, keeping ``requires_grad``; other items as they are."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(_detached(a) if is_tensor(a) else a for a in inputs)


def _detached(t):
    copy = t.detach()
    copy.requires_grad = t.requires_grad
    return copy


def _linked(t):
    """A new tensor holding ``t``'s values and, when ``t`` requires grad, recorded as a view of it."""
    return t.view_as(t) if t.requires_grad else t


class _RandomState:
    """Around the rerun: the generator as the forward found it, then as it was before the rerun."""

    def __init__(self, preserve: bool):
        self.forward = generator_state() if preserve else None

    def __enter__(self):
        self.outside = None
        if self.forward is not None:
            self.outside = generator_state()
            set_generator_state(self.forward)

    def __exit__(self, *exc):
        if self.outside is not None:
            set_generator_state(self.outside)


def _split(out):
    """The tensors in ``out`` (a tensor, or a tuple's tensor items) and how to put new ones back."""
    if is_tensor(out):
        return (out,), lambda tensors: tensors[0]
    if isinstance(out, tuple):
        where = [i for i, o in enumerate(out) if is_tensor(o)]

        def rebuild(tensors):
            items = list(out)
            for i, t in zip(where, tensors):
                items[i] = t
            return tuple(items)

        return tuple(out[i] for i in where), rebuild
    return (), lambda tensors: out


def _same_metadata(then, now) -> None:
    if len(then) != len(now) or any(a.shape != b.shape or a.dtype != b.dtype for a, b in zip(then, now)):
        described = ", ".join(f"{tuple(a.shape)} {a.dtype} -> {tuple(b.shape)} {b.dtype}" for a, b in zip(then, now))
        raise CheckpointError(RERUN_DIFFERS.format(described=described or f"{len(then)} -> {len(now)} outputs"))


class _Shaped:
    """The function, remembering where its last call put tensors among its outputs (a tuple may hold others)."""

    def __init__(self, function):
        self.function = function

    def __call__(self, *args, **kwargs):
        out = self.function(*args, **kwargs)
        _, self.rebuild = _split(out)
        return out


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward under ``no_grad``; backward reruns and calls ``backward`` inside."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(is_tensor(a) and a.requires_grad for a in args):
            warnings.warn(NO_INPUT_GRAD, UserWarning, stacklevel=2)
        ctx.run_function = run_function
        ctx.random = _RandomState(preserve_rng_state)
        ctx.inputs = [None if is_tensor(a) else a for a in args]
        ctx.tensor_indices = [i for i, a in enumerate(args) if is_tensor(a)]
        ctx.save_for_backward(*(args[i] for i in ctx.tensor_indices))
        tensors, _ = _split(run_function(*args))
        ctx.forward_outputs = tuple(t.detach() for t in tensors)
        return tensors[0] if len(tensors) == 1 else tensors

    @staticmethod
    def backward(ctx, *grad_outputs):
        if not is_checkpoint_valid():
            raise RuntimeError(REENTRANT_PARTIAL)
        inputs = list(ctx.inputs)
        for i, t in zip(ctx.tensor_indices, ctx.saved_tensors):
            inputs[i] = t
        with ctx.random:
            detached = detach_variable(tuple(inputs))
            with enable_grad():
                outputs, _ = _split(ctx.run_function(*detached))
        _same_metadata(ctx.forward_outputs, outputs)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
        if not pairs:
            raise RuntimeError(NOTHING_TO_DIFFERENTIATE)
        backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if is_tensor(a) else None for a in detached)


class _Rerun:
    """What the non-reentrant node keeps: the function, its non-tensor arguments and the rerun's recipe."""

    def __init__(self, function, args, kwargs, preserve: bool):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.random = _RandomState(preserve)
        self.positions = [("a", i) for i, a in enumerate(args) if is_tensor(a)]
        self.positions += [("k", k) for k, v in kwargs.items() if is_tensor(v)]

    def call(self, tensors):
        """The function on ``tensors`` in place of the tensor arguments."""
        args, kwargs = list(self.args), dict(self.kwargs)
        for (kind, key), t in zip(self.positions, tensors):
            if kind == "a":
                args[key] = t
            else:
                kwargs[key] = t
        return self.function(*args, **kwargs)


class Checkpoint(Function):
    """The non-reentrant checkpoint's node: from the leaves the function reads to its outputs."""

    @staticmethod
    def forward(ctx, rerun, count, outputs, *tensors):
        ctx.rerun, ctx.count, ctx.forward_outputs = rerun, count, outputs
        ctx.save_for_backward(*tensors)
        return outputs[0] if len(outputs) == 1 else outputs

    @staticmethod
    def backward(ctx, *grad_outputs):
        saved = ctx.saved_tensors
        arguments, weights = saved[:ctx.count], saved[ctx.count:]
        # The backward pass records only with create_graph: then the rerun reads a view of each argument, so
        # the gradients it returns keep their dependence on the inputs and can be differentiated again (a view,
        # not the argument itself: one tensor passed twice must get each position's gradient, not the sum twice).
        twice = is_grad_enabled()
        with ctx.rerun.random:
            inputs = [_linked(a) for a in arguments] if twice else [_detached(a) for a in arguments]
            with enable_grad():
                outputs, _ = _split(ctx.rerun.call(inputs))
        _same_metadata(ctx.forward_outputs, outputs)
        pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
        wanted = [t for t in inputs if t.requires_grad] + list(weights)
        found = iter(grad([o for o, _ in pairs], wanted, [g for _, g in pairs], allow_unused=True,
                          create_graph=twice)
                     if pairs and wanted else [None] * len(wanted))
        grads = [next(found) if t.requires_grad else None for t in inputs]
        return (None, None, None) + tuple(grads) + tuple(found)


def _leaves_read(outputs, arguments, start: int, name: str) -> list:
    """The leaves outside ``arguments`` that the recorded call reached, in a fixed order; refuses outside non-leaves."""
    found: list = []
    seen: set = set()
    stack = [o.grad_fn for o in outputs if o.grad_fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if not any(node.variable is a for a in arguments):
                found.append(node.variable)
            continue
        if node._seq < start:
            raise RuntimeError(OUTSIDE_TENSOR.format(name=name, node=node.name()))
        stack.extend(child for child, _ in node.next_functions if child is not None)
    return found


def _without_reentrant(function, preserve: bool, args, kwargs):
    if not is_grad_enabled():
        return function(*args, **kwargs)
    rerun = _Rerun(function, args, kwargs, preserve)
    arguments = [args[key] if kind == "a" else kwargs[key] for kind, key in rerun.positions]
    detached = [_detached(a) for a in arguments]
    start = Node()._seq
    out = rerun.call(detached)
    tensors, rebuild = _split(out)
    leaves = _leaves_read(tensors, detached, start, getattr(function, "__name__", type(function).__name__))
    outputs = tuple(t.detach() for t in tensors)
    del out, tensors
    if not outputs:
        return rebuild(())
    made = Checkpoint.apply(rerun, len(arguments), outputs, *arguments, *leaves)
    return rebuild(made if isinstance(made, tuple) else (made,))


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True, **kwargs):
    """``function(*args, **kwargs)``, keeping only its inputs; backward reruns it (see the module docstring)."""
    if use_reentrant is None:
        warnings.warn(REENTRANT_MISSING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(CONTEXT_REENTRANT)
        shaped = _Shaped(function)
        made = CheckpointFunction.apply(shaped, preserve, *args)
        return shaped.rebuild(made if isinstance(made, tuple) else (made,))
    if context_fn is not noop_context_fn:
        raise NotImplementedError(CONTEXT_REFUSED)
    return _without_reentrant(function, preserve, args, kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """``functions`` (a ``Sequential`` or a list) run in ``segments`` chunks, each but the last checkpointed."""
    if use_reentrant is None:
        warnings.warn(SEQUENTIAL_REENTRANT_MISSING, UserWarning, stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input

        return forward

    if isinstance(functions, Sequential):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
