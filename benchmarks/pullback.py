"""A pullback reused for 100 cotangents (``astgrad.vjp(f, *primals)``), a linearization for 100 tangents.

Issue 33's target: ``vjp_fn`` called with 100 cotangents costs at most 1.2x
100 reverse sweeps alone.  The reverse sweeps alone are not a thing one can
call, so they are estimated in the same run: 100 calls of the generated
``vjp(f, wrt=...)`` (forward and reverse each time) minus 100 calls of
``f`` (the forward alone).  Rows, timed round-robin in one process, each per
100 cotangents: the reused pullback (one ``vjp`` and 100 ``vjp_fn`` calls),
the generated vjp rerun 100 times, f 100 times, ``vmap(vjp_fn)`` of the 100
cotangents stacked (one batched sweep; its first call makes and runs a
pair of its own, at optimize=1), and, when installed, ``jax.vjp``'s
pullback called 100 times and vmapped (eager).  Two functions: an MLP
(784-128-10, batch 32, the cotangent on its logits) and a loop of 30
elementwise steps on 1000 values.

A second table does the same for ``out, jvp_fn = astgrad.linearize(f,
*primals)``: one linearize and 100 ``jvp_fn`` calls against the generated
``jvp(f, wrt=...)`` called 100 times (the primal computed again with each
tangent), f 100 times, and ``jax.linearize`` (eager) when installed.
Usage: ``python benchmarks/pullback.py [--repeat 7] [--seeds 100]``.
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "src"))

import astgrad  # noqa: E402
import peers  # noqa: E402


def mlp(W1, b1, W2, b2, X):
    h = np.tanh(X @ W1 + b1)
    return h @ W2 + b2


def recurrence(x, a):
    for _ in range(30):
        x = np.sin(x) * a + x * 0.5
    return x


def mlp_inputs(rng):
    return (rng.standard_normal((784, 128)) / 28, np.zeros(128), rng.standard_normal((128, 10)) / 11, np.zeros(10),
            rng.standard_normal((32, 784)))


def recurrence_inputs(rng):
    return rng.standard_normal(1000), 0.9


def _jax_functions():
    jax, jnp, _ = peers._jax()

    def mlp_jax(W1, b1, W2, b2, X):
        return jnp.tanh(X @ W1 + b1) @ W2 + b2

    def recurrence_jax(x, a):
        for _ in range(30):
            x = jnp.sin(x) * a + x * 0.5
        return x

    return jax, {"mlp": mlp_jax, "recurrence": recurrence_jax}


def runners(name, f, args, seeds):
    """The rows for ``f`` at ``args``: name -> a function running the 100 cotangents."""
    wrt = tuple(range(len(args)))
    rerun = astgrad.vjp(f, wrt=wrt)

    def reused():
        _, vjp_fn = astgrad.vjp(f, *args)
        return [vjp_fn(s) for s in seeds]

    def batched():
        _, vjp_fn = astgrad.vjp(f, *args)
        return astgrad.vmap(vjp_fn)(stacked)

    stacked = np.stack(seeds)
    found = {
        "astgrad.vjp(f, *primals): 1 forward + vjp_fn per cotangent": reused,
        "astgrad.vjp(f, wrt=...): forward + reverse per cotangent": lambda: [rerun(*args, s) for s in seeds],
        "f alone, once per cotangent (the forward sweeps)": lambda: [f(*args) for _ in seeds],
        "astgrad.vmap(vjp_fn): 1 forward (2: its own pair's) + one batched sweep of every cotangent": batched,
    }
    try:
        jax, functions = _jax_functions()
        jax_args = tuple(jax.numpy.asarray(a) for a in args)

        def jax_reused():
            _, vjp_fn = jax.vjp(functions[name], *jax_args)
            return [vjp_fn(s) for s in seeds]

        def jax_batched():
            _, vjp_fn = jax.vjp(functions[name], *jax_args)
            return jax.vmap(vjp_fn)(stacked)

        found["jax.vjp (eager): 1 forward + vjp_fn per cotangent"] = jax_reused
        found["jax.vmap(vjp_fn) (eager): 1 forward + one batched sweep"] = jax_batched
    except peers.Unavailable:
        pass
    return found


def linearize_runners(name, f, args, tangents):
    """The rows of the linearize table: one linearize and a jvp_fn call per tangent, against the generated jvp
    (the primal computed again at each tangent) and, when installed, ``jax.linearize`` (eager)."""
    wrt = tuple(range(len(args)))
    product = astgrad.jvp(f, wrt=wrt)

    def linearized():
        _, jvp_fn = astgrad.linearize(f, *args)
        return [jvp_fn(*u) for u in tangents]

    found = {
        "astgrad.linearize(f, *primals): 1 primal half + jvp_fn per tangent": linearized,
        "astgrad.jvp(f, wrt=...): primal + tangent per tangent": lambda: [product(*args, u) for u in tangents],
        "f alone, once per tangent (the primal sweeps)": lambda: [f(*args) for _ in tangents],
    }
    try:
        jax, functions = _jax_functions()
        jax_args = tuple(jax.numpy.asarray(a) for a in args)

        def jax_linearized():
            _, jvp_fn = jax.linearize(functions[name], *jax_args)
            return [jvp_fn(*u) for u in tangents]

        found["jax.linearize (eager): 1 linearize + jvp_fn per tangent"] = jax_linearized
    except peers.Unavailable:
        pass
    return found


def check_linearize(f, args, tangents):
    """jvp_fn agrees with the generated jvp for every tangent (before anything is timed)."""
    _, jvp_fn = astgrad.linearize(f, *args)
    product = astgrad.jvp(f, wrt=tuple(range(len(args))))
    for u in tangents:
        np.testing.assert_allclose(jvp_fn(*u), product(*args, u)[1], rtol=1e-10, atol=1e-12)


def check(f, args, seeds):
    """The reused pullback agrees with the generated vjp for every cotangent (before anything is timed)."""
    _, vjp_fn = astgrad.vjp(f, *args)
    rerun = astgrad.vjp(f, wrt=tuple(range(len(args))))
    for s in seeds:
        for a, b in zip(vjp_fn(s), rerun(*args, s)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    for a, b in zip(astgrad.vmap(vjp_fn)(np.stack(seeds)), zip(*[vjp_fn(s) for s in seeds])):
        np.testing.assert_allclose(a, np.stack(b), rtol=1e-10, atol=1e-12)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--seeds", type=int, default=100)
    options = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"## One pullback, {options.seeds} cotangents: median of {options.repeat} round-robin repeats\n")
    print("| function | system | time | / reverse sweeps alone |")
    print("|---|---|---|---|")
    for name, f, args in (("mlp", mlp, mlp_inputs(rng)), ("recurrence", recurrence, recurrence_inputs(rng))):
        out = f(*args)
        seeds = [rng.standard_normal(np.shape(out)) for _ in range(options.seeds)]
        check(f, args, seeds[:3])
        rows = runners(name, f, args, seeds)
        times = peers.round_robin(rows, options.repeat)
        both, forward = (times[key] for key in list(rows)[1:3])
        reverse = both - forward
        for system, seconds in times.items():
            print(f"| {name} | {system} | {seconds * 1e3:.2f} ms | {seconds / reverse:.2f} |")
        print(f"| {name} | reverse sweeps alone (the second row less the third) | {reverse * 1e3:.2f} ms | 1.00 |")
    print("\nIssue 33's target: the first row of each function at most 1.20 in the last column.")
    print(f"\n## One linearization, {options.seeds} tangents: median of {options.repeat} round-robin repeats\n")
    print("| function | system | time | / astgrad.jvp per tangent |")
    print("|---|---|---|---|")
    for name, f, args in (("mlp", mlp, mlp_inputs(rng)), ("recurrence", recurrence, recurrence_inputs(rng))):
        tangents = [tuple(rng.standard_normal(np.shape(a)) if np.ndim(a) else float(rng.standard_normal())
                          for a in args) for _ in range(options.seeds)]
        check_linearize(f, args, tangents[:3])
        rows = linearize_runners(name, f, args, tangents)
        times = peers.round_robin(rows, options.repeat)
        rerun = times[list(rows)[1]]
        for system, seconds in times.items():
            print(f"| {name} | {system} | {seconds * 1e3:.2f} ms | {seconds / rerun:.2f} |")


if __name__ == "__main__":
    main()
