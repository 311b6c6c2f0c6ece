"""``saved_value``: a value the reverse sweep reads back, which Numba types "None or a value".

A name a loop binds is declared ``t = None`` before the loop, so Numba types
it as optional where the declaration joins the loop's value.  The generated
code reads such a name only once it holds a value; ``saved_value(t)`` says
so.  In Python it is the value itself.  Compiled (helpers.py), it is the
value where it is one and a placeholder of its type (an empty array, 0.0,
0, False) where it is None.  lower.py wraps pushes of such names and their
reads by numpy's functions; loops.py and fuse.py read through it (a leaf
module, so that each imports it without importing the others).
"""

from __future__ import annotations


def saved_value(value):
    """``value``; compiled, a placeholder of its type where it is None (see ``_pushes_of_none``).

    Also wraps the reads of such a name given to a numpy function (``np.where(t2, g, 0)``): Numba types the
    name as "None or an array" where a loop joins it, numpy's functions take no such argument (the helpers
    do: Numba tries them with the array), and the code reads it only once it holds a value.
    """
    return value
