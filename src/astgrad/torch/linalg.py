"""``torch.linalg``: ``vector_norm``, ``matrix_norm`` and ``norm`` over the tape.

Vector norms and the Frobenius norm are one ``LinalgVectorNormBackward0``
node, as in PyTorch.  Other matrix norms use numpy's ``linalg.norm`` rule and
carry the name of the reduction PyTorch ends them with (``AmaxBackward0`` for
1, 2 and inf, ``AminBackward0`` for their negatives, ``SumBackward1`` for the
nuclear norm).
"""

import numpy as np

from .. import rules
from ..tape import apply_op, as_tensor

__all__ = ["vector_norm", "matrix_norm", "norm"]

_SCALAR_TYPE_NAMES = {"torch.int64": "Long", "torch.int32": "Int", "torch.int16": "Short", "torch.int8": "Char",
                      "torch.uint8": "Byte", "torch.bool": "Bool"}
_MATRIX_ORDERS = ("fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf)


def _dims(dim):
    if dim is None:
        return None
    return tuple(int(d) for d in dim) if isinstance(dim, (list, tuple)) else int(dim)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The ``ord``-norm of the entries over ``dim`` (all of them when ``None``)."""
    x = as_tensor(x)
    if dtype is not None:
        x = x.to(dtype)
    if isinstance(ord, str):
        raise RuntimeError(f"linalg.vector_norm: ord must be a number, got {ord!r}")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           + _SCALAR_TYPE_NAMES.get(str(x.dtype), str(x.dtype)))
    return apply_op("LinalgVectorNormBackward0", rules.vector_norm, (x,),
                    {"ord": ord, "axis": _dims(dim), "keepdims": bool(keepdim)})


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The ``ord`` matrix norm over the two dimensions ``dim``."""
    A = as_tensor(A)
    if dtype is not None:
        A = A.to(dtype)
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if ord not in _MATRIX_ORDERS:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    dims = _dims(dim)
    if ord == "fro":
        return vector_norm(A, 2, dims, keepdim)
    name = "SumBackward1" if ord == "nuc" else "AmaxBackward0" if ord > 0 else "AminBackward0"
    return apply_op(name, np.linalg.norm, (A,), {"ord": ord, "axis": dims, "keepdims": bool(keepdim)})


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector norm (1-D input or one ``dim``) or a matrix norm (2-D input or two ``dim``s), as PyTorch chooses."""
    A = as_tensor(A)
    dims = _dims(dim)
    if dims is None:
        if ord is None:
            return vector_norm(A, 2, None, keepdim, dtype=dtype)
        if A.dim() not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.dim()}D.")
        dims = (0,) if A.dim() == 1 else (0, 1)
    if isinstance(dims, int) or len(dims) == 1:
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
