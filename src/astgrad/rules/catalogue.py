"""The list of supported callables, written from the table itself.

``python -m astgrad.rules.catalogue > docs/supported-numpy.md`` regenerates
the documentation page; a test keeps the committed page equal to this output.
"""

from __future__ import annotations

from . import shipped

_SECTIONS = (
    ("astgrad.rules.elementwise", "Elementwise functions and `math`"),
    ("astgrad.rules.reductions", "Reductions and scans"),
    ("astgrad.rules.shapes", "Shapes, joining and indexing"),
    ("astgrad.rules.joining", "More joining, splitting and axis moves"),
    ("astgrad.rules.selection", "Choosing values, grids"),
    ("astgrad.rules.grids", "Interpolation, grids, filled arrays and weighted counts"),
    ("astgrad.rules.order_statistics", "Medians, quantiles and percentiles"),
    ("astgrad.rules.convolution", "Convolution and correlation"),
    ("astgrad.rules.fourier", "`numpy.fft`"),
    ("astgrad.rules.sequences", "Python sequences: `numpy.array` of lists, builtins over lists"),
    ("astgrad.rules.two_outputs", "Elementwise functions with two outputs"),
    ("astgrad.rules.statistics", "Covariance and correlation"),
    ("astgrad.rules.polynomials", "Polynomials of coefficient vectors"),
    ("astgrad.rules.linalg", "Products and linear algebra"),
    ("astgrad.rules.array_api", "`numpy.linalg`'s array-API names"),
    ("astgrad.rules.decompositions", "Matrix decompositions"),
    ("astgrad.rules._extra", "Primitives numpy lacks (used by both engines)"),
    ("astgrad.rules.losses", "Layers and losses of neural networks (`torch.nn.functional` on the tape)"),
    ("astgrad.rules.sliding_windows", "Convolution and pooling layers (`torch.nn.functional` on the tape)"),
    ("astgrad.rules.scipy_special", "`scipy.special` (with scipy installed; the tape sees its ufuncs, "
     "`astgrad.rules.apply` calls its Python functions)"),
    ("astgrad.rules.scipy_linalg", "`scipy.linalg` (with scipy installed; on the tape through `astgrad.rules.apply`)"),
    ("astgrad.rules.scipy_spectral", "`scipy.linalg`'s spectral decompositions and matrix functions (with scipy "
     "installed; on the tape through `astgrad.rules.apply`)"),
    ("astgrad.rules.scipy_stats", "`scipy.stats` (with scipy installed; on the tape through `astgrad.rules.apply`)"),
    ("astgrad.rules.scipy_signal", "`scipy.signal` (with scipy installed; on the tape through `astgrad.rules.apply`)"),
    ("astgrad.transform.runtime.helper_rules", "Helpers of generated gradients (differentiated again by hessian and grad(grad))"),
)


def _section_of(rule) -> str:
    module = getattr(rule.vjp, "__module__", "") or ""
    for prefix, _ in _SECTIONS:
        if module == prefix:
            return prefix
    return "other"


def _batching_paragraph(entries) -> list:
    """What ``astgrad.vmap`` does with the entries: how many have a batching rule, and those whose rule refuses
    every batched call (``rule.refuses``), with why."""
    batched = [r for r in entries if r.batch is not None]
    refused = sorted((r.name, r.batch.refuses) for r in batched if getattr(r.batch, "refuses", None))
    lines = [f"{len(batched)} of the {len(entries)} entries have a batching rule (`astgrad.vmap`, "
             "[transformations.md](transformations.md#vmap)), each tested against a loop over examples"
             + (f"; {len(entries) - len(batched)} have none." if len(batched) < len(entries) else "."), ""]
    if refused:
        lines += ["Their rules refuse every batched call of these, at the user's line:", ""]
        lines += [f"- `{name}`: {why}" for name, why in refused]
        lines.append("")
    return lines


def catalogue() -> str:
    """Markdown listing every entry of the derivative table."""
    import astgrad  # noqa: F401  (the transformer registers its own helpers on import)
    from ._deferred import import_installed
    from ._registry import load_deferred

    import_installed()  # scipy's rules too, when it is installed
    load_deferred()

    entries = shipped()
    differentiable = [r for r in entries if r.differentiable]
    lines = [
        "# Supported callables",
        "",
        "Generated from the derivative table (with scipy installed) by `python -m astgrad.rules.catalogue`; "
        "do not edit by hand (a test compares this page with the table).",
        "",
        f"{len(differentiable)} callables have a gradient rule and "
        f"{len(entries) - len(differentiable)} are declared non-differentiable. Both engines use "
        "every entry: the taped Tensor when numpy code is called on Tensors, the source transformer "
        "in generated adjoints. Python operators map to the ufuncs (`+` is `numpy.add`, `@` is "
        "`numpy.matmul`, `x[i]` is `astgrad.rules.getitem`), and array methods to the "
        "functions of the same name (`x.sum(axis=0)` is `numpy.sum`).",
        "",
        "At zeros of products, ties of maxima, reductions of equal values and matrices numpy reads "
        "through one triangle (`eigh`, `cholesky`, `hermitian=True`), the gradients follow the "
        "conventions in [rules.md](rules.md#where-a-function-has-an-edge); each such entry has an "
        "edge sample in the table's tests.",
        "",
        *_batching_paragraph(entries),
    ]
    titles = dict(_SECTIONS)
    for key in [k for k, _ in _SECTIONS] + ["other"]:
        names = sorted(r.name for r in differentiable if _section_of(r) == key)
        if not names:
            continue
        lines += [f"## {titles.get(key, 'Registered elsewhere')}", ""]
        lines += [f"- `{name}`" for name in names]
        lines.append("")
    lines += ["## No gradient (declared non-differentiable)", ""]
    lines += [f"- `{name}`" for name in sorted(r.name for r in entries if not r.differentiable)]
    lines += ["", "To add a callable, see [rules.md](rules.md); what `jax.numpy` differentiates and this table "
              "still lacks is listed there, each with its reason "
              "([rules.md](rules.md#what-jax-differentiates-and-the-table-lacks)).", ""]
    return "\n".join(lines)


def main() -> None:
    print(catalogue(), end="")


if __name__ == "__main__":
    main()
