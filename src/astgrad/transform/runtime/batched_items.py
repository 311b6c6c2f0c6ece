"""Lists and tuples of batched arrays read by an index every example shares (``astgrad.vmap``).

A list or tuple whose every item has the batch axis (core/batching.py's
*items*) is indexed as it is: its item at a number is a batched array.
The index of a loop over ``zip(...)`` or ``enumerate(...)``, which the
front end lowers to ``seq[i]``, is a name, known to be a number only when
it runs, so the batched code checks it there.  A None every example shares
(a rule's missing gradient in a tuple of batched ones) gets the batch axis
as an array of None, which ``x is None`` reads as None again.
"""

from __future__ import annotations

import operator

import numpy as np

from ...rules.batching import Unbatchable

__all__ = ["item_of", "none_examples"]


def item_of(items, index):
    """``items[index]`` for a list or tuple of batched arrays and a number ``index``: that batched array; another
    index (a slice: a list of them) raises."""
    try:
        at = operator.index(index)
    except TypeError:
        raise Unbatchable("astgrad.vmap: a list or tuple of arrays with a batch axis indexed by other than a number; "
                          "loop over the examples") from None
    return items[at]


def none_examples(x) -> bool:
    """``x is None`` of each example of the batched ``x``, which they share: True for a None given the batch axis
    (an array of None), False for an array of anything else; examples that differ raise."""
    if not isinstance(x, np.ndarray) or x.dtype.kind != "O":
        return False
    nones = [v is None for v in x.reshape(-1)]
    if all(nones):
        return True
    if any(nones):
        raise Unbatchable("astgrad.vmap: a value that is None for some examples only; loop over the examples")
    return False
