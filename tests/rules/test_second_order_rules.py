"""Second derivatives through every reverse rule of the table: right, or refused with astgrad's error.

A hessian differentiates the code a gradient generates, and that code holds
the reverse rules' own bodies, inlined.  For each sample case of
``samples.py`` with a generated reverse rule, the loss is the entry's outputs
weighted into a number (as in test_table_generated.py), and its hessian
along a random direction ``v`` of the differentiated arguments is taken
three ways:

* ``forward``: forward over reverse, ``jvp(grad(loss))`` (what ``hessian``
  and ``hvp`` run);
* ``reverse``: reverse over reverse, ``vjp(grad(loss))`` with ``v`` as the
  seed (``grad(grad(f))``'s route; forward over the gradient's code where
  that code keeps a stack);
* ``nested``: ``grad`` of a function that calls ``grad(loss)`` and dots it
  with ``v`` (the call is a primitive whose rules are hessian blocks, by
  forward over reverse: api/inside.py).

Each must equal the central difference of the generated gradient along
``v`` (the gradient itself is checked against differences of the loss by
test_table_generated.py), and ``v . H v`` the second difference of the loss
itself: that reference does not go through the generated gradient, so a
rule whose gradient is right only where it assumes (a matrix read through
one triangle) cannot pass by agreeing with itself.  The samples are drawn
away from kinks and ties, as for the first derivative; a case with
``expected`` gradients (a kink) has no second derivative to check.

Pinned both ways: a case listed in ``_REFUSED_BY_CAUSE`` must raise the
exception pinned there (an error, never a number), one not listed must
match.  Of the 712 cases' 2136 second derivatives, 1951 match and 185 are
refused: mostly reverse rules called as helpers that take ``*args``
(``_per_element``, ``np.gradient``, ``meshgrid``, the builtins
``max``/``min``), forward rules missing for an argument the activity
analysis sees carrying a tangent (an index, a mask), helpers of astgrad's
own without rules, and reverse over reverse through tuples of gradients.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import astgrad

from astgrad.rules import find

from .samples import CASES
from .test_forward_rules import directions
from .test_table import draw, outputs, weights_for
from .test_table_generated import build_module, parameters

MODES = ("forward", "reverse", "nested")

SECOND = [i for i, c in enumerate(CASES) if c.generated and c.expected is None]


def case_key(case) -> str:
    """The case's id, by its entry's full name (np.diagonal's and np.linalg.diagonal's cases apart), numpy's
    without ``numpy.``."""
    name = find(case.entry).name.removeprefix("numpy.")
    return name + (f"-{case.name}" if case.name else "")


#: why a second derivative is refused (the exception's type, then its message), and the cases refused so: a
#: case's id alone for its three modes, ``id:mode,mode`` for some
_REFUSED_BY_CAUSE: dict = {
    "UnsupportedSyntaxError: _per_element receives a value that carries a tangent through its parameter operands (*args or **kwargs), which cannot": (
        "astgrad.rules.losses.binary_cross_entropy_with_logits:forward,nested",
        "astgrad.rules.losses.binary_cross_entropy_with_logits-none:forward,nested",
        "astgrad.rules.losses.binary_cross_entropy_with_logits-weighted_sum:forward,nested",
        "astgrad.rules.losses.huber_loss:forward,nested", "astgrad.rules.losses.huber_loss-delta_none:forward,nested",
        "astgrad.rules.losses.smooth_l1_loss:forward,nested",
        "astgrad.rules.losses.smooth_l1_loss-beta_sum:forward,nested",
        "astgrad.rules.losses.smooth_l1_loss-l1:forward,nested",),
    "ValueError: setting an array element with a sequence. The requested array has an inhomogeneous shape after 1 dimensions. The detec": (
        "astgrad.rules.sequences.append:reverse", "divmod:reverse", "divmod-bcast_negative:reverse", "modf:reverse",
        "scipy.linalg.lu:reverse", "scipy.linalg.lu-permute_l:reverse", "unstack:reverse", "unstack-axis1:reverse",),
    "RuntimeError: the rule for astgrad.transform.runtime.sequence_gradient returned no gradient for argument 1, which req": (
        "scipy.linalg.cho_factor:reverse", "scipy.linalg.cho_factor-lower:reverse", "scipy.linalg.lu_factor:reverse",),
    "NoRuleTransformError: numpy.take has no forward rule for its argument 1, which has a tangent here": (
        "bincount-called", "unique:forward,nested", "unique-axis0:forward,nested", "unique-counts",),
    "UnsupportedSyntaxError: meshgrid receives a value that carries a tangent through its parameter xi (*args or **kwargs), which cannot be differe": (
        "meshgrid:forward,nested", "meshgrid-ij:forward,nested", "meshgrid-sparse", "meshgrid-xy3",),
    "UnsupportedSyntaxError: rules/scipy_stats.py: return inside a `with` block is not supported: astgrad's generated code leaves the manager only": (
        "scipy.stats.dirichlet.logpdf", "scipy.stats.dirichlet.logpdf-alpha", "scipy.stats.dirichlet.pdf",),
    "NoRuleTransformError: rules/joining.py: + and * join or repeat lists and tuples, which has no gradient rule": (
        "block", "block-promoted", "block-two_by_two",),
    "UnsupportedSyntaxError: rules/losses.py: _per_element takes *args or **kwargs, which cannot be differentiated": (
        "astgrad.rules.losses.binary_cross_entropy_with_logits:reverse",
        "astgrad.rules.losses.binary_cross_entropy_with_logits-none:reverse",
        "astgrad.rules.losses.binary_cross_entropy_with_logits-weighted_sum:reverse",
        "astgrad.rules.losses.huber_loss:reverse", "astgrad.rules.losses.huber_loss-delta_none:reverse",
        "astgrad.rules.losses.smooth_l1_loss:reverse", "astgrad.rules.losses.smooth_l1_loss-beta_sum:reverse",
        "astgrad.rules.losses.smooth_l1_loss-l1:reverse",),
    "UnsupportedSyntaxError: rules/selection.py: gradient takes *args or **kwargs, which cannot be differentiated": (
        "gradient", "gradient-2d", "gradient-axis:reverse,nested",),
    "NoRuleTransformError: no gradient rule for numpy.argpartition": (
        "partition", "partition-axis0",),
    "NoRuleTransformError: astgrad.transform.runtime.helper_rules.<lambda> is a helper of astgrad's own and has no derivative rule; astgrad does": (
        "astgrad.transform.runtime.attributes.item", "astgrad.transform.runtime.stand_in",),
    "NoRuleTransformError: rules/scipy_spectral.py: calling a local variable (f) is not supported: astgrad cannot tell which function it is": (
        "scipy.linalg.logm", "scipy.linalg.sqrtm",),
    "TypeError: vjp of the generated gradient the loss takes real arrays; it returns a ndarray": (
        "fft.irfft:reverse", "fft.irfft-cut:reverse", "fft.irfft-odd_ortho:reverse", "fft.irfft2:reverse",
        "fft.irfftn:reverse", "sort_complex:reverse",),
    "NoRuleTransformError: numpy.where has no forward rule for its argument 0, which has a tangent here": (
        "interp:forward,nested", "interp-left_right:forward,nested", "interp-number:forward,nested",),
    "NoRuleTransformError: no gradient rule for numpy.ldexp": (
        "astgrad.rules.two_outputs.frexp_mantissa", "frexp",),
    "NoRuleTransformError: rules/losses.py: numpy.mean has no forward rule for its argument 1, which has a tangent here": (
        "astgrad.rules.losses.layer_norm:forward,nested", "astgrad.rules.losses.layer_norm-plain:forward,nested",),
    "UnsupportedSyntaxError: builtin_max receives a value that carries a tangent through its parameter args (*args or **kwargs), which cannot be di": (
        "max-builtin:forward,nested", "max-builtin_array:forward,nested",),
    "UnsupportedSyntaxError: builtin_min receives a value that carries a tangent through its parameter args (*args or **kwargs), which cannot be di": (
        "min-builtin:forward,nested", "min-builtin_array:forward,nested",),
    "UnsupportedSyntaxError: gradient receives a value that carries a tangent through its parameter varargs (*args or **kwargs), which cannot be di": (
        "gradient-axis:forward", "gradient-spacings",),
    "UnsupportedSyntaxError: broadcast_arrays receives a value that carries a tangent through its parameter args (*args or **kwargs), which cannot": (
        "broadcast_arrays:forward,nested", "broadcast_arrays-three:forward,nested",),
    "NoRuleTransformError: astgrad.api.inside.gradient_at_vjp is a helper of astgrad's own and has no derivative rule; astgrad does not different": (
        "astgrad.api.inside.gradient_at",),
    "NoRuleTransformError: astgrad.transform.runtime.helper_rules._gradient_like is a helper of astgrad's own and has no derivative rule; astgrad": (
        "astgrad.transform.runtime.accumulate",),
    "RuntimeError: the rule for astgrad.transform.runtime.getitem_gradient returned no gradient for argument 1, which requires grad (it r": (
        "astgrad.rules.sequences.part:reverse", "astgrad.transform.runtime.getitem_gradient:nested",
        "astgrad.transform.runtime.replacing_gradient:reverse",),
    "UnsupportedSyntaxError: svd(...) is run as written, and writes into what kwargs.pop(name) returns, which astgrad cannot tell; it may be an arr": (
        "scipy.linalg.svd-square_full:nested", "scipy.linalg.svd-tall:nested", "scipy.linalg.svd-wide:nested",),
    "RuntimeError: the rule for numpy.where returned no gradient for argument 0, which requires grad; return one gradient per positional": (
        "interp:reverse", "interp-left_right:reverse", "interp-number:reverse",),
    "NoRuleTransformError: no gradient rule for numpy.histogram_bin_edges": (
        "astgrad.rules.selection.histogram_counts",),
    "UnsupportedSyntaxError: rules/sequences.py: builtin_max takes *args or **kwargs, which cannot be differentiated": (
        "max-builtin:reverse", "max-builtin_array:reverse",),
    "UnsupportedSyntaxError: rules/sequences.py: builtin_min takes *args or **kwargs, which cannot be differentiated": (
        "min-builtin:reverse", "min-builtin_array:reverse",),
    "RuntimeError: the rule for astgrad.transform.runtime.attributes.attribute_gradient returned no gradient for argument 1, which requir": (
        "astgrad.transform.runtime.attributes.attribute:reverse",
        "astgrad.transform.runtime.attributes.field:reverse",),
    "ValueError: astgrad: scipy.special.ive has no gradient in its argument v (scipy gives no derivative in it); pass a constant there,": (
        "scipy.special.ive:nested", "scipy.special.ive-negative:nested",),
    "UnsupportedSyntaxError: eigh(...) is run as written, and writes into what kwargs.pop(name) returns, which astgrad cannot tell; it may be an ar": (
        "scipy.linalg.eigh:nested", "scipy.linalg.eigh-upper:nested",),
    "UnsupportedSyntaxError: rules/grids.py: meshgrid takes *args or **kwargs, which cannot be differentiated": (
        "meshgrid:reverse", "meshgrid-ij:reverse",),
    "UnsupportedSyntaxError: rules/shapes.py: broadcast_arrays takes *args or **kwargs, which cannot be differentiated": (
        "broadcast_arrays:reverse", "broadcast_arrays-three:reverse",),
    "RuntimeError: the rule for numpy.copysign returned no gradient for argument 1, which requires grad; return one gradient per position": (
        "copysign:nested",),
    "ValueError: astgrad: scipy.special.iv has no gradient in its argument v (scipy gives no derivative in it); pass a constant there,": (
        "scipy.special.iv:nested",),
    "ValueError: astgrad: scipy.special.yv has no gradient in its argument v (scipy gives no derivative in it); pass a constant there,": (
        "scipy.special.yv:nested",),
    "ValueError: astgrad: scipy.special.gammainc has no gradient in its argument a (scipy gives no derivative in it); pass a constant t": (
        "scipy.special.gammainc:nested",),
    "UnsupportedSyntaxError: cho_factor(...) is run as written, and writes into what kwargs.pop(name) returns, which astgrad cannot tell; it may be": (
        "scipy.linalg.cho_solve-through_lower_factor:nested",),
    "UnsupportedSyntaxError: _lu_solve(...) is run as written, and writes into what kwargs.pop(name) returns, which astgrad cannot tell; it may be": (
        "scipy.linalg.lu_solve-through_factor:nested",),
    "TypeError: astgrad: lu_by_indices(...) is run as written (its result carries no gradient), and it may write into the differentiat": (
        "scipy.linalg.lu-p_indices:nested",),
    "RuntimeError: the rule for astgrad.rules.losses.binary_cross_entropy returned no gradient for argument 2, which requires grad; retur": (
        "astgrad.rules.losses.binary_cross_entropy-weighted_sum:nested",),
    "ValueError: astgrad: scipy.special.jv has no gradient in its argument v (scipy gives no derivative in it); pass a constant there,": (
        "scipy.special.jv:nested",),
    "ValueError: astgrad: scipy.special.kv has no gradient in its argument v (scipy gives no derivative in it); pass a constant there,": (
        "scipy.special.kv:nested",),
    "ValueError: astgrad: scipy.special.gammaincc has no gradient in its argument a (scipy gives no derivative in it); pass a constant": (
        "scipy.special.gammaincc:nested",),
    "ValueError: astgrad: scipy.special.zeta has no gradient in its argument x (scipy gives no derivative in it); pass a constant there": (
        "scipy.special.zeta:nested",),
    "UnsupportedSyntaxError: _cho_solve(...) is run as written, and writes into what kwargs.pop(name) returns, which astgrad cannot tell; it may be": (
        "scipy.linalg.cho_solve-through_factor:nested",),
    "UnsupportedSyntaxError: lu_factor(...) is run as written, and writes into what kwargs.pop(name) returns, which astgrad cannot tell; it may be": (
        "scipy.linalg.lu_solve-through_factor_transposed:nested",),
    "TypeError: astgrad: lu_upper_only(...) is run as written (its result carries no gradient), and it may write into the differentiat": (
        "scipy.linalg.lu-upper_only:nested",),
    "UnsupportedSyntaxError: _fractions(...) is given out, which carries a gradient, and may change it (astgrad/rules/grids.py:224: layout[axis] =": (
        "logspace-base_axis1:nested",),
}
#: (case id, mode) -> the cause above
REFUSED = {(key.split(":")[0], mode): cause for cause, keys in _REFUSED_BY_CAUSE.items() for key in keys
           for mode in (key.split(":")[1].split(",") if ":" in key else MODES)}


def _flat(args, diff):
    """The arguments as the generated loss takes them (a differentiated list's items one by one) and the
    positions of the differentiated ones."""
    flat, wrt = [], []
    for arg, is_diff in zip(args, diff):
        for part in (arg if isinstance(arg, list) and is_diff else [arg]):
            if is_diff:
                wrt.append(len(flat))
            flat.append(part)
    return flat, tuple(wrt)


def _nested_source(index, case, args, diff, n_weights):
    """``nested_<index>``: the gradient of the case's loss, called, dotted with the directions."""
    params, _ = parameters(case, args, diff)
    weights = [f"w{k}" for k in range(n_weights)]
    flat, wrt = _flat(args, diff)
    directions_ = [f"v{k}" for k in range(len(wrt))]
    terms = " + ".join(f"np.sum(g[{k}] * v{k})" for k in range(len(wrt)))
    return (f"def nested_{index}({', '.join(params + weights + directions_)}):\n"
            f"    g = G{index}({', '.join(params + weights)})\n"
            f"    return {terms}\n")


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    directory = tmp_path_factory.mktemp("second_order")
    losses = build_module(CASES, directory, "second_order_losses")
    sources = ["import numpy as np\n"]
    for index in SECOND:
        case = CASES[index]
        args, diff = draw(case)
        n_weights = len(outputs(case.function(*args, **case.kwargs)))
        sources.append(_nested_source(index, case, args, diff, n_weights))
    path = directory / "second_order_nested.py"
    path.write_text("\n\n".join(sources))
    spec = importlib.util.spec_from_file_location("second_order_nested", path)
    nested = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(nested)
    return losses, nested


def _gradient(module, index):
    """The generated gradient of the case's loss, made at the first use (``nested_<index>`` calls it)."""
    losses, nested = module
    found = nested.__dict__.get(f"G{index}")
    if found is None:
        args, diff = draw(CASES[index])
        found = nested.__dict__[f"G{index}"] = astgrad.grad(getattr(losses, f"case_{index}"), wrt=_flat(args, diff)[1])
    return found


def _moved(flat, wrt, v, s):
    moved = list(flat)
    for k, u in zip(wrt, v):
        moved[k] = flat[k] + s * u if isinstance(flat[k], np.ndarray) else float(flat[k] + s * u)
    return moved


def _point(index):
    """Case ``index``'s arguments flattened, the positions differentiated, a direction ``v`` along them and the
    output's weights."""
    case = CASES[index]
    args, diff = draw(case)
    weights = weights_for(outputs(case.function(*args, **case.kwargs)), case)
    flat, wrt = _flat(args, diff)
    v = _flat(directions(args, diff), diff)[0]
    return flat, wrt, tuple(v[k] for k in wrt), weights


def curvature(index, module, h=1e-3):
    """``v . H v`` by the second difference of the loss along ``v``: a reference independent of the generated
    gradient, which tells a gradient right only where its rule assumes (a matrix it reads one triangle of) from
    the derivative of the function."""
    losses, _ = module
    flat, wrt, v, weights = _point(index)
    loss = getattr(losses, f"case_{index}")

    def second_difference(h):
        return (loss(*_moved(flat, wrt, v, h), *weights) - 2 * loss(*flat, *weights)
                + loss(*_moved(flat, wrt, v, -h), *weights)) / h ** 2

    return (4 * second_difference(h / 2) - second_difference(h)) / 3, v  # Richardson: an error of order h^4


def second_derivative(index, mode, module, eps=1e-5):
    """``(H v by the mode, H v by central differences of the generated gradient)``, one array per argument."""
    losses, nested = module
    flat, wrt, v, weights = _point(index)
    gradient = _gradient(module, index)
    numeric = [(np.asarray(p, dtype=np.float64) - np.asarray(m, dtype=np.float64)) / (2 * eps)
               for p, m in zip(gradient(*_moved(flat, wrt, v, eps), *weights),
                               gradient(*_moved(flat, wrt, v, -eps), *weights))]
    if mode == "forward":
        first, got = astgrad.jvp(gradient, wrt=wrt)(*flat, *weights, v)
        for a, b in zip(first, gradient(*flat, *weights)):  # the primal of the forward code is the gradient
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    elif mode == "reverse":
        got = astgrad.vjp(gradient, wrt=wrt)(*flat, *weights, v)
    else:
        got = astgrad.grad(getattr(nested, f"nested_{index}"), wrt=wrt)(*flat, *weights, *v)
    got = list(got)
    assert len(got) == len(numeric)
    return got, numeric


def test_every_pinned_case_is_a_case():
    ids = [case_key(CASES[i]) for i in SECOND]
    assert len(set(ids)) == len(ids)
    assert not {cid for cid, _ in REFUSED} - set(ids)
    assert all(mode in MODES for _, mode in REFUSED)


@pytest.mark.sweep(60)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", [pytest.param(i, id=case_key(CASES[i])) for i in SECOND])
def test_second_derivative_matches_differences_of_the_gradient(index, mode, module):
    refused = REFUSED.get((case_key(CASES[index]), mode))
    if refused is not None:  # an error, of the kind pinned, never a number
        with pytest.raises(Exception) as raised:
            second_derivative(index, mode, module)
        assert type(raised.value).__name__ == refused.split(":")[0], (raised.value, refused)
        return
    got, numeric = second_derivative(index, mode, module)
    for g, n in zip(got, numeric):
        np.testing.assert_allclose(np.asarray(g, dtype=np.float64), n, rtol=1e-5, atol=1e-6)
    expected, v = curvature(index, module)
    along = sum(float(np.sum(np.asarray(g, dtype=np.float64) * u)) for g, u in zip(got, v))
    np.testing.assert_allclose(along, expected, rtol=1e-4, atol=1e-4)
