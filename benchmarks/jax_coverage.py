"""The numpy functions jax.numpy differentiates and astgrad's table still lacks, computed, with the reason for each.

For every public callable of ``numpy``, ``numpy.linalg`` and ``numpy.fft``
that ``jax.numpy`` has under the same name and astgrad's table has no entry
for (neither a rule nor a declaration that it has no derivative), the
script asks JAX: it calls the jax function on floats in (0.2, 0.8) (one
array, two arrays, one or two vectors, whichever it accepts first) and
takes ``jax.grad`` of the sum of its outputs' real parts.  A finite,
non-zero gradient means JAX differentiates it; the others (constructors of
constants, integer results, piecewise constants) are left out.  What
remains is printed as the markdown section of docs/rules.md, with the
reason from ``REASONS`` (typed here, one line per function; a function
without one says "not written yet").  tests/rules/test_jax_coverage.py
keeps the section equal to this output.

    python benchmarks/jax_coverage.py            # the section, as docs/rules.md holds it
"""

from __future__ import annotations

import warnings

import numpy as np

NAMESPACES = ("numpy", "numpy.linalg", "numpy.fft")

#: why astgrad has no rule yet for a function JAX differentiates
REASONS = {
    # compositions of entries the table has: each a short rule, not written yet
    "numpy.block": "not written yet: a nest of concatenate calls (in the table)",
    "numpy.broadcast_arrays": "not written yet: broadcast_to of each argument (in the table), a tuple of outputs",
    "numpy.dstack": "not written yet: concatenate along axis 2 after atleast_3d (both joins are in the table)",
    "numpy.unstack": "not written yet: the slices of one axis, like split (in the table)",
    "numpy.diagflat": "not written yet: diag of the flattened input (in the table)",
    "numpy.ediff1d": "not written yet: diff of the flattened input with to_begin/to_end (diff is in the table)",
    "numpy.extract": "not written yet: the flattened input read through a mask, as getitem (in the table)",
    "numpy.trim_zeros": "not written yet: a slice of the input whose bounds do not move with it",
    "numpy.unravel_index": "numpy takes integer indices only (JAX's version also takes floats)",
    "numpy.ix_": "its outputs are its inputs reshaped, as indices; numpy uses them to index, never to compute",
    "numpy.linalg.diagonal": "not written yet: diagonal over the last two axes (numpy.diagonal is in the table)",
    "numpy.linalg.trace": "not written yet: trace over the last two axes (numpy.trace, over the first two, is in "
                          "the table)",
    "numpy.linalg.cross": "not written yet: numpy.cross's rule (in the table) along the last axis",
    "numpy.linalg.vector_norm": "not written yet: numpy.linalg.norm's vector rules (in the table)",
    "numpy.linalg.matrix_norm": "not written yet: numpy.linalg.norm's matrix rules (in the table)",
    "numpy.matvec": "not written yet: matmul of a matrix and a vector (in the table), batched",
    "numpy.vecmat": "not written yet: matmul of a conjugated vector and a matrix, batched",
    "numpy.cumulative_sum": "not written yet: cumsum (in the table) with include_initial",
    "numpy.cumulative_prod": "not written yet: cumprod (in the table) with include_initial",
    # the nan reductions: the rule of the plain reduction, NaNs given 0
    "numpy.nanprod": "not written yet: prod's rule (exact at zeros) with NaNs read as 1 and given 0",
    "numpy.nanstd": "not written yet: std's rule over the values that are not NaN",
    "numpy.nanvar": "not written yet: var's rule over the values that are not NaN",
    "numpy.nancumsum": "not written yet: cumsum's rule with NaNs read as 0 and given 0",
    "numpy.nancumprod": "not written yet: cumprod's rule with NaNs read as 1 and given 0",
    # statistics, grids, polynomials
    "numpy.cov": "not written yet: centred products over the observations (ddof, bias, weights and aweights)",
    "numpy.corrcoef": "not written yet: cov divided by the outer product of its diagonal's square roots",
    "numpy.geomspace": "not written yet: the exponential of a linspace (in the table) of the ends' logs",
    "numpy.logspace": "not written yet: base ** linspace (both in the table)",
    "numpy.histogram_bin_edges": "not written yet: the edges min + (max - min) k / n of numpy.histogram's rule",
    "numpy.histogramdd": "not written yet: numpy.histogram's rule (linear in the weights, edges from the range) "
                         "per dimension",
    "numpy.vander": "not written yet: powers of the input, column by column",
    "numpy.poly": "not written yet: the coefficients of the product of (x - root), polymul repeated",
    "numpy.polyadd": "not written yet: a sum of zero-padded coefficient vectors",
    "numpy.polysub": "not written yet: a difference of zero-padded coefficient vectors",
    "numpy.polymul": "not written yet: np.convolve of the coefficients (in the table)",
    "numpy.polydiv": "not written yet: a deconvolution (quotient and remainder), bilinear after a division",
    "numpy.polyder": "not written yet: coefficients times their powers, linear",
    "numpy.polyint": "not written yet: coefficients over their powers, linear, plus the constants k",
    "numpy.polyval": "not written yet: Horner's scheme, in the coefficients and in x",
    "numpy.roots": "not written yet: eigenvalues of the companion matrix (eigvals is in the table); a repeated root "
                   "has no derivative",
    # elementwise
    "numpy.fmod": "not written yet: the remainder's rule (in the table) with the sign of the dividend",
    "numpy.divmod": "not written yet: two outputs, the quotient piecewise constant and the remainder as remainder's",
    "numpy.modf": "not written yet: two outputs, the fractional part with slope 1 and the integral part constant",
    "numpy.frexp": "not written yet: the mantissa x / 2 ** e with e piecewise constant; the exponent is an integer",
    "numpy.i0": "not written yet: its derivative is i1 (scipy.special.i0 has the rule)",
    "numpy.unwrap": "not written yet: the input plus piecewise constant multiples of the period, gradient 1",
    "numpy.linalg.cond": "not written yet: a ratio of singular values (svd is in the table), or norms of a and its "
                         "inverse for other orders",
    "numpy.fft.hfft": "not written yet: irfft of the conjugate, scaled (the rules of irfft carry over)",
    "numpy.fft.ihfft": "not written yet: the conjugate of rfft, scaled (the rules of rfft carry over)",
}

START = "<!-- jax-coverage: generated by benchmarks/jax_coverage.py; do not edit by hand -->"
END = "<!-- jax-coverage: end -->"


def _public_callables(module):
    for name in sorted(vars(module)):
        obj = vars(module)[name]
        if name.startswith("_") or isinstance(obj, (type, type(np))) or not callable(obj):
            continue
        yield name, obj


def _jax_namespace(name):
    import jax.numpy as jnp
    return {"numpy": jnp, "numpy.linalg": jnp.linalg, "numpy.fft": jnp.fft}[name]


def _probes():
    rng = np.random.default_rng(0)
    square = rng.uniform(0.2, 0.8, (3, 3))
    other = rng.uniform(0.2, 0.8, (3, 3))
    vector = rng.uniform(0.2, 0.8, 4)
    other_vector = rng.uniform(0.2, 0.8, 3)
    return [(square,), (square, other), (vector,), (vector, other_vector)]


def jax_differentiates(fn) -> bool:
    """Whether ``jax.grad`` of the sum of ``fn``'s outputs is finite and non-zero at one of the probes."""
    import jax
    import jax.numpy as jnp

    def total(*args):
        leaves = jax.tree_util.tree_leaves(fn(*args))
        return sum(jnp.sum(jnp.real(leaf)) for leaf in leaves if jnp.issubdtype(jnp.result_type(leaf), jnp.inexact))

    for probe in _probes():
        args = tuple(jnp.asarray(a) for a in probe)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                value = total(*args)
                if not hasattr(value, "dtype"):
                    continue
                grads = jax.grad(total, argnums=tuple(range(len(args))))(*args)
        except Exception:  # this probe's arguments do not suit fn: try the next
            continue
        flat = np.concatenate([np.ravel(np.asarray(g)) for g in grads])
        return bool(np.all(np.isfinite(flat)) and np.any(flat != 0))
    return False


def missing() -> list[str]:
    """The dotted names of the functions JAX differentiates and astgrad's table lacks."""
    import astgrad  # noqa: F401  (fills the table)
    from astgrad import rules

    out = []
    for namespace in NAMESPACES:
        module = __import__(namespace, fromlist=["_"])
        jax_module = _jax_namespace(namespace)
        for name, fn in _public_callables(module):
            jax_fn = getattr(jax_module, name, None)
            if jax_fn is None or rules.find(fn) is not None:
                continue
            if jax_differentiates(jax_fn):
                out.append(f"{namespace}.{name}")
    return out


def section() -> str:
    names = missing()
    lines = [START, "", f"{len(names)} functions of `numpy`, `numpy.linalg` and `numpy.fft` that `jax.numpy` "
             "differentiates have no entry in astgrad's table (computed by `benchmarks/jax_coverage.py` from the "
             "two namespaces and the table: JAX's gradient of each at a probe is finite and not zero). Calling one "
             "on a differentiated value is refused with its name and the `astgrad.defvjp` call that would add it.",
             ""]
    lines += [f"- `{name}`: {REASONS.get(name, 'not written yet')}" for name in names]
    lines += ["", END]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(section(), end="")
