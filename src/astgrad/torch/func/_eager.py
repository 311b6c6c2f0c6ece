"""``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd`` and ``hessian`` on the tape.

Each call is a :class:`~._levels.Level`: the differentiated arguments become
tensors of the call's own, the function runs with grad enabled, and
``autograd.grad`` gives the derivatives.  Forward products (``jvp``,
``jacfwd``) use the double-backward trick of ``torch.autograd.functional``
(the gradient of a vector-Jacobian product with respect to its vector), not
dual tensors: the tape has one dual level and no backward inside it, and
the trick composes with everything here (``hessian`` is
``jacfwd(jacrev(f))``, ``jvp(grad(f))`` a Hessian-vector product).
Signatures, return structures and the messages of common mistakes are
PyTorch's.
"""

from __future__ import annotations

import functools

from ...tape import RANDOMNESS, ExampleLoop, Tensor, enable_grad, inside_transform, is_grad_enabled, zeros_like
from ..autograd.functional import _forward_blocks, _grad, _recorded, _reverse_blocks
from ._levels import Level
from ._trees import flatten, spec_repr, spec_text, tree_map, unflatten

JVP = "jvp(f, primals, tangents)"


# ------------------------------------------------------------------ arguments


def _argnum(argnum, count: int) -> int:
    if not isinstance(argnum, int):
        raise RuntimeError(f"argnum must be int, got: {type(argnum)}")
    if -count <= argnum < count:
        return argnum % count
    raise RuntimeError(f"Got argnum={argnum}, but only {count} positional inputs")


def _positions(argnums, count: int):
    """``argnums`` checked against ``count`` arguments: an int, or a tuple of distinct ints."""
    if isinstance(argnums, int):
        return _argnum(argnums, count)
    if not isinstance(argnums, tuple):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    positions = tuple(_argnum(a, count) for a in argnums)
    if not positions:
        raise RuntimeError("argnums must be non-empty")
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return positions


def _differentiated(level: Level, args: tuple, argnums):
    """``(args with the differentiated ones replaced by the level's inputs, those inputs as a tree)``."""
    positions = _positions(argnums, len(args))
    chosen = (positions,) if isinstance(positions, int) else positions
    replaced = list(args)
    for i in chosen:
        replaced[i] = tree_map(level.input, replaced[i])
    diff = replaced[positions] if isinstance(positions, int) else tuple(replaced[i] for i in positions)
    return tuple(replaced), diff


def _split_aux(output, has_aux: bool, api: str):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _tensor_outputs(output, api: str) -> tuple:
    """``(leaves, structure)`` of what ``f`` returned, refused as PyTorch refuses an empty or non-tensor output."""
    leaves, structure = flatten(output)
    if not leaves or (len(leaves) == 1 and leaves[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {leaves})")
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(leaf)}")
    return leaves, structure


def _floating_outputs(leaves) -> None:
    for leaf in leaves:
        if not (leaf.is_floating_point() or leaf.is_complex()):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype {leaf.dtype}")


def _filled(grads, like) -> list:
    """Zeros where no gradient arrived (an input the outputs do not depend on), as torch.func gives."""
    return [zeros_like(ref) if g is None else g for g, ref in zip(grads, like)]


# ----------------------------------------------------------------- gradients


def grad_and_value(func, argnums=0, has_aux=False):
    """``f -> (gradient, value)``; with ``has_aux``, ``(gradient, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        level = Level()
        with enable_grad(), inside_transform():
            args, diff = _differentiated(level, args, argnums)
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value(f)(*args)")
            if not isinstance(output, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(output)}")
            if output.dim() != 0:
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            inputs, structure = flatten(diff)
            grads = _filled(_grad((output,), inputs, create_graph=level.needs_graph((output,))), inputs)
        gradient = level.output(unflatten(structure, grads))
        value = level.output(output)
        if has_aux:
            return gradient, (value, level.output(aux))
        return gradient, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """``f -> gradient`` of a scalar ``f`` with respect to the arguments at ``argnums``; ``(gradient, aux)`` with ``has_aux``."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        gradient, value = both(*args, **kwargs)
        return (gradient, value[1]) if has_aux else gradient

    return wrapper


# ------------------------------------------------------------------ products


def vjp(func, *primals, has_aux=False):
    """``(f(*primals), vjp_fn)`` (and ``aux``); ``vjp_fn(cotangents)`` returns one gradient per primal, a tuple."""
    level = Level()
    with enable_grad(), inside_transform():
        inputs_tree = tree_map(level.input, primals)
        output, aux = _split_aux(func(*inputs_tree), has_aux, "vjp(f, *primals)")
        outputs, out_structure = _tensor_outputs(output, "vjp(f, *primals)")
        _floating_outputs(outputs)
    inputs, in_structure = flatten(inputs_tree)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        given, structure = flatten(cotangents)
        if structure != out_structure:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {spec_text(structure)}, primal output: "
                               f"{spec_text(out_structure)}")
        if create_graph is None:  # PyTorch's default is is_grad_enabled(): only where something outside can see it
            create_graph = is_grad_enabled() and level.needs_graph(outputs, given)
        with enable_grad():
            grads = _grad(tuple(outputs), inputs, tuple(given), create_graph=create_graph, retain_graph=retain_graph)
        return level.output(unflatten(in_structure, _filled(grads, inputs)), graph=create_graph)

    results = (level.output(output), vjp_fn)
    return results + (level.output(aux),) if has_aux else results


def _pushforward(level: Level, outputs, inputs, tangents, strict: bool) -> list:
    """``J t`` for each output, by the double-backward trick; zeros for an output that does not depend on the inputs."""
    moving = [i for i, out in enumerate(outputs) if out.requires_grad]
    tangents_out: list = [None] * len(outputs)
    if moving:
        vectors = [level.own(zeros_like(outputs[i], requires_grad=True)) for i in moving]
        pulled = _grad(tuple(outputs[i] for i in moving), inputs, tuple(vectors), create_graph=True)
        _recorded(pulled)
        pairs = [(g, t) for g, t in zip(pulled, tangents) if g is not None]
        if pairs:
            pushed = _grad(tuple(g for g, _ in pairs), tuple(vectors), tuple(t for _, t in pairs),
                           create_graph=level.needs_graph(outputs, tangents))
            for i, p in zip(moving, pushed):
                tangents_out[i] = p
    for i, out in enumerate(outputs):
        if tangents_out[i] is None:
            if strict:
                raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the "
                                   "inputs. This is not allowed with strict=True.")
            tangents_out[i] = zeros_like(out)
    return tangents_out


def _checked_tangents(primals, tangents) -> tuple:
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{JVP}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    flat_primals, primal_structure = flatten(primals)
    flat_tangents, tangent_structure = flatten(tangents)
    if primal_structure != tangent_structure:
        raise RuntimeError(f"{JVP}: Expected primals and tangents to have the same python structure. For example, if "
                           "primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{spec_repr(primal_structure)} and tangents with structure {spec_repr(tangent_structure)}")
    for name, flat in (("primals", flat_primals), ("tangents", flat_tangents)):
        if not flat:
            raise RuntimeError(f"{JVP}: Expected {name} to contain at least one Tensor.")
        for leaf in flat:
            if not isinstance(leaf, Tensor):
                raise RuntimeError(f"{JVP}: Expected {name} to only contain Tensors, got {type(leaf)}")
    for p, t in zip(flat_primals, flat_tangents):
        if p.shape != t.shape:
            raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                               f"Tensor, this is not supported. Tensor is of size {list(p.shape)} while the given "
                               f"forward gradient is of size {list(t.shape)}.")
        if p.dtype != t.dtype:
            raise TypeError(f"astgrad: the tangent's dtype ({t.dtype}) differs from the primal's ({p.dtype}); PyTorch "
                            "keeps both and computes the tangent in its own dtype, astgrad would compute it in the "
                            "primal's: cast the tangent with tangent.to(primal.dtype)")
    return flat_tangents


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(f(*primals), J tangents)`` (and ``aux``): the Jacobian-vector product, structured as ``f``'s output."""
    flat_tangents = _checked_tangents(primals, tangents)
    level = Level()
    with enable_grad(), inside_transform():
        inputs_tree = tree_map(level.input, primals)
        output, aux = _split_aux(func(*inputs_tree), has_aux, JVP)
        outputs, structure = _tensor_outputs(output, JVP)
        inputs, _ = flatten(inputs_tree)
        pushed = _pushforward(level, outputs, inputs, flat_tangents, strict)
    results = (level.output(output), level.output(unflatten(structure, pushed)))
    return results + (level.output(aux),) if has_aux else results


# ------------------------------------------------------------------ jacobians


def _jacobian_tree(blocks, out_structure, diff, argnums):
    """For each output leaf, its blocks arranged as the differentiated arguments: one tree per argnum."""
    per_output = []
    for row in blocks:
        if isinstance(argnums, int):
            per_output.append(unflatten(flatten(diff)[1], row))
            continue
        arranged, start = [], 0
        for arg in diff:
            count = len(flatten(arg)[0])
            arranged.append(unflatten(flatten(arg)[1], row[start:start + count]))
            start += count
        per_output.append(tuple(arranged))
    return unflatten(out_structure, per_output)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """``f -> J``, row by row (one backward per output element); ``(J, aux)`` with ``has_aux``.

    For output leaf o and input leaf i the block has shape ``o.shape + i.shape``,
    arranged as ``f``'s output, then as the argument(s) at ``argnums``.
    ``chunk_size`` is checked as PyTorch checks it; rows are computed one at
    a time whatever it is.
    """
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args):
        level = Level()
        with enable_grad(), inside_transform():
            args, diff = _differentiated(level, args, argnums)
            output, aux = _split_aux(func(*args), has_aux, "vjp(f, *primals)")
            outputs, structure = _tensor_outputs(output, "vjp(f, *primals)")
            _floating_outputs(outputs)
            inputs, _ = flatten(diff)
            blocks = _reverse_blocks(tuple(outputs), tuple(inputs), create_graph=level.needs_graph(outputs),
                                     strict=False)
        jac = level.output(_jacobian_tree(blocks, structure, diff, argnums))
        return (jac, level.output(aux)) if has_aux else jac

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """``f -> J``, column by column (one forward product per input element); ``(J, aux)`` with ``has_aux``.

    Blocks are arranged as in :func:`jacrev`.  ``f`` runs once, so its
    random draws are the same for every column: ``randomness="same"`` is
    honoured, ``"different"`` is refused and ``"error"`` (PyTorch's default)
    refuses any draw inside ``f``.
    """
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if randomness == "different":
        raise NotImplementedError("astgrad: jacfwd(randomness='different') is not supported: the tape runs f once for "
                                  "all columns, so every column sees the same draws; use randomness='same'")

    @functools.wraps(func)
    def wrapper(*args):
        level = Level()
        with enable_grad(), inside_transform(), ExampleLoop(randomness):
            args, diff = _differentiated(level, args, argnums)
            output, aux = _split_aux(func(*args), has_aux, JVP)
            outputs, structure = _tensor_outputs(output, JVP)
            inputs, _ = flatten(diff)
            moving = [out if out.requires_grad else out.detach() for out in outputs]
            vectors = tuple(level.own(zeros_like(out, requires_grad=out.requires_grad)) for out in moving)
            blocks = _forward_blocks(tuple(moving), tuple(inputs), create_graph=level.needs_graph(outputs),
                                     vectors=vectors)
        jac = level.output(_jacobian_tree(blocks, structure, diff, argnums))
        return (jac, level.output(aux)) if has_aux else jac

    return wrapper


def hessian(func, argnums=0):
    """``f -> H``: ``jacfwd(jacrev(f, argnums), argnums)``, blocks of shape ``in.shape + in.shape``."""
    return jacfwd(jacrev(func, argnums), argnums)
