"""The public API: wrt forms, results, caching, source, tracebacks, Tensors."""

import linecache
import os
import pathlib
import subprocess
import sys
import textwrap
import traceback

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

X = np.array([0.3, -0.2, 0.5])


def two(a, b):
    return np.sum(a * a * b)


def test_wrt_by_position_name_and_tuple():
    b = np.array([1.0, 2.0, 3.0])
    np.testing.assert_allclose(astgrad.grad(two)(X, b), 2 * X * b)
    np.testing.assert_allclose(astgrad.grad(two, wrt="b")(X, b), X * X)
    ga, gb = astgrad.grad(two, wrt=(0, "b"))(X, b)
    np.testing.assert_allclose(ga, 2 * X * b)
    np.testing.assert_allclose(gb, X * X)
    (only,) = astgrad.grad(two, wrt=(1,))(X, b)
    np.testing.assert_allclose(only, X * X)


@pytest.mark.parametrize("wrt, error", [(5, ValueError), ("c", ValueError), (1.5, TypeError), ((0, 0), ValueError)])
def test_bad_wrt(wrt, error):
    with pytest.raises(error):
        astgrad.grad(two, wrt=wrt)


def test_preserve_result_and_value_and_grad():
    b = np.array([1.0, 2.0, 3.0])
    g, value = astgrad.grad(two, preserve_result=True)(X, b)
    assert value == pytest.approx(two(X, b))
    np.testing.assert_allclose(g, 2 * X * b)
    value, g = astgrad.value_and_grad(two, wrt=1)(X, b)
    assert value == pytest.approx(two(X, b))
    np.testing.assert_allclose(g, X * X)


def elementwise(x, w):
    return np.sin(x) * w


def test_vjp_of_a_non_scalar_function():
    w = np.array([2.0, -1.0, 0.5])
    seed = np.array([1.0, 0.1, 0.01])
    g = astgrad.vjp(elementwise)(X, w, seed)
    np.testing.assert_allclose(g, np.cos(X) * w * seed)
    gx, gw = astgrad.vjp(elementwise, wrt=(0, 1))(X, w, seed)
    np.testing.assert_allclose(gw, np.sin(X) * seed)
    expected = numeric_grad(lambda v: np.sum(elementwise(v, w) * seed), [X], 0)
    np.testing.assert_allclose(gx, expected, rtol=1e-6)


def test_decorator_forms():
    @astgrad.grad
    def f(x):
        return x * x

    @astgrad.grad(wrt=(0, 1))
    def h(x, y):
        return x * y

    assert f(3.0) == 6.0
    assert h(2.0, 5.0) == (5.0, 2.0)
    assert f.__wrapped__(3.0) == 9.0


def test_cached_per_function_and_options():
    assert astgrad.grad(two) is astgrad.grad(two)
    assert astgrad.grad(two, wrt=1) is not astgrad.grad(two)
    assert astgrad.grad(two, preserve_result=True) is not astgrad.grad(two)


def test_redefinition_gives_a_fresh_transform():
    def f(x):
        return x * 2.0
    g1 = astgrad.grad(f)

    def f(x):  # noqa: F811
        return x * 3.0
    g2 = astgrad.grad(f)
    assert g1 is not g2 and g1(1.0) == 2.0 and g2(1.0) == 3.0


def scaled(x):
    return x * 2.0


def calls_scaled(x):
    return scaled(x) * x


def test_rebinding_a_called_helper_gives_a_fresh_transform(monkeypatch):
    g1 = astgrad.grad(calls_scaled)
    assert g1(3.0) == 12.0                          # d(2x * x) = 4x
    assert astgrad.grad(calls_scaled) is g1         # cached while nothing changed

    def tripled(x):
        return x * 3.0
    monkeypatch.setitem(globals(), "scaled", tripled)
    assert calls_scaled(3.0) == 27.0
    g2 = astgrad.grad(calls_scaled)
    assert g2 is g1 and g2(3.0) == 18.0             # transformed again in place: d(3x * x) = 6x
    assert "forward_tripled" in g2.source
    assert astgrad.grad(calls_scaled) is g2


def test_a_cached_grad_costs_almost_nothing(monkeypatch):
    """Counted, not timed: asking again, and calling, never transforms or compiles."""
    from astgrad.api import gradient
    g = astgrad.grad(calls_scaled)
    expected = g(3.0)
    assert g._entry is not gradient.GradientFunction._call_general  # the entry compiled for this signature
    work = []

    def counted(name, real):
        def wrapper(*args, **kwargs):
            work.append(name)
            return real(*args, **kwargs)
        return wrapper
    monkeypatch.setattr(gradient, "build", counted("build", gradient.build))
    monkeypatch.setattr(gradient, "compile_source", counted("compile", gradient.compile_source))
    monkeypatch.setattr(gradient.GradientFunction, "_rebuild", counted("rebuild", gradient.GradientFunction._rebuild))
    monkeypatch.setattr(gradient.GradientFunction, "__init__", counted("new", gradient.GradientFunction.__init__))
    for _ in range(1000):
        assert astgrad.grad(calls_scaled) is g
        assert g(3.0) == expected
    assert work == []


def tutorial(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


def test_source_names_lines_and_shows_inline_math(capsys):
    g = astgrad.grad(tutorial)
    src = g.source  # its layout is pinned by tests/golden/tutorial.py
    assert "# grad of line 145: z = y * y * 3" in src  # this file's line, quoted
    assert g.__wrapped__ is tutorial
    astgrad.show(tutorial)
    assert capsys.readouterr().out.strip() == src.strip()


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_source_is_byte_identical_in_a_fresh_process():
    code = textwrap.dedent("""
        import sys
        import test_grad_api, astgrad
        sys.stdout.write(astgrad.grad(test_grad_api.tutorial).source)
    """)
    here = pathlib.Path(__file__).parent  # the child imports this file as test_grad_api, as pytest does
    paths = [str(here), str(here.parent), os.environ.get("PYTHONPATH")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out == astgrad.grad(tutorial).source


def fragile_vjp(g, ans, x):
    return g / 0.0


def uses_fragile(x):
    return fragile(x) * 2.0


def fragile(x):  # made a primitive with a failing rule inside the test
    return x * 1.0


def test_traceback_shows_the_generated_line(isolated_rules, monkeypatch):
    primitive = astgrad.primitive(fragile)
    astgrad.defvjp(primitive, fragile_vjp)
    monkeypatch.setitem(globals(), "fragile", primitive)
    g = astgrad.grad(uses_fragile)
    with pytest.raises(ZeroDivisionError) as info:
        g(1.0)
    text = "".join(traceback.format_exception(info.value))
    assert "dt1 / 0.0" in text
    filename = g._generated.filename
    assert any("dt1 / 0.0" in line for line in linecache.getlines(filename))


def sum_of_products(ws, x):
    return np.sum(ws[0] * ws[1] * x)


def test_a_list_as_wrt_argument_gets_a_list_gradient():
    ws = [np.array([1.0, 2.0]), np.array([3.0, 4.0])]
    got = astgrad.grad(sum_of_products)(ws, X[:2])
    assert type(got) is list and len(got) == 2
    np.testing.assert_allclose(got[0], ws[1] * X[:2])  # d/dws[0] sum(ws[0] * ws[1] * x), by hand
    np.testing.assert_allclose(got[1], ws[0] * X[:2])
    got = astgrad.grad(sum_of_products, wrt=1)(ws, X[:2])  # a list that is not differentiated is fine
    np.testing.assert_allclose(got, ws[0] * ws[1])


@pytest.mark.optimize(2)  # reads the source level 2 writes
def test_pdb_steps_through_the_generated_adjoint():
    import io
    import pdb
    g = astgrad.grad(tutorial)
    x = np.array([1.0, 2.0, 3.0])
    g(x)  # the adjoint for a 1-d x, which the calls below run
    lines = linecache.getlines(g._generated.filename)
    first_adjoint = next(i for i, line in enumerate(lines, 1) if line.strip().startswith("dz = "))
    out = io.StringIO()
    debugger = pdb.Pdb(stdin=io.StringIO("continue\nnext\nnext\np dz\ncontinue\n"), stdout=out, nosigint=True)
    debugger.use_rawinput = False
    assert debugger.set_break(g._generated.filename, first_adjoint) is None
    got = debugger.runcall(g, x)
    np.testing.assert_allclose(got, numeric_grad(tutorial, (x,), 0), rtol=1e-6)
    text = out.getvalue()
    shown = [line[3:] for line in text.splitlines() if line.startswith("-> ")]
    assert shown[1:4] == ["dz = dresult / x.size", "dx = 6 * dz * y", "return dx"], text
    assert "(Pdb) 0.3333333333333333" in text  # p dz: 1 / x.size, a number until dx = 6 * dz * y


def test_each_variant_has_its_own_linecache_entry():
    sources = {}
    for g in (astgrad.grad(two), astgrad.grad(two, wrt=1), astgrad.vjp(two), astgrad.value_and_grad(two)):
        sources[g._generated.filename] = g.source
        assert "".join(linecache.getlines(g._generated.filename)) == g.source
    assert len(sources) == 4


def test_tensor_input_matches_backward():
    x = astgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    g = astgrad.grad(tutorial)(x)
    out = tutorial(x)
    out.backward()
    assert isinstance(g, astgrad.Tensor)
    np.testing.assert_allclose(g.numpy(), x.grad.numpy())
    np.testing.assert_allclose(g.numpy(), [6.0, 8.0, 10.0])


def stop_gradients(x):
    c = x.detach()
    with astgrad.no_grad():
        d = x * 3.0
    return np.sum(x * c + d * x)


def test_detach_and_no_grad_are_constants_in_both_engines():
    xv = np.array([0.5, -1.0, 2.0])
    g = astgrad.grad(stop_gradients)(xv)
    # c and d are constants: d/dx (x*c + d*x) = c + d = x + 3x
    np.testing.assert_allclose(g, xv + 3 * xv)
    t = astgrad.tensor(xv, requires_grad=True)
    stop_gradients(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), g)
