"""Writes through doors no static list holds: a located error or the right number, never a changed one.

numpy writes into an array through more doors than any list of calls can
hold: a ufunc's positional out, ``copy=False``, a bound method kept in a
name, ``exec``, ``globals()``, a default argument, a primitive the user
registered that also writes into what it is given.  Before, several of
these gave a silently wrong gradient (``fill = a.fill; fill(0)`` returned
the gradient of the old values).  The static checks refuse what they can
locate; under them the run-time net holds the arrays the gradient reads
read-only while it runs, so a write the checks did not foresee becomes a
located error.  Each case here is checked as "raises an error naming this
file and the line, or returns what central differences of numpy's own run
give": it holds whichever of the two catches the case.  Every array is
writeable again afterwards, whatever happened.
"""

import inspect
import math
import threading

import numpy as np
import pytest

import astgrad
from astgrad.transform.runtime import net
from _numeric import numeric_grad

G = np.array([1.0, 2.0, 3.0])
BOX = np.array([1.0, 2.0, 3.0])


def sneaky_double(v):
    """A primitive with a correct rule for its result that also halves its argument in place."""
    out = v * 2.0
    v *= 0.5
    return out


astgrad.defvjp(sneaky_double, lambda g, ans, v: g * 2.0)
astgrad.defjvp(sneaky_double, lambda t, ans, v: t * 2.0)


def honest_double(v):
    return v * 2.0


astgrad.defvjp(honest_double, lambda g, ans, v: g * 2.0)
astgrad.defjvp(honest_double, lambda t, ans, v: t * 2.0)


class Library:
    """An object holding a C function, reached as an attribute: no list of names can know what it does."""


LIBRARY = Library()
LIBRARY.zero_into = np.copyto


class State:
    """An object whose attribute the differentiated function reads."""


STATE = State()
STATE.w = np.array([1.0, 2.0, 3.0])
CELL = np.array([1.0, 2.0, 3.0])


def _fresh():
    G[:] = [1.0, 2.0, 3.0]
    BOX[:] = [1.0, 2.0, 3.0]
    STATE.w[:] = [1.0, 2.0, 3.0]
    CELL[:] = [1.0, 2.0, 3.0]


def _closing_over(c):
    def through_a_closure(a):
        y = a * c
        zero = c.fill
        zero(0.0)
        return np.sum(y * c)
    return through_a_closure


def ufunc_positional_out(a):
    y = a * a
    np.maximum(a, 0.0, a)
    return np.sum(y * a)


def nan_to_num_in_place(a):
    y = a * a
    np.nan_to_num(a, copy=False)
    return np.sum(y * a)


def fill_through_reshape(a):
    y = a * a
    a.reshape(-1).fill(0.0)
    return np.sum(y * a)


def fill_through_asarray(a):
    y = a * a
    np.asarray(a).fill(1.0)
    return np.sum(y * a)


def bound_method_in_a_name(a):
    y = a * a
    fill = a.fill
    fill(0.0)
    return np.sum(y * a)


def through_exec(a):
    y = a * a
    exec("a[0] = 5.0")
    return np.sum(y * a)


def through_globals(a):
    y = a * G
    globals()["G"][0] = 10.0
    return np.sum(y * G)


def through_the_globals_dict_in_a_name(a):
    y = a * G
    table = globals()
    table["G"][0] = 10.0
    return np.sum(y * G)


def through_an_object_a_call_returns(a):
    y = a * G
    np.copyto(globals()["G"], 0.0)
    return np.sum(y * G)


def clobber(buf=BOX):
    buf[0] = 7.0


def through_a_default(a):
    y = a * BOX
    clobber()
    return np.sum(y * BOX)


def through_an_attribute(a):
    y = a * STATE.w
    put = STATE.w.put
    put(1, 4.0)
    return np.sum(y * STATE.w)


through_a_closure = _closing_over(CELL)


def registered_primitive_writes(a):
    y = sneaky_double(a)
    return np.sum(y * a)


def registered_primitive_writes_into_a_saved_value(a):
    y = np.sin(a)
    z = sneaky_double(y)
    return np.sum(z * y)


def library_function_on_an_attribute(a):
    y = a * a
    LIBRARY.zero_into(a, 0.0)
    return np.sum(y * a)


def library_function_whose_result_is_kept(a):
    y = a * a
    done = LIBRARY.zero_into(a, 0.0)
    return np.sum(y * a) + (done is None)


CASES = [ufunc_positional_out, nan_to_num_in_place, fill_through_reshape, fill_through_asarray,
         bound_method_in_a_name, through_exec, through_globals, through_the_globals_dict_in_a_name,
         through_an_object_a_call_returns, through_a_default, through_an_attribute, through_a_closure,
         registered_primitive_writes, registered_primitive_writes_into_a_saved_value,
         library_function_on_an_attribute, library_function_whose_result_is_kept]


def _fresh_run(f, x):
    _fresh()
    return f(x.copy())


@pytest.mark.filterwarnings("ignore:Passing more than 2 positional:DeprecationWarning")
@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["grad", "value_and_grad", "vjp"])
def test_a_write_through_a_door_is_refused_at_its_line_or_exact(f, mode):
    x0 = np.array([1.0, -2.0, 3.0])
    expected = numeric_grad(lambda x: _fresh_run(f, x), [x0], 0)
    _fresh()
    x = x0.copy()
    try:
        if mode == "grad":
            got = astgrad.grad(f)(x)
        elif mode == "value_and_grad":
            _, got = astgrad.value_and_grad(f)(x)
        else:
            got = astgrad.vjp(f)(x, 1.0)
    except Exception as exc:  # a refusal: it names this file and the line of the write
        text = "\n".join([str(exc), *getattr(exc, "__notes__", [])])
        assert __file__.rsplit("/", 1)[-1] in text, text
        assert np.array_equal(x, x0) or f is through_exec  # refused before the write (exec writes once it runs)
    else:
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    for array in (x, G, BOX, STATE.w, CELL):
        assert array.flags.writeable
    assert net.held_now() == 0


def _line_of(function, needle):
    lines, start = inspect.getsourcelines(function)
    return start + next(i for i, line in enumerate(lines) if needle in line)


@pytest.mark.parametrize("f", [registered_primitive_writes, registered_primitive_writes_into_a_saved_value])
@pytest.mark.parametrize("mode", ["grad", "jvp"])
def test_a_door_no_list_can_know_is_caught_by_the_net(mode, f):
    """A primitive the user registered with a rule for its result, which also writes into what it is given:
    the argument, or a value the function computed and the adjoint reads."""
    x = np.array([1.0, -2.0, 3.0])
    with pytest.raises(net.WriteIntoReadArray) as caught:
        if mode == "grad":
            astgrad.grad(f)(x)
        else:
            astgrad.jvp(f)(x, np.ones(3))
    assert f"{__file__}:{_line_of(f, 'sneaky_double(')}" in str(caught.value)
    assert "read-only" in str(caught.value)
    np.testing.assert_array_equal(x, [1.0, -2.0, 3.0])  # nothing was written
    assert x.flags.writeable and net.held_now() == 0


def test_second_derivatives_through_a_primitive_the_net_wraps():
    def f(a):
        return np.sum(honest_double(np.sin(a)) * a)

    a = np.array([0.3, -0.7])
    hessian = astgrad.hessian(f)(a)
    expected = np.stack([numeric_grad(lambda v: astgrad.grad(f)(v)[i], [a], 0) for i in range(2)])
    np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)
    assert a.flags.writeable and net.held_now() == 0


def test_a_door_that_writes_nothing_gives_the_exact_gradient_and_leaves_flags_as_they_were():
    def f(a, w):
        return np.sum(honest_double(a) * a * w)

    a, w = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    w.flags.writeable = False  # read-only before the call: stays so
    got = astgrad.grad(f)(a, w)
    np.testing.assert_allclose(got, numeric_grad(f, [a, w], 0), rtol=1e-6)
    assert a.flags.writeable and not w.flags.writeable and net.held_now() == 0


def test_a_view_of_an_argument_returned_as_aux_is_writeable():
    def f(a):
        return np.sum(honest_double(a)), a[:2]

    a = np.array([1.0, 2.0, 3.0])
    g, aux = astgrad.grad(f, has_aux=True)(a)
    np.testing.assert_allclose(g, [2.0, 2.0, 2.0])
    aux[0] = 9.0  # a view made during the call is as writeable as one made after it
    assert a[0] == 9.0 and a.flags.writeable


WHOLE = np.array([1.0, 2.0, 3.0, 4.0])


def poke_whole(v):
    """A primitive whose rule is right for its result, and which writes into WHOLE on the side."""
    WHOLE[0] = 100.0
    return v * 2.0


astgrad.defvjp(poke_whole, lambda g, ans, v: g * 2.0)


def test_an_argument_that_is_a_view_holds_its_base_too():
    def f(a):
        y = a * a
        return np.sum(poke_whole(y) * a)

    with pytest.raises(net.WriteIntoReadArray):
        astgrad.grad(f)(WHOLE[:2])  # the write goes through WHOLE, the base of the view a
    assert WHOLE[0] == 1.0 and WHOLE.flags.writeable and net.held_now() == 0


def test_a_call_for_its_effect_may_still_write_into_an_argument_without_a_gradient():
    """``rng.shuffle(idx)`` on an argument nothing read before: exact before the net, exact with it."""
    def f(x, idx):
        np.random.default_rng(0).shuffle(idx)
        return np.sum(x[idx] * np.arange(3.0))

    x, idx = np.array([1.0, 2.0, 3.0]), np.arange(3)
    got = astgrad.grad(f)(x, idx.copy())
    shuffled = idx.copy()
    np.random.default_rng(0).shuffle(shuffled)
    expected = np.zeros(3)
    expected[shuffled] = np.arange(3.0)
    np.testing.assert_allclose(got, expected)


def test_threads_and_nested_gradients_on_one_array_restore_it_once_the_last_is_done():
    def inner(a):
        return np.sum(honest_double(a) * a)

    inner_grad = astgrad.grad(inner)

    def outer(a):
        inner_grad(a)  # a gradient running inside another on the same array
        return np.sum(honest_double(a) * a * a)

    outer_grad = astgrad.grad(outer)
    shared = np.array([1.0, 2.0, 3.0])
    errors, results = [], []

    def work():
        try:
            for _ in range(200):
                results.append(outer_grad(shared))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for r in results:
        np.testing.assert_allclose(r, 6.0 * shared ** 2)
    assert shared.flags.writeable and net.held_now() == 0


def test_a_function_whose_calls_only_read_runs_without_the_net():
    def f(x):
        y = np.dot(x, x) + math.log(3.0, 2.0) + np.sum(np.maximum(x, 0.0), axis=0)
        return np.sum(np.sin(x) * x) + y + len(x)

    generated = astgrad.grad(f)._generated
    assert generated.guarded is None and generated.run is generated.function


def test_a_call_that_may_write_puts_the_function_under_the_net():
    def through_a_primitive(x):
        return np.sum(honest_double(x) * x)

    def through_a_method_kept_in_a_name(x):
        describe = x.__repr__
        describe()
        return np.sum(x * x)

    for f in (through_a_primitive, through_a_method_kept_in_a_name):
        assert astgrad.grad(f)._generated.guarded is not None


def test_a_view_let_go_while_its_base_is_held_elsewhere_is_writeable_once_the_base_is():
    """Two running calls: one holds a base, the other a view of it (and so the base too)."""
    base = np.arange(4.0)
    view = base[1:]
    first, second = {}, {}
    net._collect(base, first)
    net._collect(view, second)
    held_base = net._hold(first.values())
    held_view = net._hold(second.values())
    assert not base.flags.writeable and not view.flags.writeable
    net._release(held_view)  # the view cannot be writeable while its base is read-only
    assert not view.flags.writeable and not base.flags.writeable
    net._release(held_base)
    assert base.flags.writeable and view.flags.writeable and net.held_now() == 0
