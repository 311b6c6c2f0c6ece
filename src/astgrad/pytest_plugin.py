"""pytest plugin: the ``gradcheck`` fixture.

Installed with astgrad through the ``pytest11`` entry point, so a test
suite can use the fixture without importing anything::

    def test_my_loss(gradcheck):
        gradcheck(my_loss, x, y, wrt=(0, 1))

On a mismatch the test fails with the comparison table only, not a
traceback through astgrad.
"""

from __future__ import annotations

import pytest

from .check import GradientMismatch, check_grads


@pytest.fixture
def gradcheck():
    """``gradcheck(f, *args, wrt=0, rtol=..., atol=..., modes=...)``: see ``astgrad.check_grads``."""

    def run(f, *args, **kwargs):
        __tracebackhide__ = True
        try:
            return check_grads(f, *args, **kwargs)
        except GradientMismatch as mismatch:
            raise pytest.fail.Exception(str(mismatch), pytrace=False) from None

    return run
