"""``a[i][j] = v``: a write into the object ``a[i]`` holds, as Python and numpy make it.

The generated code writes ``t = a[i]``, ``t[j] = v``, ``a[i] = t``, each a
copy.  That equals Python's write when ``a[i]`` is the object ``a`` holds (an
item of a dict or list, a view of an array) and no other name sees that
object.  The ways a user could get a different number are tried first: a
second name for the item, an item stored under two keys, an index array
whose ``a[idx]`` numpy copies, a tuple.  Each is refused with a located
error; everything else is compared with numpy's values and finite
differences.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError
from _numeric import numeric_grad

RNG = np.random.default_rng(18)
X = RNG.standard_normal(3)
W = RNG.standard_normal((4, 3))


def _check(f, *args, wrt=0):
    got = astgrad.grad(f, wrt=wrt)(*args)
    want = numeric_grad(f, args, wrt)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
    return got


# -- refused: a second name would see the write ---------------------------------

def row_read_before(x):
    hs = {}
    hs[0] = x * 2.0
    row = hs[0]
    hs[0][1] = 5.0
    return np.sum(row * x)


def stored_from_a_name(x):
    z = x * 2.0
    d = {}
    d["a"] = z
    d["a"][0] = 1.0
    return np.sum(z * x)


def stored_twice(x):
    d = {}
    d[0] = d[1] = np.zeros(3)
    d[0][1] = x[0]
    return np.sum(d[1] * x)


def copied_into_another_dict(x):
    a = {}
    a[0] = x * 1.0
    b = {}
    b[0] = a[0]
    a[0][1] = 7.0
    return np.sum(b[0] * x)


def literal_holds_a_name(x):
    y = x * 3.0
    rows = [y, np.zeros(3)]
    rows[0][2] = 0.0
    return np.sum(y * x)


@pytest.mark.parametrize("f", [row_read_before, stored_from_a_name, stored_twice, copied_into_another_dict,
                               literal_holds_a_name])
def test_a_write_another_name_would_see_is_refused(f):
    with pytest.raises(UnsupportedSyntaxError) as info:
        astgrad.grad(f)(X)
    assert "test_nested_item_assignment.py" in str(info.value)


def into_the_callers_dict(params, x):
    params["W"][0] = 0.0
    return np.sum(params["W"] * x)


def test_a_write_into_the_callers_dict_is_refused():
    with pytest.raises(UnsupportedSyntaxError, match="would change"):
        astgrad.grad(into_the_callers_dict)({"W": X.copy()}, X)


def list_item_changed_later(x):
    y = x * 2.0
    lst = [0.0]
    lst[0] = y
    y *= 3.0
    return np.sum(lst[0] * x)


def test_an_array_put_in_a_list_then_changed_in_place_is_refused():
    # Python's list holds y itself, so y *= 3 changes lst[0]: the generated code would not see that
    assert np.isclose(list_item_changed_later(X), np.sum(6.0 * X * X))
    with pytest.raises(UnsupportedSyntaxError, match="shares memory with y"):
        astgrad.grad(list_item_changed_later)(X)


# -- refused when it runs: numpy would not write where astgrad would ---------------

def through_an_index_array(x):
    a = np.zeros((3, 3))
    a[[0, 2]][0] = x
    return np.sum(a * x)


def through_a_mask(x):
    a = np.ones((3, 3))
    a[a > 0][0] = x[0]
    return np.sum(a) * x[1]


def through_a_tuple(x):
    pair = (np.zeros(3), 1.0)
    pair[0][1] = x[1]
    return np.sum(pair[0] * x)


def into_a_number(x):
    a = x * 2.0
    a[0][0] = 1.0
    return np.sum(a)


@pytest.mark.parametrize("f, message", [(through_an_index_array, "is a copy"), (through_a_mask, "is a copy"),
                                        (through_a_tuple, "tuple"), (into_a_number, "does not support item")])
def test_what_numpy_would_not_write_raises_when_it_runs(f, message):
    if f is not into_a_number:
        f(X)  # numpy runs it (and writes into a copy, or into the tuple's array)
    with pytest.raises(TypeError, match=message) as info:
        astgrad.grad(f)(X)
    assert "test_nested_item_assignment.py" in "".join(getattr(info.value, "__notes__", []))


# -- run as written ---------------------------------------------------------------

def one_hot_steps(w, inputs):
    xs, hs = {}, {}
    loss = 0.0
    for t in range(len(inputs)):
        xs[t] = np.zeros((3, 1))
        xs[t][inputs[t]] = 1
        hs[t] = np.tanh(w @ xs[t])
        loss = loss + np.sum(hs[t] ** 2)
    return loss


def test_one_hot_inputs_in_a_dict_keyed_by_step():
    inputs = [0, 2, 1, 2]
    got = _check(one_hot_steps, W, inputs)
    want = np.zeros_like(W)
    for i in inputs:
        h = np.tanh(W[:, i])
        want[:, i] += 2 * h * (1 - h * h)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def active_items(x):
    hs = {}
    for t in range(3):
        hs[t] = np.sin(x * (t + 1))
        hs[t][0] = hs[t][1] * x[2]
        hs[t][2] += x[0] ** 2
    return hs[0] @ hs[1] + np.sum(hs[2] ** 3)


def list_of_arrays(x):
    rows = [np.zeros(3), x * 2.0]
    rows[0][1] = x[0] * x[2]
    rows[1][0] = 5.0
    rows.append(np.ones(3))
    rows[2][2] = np.exp(x[1])
    return np.sum(rows[0] * rows[1]) + np.sum(rows[2] * x)


def view_of_an_array(x):
    a = np.zeros((2, 3))
    a[0][1] = x[0] * 3.0
    a[1][:] = x ** 2
    a[1][0] *= x[2]
    return np.sum(a * a) + a[0, 1] * a[1, 2]


def deeper(x):
    d = {"a": [np.zeros((2, 3)), np.ones(3)]}
    d["a"][0][1][2] = x[1] ** 2
    d["a"][1][0] = np.sin(x[0])
    return np.sum(d["a"][0] * x) + np.sum(d["a"][1] * x)


@pytest.mark.parametrize("f", [active_items, list_of_arrays, view_of_an_array, deeper])
def test_active_nested_writes_match_numpy_and_finite_differences(f):
    value, _ = astgrad.value_and_grad(f)(X)
    assert np.isclose(value, f(X), rtol=1e-14)
    _check(f, X)


def test_the_write_into_a_view_changes_the_array():
    # a[0, 1] = 3 x0, a[1] = (x0^2 x2, x1^2, x2^2): f = 9 x0^2 + x0^4 x2^2 + x1^4 + x2^4 + 3 x0 x2^2
    x0, x1, x2 = X
    want = [18 * x0 + 4 * x0 ** 3 * x2 ** 2 + 3 * x2 ** 2, 4 * x1 ** 3,
            2 * x0 ** 4 * x2 + 4 * x2 ** 3 + 6 * x0 * x2]
    np.testing.assert_allclose(astgrad.grad(view_of_an_array)(X), want, rtol=1e-12)
