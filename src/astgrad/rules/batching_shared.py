"""Batching rules of what every example shares (``astgrad.vmap``): the kind of values, not the values.

An array of examples has one example's dtype, so ``np.result_type`` of it
is every example's answer, not batched (``shared``).  Generated gradients
call it where a rule sizes a tolerance by the dtype of its operands
(``np.finfo(np.result_type(s, np.float32))``).
"""

from __future__ import annotations

import numpy as np

from ._registry import defbatch
from .batching import shared

__all__: list = []


@defbatch(np.result_type)
@shared
def result_type_batched(bdims, *arrays_and_dtypes):
    return np.result_type(*arrays_and_dtypes)
