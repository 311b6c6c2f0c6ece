"""Lists changed in place or joined with ``+``: exact when no gradient flows through them, refused otherwise.

``lst.extend(v)``, ``lst.insert(i, v)``, ``lst.pop()``, ``lst.reverse()``, ``lst.sort()``, ``lst += [v]``
and ``lst + [v]`` change or build lists in ways the generated adjoint does not follow: each gave
numpy's value with half the gradient.  Where the list carries a gradient they are refused, located;
on constant lists (indices, shapes) they run as written.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

X = np.array([0.3, -0.2, 0.5, 1.1])


def extends(x):
    lst = [x * 2.0]
    lst.extend([x * 3.0])
    return np.sum(lst[1] * x)


def inserts(x):
    lst = [x * 2.0]
    lst.insert(0, x * 3.0)
    return np.sum(lst[0] * x)


def pops(x):
    lst = [x * 2.0, x * 3.0]
    last = lst.pop()
    return np.sum(last * x) + np.sum(lst[0])


def reverses(x):
    lst = [x * 2.0, x * 3.0]
    lst.reverse()
    return np.sum(lst[0] * x)


def sorts_a_list(x):
    lst = [x[0] * 2.0, x[1] * 3.0, x[2]]
    lst.sort()
    return lst[0] * x[3]


def joins_with_plus_equals(x):
    lst = [x * 2.0]
    lst += [x * 3.0]
    return np.sum(lst[1] * x)


def joins_tuples(x):
    t = (x * 2.0,)
    t = t + (x * 3.0,)
    return np.sum(t[1] * x)


def repeats_a_list(x):
    lst = [x * 2.0] * 2
    return np.sum(lst[1] * x)


@pytest.mark.parametrize("fn, snippet", [
    (extends, "lst.extend([x * 3.0])"), (inserts, "lst.insert(0, x * 3.0)"), (pops, "last = lst.pop()"),
    (reverses, "lst.reverse()"), (sorts_a_list, "lst.sort()"), (joins_with_plus_equals, "lst += [x * 3.0]"),
    (joins_tuples, "t = t + (x * 3.0,)"), (repeats_a_list, "lst = [x * 2.0] * 2"),
])
def test_lists_changed_in_a_way_the_adjoint_cannot_follow_are_refused(fn, snippet):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert "test_soundness_list_changes.py:" in text and snippet in text and "^" in text, text
    assert "list" in text


def constant_lists(x):
    order = [3, 1]
    order.extend([0, 2])
    order.reverse()
    first = order.pop()
    shape = (1,) + x.shape
    return np.sum(np.reshape(x, shape)[0, order] * x[first])


def reverses_indices_after_use(x):
    order = [3, 1, 0, 2]
    z = x[order] * np.arange(4.0)
    order.reverse()
    return np.sum(z * z)


def test_a_constant_list_changed_after_the_adjoint_needs_it_is_refused():
    with pytest.raises(astgrad.TransformError, match="reads order before that"):
        astgrad.grad(reverses_indices_after_use)


def test_constant_lists_change_as_written():
    value, grad = astgrad.value_and_grad(constant_lists)(X.copy())
    np.testing.assert_allclose(value, constant_lists(X.copy()), rtol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(constant_lists, [X], 0), rtol=1e-5, atol=1e-6)
