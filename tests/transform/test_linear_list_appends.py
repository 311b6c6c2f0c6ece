"""Appends to a list in a loop: exact gradients at a cost linear in the number of appends.

A list that only the function's code sees is appended to in place and the
adjoint pops each item off again; the list's gradient is one list changed
item by item.  Each test below is a way that could go wrong without an
error (an item's gradient landing on the wrong item, a version of the list
seen at the wrong length, a gradient list shared by two names, the
caller's list or the returned list changed): every gradient is compared
with finite differences.
"""

import tracemalloc

import numpy as np
import pytest

import astgrad
from astgrad.rules.sequences import GradientList, split_last
from astgrad.transform.runtime import add_item
from _numeric import assert_grad, numeric_grad

X = np.array([0.3, -0.2, 0.5])


def same_array_twice(x):
    xs = []
    for k in range(3):
        h = np.sin(x * (k + 1))
        xs.append(h)
        xs.append(h)
    return np.sum(xs[0] * xs[1]) + np.sum(xs[3] * x) + np.sum(xs[-1] ** 2)


def append_then_item_assignment(x):
    xs = []
    for k in range(4):
        xs.append(x * (k + 1.0))
    xs[1] = np.cos(x)
    xs.append(xs[1] * 2.0)
    xs[-1] = xs[-1] * xs[0]
    total = 0.0
    for v in xs:
        total = total + np.sum(v * v)
    return total


def read_by_index_and_iteration(x, n):
    hs = [x]
    for _ in range(n):
        hs.append(np.tanh(hs[-1] * 1.3 + 0.1 * hs[0]))
    total = 0.0
    for h in hs:
        total = total + np.sum(np.sin(h))
    for i in range(len(hs)):
        total = total + np.sum(hs[i] * hs[len(hs) - 1 - i])
    return total + np.sum(hs[n // 2]) * np.sum(hs[-2])


def rnn_from_a_constant_state(w, x):
    hs = [np.zeros(3)]
    for t in range(4):
        hs.append(np.tanh(w * hs[-1] + x * t))
    return np.sum(hs[-1]) + np.sum(hs[1] * hs[2])


def nested_lists(x):
    rows = []
    for k in range(3):
        row = [x * k, np.sin(x + k)]
        rows.append(row)
    pairs = []
    for r in rows:
        pairs.append([r[1], r[0] * r[1]])
    return np.sum(rows[1][1] * rows[2][0]) + np.sum(pairs[2][1]) + np.sum(np.stack(rows[0]))


def appends_in_a_branch(x, n):
    xs = [x]
    for k in range(n):
        if k % 2 == 0:
            xs.append(np.sin(xs[-1]))
        else:
            xs.append(xs[-1] * xs[0])
    return np.sum(np.stack(xs) ** 2)


def appends_in_a_while_loop_with_break(x):
    xs = [x]
    k = 0
    while True:
        k = k + 1
        if k > 5:
            break
        xs.append(np.cos(xs[-1]) + xs[k - 1] * 0.5)
    return np.sum(sum(xs))


def helper_builds(x, n):
    out = []
    for k in range(n):
        out.append(x * (k + 0.5))
    return out


def calls_a_helper_then_appends(x):
    xs = helper_builds(x, 3)
    xs.append(np.sin(xs[1]))
    return np.sum(xs[-1] * xs[0]) + np.sum(xs[2])


def summary(xs):
    return np.sum(xs[0] * xs[-1])


def appends_then_passes_the_list(x):
    xs = [x * 2.0]
    for k in range(3):
        xs.append(xs[-1] * np.sin(x + k))
    return summary(xs) + np.sum(xs[1])


@pytest.mark.parametrize("f, args", [
    (same_array_twice, (X,)),
    (append_then_item_assignment, (X,)),
    (read_by_index_and_iteration, (X, 7)),
    (rnn_from_a_constant_state, (X, X[::-1].copy())),
    (nested_lists, (X,)),
    (appends_in_a_branch, (X, 6)),
    (appends_in_a_while_loop_with_break, (X,)),
    (calls_a_helper_then_appends, (X,)),
    (appends_then_passes_the_list, (X,)),
])
def test_gradient_equals_finite_differences(f, args):
    assert_grad(astgrad.grad(f), f, *args)


def with_aux(x):
    xs = []
    for k in range(3):
        xs.append(x * (k + 1.0))
    return np.sum(xs[-1] * xs[0]), xs


def test_a_returned_list_keeps_its_items():
    grad = astgrad.grad(with_aux, has_aux=True)
    g, aux = grad(X)
    assert len(aux) == 3
    np.testing.assert_allclose(aux[2], 3 * X)
    np.testing.assert_allclose(g, numeric_grad(lambda x: with_aux(x)[0], (X,), 0))


def test_a_seed_list_given_by_the_caller_is_not_changed():
    def build(x):
        xs = []
        for k in range(3):
            xs.append(x * (k + 1.0))
        return xs
    seed = [np.ones(3), 2 * np.ones(3), 3 * np.ones(3)]
    kept = [s.copy() for s in seed]
    np.testing.assert_allclose(astgrad.vjp(build)(X, seed), 14.0 * np.ones(3))
    assert len(seed) == 3 and all(np.array_equal(a, b) for a, b in zip(seed, kept))


def rnn_in_a_list(x, n):
    hs = [x]
    for _ in range(n):
        hs.append(np.sin(hs[-1]) * 0.9 + 0.1 * hs[-1])
    total = 0.0
    for h in hs:
        total = total + np.sum(h * h)
    return total


def _peak(n):
    grad = astgrad.grad(rnn_in_a_list)
    grad(X, 2)  # transform outside the measurement
    tracemalloc.start()
    try:
        grad(X, n)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_grows_linearly_with_the_number_of_appends():
    # n appends that copied the list kept n lists of up to n items: n * n / 2 pointers
    small, large = _peak(400), _peak(1600)
    assert large < 6 * small, (small, large)


def test_split_last_and_add_item_change_only_lists_the_generated_code_made():
    user = [np.ones(2), np.zeros(2)]
    rest, last = split_last(user)
    assert len(user) == 2 and type(rest) is GradientList and len(rest) == 1 and last is user[1]
    again, last = split_last(rest)
    assert again is rest and len(rest) == 0
    total = add_item(None, np.ones(2), [1, 2, 3], -1)
    assert type(total) is GradientList and total[:2] == [None, None]
    same = add_item(total, np.ones(2), [1, 2, 3], 2)
    assert same is total
    np.testing.assert_allclose(total[2], 2 * np.ones(2))
    copied = add_item(user, np.ones(2), [1, 2], 0)
    assert copied is not user and np.array_equal(user[0], np.ones(2))


def grows_a_list_after_storing_it(x):
    rows = [x]
    inner = [x * 2.0]
    rows.append(inner)
    inner.append(x * 3.0)
    return np.sum(rows[1][-1])


def names_the_list_twice(x):
    xs = [x]
    ys = xs
    xs.append(x * 2.0)
    return np.sum(ys[-1])



@pytest.mark.parametrize("f, line", [(grows_a_list_after_storing_it, "rows.append(inner)")])
def test_an_append_another_name_would_see_is_refused(f, line):
    # Python's append changes the list every name sees; the adjoint follows one name
    with pytest.raises(astgrad.TransformError, match="shares memory") as info:
        astgrad.grad(f)(X)
    assert line in str(info.value)


def test_a_second_name_of_the_list_sees_the_append_as_in_python():
    value, got = astgrad.value_and_grad(names_the_list_twice)(X)
    assert value == names_the_list_twice(X.copy())
    np.testing.assert_allclose(got, numeric_grad(names_the_list_twice, [X], 0), rtol=1e-6, atol=1e-8)
