"""Generated source is a product: byte-for-byte golden files.

Run with ASTGRAD_REGEN_GOLDEN=1 to rewrite tests/golden/ after an intended
change, then review the diff like any other code change.
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
    "straight_line": (lambda: astgrad.grad(g.straight_line), (X,), [0]),
    "broadcasting": (lambda: astgrad.grad(g.broadcasting, wrt=(0, 1)), (A, X), [0, 1]),
    "branch": (lambda: astgrad.grad(g.branch), (X,), [0]),
    "for_loop": (lambda: astgrad.grad(g.for_loop), (X, 3), [0]),
    "while_loop": (lambda: astgrad.grad(g.while_loop), (X,), [0]),
    "with_break": (lambda: astgrad.grad(g.with_break), (np.array([0.3, 0.25]),), [0]),
    "nested_call": (lambda: astgrad.grad(g.nested_call, wrt=(0, 1)), (X, X * 2), [0, 1]),
    "recursion": (lambda: astgrad.grad(g.power), (1.3, 4), [0]),
    "methods": (lambda: astgrad.grad(g.methods, wrt=(0, 1)), (A, X), [0, 1]),
    "vjp": (lambda: astgrad.vjp(g.elementwise), None, None),
    "indexing": (lambda: astgrad.grad(g.indexing), (A,), [0]),
    "several_returns": (lambda: astgrad.grad(g.several_returns), (X * 3,), [0]),
    "tutorial": (lambda: astgrad.grad(g.tutorial), (X,), [0]),  # the rules written out inline
    "fused_scalar_loop": (lambda: astgrad.grad(g.scalar_loop), (0.5, 30), [0]),  # one derivative line
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_source_matches_golden_file(name):
    make, _, _ = CASES[name]
    source = make().source
    path = GOLDEN / f"{name}.py"
    if REGENERATE:
        path.write_text(source)
    assert path.exists(), f"missing golden file {path}: run with ASTGRAD_REGEN_GOLDEN=1"
    assert source == path.read_text(), f"generated source for {name} changed; diff it against {path}"


@pytest.mark.parametrize("name", sorted(n for n in CASES if CASES[n][1] is not None))
def test_golden_functions_are_correct(name):
    make, args, wrt = CASES[name]
    fn = make()
    got = fn(*args)
    got = got if len(wrt) > 1 else (got,)
    for value, index in zip(got, wrt):
        np.testing.assert_allclose(value, numeric_grad(fn.__wrapped__, args, index), rtol=1e-5, atol=1e-7)


def test_golden_vjp_is_correct():
    seed = np.array([1.0, -2.0, 0.5])
    w = np.array([0.5, 1.5, -1.0])
    np.testing.assert_allclose(astgrad.vjp(g.elementwise)(X, w, seed), np.cos(X) * w * seed)
