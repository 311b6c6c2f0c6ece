"""A variant for the arguments' ranks or real floats, built from the state the general build kept, is the
variant built from the start, byte for byte, in whichever order the variants are asked for.

``grad(f)`` keeps its transform's state where the ranks and where the floats
are first read (pipeline.Kept); the first call's variant runs only the
passes after that point, on a fork of it.  A pass that changed the kept
state in place would make the second variant differ from a cold build of
it: each variant is built twice, after the other one and before it.
"""

import inspect

import numpy as np
import pytest

import astgrad
import golden_functions as g
from astgrad.api.gradient import _rank
from astgrad.transform import pipeline
from astgrad.transform.ir.forks import fork
from astgrad.transform.runtime import floats as holds_floats
from astgrad.values.trees import is_tree

from corpus.functions import CASES

X = np.array([0.3, -0.2, 0.5])
A = np.random.default_rng(1).normal(size=(2, 3))

GOLDEN = [(g.straight_line, (X,), 0), (g.broadcasting, (A, X), (0, 1)), (g.branch, (X,), 0),
          (g.for_loop, (X, 3), 0), (g.while_loop, (X,), 0), (g.with_break, (np.array([0.3, 0.25]),), 0),
          (g.nested_call, (X, X * 2), (0, 1)), (g.power, (1.3, 4), 0), (g.methods, (A, X), (0, 1)),
          (g.indexing, (A,), 0), (g.several_returns, (X * 3,), 0), (g.tutorial, (X,), 0),
          (g.scalar_loop, (0.5, 30), 0), (g.diffusion, (0.1, X, 3), (0, 1))]
FUNCTIONS = [(c.f, c.args, c.wrt) for c in CASES] + GOLDEN


def _variants(fn, args):
    """The (ranks, floats) of a call with ``args``, as api/gradient.py's _specialised asks for them."""
    names = list(inspect.signature(fn).parameters)
    ranks = {name: rank for name, value in zip(names, args) if (rank := _rank(value)) is not None}
    floats = frozenset(name for name in ranks if holds_floats(dict(zip(names, args))[name]))
    return [(ranks, floats), (None, floats), (ranks, frozenset())]


def _build(fn, names, level, **options):
    return pipeline.build(fn, names, level=level, **options)


def _function_id(entry):
    return entry[0].__qualname__


def _resumes_as_cold(fn, args, wrt, level):
    """Whether ``fn`` has variants built from a kept state; each one is asserted to be the cold build."""
    if any(is_tree(a) for a in args):
        return False  # a container's gradient has variants of its own (api _for_trees), made from the start
    names = list(astgrad.grad(fn, wrt=wrt).wrt)
    try:
        general = _build(fn, names, level, keep=True, floats=frozenset())
    except astgrad.TransformError:
        return False
    if general.kept is None:
        assert not (general.rank_dependent or general.float_dependent)
        return False
    variants = [v for v in _variants(fn, args) if v != (None, frozenset())]
    cold = [_build(fn, names, level, ranks=r, floats=f).source for r, f in variants]
    for order in (variants, variants[::-1]):
        for ranks, floats in order:
            made = _build(fn, names, level, ranks=ranks, floats=floats, kept=general.kept)
            assert made.source == cold[variants.index((ranks, floats))], (fn.__qualname__, ranks, floats)
    assert _build(fn, names, level, floats=frozenset()).source == general.source
    return True


@pytest.mark.sweep(8)
@pytest.mark.parametrize("level", (1, 2))
@pytest.mark.parametrize("fn, args, wrt", FUNCTIONS, ids=[_function_id(entry) for entry in FUNCTIONS])
def test_each_variant_from_the_kept_state_is_the_cold_build(fn, args, wrt, level):
    _resumes_as_cold(fn, args, wrt, level)


def test_the_golden_functions_keep_a_state_to_resume_from():
    """The comparison above is not vacuous: most functions keep a state their variants resume from."""
    kept = [fn.__qualname__ for fn, args, wrt in GOLDEN
            if _build(fn, list(astgrad.grad(fn, wrt=wrt).wrt), 2, keep=True, floats=frozenset()).kept is not None]
    assert len(kept) >= 10, kept


def test_a_variant_resumes_rather_than_starting_again(monkeypatch):
    general = _build(g.straight_line, ["x"], 2, keep=True, floats=frozenset())
    assert set(general.kept.points) == {"ranks", "floats"}
    assert general.kept.points["ranks"][0] < general.kept.points["floats"][0]
    parsed = []
    monkeypatch.setattr(pipeline, "FunctionSource", parsed.append)  # the cold path would fail
    made = _build(g.straight_line, ["x"], 2, floats={"x"}, kept=general.kept)
    assert not parsed and "floats(" not in made.source and "floats(" in general.source
    np.testing.assert_allclose(made.function(X), 6 * (X + 2) / 3)


def test_other_options_build_from_the_start():
    general = _build(g.straight_line, ["x"], 2, keep=True, floats=frozenset())
    made = _build(g.straight_line, ["x"], 2, floats={"x"}, kept=general.kept, preserve_result=True)
    assert made.source == _build(g.straight_line, ["x"], 2, floats={"x"}, preserve_result=True).source


class _Held:
    pass


def test_a_fork_copies_the_transformers_state_and_shares_the_users():
    user_globals = {"W": np.ones(2)}
    held = _Held()
    source = object.__new__(pipeline.FunctionSource)
    source.globals, source.tree, source.fn = user_globals, ["tree"], held
    deps = pipeline.Dependencies()
    deps.record_key(user_globals, "W", held, always=True)
    state = {"source": source, "deps": deps, "again": source, "names": {"a"}}
    copied = fork(state)
    assert copied["source"] is copied["again"] is not source  # shared inside stays shared, as one copy
    assert copied["source"].globals is user_globals and copied["source"].fn is held
    assert copied["source"].tree == ["tree"] and copied["source"].tree is not source.tree
    assert copied["deps"] is not deps and next(iter(copied["deps"].entries.values()))[0] is user_globals
    copied["names"].add("b")
    assert state["names"] == {"a"}
