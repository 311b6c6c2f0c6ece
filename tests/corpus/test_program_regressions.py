"""Programs the random-program tests found failing, kept as explicit cases.

Each is the shrunk program hypothesis printed, rewritten as a module-level
function.  Cases still failing are strict xfails naming the exact error.
"""

import numpy as np
import pytest

X = np.array([0.3, -0.7, 1.1])
Y = np.array([0.9, 0.4, -0.6])


def inplace_after_read_by_constant_product(x, y):
    v0 = x * -1.5
    v0 += np.tanh(v0 * -1.5)
    return np.sum(v0 * v0) + np.sum(x * y)


@pytest.mark.xfail(strict=True, raises=AssertionError, reason=(
    "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [torch.DoubleTensor [3]], which is output 0 of Mul, is at version 1; expected version 0 "
    "instead. (The tape saves v0 for `v0 * -1.5` although the constant needs no gradient; PyTorch saves "
    "a factor only when the other factor requires grad, so PyTorch runs this program.)"))
def test_inplace_after_read_by_constant_product(gradcheck):
    report = gradcheck(inplace_after_read_by_constant_product, X, Y, wrt=(0, 1))
    assert report.skipped == {}, report.skipped["taped"]
