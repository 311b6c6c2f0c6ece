"""The source transformed is the source of the code that runs, or a located refusal.

Each test builds a way a user could get the gradient of some other code than
the one that runs (a neighbouring lambda, the function a decorator wraps, a
file edited since import, a notebook cell that reused a name) and asserts
the right number against a closed form, or the documented error.
"""

import functools
import importlib.util
import linecache
import os
import subprocess
import sys

import numpy as np
import pytest

import astgrad
from astgrad import TransformError, grad


# -- lambdas: told apart by line and column ---------------------------------

def test_two_lambdas_on_one_line_each_get_their_own_gradient():
    ga, gb = grad(lambda w: w * 2.0), grad(lambda w: w * 3.0)
    assert ga(1.0) == 2.0
    assert gb(1.0) == 3.0


def test_lambdas_with_the_same_parameters_in_one_expression():
    fs = [lambda w: np.sin(w), lambda w: w ** 3]
    assert grad(fs[0])(0.5) == pytest.approx(np.cos(0.5))
    assert grad(fs[1])(2.0) == pytest.approx(12.0)


def test_a_lambda_returned_by_a_lambda_is_the_inner_one():
    make = lambda k: lambda w: k * w * w  # noqa: E731
    inner = make(5.0)
    assert grad(inner)(1.5) == pytest.approx(15.0)


def test_a_lambda_after_else_on_one_line():
    if False:
        f = None
    else: f = lambda w: w * w * w  # noqa: E701, E731
    assert grad(f)(2.0) == pytest.approx(12.0)


def _apply(fn, x):
    return fn(x)


def test_a_lambda_spread_over_lines_inside_a_call():
    g = grad(
        lambda w:
            w * 4.0)
    assert g(3.0) == 4.0
    assert _apply(lambda w: w * 7.0, 1.0) == 7.0  # a neighbour on another line is not confused


class _Documented:
    def cube(self, x):
        note = """
a note at column 0, inside an indented method
"""
        return x * x * x


def test_text_at_column_zero_inside_an_indented_function():
    assert grad(_Documented().cube)(2.0) == pytest.approx(12.0)


def test_a_lambda_continued_left_of_its_first_line():
    g = grad(lambda w:
w * 6.0)  # noqa: E128
    assert g(1.0) == 6.0


def test_an_error_in_a_method_points_at_its_line_and_column():
    class Model:
        def loss(self, x):
            del self
            return x
    with pytest.raises(TransformError) as info:
        grad(Model().loss)
    assert info.value.lineno == Model.loss.__code__.co_firstlineno + 1
    assert info.value.source_line.strip() == "del self" and info.value.col == 12


# -- decorators: the wrapper that runs is differentiated --------------------

def _times_ten(fn):
    @functools.wraps(fn)
    def wrapper(x):
        return 10.0 * fn(x)
    return wrapper


def _by_args(fn):
    @functools.wraps(fn)
    def wrapper(*args):
        return 10.0 * fn(*args)
    return wrapper


@_times_ten
def scaled_square(x):
    return x * x


@_by_args
def square_through_args(x):
    return x * x


def test_a_wrapping_decorator_is_differentiated_as_it_runs():
    assert scaled_square(3.0) == 90.0
    assert grad(scaled_square)(3.0) == pytest.approx(60.0)  # d(10 x^2)/dx, not 2x


def test_a_wrapped_callee_is_differentiated_as_it_runs():
    def outer(x):
        return scaled_square(x) + x
    assert grad(outer)(3.0) == pytest.approx(61.0)


def test_the_wrapped_function_is_differentiated_when_asked_for():
    assert grad(scaled_square.__wrapped__)(3.0) == pytest.approx(6.0)


def test_a_wrapper_that_cannot_be_transformed_says_it_is_a_wrapper():
    with pytest.raises(TransformError) as info:
        grad(square_through_args)
    text = str(info.value)
    assert "wrapper a decorator put around square_through_args" in text
    assert "__wrapped__" in text
    assert info.value.filename == __file__
    assert "def wrapper(*args):" in info.value.source_line
    assert grad(square_through_args.__wrapped__)(3.0) == pytest.approx(6.0)


def test_a_signature_attribute_does_not_change_what_is_bound():
    def f(x, y):
        return x * y
    f.__signature__ = __import__("inspect").signature(lambda y, x: None)
    assert grad(f)(2.0, 5.0) == 5.0  # d(x*y)/dx with x=2, y=5: by f's own parameter order


# -- files edited after import, cells reusing a name -------------------------

def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _rewrite(path, text):
    stat = os.stat(path)
    path.write_text(text)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))


def test_a_module_edited_after_import_is_refused(tmp_path):
    path = tmp_path / "edited_after_import.py"
    path.write_text("def h(x):\n    return x * x\n")
    module = _import(path, "edited_after_import")
    _rewrite(path, "def h(x):\n    return x * x * x\n")
    with pytest.raises(TransformError, match="the source of h no longer matches the code that runs") as info:
        grad(module.h)
    assert "Reload the module" in str(info.value)
    assert info.value.filename == str(path) and info.value.lineno == 1
    fresh = _import(path, "edited_after_import")
    assert grad(fresh.h)(2.0) == pytest.approx(12.0)


def test_a_function_moved_down_by_an_edit_is_refused(tmp_path):
    path = tmp_path / "moved_by_edit.py"
    path.write_text("def h(x):\n    return x * x\n\n\ndef k(x):\n    return x * 5.0\n")
    module = _import(path, "moved_by_edit")
    _rewrite(path, "# a comment\ndef h(x):\n    return x * x\n\n\ndef k(x):\n    return x * 5.0\n")
    for fn in (module.h, module.k):
        with pytest.raises(TransformError, match="no longer matches"):
            grad(fn)


def test_an_edit_elsewhere_in_the_file_changes_nothing(tmp_path):
    path = tmp_path / "edited_elsewhere.py"
    path.write_text("def h(x):\n    return x * x\n\n\ndef k(x):\n    return x * 5.0\n")
    module = _import(path, "edited_elsewhere")
    _rewrite(path, "def h(x):\n    return x * x\n\n\ndef k(x):\n    return x * 6.0 + 1.0\n")
    assert grad(module.h)(3.0) == pytest.approx(6.0)
    with pytest.raises(TransformError, match="no longer matches"):
        grad(module.k)


@pytest.fixture
def cells():
    """exec a source registered in linecache under one name, as IPython registers cells."""
    names = []

    def run(source, filename="<cell reused>"):
        names.append(filename)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = {"np": np}
        exec(compile(source, filename, "exec"), namespace)
        return namespace

    yield run
    for filename in names:
        linecache.cache.pop(filename, None)


def test_an_earlier_cell_under_a_reused_name_is_refused(cells):
    first = cells("def c(x):\n    return x * 2.0\n")
    second = cells("def c(x):\n    return x * 5.0\n")
    with pytest.raises(TransformError, match="the source of c no longer matches"):
        grad(first["c"])
    assert grad(second["c"])(1.0) == 5.0


def test_swapped_lambdas_in_a_later_cell_never_get_the_neighbours_gradient(cells):
    # With columns, the lambda at ga's place in the new text is w * 3.0: refused. Without them (Python 3.10),
    # the lambda of the line that compiles to ga's code is found: the derivative of the code that runs.
    first = cells("ga, gb = (lambda w: w * 2.0), (lambda w: w * 3.0)\n")
    cells("ga, gb = (lambda w: w * 3.0), (lambda w: w * 2.0)\n")
    for fn, slope in ((first["ga"], 2.0), (first["gb"], 3.0)):
        try:
            assert grad(fn)(1.0) == slope
        except TransformError as exc:
            assert "no longer matches" in str(exc)


def test_lambdas_on_one_line_without_column_information(tmp_path):
    # -X no_debug_ranges: code objects record no columns, as on Python 3.10 (where the option does nothing)
    script = tmp_path / "lambdas.py"
    script.write_text(
        "import pathlib\n"
        "from astgrad import TransformError, grad\n"
        "fa, fb, fc, fd = (lambda w: w * 2.0), (lambda w: w * 3.0), (lambda w: w * 2.0), (lambda w: w * 5.0)\n"
        "make = lambda k: lambda w: k * w * w\n"
        "print(grad(fa)(1.0), grad(fb)(1.0), grad(fc)(1.0), grad(make(5.0))(1.5))\n"
        "path = pathlib.Path(__file__)\n"
        "path.write_text(path.read_text().replace('w * 5.0)', 'w * 5.5)'))  # edited since import\n"
        "try:\n"
        "    print(grad(fd)(1.0))\n"
        "except TransformError as exc:\n"
        "    print('refused' if 'no longer matches' in str(exc) else exc)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-X", "no_debug_ranges", str(script)], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["2.0", "3.0", "2.0", "15.0", "refused"], out.stderr


def test_a_cell_with_the_same_text_is_differentiated(cells):
    first = cells("def c(x):\n    return np.sin(x)\n")
    cells("def c(x):\n    return np.sin(x)\n")
    assert grad(first["c"])(0.3) == pytest.approx(np.cos(0.3))


def test_a_closure_and_a_method_in_a_cell_are_found(cells):
    namespace = cells(
        "def make(k):\n"
        "    def f(x):\n"
        "        return k * x * x\n"
        "    return f\n"
        "class Model:\n"
        "    __scale = 3.0\n"
        "    def loss(self, x):\n"
        "        return self.__scale * x\n")
    assert grad(namespace["make"](2.0))(1.5) == pytest.approx(6.0)
    assert grad(namespace["Model"].loss, wrt=1)(namespace["Model"](), 2.0) == pytest.approx(3.0)


def test_a_function_without_source_is_refused_with_its_location():
    namespace = {}
    exec(compile("def nowhere(x):\n    return x\n", "<no source>", "exec"), namespace)
    with pytest.raises(TransformError, match="cannot read the source of nowhere"):
        grad(namespace["nowhere"])


def test_replacing_code_differentiates_the_new_code():
    def f(x):
        return x * x

    def g(x):
        return x * x * x
    f.__code__ = g.__code__
    assert grad(f)(2.0) == pytest.approx(12.0)


def checked_square(x):
    assert x > 0, "positive inputs only"
    return x * x


def test_a_test_module_that_pytest_rewrote_is_matched_as_pytest_compiled_it():
    assert grad(checked_square)(3.0) == pytest.approx(6.0)  # pytest rewrote the assert above


def test_a_lambda_inside_an_assert_that_pytest_rewrote():
    assert grad(lambda w: w * w * 5.0)(1.0) == 10.0 and grad(lambda w: w * 3.0)(1.0) == 3.0


# -- defaults: read from the function object at each call -------------------

def test_defaults_reassigned_before_grad_are_used():
    def f(x, a=2.0):
        return a * x * x
    f.__defaults__ = (7.0,)
    assert grad(f)(1.0) == pytest.approx(14.0)
    assert grad(f, wrt="a")(3.0) == pytest.approx(9.0)


def test_defaults_reassigned_after_grad_are_used_at_the_next_call():
    def f(x, a=2.0):
        return a * x
    df = grad(f)
    assert df(1.0) == 2.0
    f.__defaults__ = (9.0,)
    assert df(1.0) == 9.0
    assert df(1.0, 4.0) == 4.0  # a given argument still wins


def test_keyword_defaults_reassigned_or_edited_in_place_are_used():
    def f(x, *, a=2.0):
        return a * x
    df = grad(f)
    f.__kwdefaults__ = {"a": 7.0}
    assert df(1.0) == 7.0
    f.__kwdefaults__["a"] = 5.0
    assert df(1.0) == 5.0


def test_a_default_given_to_a_parameter_that_had_none():
    def f(x, a=2.0):
        return a * x * x
    f.__defaults__ = (3.0, 10.0)  # now x defaults to 3.0 too, as Python binds it
    assert f() == 90.0
    assert grad(f)() == pytest.approx(60.0)


def test_a_missing_argument_is_a_type_error_naming_it():
    def f(x, a=2.0):
        return a * x
    f.__defaults__ = None
    with pytest.raises(TypeError, match="missing 1 required argument: 'a'"):
        grad(f)(1.0)


def _scaled(x, a=2.0):
    return a * x


def _capped(x, cap=np.inf):
    return np.minimum(x, cap)


def _keyword_scaled(x, *, a=2.0):
    return a * x


def test_a_callee_default_reassigned_before_the_transform_is_used():
    def outer(x):
        return _scaled(x) + _keyword_scaled(x) + _capped(x)
    saved = _scaled.__defaults__, _keyword_scaled.__kwdefaults__
    try:
        _scaled.__defaults__ = (7.0,)
        _keyword_scaled.__kwdefaults__ = {"a": -3.0}
        assert grad(outer)(1.0) == pytest.approx(7.0 - 3.0 + 1.0)
    finally:
        _scaled.__defaults__, _keyword_scaled.__kwdefaults__ = saved


def test_an_array_default_is_the_array_object():
    weights = np.array([1.0, 2.0, 3.0])

    def f(x, w=weights):
        return np.sum(w * x)
    weights[0] = 10.0  # the default is the object: Python sees the edit
    np.testing.assert_allclose(grad(f)(np.ones(3)), [10.0, 2.0, 3.0])


# -- bound methods, partials, callable objects: the bound arguments are constants

class Quadratic:
    def __init__(self, k):
        self.k = k
        self.__offset = 1.0

    def value(self, x, y):
        return self.k * x * x * y + self.__offset * y

    def __call__(self, x):
        return self.k * x ** 3

    @classmethod
    def scaled(cls, x):
        return cls.factor * x * x

    factor = 4.0


def test_a_bound_method_treats_self_as_a_constant_read_at_each_call():
    model = Quadratic(3.0)
    dvalue = grad(model.value)
    assert dvalue(2.0, 5.0) == pytest.approx(2 * 3.0 * 2.0 * 5.0)
    model.k = 10.0
    assert dvalue(2.0, 5.0) == pytest.approx(2 * 10.0 * 2.0 * 5.0)


def test_wrt_counts_the_parameters_a_bound_method_still_takes():
    model = Quadratic(3.0)
    assert grad(model.value, wrt=1)(2.0, 5.0) == pytest.approx(3.0 * 4.0 + 1.0)
    dx, dy = grad(model.value, wrt=("x", "y"))(2.0, 5.0)
    assert (dx, dy) == (pytest.approx(60.0), pytest.approx(13.0))
    with pytest.raises(ValueError, match="fixes 'self'"):
        grad(model.value, wrt="self")


def test_value_and_grad_and_vjp_of_a_bound_method():
    model = Quadratic(2.0)
    value, slope = astgrad.value_and_grad(model.value)(1.0, 3.0)
    assert (value, slope) == (pytest.approx(9.0), pytest.approx(12.0))
    assert astgrad.vjp(model.value)(1.0, 3.0, 2.0) == pytest.approx(24.0)


def test_a_staticmethod_from_a_class_dict_is_its_function():
    class Holder:
        @staticmethod
        def cube(x):
            return x * x * x
    assert grad(Holder.__dict__["cube"])(2.0) == pytest.approx(12.0)


def test_a_classmethod_binds_the_class():
    assert grad(Quadratic.scaled)(3.0) == pytest.approx(24.0)


def test_a_callable_object_is_its_call_method_bound():
    assert grad(Quadratic(2.0))(1.5) == pytest.approx(3 * 2.0 * 1.5 ** 2)


def _weighted(a, x, *, w=1.0):
    return a * w * x * x


def test_a_partial_fixes_its_arguments_as_constants():
    g = grad(functools.partial(_weighted, 3.0, w=2.0))  # wrt=0 is x: a is fixed
    assert g(1.5) == pytest.approx(2 * 3.0 * 2.0 * 1.5)
    assert g(1.5, w=1.0) == pytest.approx(2 * 3.0 * 1.5)  # a keyword a partial fixed may still be given
    assert grad(functools.partial(_weighted, w=2.0), wrt="w")(3.0, 1.5) == pytest.approx(3.0 * 1.5 ** 2)
    with pytest.raises(ValueError, match="fixes 'a'"):
        grad(functools.partial(_weighted, 3.0), wrt="a")


def test_a_partial_of_a_bound_method():
    g = grad(functools.partial(Quadratic(3.0).value, y=5.0))
    assert g(2.0) == pytest.approx(60.0)


@pytest.mark.parametrize("given, named", [
    (np.sin, "ufunc sin"), (Quadratic, "the class Quadratic"), (len, "builtin_function_or_method len"),
    (np.ones(3).sum, "builtin_function_or_method ndarray.sum"), (3.0, "float object 3.0")])
def test_what_is_not_python_code_is_a_type_error_saying_what_was_given(given, named):
    with pytest.raises(TypeError, match=f"it was given a {named}|it was given {named}"):
        grad(given)


# -- names: what a user sets as a name cannot become code -------------------

def test_a_qualname_with_a_line_break_stays_in_its_comment():
    def f(x):
        return x * x
    f.__qualname__ = 'x");\nimport os; os.environ["ASTGRAD_INJECTED"] = "1"; ("'
    f.__name__ = "x\nimport os"
    g = grad(f)
    assert g(3.0) == 6.0
    tree = __import__("ast").parse(g.source)
    assert [type(node).__name__ for node in tree.body] == ["FunctionDef"]  # nothing but the adjoint
    assert "ASTGRAD_INJECTED" not in os.environ
    assert "\n" not in g._generated.filename


def test_names_that_are_not_identifiers_give_identifiers():
    def helper(x):
        return x * x * x

    def f(x):
        return helper(x) * 2.0
    f.__name__ = "f\u00b2 \u00e9"  # a superscript two is alphanumeric but no identifier character
    helper.__name__ = "class"
    assert grad(f)(1.0) == pytest.approx(6.0)
