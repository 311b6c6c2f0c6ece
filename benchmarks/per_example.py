"""Per-example gradients of an MLP (784-128-10, batch 256): vmap(grad(loss)) against numpy by hand and torch.func.

The loss is one example's softmax cross-entropy of a tanh MLP, written as
people write it for one example.  ``astgrad.vmap(astgrad.grad(loss))``
gives every example's gradient of the four parameters in one call of
generated code; the reference is the same gradient written by hand for the
whole batch with numpy (``by_hand``); the peer is
``torch.func.vmap(torch.func.grad(loss))`` on float64 tensors.  Each
system's gradients are checked against the hand-written ones (relative
1e-10) before timing; the times are taken round-robin in one process, on
one thread, and reported as ratios over the hand-written gradient and over
torch.func (issue 33's target: at most 1.5 over the hand-written numpy
gradient, and below torch.func).  Usage:
``python benchmarks/per_example.py [--repeat 9] [--batch 256]``.
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
from systems import Unavailable, _import  # noqa: E402

SIZES = (784, 128, 10)


def loss(W1, b1, W2, b2, x, y):
    """One example's softmax cross-entropy (``y`` one-hot)."""
    h = np.tanh(x @ W1 + b1)
    z = h @ W2 + b2
    s = z - np.max(z)
    return np.log(np.sum(np.exp(s))) - np.sum(s * y)


def by_hand(W1, b1, W2, b2, X, Y):
    """Every example's gradient of ``loss`` for the batch at once, written out with numpy."""
    h = np.tanh(X @ W1 + b1)
    z = h @ W2 + b2
    e = np.exp(z - np.max(z, axis=1, keepdims=True))
    dz = e / np.sum(e, axis=1, keepdims=True) - Y
    da = (dz @ W2.T) * (1.0 - h * h)
    return X[:, :, None] * da[:, None, :], da, h[:, :, None] * dz[:, None, :], dz


def inputs(batch, seed=0):
    rng = np.random.default_rng(seed)
    n_in, n_hidden, n_out = SIZES
    W1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    W2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    X = rng.standard_normal((batch, n_in))
    Y = np.eye(n_out)[rng.integers(0, n_out, batch)]
    return W1, 0.1 * rng.standard_normal(n_hidden), W2, 0.1 * rng.standard_normal(n_out), X, Y


def torch_runner(args):
    torch = _import("torch")
    torch.set_num_threads(1)
    func = _import("torch.func")

    def loss_torch(W1, b1, W2, b2, x, y):
        h = torch.tanh(x @ W1 + b1)
        z = h @ W2 + b2
        s = z - torch.max(z)
        return torch.log(torch.sum(torch.exp(s))) - torch.sum(s * y)

    per_example = func.vmap(func.grad(loss_torch, argnums=(0, 1, 2, 3)), in_dims=(None, None, None, None, 0, 0))
    tensors = [torch.from_numpy(a) for a in args]
    return lambda: per_example(*tensors)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    parser.add_argument("--batch", type=int, default=256)
    options = parser.parse_args(argv)
    args = inputs(options.batch)
    gradient = astgrad.vmap(astgrad.grad(loss, wrt=(0, 1, 2, 3)), in_axes=(None, None, None, None, 0, 0))
    runners = {"numpy by hand (batched)": lambda: by_hand(*args), "astgrad.vmap(astgrad.grad)": lambda: gradient(*args)}
    try:
        runners["torch.func.vmap(torch.func.grad)"] = torch_runner(args)
    except Unavailable as missing:
        print(f"torch.func: not timed ({missing})")
    expected = by_hand(*args)
    for name, run in runners.items():
        for found, want in zip(run(), expected):
            np.testing.assert_allclose(peers.as_array(found), want, rtol=1e-10, atol=1e-12, err_msg=name)
    times = peers.round_robin(runners, options.repeat)
    hand, torch_time = times["numpy by hand (batched)"], times.get("torch.func.vmap(torch.func.grad)")
    print(f"per-example gradients, MLP {'-'.join(map(str, SIZES))}, batch {options.batch}, median of "
          f"{options.repeat}, one thread")
    print("| system | time | / numpy by hand | / torch.func |")
    print("|---|---|---|---|")
    for name, t in times.items():
        over_torch = f"{t / torch_time:.2f}" if torch_time else ""
        print(f"| {name} | {t * 1e3:.3f} ms | {t / hand:.2f} | {over_torch} |")


if __name__ == "__main__":
    main()
