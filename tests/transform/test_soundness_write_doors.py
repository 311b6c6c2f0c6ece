"""numpy's write doors other than ``out=``: each exact, or refused at the user's line.

A ufunc's outputs by position and its methods' own ``out``, flags that let
numpy write into an argument (``overwrite_input=True``, ``copy=False``),
bound methods kept in names, ``exec``/``eval``, and objects reached other
than by a name (``globals()``, ``vars()``, ``sys.modules``, a default
argument, what a call returns), in the function and in the helpers it
calls.  Before these were read from numpy, each gave a silently wrong
gradient.  Values are checked against numpy's own run and central
differences; refusals must name this file and the user's line.
"""

import sys

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import TransformError
from _numeric import numeric_grad

X = np.array([0.3, -0.2, 0.5, 1.1])
C = np.array([4.0, 1.0, 3.0, 2.0])
M = np.outer(np.arange(1.0, 5.0), np.arange(1.0, 5.0)) / 7.0
SCALE = 2.0
HERE = "test_soundness_write_doors.py:"


@pytest.fixture(autouse=True)
def _reset_globals():
    global SCALE
    C[:] = [4.0, 1.0, 3.0, 2.0]
    SCALE = 2.0
    yield
    C[:] = [4.0, 1.0, 3.0, 2.0]
    SCALE = 2.0


def _matches_numpy(fn, x=X):
    expected = fn(x.copy())
    C[:] = [4.0, 1.0, 3.0, 2.0]
    given = x.copy()
    value, grad = astgrad.value_and_grad(fn)(given)
    np.testing.assert_allclose(value, expected, rtol=1e-12)

    def fresh(v):
        C[:] = [4.0, 1.0, 3.0, 2.0]
        return fn(v)

    np.testing.assert_allclose(grad, numeric_grad(fresh, [x.copy()], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(given, x)


def _refused_here(fn, *words):
    """Refused when transformed, or when the gradient runs, naming this file and the user's line."""
    with pytest.raises((TransformError, TypeError)) as info:
        astgrad.grad(fn)(X.copy())
    text = str(info.value) + "\n".join(getattr(info.value, "__notes__", []))
    assert HERE in text, text
    for word in words:
        assert word in text, text
    return text


# -- a ufunc's outputs by position, its methods' own out -------------------------------------------------------


def maximum_into_its_input(x):
    a = x * 1.0
    np.maximum(a, 0.0, a)
    return np.sum(a * x)


def add_into_a_third(x):
    y = x * 2.0
    z = np.zeros(4)
    np.add(x, y, z)
    return np.sum(z * x)


def reduce_of_a_constant_by_position(x):
    y = np.zeros(4)
    np.add.reduce(M, 0, None, y)
    return np.sum(y * x)


def accumulate_of_a_constant_by_position(x):
    y = np.zeros(4)
    np.multiply.accumulate(C, 0, None, y)
    return np.sum(y * x)


@pytest.mark.parametrize("fn", [maximum_into_its_input, add_into_a_third, reduce_of_a_constant_by_position,
                                accumulate_of_a_constant_by_position])
def test_positional_outputs_are_the_writes_they_stand_for(fn):
    _matches_numpy(fn)


def reduce_into_y_by_position(x):
    y = np.zeros(())
    np.add.reduce(x * x, 0, None, y)
    return float(y) * 1.0


def reduce_rows_by_position(x):
    y = np.zeros(4)
    np.add.reduce(np.outer(x, x), 0, None, y)
    return np.sum(y * x)


def accumulate_by_position(x):
    y = np.zeros(4)
    np.add.accumulate(x * x, 0, None, y)
    return np.sum(y * x)


def reduceat_by_position(x):
    y = np.zeros(2)
    np.add.reduceat(x * x, [0, 2], 0, None, y)
    return np.sum(y * y)


def reduce_into_a_global(x):
    y = C * x
    np.add.accumulate(np.ones(4), 0, None, C)
    return np.sum(y * y)


@pytest.mark.parametrize("fn", [reduce_into_y_by_position, reduce_rows_by_position, accumulate_by_position,
                                reduceat_by_position, reduce_into_a_global])
def test_a_ufunc_methods_positional_out_is_seen(fn):
    _refused_here(fn)


# -- flags: overwrite_input, copy=False ----------------------------------------------------------------------


def median_overwrites_a_local_read_before(x):
    c = C * 1.0
    y = c * x
    m = np.median(c, overwrite_input=True)
    return np.sum(y * y) + m


def percentile_overwrites_a_global(x):
    y = C * x
    m = np.percentile(C, 50.0, overwrite_input=True)
    return np.sum(y * y) + m


def quantile_overwrites_by_position(x):
    c = C * 1.0
    y = c * x
    m = np.quantile(c, 0.5, None, None, True)
    return np.sum(y * y) + m


@pytest.mark.parametrize("fn", [median_overwrites_a_local_read_before, percentile_overwrites_a_global,
                                quantile_overwrites_by_position])
def test_overwrite_input_on_a_name_is_refused(fn):
    _refused_here(fn, "in any order", ".copy()")


def median_overwrites_a_new_array(x):
    m = np.median(C * 1.0, overwrite_input=True)
    n = np.nanmedian(C.copy(), overwrite_input=True)
    return np.sum(x * x) * m + n


def overwrite_input_false(x):
    c = C * 1.0
    y = c * x
    return np.sum(y * y) + np.median(c, overwrite_input=False)


def nan_to_num_in_place(x):
    a = np.where(x > 0.0, x, np.nan)
    b = np.nan_to_num(a, copy=False)
    return np.sum(np.where(np.isnan(a), 1.0, a) * x) + np.sum(b * b)


def nan_to_num_copy_none_in_place(x):
    a = np.where(x > 0.0, x, np.nan)
    np.nan_to_num(a, copy=None)
    return np.sum(np.where(np.isnan(a), 1.0, a) * x)


@pytest.mark.parametrize("fn", [median_overwrites_a_new_array, overwrite_input_false, nan_to_num_in_place,
                                nan_to_num_copy_none_in_place])
def test_flags_are_exact_where_nothing_else_sees_the_array(fn):
    _matches_numpy(fn)


def nan_to_num_of_the_argument(x):
    b = np.nan_to_num(x, copy=False)
    return np.sum(b * x)


def test_copy_false_into_the_argument_is_refused():
    _refused_here(nan_to_num_of_the_argument, "caller's array x", "x = x.copy()")


# -- bound methods, exec, eval, globals(), vars(), sys.modules in the function -------------------------------


def fill_kept_in_a_name(x):
    a = x * 1.0
    fill = a.fill
    fill(0.0)
    return np.sum(a * x)


def sort_of_a_global_kept_in_a_name(x):
    y = C * x
    s = C.sort
    s()
    return np.sum(y * y)


def exec_writes(x):
    a = x * 1.0
    exec("a[0] = 7.0")
    return np.sum(a * x)


def eval_writes(x):
    a = x * 1.0
    eval("a.fill(2.0)")
    return np.sum(a * x)


def globals_updated(x):
    y = SCALE * x
    globals().update(SCALE=5.0)
    return np.sum(y * y)


def vars_of_the_module(x):
    y = C * x
    vars(sys.modules[__name__])["C"][0] = 5.0
    return np.sum(y * y)


def through_sys_modules(x):
    y = C * x
    sys.modules[__name__].C.fill(5.0)
    return np.sum(y * y)


@pytest.mark.parametrize("fn, word", [(fill_kept_in_a_name, "a.fill"), (sort_of_a_global_kept_in_a_name, "C.sort"),
                                      (exec_writes, "exec"), (eval_writes, "eval"), (globals_updated, "globals()"),
                                      (vars_of_the_module, ""), (through_sys_modules, "sys.modules")])
def test_doors_the_analysis_cannot_follow_are_refused_in_the_function(fn, word):
    _refused_here(fn, word)


# -- writes into what a call returns, when it is a view ---------------------------------------------------------


def fill_a_reshape(x):
    a = x * 1.0
    a.reshape(-1).fill(0.0)
    return np.sum(a * x)


def fill_asarray(x):
    a = x * 1.0
    np.asarray(a).fill(1.0)
    return np.sum(a * x)


def out_into_a_reshape(x):
    a = x * 1.0
    np.multiply(x, 3.0, out=a.reshape(-1))
    return np.sum(a * x)


def item_of_a_transpose(x):
    a = np.outer(x, x)
    a.T[0] = 1.0
    return np.sum(a * a)


def reshape_named_then_filled(x):
    a = x * 1.0
    b = a.reshape(-1)
    b.fill(0.0)
    return np.sum(a * x)


@pytest.mark.parametrize("fn", [fill_a_reshape, fill_asarray, out_into_a_reshape, item_of_a_transpose,
                                reshape_named_then_filled])
def test_writes_into_a_view_a_call_returns_are_refused(fn):
    _refused_here(fn)


# -- helpers run as written, writing through each door -----------------------------------------------------


def _fill_asarray(p):
    np.asarray(p).fill(0.0)


def _maximum_into(p):
    np.maximum(p, 0.0, p)


def _fill_kept(p):
    f = p.fill
    f(0.0)


def _nan_to_num_in_place(p):
    np.nan_to_num(p, copy=False)


def _median_overwrites(p):
    np.median(p, overwrite_input=True)


def _cumsum_into(p):
    p.cumsum(0, None, p)


def given_helper(helper):
    def f(x):
        a = x * 1.0
        helper(a)
        return np.sum(a * x)
    f.__name__ = f"given_{helper.__name__}"
    return f


@pytest.mark.parametrize("helper", [_fill_asarray, _maximum_into, _fill_kept, _nan_to_num_in_place,
                                    _median_overwrites, _cumsum_into])
def test_a_helper_writing_into_what_it_is_given_is_refused(helper):
    _refused_here(given_helper(helper), "may change it", helper.__name__)


def _globals_item():
    globals()["C"][0] = 5.0


def _sys_modules_item():
    sys.modules[__name__].C[0] = 5.0


def _returns_c():
    return C


def _call_result_item():
    _returns_c()[0] = 5.0


def _call_result_fill():
    _returns_c().fill(5.0)


def _exec_item():
    exec("C[0] = 5.0")


def _default_item(buf=C):
    buf[0] = 5.0


def _bound_fill():
    f = C.fill
    f(5.0)


def _positional_out():
    np.multiply(C, 2.0, C)


def _vars_item():
    vars(sys.modules[__name__])["C"][0] = 5.0


def _asarray_fill():
    np.asarray(C).fill(5.0)


def _median_of_global():
    np.median(C, overwrite_input=True)


CACHE = {"k": C}
LOG = {}


def _cached():
    return CACHE.get("k")


def _cached_item():
    _cached()[0] = 5.0


def reads_then_calls(helper):
    def f(x):
        y = C * x
        helper()
        return np.sum(y * y)
    f.__name__ = f"reads_then_{helper.__name__}"
    return f


@pytest.mark.parametrize("helper", [_globals_item, _sys_modules_item, _call_result_item, _call_result_fill,
                                    _exec_item, _default_item, _bound_fill, _positional_out, _vars_item,
                                    _asarray_fill, _median_of_global, _cached_item])
def test_a_helper_writing_into_a_global_through_any_door_is_refused(helper):
    _refused_here(reads_then_calls(helper), helper.__name__)
    np.testing.assert_array_equal(C, [4.0, 1.0, 3.0, 2.0])  # refused before the helper ran: nothing written


def _rebinds_scale():
    globals()["SCALE"] = 10.0


def scale_rebound_by_a_helper(x):
    y = x * SCALE
    _rebinds_scale()
    return np.sum(y * y * SCALE)


def test_a_helper_rebinding_a_global_through_globals_is_refused():
    _refused_here(scale_rebound_by_a_helper, "_rebinds_scale", "globals()")


def _default_untouched(v, buf=C):
    return buf[0] + v


def _default_counter(log=[]):  # noqa: B006 -- the pattern under test
    log.append(1)


def helpers_that_write_nothing_of_the_gradients(x):
    y = C * x
    _default_untouched(1.0)
    _default_counter()
    return np.sum(y * y)


def test_defaults_that_are_not_written_or_hold_no_array_still_run():
    _matches_numpy(helpers_that_write_nothing_of_the_gradients)


def _new_list():
    return []


def _log_into_fresh_and_setdefault():
    _new_list().append(1.0)
    LOG.setdefault("calls", []).append(1)


def logs_through_call_results(x):
    y = C * x
    _log_into_fresh_and_setdefault()
    return np.sum(y * y)


def test_writes_into_what_calls_return_run_where_they_reach_no_array():
    _matches_numpy(logs_through_call_results)
    LOG.clear()
    astgrad.grad(logs_through_call_results)(X.copy())
    assert LOG["calls"] == [1]  # run as written, once


def _sorts(p, q):
    p.sort()


def gives_a_view_to_a_sorting_helper(x):
    a = x * 1.0
    _sorts(a[::-1], x)
    return np.sum(a * x)


def test_the_refusal_names_the_argument_as_written():
    _refused_here(gives_a_view_to_a_sorting_helper, "_sorts(...) is given a[::-1]", "p.sort()")


def _keeps_the_fill_of_a_result():
    w = _returns_c().fill
    w(5.0)


def test_a_helper_keeping_a_method_of_a_call_result_is_refused():
    _refused_here(reads_then_calls(_keeps_the_fill_of_a_result), "_keeps_the_fill_of_a_result")
    np.testing.assert_array_equal(C, [4.0, 1.0, 3.0, 2.0])


RNG = np.random.default_rng(0)


def random_into_a_copy(x):
    a = x.copy()
    np.random.default_rng(0).random(out=a)
    return np.sum(a * x)


def normal_into_a_global_generator_by_position(x):
    a = x * 2.0
    RNG.standard_normal(None, np.float64, a)
    return np.sum(a * x)


@pytest.mark.parametrize("fn", [random_into_a_copy, normal_into_a_global_generator_by_position])
def test_a_random_generators_out_sets_the_shape_and_is_refused(fn):
    # a[...] = rng.random() would broadcast one draw where numpy draws one per element
    _refused_here(fn, "out")


try:
    import scipy.linalg as scipy_linalg
except ImportError:  # scipy is an optional extra
    scipy_linalg = None


def solve_overwriting_a_matrix_read_before(x):
    a = M + np.eye(4)
    y = a @ x
    z = scipy_linalg.solve(a, np.ones(4), overwrite_a=True)
    return np.sum(y * y) + np.sum(z)


@pytest.mark.skipif(scipy_linalg is None, reason="scipy is not installed")
def test_another_librarys_flags_are_read_from_its_signature():
    _refused_here(solve_overwriting_a_matrix_read_before, "overwrite_a=True", "in any order")


def _returns_box(buf=C):
    return buf


def generator_writes_into_what_a_call_returns(x):
    y = C * x
    np.random.default_rng(1).standard_normal(None, np.float64, _returns_box())
    return np.sum(y * y)


def generator_writes_into_a_view_of_what_a_call_returns(x):
    y = C * x
    rows = _returns_box()[::-1]
    np.random.default_rng(1).standard_normal(None, np.float64, rows)
    return np.sum(y * y)


@pytest.mark.parametrize("fn", [generator_writes_into_what_a_call_returns,
                                generator_writes_into_a_view_of_what_a_call_returns])
def test_a_method_of_an_unknown_object_writing_into_a_call_result_is_refused(fn):
    # found by tests/corpus/test_door_programs.py: the Generator's positional out was C itself
    _refused_here(fn, "standard_normal")
    np.testing.assert_array_equal(C, [4.0, 1.0, 3.0, 2.0])


class _Holder:
    def __init__(self, arr):
        self.arr = arr

    @property
    def data(self):
        return self.arr


HOLDER = _Holder(C)


def generator_writes_into_a_property(x):
    y = C * x
    np.random.default_rng(1).standard_normal(None, np.float64, HOLDER.data)
    return np.sum(y * y)


def generator_writes_into_a_row_of_a_global(x):
    y = C * x
    np.random.default_rng(1).standard_normal(None, np.float64, C[1:3])
    return np.sum(y * y)


@pytest.mark.parametrize("fn", [generator_writes_into_a_property, generator_writes_into_a_row_of_a_global])
def test_a_method_of_an_unknown_object_writing_into_a_globals_part_is_refused(fn):
    _refused_here(fn, "standard_normal")
    np.testing.assert_array_equal(C, [4.0, 1.0, 3.0, 2.0])


def _generator_into_a_call_result():
    np.random.default_rng(1).random(out=_returns_c())


def _generator_into_a_call_result_by_position():
    np.random.default_rng(1).standard_normal(None, np.float64, _returns_c())


@pytest.mark.parametrize("helper", [_generator_into_a_call_result, _generator_into_a_call_result_by_position])
def test_a_helper_giving_a_call_result_to_an_unknown_method_is_refused(helper):
    # found by tests/corpus/test_door_programs.py --runslow
    _refused_here(reads_then_calls(helper), helper.__name__)
    np.testing.assert_array_equal(C, [4.0, 1.0, 3.0, 2.0])
