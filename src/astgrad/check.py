"""``check_grads``: the generated adjoint, the tape and finite differences compared.

The generated and taped engines share their derivative formulas, so a wrong
rule makes them agree with each other; central differences in float64 are
the independent third opinion.  For inputs too large to difference element
by element, the numeric check is a random-direction test: ``<v, J^T u>``
against the directional difference ``(F(x + e v) - F(x - e v)) / 2e`` with
``F = <u, f>``, so its cost does not grow with the input size.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

from .api.arguments import refuse_other_meanings
from .values import trees as _trees

__all__ = ["check_grads", "GradientMismatch", "GradReport"]

MODES = ("generated", "taped", "numeric")
#: what is differentiated (HIPS autograd's spelling): reverse mode (gradients), forward mode (tangents)
DIRECTIONS = ("rev", "fwd")
#: inputs with at most this many elements get a full element-wise difference
FULL_DIFFERENCE_LIMIT = 200


class GradientMismatch(AssertionError):
    """Raised by :func:`check_grads` when two methods disagree."""

    def __init__(self, message: str, report: "GradReport"):
        super().__init__(message)
        self.report = report


@dataclass
class GradReport:
    """What :func:`check_grads` ran, skipped and measured."""

    function: str
    wrt: tuple
    gradients: dict = field(default_factory=dict)  # mode -> list of gradients (one per wrt, or per leaf of a container)
    skipped: dict = field(default_factory=dict)  # mode -> reason
    rows: list = field(default_factory=list)  # (argument, pair, abs diff, rel diff, index, ok)
    directional: bool = False
    numeric_noise: float = 0.0  # allowance for the central difference's rounding error

    @property
    def ok(self) -> bool:
        return all(row[-1] for row in self.rows)

    def table(self) -> str:
        lines = [
            "| argument | methods | max abs diff | max rel diff | at | |",
            "|---|---|---|---|---|---|",
        ]
        for name, pair, abs_diff, rel_diff, where, ok in self.rows:
            mark = "ok" if ok else "MISMATCH"
            lines.append(f"| {name} | {pair} | {abs_diff:.3g} | {rel_diff:.3g} | {where} | {mark} |")
        return "\n".join(lines)

    def __str__(self) -> str:
        ran = [m for m in self.gradients]
        text = [f"check_grads({self.function}, wrt={self.wrt}): compared {', '.join(ran) or 'nothing'}"]
        if self.directional:
            text.append("(numeric: random-direction test; the other methods are projected on the same direction)")
        text.append(self.table())
        for mode, reason in self.skipped.items():
            text.append(f"skipped {mode}: {reason}")
        return "\n".join(text)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        """In a notebook: the comparison as a table."""
        from .views.display import report_html
        return report_html(self)

    def _repr_markdown_(self) -> str:
        from .views.display import report_markdown
        return report_markdown(self)


def _positions(f, wrt) -> tuple:
    names = list(inspect.signature(f).parameters)
    items = wrt if isinstance(wrt, (tuple, list)) else (wrt,)
    positions = []
    for item in items:
        if isinstance(item, str):
            if item not in names:
                raise ValueError(f"check_grads: {f.__name__} has no argument named {item!r}")
            positions.append(names.index(item))
        else:
            positions.append(int(item))
    return tuple(positions)


@dataclass
class _Input:
    """One value whose gradient is compared: a wrt argument, or a leaf of a wrt container (docs/pytrees.md)."""

    name: str  # "x", "params['W1']"
    position: int  # the argument's
    path: tuple = ()  # the keys from the argument to the leaf

    def value(self, args):
        return _trees.get(args[self.position], self.path)

    def replaced(self, args, value):
        """``args`` with this input replaced by ``value`` (fresh containers along the path)."""
        new = list(args)
        new[self.position] = _trees.replace(args[self.position], self.path, value)
        return new


def _inputs(f, args, positions):
    """``(args, inputs)``: the wrt arguments' differentiable leaves in double precision, one input each."""
    names = list(inspect.signature(f).parameters)
    args, inputs = list(args), []
    for p in positions:
        name = names[p] if p < len(names) else f"args[{p}]"
        if not _trees.is_tree(args[p]):
            args[p] = _as_float64(args[p])
            inputs.append(_Input(name, p))
            continue
        for path, leaf in _trees.leaves(args[p]):
            if _trees.differentiated(path, leaf):
                args[p] = _trees.replace(args[p], path, _as_float64(leaf))
                inputs.append(_Input(name + _trees.path_text(path), p, path))
    return args, inputs


def _as_float64(value):
    """The argument in double precision: complex128 for complex values (docs/rules.md)."""
    if isinstance(value, (float, int, np.floating)) and not isinstance(value, bool):
        return float(value)
    if np.iscomplexobj(value):
        return complex(value) if np.ndim(value) == 0 and not isinstance(value, np.ndarray) else np.asarray(
            value, dtype=np.complex128)
    return np.asarray(value, dtype=np.float64)


def _projection(output, seed):
    """A fixed random cotangent ``u`` for a non-scalar output (``None`` for scalars)."""
    if np.ndim(output) == 0:
        return None
    rng = np.random.default_rng(seed)
    return rng.standard_normal(np.shape(output))


def _scalarize(output, u):
    """``F = Re(sum(u * f))``: the real function whose gradient a vjp with cotangent ``u`` is."""
    value = _double(output)
    return float(np.real(value)) if u is None else float(np.real(np.sum(value * u)))


def _double(value):
    """``value`` as a float64 array, or complex128 when it is complex."""
    return np.asarray(value, dtype=np.complex128 if np.iscomplexobj(value) else np.float64)


def _direction(rng, x):
    """A random direction for the directional test: complex for a complex argument."""
    v = rng.standard_normal(np.shape(x))
    return v + 1j * rng.standard_normal(np.shape(x)) if np.iscomplexobj(x) else v


# ---------------------------------------------------------------- the methods


def _numeric(f, args, inputs, u, eps, directions):
    grads = []
    for k, leaf in enumerate(inputs):
        x = leaf.value(args)

        def at(shifted, leaf=leaf):
            return _scalarize(f(*leaf.replaced(args, shifted)), u)

        if np.iscomplexobj(x):
            grads.append(_complex_difference(at, x, eps, None if directions is None else directions[k]))
            continue
        if directions is not None:
            v = directions[k]
            grads.append((at(x + eps * v) - at(x - eps * v)) / (2 * eps))
            continue
        if np.ndim(x) == 0:
            grads.append((at(x + eps) - at(x - eps)) / (2 * eps))
            continue
        grad = np.zeros(np.shape(x))
        for index in np.ndindex(np.shape(x)):
            step = np.zeros(np.shape(x))
            step[index] = eps
            grad[index] = (at(x + step) - at(x - step)) / (2 * eps)
        grads.append(grad)
    return grads


def _complex_difference(at, z, eps, direction):
    """``dF/dx - i dF/dy`` at each element of ``z = x + iy`` (the convention, docs/rules.md).

    With a random ``direction`` v, the real number ``Re(<conj(grad), v>)``:
    the directional derivative of F along v, which is what the other methods
    are projected to.
    """
    if direction is not None:
        return (at(z + eps * direction) - at(z - eps * direction)) / (2 * eps)
    grad = np.zeros(np.shape(z), dtype=np.complex128)
    for index in np.ndindex(np.shape(z)):
        step = np.zeros(np.shape(z), dtype=np.complex128)
        step[index] = eps
        along_x = (at(z + step) - at(z - step)) / (2 * eps)
        along_y = (at(z + 1j * step) - at(z - 1j * step)) / (2 * eps)
        grad[index] = along_x - 1j * along_y
    return grad if np.ndim(z) else complex(grad)


def _generated(f, args, positions, inputs, u):
    from .api import gradient

    if u is None:
        result = gradient.grad(f, wrt=positions)(*args)
    else:
        result = gradient.vjp(f, wrt=positions)(*args, u)
    result = list(result)  # positions is a tuple, so the gradients come as a tuple
    return [_trees.get(result[positions.index(leaf.position)], leaf.path) for leaf in inputs]


def _taped(f, args, inputs, u):
    """``f`` run on Tensors; array methods keep numpy's meaning (``x.var()`` is ddof=0, docs/testing.md)."""
    from .tape._modes import numpy_methods

    with numpy_methods():
        return _taped_run(f, args, inputs, u)


def _taped_run(f, args, inputs, u):
    """One Tensor for each input (a container's leaves each get their own, inside the container)."""
    from .tape import Tensor, tensor

    floats = [leaf.name for leaf in inputs if isinstance(leaf.value(args), float)]
    if floats:
        raise _Skip(
            f"argument {floats[0]} is a Python float; a Tensor cannot stand in for it faithfully "
            "(float() and math.* functions drop the tape)"
        )
    call_args = _data_tensors(args, {item.position for item in inputs}, tensor)
    leaves = []
    for item in inputs:
        value = item.value(args)
        dtype = np.complex128 if np.iscomplexobj(value) else np.float64
        leaf = tensor(np.asarray(value, dtype=dtype), requires_grad=True)
        leaves.append(leaf)
        call_args = item.replaced(call_args, leaf)
    out = f(*call_args)
    if not isinstance(out, Tensor) or not out.requires_grad:
        raise _Skip(
            f"{getattr(f, '__name__', 'f')} returned {type(out).__name__} without a tape: its result does not "
            "depend on Tensor inputs (Python floats and math.* functions cannot carry a tape)"
        )
    if u is None:
        out.backward()
    else:
        out.backward(tensor(u, dtype=out.dtype))
    return [
        (leaf.grad.numpy() if leaf.grad is not None else np.zeros(leaf.shape)) for leaf in leaves
    ]


def _data_tensors(args, wrt, tensor) -> list:
    """``args`` with each floating-point array that is not differentiated made a Tensor without
    ``requires_grad``: numpy code such as ``X.dot(W)``, data times parameters, then runs on the tape (an
    ndarray's method given a Tensor would convert it to an array, as PyTorch's numpy() refuses to)."""
    return [tensor(np.array(a)) if i not in wrt and type(a) is np.ndarray and a.dtype.kind in "fc" else a
            for i, a in enumerate(args)]


class _Skip(Exception):
    pass


# ------------------------------------------------------------------- checking


def check_grads(f, *args, wrt=0, rtol: float = 1e-5, atol: float = 1e-6, modes=MODES, eps: float = 1e-6, seed: int = 0,
                order: int = 1) -> GradReport:
    """Compare the gradients of ``f`` at ``args`` from each method in ``modes``.

    ``wrt`` is an argument position, a name, or a tuple of them; an argument
    may be a dict, list or tuple of arrays, compared leaf by leaf (on the
    tape each leaf is its own Tensor, inside the container).  A function
    with a non-scalar output is checked through a fixed random cotangent
    (a vector-Jacobian product).  Returns a :class:`GradReport`; raises
    :class:`GradientMismatch` (an ``AssertionError``) with a table of the
    largest differences when two methods disagree beyond
    ``atol + rtol * |reference|``.  Comparisons with the numeric estimate also
    allow for its rounding noise, about ``1e-16 |F| / eps`` for a function
    whose (projected) value is ``F``, so large-valued functions do not fail
    on the estimate's own error.

    ``modes`` may also name what is checked, in HIPS autograd's spelling:
    ``"rev"`` (the gradient, the default) and ``"fwd"`` (the directional
    derivative along a random direction: the generated ``jvp``, the tape's
    ``jvp``, a central difference).  ``order=2`` also checks second
    derivatives: ``H v`` along a random ``v`` for each argument, from the
    generated code of the gradient (reverse over reverse for ``"rev"``,
    forward over reverse for ``"fwd"``), the tape's double backward, and a
    central difference of the generated gradient.  Every check is a row of
    the same table, named ``x (fwd)``, ``x (rev, order 2)``...
    """
    __tracebackhide__ = True
    unknown = set(modes) - set(MODES) - set(DIRECTIONS)
    if unknown:
        raise ValueError(f"check_grads: unknown modes {sorted(unknown)}; choose from {MODES + DIRECTIONS}")
    if order not in (1, 2):
        raise ValueError(f"check_grads: order={order!r}; orders 1 and 2 are checked")
    directions_asked = [m for m in modes if m in DIRECTIONS] or ["rev"]
    modes = tuple(m for m in modes if m in MODES) or MODES
    positions = _positions(f, wrt)
    refuse_other_meanings({f"args[{i}]": a for i, a in enumerate(args)}, f"check_grads of {getattr(f, '__name__', f)}")
    args, inputs = _inputs(f, args, positions)
    value = f(*args)
    u = _projection(value, seed)
    report = GradReport(getattr(f, "__name__", repr(f)), wrt)
    report.numeric_noise = _difference_noise(value, u, eps)
    large = any(np.size(leaf.value(args)) > FULL_DIFFERENCE_LIMIT for leaf in inputs)
    directions = None
    if large and "numeric" in modes:
        rng = np.random.default_rng(seed + 1)
        directions = [_direction(rng, leaf.value(args)) for leaf in inputs]
        report.directional = True
    runners = {
        "generated": lambda: _generated(f, args, positions, inputs, u),
        "taped": lambda: _taped(f, args, inputs, u),
        "numeric": lambda: _numeric(f, args, inputs, u, eps, directions),
    }
    for mode in modes if "rev" in directions_asked else ():
        try:
            grads = runners[mode]()
        except _Skip as skip:
            report.skipped[mode] = str(skip)
            continue
        except Exception as error:  # a mode that cannot run this function is reported, not dropped
            if mode == "numeric":
                raise
            report.skipped[mode] = f"{type(error).__name__}: {error}"
            continue
        if directions is not None and mode != "numeric":
            grads = [float(np.real(np.sum(_double(g) * v))) for g, v in zip(grads, directions)]
        report.gradients[mode] = grads
    _compare(report, inputs, rtol, atol, report.numeric_noise)
    sections = [("fwd", 1)] if "fwd" in directions_asked else []
    sections += [(direction, 2) for direction in directions_asked] if order == 2 else []
    for direction, degree in sections:
        _section(report, f, args, positions, inputs, u, modes, direction, degree, (rtol, atol, eps, seed))
    if len(report.gradients) < 2:
        raise GradientMismatch(f"fewer than two methods could run, nothing was compared\n{report}", report)
    if not report.ok:
        raise GradientMismatch(f"gradients disagree\n{report}", report)
    return report


def _difference_noise(value, u, eps) -> float:
    """The rounding error of a central difference of ``<u, f>`` (about 10 ulps of F over 2 eps)."""
    magnitude = np.nanmax(np.abs(_double(value))) if np.size(value) else 0.0
    if u is not None:
        magnitude = magnitude * float(np.sum(np.abs(u)))
    return 10 * np.finfo(np.float64).eps * float(magnitude) / (2 * eps)


def _compare(report, inputs, rtol, atol, numeric_noise=0.0):
    ran = list(report.gradients)
    for k, leaf in enumerate(inputs):
        name = leaf.name
        for i, first in enumerate(ran):
            for second in ran[i + 1:]:
                a = _double(report.gradients[first][k])
                b = _double(report.gradients[second][k])
                if a.shape != b.shape:
                    report.rows.append((name, f"{first} vs {second}", np.inf, np.inf,
                                        f"shapes {a.shape} vs {b.shape}", False))
                    continue
                diff = np.abs(a - b)
                rel = diff / np.maximum(np.abs(b), 1e-300)
                worst = np.unravel_index(np.argmax(diff), diff.shape) if diff.size else ()
                where = "" if not diff.size or a.ndim == 0 else f"[{', '.join(str(int(i)) for i in worst)}]"
                nan_mismatch = bool(np.any(np.isnan(a) != np.isnan(b)))
                allowed = atol + rtol * np.abs(b) + (numeric_noise if "numeric" in (first, second) else 0.0)
                ok = not nan_mismatch and bool(np.all((diff <= allowed) | (np.isnan(a) & np.isnan(b))))
                abs_max = float(np.nanmax(diff)) if diff.size else 0.0
                rel_max = float(np.nanmax(rel)) if diff.size else 0.0
                report.rows.append((name, f"{first} vs {second}", abs_max, rel_max, where, ok))


# ------------------------------------------------ forward mode and order 2

def _section(report, f, args, positions, inputs, u, modes, direction, order, options):
    """Compare one more quantity across ``modes`` in ``report``'s table: tangents, or ``H v`` (order 2).

    For each input, a random direction ``v``; order 1 compares the
    directional derivative of ``F = <u, f>`` along ``v``, order 2 the vector
    ``H v`` of the input's own block of the hessian of ``F``.
    """
    rtol, atol, eps, seed = options
    rng = np.random.default_rng(seed + 7)
    directions = [rng.standard_normal(np.shape(leaf.value(args))) for leaf in inputs]
    label = direction if order == 1 else f"{direction}, order 2"
    runners = {
        "generated": lambda: [_generated_section(f, args, positions, leaf, u, v, direction, order)
                              for leaf, v in zip(inputs, directions)],
        "taped": lambda: _taped_section(f, args, inputs, u, directions, order),
        "numeric": lambda: _numeric_section(f, args, positions, inputs, u, directions, order, eps),
    }
    section = GradReport(report.function, report.wrt)
    for mode in modes:
        try:
            section.gradients[mode] = runners[mode]()
        except _Skip as skip:
            report.skipped[f"{mode} ({label})"] = str(skip)
        except Exception as error:  # reported, not dropped, as for the gradients
            report.skipped[f"{mode} ({label})"] = f"{type(error).__name__}: {error}"
    renamed = [_Input(f"{leaf.name} ({label})", leaf.position, leaf.path) for leaf in inputs]
    noise = report.numeric_noise if order == 1 else 0.0
    _compare(section, renamed, rtol, atol, noise)
    report.rows += section.rows
    report.gradients.update({f"{mode} ({label})": grads for mode, grads in section.gradients.items()})


def _generated_section(f, args, positions, leaf, u, v, direction, order):
    from .api import compose as _compose, gradient
    from .api.forward import jvp

    if leaf.path:
        raise _Skip(f"{leaf.name} is inside a container: the generated jvp and hessian take arrays and numbers")
    v = v if isinstance(leaf.value(args), np.ndarray) else float(v)
    if order == 1:  # fwd
        _, tangent = jvp(f, wrt=leaf.position)(*args, v)
        return _scalarize(tangent, u)
    if u is not None:
        raise _Skip("second derivatives by generated code need a scalar output (this one is checked through a "
                    "random projection)")
    if direction == "fwd":
        return _compose.hvp(f, leaf.position)(*args, v)
    return gradient.vjp(gradient.grad(f, leaf.position), leaf.position)(*args, v)


def _taped_section(f, args, inputs, u, directions, order):
    from .tape import Tensor, tensor
    from .tape._modes import numpy_methods
    from . import autograd

    if any(isinstance(leaf.value(args), float) for leaf in inputs):
        raise _Skip("an argument is a Python float; a Tensor cannot stand in for it faithfully")
    found: list = []
    with numpy_methods():
        for k, leaf in enumerate(inputs):
            x = tensor(np.asarray(leaf.value(args), dtype=np.float64), requires_grad=True)
            out = f(*leaf.replaced(args, x))
            if not isinstance(out, Tensor) or not out.requires_grad:
                raise _Skip(f"{getattr(f, '__name__', 'f')} returned {type(out).__name__} without a tape")
            value = out if u is None else (out * tensor(u, dtype=out.dtype)).sum()
            (g,) = autograd.grad(value, x, create_graph=order == 2)
            v = tensor(directions[k], dtype=g.dtype)
            if order == 1:
                found.append(float(np.real((g * v).sum().detach().numpy())))
                continue
            (hv,) = autograd.grad((g * v).sum(), x, allow_unused=True)
            found.append(np.zeros(x.shape) if hv is None else hv.detach().numpy())
    return found


def _numeric_section(f, args, positions, inputs, u, directions, order, eps):
    """Central differences: of ``F`` along ``v`` (order 1), of the generated gradient along ``v`` (order 2)."""
    found = []
    for leaf, v in zip(inputs, directions):
        x = leaf.value(args)
        v = v if isinstance(x, np.ndarray) else float(v)
        if order == 1:
            def at(s, leaf=leaf, x=x, v=v):
                return _scalarize(f(*leaf.replaced(args, x + s * v)), u)
            found.append((at(eps) - at(-eps)) / (2 * eps))
            continue
        step = 1e-5

        def gradient_at(s, leaf=leaf, x=x, v=v):
            moved = leaf.replaced(args, x + s * v)
            return _double(_generated(f, moved, positions, [leaf], u)[0])
        found.append((gradient_at(step) - gradient_at(-step)) / (2 * step))
    return found
