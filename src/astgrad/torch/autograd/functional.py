"""``torch.autograd.functional``: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp`` and ``hvp``.

Each is built from ``autograd.grad`` on the tape, as PyTorch builds them:
forward products (``jvp``, ``hvp``, the ``"forward-mode"`` strategies)
use the double-backward trick, the gradient of a vector-Jacobian product
with respect to its (linear) vector.  Signatures, return structures
(a Tensor where PyTorch gives a Tensor, tuples where it gives tuples),
``create_graph`` and ``strict`` follow PyTorch.  ``vectorize=True`` gives
the same numbers by a loop.  Where the trick cannot be exact (a
vector-Jacobian product computed without a history) it raises.
"""

from __future__ import annotations

from ...tape import Tensor, enable_grad, grad, is_grad_enabled, set_grad_enabled, stack, zeros, zeros_like

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


# ------------------------------------------------------------ argument handling


def _as_tuple(value, arg_name: str, fn_name: str):
    """``(was_a_tuple, tensors as a tuple)``; anything else than Tensors is refused in PyTorch's words."""
    was_tuple = isinstance(value, tuple)
    items = value if was_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            what = f"the value at index {i}" if was_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                            f"but {what} has type {type(item)}.")
    return was_tuple, items


def _prepare(tensors, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the user's inputs: ours to differentiate, told apart from captured ones.

    With ``create_graph`` an input that requires grad stays connected to its
    history (a view of itself), so the results can be differentiated again
    with respect to it.
    """
    prepared = []
    for t in tensors:
        if create_graph and t.requires_grad:
            prepared.append(t.view_as(t))
        else:
            prepared.append(t.detach().requires_grad_(need_graph))
    return tuple(prepared)


def _finish(values, create_graph: bool):
    """Results without history unless the caller asked for a graph (nested tuples for jacobians)."""
    if values and isinstance(values[0], Tensor):
        return values if create_graph else tuple(v.detach() for v in values)
    return tuple(_finish(v, create_graph) for v in values)


def _unpack(values, was_tuple):
    """A Tensor where the user gave a Tensor: ``was_tuple`` is one flag, or (outer, inner) for jacobians."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            values = tuple(v[0] for v in values)
        return values if outer else values[0]
    return values if was_tuple else values[0]


def _check_v(v, like, like_is_tuple: bool) -> None:
    if len(v) != len(like):
        if like_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (given, expected) in enumerate(zip(v, like)):
        if given.size() != expected.size():
            where = f"Entry {i} in " if like_is_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {expected.size()} but got {given.size()}.")


def _prepare_v(v, like, like_is_tuple: bool, create_graph: bool, fn_name: str, unless: str):
    """``v`` as a tuple checked against ``like``; ``None`` only where ``like`` is one single-element tensor."""
    if v is None:
        if len(like) != 1 or like[0].nelement() != 1:
            raise RuntimeError(f"The vector v can only be None if {unless} a single Tensor with a single element.")
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, like, like_is_tuple)
    return v


_STRICT_MESSAGES = {
    "outputs": ("Output {i} of the user-provided function does not require gradients. The outputs must be "
                "computed in a differentiable manner from the input when running in strict mode."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of the user-provided "
                    "function. This is not allowed in strict mode."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided function with "
                 "respect to input {i} is independent of the input. This is not allowed in strict mode. You "
                 "should ensure that your function is twice differentiable and that the jacobian depends on "
                 "the inputs (this would be violated by a linear function for example)."),
    "hessian": ("The hessian of the user-provided function with respect to input {i} is independent of the "
                "input. This is not allowed in strict mode. You should ensure that your function is thrice "
                "differentiable and that the hessian depends on the inputs."),
}


def _check_requires_grad(values, kind: str, strict: bool) -> None:
    """Under ``strict``, refuse a value that does not depend on the inputs (PyTorch's messages)."""
    if not strict:
        return
    for i, value in enumerate(values):
        if value is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode.")
        if not value.requires_grad:
            raise RuntimeError(_STRICT_MESSAGES[kind].format(i=i))


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """``autograd.grad`` over the outputs that carry a gradient; ``None`` for inputs they do not reach."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return grad([out for out, _ in kept], inputs, [g for _, g in kept], retain_graph=retain_graph,
                create_graph=create_graph, allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs "
                  "when using the double backward trick to compute forward mode gradients. This is not "
                  "allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not "
                   "allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the "
                         "grad_jacobian. This is not allowed in strict mode as it prevents from using the "
                         "double backward trick to replace forward mode AD.",
}


def _zeros_for_none(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros (shaped as ``refs``) where no gradient arrived; under ``strict``, an error instead."""
    filled = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. This is "
                               "not allowed in strict mode when create_graph=True.")
        filled.append(g)
    return tuple(filled)


NOT_RECORDED = ("astgrad: a forward product is computed here as the derivative of a vector-Jacobian product, and the "
                "gradient with respect to input {i} was computed without a history (a backward that is not "
                "differentiable, such as a custom Function's whose backward leaves the tape), so the product would "
                "be zeros; use a reverse-mode jacobian (jacrev, strategy='reverse-mode') or make the backward "
                "differentiable")


def _recorded(grads) -> None:
    """Refuse the double-backward trick where a vector-Jacobian product has no history: its derivative is not J v."""
    for i, g in enumerate(grads):
        if g is not None and not g.requires_grad:
            raise RuntimeError(NOT_RECORDED.format(i=i))


def _grad_mode_after(create_graph: bool) -> bool:
    return True if create_graph else is_grad_enabled()


# --------------------------------------------------------------------- products


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T J)``: the vector-Jacobian product at ``inputs``."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, outputs_tuple, create_graph, "vjp",
                       "the user-provided function returns")
    with set_grad_enabled(_grad_mode_after(create_graph)):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(result, create_graph), inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``: the Jacobian-vector product, by the double-backward trick."""
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, create_graph, "jvp",
                       "the input to the user-provided function is")
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # the vjp is linear in its vector, so the vector's value (zeros) never shows in J v
        vectors = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _grad(outputs, inputs, vectors, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
        _recorded(grad_inputs)
    with set_grad_enabled(True) if create_graph else _unchanged():
        grads = _grad(grad_inputs, vectors, v, create_graph=create_graph)
        result = _zeros_for_none(grads, outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(result, create_graph), outputs_tuple))


class _unchanged:
    """A context manager that leaves the grad mode as it is."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


# -------------------------------------------------------------------- jacobians


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output i and input j, a tensor of shape ``out_i + in_j``.

    A Tensor when ``func`` takes and returns one Tensor; a tuple over inputs
    (or outputs) when one side is a tuple; a tuple of tuples when both are.
    ``"reverse-mode"`` takes one backward per output element,
    ``"forward-mode"`` one double-backward product per input element.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                             'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                             'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                      '`strategy="forward-mode"` are not supported together (yet). Please either '
                                      'set `create_graph=False` or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
                               'are not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is "
                                      "only implemented for `vectorize=True`.")
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if strategy == "forward-mode":
            blocks = _forward_blocks(outputs, inputs)
        else:
            blocks = _reverse_blocks(outputs, inputs, create_graph, strict)
        return _unpack(_finish(blocks, create_graph), (outputs_tuple, inputs_tuple))


def _reverse_blocks(outputs, inputs, create_graph: bool, strict: bool) -> tuple:
    """Row by row: the gradient of each output element with respect to every input."""
    blocks = []
    for i, out in enumerate(outputs):
        rows: list[list] = [[] for _ in inputs]
        flat = out.reshape(-1)
        for k in range(out.nelement()):
            grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
            for j, (g, inp) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode.")
                    g = zeros_like(inp)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {i}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                rows[j].append(g)
        blocks.append(tuple(_assemble(r, out.shape + inp.shape, inp) for r, inp in zip(rows, inputs)))
    return tuple(blocks)


def _forward_blocks(outputs, inputs, create_graph: bool = False, vectors=None) -> tuple:
    """Column by column: ``J e_k`` for each element k of each input, by the double-backward trick.

    ``vectors`` are the leaves the trick differentiates with respect to (one
    per output, of its shape), made here unless given; ``create_graph``
    keeps the columns differentiable (``torch.func.hessian`` is a jacfwd of
    a jacrev).
    """
    if vectors is None:
        vectors = tuple(zeros_like(out, requires_grad=True) for out in outputs)
    grad_inputs = _grad(outputs, inputs, vectors, create_graph=True)
    _recorded(grad_inputs)
    columns: list[list[list]] = [[[] for _ in inputs] for _ in outputs]
    for j, (g_in, inp) in enumerate(zip(grad_inputs, inputs)):
        for k in range(inp.nelement()):
            basis = zeros(inp.nelement(), dtype=inp.dtype)
            basis[k] = 1
            if g_in is None:
                column = (None,) * len(outputs)
            else:
                column = _grad((g_in,), vectors, (basis.reshape(inp.shape),), retain_graph=True,
                               create_graph=create_graph)
            for i, (c, out) in enumerate(zip(column, outputs)):
                columns[i][j].append(zeros_like(out) if c is None else c)
    blocks = []
    for i, out in enumerate(outputs):
        row = []
        for j, inp in enumerate(inputs):
            shape = inp.shape + out.shape
            stacked = _assemble(columns[i][j], shape, out)
            # stacked is indexed (input element, output element): move the output's axes first
            order = tuple(range(inp.dim(), inp.dim() + out.dim())) + tuple(range(inp.dim()))
            row.append(stacked.permute(*order) if order else stacked)
        blocks.append(tuple(row))
    return tuple(blocks)


def _assemble(pieces, shape, like):
    """The gradients in ``pieces`` (one per element) stacked and shaped ``shape``."""
    if not pieces:
        return zeros(tuple(shape), dtype=like.dtype)
    return stack(pieces, dim=0).reshape(tuple(shape))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function with one single-element output: the jacobian of its gradient.

    For inputs i and j the block has shape ``in_i + in_j``; a Tensor for one
    input, a tuple of tuples for a tuple of inputs.
    """
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def single_output(*args):
        out = func(*args)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple or not isinstance(out, Tensor):
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.nelement() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single "
                               "element")
        return out.squeeze()

    def gradient(*args):
        if outer_jacobian_strategy == "forward-mode":
            args = tuple(a.requires_grad_(True) for a in args)
        jac = jacobian(single_output, args, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    blocks = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _unpack(blocks, (inputs_tuple, inputs_tuple))


def _single_output_gradient(func, inputs, v, create_graph, strict, fn_name):
    """What ``vhp`` and ``hvp`` share: prepared inputs and ``v``, the output, and its gradient with a graph."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _prepare_v(v, inputs, inputs_tuple, create_graph, fn_name,
                   "the input to the user-provided function is")
    outputs_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if outputs_tuple or not isinstance(outputs[0], Tensor):
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single "
                           "element")
    jac = _grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs_tuple, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), v^T H)``: the gradient of ``<grad func, v>``."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _single_output_gradient(
            func, inputs, v, create_graph, strict, "vhp")
    with set_grad_enabled(_grad_mode_after(create_graph)):
        grads = _grad(jac, inputs, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "double_back")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(result, create_graph), inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)``, by the double-backward trick (equal to ``vhp`` for a symmetric Hessian)."""
    with enable_grad():
        inputs_tuple, inputs, v, outputs_tuple, outputs, jac = _single_output_gradient(
            func, inputs, v, create_graph, strict, "hvp")
        vectors = tuple(zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _grad(jac, inputs, vectors, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
        _recorded(double_back)
    with set_grad_enabled(_grad_mode_after(create_graph)):
        grads = _grad(double_back, vectors, v, create_graph=create_graph)
        result = _zeros_for_none(grads, inputs, strict, create_graph, "double_back_trick")
    return (_unpack(_finish(outputs, create_graph), outputs_tuple),
            _unpack(_finish(result, create_graph), inputs_tuple))
