"""A view of an array's row, read before the array is written again: exact, or refused.

Recurrent code keeps its states in one preallocated array and reads the
previous state through a view, ``prev = H[t - 1] if t > 0 else h0``, before it
writes ``H[t]``.  The generated code writes ``H[t]`` into a new array, so the
view keeps the values it had; that equals numpy only where every read of
the view comes before the write in the same iteration and the name is bound
anew (on every branch) before the next iteration reads it.  A value copied
into an array of numbers (``Hin[t, 1:] = prev``) is numbers, not a view.
Each supported case gives numpy's value and the finite-difference gradient;
each case where the view is read after a write that numpy would show
through it is refused at the line that makes the view.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError
from _numeric import numeric_grad

W = np.array([0.3, -0.7])
H0 = np.array([0.5, 0.2])


def _matches_numpy(fn):
    value, grads = astgrad.value_and_grad(fn, wrt=(0, 1))(W.copy(), H0.copy())
    assert value == fn(W.copy(), H0.copy())
    for i, g in enumerate(grads):
        np.testing.assert_allclose(g, numeric_grad(fn, (W, H0), i), rtol=1e-6, atol=1e-9)


def _refused(fn, line_text):
    with pytest.raises(UnsupportedSyntaxError, match="shares memory with H") as info:
        astgrad.grad(fn, wrt=(0, 1))(W.copy(), H0.copy())
    assert line_text in str(info.value)


# -- exact: each read of the view comes before the write, and every iteration binds it anew -----------

def previous_row_by_conditional_expression(w, h0):
    H = np.zeros((4, 2))
    s = 0.0
    for t in range(4):
        prev = H[t - 1] if t > 0 else h0
        s = s + np.sum(prev * w)
        H[t] = np.tanh(w * prev + 0.1 * t)
    return s + np.sum(H * H)


def previous_row_by_if_statement(w, h0):
    H = np.zeros((4, 2))
    s = 0.0
    for t in range(4):
        if t > 0:
            prev = H[t - 1]
        elif t == 0:
            prev = h0
        else:
            prev = h0 * 2.0
        H[t] = np.tanh(w * prev + 0.1 * t)
    return s + np.sum(H * H)


def previous_row_copied_into_an_array(w, h0):
    H = np.zeros((4, 2))
    Hin = np.zeros((4, 3))
    for t in range(4):
        prev = H[t - 1] if t > 0 else h0
        Hin[t, 0] = 1.0
        Hin[t, 1:] = prev
        H[t] = np.tanh(Hin[t, 1:] * w + Hin[t, 0])
    return np.sum(Hin * Hin) + np.sum(H)


@pytest.mark.parametrize("fn", [previous_row_by_conditional_expression, previous_row_by_if_statement,
                                previous_row_copied_into_an_array])
def test_a_view_read_before_the_next_write_is_exact(fn):
    _matches_numpy(fn)


# -- refused: numpy's view would show a write the generated code keeps apart -------------------------

def same_row(w, h0):
    H = np.zeros((3, 2))
    s = 0.0
    for t in range(3):
        prev = H[t] if t > 0 else h0
        H[t] = np.tanh(w * (t + 1.0))
        s = s + np.sum(prev * w)  # numpy: the row just written
    return s


def bound_in_one_branch_only(w, h0):
    H = np.zeros((3, 2))
    prev = h0
    s = 0.0
    for t in range(3):
        if t == 0:
            prev = H[0]  # later iterations read this view after H[0] was written
        s = s + np.sum(prev * w)
        H[t] = np.tanh(w * (t + 1.0))
    return s


def read_before_it_is_bound_again(w, h0):
    H = np.zeros((3, 2))
    prev = h0
    s = 0.0
    for t in range(3):
        s = s + np.sum(prev * w)  # the view of the previous iteration, after H[t - 1] was written
        prev = H[t] if t > 0 else h0
        H[t] = np.tanh(w * (t + 1.0))
    return s


def stored_in_an_array_of_objects(w, h0):
    H = np.zeros((3, 2))
    store = np.empty(3, dtype="O")
    for t in range(3):
        store[t] = H[t]  # the view itself, not its numbers
        H[t] = np.tanh(w * (t + 1.0))
    return np.sum(store[0] * w) + np.sum(h0)


@pytest.mark.parametrize("fn, line", [
    (same_row, "prev = H[t] if t > 0 else h0"),
    (bound_in_one_branch_only, "prev = H[0]"),
    (read_before_it_is_bound_again, "prev = H[t] if t > 0 else h0"),
    (stored_in_an_array_of_objects, "store[t] = H[t]"),
])
def test_a_view_that_numpy_would_see_change_is_refused(fn, line):
    # the generated code would read the row as it was before the write: another number than numpy's
    _refused(fn, line)
