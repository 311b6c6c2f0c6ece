"""A call run as written (its result reaches nothing differentiated) that may write outside what it is given.

Such a call is not transformed: ``reset()`` setting ``G[:] = 0`` where ``G``
is the array the gradient is taken at made the function 0 everywhere while
the gradient was 3 (no error).  Its source is read for every object it may
write into, and a check before the call refuses an object that is, is inside
or shares memory with a differentiated argument, or is an array; a callee
rebinding a global the function reads is refused when it is transformed.
Writes into other dicts, lists and objects run as written, exactly.
"""

import types

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError
from tests._numeric import gradient

G = {"x": None}
STATE = {"W": None, "log": [], "calls": 0}
LOG = []
W = np.ones(2)
CALLS = 0


def reset():
    G["x"][:] = 0.0


def through_reset(x):
    reset()
    return np.sum(x * 3.0)


def inner_write():
    STATE["W"][0] = 5.0


def outer():
    inner_write()


def through_nested(x):
    outer()
    return np.sum(x * x)


def zero_it(a):
    a[:] = 0.0


def passes_global():
    zero_it(G["x"])


def through_passing(x):
    passes_global()
    return np.sum(x * 3.0)


def computed_index():
    k = "W"
    STATE[k][:] = 0.0


def through_computed_index(x):
    computed_index()
    return np.sum(x * 2.0)


class Box:
    def __init__(self, v):
        self.v = v

    def reset(self):
        self.v[:] = 0.0

    def count(self):
        self.calls = getattr(self, "calls", 0) + 1


BOX = Box(None)


def through_method(x):
    BOX.reset()
    return np.sum(x * 3.0)


def counted(x):
    BOX.count()
    return np.sum(x * 3.0)


class Scaler:
    def __init__(self):
        self.buffer = None

    def __call__(self):
        self.buffer *= 0.0


SCALER = Scaler()


def through_callable_object(x):
    SCALER()
    return np.sum(x * 3.0)


def bump():
    global W
    W = W * 2.0


def through_rebinding(x):
    y = x * W
    bump()
    return np.sum(y)


def count_calls():
    global CALLS
    CALLS += 1


def through_counter(x):
    count_calls()
    return np.sum(x * x)


def log_value(v):
    LOG.append(float(v))
    STATE["calls"] = STATE["calls"] + 1


def through_logging(x):
    s = np.sum(x * x)
    log_value(3.0)
    return s


def scratch():
    STATE["W"][:] = 1.0


def through_scratch(x):
    scratch()
    return np.sum(x * 2.0)


def make_closure(target):
    def clear():
        target[0] = 0.0

    def f(x):
        clear()
        return np.sum(x * 3.0)
    return f


def x0():
    return np.array([1.0, 2.0])


@pytest.fixture(autouse=True)
def fresh():
    global W, CALLS
    W, CALLS = np.ones(2), 0
    LOG.clear()
    STATE.update({"W": np.ones(2), "log": [], "calls": 0})
    BOX.v = None
    vars(BOX).pop("calls", None)
    yield


@pytest.mark.parametrize("make", [astgrad.grad, astgrad.value_and_grad])
def test_write_into_the_argument_array_through_a_global_refused(make):
    x = x0()
    G["x"] = x
    with pytest.raises(TypeError, match=r"reset\(\.\.\.\).*argument x.*G\[.x.\]\[:\] = 0\.0") as info:
        make(through_reset)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0])  # refused before the call: nothing was written
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "reset()" in notes  # the user's line of the call


def test_the_true_gradient_there_is_zero():
    """What the refusal prevents: the function is 0 at every x where G is x, and the gradient was 3."""
    def at(x):
        G["x"] = x
        return through_reset(x)
    np.testing.assert_allclose(gradient(at, x0()), [0.0, 0.0], atol=1e-9)


def test_vjp_and_jvp_refused():
    x = x0()
    G["x"] = x
    with pytest.raises(TypeError, match="argument x"):
        astgrad.vjp(through_reset)(x, 1.0)
    with pytest.raises(TypeError, match="argument x"):
        astgrad.jvp(through_reset)(x, np.ones(2))


def test_a_view_of_the_argument_refused():
    x = np.arange(4.0)
    G["x"] = x[1:3]
    with pytest.raises(TypeError, match="argument x"):
        astgrad.grad(through_reset)(x)


def test_a_global_array_not_the_argument_refused_as_in_the_function_itself():
    G["x"] = np.ones(2)
    with pytest.raises(TypeError, match="may write into an array .* the adjoint may read"):
        astgrad.grad(through_reset)(x0())


def test_the_check_runs_at_each_call_not_once():
    g = astgrad.grad(through_counter)
    np.testing.assert_allclose(g(x0()), [2.0, 4.0])
    G["x"] = x0()
    h = astgrad.grad(through_reset)
    x = x0()
    with pytest.raises(TypeError):
        h(x)
    G["x"] = ("not", "an array")  # now the write fails in the function itself, not in the check
    with pytest.raises(TypeError, match="'tuple' object does not support item assignment"):
        h(x)


def test_a_write_two_calls_deep_refused():
    x = x0()
    STATE["W"] = x
    with pytest.raises(TypeError, match=r"outer\(\.\.\.\).*argument x.*STATE\[.W.\]\[0\] = 5\.0"):
        astgrad.grad(through_nested)(x)
    assert x[0] == 1.0


def test_a_global_passed_to_a_writing_function_refused():
    x = x0()
    G["x"] = x
    with pytest.raises(TypeError, match=r"passes_global\(\.\.\.\).*argument x.*a\[:\] = 0\.0"):
        astgrad.grad(through_passing)(x)


def test_an_index_computed_in_the_callee_checks_everything_the_global_reaches():
    x = x0()
    STATE["W"] = x
    with pytest.raises(TypeError, match="argument x"):
        astgrad.grad(through_computed_index)(x)


def test_a_method_of_a_global_object_refused():
    x = x0()
    BOX.v = x
    with pytest.raises(TypeError, match=r"Box\.reset\(\.\.\.\).*argument x"):
        astgrad.grad(through_method)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0])


def test_a_method_rebound_on_the_instance_is_read_when_it_runs():
    box_counts = Box(None)

    def harmless(self):
        self.calls = 1

    BOX.reset = types.MethodType(harmless, BOX)  # what BOX.reset() runs now writes into no array
    try:
        BOX.v = x = x0()
        np.testing.assert_allclose(astgrad.grad(through_method)(x), [3.0, 3.0])
        assert BOX.calls == 1
    finally:
        del BOX.reset
    with pytest.raises(TypeError, match="argument x"):
        astgrad.grad(through_method)(x)
    assert box_counts.v is None


def test_a_callable_object_refused():
    x = x0()
    SCALER.buffer = x
    with pytest.raises(TypeError, match=r"Scaler\.__call__\(\.\.\.\).*argument x"):
        astgrad.grad(through_callable_object)(x)


def test_a_closure_variable_that_is_the_argument_refused():
    x = x0()
    with pytest.raises(TypeError, match=r"clear\(\.\.\.\).*argument x"):
        astgrad.grad(make_closure(x))(x)
    np.testing.assert_allclose(astgrad.grad(make_closure([0.0, 0.0]))(x), [3.0, 3.0])  # a list: exact


def test_a_global_the_function_reads_rebound_by_a_callee_refused_at_transform():
    with pytest.raises(UnsupportedSyntaxError, match=r"bump\(\.\.\.\) rebinds W .*W = W \* 2\.0") as info:
        astgrad.grad(through_rebinding)(x0())
    assert "bump()" in str(info.value)
    assert (W == 1.0).all()  # refused before anything ran


def test_a_global_the_function_does_not_read_may_be_rebound():
    np.testing.assert_allclose(astgrad.grad(through_counter)(x0()), [2.0, 4.0])
    assert CALLS == 1


def test_writes_into_other_dicts_lists_and_objects_run_exactly():
    x = x0()
    value, g = astgrad.value_and_grad(through_logging)(x)
    assert value == 5.0 and LOG == [3.0] and STATE["calls"] == 1
    np.testing.assert_allclose(g, gradient(through_logging, x0()), atol=1e-7)
    BOX.v = x
    np.testing.assert_allclose(astgrad.grad(counted)(x), [3.0, 3.0])
    assert BOX.calls == 1


def test_refusals_of_values_given_still_apply():
    def given(p):
        p[:] = 0.0

    def f(x):
        given(x)
        return np.sum(x * 3.0)
    with pytest.raises(UnsupportedSyntaxError, match="may change it"):
        astgrad.grad(f)(x0())


RNG = np.random.default_rng(0)


def shuffled(x):
    RNG.shuffle(G["x"])
    return np.sum(x * x)


def shuffled_global(x):
    RNG.shuffle(H)
    return np.sum(x * x)


def set_through_method(x):
    H.__setitem__(0, 5.0)
    return np.sum(x * 3.0)


H = np.ones(3)


def test_a_c_method_writing_into_a_global_that_is_the_argument_refused():
    """rng.shuffle(G) with G the argument gave [6, 2, 4] where 2x at the point called is [2, 4, 6]."""
    global H
    x = np.array([1.0, 2.0, 3.0])
    H = x
    with pytest.raises(TypeError, match=r"shuffle\(\.\.\.\).*argument x"):
        astgrad.grad(shuffled_global)(x)
    with pytest.raises(TypeError, match=r"__setitem__\(\.\.\.\).*argument x"):
        astgrad.grad(set_through_method)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])
    H = np.ones(3)  # a global array not the argument: refused as a write into it in the function itself is
    with pytest.raises(TypeError, match="an array the function does not own"):
        astgrad.grad(set_through_method)(x)


def double(c):
    c *= 2.0


def local_array_doubled(x):
    c = np.ones(2)
    y = x * c
    double(c)
    return np.sum(y)


def test_a_local_array_the_adjoint_reads_written_by_a_callee_refused():
    """The adjoint of y = x * c reads c after double(c) ran: [2, 2] where the gradient is [1, 1]."""
    with pytest.raises(TypeError, match=r"double\(\.\.\.\).*c \*= 2\.0"):
        astgrad.grad(local_array_doubled)(x0())


def rng_draws(x):
    noise = RNG.normal(size=2)
    RNG.standard_normal()
    return np.sum(x * x) + 0.0 * np.sum(noise)


def test_methods_that_change_only_their_own_object_run():
    np.testing.assert_allclose(astgrad.grad(rng_draws)(x0()), [2.0, 4.0])


def zero_all(*objs, **named):
    for o in objs:
        o[:] = 0.0
    for o in named.values():
        o[:] = 0.0


PAIR = []


def through_star_args(x):
    zero_all(*PAIR)
    return np.sum(x * 3.0)


def through_varargs(x):
    zero_all(G["x"])
    return np.sum(x * 3.0)


def through_kwargs(x):
    zero_all(**STATE["named"])
    return np.sum(x * 3.0)


def test_objects_collected_by_star_args_are_checked():
    x = x0()
    PAIR[:] = [x]
    G["x"] = x
    STATE["named"] = {"a": x}
    try:
        for f in (through_varargs,):
            with pytest.raises(TypeError, match=r"zero_all\(\.\.\.\).*argument x"):
                astgrad.grad(f)(x)
        np.testing.assert_array_equal(x, [1.0, 2.0])
        for f in (through_star_args, through_kwargs):  # refused where written: what they give is not known
            with pytest.raises(UnsupportedSyntaxError, match=r"\*"):
                astgrad.grad(f)(x)
    finally:
        PAIR.clear()


import logging  # noqa: E402
import random  # noqa: E402

LOGGER = logging.getLogger("astgrad-test-untransformed-calls")


def logs(x):
    LOGGER.debug("a value")
    return np.sum(x * x)


def shuffles_with_the_standard_library(x):
    random.shuffle(G["x"])
    return np.sum(x * x)


def test_a_library_function_runs_exactly_and_its_own_state_is_not_checked():
    """logging's handlers and caches are no user's array: the call runs, the gradient is exact."""
    np.testing.assert_allclose(astgrad.grad(logs)(x0()), [2.0, 4.0])


def test_a_library_function_given_the_argument_is_still_checked():
    """random.shuffle is Python code of the standard library that swaps the items of what it is given."""
    x = np.array([1.0, 2.0, 3.0])
    G["x"] = x
    with pytest.raises(TypeError, match="argument x"):
        astgrad.grad(shuffles_with_the_standard_library)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0, 3.0])


def swap_first(a, b):
    a[0], b[0] = b[0], a[0]


OPAQUE_SWAP = swap_first.__call__  # a method-wrapper: no Python source the transform can read


def passes_two_globals():
    OPAQUE_SWAP(STATE["log"], G["x"])


def through_two_globals(x):
    passes_two_globals()
    return np.sum(x * 3.0)


def test_every_global_given_to_an_unread_function_is_checked_not_only_the_first():
    x = x0()
    G["x"] = x
    STATE["log"] = [5.0, 6.0]
    with pytest.raises(TypeError, match="argument x"):
        astgrad.grad(through_two_globals)(x)
    np.testing.assert_array_equal(x, [1.0, 2.0])
