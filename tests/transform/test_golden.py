"""Generated source is a product: byte-for-byte golden files, one per optimisation level.

tests/golden/NAME.py is the default level (2), tests/golden/optimize0/ and
tests/golden/optimize1/ hold levels 0 and 1.  Run with ASTGRAD_REGEN_GOLDEN=1
to rewrite them after an intended change, then review the diff like any
other code change.
"""

import os
import pathlib

import numpy as np
import pytest

import astgrad
import golden_functions as g
from _numeric import numeric_grad

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden"
REGENERATE = os.environ.get("ASTGRAD_REGEN_GOLDEN") == "1"

RNG = np.random.default_rng(1)
X = np.array([0.3, -0.2, 0.5])
A = RNG.normal(size=(2, 3))

CASES = {
    "straight_line": (lambda level: astgrad.grad(g.straight_line, optimize=level), (X,), [0]),
    "broadcasting": (lambda level: astgrad.grad(g.broadcasting, wrt=(0, 1), optimize=level), (A, X), [0, 1]),
    "branch": (lambda level: astgrad.grad(g.branch, optimize=level), (X,), [0]),
    "for_loop": (lambda level: astgrad.grad(g.for_loop, optimize=level), (X, 3), [0]),
    "while_loop": (lambda level: astgrad.grad(g.while_loop, optimize=level), (X,), [0]),
    "with_break": (lambda level: astgrad.grad(g.with_break, optimize=level), (np.array([0.3, 0.25]),), [0]),
    "nested_call": (lambda level: astgrad.grad(g.nested_call, wrt=(0, 1), optimize=level), (X, X * 2), [0, 1]),
    "recursion": (lambda level: astgrad.grad(g.power, optimize=level), (1.3, 4), [0]),
    "methods": (lambda level: astgrad.grad(g.methods, wrt=(0, 1), optimize=level), (A, X), [0, 1]),
    "vjp": (lambda level: astgrad.vjp(g.elementwise, optimize=level), None, None),
    "indexing": (lambda level: astgrad.grad(g.indexing, optimize=level), (A,), [0]),
    "several_returns": (lambda level: astgrad.grad(g.several_returns, optimize=level), (X * 3,), [0]),
    "tutorial": (lambda level: astgrad.grad(g.tutorial, optimize=level), (X,), [0]),  # the rules written out inline
    "fused_scalar_loop": (lambda level: astgrad.grad(g.scalar_loop, optimize=level), (0.5, 30), [0]),  # one derivative line
    "called_stencil": (lambda level: astgrad.grad(g.diffusion, wrt=(0, 1), optimize=level), (0.1, X, 3), [0, 1]),
    "jvp_for_loop": (lambda level: astgrad.jvp(g.for_loop, optimize=level), None, None),  # forward mode
    "jvp_nested_call": (lambda level: astgrad.jvp(g.nested_call, wrt=(0, 1), optimize=level), None, None),
}


LEVELS = (0, 1, 2)


def golden_path(name, level):
    return GOLDEN / f"{name}.py" if level == 2 else GOLDEN / f"optimize{level}" / f"{name}.py"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden_file(name, level):
    make, _, _ = CASES[name]
    source = make(level).source
    path = golden_path(name, level)
    if REGENERATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(source)
    assert path.exists(), f"missing golden file {path}: run with ASTGRAD_REGEN_GOLDEN=1"
    assert source == path.read_text(), f"generated source for {name} changed; diff it against {path}"


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][1] is not None))
def test_golden_functions_are_correct(name, level):
    make, args, wrt = CASES[name]
    fn = make(level)
    got = fn(*args)
    got = got if len(wrt) > 1 else (got,)
    for value, index in zip(got, wrt):
        np.testing.assert_allclose(value, numeric_grad(fn.__wrapped__, args, index), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("level", LEVELS)
def test_golden_vjp_is_correct(level):
    seed = np.array([1.0, -2.0, 0.5])
    w = np.array([0.5, 1.5, -1.0])
    np.testing.assert_allclose(astgrad.vjp(g.elementwise, optimize=level)(X, w, seed), np.cos(X) * w * seed)


@pytest.mark.parametrize("level", LEVELS)
def test_golden_jvps_are_correct(level):
    u, v = np.array([1.0, -2.0, 0.5]), np.array([0.5, 1.5, -1.0])
    value, tangent = astgrad.jvp(g.for_loop, optimize=level)(X, 3, u)
    assert value == g.for_loop(X, 3)
    np.testing.assert_allclose(tangent, numeric_grad(g.for_loop, (X, 3), 0) @ u, rtol=1e-6)
    _, tangent = astgrad.jvp(g.nested_call, wrt=(0, 1), optimize=level)(X, X * 2, (u, v))
    expected = numeric_grad(g.nested_call, (X, X * 2), 0) @ u + numeric_grad(g.nested_call, (X, X * 2), 1) @ v
    np.testing.assert_allclose(tangent, expected, rtol=1e-6)


def test_golden_hessian():
    """A hessian's generated code: the forward sweep over the generated gradient (what hvp runs, one column per
    call), and that sweep batched over its tangent (what hessian runs, every column in one call)."""
    hvp = astgrad.hvp(g.broadcasting, wrt=1)
    column = hvp(A, X, np.array([1.0, 0.0, 0.0]))
    hessian = astgrad.hessian(g.broadcasting, wrt=1)
    found = hessian(A, X)
    assert hessian.batched is True
    for path, shown in ((GOLDEN / "hessian_broadcasting.py", hvp.source),
                        (GOLDEN / "hessian_batched_broadcasting.py", hessian.source)):
        if REGENERATE:
            path.write_text(shown)
        assert shown == path.read_text(), f"generated source of the hessian changed; diff it against {path}"
    second = [numeric_grad(lambda row, k=k: astgrad.grad(g.broadcasting, wrt=1)(A, row)[k], (X,), 0)
              for k in range(3)]
    np.testing.assert_allclose(column, np.array(second)[:, 0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(found, np.array(second), rtol=1e-6, atol=1e-8)
