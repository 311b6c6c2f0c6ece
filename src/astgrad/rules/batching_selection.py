"""Batching rules (``astgrad.vmap``) of the functions whose result's length each example may decide.

``np.unique``, ``np.nonzero``, ``np.flatnonzero`` and ``np.argwhere``
return as many values as the example has distinct (non-zero) entries, so
the examples' results cannot be stacked into one array: vmap refuses them
at the user's line, saying what to write instead (a mask of fixed shape,
``x != 0``, used with ``np.where``; or a loop over the examples).  JAX asks
for a static ``size=`` there; numpy's functions take none, so astgrad
offers none.

``np.histogram`` with a number of bins or shared edges gives every example
counts and edges of one length: it runs once per example (numpy has no
stacked histogram; its bins are placed from each example's range) and
the results are stacked.  Bins chosen by a rule's name (``bins='auto'``)
give each example its own number of bins: refused.
"""

from __future__ import annotations

import numpy as np

from ._registry import defbatch
from .batching import listed, unbatchable
from .selection import histogram_counts, histogram_edges

__all__: list = []

#: why each example's own length refuses them (docs/supported-numpy.md lists it, rules/catalogue.py)
_OWN_LENGTH = "each example decides the length of its result, so the results cannot be stacked"


def _refusing(rule):
    rule.refuses = _OWN_LENGTH
    return rule


@defbatch(np.unique)
@_refusing
def unique_batched(bdims, ar, *args, **kwargs):
    return unbatchable("np.unique returns as many values as each example has distinct ones, so the examples' "
                       "results have their own lengths and cannot be stacked; loop over the examples, or compare "
                       "with a fixed set of values (x[:, None] == values)")


@defbatch(np.nonzero)
@_refusing
def nonzero_batched(bdims, a):
    return unbatchable("np.nonzero returns as many indices as each example has non-zero entries, so they cannot be "
                       "stacked; use the mask itself (a != 0) with np.where(mask, a, 0.0), or loop over the examples")


@defbatch(np.flatnonzero)
@_refusing
def flatnonzero_batched(bdims, a):
    return unbatchable("np.flatnonzero returns as many indices as each example has non-zero entries, so they "
                       "cannot be stacked; use the mask itself (a != 0) with np.where, or loop over the examples")


@defbatch(np.argwhere)
@_refusing
def argwhere_batched(bdims, a):
    return unbatchable("np.argwhere returns as many indices as each example has non-zero entries, so they cannot "
                       "be stacked; use the mask itself (a != 0) with np.where, or loop over the examples")


def histograms(bdims, a, bins=10, range=None, density=None, weights=None):
    """``np.histogram`` of each example (``bdims``: of ``a``, ``bins``, ``range``, ``density``, ``weights``), its
    counts and edges each stacked; bins named by a string (each example may get its own number) refused."""
    if isinstance(bins, str):
        unbatchable(f"np.histogram with bins={bins!r}: each example may get its own number of bins; give a number "
                    "of bins or the edges")
    given = (a, bins, range, density, weights)
    axes = tuple(bdims) + (None,) * (len(given) - len(bdims))
    if any(b is not None for b in axes[2:4]):
        unbatchable("np.histogram with a range or density that differs from example to example")
    size = next(len(v) for v, b in zip(given, axes) if b is not None)
    counts, edges = [], []
    for k in np.arange(size):
        c, e = np.histogram(*(v[k] if b is not None else v for v, b in zip(given, axes)))
        counts.append(c)
        edges.append(e)
    return np.stack(counts), np.stack(edges)


@defbatch(np.histogram)
@listed
def histogram_batched(bdims, a, bins=10, range=None, density=None, weights=None):
    return histograms(bdims, a, bins, range, density, weights)


@defbatch(histogram_counts)
def histogram_counts_batched(bdims, a, bins=10, range=None, density=None, weights=None):
    return histograms(bdims, a, bins, range, density, weights)[0]


@defbatch(histogram_edges)
def histogram_edges_batched(bdims, a, bins=10, range=None, density=None, weights=None):
    return histograms(bdims, a, bins, range, density, weights)[1]
