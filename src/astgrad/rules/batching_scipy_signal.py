"""Batching rules (``astgrad.vmap``) of ``scipy.signal``'s entries, registered with their derivative rules once a
program imports ``scipy.signal`` (``_deferred``).

``convolve`` and ``correlate`` run along every axis of their operands, and
choose their method (``method='auto'``) by their sizes: they loop over the
examples in Python (:func:`looped`), each example's call the one a loop
makes.
"""

from __future__ import annotations

from scipy import signal

from ._registry import defbatch
from .batching_linalg import looped

__all__: list = []


@defbatch(signal.convolve)
def convolve_batched(bdims, in1, in2, mode="full", method="auto"):
    return looped(signal.convolve, bdims[:2], (in1, in2), {"mode": mode, "method": method})


@defbatch(signal.correlate)
def correlate_batched(bdims, in1, in2, mode="full", method="auto"):
    return looped(signal.correlate, bdims[:2], (in1, in2), {"mode": mode, "method": method})
