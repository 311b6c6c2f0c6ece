"""The hessian of a 100-parameter function: generated code against a closed form, the tape, and others.

The function is logistic regression's loss with an L2 term, 100 weights and
200 samples, whose hessian has the closed form ``X^T diag(p (1 - p)) X / n +
lam I``.  Timed round-robin in one process: ``astgrad.hessian`` (forward
over reverse, every column in one call of the batched jvp; its first call,
the transform and the batching, reported apart), the column loop it
replaced (one ``astgrad.hvp`` per column), ``astgrad.jacobian(astgrad.grad(f))``
(reverse over reverse, every row in one call of the batched vjp of the gradient's code) and the
row loop it replaced (one vjp of the gradient per row), one ``astgrad.hvp``, one ``astgrad.grad``, the closed form, the tape's
``torch.autograd.functional.hessian``, and, when they are installed, HIPS
``autograd.hessian``, ``jax.hessian`` eager and under ``jax.jit`` (its first
call, the trace and compile, reported apart) and ``torch.func.hessian``
(``peers.py``), each checked against the closed form before timing.  The
table gives each time over the closed form's, astgrad.hessian's,
torch.func.hessian's and jax.jit's (where those ran).  Usage:
``python benchmarks/hessian.py [--repeat 9] [--n 100]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))

import astgrad  # noqa: E402
import peers  # noqa: E402
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


def hips_loss(anp):
    def loss(w, X, y):
        z = X @ w
        return anp.mean(anp.logaddexp(0.0, z) - y * z) + 0.5 * LAM * anp.sum(w * w)
    return loss


def jax_loss(jnp):
    def loss(w, X, y):
        z = X @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z) + 0.5 * LAM * jnp.sum(w * w)
    return loss


def torch_loss(torch):
    def loss(w, X, y):
        z = X @ w
        return torch.mean(torch.nn.functional.softplus(z) - y * z) + 0.5 * LAM * torch.sum(w * w)
    return loss


def systems(w, X, y):
    """name -> a function computing the hessian; the two astgrad rows of scale (one hvp, one gradient); notes.

    The peers' rows are there when the peer imports; ``notes`` says why one
    is missing and what jax.jit's first call (trace and compile) cost.
    """
    v = np.ones_like(w)
    hessian = astgrad.hessian(loss)
    start = time.perf_counter()
    hessian(w, X, y)
    first = time.perf_counter() - start
    if not hessian.batched:
        raise SystemExit("astgrad.hessian did not run its columns in one batched sweep (see .batched)")
    reverse_twice = astgrad.jacobian(astgrad.grad(loss))
    reverse_twice(w, X, y)
    if not reverse_twice.batched:
        raise SystemExit("astgrad.jacobian(astgrad.grad(loss)) did not run its rows in one batched sweep")
    row_loop = astgrad.jacobian(astgrad.grad(loss))
    row_loop._directions[0].run = lambda *args, **kwargs: None  # one vjp of the gradient per row: as before
    hvp, grad = astgrad.hvp(loss), astgrad.grad(loss)
    Xt, yt = tape.tensor(X), tape.tensor(y)
    basis = np.eye(len(w))

    def taped(wt):
        return loss(wt, Xt, yt)  # the same numpy code, on Tensors (numpy's dispatch)

    found = {
        "astgrad.hessian (forward over reverse, one batched sweep)": lambda: hessian(w, X, y),
        "astgrad.hvp per column (the loop hessian ran before)": lambda: np.stack([hvp(w, X, y, e) for e in basis],
                                                                                 axis=-1),
        "astgrad.jacobian(grad) (reverse over reverse, one batched sweep)": lambda: reverse_twice(w, X, y),
        "astgrad.jacobian(grad) row loop (reverse over reverse ran so before)": lambda: row_loop(w, X, y),
        "closed form (hand-written)": lambda: closed_form(w, X, y),
        "tape: torch.autograd.functional.hessian": lambda: functional.hessian(taped, tape.tensor(w)).numpy(),
    }
    titles = {"HIPS autograd": "HIPS autograd.hessian", "jax (eager)": "jax.hessian (eager)",
              "jax.jit": "jax.jit(jax.hessian)", "torch.func": "torch.func.hessian"}
    runners, compile_seconds = peers.hessian_runners({"autograd": hips_loss, "jax": jax_loss, "torch": torch_loss},
                                                     w, X, y)
    notes = [f"astgrad.hessian: first call (transform, and batching of the jvp) {first * 1e3:.0f} ms, not in the table"]
    for peer, run in runners.items():
        if isinstance(run, Exception):
            notes.append(f"{titles[peer]}: {run}")
        else:
            found[titles[peer]] = _as_numpy(run)
    for peer, seconds in compile_seconds.items():
        notes.append(f"{titles[peer]}: first call (trace and compile) {seconds * 1e3:.0f} ms, not in the table")
    extra = {"astgrad.hvp (one column)": lambda: hvp(w, X, y, v), "astgrad.grad (for scale)": lambda: grad(w, X, y)}
    return found, extra, notes


def _as_numpy(run):
    return lambda: peers.as_array(run())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--n", type=int, default=100, help="the number of parameters")
    options = parser.parse_args(argv)
    X, y, w = make_data(options.n)
    expected = closed_form(w, X, y)
    found, extra, notes = systems(w, X, y)
    for name, run in found.items():
        np.testing.assert_allclose(run(), expected, rtol=1e-9, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(extra["astgrad.hvp (one column)"](), expected @ np.ones(options.n), rtol=1e-9)
    times = peers.round_robin({**found, **extra}, options.repeat)
    against = {"closed form": times["closed form (hand-written)"],
               "astgrad.hessian": times["astgrad.hessian (forward over reverse, one batched sweep)"]}
    for title in ("torch.func.hessian", "jax.jit(jax.hessian)"):
        if title in times:
            against[title] = times[title]
    print(f"## Hessian of a {options.n}-parameter logistic loss (200 samples), median of {options.repeat} "
          f"round-robin repeats\n")
    print("| system | time | " + " | ".join(f"/ {title}" for title in against) + " |")
    print("|---|---|" + "---|" * len(against))
    for name, seconds in times.items():
        ratios = " | ".join(f"{seconds / base:.2f}" for base in against.values())
        print(f"| {name} | {seconds * 1e3:.3f} ms | {ratios} |")
    print()
    for note in notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
