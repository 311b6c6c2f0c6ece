"""Programs the random-program tests found failing, kept as explicit cases.

Each is the shrunk program hypothesis printed, rewritten as a module-level
function.
"""

import numpy as np

X = np.array([0.3, -0.7, 1.1])
Y = np.array([0.9, 0.4, -0.6])


def inplace_after_read_by_constant_product(x, y):
    v0 = x * -1.5
    v0 += np.tanh(v0 * -1.5)
    return np.sum(v0 * v0) + np.sum(x * y)


def test_inplace_after_read_by_constant_product(gradcheck):
    """The tape kept v0 for ``v0 * -1.5`` although the constant needs no gradient, so the in-place
    update raised PyTorch's version error; PyTorch keeps a factor only when the other one needs a
    gradient, and so does the tape now."""
    report = gradcheck(inplace_after_read_by_constant_product, X, Y, wrt=(0, 1))
    assert report.skipped == {}, report.skipped["taped"]


def _indexed_after_an_unread_test(a, b):
    c = np.sqrt(a * a + 1.0)[0] * np.sin(a)
    if np.sum(c) > -0.5:
        c = c
    return a[[2, 0, 1]] * b


def freed_test_value_no_longer_bound(x, y):
    y = _indexed_after_an_unread_test(x, y)
    return np.sum(y * y) + np.sum(x * y)


def test_freed_test_value_no_longer_bound(gradcheck):
    """The callee's ``if`` on a value computed for nothing went, its test became a bare check, and the
    ``del`` that freed the test's value stayed: the generated forward half raised UnboundLocalError.  A
    release now keeps only names some statement still binds."""
    report = gradcheck(freed_test_value_no_longer_bound, X, Y, wrt=(0, 1))
    assert report.skipped == {}, report.skipped
