"""The hessian of a 100-parameter function: generated code against a closed form, the tape, and others.

The function is logistic regression's loss with an L2 term, 100 weights and
200 samples, whose hessian has the closed form ``X^T diag(p (1 - p)) X / n +
lam I``.  Timed round-robin in one process: ``astgrad.hessian`` (forward
over reverse), ``astgrad.jacobian(astgrad.grad(f))`` (reverse over reverse),
one ``astgrad.hvp``, one ``astgrad.grad``, the closed form, the tape's
``torch.autograd.functional.hessian``, and HIPS autograd, JAX and PyTorch
(``torch.func``) when they are installed.  Usage:
``python benchmarks/hessian.py [--repeat 9] [--n 100]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))

import astgrad  # noqa: E402
from astgrad.torch.autograd import functional  # noqa: E402
import astgrad.torch as tape  # noqa: E402

LAM = 0.01


def make_data(n, samples=200, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((samples, n)) / np.sqrt(n)
    y = (rng.uniform(size=samples) < 0.5).astype(np.float64)
    return X, y, rng.standard_normal(n) * 0.1


def loss(w, X, y):
    z = X @ w
    return np.mean(np.logaddexp(0.0, z) - y * z) + 0.5 * LAM * np.sum(w * w)


def closed_form(w, X, y):
    p = 1.0 / (1.0 + np.exp(-(X @ w)))
    return (X.T * (p * (1 - p))) @ X / len(y) + LAM * np.eye(len(w))


def _time(fn, repeat):
    loops, start = 1, time.perf_counter()
    fn()
    while time.perf_counter() - start < 0.05:
        loops *= 2
        start = time.perf_counter()
        for _ in range(loops):
            fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(loops):
            fn()
        samples.append((time.perf_counter() - start) / loops)
    return float(np.median(samples))


def systems(w, X, y):
    """name -> a function computing the hessian (or, for the two last rows of ours, one hvp / one gradient)."""
    v = np.ones_like(w)
    hessian = astgrad.hessian(loss)
    reverse_twice = astgrad.jacobian(astgrad.grad(loss))
    hvp, grad = astgrad.hvp(loss), astgrad.grad(loss)
    Xt, yt = tape.tensor(X), tape.tensor(y)

    def taped(wt):
        return loss(wt, Xt, yt)  # the same numpy code, on Tensors (numpy's dispatch)

    found = {
        "astgrad.hessian (forward over reverse)": lambda: hessian(w, X, y),
        "astgrad.jacobian(grad) (reverse over reverse)": lambda: reverse_twice(w, X, y),
        "closed form (hand-written)": lambda: closed_form(w, X, y),
        "tape: torch.autograd.functional.hessian": lambda: functional.hessian(taped, tape.tensor(w)).numpy(),
    }
    if importlib.util.find_spec("autograd"):
        import autograd
        import autograd.numpy as anp

        def hips_loss(w):
            z = X @ w
            return anp.mean(anp.logaddexp(0.0, z) - y * z) + 0.5 * LAM * anp.sum(w * w)
        found["HIPS autograd.hessian"] = lambda: autograd.hessian(hips_loss)(w)
    if importlib.util.find_spec("jax"):
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def jax_loss(w):
            z = X @ w
            return jnp.mean(jnp.logaddexp(0.0, z) - y * z) + 0.5 * LAM * jnp.sum(w * w)
        jitted = jax.jit(jax.hessian(jax_loss))
        found["jax.jit(jax.hessian)"] = lambda: np.asarray(jitted(w))
    if importlib.util.find_spec("torch"):
        import torch
        Xtorch, ytorch = torch.tensor(X), torch.tensor(y)

        def torch_loss(w):
            z = Xtorch @ w
            return torch.mean(torch.logaddexp(torch.zeros_like(z), z) - ytorch * z) + 0.5 * LAM * torch.sum(w * w)
        found["torch.func.hessian"] = lambda: torch.func.hessian(torch_loss)(torch.tensor(w)).numpy()
    extra = {"astgrad.hvp (one column)": lambda: hvp(w, X, y, v), "astgrad.grad (for scale)": lambda: grad(w, X, y)}
    return found, extra


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--n", type=int, default=100, help="the number of parameters")
    options = parser.parse_args()
    X, y, w = make_data(options.n)
    expected = closed_form(w, X, y)
    found, extra = systems(w, X, y)
    for name, run in found.items():
        np.testing.assert_allclose(run(), expected, rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(extra["astgrad.hvp (one column)"](), expected @ np.ones(options.n), rtol=1e-9)
    times = {name: _time(run, options.repeat) for name, run in {**found, **extra}.items()}
    reference = times["closed form (hand-written)"]
    print(f"# hessian of a {options.n}-parameter logistic loss (200 samples), median of {options.repeat}\n")
    print("| system | time | / closed form |")
    print("|---|---|---|")
    for name, seconds in times.items():
        print(f"| {name} | {seconds * 1e3:.3f} ms | {seconds / reference:.1f} |")


if __name__ == "__main__":
    main()
