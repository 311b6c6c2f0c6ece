"""``vmap`` on the tape: the function runs once per example, and the results are stacked.

PyTorch's ``vmap`` runs the function once on batched tensors; here each
example is sliced out of the mapped inputs (indexing, so gradients flow
back into them), the function runs on it, and each output is stacked
along its ``out_dims``.  The numbers are the same; what a loop cannot
reproduce is refused (module ``astgrad.tape._examples``): an in-place write
into a tensor the example did not make, and random draws under
``randomness="error"``.  ``.item()`` and Python control flow on an example's
values work, since each example is an ordinary tensor.  ``chunk_size`` is
checked as PyTorch checks it; the loop runs one example at a time whatever
it is.  A batch of size 0 has no example to run and is refused.
"""

from __future__ import annotations

import functools

import numpy as np

from ...tape import RANDOMNESS, ExampleLoop, Tensor, stack
from ._trees import broadcast_prefix, flatten, spec_repr, unflatten


def _name(func) -> str:
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", repr(func))


def _is_dim(value) -> bool:
    return value is None or isinstance(value, int)


def _input_dims(func, in_dims, args) -> list:
    """One mapped dimension (or None) per leaf of ``args``, checked as PyTorch checks ``in_dims``."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, int) and not isinstance(in_dims, tuple):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are "
                         "trying to vmap over a function with no inputs. The latter is unsupported.")
    dims = broadcast_prefix(in_dims, args, _is_dim)
    if dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{spec_repr(flatten(in_dims)[1])} but inputs has structure {spec_repr(flatten(args)[1])}.")
    leaves, _ = flatten(args)
    checked: list = []
    for dim, leaf in zip(dims, leaves):
        if dim is None:
            checked.append(None)
            continue
        if not isinstance(leaf, Tensor):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type {type(leaf)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -leaf.dim() <= dim < leaf.dim():
            raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a Tensor of dimensionality "
                             f"{leaf.dim()} so expected in_dim to satisfy -{leaf.dim()} <= in_dim < {leaf.dim()}.")
        checked.append(dim % leaf.dim())
    return checked


def _batch_size(leaves, dims) -> int:
    sizes = [leaf.shape[d] for leaf, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes {sizes} "
                         "for the mapped dimension")
    if sizes[0] == 0:
        raise ValueError("astgrad: vmap runs the function once per example, and a batch of size 0 has none to run; "
                         "handle the empty batch before calling vmap")
    return sizes[0]


def _stacked(func, per_example: list, out_dims, structure):
    """The examples' outputs (each a list of leaves) stacked along ``out_dims``, in the outputs' structure."""
    name = _name(func)
    example = unflatten(structure, per_example[0])
    if not (_is_dim(out_dims) or isinstance(out_dims, (tuple, list, dict))):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")
    dims = broadcast_prefix(out_dims, example, _is_dim)
    if dims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {spec_repr(flatten(out_dims)[1])} but outputs "
                         f"has structure {spec_repr(structure)}.")
    leaves = []
    for k, dim in enumerate(dims):
        values = [outputs[k] for outputs in per_example]
        if dim is None:
            if not all(_same(values[0], v) for v in values[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
            leaves.append(values[0])
            continue
        for v in values:
            if not isinstance(v, Tensor):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v)}. Did you "
                                 "mean to set out_dims= to None for output?")
        leaves.append(stack(values, dim=dim))
    return unflatten(structure, leaves)


def _same(a, b) -> bool:
    """Whether two examples returned the same unmapped output (a tensor of equal values, or an equal object)."""
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        return a is b or (a.shape == b.shape and a.dtype == b.dtype and
                          bool(np.array_equal(a.detach().numpy(), b.detach().numpy())))
    return not isinstance(a, Tensor) and not isinstance(b, Tensor) and a == b


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``f`` mapped over a dimension of its inputs, by a loop over the examples (module docstring)."""
    if randomness not in RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = _input_dims(func, in_dims, args)
        leaves, structure = flatten(args)
        size = _batch_size(leaves, dims)
        per_example, out_structure = [], None
        with ExampleLoop(randomness) as loop:
            for i in range(size):
                example = [leaf if d is None else leaf[(slice(None),) * d + (i,)] for leaf, d in zip(leaves, dims)]
                with loop.example():
                    output = func(*unflatten(structure, example), **kwargs)
                out_leaves, out_structure_i = flatten(output)
                if out_structure is not None and out_structure_i != out_structure:
                    raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` returned outputs of different "
                                     "structures for different examples")
                out_structure = out_structure_i
                per_example.append(out_leaves)
        return _stacked(func, per_example, out_dims, out_structure)

    return wrapper
