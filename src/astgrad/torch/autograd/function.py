"""``torch.autograd.Function``: an operation with a forward and a backward written by the user.

``forward(ctx, *inputs)`` runs without recording (as in PyTorch), or, in
PyTorch 2's style, ``forward(*inputs)`` followed by ``setup_context(ctx,
inputs, output)`` when the class defines ``setup_context``; ``apply``
then records one node, named ``<ClassName>Backward``, whose backward calls
``backward(ctx, grad_output)`` (for a tuple of outputs, one node per output
feeding one node that calls ``backward(ctx, *grad_outputs)`` once: module
``tape._gathering``).  Tensors saved with
``ctx.save_for_backward`` are checked against in-place writes when the
backward reads them (PyTorch's version-counter error), never read stale.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from typing import Any

import numpy as np

from ... import rules
from ...tape import (
    OutputGradients, Tensor, apply_op, as_tensor, is_grad_enabled, is_tensor, no_grad, record_gathering, set_tangent,
    tangent_of, unpack_dual, zeros_like,
)

__all__ = ["Function", "FunctionCtx", "once_differentiable"]

LEGACY_FUNCTION = ("Legacy autograd function with non-static forward method is deprecated. Please use new-style "
                   "autograd function with static forward method. (Example: "
                   "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")
SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have already "
    "been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). "
    "Specify retain_graph=True if you need to backward through the graph a second time or if you need to access "
    "saved tensors after calling backward."
)
MODIFIED_SAVED = (
    "one of the variables needed for gradient computation has been modified by an inplace operation: "
    "{described} is at version {now}; expected version {then} instead. Hint: enable anomaly detection to find the "
    "operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False)."
)


class FunctionCtx:
    """The ``ctx`` of a custom Function: saved tensors, ``needs_input_grad`` and any attribute the user sets."""

    # set by the Function's apply before forward runs
    _function: Any
    needs_input_grad: tuple
    _inputs_like: tuple
    _outputs_like: tuple
    _node: Any = None  # a weak reference to the recorded node, once recorded

    def save_for_backward(self, *tensors) -> None:
        self._saved = tuple(tensors)
        self._versions = tuple(t._version if is_tensor(t) else None for t in tensors)

    def save_for_forward(self, *tensors) -> None:
        """What ``jvp`` reads back from ``ctx.saved_tensors``."""
        self._saved_forward = tuple(tensors)

    @property
    def saved_tensors(self) -> tuple:
        """The saved tensors; PyTorch's errors when one was written in place since it was saved, or when a
        backward without ``retain_graph`` already went through this node (its saved tensors are freed)."""
        if getattr(self, "_in_jvp", False):
            return getattr(self, "_saved_forward", ())
        node = self._node() if self._node is not None else None
        if node is not None and getattr(node, "_freed", False) and getattr(self, "_saved", ()):
            raise RuntimeError(SECOND_BACKWARD)
        for t, then in zip(getattr(self, "_saved", ()), getattr(self, "_versions", ())):
            if then is not None and t._version != then:
                shape = ", ".join(str(n) for n in t.shape)
                described = f"[{t.type()} [{shape}]]"
                if t.grad_fn is not None:
                    op = type(t.grad_fn).__name__
                    described += f", which is output 0 of {op[:-len('Backward0')] if op.endswith('Backward0') else op},"
                raise RuntimeError(MODIFIED_SAVED.format(described=described, now=t._version, then=then))
        return getattr(self, "_saved", ())

    def mark_non_differentiable(self, *tensors) -> None:
        raise NotImplementedError("astgrad.torch: ctx.mark_non_differentiable is not supported; return "
                                  "output.detach() from forward instead")

    def mark_dirty(self, *tensors) -> None:
        raise NotImplementedError("astgrad.torch: ctx.mark_dirty (a forward that writes its input in place) is not "
                                  "supported; write the result into a new tensor")

    def _gradients(self, *grad_outputs):
        """``backward(ctx, *grad_outputs)`` checked: one gradient (or None) per forward input."""
        taped = is_tensor(grad_outputs[0])  # the backward pass runs on Tensors only with create_graph
        returned = self._function.backward(self, *(g if taped else as_tensor(g) for g in grad_outputs))
        grads = returned if isinstance(returned, tuple) else (returned,)
        expected = len(self.needs_input_grad)
        if len(grads) != expected:
            raise RuntimeError(f"function {self._function.__name__}Backward returned an incorrect number of "
                               f"gradients (expected {expected}, got {len(grads)})")
        out: list = []
        for g, needed, like in zip(grads, self.needs_input_grad, self._inputs_like):
            if g is not None and not is_tensor(g):
                raise TypeError(f"function {self._function.__name__}Backward returned a gradient of type "
                                f"{type(g).__name__}; return a Tensor or None for each input of forward")
            if not needed:
                out.append(None)
                continue
            if g is None:  # None means zero, as in PyTorch (which then leaves a leaf's .grad None)
                g = zeros_like(like)
            out.append(g if taped else g.detach().numpy())
        return tuple(out)


def _backward_of_function(g, ans, ctx, inputs):
    """The rule of every custom Function's node: its ``ctx`` knows the class and what was saved.

    It never reads ``inputs`` (the node neither keeps nor version-checks
    them): what the backward reads is what ``save_for_backward`` saved.
    For a Function with several outputs ``g`` gathers their gradients.
    """
    if isinstance(g, np.ndarray) and g.dtype == object:
        g = g.item()
    if isinstance(g, OutputGradients):
        return None, ctx._gradients(*g.complete(ctx._outputs_like))
    return None, ctx._gradients(g)


def _select_output(packed, index, count):
    """Stands for output ``index`` of a Function with several outputs (computed before recording)."""
    raise AssertionError("a custom Function's forward is never called through its node")


def _output_node(name, gathered, index, count, output):
    """``output`` recorded as output ``index`` of the gathering node ``gathered``."""
    data = output.detach().numpy()
    return apply_op(name, _select_output, (gathered, index, count), slots=((0,),), rule=_SELECT_RULE,
                    impl=lambda *_: data)


def _select_vjp(g, ans, packed, index, count):
    """Output ``index``'s gradient, tagged, for the node that calls the Function's backward."""
    return (OutputGradients.one(index, count, g),)


def _recorded_function(ctx, inputs):
    """Stands for the user's forward in the node (the output is computed before recording)."""
    raise AssertionError("a custom Function's forward is never called through its node")


_RULE = rules.Rule(_recorded_function, _backward_of_function, "torch.autograd.Function")
_SELECT_RULE = rules.Rule(_select_output, _select_vjp, "torch.autograd.Function")


class Function:
    """Subclass with static ``forward(ctx, *inputs)`` and ``backward(ctx, *grad_outputs)``; call ``apply``."""

    def __call__(self, *args, **kwargs):
        raise RuntimeError(LEGACY_FUNCTION)

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Not defined here: a class that defines it gets ``forward(*inputs)`` without ``ctx``."""
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @classmethod
    def _forward(cls, ctx, inputs):
        """The output of ``forward``: given ``ctx`` first, or (with ``setup_context``) the inputs alone, then
        ``setup_context(ctx, inputs, output)``, as PyTorch calls them; nothing is recorded meanwhile."""
        with no_grad():
            if inspect.getattr_static(cls, "setup_context") is inspect.getattr_static(Function, "setup_context"):
                return cls.forward(ctx, *inputs)
            inspect.signature(cls.forward).bind(*inputs)  # PyTorch's TypeError for a forward that still takes ctx
            out = cls.forward(*inputs)
            cls.setup_context(ctx, inputs, out)
            return out

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    @classmethod
    def apply(cls, *inputs):
        tangents = tuple(tangent_of(a) for a in inputs)
        if all(t is None for t in tangents):
            return cls._apply(inputs)[1]
        if inspect.getattr_static(cls, "jvp") is inspect.getattr_static(Function, "jvp"):
            cls.jvp(None)  # PyTorch's error: tracing forward's own operations would be a guess
        # as PyTorch: forward sees the primals; jvp(ctx, *tangents) gets zeros for a tensor without a tangent
        ctx, out = cls._apply(tuple(unpack_dual(a).primal if t is not None else a for a, t in zip(inputs, tangents)))
        given = tuple(t if t is not None else zeros_like(a) if is_tensor(a) else None for a, t in zip(inputs, tangents))
        ctx._in_jvp = True
        try:
            with no_grad():
                returned = cls.jvp(ctx, *given)
        finally:
            ctx._in_jvp = False
        outputs = out if isinstance(out, tuple) else (out,)
        returned = returned if isinstance(returned, tuple) else (returned,)
        if len(returned) != len(outputs):
            raise RuntimeError(f"{cls.__name__}.jvp returned {len(returned)} tangents for {len(outputs)} outputs")
        for i, (o, t) in enumerate(zip(outputs, returned)):
            if any(o is a for a in inputs):
                raise RuntimeError(f"astgrad: {cls.__name__}.forward returned its input as output {i}: return a "
                                   "new tensor (x.clone()) to give it a tangent")
            if t is not None and o._data.dtype.kind in "fc":
                set_tangent(o, t, f"{cls.__name__}.jvp's tangent of output {i}")
        return out

    @classmethod
    def _apply(cls, inputs):
        """``(ctx, output)``: forward run and its backward recorded."""
        ctx = FunctionCtx()
        ctx._function = cls
        ctx.needs_input_grad = tuple(is_tensor(a) and a.requires_grad and is_grad_enabled() for a in inputs)
        ctx._inputs_like = tuple(a.detach() if is_tensor(a) else None for a in inputs)
        out = cls._forward(ctx, inputs)
        several = isinstance(out, tuple)
        outputs = out if several else (out,)
        for o in outputs:
            if not isinstance(o, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return a Tensor or a tuple of Tensors, "
                                f"got {type(o).__name__}")
        if not any(ctx.needs_input_grad):
            return ctx, out
        name = f"{cls.__name__}Backward"
        slots = tuple((1, i) for i, a in enumerate(inputs) if is_tensor(a))
        if not several:
            data = out.detach().numpy()
            recorded = apply_op(name, _recorded_function, (ctx, tuple(inputs)), slots=slots, rule=_RULE,
                                impl=lambda *_: data)
            if recorded.grad_fn is not None:
                ctx._node = weakref.ref(recorded.grad_fn)
            return ctx, recorded
        # one node per output passes its gradient, tagged with the output's position, to one node that
        # calls backward once with every output's gradient (the tape's nodes have one output each)
        ctx._outputs_like = tuple(o.detach() for o in outputs)
        gathered = record_gathering(name, _recorded_function, (ctx, tuple(inputs)), slots, _RULE)
        if gathered is None:  # no input has an edge (a tensor input in no_grad's sense): nothing recorded
            return ctx, out
        ctx._node = weakref.ref(gathered.grad_fn)
        return ctx, tuple(_output_node(name, gathered, i, len(outputs), o) if o._data.dtype.kind in "fc" else o
                     for i, o in enumerate(outputs))


def once_differentiable(backward):
    """PyTorch's decorator for a backward that cannot itself be differentiated (it may use numpy, say).

    Asked for a gradient with a graph (``create_graph=True``), it refuses
    rather than let a second derivative miss what it computes.
    """

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        if is_grad_enabled():  # the backward pass records only with create_graph
            raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")
        return backward(ctx, *grad_outputs)

    return wrapper
