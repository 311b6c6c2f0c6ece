"""Adjoints specialised on the ranks of the arguments, pinned byte for byte.

Called with matrices, the MLP and the RNN get the adjoint a person writes:
each ``@`` is the one line its ranks need (``dW1 = T(X) @ dt2``), with no
test of ranks and no ``unbroadcast`` where the ranks prove it the identity.
Called with arrays of floats, the leapfrog's loop (``vel += ...``) and the
heat stencil's (``u[1:-1] = ...``) save no shape or dtype on each trip.
Run with ASTGRAD_REGEN_GOLDEN=1 to rewrite the files after an intended change.
"""

import os
import pathlib

import numpy as np
import pytest

import astgrad
import golden_functions as g
from _numeric import assert_grad

GOLDEN = pathlib.Path(__file__).resolve().parent.parent / "golden"
REGENERATE = os.environ.get("ASTGRAD_REGEN_GOLDEN") == "1"

RNG = np.random.default_rng(3)
MLP = (RNG.normal(size=(3, 4)), RNG.normal(size=4), RNG.normal(size=(4, 2)), RNG.normal(size=(5, 3)),
       RNG.normal(size=(5, 2)))
RNN = (RNG.normal(size=(2, 4)), 0.5 * RNG.normal(size=(4, 4)), RNG.normal(size=4), RNG.normal(size=(3, 5, 2)),
       RNG.normal(size=(5, 4)))

LEAPFROG = (RNG.normal(size=6), RNG.normal(size=6), RNG.uniform(1, 2, size=6))
HEAT = (0.2, RNG.normal(size=8), 0.1 * RNG.normal(size=6))

CASES = {"mlp": (g.mlp, MLP), "rnn": (g.rnn, RNN), "leapfrog": (g.leapfrog, LEAPFROG), "heat_source": (g.heat_source, HEAT)}


def called(name):
    fn, args = CASES[name]
    gradient = astgrad.grad(fn, wrt=(0, 1, 2))
    gradient(*args)
    return gradient


@pytest.mark.optimize(2)  # the golden files are the default level's
@pytest.mark.parametrize("name", sorted(CASES))
def test_specialised_source_matches_golden_file(name):
    source = called(name).source
    path = GOLDEN / f"specialised_{name}.py"
    if REGENERATE:
        path.write_text(source)
    assert source == path.read_text(), f"generated source for {name} changed; diff it against {path}"


@pytest.mark.parametrize("name", ["mlp", "rnn"])
def test_called_with_matrices_no_rank_ladder_remains(name):
    gradient = called(name)
    assert "ndim(" not in gradient.source
    assert "ndim(" in gradient.sources["any"]  # the form for any ranks, before the first call
    assert_grad(gradient, CASES[name][0], *CASES[name][1], wrt=(0, 1, 2))


@pytest.mark.parametrize("name", ["heat_source", "leapfrog"])
def test_loops_without_saves_give_the_gradient(name):
    assert_grad(called(name), CASES[name][0], *CASES[name][1], wrt=(0, 1, 2))
