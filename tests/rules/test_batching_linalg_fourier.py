"""Batching rules of numpy.linalg's and numpy.fft's entries where test_batching_rules' samples do not reach:
flags and modes, axes counted per operand, mixed spectra, and the cases refused rather than batched."""

from __future__ import annotations

import numpy as np
import pytest

import astgrad
from astgrad.rules.batching import Unbatchable

RNG = np.random.default_rng(7)


def _looped(f, args, in_axes):
    size = next(np.shape(a)[ax] for a, ax in zip(args, in_axes) if ax is not None)
    return [f(*[a if ax is None else np.take(a, k, axis=ax) for a, ax in zip(args, in_axes)]) for k in range(size)]


def _same(batched, looped):
    if isinstance(looped[0], (tuple, list)):
        assert len(batched) == len(looped[0])
        for i, part in enumerate(batched):
            _same(part, [r[i] for r in looped])
        return
    expected = np.stack([np.asarray(r) for r in looped])
    assert np.shape(batched) == expected.shape
    np.testing.assert_allclose(batched, expected, rtol=1e-10, atol=1e-12)


def qr_complete(a):
    q, r = np.linalg.qr(a, mode="complete")
    return q, r


def qr_raw(a):
    h, tau = np.linalg.qr(a, mode="raw")
    return h, tau


def vecdot_first_axis(x, y):
    return np.linalg.vecdot(x, y, axis=0)


def cross_first_axis(x, y):
    return np.linalg.cross(x, y, axis=0)


def eig_values_and_vectors(a):
    w, v = np.linalg.eig(a)
    return w, np.abs(v)


def lstsq_all(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    return x, residuals, rank, s


def transforms(x):
    return (np.fft.fftn(x, (3, 4)), np.fft.rfftn(x, axes=(0,)), np.fft.irfft2(x, axes=(1, 0)),
            np.fft.fftshift(x, axes=0), np.fft.ifftshift(x, 1), np.fft.hfft(x, 6, 0, "forward"))


CASES = [
    (qr_complete, [RNG.standard_normal((3, 4, 2))], (0,)),
    (qr_complete, [RNG.standard_normal((2, 3, 4))], (2,)),
    (qr_raw, [RNG.standard_normal((3, 4, 3))], (0,)),
    (vecdot_first_axis, [RNG.standard_normal((3, 4, 2)), RNG.standard_normal((4, 1))], (0, None)),
    (vecdot_first_axis, [RNG.standard_normal((4, 2)), RNG.standard_normal((4, 2, 3))], (None, 2)),
    (cross_first_axis, [RNG.standard_normal((3, 3, 2)), RNG.standard_normal((3, 1))], (1, None)),
    (lstsq_all, [RNG.standard_normal((5, 3)), RNG.standard_normal((5, 4))], (None, 1)),
    (lstsq_all, [RNG.standard_normal((4, 5, 3)), RNG.standard_normal((5, 2))], (0, None)),
    (transforms, [RNG.standard_normal((3, 4, 5))], (0,)),
    (transforms, [RNG.standard_normal((4, 5, 3))], (2,)),
]


@pytest.mark.filterwarnings("ignore:`axes` should not be `None`:DeprecationWarning")  # fftn(x, s): the loop's
@pytest.mark.parametrize("f, args, in_axes", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_batched_matches_a_loop(f, args, in_axes):
    _same(astgrad.vmap(f, in_axes=in_axes)(*args), _looped(f, args, in_axes))


def test_eig_of_examples_with_real_and_complex_spectra_stacks_them_as_complex():
    rotation = np.array([[0.0, -1.0], [1.0, 0.0]])  # eigenvalues +-i
    a = np.stack([np.diag([1.0, 2.0]), rotation, np.array([[2.0, 1.0], [0.0, 3.0]])])
    w, v = astgrad.vmap(eig_values_and_vectors)(a)
    looped = _looped(eig_values_and_vectors, [a], (0,))
    assert np.iscomplexobj(w)
    _same((w, v), looped)


def fft_into(x, out):
    return np.fft.fft(x, out=out)


def rank_deficient_or_not(a, b):
    return np.linalg.lstsq(a, b)[1]


def linalg_outer(x, y):
    return np.linalg.outer(x, y)


def cross_of_pairs(x, y):
    return np.linalg.cross(x, y)


def qr_r(a):
    return np.linalg.qr(a, mode="r")


def test_what_is_refused_is_refused_at_the_users_line_or_when_it_runs():
    x = RNG.standard_normal((3, 4))
    with pytest.raises(astgrad.TransformError, match="out="):
        astgrad.vmap(fft_into, in_axes=(0, None))(x, np.zeros(4, complex))
    with pytest.raises(astgrad.TransformError, match="mode='r'"):
        astgrad.vmap(qr_r)(RNG.standard_normal((3, 3, 3)))
    with pytest.raises((astgrad.TransformError, Unbatchable), match="not a vector"):
        astgrad.vmap(linalg_outer, in_axes=(0, None))(RNG.standard_normal((3, 2, 2)), np.ones(2))
    with pytest.raises((astgrad.TransformError, Unbatchable), match="three items"):
        astgrad.vmap(cross_of_pairs, in_axes=(0, None))(RNG.standard_normal((3, 2)), np.ones(2))
    full, deficient = RNG.standard_normal((5, 2)), np.ones((5, 2))  # residuals of shape (1,) and (0,)
    with pytest.raises(Unbatchable, match="differ in shape"):
        astgrad.vmap(rank_deficient_or_not, in_axes=(0, None))(np.stack([full, deficient]), np.ones(5))
