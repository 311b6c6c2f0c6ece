"""Calls that write into an existing array: ``out=``, ``x.sort()``, ``x.fill(v)``, ``np.copyto``.

Each is reproduced as the item assignment ``x[...] = value`` (numpy's value and the true gradient),
refused where the written array may be shared (as ``x[i] = v`` is), or, for writes one item
assignment cannot express (``x.put``, ``np.add.at``, ``x.resize``), refused outright, located.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad
from astgrad.transform.front.writes import _out_position

X = np.array([0.3, -0.2, 0.5, 1.1])


def _matches_numpy(fn, x):
    expected = fn(x.copy())
    given = x.copy()
    value, grad = astgrad.value_and_grad(fn)(given)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    np.testing.assert_allclose(grad, numeric_grad(fn, [x.copy()], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(given, x)


def out_keyword(x):
    y = x * 2.0
    np.multiply(y, x, out=y)
    return np.sum(y)


def out_positional_and_returned(x):
    y = np.exp(x)
    z = np.add(y, x, y)
    return np.sum(z * x)


def out_broadcasts_into_its_shape(x):
    c = np.zeros((3, 4))
    np.multiply(x, 2.0, out=c)
    return np.sum(c * c)


def out_of_a_reduction_and_a_method(x):
    m = np.outer(x, x)
    s = np.zeros(4)
    np.sum(m, axis=0, out=s)
    m.clip(-0.13, 0.29, out=m)
    return np.sum(s * s) + np.sum(m)


def out_as_a_one_tuple(x):
    y = x * 1.0
    np.sin(y, out=(y,))
    return np.sum(y * x)


def sort_in_place(x):
    y = x[[3, 0, 2, 1]] * 1.0
    y.sort()
    return np.sum(y * np.arange(4.0))


def fill_then_use(x):
    y = x * 3.0
    s = np.sum(y * y)
    y.fill(x[0])
    return s + np.sum(y * x)


def copyto_a_fresh_array(x):
    y = np.zeros(4)
    np.copyto(y, np.tanh(x))
    return np.sum(y * x)


def out_by_position_to_a_method(x):
    m = np.outer(x, x)
    m.clip(-0.13, 0.29, m)
    return np.sum(m * x)


def out_none_by_position(x):
    m = np.outer(x, x)
    return np.sum(m.var(1, None, None, 1)) + np.sum(np.sum(m, 0, None, None) * x)


def out_by_position_to_dot_and_sum(x):
    a = np.outer(x, x)
    c = np.zeros(4)
    np.dot(a, x, c)
    s = np.zeros(4)
    np.sum(a, 0, None, s)
    return np.sum(c * x) + np.sum(s * s)


@pytest.mark.parametrize("fn", [out_none_by_position, out_by_position_to_a_method, out_by_position_to_dot_and_sum,
                                out_keyword, out_positional_and_returned, out_broadcasts_into_its_shape,
                                out_of_a_reduction_and_a_method, out_as_a_one_tuple, sort_in_place,
                                fill_then_use, copyto_a_fresh_array])
def test_writes_into_fresh_arrays_match_numpy_and_finite_differences(fn):
    _matches_numpy(fn, X)
    _matches_numpy(fn, X[::-1] * 1.7)


class _NoSignature:
    """A builtin ``inspect.signature`` cannot read, as numpy before 2.3 made ``np.dot`` and ``np.concatenate``."""

    def __init__(self, name, doc):
        self.__name__, self.__doc__ = name, doc


@pytest.mark.parametrize("name, doc, at", [
    ("dot", "dot(a, b, out=None)\n\nDot product of two arrays.", 2),
    ("concatenate", 'concatenate(\n    (a1, a2, ...),\n    axis=0,\n    out=None,\n    dtype=None,\n    casting="same_kind"\n)', 2),
    ("vdot", "vdot(a, b, /)\n\nReturn the dot product", None),
    ("zeros", "zeros(shape, dtype=float, order='C', *, like=None, out=None)", None),  # out= by keyword only
])
def test_an_output_by_position_is_found_in_the_docstring_without_a_signature(name, doc, at):
    # np.dot(a, b, x) on numpy 2.2 was differentiated as if it did not write into x: a wrong gradient, no error
    assert _out_position(_NoSignature(name, doc), None) == at


def out_into_a_view(x):
    y = x * 2.0
    z = y[1:]
    np.add(z, 1.0, out=z)
    return np.sum(y * y)


def out_into_the_argument(x):
    np.multiply(x, 2.0, out=x)
    return np.sum(x * x)


def sort_an_alias(x):
    y = x * 2.0
    z = y
    y.sort()
    return np.sum(z * np.arange(4.0))


def fill_a_row(x):
    m = np.outer(x, x)
    row = m[1]
    row.fill(0.0)
    return np.sum(m)


def copyto_the_argument(x):
    np.copyto(x, np.sin(x))
    return np.sum(x)


def result_of_out_read_after_a_later_write(x):
    y = x * 1.0
    r = np.exp(x, out=y)
    y += 1.0
    return np.sum(r)


@pytest.mark.parametrize("fn, snippet, advice", [
    (out_into_a_view, "z = y[1:]", "z = y[1:].copy()"),
    (out_into_the_argument, "np.multiply(x, 2.0, out=x)", "x = x.copy()"),
    (fill_a_row, "row = m[1]", "row = m[1].copy()"),
    (copyto_the_argument, "np.copyto(x, np.sin(x))", "x = x.copy()"),
])
def test_writes_into_shared_arrays_are_refused(fn, snippet, advice):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert "test_soundness_inplace_calls.py:" in text and "^" in text
    assert snippet in text and advice in text, text
    assert "writes to a copy" in text


def puts(x):
    y = x * 1.0
    y.put([0], 5.0)
    return np.sum(y * x)


def adds_at(x):
    y = x * 1.0
    np.add.at(y, [0, 0], x[:2])
    return np.sum(y * x)


def resizes(x):
    y = x * 1.0
    y.resize((2, 2))
    return np.sum(y)


def fills_the_diagonal(x):
    m = np.outer(x, x)
    np.fill_diagonal(m, 0.0)
    return np.sum(m)


def partitions(x):
    y = x * 1.0
    y.partition(2)
    return np.sum(y * np.arange(4.0))


def out_with_where(x):
    y = x * 1.0
    np.exp(x, out=y, where=x > 0)
    return np.sum(y)


def out_into_an_expression(x):
    y = [x * 1.0]
    np.exp(x, out=y[0])
    return np.sum(y[0])


@pytest.mark.parametrize("fn, snippet, advice", [
    (puts, "y.put([0], 5.0)", "y[indices] = values"),
    (adds_at, "np.add.at(y, [0, 0], x[:2])", "new array"),
    (resizes, "y.resize((2, 2))", "np.resize(y, shape)"),
    (fills_the_diagonal, "np.fill_diagonal(m, 0.0)", "np.arange(n)"),
    (partitions, "y.partition(2)", "np.partition(y, kth)"),
    (out_with_where, "out=y, where=x > 0", "np.where(mask, result, y)"),
    (out_into_an_expression, "out=y[0]", "Assign the result to a name"),
])
def test_writes_no_item_assignment_expresses_are_refused(fn, snippet, advice):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert "test_soundness_inplace_calls.py:" in text and "^" in text
    assert snippet in text and advice in text, text


W = np.array([0.5, -1.0, 2.0, 0.25])


def sorts_a_global(x):
    W.sort()
    return np.sum(W * x)


def shuffles(x):
    y = x * 1.0
    np.random.shuffle(y)
    return np.sum(y * np.arange(4.0))


@pytest.mark.parametrize("fn, snippet", [(sorts_a_global, "W.sort()"), (shuffles, "np.random.shuffle(y)")])
def test_writes_into_globals_and_shuffles_are_refused(fn, snippet):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    assert snippet in str(info.value)
    np.testing.assert_array_equal(W, [0.5, -1.0, 2.0, 0.25])


def shuffles_with_a_generator(x):
    rng = np.random.default_rng(0)
    y = x * 1.0
    rng.shuffle(y)
    return np.sum(y * np.arange(4.0))


def sorts_through_the_class(x):
    y = x * 1.0
    np.ndarray.sort(y)
    return np.sum(y * np.arange(4.0))


@pytest.mark.parametrize("fn, snippet", [(shuffles_with_a_generator, "rng.shuffle(y)"),
                                         (sorts_through_the_class, "np.ndarray.sort(y)")])
def test_calls_without_a_rule_kept_for_their_effect_cannot_write_into_active_arrays(fn, snippet):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert snippet in text and "may change y in place" in text, text


def sorts_a_constant_before_reading_it(x):
    c = np.arange(4.0)[::-1] * 1.0
    print(x.shape)
    np.ndarray.sort(c)
    return np.sum(c * x)


def test_calls_kept_for_their_effect_on_constants_not_read_before_run():
    _matches_numpy(sorts_a_constant_before_reading_it, X)


def sorts_a_constant_after_reading_it(x):
    c = np.array([3.0, 1.0, 2.0, 0.5])
    z = x * c
    np.ndarray.sort(c)
    return np.sum(z * z)


def sorts_a_copy_of_an_active_array(x):
    y = x * 2.0
    np.ndarray.sort(y.copy())
    return np.sum(y * x)


def shuffles_a_view_in_a_loop(x):
    c = np.arange(4.0) * 1.0
    s = 0.0
    for i in range(2):
        s = s + np.sum(c * x)
        np.random.default_rng(i).shuffle(c[:])
    return s


@pytest.mark.parametrize("fn, snippet, words", [
    (sorts_a_constant_after_reading_it, "np.ndarray.sort(c)", "reads c before that"),
    (sorts_a_copy_of_an_active_array, "np.ndarray.sort(y.copy())", "reads y before that"),
    (shuffles_a_view_in_a_loop, "shuffle(c[:])", "before that"),
])
def test_calls_kept_for_their_effect_on_arrays_the_adjoint_reads_are_refused(fn, snippet, words):
    with pytest.raises(astgrad.TransformError) as info:
        astgrad.grad(fn)
    text = str(info.value)
    assert snippet in text and words in text, text


@pytest.mark.parametrize("fn", [sort_an_alias, result_of_out_read_after_a_later_write])
def test_a_plain_alias_sees_the_write_as_in_numpy(fn):
    # z = y (r, the array out= wrote) names y's array: numpy's name sees the later write, and the generated code's too
    x = np.array([0.7, -0.2, 1.5, -2.5])
    value, got = astgrad.value_and_grad(fn)(x)
    assert value == fn(x.copy())
    np.testing.assert_allclose(got, numeric_grad(fn, [x], 0), rtol=1e-6, atol=1e-8)
