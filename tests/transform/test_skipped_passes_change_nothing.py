"""A pass skipped because the generated code holds nothing it acts on (``Pass.needs``) would have changed
nothing: with skipping switched off, every function builds to the same source, byte for byte.

Over the corpus, the golden functions and random programs (``programs.py``), for the general adjoint
and the one for the sample arguments' ranks and real floats, at levels 1 and 2.
"""

import types

import numpy as np
import pytest
from hypothesis import given, settings

import astgrad
import golden_functions as g
from astgrad.transform import pipeline
from astgrad.transform.passes import levels

from corpus.programs import load, programs
from test_variants_built_from_kept_state import FUNCTIONS, _function_id, _variants


def _source(fn, names, level, skipping, **options):
    saved = pipeline._SKIPPING
    pipeline._SKIPPING = skipping
    try:
        return pipeline.build(fn, names, level=level, **options).source
    except astgrad.TransformError as exc:
        return f"refused: {type(exc).__name__}: {exc}"
    finally:
        pipeline._SKIPPING = saved


def _same_either_way(fn, names, level, variants=()):
    for ranks, floats in [(None, frozenset()), *variants]:
        skipped = _source(fn, names, level, True, ranks=ranks, floats=floats)
        assert skipped == _source(fn, names, level, False, ranks=ranks, floats=floats), (fn.__qualname__, ranks)


@pytest.mark.sweep(8)
@pytest.mark.parametrize("level", (1, 2))
@pytest.mark.parametrize("fn, args, wrt", FUNCTIONS, ids=[_function_id(entry) for entry in FUNCTIONS])
def test_corpus_and_golden_functions_build_the_same_with_passes_skipped(fn, args, wrt, level):
    names = list(astgrad.grad(fn, wrt=wrt).wrt)
    _same_either_way(fn, names, level, _variants(fn, args)[:2])


def _random_program_builds_the_same(source, tmp_path_factory):
    module = load(source, tmp_path_factory.mktemp("skip", numbered=True), "skipping_program")
    for level in (1, 2):
        _same_either_way(module.f, ["x", "y"], level, [({"x": (1, False), "y": (1, False)}, frozenset("xy"))])


@settings(max_examples=4, derandomize=True, deadline=None, database=None)
@given(source=programs(loop_locals=True))
def test_random_programs_build_the_same_with_passes_skipped(source, tmp_path_factory):
    _random_program_builds_the_same(source, tmp_path_factory)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, database=None)
@given(source=programs(loop_locals=True))
def test_many_random_programs_build_the_same_with_passes_skipped(source, tmp_path_factory):
    _random_program_builds_the_same(source, tmp_path_factory)


def test_a_function_without_saves_or_loops_skips_the_passes_over_them(monkeypatch):
    ran = []
    monkeypatch.setattr(levels, "unstack", lambda fn_def: ran.append("saves_in_locals") or fn_def)
    monkeypatch.setattr(levels, "solve_linear_loops", lambda fn_def, *a: ran.append("linear_recurrences") or fn_def)
    pipeline.build(g.straight_line, ["x"], floats=frozenset())
    assert ran == []
    pipeline.build(g.for_loop, ["x"], floats=frozenset())
    assert ran == ["saves_in_locals", "linear_recurrences"]


def test_show_prints_a_skipped_stage(capsys):
    for stage in ("saves_in_locals", "linear_recurrences"):
        skipped = pipeline.build(g.straight_line, ["x"], stage=stage).shown
        saved = pipeline._SKIPPING
        pipeline._SKIPPING = False
        try:
            assert skipped == pipeline.build(g.straight_line, ["x"], stage=stage).shown
        finally:
            pipeline._SKIPPING = saved
        assert f"after {stage}" in skipped and "dx" in skipped
        assert astgrad.show(g.straight_line, stage=stage) == skipped
    # a copy of the function: a call specialises the cached gradient's .source, which test_golden reads
    copy = types.FunctionType(g.straight_line.__code__, g.straight_line.__globals__, "straight_line")
    np.testing.assert_allclose(astgrad.grad(copy)(np.array([0.3, -0.2, 0.5])),
                               6 * (np.array([0.3, -0.2, 0.5]) + 2) / 3)
