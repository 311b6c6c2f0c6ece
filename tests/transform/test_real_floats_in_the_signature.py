"""A gradient is specialised on which arguments hold real floats, as on their ranks.

A value the gradient needs only for its shape is guarded by ``floats(...)``
of its operands (numpy raises on other dtypes: ``int ** -1``, ``bool -
bool``, ``1.0 / 0.0``).  Called with real float arrays, the gradient is
transformed knowing it and the guard folds away; called with anything else
it gets, and keeps apart, the guarded adjoint.  These tests call one
gradient with floats, then other kinds, then floats again (and the reverse
order), so a cache that served the wrong adjoint would give a number where
numpy raises, or raise where it does not; values are checked against central
differences.  A value the function computes itself is known to be of floats
only where that follows from the arguments on every path to it.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform import LEVELS

from tests._numeric import numeric_grad

X = np.array([0.5, 1.5, 2.5])


def power_of_a(x, a):
    y = a ** -1
    return np.sum(x * x * 3.0)


def difference(x, a, b):
    d = x + (a - b)
    return np.sum(d * x)


def quotient(x, a, b):
    d = a / b
    return np.sum(x * 2.0) + 0.0 * np.sum(x)


def made_inside(x, a):
    k = np.arange(3)
    y = k ** -1
    return np.sum(x * a)


def either_branch(x, a, n):
    if n > 0:
        k = a
    else:
        k = np.arange(3)
    y = k ** -1
    return np.sum(x * x)


def through_a_loop(x, a, n):
    k = a
    for i in range(n):
        y = k ** -1
        k = np.arange(3)
    return np.sum(x * x)


def _expect(f, gradient, *args):
    """The gradient raises the type f raises, else equals central differences."""
    try:
        f(*args)
    except Exception as error:  # noqa: BLE001 - the type compared
        with pytest.raises(type(error)):
            gradient(*args)
        return "raises"
    np.testing.assert_allclose(gradient(*args), numeric_grad(f, args, 0), rtol=1e-6, atol=1e-8)
    return "value"


INTS, FLOATS = np.array([1, 2, 3]), np.array([1.0, 2.0, 4.0])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("order", ["floats first", "ints first"])
def test_one_gradient_called_with_floats_and_ints_in_turn_raises_exactly_where_numpy_does(level, order):
    kinds = [FLOATS, INTS, FLOATS, INTS] if order == "floats first" else [INTS, FLOATS, INTS, FLOATS]
    gradient = astgrad.grad(power_of_a, optimize=level)
    seen = [_expect(power_of_a, gradient, X, a) for a in kinds]
    assert seen == ["value" if a is FLOATS else "raises" for a in kinds]
    if level:
        sources = {key: s for key, s in gradient.sources.items() if key != "any"}
        assert len(sources) == 2
        assert ["floats(" in s for key, s in sorted(sources.items())] == [False, True], sources  # float a first


@pytest.mark.parametrize("level", LEVELS)
def test_booleans_and_float32_after_floats(level):
    gradient = astgrad.grad(difference, optimize=level)
    calls = [(np.array([1.0, 0.0, 2.0]), np.array([0.5, 0.5, 0.5])),
             (np.array([True, False, True]), np.array([False, True, True])),  # bool - bool: TypeError
             (np.array([1.0, 0.0, 2.0], np.float32), np.array([3.0, 1.0, 0.5], np.float32)),
             (np.array([1, 0, 2]), np.array([1, 1, 1])),
             (np.array([1.0, 0.0, 2.0]).astype(">f8"), np.array([0.5, 0.5, 0.5])),  # byte-swapped: floats too
             (np.array([True, False, True]), np.array([False, True, True]))]
    seen = [_expect(difference, gradient, X, a, b) for a, b in calls]
    assert seen == ["value", "raises", "value", "value", "value", "raises"]


@pytest.mark.parametrize("level", LEVELS)
def test_python_floats_are_not_numpys_so_one_over_zero_still_raises(level):
    gradient = astgrad.grad(quotient, optimize=level)
    calls = [(np.array([1.0]), np.array([0.0])),  # numpy: inf and a warning
             (1.0, 0.0),  # Python: ZeroDivisionError
             (np.float64(1.0), np.float64(0.0)),
             (np.array(1.0), np.array(0.0)),
             (1.0, 0.0)]
    with np.errstate(all="ignore"):
        seen = [_expect(quotient, gradient, X, a, b) for a, b in calls]
    assert seen == ["value", "raises", "value", "value", "raises"]


@pytest.mark.parametrize("level", LEVELS)
def test_a_value_made_inside_of_integers_keeps_its_guard_on_float_arguments(level):
    gradient = astgrad.grad(made_inside, optimize=level)
    with pytest.raises(ValueError, match="negative integer powers"):
        gradient(X, FLOATS)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("function", [either_branch, through_a_loop], ids=lambda f: f.__name__)
def test_a_name_of_floats_on_one_path_only_keeps_its_guard(level, function):
    gradient = astgrad.grad(function, optimize=level)
    seen = [_expect(function, gradient, X, FLOATS, n) for n in (1, 0 if function is either_branch else 2, 1)]
    assert seen == ["value", "raises", "value"]


def test_specialised_on_floats_reads_as_a_person_writes_it():
    gradient = astgrad.grad(power_of_a, optimize=2)
    gradient(X, FLOATS)
    assert "floats(" not in gradient.source and "a ** -1" not in gradient.source
    assert "floats(a)" in gradient.sources["any"]


def scaled(v, k):
    unused = k ** -1
    return v * k


def through_a_callee(x, a):
    return np.sum(scaled(x, a) * x)


def callee_given_floats_and_integers(x, a):
    return np.sum(scaled(x, a) + scaled(x, np.arange(3)))


def _sum_of_products(x, a):
    return np.sum(scaled(x, a) * x)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("order", ["floats first", "ints first"])
def test_a_callees_guard_folds_where_every_call_passes_floats(level, order):
    gradient = astgrad.grad(through_a_callee, optimize=level)
    kinds = [FLOATS, INTS, FLOATS] if order == "floats first" else [INTS, FLOATS, INTS]
    seen = [_expect(through_a_callee, gradient, X, a) for a in kinds]
    assert seen == ["value" if a is FLOATS else "raises" for a in kinds]
    if level:
        gradient(X, FLOATS)
        assert "floats(" not in gradient.source  # in the callee's forward function too
        assert "floats(k)" in gradient.sources["any"]


@pytest.mark.parametrize("level", LEVELS)
def test_a_callee_called_with_floats_and_with_integers_keeps_its_guard(level):
    gradient = astgrad.grad(callee_given_floats_and_integers, optimize=level)
    with pytest.raises(ValueError, match="negative integer powers"):
        gradient(X, FLOATS)
