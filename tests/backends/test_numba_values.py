"""backend="numba": the compiled adjoint gives the numbers the numpy backend and the references give.

Numba compiles a gradient at its first call with each kind of arguments, a
second or more each; the gradients here are made once per module (fixtures)
and called with arguments of one kind, so each compiles once.
"""

import importlib.util
import pathlib
import sys

import numpy as np
import pytest

import _numeric
from _compiled import agrees_with_numpy_and_differences
import astgrad

pytest.importorskip("numba")


def _workloads():
    """benchmarks/workloads.py as a module of its own, without putting benchmarks/ on sys.path."""
    path = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "workloads.py"
    spec = importlib.util.spec_from_file_location("_benchmarks_workloads_numba", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


workloads = _workloads()


@pytest.fixture(scope="module")
def compiled():
    """Each workload's numba gradient, called once (compiled) on the test-size inputs."""
    rng = np.random.default_rng(7)
    out = {}
    for name, fn, inputs, wrt in [("W1", workloads.tutorial, workloads.tutorial_inputs, 0),
                                  ("W2", workloads.scalar_loop, workloads.scalar_loop_inputs, 0),
                                  ("W3", workloads.mlp_loss, workloads.mlp_small_inputs, (0, 1, 2)),
                                  ("W7", workloads.softmax_xent, workloads.softmax_xent_inputs, 0),
                                  ("W8", workloads.rnn, workloads.rnn_inputs, (0, 1, 2))]:
        args = inputs("test", rng)
        gradient = astgrad.grad(fn, wrt=wrt, backend="numba")
        out[name] = (gradient, args, gradient(*args), astgrad.grad(fn, wrt=wrt)(*args))
    return out


@pytest.mark.parametrize("name", ["W1", "W2", "W3", "W7", "W8"])
def test_the_workloads_give_the_numpy_backends_gradient(compiled, name):
    _, _, got, numpy = compiled[name]
    assert type(got) is type(numpy)
    for a, b in zip(got if isinstance(got, tuple) else (got,), numpy if isinstance(numpy, tuple) else (numpy,)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_the_workloads_match_their_hand_written_gradients(compiled):
    for name, hand in [("W1", workloads.tutorial_grad), ("W2", workloads.scalar_loop_grad),
                       ("W3", workloads.mlp_loss_grad), ("W7", workloads.softmax_xent_grad),
                       ("W8", workloads.rnn_grad)]:
        _, args, got, _ = compiled[name]
        expected = hand(*args)
        if isinstance(expected, tuple):
            for a, b in zip(got, expected):
                np.testing.assert_allclose(a, b, rtol=1e-10)
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_the_scalar_loop_matches_finite_differences(compiled):
    gradient, (x, steps), got, _ = compiled["W2"]
    expected = _numeric.gradient(lambda v: workloads.scalar_loop(v, steps), x)
    assert abs(got - expected) < 1e-6 * max(1.0, abs(expected))
    assert type(got) is float  # a number's gradient is a number, as with numpy


def test_a_second_call_runs_the_compiled_code_on_new_values(compiled):
    gradient, (x,), _, _ = compiled["W1"]
    other = x * 3.0 - 1.0
    np.testing.assert_allclose(gradient(other), workloads.tutorial_grad(other), rtol=1e-12)
    assert gradient(other) is not gradient(other)  # a fresh array each call


def test_the_source_is_the_text_numba_compiles(compiled):
    source = compiled["W2"][0].source
    assert "Compiled by Numba" in source
    assert "reversed(" not in source and "range(steps - 1, -1, -1)" in source  # Numba has no reversed
    assert "pop_numbers" not in source  # the recurrence's loop as written: compiled, it is the fast form
    assert "*," not in source.split("\n")[2]  # the seed is an ordinary parameter: no keyword-only ones
    assert "type(x)" not in source  # the numpy backend's shortcut in the scalar check
    assert "\n    del " not in compiled["W3"][0].source  # Numba refuses del



def test_numba_compiles_the_gradient_written_for_the_arguments_ranks(compiled):
    """The rule of ``@`` branches on its operands' ranks; the text Numba compiled has only the branch that runs."""
    gradient = compiled["W3"][0]
    assert "ndim(" in gradient.sources["any"]
    assert "ndim(" not in gradient.source and "for a 2-d float W1, a 1-d float b1, a 2-d float W2, a 2-d float X" in gradient.source
    assert "floats(" not in gradient.source  # real floats: the guard of the unused (h @ W2 - Y) ** 2 folded


def test_arguments_of_other_ranks_after_the_first_compile_get_their_own_gradient(compiled):
    """A gradient compiled for a 2-d W2 and Y must not run on 1-d ones: a new one is written and compiled."""
    gradient, (W1, b1, W2, X, Y), _, _ = compiled["W3"]
    w2, y = W2[:, 0].copy(), Y[:, 0].copy()  # one output: h @ w2 takes the rule's branch for a 1-d right operand
    got = gradient(W1, b1, w2, X, y)
    numpy = astgrad.grad(workloads.mlp_loss, wrt=(0, 1, 2))(W1, b1, w2, X, y)
    for a, b in zip(got, numpy):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    expected = _numeric.gradient(lambda w: workloads.mlp_loss(W1, b1, w, X, y), w2)
    np.testing.assert_allclose(got[2], expected, rtol=1e-6, atol=1e-8)
    assert "a 1-d float W2, a 2-d float X and a 1-d float Y" in gradient.source
    back = gradient(W1, b1, W2, X, Y)  # and the 2-d arguments again take the 2-d gradient
    np.testing.assert_allclose(back[0], compiled["W3"][3][0], rtol=1e-12, atol=1e-14)


# -- loops counting down with a step, index gradients, vjp, value_and_grad ----

def stepped(x, n):
    total = 0.0
    for i in range(1, n, 3):
        total = total + np.sin(x * i)
    for j in range(n, 0, -2):
        total = total + x * j * np.cos(x)
    return total


def picked(x, i):
    return x[i] * x[i] * 2.0 + np.sum(x[1:3])


def gathers(x):
    total = 0.0
    for i in range(3):
        total = total + x[i] * x[i]
    return total


def scaled(x):
    return np.sin(x) * 2.0


def test_loops_with_a_step_count_down_through_the_same_values():
    for n in (0, 1, 7, 8):
        got = astgrad.grad(stepped, backend="numba")(0.3, n)
        assert got == pytest.approx(_numeric.gradient(lambda v: stepped(v, n), 0.3), rel=1e-6, abs=1e-9)
        assert got == pytest.approx(astgrad.grad(stepped)(0.3, n), rel=1e-14)


def test_index_gradients_and_out_of_range_indices():
    """An index past the end raises IndexError at the user's line: compiled code without bounds checks
    would read whatever memory follows the array and return a number."""
    x = np.linspace(0.5, 2.0, 5)
    gradient = astgrad.grad(picked, backend="numba")
    np.testing.assert_allclose(gradient(x, 3), _numeric.gradient(lambda v: picked(v, 3), x), atol=1e-6)
    np.testing.assert_allclose(gradient(x, -1), astgrad.grad(picked)(x, -1), rtol=1e-14)
    with pytest.raises(IndexError) as info:
        gradient(x, 5)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "return x[i] * x[i] * 2.0" in notes and "test_numba_values.py" in notes


def test_vjp_and_value_and_grad():
    x = np.linspace(-1.0, 1.0, 6)
    seed = np.arange(6.0)
    np.testing.assert_allclose(astgrad.vjp(scaled, backend="numba")(x, seed), 2.0 * np.cos(x) * seed, rtol=1e-14)
    value, gradient = astgrad.value_and_grad(workloads.tutorial, backend="numba")(x.reshape(2, 3))
    assert value == pytest.approx(workloads.tutorial(x.reshape(2, 3)), rel=1e-14)
    np.testing.assert_allclose(gradient, workloads.tutorial_grad(x.reshape(2, 3)), rtol=1e-14)
    with pytest.raises(ValueError, match="seed has shape"):  # numpy would broadcast it: refused, as with numpy
        astgrad.vjp(scaled, backend="numba")(x, seed[:1])


def test_a_parameters_gradient_added_to_in_a_loop_starts_as_zeros_of_its_shape():
    """The numpy backend starts it as the number 0.0 (one type per variable in Numba: zeros of x's shape)."""
    x = np.array([0.5, -1.5, 2.0, 3.0])
    gradient = astgrad.grad(gathers, backend="numba")
    assert "dx = zeros_like_gradient(x)" in gradient.source
    np.testing.assert_array_equal(gradient(x), [1.0, -3.0, 4.0, 0.0])
    np.testing.assert_allclose(gradient(x), _numeric.gradient(gathers, x), atol=1e-8)


def doubled_then_gathered(x):
    y = x * 2.0
    total = 0.0
    for i in range(3):
        total = total + y[i] * y[i]
    return total


def test_a_locals_gradient_added_to_in_a_loop_starts_as_zeros_of_its_shape():
    """y is bound once, before the loop: its gradient, 0.0 in the numpy backend, starts as zeros of y's shape."""
    x = np.array([0.5, -1.5, 2.0, 3.0])
    gradient = astgrad.grad(doubled_then_gathered, backend="numba")
    assert "dy = zeros_like_gradient(y)" in gradient.source
    np.testing.assert_array_equal(gradient(x), astgrad.grad(doubled_then_gathered)(x))
    np.testing.assert_array_equal(gradient(x), [4.0, -12.0, 16.0, 0.0])


# -- what the compiled entry returns: Numba's arrays are kept only when nothing else holds their memory ----

def transposed(x):
    return x.T


def summed_pair(x, y):
    return np.sum(x + y)


def test_a_gradient_that_is_a_view_of_an_argument_is_copied():
    """vjp of x.T is the seed's transpose, a view of the seed in the compiled code: the user gets a copy."""
    x = np.arange(6.0).reshape(2, 3)
    seed = np.arange(6.0).reshape(3, 2) + 1.0
    gradient = astgrad.vjp(transposed, backend="numba")
    for _ in range(2):  # the first call compiles; the second runs the compiled entry
        got = gradient(x, seed)
        np.testing.assert_array_equal(got, seed.T)
        assert not np.shares_memory(got, seed) and got.flags.writeable
        got[0, 0] = -100.0
        assert seed[0, 0] == 1.0


def test_two_gradients_sharing_memory_are_returned_apart():
    """d/dx and d/dy of sum(x + y) are one array in the generated code: Numba returns two arrays on one buffer."""
    x, y = np.ones((2, 2)), np.full((2, 2), 3.0)
    gradient = astgrad.grad(summed_pair, wrt=(0, 1), backend="numba")
    for _ in range(2):
        dx, dy = gradient(x, y)
        np.testing.assert_array_equal(dx, np.ones((2, 2)))
        np.testing.assert_array_equal(dy, np.ones((2, 2)))
        assert not np.shares_memory(dx, dy)
        dx += 1.0
        np.testing.assert_array_equal(dy, np.ones((2, 2)))


def test_a_fresh_compiled_result_is_returned_without_a_copy(compiled):
    """The array Numba allocated is the user's: writeable, not shared with the arguments or another call's."""
    gradient, (x,), _, _ = compiled["W1"]
    first, second = gradient(x), gradient(x)
    for got in (first, second):
        assert got.flags.writeable and got.dtype == np.float64 and got.shape == x.shape
        assert not np.shares_memory(got, x)
    assert not np.shares_memory(first, second)
    assert type(first.base).__name__ == "_MemInfo"  # Numba's own allocation, kept as it is


def leaky(x):
    y = np.where(x > 0, x, 0.1 * x)
    return np.sum(y * y)


def test_float32_arguments_get_a_float32_gradient_that_numba_computed_in_float64():
    """Numba types 0.1 as float64 and 0.1 * x as a float64 array where numpy 2 keeps float32: the gradient
    comes back float32 as numpy's does, and differs from it only by float32 rounding."""
    x = np.linspace(-1.0, 1.0, 7, dtype=np.float32)
    want = astgrad.grad(leaky)(x)
    got = astgrad.grad(leaky, backend="numba")(x)
    assert want.dtype == got.dtype == np.float32
    reference = _numeric.gradient(leaky, x.astype(np.float64))
    np.testing.assert_allclose(got, reference, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)



def _array_of_products(w, x):
    v = np.array([w[0] * x[0], w[1] * x[1] - w[0]])
    return np.sum(v * v) + np.sum(np.sin(w) * x)


def _array_of_products_in_a_list(w, x):  # the function reads the list itself too
    items = [w[0] * x[0], w[1] * x[1]]
    return np.sum(np.array(items) ** 2) + len(items)


def test_np_array_of_numbers_the_entry_computes_compiles_and_gives_numpys_gradient():
    """The entry's reverse sweep cuts ``np.array([...])``'s gradient into the display's items (``_like``): the
    display is written as a tuple for Numba (a list of numbers was refused there); where the function reads
    the list itself it stays a list, and the gradient is the numpy backend's or a located refusal."""
    w, x = np.array([0.3, -0.7, 1.1]), np.array([1.5, 0.2, -0.4])
    gradient = astgrad.grad(_array_of_products, backend="numba")
    got = gradient(w, x)
    v0, v1 = w[0] * x[0], w[1] * x[1] - w[0]
    closed = np.cos(w) * x + np.array([2 * v0 * x[0] - 2 * v1, 2 * v1 * x[1], 0.0])
    np.testing.assert_allclose(got, closed, rtol=1e-13)
    np.testing.assert_allclose(got, astgrad.grad(_array_of_products)(w, x), rtol=1e-13)
    assert "_like(dv, t1)" in gradient.source and "t1 = [" not in gradient.source
    try:
        kept = astgrad.grad(_array_of_products_in_a_list, backend="numba")(w, x)
    except astgrad.TransformError as refused:
        assert "test_numba_values.py" in str(refused)
    else:
        np.testing.assert_allclose(kept, astgrad.grad(_array_of_products_in_a_list)(w, x), rtol=1e-13)


def _drift(vel0, pos0, mass, dt, steps):
    pos, vel = pos0.copy(), vel0.copy()
    for _ in range(steps):
        vel += -0.5 * dt * pos / mass
        pos += dt * vel
    return np.sum(pos ** 2) + np.sum(mass * vel ** 2)


def test_an_update_whose_value_has_no_name_gets_zeros_of_another_operand():
    """``pos += dt * vel`` is ``pos = in_place(pos + dt * vel, ...)``: the value added has no name of its own
    once the passes fold it into the line, so the compiled reverse sweep's zeros for its gradient cannot be
    zeros of it (Numba refused the program, a name not defined)."""
    args = (np.array([0.1, -0.2, 0.3]), np.array([1.0, 0.5, -0.5]), np.array([1.0, 2.0, 3.0]), 0.1, 4)
    agrees_with_numpy_and_differences(_drift, args, wrt=(0, 1, 2))


def _stops_early(x, y, limit):
    for i in range(2, 11, 3):
        x = np.cos(x) * (i * 0.25 + 1.0) + y
        if np.sum(x) > limit:
            break
    return np.sum(x * y)


@pytest.mark.parametrize("limit", [-10.0, 1.2, 10.0])  # a break at the first trip, at a later one, none
def test_a_loop_left_by_break_is_reversed_over_the_trips_it_ran(limit):
    """The reverse of a loop with ``break`` runs ``reversed(range(2, 11, 3)[:_trips])``, which Numba cannot
    type (it slices no range): compiled as a range counting down from the last trip run."""
    agrees_with_numpy_and_differences(_stops_early, (np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3]), limit))


def test_the_range_counting_down_is_the_reversed_slice_for_every_start_stop_step_and_count():
    import itertools
    import numba
    from astgrad.backends.numba import helpers, lower
    helpers.register()

    @numba.njit
    def down(a, b, s, t):
        return [i for i in range(lower.last_of_range(a, b, s, t), a - s, -s)]

    for a, b, s, t in itertools.product(range(-3, 4), range(-3, 6), (-2, -1, 1, 3), range(-4, 8)):
        want = list(reversed(range(a, b, s)[:t]))
        assert list(down(a, b, s, t)) == want == list(range(lower.last_of_range(a, b, s, t), a - s, -s))


def _clipped(x, y):
    return np.sum(np.clip(x * y, a_min=-0.3, a_max=0.2) ** 2) + np.sum(np.clip(x, -0.1, None)) \
        + np.sum(np.clip(y, None, 0.2) * x)


def test_clip_with_number_bounds_or_none_compiles_its_mask():
    """np.clip's gradient multiplies by ``within(a, lo, hi)`` (1 inside the bounds, inclusive): compiled for
    bounds that are numbers or None, with a NaN (outside every bound) and points on a bound."""
    x, y = np.array([0.3, -0.2, 0.5, np.nan, -0.1, 1.0]), np.array([0.1, 0.4, -0.3, 1.0, 2.0, 0.2])
    got = astgrad.grad(_clipped, wrt=(0, 1), backend="numba")(x, y)
    want = astgrad.grad(_clipped, wrt=(0, 1))(x, y)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    finite = (x[:3], y[:3])
    for i in range(2):
        np.testing.assert_allclose(astgrad.grad(_clipped, wrt=(0, 1), backend="numba")(*finite)[i],
                                   _numeric.numeric_grad(_clipped, list(finite), i), rtol=1e-6, atol=1e-9)


def _gathered(x, y):
    z = x[[2, 0, 1]] * y
    return np.sum(z ** 2) + np.sum(np.sin(x)[[0, 0, 2]] * y)


def _rows_gathered(w, v):
    return np.sum(w[[1, -1, 1]] ** 2 * v)


def _gathering_helper(a, b):
    return a[[2, 0, 2]] * b


def _gathered_in_a_callee(x, y):
    return np.sum(_gathering_helper(x, y) ** 2)


def _gathered_outside(x, y):
    return np.sum(x[[0, 5, 1]] * y)


def _gathered_in_a_loop(x, y):
    for _ in range(2):
        x = np.tanh(x)[[2, 0, 1]] * y  # the list is bound each trip: the reverse sweep pops it back
    return np.sum(x * x)


def _gathered_and_rebound(x, y):
    for i in range(2):
        x = np.sin(x)[[2, 0, 0]] + y
        if np.sum(x) > 5.0:
            break
    return np.sum(x * y)


def _gathered_in_a_test(x, y):
    if np.sum(y[[2, 0, 1]] * x) > -0.5:  # the test is not differentiated: the index has no name
        y = np.tanh(x) * y
    return np.sum(y * y[[1, 1, 0]])


def _gathering_in_a_branch(a, b):  # the forward saves the list declared None: its push reads it as saved
    c = np.sin(a)
    if np.sum(c) > 0.0:
        c = c[[2, 0, 1]][0] * a
    return c * b


def _gathered_in_a_branch_of_a_callee(x, y):
    return np.sum(_gathering_in_a_branch(x, y) ** 2) + np.sum(_gathering_in_a_branch(-x, y))


def _second_squared(a, b):
    return b * b


def _gathered_where_rebound(x, y):  # x later rebound to a call's value: its items' gradient is getitem_gradient
    for _ in range(2):
        x = np.tanh(x) * 1.7 + x[[2, 0, 1]] * 0.1
    v = x * 0.7
    x = _second_squared(x, y)
    return np.sum(v * v) + np.sum(x * y)


@pytest.mark.parametrize("fn, rows", [(_gathered, False), (_rows_gathered, True), (_gathered_in_a_callee, False),
                                      (_gathered_in_a_branch_of_a_callee, False), (_gathered_where_rebound, False),
                                      (_gathered_in_a_loop, False), (_gathered_and_rebound, False),
                                      (_gathered_in_a_test, False)])
def test_indexing_by_a_list_of_integers_compiles_and_adds_a_repeated_position_twice(fn, rows):
    """``x[[2, 0, 1]]``: Numba indexes by an array of integers, so the list becomes one; its gradient adds each
    row at its position, twice where a position is named twice (``[0, 0, 2]``, ``[1, -1, 1]``), as np.add.at."""
    x = np.arange(12.0).reshape(4, 3) / 10 if rows else np.array([0.3, -0.2, 0.5])
    agrees_with_numpy_and_differences(fn, (x, np.array([0.1, 0.4, -0.3])))


def test_a_list_index_out_of_bounds_raises_numpys_index_error():
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        astgrad.grad(_gathered_outside, wrt=(0, 1), backend="numba")(np.array([0.3, -0.2, 0.5]), np.ones(3))


def test_the_scattered_rows_add_a_repeated_position_twice_and_refuse_one_out_of_bounds():
    import numba
    from astgrad.backends.numba import helpers
    from astgrad.rules import _extra
    helpers.register()

    @numba.njit
    def scatter(g, index):
        return _extra.scatter(g, (4, 2), index)

    g = np.arange(8.0).reshape(4, 2)
    index = np.array([3, -1, 0, 3])
    want = np.zeros((4, 2))
    np.add.at(want, index, g)
    np.testing.assert_array_equal(scatter(g, index), want)
    with pytest.raises(IndexError):
        scatter(g, np.array([0, 4, 1, 2]))
    with pytest.raises(ValueError):
        scatter(g[:3], index)


def _while_in_a_branch(x, y):
    if np.sum(x) > 0:
        k = 0
        while np.sum(y * y) < 5.0 and k < 4:
            y = np.tanh(y) * 1.7 + x * 0.1
            k = k + 1
    return np.sum(y * y) + np.sum(x * y)


@pytest.mark.parametrize("x", [np.array([0.3, -0.2, 0.5]), np.array([-0.3, -0.2, 0.1])])  # the loop run, or not
def test_a_while_loops_trip_count_gets_a_list_of_its_own(x):
    """A ``while`` in a branch pushes its trip count (a number) on the stack that holds the states it saved
    (arrays), and its reverse pops it in the loop's header, ``range(_stack.pop())``: Numba's list holds one
    type, so the counts go to a list of their own, as each saved variable's values do."""
    agrees_with_numpy_and_differences(_while_in_a_branch, (x, np.array([0.1, 0.4, -0.3])))


def test_np_dots_rank_above_two_branch_is_typed_never_run_and_raises_if_run():
    """np.dot's rule, where the transform does not know the ranks, tests ``ndim(b) > 2`` and calls the
    tensordot rule there; Numba types both branches, so the tensordot rule is typed for ``b`` of rank 2 or
    less (never run then) and raises if it is run; for ``b`` of rank 3 it is not typed (refused)."""
    import numba
    from astgrad import rules
    from astgrad.backends.numba import helpers
    helpers.register()

    @numba.njit
    def rule(g, a, b, rank):
        if rank > 2:
            return rules.linalg.tensordot(g, None, a, b, ([a.ndim - 1], [b.ndim - 2]))
        return g @ b.T, a.T @ g

    a, b, g = np.ones((2, 3)), np.ones((4, 3)), np.ones((2, 4))
    np.testing.assert_array_equal(rule(g, a, b.T, b.ndim)[0], g @ b)
    with pytest.raises(NotImplementedError, match="tensordot"):
        rule(g, a, b.T, 3)
    with pytest.raises(numba.core.errors.TypingError):
        numba.njit(lambda g, a, b: rules.linalg.tensordot(g, None, a, b, 1))(np.ones((2, 4, 5)), a, np.ones((4, 3, 5)))


def _rolled_flat(x, y):
    return np.sum(np.roll(x * y, 1) ** 2) + np.sum(np.roll(np.sin(x), -2) * y)


@pytest.mark.parametrize("rows", [False, True])
def test_a_roll_without_an_axis_and_its_gradient_compile(rows):
    """``np.roll(x, s)`` rolls the flattened array; its gradient rolls back with ``axis=None`` written out,
    which Numba's np.roll does not take: the same roll without the axis."""
    x = np.arange(12.0).reshape(3, 4) / 7 if rows else np.array([0.3, -0.2, 0.5, 0.9])
    agrees_with_numpy_and_differences(_rolled_flat, (x, np.cos(x)))
