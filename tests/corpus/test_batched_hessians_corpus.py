"""hessian, jacfwd and jacrev over the corpus: every direction in one batched sweep gives the loop's numbers.

The batched path (api/directions.py) runs the generated product once, its
tangent holding every basis vector; the loop runs it once per basis vector.
Where the batching sweep refuses the code, the loop runs: either way the
numbers must be the loop's, and an error the loop raises must be raised.
"""

import numpy as np
import pytest

import astgrad
from astgrad.api.directions import Directions

from .functions import CASES

LEVELS = (0, 1, 2)


def looped(monkeypatch, make):
    """``make()``'s result with the batched path turned off: the column loop, as before batching."""
    with monkeypatch.context() as patch:
        patch.setattr(Directions, "run", lambda *args, **kwargs: None)
        return make()


def outcome(make):
    try:
        return make(), None
    except Exception as error:  # noqa: BLE001 -- compared below: the batched path must raise the same
        return None, error


def same(batched, expected):
    if isinstance(expected, tuple):
        assert isinstance(batched, tuple) and len(batched) == len(expected)
        for b, e in zip(batched, expected):
            same(b, e)
        return
    assert np.shape(batched) == np.shape(expected)
    np.testing.assert_allclose(batched, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.sweep(5)
@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_batched_hessian_of_a_corpus_function_matches_the_column_loop(case, level, monkeypatch):
    expected, error = looped(monkeypatch, lambda: outcome(lambda: astgrad.hessian(case.f, wrt=case.wrt,
                                                                                  optimize=level)(*case.args)))
    hessian = astgrad.hessian(case.f, wrt=case.wrt, optimize=level)
    if error is not None:
        with pytest.raises(type(error)):
            hessian(*case.args)
        return
    same(hessian(*case.args), expected)
    assert hessian.batched in (True, False)


@pytest.mark.sweep(5)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_batched_jacfwd_of_a_corpus_function_matches_the_column_loop(case, monkeypatch):
    expected, error = looped(monkeypatch, lambda: outcome(lambda: astgrad.jacfwd(case.f, wrt=case.wrt)(*case.args)))
    jacobian = astgrad.jacfwd(case.f, wrt=case.wrt)
    if error is not None:
        with pytest.raises(type(error)):
            jacobian(*case.args)
        return
    same(jacobian(*case.args), expected)
    assert jacobian.batched in (True, False)


@pytest.mark.sweep(5)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_batched_jacrev_of_a_corpus_function_matches_the_row_loop(case, monkeypatch):
    expected, error = looped(monkeypatch, lambda: outcome(lambda: astgrad.jacrev(case.f, wrt=case.wrt)(*case.args)))
    jacobian = astgrad.jacrev(case.f, wrt=case.wrt)
    if error is not None:
        with pytest.raises(type(error)):
            jacobian(*case.args)
        return
    same(jacobian(*case.args), expected)
    assert jacobian.batched in (True, False)


def _first(wrt):
    return wrt[0] if isinstance(wrt, (tuple, list)) else wrt


def check_jacrev_of_the_gradient(case, monkeypatch):
    """jacrev(grad(f)) (reverse over reverse, or forward over reverse where reverse mode does not take the
    gradient's code again) in one batched call: the row loop's numbers and hessian's, or the loop's error."""
    w = _first(case.wrt)
    expected, error = looped(monkeypatch, lambda: outcome(lambda: astgrad.jacrev(astgrad.grad(case.f, w), w)(*case.args)))
    jacobian = astgrad.jacrev(astgrad.grad(case.f, w), w)
    if error is not None:
        with pytest.raises(type(error)):
            jacobian(*case.args)
        return
    found = jacobian(*case.args)
    same(found, expected)
    assert jacobian.batched in (True, False)
    same(found, looped(monkeypatch, lambda: astgrad.hessian(case.f, w)(*case.args)))


SAMPLE = [c for c in CASES if c.id in ("broadcast_column", "own_default", "list_append", "logistic_loss",
                                       "newton_sqrt")]


@pytest.mark.parametrize("case", SAMPLE, ids=[c.id for c in SAMPLE])
def test_jacrev_of_the_gradient_of_a_sample_of_the_corpus_matches_the_row_loop(case, monkeypatch):
    check_jacrev_of_the_gradient(case, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_jacrev_of_the_gradient_of_a_corpus_function_matches_the_row_loop(case, monkeypatch):
    check_jacrev_of_the_gradient(case, monkeypatch)
