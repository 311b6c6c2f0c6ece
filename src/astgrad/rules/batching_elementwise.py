"""Batching rules (``astgrad.vmap``) of the table's elementwise entries: every ufunc, its two-output kin, and
the elementwise helpers of the rules.

A ufunc of one output already batches by :func:`rules.batching.elementwise`
(``rule_of`` falls back to it); registering it gives each table entry its
rule, so that the test of every entry against a loop over examples reads
them.  The two-output ufuncs (``np.divmod``, ``np.modf``, ``np.frexp``)
return a tuple of batched arrays: the call of the aligned operands.
"""

from __future__ import annotations

import numpy as np

from ._registry import defbatch
from .batching import aligned, aligned_operands, elementwise, every_axis, listed, unbatchable
from .batching_shapes import example_axis
from .losses import safe_targets
from .two_outputs import frexp_mantissa, modf_fraction
from . import _registry

__all__: list = []


def _register_ufuncs():
    """The elementwise rule for every numpy ufunc of one output in the table that has no rule of its own (not a
    generalized ufunc: ``np.vecdot`` contracts a core axis)."""
    for entry in list(_registry._TABLE.values()):
        fn = entry.fn
        if isinstance(fn, np.ufunc) and fn.nout == 1 and fn.signature is None and getattr(np, fn.__name__, None) is fn \
                and entry.batch is None:
            defbatch(fn, elementwise)


_register_ufuncs()

for _fn in (modf_fraction, frexp_mantissa, safe_targets):
    defbatch(_fn, elementwise)


@defbatch(np.divmod)
@listed
def divmod_batched(bdims, x1, x2):
    return np.divmod(*aligned_operands(bdims, x1, x2))


@defbatch(np.modf)
@listed
def modf_batched(bdims, x):
    return np.modf(x)


@defbatch(np.frexp)
@listed
def frexp_batched(bdims, x):
    return np.frexp(x)


@defbatch(np.real_if_close)
def real_if_close_batched(bdims, a, tol=100):
    """Real where every example is close to real; otherwise complex, with the imaginary part of each example
    that is close to real dropped (what stacking the examples' results, some real and some complex, gives)."""
    if len(bdims) > 1 and bdims[1] is not None:
        return unbatchable("a tolerance that differs from example to example")
    a = np.asarray(a)
    if not np.iscomplexobj(a):
        return a
    if tol > 1:  # numpy's reading of tol: machine epsilons
        tol = np.finfo(a.dtype.type).eps * tol
    close = np.all(np.absolute(a.imag) < tol, axis=every_axis(np.ndim(a)))
    if np.all(close):
        return a.real
    return np.where(aligned(close, np.ndim(a) - 1), a.real, a)


@defbatch(np.vecdot)
def vecdot_batched(bdims, x1, x2, axis=-1):
    """A generalized ufunc: each operand's core axis named from its end (``axes``), which the new axes that
    align the batched operands' leading axes leave in place."""
    ranks = [np.ndim(x) - (b is not None) for x, b in zip((x1, x2), bdims)]
    if 0 in ranks:
        return unbatchable("np.vecdot of an example without axes, which numpy refuses")
    cores = [example_axis(axis, r) - 1 - r for r in ranks]
    a1, a2 = aligned_operands(bdims, x1, x2)
    axes: list = [(cores[0],), (cores[1],), ()]
    return np.vecdot(a1, a2, axes=axes)
