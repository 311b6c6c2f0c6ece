"""The systems a workload runs on, each prepared as a ``run()`` returning gradients.

``prepare(system, workload, args)`` does everything that should not be timed
(building leaf tensors, transforming, rebinding ``np``) and returns a
zero-argument callable; calling it computes the gradient (or, for the
primal, the value) and returns the gradients as a tuple in ``wrt`` order.
``as_numpy`` turns any system's gradients into numpy arrays for checking.

Third-party systems are imported lazily and are never dependencies:
``Unavailable`` says why one cannot run.  PyTorch and jax run the very same
workload function with its global ``np`` bound to a small namespace of their
own functions, so every system executes one source text.
"""

from __future__ import annotations

import importlib
import types

import numpy as np

SYSTEMS = ["primal", "hand", "expert", "generated", "numba", "taped", "torch", "autograd", "jax", "jaxjit"]
TITLES = {
    "primal": "primal", "hand": "hand-written", "expert": "expert",
    "generated": "astgrad generated", "numba": "astgrad numba",
    "taped": "astgrad taped", "torch": "PyTorch eager", "autograd": "HIPS autograd", "jax": "jax (eager)",
    "jaxjit": "jax.jit",
}


class Unavailable(Exception):
    """A system that cannot run here (not installed), as opposed to one that fails a workload."""


def prepare(system, workload, args):
    return _PREPARERS[system](workload, list(args))


def as_numpy(grads):
    out = []
    for g in grads:
        if hasattr(g, "detach"):
            g = g.detach()
        if hasattr(g, "numpy"):
            g = g.numpy()
        out.append(np.asarray(g, dtype=np.float64))
    return tuple(out)


def _split_seed(workload, args):
    return (args[:-1], args[-1]) if workload.vjp else (args, None)


def _prepare_primal(workload, args):
    args, _ = _split_seed(workload, args)
    fn = workload.fn
    return lambda: fn(*args)


def _prepare_hand(workload, args):
    hand = workload.hand

    def run():
        out = hand(*args)
        return out if isinstance(out, tuple) else (out,)
    return run


def _prepare_expert(workload, args):
    expert = workload.expert or workload.hand

    def run():
        out = expert(*args)
        return out if isinstance(out, tuple) else (out,)
    return run


def _prepare_generated(workload, args):
    import astgrad

    wrt = workload.wrt if len(workload.wrt) > 1 else workload.wrt[0]
    df = astgrad.vjp(workload.fn, wrt=wrt) if workload.vjp else astgrad.grad(workload.fn, wrt=wrt)
    if len(workload.wrt) > 1:
        return lambda: df(*args)
    return lambda: (df(*args),)


#: seconds the Numba backend's first call took (the compile), by workload key
NUMBA_COMPILE: dict = {}


def _prepare_numba(workload, args):
    """The generated gradient compiled by Numba (backend="numba"); its first call, the compile, is timed here."""
    import time

    import astgrad

    _import("numba")
    wrt = workload.wrt if len(workload.wrt) > 1 else workload.wrt[0]
    make = astgrad.vjp if workload.vjp else astgrad.grad
    df = make(workload.fn, wrt=wrt, backend="numba")
    start = time.perf_counter()
    df(*args)
    NUMBA_COMPILE[workload.key] = time.perf_counter() - start
    if len(workload.wrt) > 1:
        return lambda: df(*args)
    return lambda: (df(*args),)


def _prepare_taped(workload, args):
    import astgrad

    args, seed = _split_seed(workload, args)
    leaves = [astgrad.tensor(np.asarray(args[i], dtype=np.float64), dtype=np.float64, requires_grad=True)
              for i in workload.wrt]
    for i, leaf in zip(workload.wrt, leaves):
        args[i] = leaf
    seed = None if seed is None else astgrad.tensor(seed, dtype=np.float64)
    return _backward_runner(workload.fn, args, leaves, seed)


def _backward_runner(fn, args, leaves, seed):
    def run():
        for leaf in leaves:
            leaf.grad = None
        out = fn(*args)
        if seed is None:
            out.backward()
        else:
            out.backward(seed)
        return tuple(leaf.grad for leaf in leaves)
    return run


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise Unavailable(f"not installed ({exc})") from None


def _rebind_np(fn, namespace):
    """``fn`` with its global ``np`` replaced: the same code on another array library."""
    globals_ = dict(fn.__globals__, np=namespace)
    return types.FunctionType(fn.__code__, globals_, fn.__name__, fn.__defaults__, fn.__closure__)


def _torch_numpy(torch):
    return types.SimpleNamespace(
        sin=torch.sin, cos=torch.cos, exp=torch.exp, log=torch.log, tanh=torch.tanh,
        sum=torch.sum, mean=torch.mean, max=torch.amax,
        linalg=types.SimpleNamespace(norm=torch.linalg.norm),
    )


def _prepare_torch(workload, args):
    torch = _import("torch")
    torch.set_num_threads(1)
    args, seed = _split_seed(workload, args)

    def convert(value, grad):
        if isinstance(value, int) and not grad:
            return value
        return torch.tensor(np.asarray(value, dtype=np.float64), dtype=torch.float64, requires_grad=grad)

    args = [convert(a, i in workload.wrt) for i, a in enumerate(args)]
    leaves = [args[i] for i in workload.wrt]
    seed = None if seed is None else convert(seed, False)
    return _backward_runner(_rebind_np(workload.fn, _torch_numpy(torch)), args, leaves, seed)


def _prepare_autograd(workload, args):
    autograd = _import("autograd")
    anp = _import("autograd.numpy")
    fn = _rebind_np(workload.fn, anp)
    args, seed = _split_seed(workload, args)
    n = len(workload.wrt)
    if list(workload.wrt) != list(range(n)):
        raise ValueError("the autograd adapter expects wrt to be the leading parameters")
    if workload.vjp:
        def run():
            vjp, _ = autograd.make_vjp(fn, 0)(*args)
            return (vjp(seed),)
        return run
    dfn = autograd.grad(lambda params, *rest: fn(*params, *rest))
    params, rest = tuple(args[:n]), args[n:]
    return lambda: tuple(dfn(params, *rest))


def _prepare_jax(workload, args):
    jax = _import("jax")
    jnp = _import("jax.numpy")
    jax.config.update("jax_enable_x64", True)
    fn = _rebind_np(workload.fn, jnp)
    args, seed = _split_seed(workload, args)
    args = [a if isinstance(a, int) else jnp.asarray(a) for a in args]
    if workload.vjp:
        def run():
            _, vjp = jax.vjp(fn, *args)
            return (vjp(jnp.asarray(seed))[0],)
        return run
    dfn = jax.grad(fn, argnums=tuple(workload.wrt))

    def run():
        grads = dfn(*args)
        jax.block_until_ready(grads)
        return tuple(grads)
    return run


#: seconds jax.jit's first call took (trace and XLA compile), by workload key
JAX_JIT_COMPILE: dict = {}


def _prepare_jax_jit(workload, args):
    """``jax.jit`` of ``jax.grad`` (W5: ``jax.vjp``), loops in JAX's idiom; its first call, the compile, is timed here.

    The loops are written as jax.jit needs them (``peers.JAX_LOOPS``: W2 with
    ``lax.fori_loop``, W5 with ``lax.while_loop``, W8 with ``lax.scan``);
    integers (W2's trip count) are bound before tracing, as static.
    """
    import time

    from peers import _jax, _jit_source
    jax, jnp, lax = _jax()
    fn = _jit_source(workload.fn, jnp, lax)
    args, seed = _split_seed(workload, args)
    static = {i: a for i, a in enumerate(args) if isinstance(a, int)}
    traced = [i for i in range(len(args)) if i not in static]
    wrt = tuple(traced.index(i) for i in workload.wrt)

    def of_traced(values):
        point = {**static, **dict(zip(traced, values))}
        return fn(*[point[i] for i in range(len(args))])

    if workload.vjp:
        def gradient(values, seed):
            _, vjp = jax.vjp(lambda *v: of_traced(v), *values)
            grads = vjp(seed)
            return tuple(grads[i] for i in wrt)
    else:
        def gradient(values):
            return jax.grad(lambda *v: of_traced(v), argnums=wrt)(*values)
    jitted = jax.jit(gradient)
    values = tuple(jnp.asarray(args[i]) for i in traced)
    call = (lambda: jitted(values, jnp.asarray(seed))) if workload.vjp else (lambda: jitted(values))
    start = time.perf_counter()
    jax.block_until_ready(call())
    JAX_JIT_COMPILE[workload.key] = time.perf_counter() - start

    def run():
        grads = call()
        jax.block_until_ready(grads)
        return tuple(grads)
    return run


_PREPARERS = {
    "primal": _prepare_primal, "hand": _prepare_hand, "expert": _prepare_expert, "generated": _prepare_generated,
    "numba": _prepare_numba,
    "taped": _prepare_taped, "torch": _prepare_torch, "autograd": _prepare_autograd, "jax": _prepare_jax,
    "jaxjit": _prepare_jax_jit,
}
