"""Products of one example written as ``np.einsum`` subscripts, and their batched form (``astgrad.vmap``).

A product of arrays moves and sums axes by its operands' ranks; the
batching rules of ``@``, ``np.dot``, ``np.tensordot``, ``np.inner`` and
``np.einsum`` write it as the subscripts of one example, then add a letter
for the batch axis in front of each batched operand and of the result
(:func:`batched_einsum`).
"""

from __future__ import annotations

import string

import numpy as np

__all__ = ["batched_einsum", "tensordot_subscripts", "dot_subscripts", "matmul_subscripts"]


def _letters(count, start=0):
    return string.ascii_lowercase[start:start + count]


def batched_einsum(subscripts, bdims, *operands):
    """``np.einsum(subscripts, *operands)`` of each example, ``bdims`` saying which operands are batched: a new
    letter for the batch axis in front of those and of the result (implicit output spelled out first)."""
    subscripts = subscripts.replace(" ", "")
    inputs, arrow, output = subscripts.partition("->")
    parts = inputs.split(",")
    if not arrow:  # numpy's implicit output: the letters met once, in order, after the broadcast axes
        letters = [c for c in inputs if c.isalpha()]
        output = ("..." if "..." in inputs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    batch = next(c for c in string.ascii_letters if c not in subscripts)
    parts = [batch + p if b is not None else p for p, b in zip(parts, bdims)]
    return np.einsum(",".join(parts) + "->" + batch + output, *operands)


def tensordot_subscripts(ra, rb, axes):
    """``np.tensordot``'s product of operands of ranks ``ra`` and ``rb`` over ``axes``, as einsum subscripts."""
    if isinstance(axes, (int, np.integer)):
        pairs = [(ra - int(axes) + i, i) for i in range(int(axes))]
    else:
        first, second = axes
        first = [first] if isinstance(first, (int, np.integer)) else list(first)
        second = [second] if isinstance(second, (int, np.integer)) else list(second)
        if len(first) != len(second):
            raise ValueError("shape-mismatch for sum: np.tensordot was given axes of different lengths")
        pairs = [(int(i) % ra, int(j) % rb) for i, j in zip(first, second)]
    a = list(_letters(ra))
    b = list(_letters(rb, ra))
    for i, j in pairs:
        b[j] = a[i]
    summed = {a[i] for i, _ in pairs}
    out = [c for c in a if c not in summed] + [c for c in b if c not in summed]
    return "".join(a) + "," + "".join(b) + "->" + "".join(out)


def dot_subscripts(ra, rb):
    """``np.dot``'s product of operands of ranks ``ra`` and ``rb``: the last axis of ``a`` with the last of a
    vector ``b``, else with its second to last; a number times anything."""
    if ra == 0 or rb == 0:
        return f"{_letters(ra)},{_letters(rb, ra)}"
    return tensordot_subscripts(ra, rb, ([ra - 1], [0 if rb == 1 else rb - 2]))


def matmul_subscripts(ra, rb):
    """``a @ b`` of operands of ranks ``ra`` and ``rb`` (vectors promoted and their axis dropped, leading axes
    broadcast), as einsum subscripts."""
    a = "j" if ra == 1 else "...ij"
    b = "j" if rb == 1 else "...jk"
    return f"{a},{b}->" + ("..." if max(ra, rb) > 1 else "") + ("i" if ra > 1 else "") + ("k" if rb > 1 else "")
