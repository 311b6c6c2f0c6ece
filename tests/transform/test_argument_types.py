"""Values numpy gives other meanings (np.matrix, masked arrays, ndarray subclasses, Fraction, Decimal)
are refused where the generated engine is called, naming the type, or computed with exactly."""

import decimal
import fractions

import numpy as np
import pytest

import astgrad
from tests._numeric import gradient

M = np.matrix([[1.0, 2.0], [3.0, 4.0]])
MASKED = np.ma.array([1.0, 2.0, 3.0], mask=[0, 1, 0])


class Doubling(np.ndarray):
    """A subclass whose * adds: x * x is 2 x."""

    def __mul__(self, other):
        return np.add(np.asarray(self), other)


class Tagged(np.ndarray):
    """A subclass that changes no meaning: it carries a tag."""

    def __new__(cls, data, tag=""):
        out = np.asarray(data, dtype=float).view(cls)
        out.tag = tag
        return out

    def __array_finalize__(self, obj):
        self.tag = getattr(obj, "tag", "")


def _square_sum(x):
    return np.sum(x * x)


def _scaled(x, c):
    return np.sum(x * c)


REFUSED = [
    (M, "numpy.matrix"),
    (MASKED, "MaskedArray"),
    (np.array([1.0, 2.0, 3.0]).view(Doubling), "Doubling, a subclass of numpy.ndarray that defines __mul__"),
    (fractions.Fraction(1, 3), "fractions.Fraction"),
    (decimal.Decimal("1.5"), "decimal.Decimal"),
]


@pytest.mark.parametrize("value, named", REFUSED)
@pytest.mark.parametrize("level", (0, 1, 2))
def test_refused_as_the_differentiated_argument(value, named, level):
    for make in (astgrad.grad, astgrad.value_and_grad):
        with pytest.raises(TypeError, match=named):
            make(_square_sum, optimize=level)(value)
    with pytest.raises(TypeError, match=named):
        astgrad.jvp(_square_sum, optimize=level)(value, np.ones(np.shape(value)))


@pytest.mark.parametrize("value, named", REFUSED)
def test_refused_as_a_constant_argument(value, named):
    # np.matrix * x is a matrix product: the gradient of x * c as elementwise would be wrong
    x = np.ones(np.shape(value)) * 0.5
    with pytest.raises(TypeError, match=named):
        astgrad.grad(_scaled)(x, value)
    with pytest.raises(TypeError, match=named):
        astgrad.jvp(_scaled)(x, value, np.ones(np.shape(x)))


@pytest.mark.parametrize("value, named", REFUSED[:3])
def test_refused_inside_containers(value, named):
    def f(params):
        return np.sum(params["w"][0] * params["w"][0])
    with pytest.raises(TypeError, match=r"params\['w'\]\[0\]"):
        astgrad.grad(f)({"w": [value]})


def test_the_message_says_what_to_pass():
    with pytest.raises(TypeError, match=r"Pass np\.asarray\(x\)"):
        astgrad.grad(_square_sum)(M)
    with pytest.raises(TypeError, match=r"x\.filled\(0\.0\)"):
        astgrad.grad(_square_sum)(MASKED)


def test_a_vjp_seed_and_a_jvp_tangent_are_checked_too():
    vjp = astgrad.vjp(lambda x: x * 2.0)
    with pytest.raises(TypeError, match="numpy.matrix"):
        vjp(np.ones((2, 2)), M)
    with pytest.raises(TypeError, match="numpy.matrix"):
        astgrad.jvp(_square_sum)(np.ones((2, 2)), M)


def test_hessian_refuses_a_matrix():
    with pytest.raises(TypeError, match="numpy.matrix"):
        astgrad.hessian(_square_sum)(M)


@pytest.mark.parametrize("level", (0, 1, 2))
def test_a_subclass_that_changes_no_meaning_is_computed_as_its_array(level):
    x = Tagged([0.5, -1.5, 2.0], tag="w")
    def f(x):
        return np.sum(np.sin(x) * x)
    expected = gradient(f, np.asarray(x))
    got = astgrad.grad(f, optimize=level)(x)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    _, tangent = astgrad.jvp(f, optimize=level)(x, np.ones(3))
    assert tangent == pytest.approx(np.sum(expected))


def test_memmap_is_computed_as_its_array(tmp_path):
    x = np.memmap(tmp_path / "x.dat", dtype=np.float64, mode="w+", shape=(3,))
    x[:] = [0.5, -1.5, 2.0]
    np.testing.assert_allclose(astgrad.grad(_square_sum)(x), 2 * np.asarray(x))


def test_plain_arguments_still_take_the_compiled_entry():
    g = astgrad.grad(_square_sum)
    np.testing.assert_allclose(g(np.array([1.0, 2.0])), [2.0, 4.0])
    assert g(3.0) == 6.0 and g(3) == 6.0


GLOBAL_MATRIX = M


def _reads_a_global_matrix(x):
    y = np.sin(x)
    return np.sum(GLOBAL_MATRIX * y)


def _closure_over(value):
    def f(x):
        return np.sum(x * value)
    return f


@pytest.mark.parametrize("level", (0, 1, 2))
def test_a_global_or_closure_value_numpy_gives_another_meaning_is_refused_where_it_is_read(level):
    with pytest.raises(TypeError, match="GLOBAL_MATRIX, which the differentiated code reads from its globals, "
                                        "is a numpy.matrix") as caught:
        astgrad.grad(_reads_a_global_matrix, optimize=level)(np.ones((2, 2)))
    assert "return np.sum(GLOBAL_MATRIX * y)" in "".join(caught.value.__notes__)  # the user's line
    with pytest.raises(TypeError, match="numpy.matrix"):
        astgrad.jvp(_reads_a_global_matrix, optimize=level)(np.ones((2, 2)), np.ones((2, 2)))
    for value, named in REFUSED:
        with pytest.raises(TypeError, match=f"value, which the differentiated code reads from its closure, is .*{named}"):
            astgrad.grad(_closure_over(value), optimize=level)(np.ones(np.shape(value)) * 0.5)


def test_a_global_rebound_to_a_matrix_after_the_gradient_was_made_is_refused():
    global GLOBAL_MATRIX
    g = astgrad.grad(_reads_a_global_matrix)
    GLOBAL_MATRIX = np.asarray(M)
    try:
        np.testing.assert_allclose(g(np.zeros((2, 2))), np.asarray(M))  # cos(0) = 1: the gradient is M
        GLOBAL_MATRIX = M
        with pytest.raises(TypeError, match="numpy.matrix"):
            g(np.zeros((2, 2)))
    finally:
        GLOBAL_MATRIX = M


@pytest.mark.parametrize("value, named", REFUSED[:3])
def test_check_grads_refuses_them_rather_than_checking_another_function(value, named):
    # check_grads converts its arguments to float arrays: it would check the ndarray meaning, not f(value)'s
    with pytest.raises(TypeError, match=rf"check_grads of _square_sum: the argument args\[0\] is .*{named}"):
        astgrad.check_grads(_square_sum, value)
