"""Lists and tuples of batched arrays read by an index every example shares (``astgrad.vmap``).

A list or tuple whose every item has the batch axis (core/batching.py's
*items*) is indexed as it is: its item at a number is a batched array.
The index of a loop over ``zip(...)`` or ``enumerate(...)``, which the
front end lowers to ``seq[i]``, is a name, known to be a number only when
it runs, so the batched code checks it there.
"""

from __future__ import annotations

import operator

from ...rules.batching import Unbatchable

__all__ = ["item_of"]


def item_of(items, index):
    """``items[index]`` for a list or tuple of batched arrays and a number ``index``: that batched array; another
    index (a slice: a list of them) raises."""
    try:
        at = operator.index(index)
    except TypeError:
        raise Unbatchable("astgrad.vmap: a list or tuple of arrays with a batch axis indexed by other than a number; "
                          "loop over the examples") from None
    return items[at]
