"""Item and slice writes in loops: the reverse sweep gets what it reads, and only that is saved.

``u[1:-1] = ...`` in a loop saves ``u`` before the write; when nothing in the
reverse sweep reads a restored ``u`` but for its shape, the stack keeps the
shape (optimize=2), so a loop of n writes saves n shapes, not n arrays.
Where the reverse sweep does read the old values (a value read after the
write, in the same or a later step), only the overwritten values are saved
(``overwritten(y, i)``) and written back into a copy of the array the
reverse sweep holds (``restored``). Every
program here is checked against central differences at each level, and
through the hessian (forward over the generated gradient).
"""


import numpy as np
import pytest

import astgrad
from _memory import peak as _peak
from _numeric import gradient

LEVELS = (0, 1, 2)
RNG = np.random.default_rng(7)
X = RNG.random(6) + 0.5


def heat(u):
    u = u.copy()
    for t in range(4):
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
    return np.sum(u ** 2)


def nonlinear_stencil(u):
    u = u * 1.0
    for t in range(3):
        u[1:-1] = u[1:-1] + 0.2 * u[1:-1] * (u[2:] - u[:-2])
    return np.sum(u * u)


def accumulate(x):
    y = np.zeros(x.shape[0])
    for i in range(x.shape[0]):
        y[i] += 0.5 * x[i] * x[i]
    return np.sum(y * y)


def read_after_write(x):
    y = x * 1.0
    s = 0.0
    for i in range(1, x.shape[0]):
        y[i] = x[i] * y[i - 1]
        s = s + np.sum(y * x)
    return s + np.sum(y)


def read_before_write(x):
    y = x * 1.0
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sum(y * y)
        y[i] = np.sin(x[i]) * y[i]
    return s


def read_whole_array_after_loop_step(x):
    y = x * 1.0
    for i in range(3):
        y[1:] = y[1:] * x[:-1]
        y = y * y
    return np.sum(y)


def repeated_fancy(x):
    y = x * 1.0
    idx = np.array([0, 0, 2])
    for t in range(3):
        y[idx] += x[:3] * y[3:]
        y[idx] = y[idx] * x[1:4]
    return np.sum(y * y)


def boolean_mask(x):
    y = x * 1.0
    mask = x > 0.9
    for t in range(3):
        y[mask] = y[mask] * x[mask]
        y[~mask] += 0.3 * y[~mask]
    return np.sum(y * y)


def nested_loops(x):
    y = np.outer(x, x)
    for i in range(y.shape[0]):
        for j in range(i):
            y[i, j] = y[i, j] * x[j] + y[j, i]
    return np.sum(y * y)


def while_loop(u):
    u = u.copy()
    t = 0.0
    while t < 0.35:
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
        t = t + 0.1
    return np.sum(u ** 3)


def branch_in_loop(x):
    y = x * 0.0
    for i in range(x.shape[0]):
        if x[i] > 1.0:
            y[i] = x[i] ** 2
        else:
            y[i] += np.sum(y) * x[i]
    return np.sum(y * x)


def with_break(x):
    y = x * 1.0
    for i in range(x.shape[0]):
        if y[i] > 1.3:
            break
        y[i:] = y[i:] * x[i]
    return np.sum(y * y)


def fancy_read_each_step(x):
    y = x * 1.0
    idx = np.array([0, 0, 2])
    s = 0.0
    for t in range(3):
        y[idx] += x[:3] * y[3:]
        s = s + np.sum(y * y * x)
        y[idx] = y[idx] * x[1:4]
    return s + np.sum(y)


def mask_read_each_step(x):
    y = x * 1.0
    mask = x > 0.9
    s = 0.0
    for t in range(3):
        y[mask] = y[mask] * x[mask]
        s = s + np.sum(np.sin(y))
    return s


def nested_read_each_step(x):
    y = np.outer(x, x)
    s = 0.0
    for i in range(y.shape[0]):
        for j in range(i):
            y[i, j] = y[i, j] * x[j] + y[j, i]
        s = s + np.sum(y @ x)
        y[i, :i] = np.tanh(y[i, :i])
    return s + np.sum(y * y)


def while_read_each_step(u):
    u = u.copy()
    t = 0.0
    s = 0.0
    while t < 0.35:
        u[1:-1] = u[1:-1] + 0.1 * (u[2:] - 2 * u[1:-1] + u[:-2])
        s = s + np.sum(u ** 3)
        t = t + 0.1
    return s


def _step(u):
    u = u.copy()
    u[1:-1] = u[1:-1] + 0.1 * u[1:-1] * (u[2:] - u[:-2])
    return u


def through_a_callee(u):
    for t in range(3):
        u = _step(u)
    return np.sum(u * u)


PROGRAMS = [heat, nonlinear_stencil, accumulate, read_after_write, read_before_write,
            read_whole_array_after_loop_step, repeated_fancy, boolean_mask, nested_loops, while_loop,
            branch_in_loop, with_break, through_a_callee,
            fancy_read_each_step, mask_read_each_step, nested_read_each_step, while_read_each_step]


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("f", PROGRAMS, ids=lambda f: f.__name__)
def test_gradient_matches_central_differences(f, level):
    expected = gradient(f, X.copy())
    x = X.copy()
    got = astgrad.grad(f, optimize=level)(x)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(x, X)  # the caller's array is left as it was
    again = astgrad.grad(f, optimize=level)(X.copy())  # a second call starts from a fresh stack
    np.testing.assert_allclose(again, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.sweep(3)
@pytest.mark.parametrize("f", [heat, accumulate, read_after_write, repeated_fancy, boolean_mask, while_loop,
                               branch_in_loop, with_break, through_a_callee,
            fancy_read_each_step, mask_read_each_step, nested_read_each_step, while_read_each_step], ids=lambda f: f.__name__)
def test_hessian_matches_differences_of_the_gradient(f):
    g = astgrad.grad(f, optimize=0)
    n = X.size
    expected = np.stack([gradient(lambda x: g(x)[j], X.copy(), eps=1e-5) for j in range(n)])
    for level in LEVELS:
        np.testing.assert_allclose(astgrad.hessian(f, optimize=level)(X.copy()), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f, name", [(heat, "u"), (accumulate, "y"), (while_loop, "u"), (with_break, "y")])
def test_a_write_read_back_only_for_its_shape_saves_the_shape(f, name):
    source = astgrad.grad(f).sources["any"]  # the general adjoint: ranks not known
    assert f"_stack.append({name})" not in source
    assert f"only_shape({name})" in source


@pytest.mark.parametrize("f", [heat, while_loop], ids=lambda f: f.__name__)
def test_a_write_into_an_array_of_one_shape_saves_nothing_once_its_rank_is_given(f):
    """``u = u.copy(); u[1:-1] = ...``: a write keeps the array's rank (front/ranks.py) and so its shape
    (fixed_shapes.py): the adjoint specialised on the argument's rank reads the shape of the last ``u``."""
    g = astgrad.grad(f)
    np.testing.assert_allclose(g(X.copy()), gradient(f, X.copy()), rtol=1e-5, atol=1e-6)
    assert "only_shape(u)" not in g.source and "_stack.append(u)" not in g.source


@pytest.mark.parametrize("f", [read_after_write, read_before_write, fancy_read_each_step, mask_read_each_step,
                               nested_read_each_step], ids=lambda f: f.__name__)
def test_a_write_whose_old_values_are_read_saves_what_it_overwrote(f):
    source = astgrad.grad(f).source
    assert "_stack.append(y)" not in source
    assert "_stack.append(overwritten(y, " in source
    assert "y = restored(y, _stack.pop())" in source


@pytest.mark.parametrize("level", LEVELS)
def test_value_and_gradient_of_a_write_loop(level):
    value, got = astgrad.value_and_grad(heat, optimize=level)(X.copy())
    assert value == pytest.approx(heat(X.copy()), rel=1e-12)
    np.testing.assert_allclose(got, gradient(heat, X.copy()), rtol=1e-5, atol=1e-6)


def test_a_while_loop_reading_each_step_saves_what_it_overwrote():
    source = astgrad.grad(while_read_each_step).source
    assert "_stack.append(overwritten(u, " in source and "_stack.append(u)" not in source


def test_a_stencil_keeps_one_array_a_step():
    """heat's step reads ``kappa * (u[2:] - 2 * u[1:-1] + u[:-2])``: its adjoint needs the second difference
    (for kappa), nothing of the old ``u`` but its shape and dtype.  One array a step is kept: the second
    difference itself, not the two operands it could be recomputed from (each saved whole only for that),
    nor the overwritten values of ``u``."""
    def stencil(kappa, u0, steps):
        u = u0.copy()
        for _ in range(steps):
            u[1:-1] = u[1:-1] + kappa * (u[2:] - 2 * u[1:-1] + u[:-2])
        return np.sum(u ** 2)

    u0 = np.sin(np.linspace(0.0, 3.0, 400))
    gradient_ = astgrad.grad(stencil, wrt=(0, 1))
    one_array = 200 * u0.nbytes
    # under 2 arrays a step, with room for the stack's and arrays' own objects (1.61 on Python 3.13)
    assert _peak(lambda: gradient_(0.2, u0, 200)) < 1.8 * one_array
    for level in LEVELS:
        dkappa, du0 = astgrad.grad(stencil, wrt=(0, 1), optimize=level)(0.2, X.copy(), 5)
        assert dkappa == pytest.approx(gradient(lambda k: stencil(k, X.copy(), 5), 0.2), rel=1e-6)
        np.testing.assert_allclose(du0, gradient(lambda u: stencil(0.2, u, 5), X.copy()), rtol=1e-6, atol=1e-8)


def test_an_array_made_each_step_and_written_item_by_item_keeps_its_shape():
    """``rates = np.zeros(n)`` each step, then ``rates[i] += ...``: the reverse sweep reads ``rates`` only for
    its shape, rank and dtype, so neither save of it (before ``np.zeros`` rebinds it, before each write)
    keeps an array: less than one ``rates`` a write, where each write's copy was kept."""
    mix = RNG.random((3, 100))

    def reactions(k, c0, steps):
        c = c0.copy()
        for _ in range(steps):
            rates = np.zeros(len(k))
            for i in range(len(k)):
                rates[i] += k[i] * c[i % 3] * c[(i + 1) % 3]
            c = c + 0.0001 * (mix @ rates)
        return np.sum(c ** 2)

    k, c0 = RNG.random(100), RNG.random(3) + 0.5
    gradient_ = astgrad.grad(reactions, wrt=(0, 1))
    source = gradient_.source
    assert "_stack.append(rates)" not in source and "_stack.append(only_shape(rates))" in source
    assert _peak(lambda: gradient_(k, c0, 20)) < 20 * 100 * k.nbytes
    for level in LEVELS:
        dk, dc0 = astgrad.grad(reactions, wrt=(0, 1), optimize=level)(k, c0, 3)
        np.testing.assert_allclose(dk, gradient(lambda v: reactions(v, c0, 3), k), rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(dc0, gradient(lambda v: reactions(k, v, 3), c0), rtol=1e-6, atol=1e-9)
