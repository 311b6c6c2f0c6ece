"""The corpus checked three ways: generated adjoint, tape and central differences.

A mode that could not run is never accepted silently: every case must run
all of its modes, except those marked ``taped=False``, whose taped run must
be reported as skipped with its reason (and the other two must agree).
"""

import numpy as np
import pytest

import astgrad

from .functions import CASES, V3, detach_is_constant


def test_the_corpus_is_large_enough():
    assert len({c.f for c in CASES}) >= 60


def test_detach_is_a_constant_in_both_engines():
    x = astgrad.tensor(V3, requires_grad=True)
    generated = astgrad.grad(detach_is_constant)(x)
    detach_is_constant(x).backward()
    np.testing.assert_allclose(generated.numpy(), 3.0 * V3, rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * V3, rtol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_three_way(gradcheck, case):
    report = gradcheck(case.f, *case.args, wrt=case.wrt)
    if case.taped:
        assert report.skipped == {}
        assert set(report.gradients) == {"generated", "taped", "numeric"}
    else:
        assert set(report.skipped) == {"taped"}, report.skipped
        assert "Python float" in report.skipped["taped"]
        assert set(report.gradients) == {"generated", "numeric"}
