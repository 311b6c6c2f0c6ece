"""backends/numba/loops.py: np.roll read inside an elementwise expression in one loop, additions merged.

The loop (``elementwise``) is compared with the expression numpy computes on
the same operands: arrays of the result's shape (the direct loop), arrays
that broadcast (the loop reading index 0 along an axis of length 1), shapes
that do not broadcast (numpy's ValueError), empty arrays, shifts past the
length, and kinds the loop leaves to the expression as written (integer
arrays, a quotient of two numbers, which the loop would divide by numpy's rules).
The merging of ``d = d + A ... d = d + B`` is checked on text, and both on
gradients against the numpy backend and central differences.
"""

import numpy as np
import pytest

import _numeric
from _compiled import agrees_with_numpy_and_differences
import astgrad
from astgrad.transform import runtime
from astgrad.transform.ir import compat
from astgrad.transform.ir.compat import gast

numba = pytest.importorskip("numba")

STENCIL = "((rolled(_0, _2, 1) * _3) + rolled(_0, _2, 0)) - (np.exp(_1) / _3)"
QUOTIENT = "rolled(_0, _1, 0) * (_2 / _3)"


def numpy_stencil(u, v, s, c):
    return np.roll(u, s, 1) * c + np.roll(u, s, 0) - np.exp(v) / c


@pytest.fixture(scope="module")
def kernels():
    from astgrad.backends.numba import helpers, loops
    helpers.register()

    @numba.njit
    def stencil(u, v, s, c):
        return loops.elementwise(STENCIL, u, v, s, c)

    @numba.njit
    def quotient(u, s, a, b):
        return loops.elementwise(QUOTIENT, u, s, a, b)

    @numba.njit
    def summed(to, u, v, s, c):
        return loops.elementwise_sum(STENCIL, to, u, v, s, c)

    @numba.njit
    def adding(total, shape, index, a, b):  # add_at(total, a * 2.0 - np.exp(b), shape, index), as generated
        out, done = loops.add_elementwise(ADDED, total, shape, index, a, b)
        if done:
            return out, done
        return runtime.add_at(total, a * 2.0 - np.exp(b), shape, index), done

    @numba.njit
    def added(total, shape, index, a, b):
        out, done = loops.added_elementwise(ADDED, total, shape, index, a, b)
        if done:
            return out, done
        return runtime.added_at(total, a * 2.0 - np.exp(b), shape, index), done
    return stencil, quotient, summed, adding, added


ADDED = "((_0 * 2.0) - np.exp(_1))"


def numpy_added(total, a, b, index):
    out = np.array(total, dtype=float)
    out[index] += a * 2.0 - np.exp(b)
    return out


@pytest.mark.parametrize("v_shape", [(4, 5), (1, 5), (4, 1)])
@pytest.mark.parametrize("s", [1, -1, 7, 0])
def test_the_loop_gives_numpys_values_where_shapes_are_equal_or_broadcast(kernels, v_shape, s):
    rng = np.random.default_rng(0)
    u, v = rng.standard_normal((4, 5)), rng.standard_normal(v_shape)
    # to rounding: numpy's exp of an array is not libm's exp of each element (as in Numba's own loops)
    np.testing.assert_allclose(kernels[0](u, v, s, 0.7), numpy_stencil(u, v, s, 0.7), rtol=1e-14, atol=0)
    layout = np.asfortranarray(u)
    np.testing.assert_allclose(kernels[0](layout, v, s, 0.7), numpy_stencil(u, v, s, 0.7), rtol=1e-14, atol=0)


def test_empty_arrays_a_zero_divisor_and_shapes_that_do_not_broadcast(kernels):
    empty = np.zeros((0, 3))
    assert kernels[0](empty, empty, 1, 0.5).shape == (0, 3)
    u = np.arange(6.0).reshape(2, 3)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_allclose(kernels[0](u, u, 1, 0.0), numpy_stencil(u, u, 1, 0.0), rtol=1e-14)  # inf, nan
    with pytest.raises(ValueError):
        kernels[0](u, np.ones((3, 3)), 1, 0.5)


def test_integer_arrays_and_a_quotient_of_numbers_are_computed_as_written(kernels):
    u = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(kernels[1](u, 2, 3.0, 4.0), np.roll(u, 2, 0) * 0.75)
    ints = np.arange(12).reshape(3, 4)
    np.testing.assert_allclose(kernels[0](ints, ints, 1, 2.0), numpy_stencil(ints, ints, 1, 2.0), rtol=1e-14)


@pytest.mark.parametrize("v_shape", [(4, 5), (1, 5)])
def test_a_sum_to_a_number_is_the_expressions_sum_and_to_a_shape_unbroadcast(kernels, v_shape):
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal((4, 5)), rng.standard_normal(v_shape)
    want = numpy_stencil(u, v, -1, 0.3)
    np.testing.assert_allclose(kernels[2]((), u, v, -1, 0.3), np.sum(want), rtol=1e-13)
    np.testing.assert_allclose(kernels[2]((1, 5), u, v, -1, 0.3), np.sum(want, axis=0, keepdims=True), rtol=1e-13)
    assert kernels[2]((), np.zeros((0, 5)), np.zeros((1, 5)), 1, 0.3) == 0.0


# ------------------------------------------------------------------ an expression added at a slice

@pytest.mark.parametrize("index", [slice(1, -1), slice(None, -2), slice(2, None), slice(None, None, -1),
                                   slice(0, 6, 2)])
def test_an_expression_added_at_a_slice_is_numpys_in_place_and_into_a_copy(kernels, index):
    rng = np.random.default_rng(3)
    total = rng.standard_normal(7)
    part = total[index].shape
    a, b = rng.standard_normal(part), rng.standard_normal(part)
    want = numpy_added(total, a, b, index)
    copy = total.copy()
    got, done = kernels[4](copy, (7,), index, a, b)
    assert done  # the loop ran
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)
    assert np.array_equal(copy, total)  # added_at: a copy
    got, done = kernels[3](copy, (7,), index, a, b)
    assert done and (got is copy or np.shares_memory(got, copy))  # add_at: into total itself
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


def test_an_operand_that_is_a_view_of_the_total_is_computed_first():
    """The loop adding into ``total`` would read elements it had written (``total[:-2]`` shifted two
    places): the addresses overlap, so the loop does not run, ``total`` is left as it was, and the caller
    computes the value as an array first, as numpy does."""
    from astgrad.backends.numba import helpers, loops
    helpers.register()

    @numba.njit
    def shifted(total):
        return loops.add_elementwise("(_0 * 2.0)", total, total.shape, slice(2, None), total[:-2])

    @numba.njit
    def reversed_view(total):
        return loops.add_elementwise("(_0 + 1.0)", total, total.shape, slice(None, None, 1), total[::-1])
    for kernel in (shifted, reversed_view):
        total = np.arange(6.0)
        out, done = kernel(total)
        assert not done and np.array_equal(total, np.arange(6.0))


def test_added_values_that_broadcast_or_do_not_fit_are_added_as_written(kernels):
    total = np.arange(7.0)
    a, b = np.array([0.5]), np.linspace(0.0, 1.0, 5)  # a broadcasts: the caller's add as written
    got, done = kernels[3](total.copy(), (7,), slice(1, -1), a, b)
    assert not done
    np.testing.assert_allclose(got, numpy_added(total, a, b, slice(1, -1)), rtol=1e-14)
    with pytest.raises(ValueError):  # 4 values into 5 places
        kernels[3](total.copy(), (7,), slice(1, -1), np.ones(4), np.ones(4))
    ints = np.arange(7)  # not float64: add_at's own rules (the sum as written, in the helper)
    got, done = kernels[4](ints, (7,), slice(1, -1), a, b)
    np.testing.assert_allclose(got, numpy_added(ints, a, b, slice(1, -1)))


def test_a_value_added_at_an_integer_is_left_to_the_caller_where_the_total_keeps_its_type(kernels):
    """The loop runs only at a slice: at an integer index, a float64 total is handed back untouched and
    not done (the caller's line adds as written); a total of another kind is added in the helper, as before,
    since the caller's line may give another type."""
    total = np.arange(7.0)
    for kernel, index in ((kernels[3], 3), (kernels[4], -2)):  # add_at, added_at: the caller's line ran
        copy = total.copy()
        got, done = kernel(copy, (7,), index, 0.5, 0.25)
        assert not done
        np.testing.assert_allclose(got, numpy_added(total, 0.5, 0.25, index), rtol=1e-15)
    assert np.array_equal(copy, total)  # added_at: into a copy
    ints = np.arange(7)
    got, done = kernels[4](ints, (7,), 3, 0.5, 0.25)
    assert done
    np.testing.assert_allclose(got, numpy_added(ints, 0.5, 0.25, 3), rtol=1e-15)


def network(log_k, c0, pairs, mix):  # each reaction's rate is a product of numbers read at integers from an array
    k = np.exp(log_k)
    c = c0.copy()
    for _ in range(2):
        rates = np.zeros(len(k))
        for i in range(len(k)):
            rates[i] += k[i] * c[pairs[i, 0]] * c[pairs[i, 1]]
        c = c + 0.1 * (mix @ rates)
    return np.sum(c * np.arange(len(c)))


def rates_at(log_k, c, pairs):  # the reverse loop reads c[pairs[i, 0]] again, at the index its trip saved
    k = np.exp(log_k)
    out = np.zeros(len(c))
    for i in range(len(k)):
        out[pairs[i, 0]] += k[i] * c[pairs[i, 1]] * c[pairs[i, 0]]
    return np.sum(out * np.arange(1.0, len(c) + 1.0))


_PAIRS = np.array([[0, 1], [2, 3], [0, 2]])


@pytest.mark.parametrize("fn, args", [
    (network, (np.array([0.1, -0.3, 0.2]), np.array([1.5, 0.5, 2.0, 1.0]), _PAIRS,
               np.array([[-1.0, 0.0, 0.5], [-1.0, 0.5, 0.0], [1.0, -1.0, 0.0], [0.0, 0.5, -1.0]]))),
    (rates_at, (np.array([0.1, -0.3, 0.2]), np.array([1.5, 0.5, 2.0, 1.0]), _PAIRS)),
])
def test_a_gradient_adding_numbers_at_integers_from_an_array_is_numpys_and_central_differences(fn, args):
    gradient = agrees_with_numpy_and_differences(fn, args)
    assert "add_elementwise(" in gradient.source  # tried, and left to the caller's line (an integer index)


# ------------------------------------------------------------------ unbroadcast inside an expression

NO_OP = "(_0 + unbroadcast((_1 * _2), _3))"


@pytest.fixture(scope="module")
def no_op():
    from astgrad.backends.numba import helpers, loops
    helpers.register()

    @numba.njit
    def kernel(a, b, c, to):  # as the generated code calls it: the expression as written where the loop did not run
        out, done = loops.elementwise_tried(NO_OP, a, b, c, to)
        if done:
            return out, done
        return a + runtime.unbroadcast(b * c, to), done
    return kernel


@pytest.mark.parametrize("a_shape, b_shape, to", [
    ((4, 5), (4, 5), (4, 5)),  # one shape: the loop, unbroadcast a no-op
    ((4, 5), (1, 5), (1, 5)),  # b broadcasts: as written
    ((1, 5), (4, 5), (1, 5)),  # to is not b's shape: b * c summed over the rows, as written
    ((2, 5), (3, 5), (1, 5)),  # a and b do not broadcast, but a and the sum of b's rows do
    ((0, 5), (0, 5), (0, 5)),
])
def test_an_unbroadcast_inside_an_expression_is_dropped_only_where_it_is_proven_a_no_op(no_op, a_shape, b_shape, to):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    want = a + runtime.unbroadcast(b * 0.3, to)
    got, done = no_op(a, b, 0.3, to)
    assert done == (a_shape == b_shape == to)
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


def test_an_unbroadcast_of_a_number_inside_an_expression_is_computed_as_written():
    from astgrad.backends.numba import helpers, loops
    helpers.register()

    @numba.njit
    def kernel(a, b, to):
        return loops.elementwise_tried("(_0 * unbroadcast(_1, _2))", a, b, to)
    a = np.arange(4.0)
    got, done = kernel(a, 2.5, (4,))
    assert done  # the kinds leave no loop: the helper computed it as written
    np.testing.assert_array_equal(got, a * 2.5)


# ------------------------------------------------------------------ additions into one name, merged

def merged(text):
    from astgrad.backends.numba import loops
    namespace = {"np": np, "unbroadcast": runtime.unbroadcast, "shape": runtime.shape, "f": print}
    return "\n".join(compat.to_source(s).strip() for s in loops._merged(gast.parse(text).body, namespace))


def test_additions_into_one_name_merge_where_nothing_between_reads_it_or_changes_their_operands():
    assert merged("d = d + a * b\nx = y\nd = d - unbroadcast(c, shape(x))\nd = d + e") \
        == "x = y\nd = d + a * b - unbroadcast(c, shape(x)) + e"


@pytest.mark.parametrize("between, later", [
    ("e = d", "d = d + c"),  # d read between
    ("a = 2.0", "d = d + c"),  # an operand of the moved term rebound
    ("x = y", "d = d + d * c"),  # the later line reads d past its start
    ("z[0] = 1.0", "d = d + c"),  # an item written between
    ("x = a.pop()", "d = d + c"),  # a list the term reads changed
])
def test_additions_stay_apart_where_moving_one_could_change_a_number(between, later):
    text = f"d = d + a[0] * b\n{between}\n{later}"
    assert merged(text) == text


def test_a_term_calling_a_function_is_not_moved():
    text = "d = d + f(a)\nx = y\nd = d + c"
    assert merged(text) == text


def test_only_names_the_transformer_declared_none_reach_a_loop_as_saved_values():
    # t = None with no source origin is the transformer's (a loop binds it; never None where it is read
    # back); the user's best = None keeps its None, so Numba's own reads raise TypeError for it
    from astgrad.backends.numba import loops
    from astgrad.backends.numba.lower import saved_value
    from astgrad.transform.runtime.origins import ORIGIN
    fn_def = gast.parse("def f(u):\n    t = None\n    best = None\n    for i in range(3):\n        s = None\n"
                        "    return t, best, s").body[0]
    setattr(fn_def.body[1], ORIGIN, ("f.py", 3, "best = None", False))
    assert loops._declared_none(fn_def) == {"t", "s"}
    namespace = {"np": np, "unbroadcast": runtime.unbroadcast, "shape": runtime.shape}
    call = loops._Loops(namespace, {"u"}, {"t"})._operands([gast.Name(id=n, ctx=gast.Load(), annotation=None,
                                                                          type_comment=None) for n in ("t", "best")])
    assert [compat.to_source(c).strip() for c in call][1] == "best"
    assert namespace[compat.to_source(call[0]).strip().split("(")[0]] is saved_value


# ------------------------------------------------------------------ gradients

def wave(c, u0, w):
    u_prev, u = u0, u0
    for _ in range(3):
        lap = np.roll(u, 1, 0) + np.roll(u, -1, 0) + np.roll(u, 1, 1) + np.roll(u, -1, 1) - 4 * u
        u_next = 2 * u - u_prev + c * lap * w
        u_prev, u = u, u_next
    return np.sum(u ** 2)


@pytest.mark.parametrize("w_shape", [(4, 5), (1, 5)])
def test_a_roll_stencils_gradient_is_numpys_and_central_differences(w_shape):
    rng = np.random.default_rng(1)
    args = (0.2, rng.standard_normal((4, 5)), 0.5 + rng.random(w_shape))
    gradient = astgrad.grad(wave, wrt=(0, 1, 2), backend="numba")
    got = gradient(*args)
    assert "elementwise(" in gradient.source
    # c's gradient, a number: summed in the loop, whether the text reads unbroadcast(E, shape(c)) or summed(E)
    assert "dc = dc + elementwise_sum(" in gradient.source
    for position, a, b in zip((0, 1, 2), got, astgrad.grad(wave, wrt=(0, 1, 2))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(a, _numeric.numeric_grad(wave, args, position), rtol=1e-6, atol=1e-8)


def heat(kappa, u0, w):
    u = u0.copy()
    for _ in range(3):
        u[1:-1] = u[1:-1] + kappa * w * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def burgers(nu, u0):
    u = u0.copy()
    for _ in range(3):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead)
        u[1:-1] = u[1:-1] - 0.1 * advect + nu * (ahead - back)
    return np.sum(u ** 2)


@pytest.mark.parametrize("fn, args", [
    (heat, (0.2, np.sin(np.linspace(0.0, 3.0, 8)), 1.5)),
    (heat, (0.2, np.sin(np.linspace(0.0, 3.0, 8)), np.linspace(0.5, 1.5, 6))),  # a weight array per point
    (burgers, (0.05, np.sin(np.linspace(0.0, 6.0, 9)) + 0.3)),
])
def test_gradients_adding_an_expression_at_a_slice_are_numpys_and_central_differences(fn, args):
    gradient = astgrad.grad(fn, wrt=(0, 1), backend="numba")
    got = gradient(*args)
    assert "add_elementwise(" in gradient.source
    for position, a, b in zip((0, 1), got, astgrad.grad(fn, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(a, _numeric.numeric_grad(fn, args, position), rtol=1e-6, atol=1e-8)


def verlet(vel0, pos0, mass, dt, steps):  # dt a constant instead: refused today (dacc a number, then an array)
    pos, vel = pos0.copy(), vel0.copy()
    acc = -pos / mass
    for _ in range(steps):
        vel += 0.5 * dt * acc
        pos += dt * vel
        acc = -pos / mass
        vel += 0.5 * dt * acc
    return np.sum(pos * vel) + np.sum(vel ** 2)


@pytest.mark.parametrize("mass", [np.linspace(0.5, 1.5, 5), np.array([1.3])])  # one shape, and a mass broadcast
def test_a_gradient_through_unbroadcasts_that_do_nothing_is_numpys_and_central_differences(mass):
    rng = np.random.default_rng(5)
    args = (rng.standard_normal(5), rng.standard_normal(5), mass, 0.2, 3)
    gradient = astgrad.grad(verlet, wrt=(0, 1), backend="numba")
    got = gradient(*args)
    # the reverse sweep's trips prove the unbroadcasts into the state's shape needless (passes/trip_shapes.py):
    # none is left inside an elementwise loop, and the numbers stay numpy's
    assert "unbroadcast((" not in gradient.source
    for position, a, b in zip((0, 1), got, astgrad.grad(verlet, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)
        np.testing.assert_allclose(a, _numeric.numeric_grad(verlet, args, position), rtol=1e-6, atol=1e-8)


def test_a_shape_also_read_as_a_value_leaves_the_expression_as_written():
    from numba import types

    from astgrad.backends.numba import loops
    vector, shape = types.Array(types.float64, 1, "C"), types.UniTuple(types.intp, 1)
    kinds = [vector, vector, types.float64, shape]
    assert loops._loop_text("(_0 + unbroadcast((_1 * _2), _3))", kinds, types) is not None
    assert loops._loop_text("(_3 + unbroadcast((_1 * _2), _3))", kinds, types) is None
    assert loops._loop_text("(_0 + unbroadcast((_1 * _2), _3))", kinds[:3] + [types.UniTuple(types.intp, 2)],
                            types) is None  # a shape of another rank


# ------------------------------------------------------------------ np.where's choice inside the loop

CHOICE = "(_0 + chosen(_1, (0), (_2 * _3)))"


@pytest.fixture(scope="module")
def choice():
    from astgrad.backends.numba import helpers, loops
    helpers.register()

    @numba.njit
    def kernel(a, c, b, d):
        return loops.elementwise(CHOICE, a, c, b, d)

    @numba.njit
    def adding(total, c, b, d):  # add_at(total, np.where(c, b * d, 0), ...) as generated: as written where not done
        out, done = loops.add_elementwise("chosen(_0, (_1 * _2), (0))", total, total.shape, slice(1, -1), c, b, d)
        if done:
            return out, done
        return runtime.add_at(total, np.where(c, b * d, 0), total.shape, slice(1, -1)), done
    return kernel, adding



@pytest.mark.parametrize("c_shape, b_shape", [((6,), (6,)), ((1,), (6,)), ((6,), (1,))])
def test_a_choice_in_the_loop_is_numpys_where_also_where_the_branch_not_taken_is_nan(choice, c_shape, b_shape):
    rng = np.random.default_rng(6)
    a, c = rng.standard_normal(6), rng.standard_normal(c_shape) > 0
    b = rng.standard_normal(b_shape)
    b[0] = np.nan  # read only where not chosen (or everywhere, if chosen): numpy's where drops it
    d = np.full(b_shape, np.inf)
    with np.errstate(invalid="ignore"):
        want = a + np.where(c, 0, b * d)
    np.testing.assert_array_equal(choice[0](a, c, b, d), want)


@pytest.mark.parametrize("kind", ["float32", "int", "float condition"])
def test_a_choice_of_other_kinds_is_computed_as_written(choice, kind):
    a, b, d = np.arange(6.0), np.linspace(-1.0, 1.0, 6), np.full(6, 2.0)
    c = b > 0
    if kind == "float32":
        b = b.astype(np.float32)
    elif kind == "int":
        a = np.arange(6)
    else:
        c = b.copy()  # a number array as the condition: not a boolean mask, numpy's truth of each
    got = choice[0](a, c, b, d)
    want = a + np.where(c, 0, b * d)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)


def test_a_choice_added_at_a_slice_is_numpys_and_left_to_the_caller_where_an_operand_is_a_view_of_the_total(choice):
    rng = np.random.default_rng(7)
    total, b, d = rng.standard_normal(8), rng.standard_normal(6), rng.standard_normal(6)
    c = b > 0
    want = total.copy()
    want[1:-1] += np.where(c, b * d, 0)
    got, done = choice[1](total.copy(), c, b, d)
    assert done
    np.testing.assert_array_equal(got, want)
    view = total.copy()
    want = view.copy()
    want[1:-1] += np.where(c, view[2:] * d, 0)
    got, done = choice[1](view, c, view[2:], d)  # overlapping: as written
    assert not done
    np.testing.assert_array_equal(got, want)


def test_a_quotient_of_numbers_is_computed_once_before_the_loop_and_zero_raises_as_the_caller_would():
    from astgrad.backends.numba import helpers, loops
    helpers.register()

    @numba.njit
    def kernel(a, x, y):
        return loops.elementwise("(_0 * (_1 / _2))", a, x, y)
    a = np.linspace(0.0, 1.0, 5)
    np.testing.assert_array_equal(kernel(a, 3.0, 7.0), a * (3.0 / 7.0))
    with pytest.raises(ZeroDivisionError):
        kernel(a, 3.0, 0.0)


def upwind(nu, u0, w):
    u = u0.copy()
    for _ in range(3):
        back = u[1:-1] - u[:-2]
        ahead = u[2:] - u[1:-1]
        advect = np.where(w * u[1:-1] > 0, u[1:-1] * back, u[1:-1] * ahead) / 0.5
        u[1:-1] = u[1:-1] - 0.1 * advect + nu * 0.2 / 0.3 * (ahead - back)
    return np.sum(u ** 2)


@pytest.mark.parametrize("case", ["float64", "float32 state", "condition broadcast", "view argument"])
def test_an_upwind_gradient_with_choices_in_loops_is_numpys_and_central_differences(case):
    u0 = np.sin(np.linspace(0.0, 6.0, 9)) + 0.3
    w = np.linspace(0.5, 1.5, 7)
    if case == "float32 state":
        u0 = u0.astype(np.float32)
    elif case == "condition broadcast":
        w = np.array([-1.0])
    elif case == "view argument":
        u0 = np.repeat(u0, 2)[::2]
    args = (0.05, u0, w)
    gradient = astgrad.grad(upwind, wrt=(0, 1), backend="numba")
    got = gradient(*args)
    assert "chosen(" in gradient.source and "elementwise(" in gradient.source
    for position, a, b in zip((0, 1), got, astgrad.grad(upwind, wrt=(0, 1))(*args)):
        np.testing.assert_allclose(a, b, rtol=1e-5 if case == "float32 state" else 1e-12, atol=1e-6)
        if case != "float32 state":
            np.testing.assert_allclose(a, _numeric.numeric_grad(upwind, args, position), rtol=1e-6, atol=1e-8)
