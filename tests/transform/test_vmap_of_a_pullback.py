"""``vmap(vjp_fn)``: a reusable pullback applied to many cotangents in one batched sweep, against a loop of
``vjp_fn`` (and of ``jax.vmap(jax.vjp(...)[1])`` where jax is installed)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import astgrad

RNG = np.random.default_rng(11)


def layer(x, W, b):
    h = np.tanh(x @ W + b)
    return h * h + np.sin(x[:2]) * b


def recurrence(x, a):
    for _ in range(4):
        x = np.sin(x) * a + x
    return x


def _looped(vjp_fn, seeds):
    rows = [vjp_fn(s) for s in seeds]
    return tuple(np.stack([r[i] for r in rows]) for i in range(len(rows[0])))


@pytest.mark.parametrize("f, primals", [
    (layer, (RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=2))),
    (recurrence, (RNG.normal(size=5), 0.7)),
])
def test_vmap_of_vjp_fn_matches_a_loop_of_vjp_fn(f, primals):
    out, vjp_fn = astgrad.vjp(f, *primals)
    seeds = RNG.normal(size=(6,) + np.shape(out))
    vmapped = astgrad.vmap(vjp_fn)
    batched = vmapped(seeds)
    looped = _looped(vjp_fn, seeds)
    assert len(batched) == len(primals)
    for b, loop, p in zip(batched, looped, primals):
        assert b.shape == loop.shape and b.dtype == np.result_type(loop)
        np.testing.assert_allclose(b, loop, rtol=1e-12, atol=1e-14)
    assert "def vmap_backward_" in vmapped.source  # one batched sweep, no loop over the cotangents


def test_vmap_of_vjp_fn_moves_the_axes_and_keeps_the_point():
    x, W, b = RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=2)
    out, vjp_fn = astgrad.vjp(layer, x, W, b)
    x[:] = 9.0  # a write into a primal after vjp changes nothing
    seeds = RNG.normal(size=(2, 5))  # the batch axis last
    batched = astgrad.vmap(vjp_fn, in_axes=1, out_axes=(0, 2, 1))(seeds)
    looped = _looped(vjp_fn, seeds.T)
    np.testing.assert_allclose(batched[0], looped[0], rtol=1e-12)
    np.testing.assert_allclose(batched[1], np.moveaxis(looped[1], 0, 2), rtol=1e-12)
    np.testing.assert_allclose(batched[2], looped[2].T, rtol=1e-12)


def test_vmap_of_vjp_fn_matches_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x, W, b = RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=2)
    seeds = RNG.normal(size=(4, 2))
    _, ours = astgrad.vjp(layer, x, W, b)
    _, theirs = jax.vjp(lambda x, W, b: jnp.tanh(x @ W + b) ** 2 + jnp.sin(x[:2]) * b, x, W, b)
    for a, j in zip(astgrad.vmap(ours)(seeds), jax.vmap(theirs)(seeds)):
        np.testing.assert_allclose(a, np.asarray(j), rtol=1e-10)


def pair(x):
    return x * 2.0, np.sum(x)


def test_vmap_of_vjp_fn_refuses_what_it_cannot_batch():
    out, vjp_fn = astgrad.vjp(layer, RNG.normal(size=3), RNG.normal(size=(3, 2)), RNG.normal(size=2))
    with pytest.raises(ValueError, match="each cotangent has shape"):
        astgrad.vmap(vjp_fn)(RNG.normal(size=(4, 3)))  # never broadcast
    with pytest.raises(TypeError, match="in_axes is the cotangents' batch axis"):
        astgrad.vmap(vjp_fn, in_axes=None)
    _, tuple_fn = astgrad.vjp(pair, RNG.normal(size=3))
    with pytest.raises(TypeError, match="batching is offered for an array output"):
        astgrad.vmap(tuple_fn)
    _, rerunning = astgrad.vjp(functools.partial(layer, b=np.ones(2)), RNG.normal(size=3), RNG.normal(size=(3, 2)))
    with pytest.raises(TypeError, match="a pullback that reruns f at each call"):
        astgrad.vmap(rerunning)


def scaled(x):
    return x * 1.0


def test_the_gradients_returned_are_never_the_cotangents_given():
    _, vjp_fn = astgrad.vjp(scaled, RNG.normal(size=3))
    seeds = RNG.normal(size=(4, 3))
    kept = seeds.copy()
    (grads,) = astgrad.vmap(vjp_fn)(seeds)
    np.testing.assert_allclose(grads, kept)
    grads[...] = 0.0  # a write into the result cannot reach the cotangents
    np.testing.assert_array_equal(seeds, kept)
