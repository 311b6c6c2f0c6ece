"""Derivative rules for products and linear algebra.

Matrix rules act on the last two axes and broadcast over the leading ones,
as numpy's ``linalg`` functions do; ``T`` below swaps the last two axes.
Products are linear in each argument, so each forward rule is the product
with the tangent in that argument's place.

Long: sixty-odd short rules of one family (products, solves, decompositions'
simple cases), each beside its forward rule; the decompositions proper are in
decompositions.py.
"""

from __future__ import annotations


import string

import numpy as np

from ._extra import eigh_values, eigh_vectors, logabsdet, slogdet_sign
from ._registry import defjvp, defvjp, sequence_outputs
from ._support import product_of_others, unbroadcast


def T(x):
    """Transpose of the last two axes."""
    return np.swapaxes(x, -1, -2)


@defvjp(np.matmul)
def matmul(g, ans, a, b):
    if np.ndim(a) == 1 and np.ndim(b) == 1:
        return g * b, g * a
    if np.ndim(b) == 1:
        if np.ndim(a) == 2:  # matrix times vector: b's gradient is one product, not an a-sized temporary summed
            return np.expand_dims(g, -1) * b, T(a) @ g
        return np.expand_dims(g, -1) * b, np.sum(a * np.expand_dims(g, -1), axis=tuple(range(np.ndim(a) - 1)))
    if np.ndim(a) == 1:
        return np.squeeze(np.expand_dims(g, -2) @ T(b), -2), np.expand_dims(a, -1) * np.expand_dims(g, -2)
    return g @ T(b), T(a) @ g


@defvjp(np.dot)
def dot(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return g * b, g * a
    if np.ndim(b) > 2:  # a's last axis against b's second to last: a tensordot
        g_a, g_b = tensordot(g, None, a, b, ([np.ndim(a) - 1], [np.ndim(b) - 2]))
        return g_a, g_b
    return matmul(g, None, a, b)  # neither reads ans: passing it would make the tape keep dot's output, as @ does not


@defvjp(np.vdot)
def vdot(g, ans, a, b):
    return np.reshape(np.conj(g * np.ravel(b)), np.shape(a)), np.reshape(g * np.conj(np.ravel(a)), np.shape(b))


@defvjp(np.inner)
def inner(g, ans, a, b):
    if np.ndim(a) == 0 or np.ndim(b) == 0:
        return g * b, g * a
    a_free, b_free = np.ndim(a) - 1, np.ndim(b) - 1
    g_a = np.tensordot(g, b, axes=(tuple(range(a_free, a_free + b_free)), tuple(range(b_free))))
    g_b = np.tensordot(g, a, axes=(tuple(range(a_free)), tuple(range(a_free))))
    return g_a, g_b


@defvjp(np.outer)
def outer(g, ans, a, b):
    return np.reshape(g @ np.ravel(b), np.shape(a)), np.reshape(np.ravel(a) @ g, np.shape(b))


def _tensordot_axes(axes, a_ndim):
    if np.ndim(axes) == 0:
        return list(range(a_ndim - axes, a_ndim)), list(range(axes))
    a_axes, b_axes = axes
    a_axes = [a_axes] if np.ndim(a_axes) == 0 else list(a_axes)
    b_axes = [b_axes] if np.ndim(b_axes) == 0 else list(b_axes)
    return a_axes, b_axes


@defvjp(np.tensordot)
def tensordot(g, ans, a, b, axes=2):
    a_axes, b_axes = _tensordot_axes(axes, np.ndim(a))
    a_axes = [i % np.ndim(a) for i in a_axes]
    b_axes = [i % np.ndim(b) for i in b_axes]
    a_free = [i for i in range(np.ndim(a)) if i not in a_axes]
    b_free = [i for i in range(np.ndim(b)) if i not in b_axes]
    n_a = len(a_free)
    # g's axes are a_free then b_free; contract the b_free part with b's free axes.
    g_a = np.tensordot(g, b, axes=(list(range(n_a, np.ndim(g))), b_free))
    # g_a's axes: a_free, then b's contracted axes in increasing order, which pair with a_axes.
    paired = [a_axes[b_axes.index(j)] for j in sorted(b_axes)]
    g_a = np.transpose(g_a, np.argsort(a_free + paired))
    g_b = np.tensordot(a, g, axes=(a_free, list(range(n_a))))
    paired = [b_axes[a_axes.index(i)] for i in sorted(a_axes)]
    g_b = np.transpose(g_b, np.argsort(paired + b_free))
    return g_a, g_b


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _einsum_sublists(first, rest):
    """``np.einsum(a, [0, 1], b, [1, 2], [0, 2])`` as subscripts ``"ab,bc->ac"`` and the arrays ``(a, b)``."""
    items = (first,) + tuple(rest)
    output = items[-1] if len(items) % 2 else None
    pairs = items[:len(items) - len(items) % 2]
    arrays, sublists = pairs[0::2], pairs[1::2]

    def letters(sublist):
        return "".join("..." if i is Ellipsis else _LETTERS[int(i)] for i in sublist)
    text = ",".join(letters(s) for s in sublists)
    if output is not None:
        text += "->" + letters(output)
    return text, arrays


def _einsum_parts(subscripts, operands):
    """Each operand's letters and the output's, with ``...`` written out and an implicit output made explicit."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    inputs = inputs.split(",")
    if len(inputs) != len(operands):
        raise ValueError(f"einsum: {subscripts!r} names {len(inputs)} operands, got {len(operands)}")
    letters = "".join(inputs).replace(".", "")
    singles = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    dots = ""
    if "." in text:  # the broadcast axes get unused letters, lined up from the right as numpy does
        spare = [c for c in string.ascii_letters if c not in text]
        widths = [np.ndim(op) - len(spec) + 3 if "..." in spec else 0 for spec, op in zip(inputs, operands)]
        dots = "".join(spare[:max(widths)])
        inputs = [spec.replace("...", dots[len(dots) - w:]) for spec, w in zip(inputs, widths)]
        output = output.replace("...", dots)
    if not arrow:
        output = dots + singles
    return inputs, output


def _einsum_operand_gradient(g, output, spec, operand, others):
    """The gradient of one operand: ``g`` contracted with the others, spread where ``spec`` repeats a letter."""
    unique = "".join(dict.fromkeys(spec))
    known = set(output).union(*[set(s) for s, _ in others])
    kept = "".join(c for c in unique if c in known)
    terms = ",".join([output] + [s for s, _ in others])
    g_i = np.einsum(f"{terms}->{kept}", g, *[o for _, o in others])
    size = {c: np.shape(operand)[spec.index(c)] for c in unique}
    missing = tuple(k for k, c in enumerate(unique) if c not in known)
    if missing:  # letters only this operand has are summed: every element gets the gradient
        g_i = np.broadcast_to(np.expand_dims(g_i, missing), [size[c] for c in unique])
    if unique == spec:
        return g_i
    spare = iter(c for c in string.ascii_letters if c not in spec)
    written, diagonals, eyes = "", [], []
    for k, c in enumerate(spec):  # a repeated letter reads a diagonal: put the gradient back on it
        if c in spec[:k]:
            fresh = next(spare)
            written += fresh
            diagonals.append(c + fresh)
            eyes.append(np.eye(size[c]))
        else:
            written += c
    return np.einsum(",".join([unique] + diagonals) + "->" + written, g_i, *eyes)


@defvjp(np.einsum)
def einsum(g, ans, subscripts, *operands, **kwargs):
    if not isinstance(subscripts, str):  # the sublist form: arrays at even positions, their axes after each
        text, arrays = _einsum_sublists(subscripts, operands)
        grads = [None] * (len(operands) + 1)
        grads[0:2 * len(arrays):2] = einsum(g, ans, text, *arrays, **kwargs)[1:]
        return tuple(grads)
    inputs, output = _einsum_parts(subscripts, operands)
    grads = [None]
    for i, (spec, operand) in enumerate(zip(inputs, operands)):
        others = [(s, o) for j, (s, o) in enumerate(zip(inputs, operands)) if j != i]
        grads.append(_einsum_operand_gradient(g, output, spec, operand, others))
    return tuple(grads)


@defvjp(np.kron)
def kron(g, ans, a, b):
    ndim = max(np.ndim(a), np.ndim(b))
    a_shape = (1,) * (ndim - np.ndim(a)) + np.shape(a)
    b_shape = (1,) * (ndim - np.ndim(b)) + np.shape(b)
    blocks = np.reshape(g, [n for pair in zip(a_shape, b_shape) for n in pair])
    g_a = np.tensordot(blocks, np.reshape(b, b_shape), axes=(list(range(1, 2 * ndim, 2)), list(range(ndim))))
    g_b = np.tensordot(blocks, np.reshape(a, a_shape), axes=(list(range(0, 2 * ndim, 2)), list(range(ndim))))
    return np.reshape(g_a, np.shape(a)), np.reshape(g_b, np.shape(b))


@defvjp(np.cross)
def cross(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    if axis is not None:
        axisa = axisb = axisc = axis
    if (axisa, axisb, axisc) == (-1, -1, -1):
        return np.cross(b, g), np.cross(g, a)
    a_last, b_last, g_last = np.moveaxis(a, axisa, -1), np.moveaxis(b, axisb, -1), np.moveaxis(g, axisc, -1)
    g_a = unbroadcast(np.cross(b_last, g_last), np.shape(a_last))
    g_b = unbroadcast(np.cross(g_last, a_last), np.shape(b_last))
    return np.moveaxis(g_a, -1, axisa), np.moveaxis(g_b, -1, axisb)


# ------------------------------------------------------------ linear algebra


def one_triangle(g, UPLO="L"):
    """The gradient of a function of a symmetric matrix that numpy builds from one triangle of its argument.

    ``eigh``, ``cholesky`` and ``pinv(hermitian=True)`` read only the lower
    (``UPLO="L"``) or upper triangle: an entry off the diagonal there stands
    for two entries of the symmetric matrix, the other triangle is never read
    (its gradient is 0).  ``g`` is a gradient with respect to the symmetric matrix.
    """
    if np.iscomplexobj(g):
        raise ValueError("astgrad: no gradient for a complex Hermitian matrix read through one triangle "
                         "(numpy.linalg.eigh, eigvalsh, cholesky, hermitian=True); pass a real matrix")
    both = g + T(g)
    eye = np.eye(np.shape(g)[-1])
    strict = np.tril(both, -1) if UPLO == "L" else np.triu(both, 1)
    return strict + g * eye


@defvjp(np.linalg.inv)
def inv(g, ans, a):
    return -T(ans) @ g @ T(ans)


@defvjp(np.linalg.det)
def det(g, ans, a):
    if np.all(ans != 0):
        return np.expand_dims(g * ans, (-1, -2)) * T(np.linalg.inv(a))
    return np.expand_dims(g, (-1, -2)) * T(adjugate(a))


def adjugate(a):
    """``det(a) * inv(a)``, also where ``a`` is singular (the gradient of det there is not 0/0).

    From the SVD ``a = u s vh``: ``adj(a) = det(u) det(vh) vh^H diag(prod of the other s) u^H``.
    """
    u, s, vh = np.linalg.svd(a)
    sign = np.linalg.det(u) * np.linalg.det(vh)
    others = product_of_others(s, -1)
    return np.expand_dims(sign, (-1, -2)) * (np.conj(T(vh)) * np.expand_dims(others, -2)) @ np.conj(T(u))


@defvjp(np.linalg.slogdet)
def slogdet(g, ans, a):
    """``g`` is (gradient of sign, gradient of log|det|); a real sign has none, a complex one turns."""
    total = 0 if g[1] is None else np.expand_dims(np.real(g[1]), (-1, -2)) * T(np.linalg.inv(a))
    if np.iscomplexobj(ans[0]) and g[0] is not None:
        total = total + slogdet_sign_vjp(g[0], ans[0], a)
    return total


@defvjp(slogdet_sign)
def slogdet_sign_vjp(g, ans, a):
    """``d sign = sign * i Im tr(a^-1 da)``: piecewise constant (0) for a real matrix."""
    if not np.iscomplexobj(ans):
        return np.zeros(np.shape(a))
    return np.expand_dims(1j * np.imag(g * ans), (-1, -2)) * T(np.linalg.inv(a))


@defvjp(logabsdet)
def logabsdet_vjp(g, ans, a):
    return np.expand_dims(np.real(g), (-1, -2)) * T(np.linalg.inv(a))  # a real output: np.real(g)


@defvjp(np.linalg.solve)
def solve(g, ans, a, b):
    # numpy 2 reads b as one vector only when it is 1-D; before, whenever it had one axis fewer than a
    vector = np.ndim(b) == 1 if _SOLVE_VECTOR_IS_1D else np.ndim(b) == np.ndim(a) - 1
    if vector:
        g_b = np.squeeze(np.linalg.solve(T(a), np.expand_dims(g, -1)), -1)
        return -np.expand_dims(g_b, -1) * np.expand_dims(ans, -2), g_b
    g_b = np.linalg.solve(T(a), g)
    return -g_b @ T(ans), g_b


_SOLVE_VECTOR_IS_1D = int(np.__version__.split(".")[0]) >= 2


@defvjp(np.linalg.cholesky)
def cholesky(g, ans, a, upper=False):
    if upper:
        raise ValueError("astgrad: the gradient of numpy.linalg.cholesky supports upper=False only")
    inner = T(ans) @ g
    phi = np.tril(inner) - 0.5 * np.eye(np.shape(a)[-1]) * inner
    l_inv = np.linalg.inv(ans)
    sym = T(l_inv) @ phi @ l_inv
    return one_triangle(0.5 * (sym + T(sym)), "L")


# Equal eigenvalues (or singular values) of a symmetric matrix: the loss's weights decide.  A symmetric function
# of a tied group (their sum, the trace) is smooth there and its rule is basis-free; one of them alone, or any
# weights that differ within the group, has a kink there (central differences average its two sides), and the
# rule would return a number that depends on the eigenvectors LAPACK picked in the eigenspace.  ``name`` is the
# function the user called (numpy.linalg.eigvalsh, scipy.linalg.eigh, ...); scipy's rules import these.


def equal_pairs(values, tol):
    """Where two values (along the last axis) are within ``tol`` of each other."""
    near = np.abs(np.expand_dims(values, -2) - np.expand_dims(values, -1)) <= tol
    return near & ~np.eye(np.shape(values)[-1], dtype=bool)


def weighed_apart(g, values):
    """Where ``g`` gives two values weights that differ by more than rounding (``sum(w ** 2)`` at a tie)."""
    g = np.broadcast_to(g, np.shape(values))
    return np.abs(np.expand_dims(g, -2) - np.expand_dims(g, -1)) > 1e-8 * largest(g, 0.0)


def largest(x, floor):
    """``max(floor, max |x|)``, without ``initial=``: np.max's forward rule does not take it, and a generated
    gradient that calls eigh_values_vjp runs this on traced values when it is differentiated again."""
    return np.maximum(np.max(np.abs(x)), floor) if np.size(x) else floor


def eigenvalue_ties(w):
    """Pairs of equal eigenvalues: within 16 machine epsilons of the largest, numpy's eigh test."""
    return equal_pairs(w, np.finfo(np.result_type(w, np.float32)).eps * 16 * largest(w, 1.0))


def weighed_alike(name, w, g):
    """Raise where ``g`` weighs two equal eigenvalues apart: one of them alone has no derivative (a kink); a
    symmetric function of the group (their sum) has one."""
    if g is not None and np.any(eigenvalue_ties(w) & weighed_apart(g, w)):
        raise ValueError(f"astgrad: no gradient for single repeated eigenvalues of {name}: two are equal and the "
                         f"loss weighs them differently; a symmetric function of them (their sum) has one")


def distinct(name, w):
    """Raise where two eigenvalues are equal: each alone has no tangent (it moves as an eigenvalue of a block)."""
    if np.any(eigenvalue_ties(w)):
        raise ValueError(f"astgrad: no tangent for the eigenvalues of {name} where two are equal: each alone has "
                         f"no derivative there; the reverse mode (grad) differentiates a symmetric function of them")


def eigenvalues_gradient(name, g, w, a, UPLO):
    """The gradient of a loss of the eigenvalues ``w`` of the matrix ``UPLO`` reads from ``a``, refused where
    the loss weighs equal ones apart."""
    weighed_alike(name, w, g)
    v = np.linalg.eigh(a, UPLO)[1]
    return one_triangle((v * np.expand_dims(g, -2)) @ T(v), UPLO)


def eigenvalues_tangent(name, t, w, a, UPLO):
    """The tangent of the eigenvalues ``w`` along ``t``, refused where two are equal."""
    distinct(name, w)
    v = np.linalg.eigh(a, UPLO)[1]
    return np.sum(v * (symmetric_read(t, UPLO) @ v), axis=-2)


@defvjp(eigh_values)
def eigh_values_vjp(g, ans, a, UPLO="L"):
    return eigenvalues_gradient("numpy.linalg.eigh", g, ans, a, UPLO)


@defvjp(eigh_vectors)
def eigh_vectors_vjp(g, ans, a, UPLO="L"):
    w = np.linalg.eigh(a, UPLO)[0]
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    n = np.shape(a)[-1]
    if np.any(eigenvalue_ties(w)):
        raise ValueError("astgrad: no gradient for the eigenvectors of numpy.linalg.eigh: two eigenvalues are "
                         "equal, so the vectors are not determined; a loss of the eigenvalues alone "
                         "(np.linalg.eigvalsh, or eigh(a)[0]) has a gradient")
    f = np.where(np.eye(n, dtype=bool), 0, 1 / np.where(np.eye(n, dtype=bool), 1, gaps))
    inner = ans @ (f * (T(ans) @ g)) @ T(ans)
    return one_triangle(0.5 * (inner + T(inner)), UPLO)


@defvjp(np.linalg.eigh)
def eigh(g, ans, a, UPLO="L"):
    """``g`` is (gradient of the eigenvalues, gradient of the eigenvectors)."""
    g_w, g_v = g
    total = 0
    if g_w is not None:
        total = total + eigh_values_vjp(g_w, ans[0], a, UPLO)
    if g_v is not None:
        total = total + eigh_vectors_vjp(g_v, ans[1], a, UPLO)
    return total


@defvjp(np.linalg.pinv)
def pinv(g, ans, a, rcond=None, hermitian=False, *, rtol=None):
    if hermitian:  # numpy reads the lower triangle as a symmetric matrix
        return one_triangle(pinv(g, ans, np.tril(a) + T(np.tril(a, -1))), "L")
    p = ans
    eye_m = np.eye(np.shape(a)[-2])
    eye_n = np.eye(np.shape(a)[-1])
    # the last two terms hold a^H, so a complex a gets their conjugates (docs/rules.md, complex numbers)
    return (-T(p) @ g @ T(p)
            + np.conj((eye_m - a @ p) @ T(g) @ p @ np.conj(T(p)))
            + np.conj(np.conj(T(p)) @ p @ T(g) @ (eye_n - p @ a)))


# ------------------------------------------------------------ forward rules


def matmul_jvp_a(t, ans, a, b):
    return np.matmul(t, b)


def matmul_jvp_b(t, ans, a, b):
    return np.matmul(a, t)


def dot_jvp_a(t, ans, a, b):
    return np.dot(t, b)


def dot_jvp_b(t, ans, a, b):
    return np.dot(a, t)


def vdot_jvp_a(t, ans, a, b):
    return np.vdot(t, b)


def vdot_jvp_b(t, ans, a, b):
    return np.vdot(a, t)


def inner_jvp_a(t, ans, a, b):
    return np.inner(t, b)


def inner_jvp_b(t, ans, a, b):
    return np.inner(a, t)


def outer_jvp_a(t, ans, a, b):
    return np.outer(t, b)


def outer_jvp_b(t, ans, a, b):
    return np.outer(a, t)


def tensordot_jvp_a(t, ans, a, b, axes=2):
    return np.tensordot(t, b, axes)


def tensordot_jvp_b(t, ans, a, b, axes=2):
    return np.tensordot(a, t, axes)


def einsum_jvp(t, ans, *args, argnum, **kwargs):
    """The tangent in the place of argument ``argnum`` (an operand, in either of einsum's two forms)."""
    return np.einsum(*args[:argnum], t, *args[argnum + 1:], **kwargs)


def kron_jvp_a(t, ans, a, b):
    return np.kron(t, b)


def kron_jvp_b(t, ans, a, b):
    return np.kron(a, t)


def cross_jvp_a(t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return np.cross(t, b, axisa, axisb, axisc, axis)


def cross_jvp_b(t, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return np.cross(a, t, axisa, axisb, axisc, axis)


defjvp(np.matmul, matmul_jvp_a, matmul_jvp_b)
defjvp(np.dot, dot_jvp_a, dot_jvp_b)
defjvp(np.vdot, vdot_jvp_a, vdot_jvp_b)
defjvp(np.inner, inner_jvp_a, inner_jvp_b)
defjvp(np.outer, outer_jvp_a, outer_jvp_b)
defjvp(np.tensordot, tensordot_jvp_a, tensordot_jvp_b)
defjvp(np.einsum, rest=einsum_jvp)


# ------------------------------------------------------------ np.einsum's reverse rule, differentiated again
# Generated gradients call the rule (its *operands keep it from being inlined), and a hessian differentiates
# that code again: the rule is a table entry of its own.  Each operand's gradient is linear in g and in each
# other operand, and does not read its own operand's values.


def _einsum_string_form(subscripts):
    if not isinstance(subscripts, str):
        raise ValueError("astgrad: a second derivative through np.einsum's sublist form (operands and lists of "
                         "axes) is not generated; write the subscripts as a string (np.einsum('ij,jk->ik', a, b))")


def _with_operand(operands, j, value):
    return operands[:j] + (value,) + operands[j + 1:]


def _no_cotangent(c) -> bool:
    return c is None or isinstance(c, float) and c == 0.0  # generated code's 0.0: no gradient yet


def einsum_gradient_vjp(c, ans, g, value, subscripts, *operands, **kwargs):
    """The rule's own reverse rule: ``c`` holds a cotangent per item of what it returns (None first)."""
    _einsum_string_form(subscripts)
    parts = list(c)[1:]
    g_seed = np.zeros(np.shape(g), np.result_type(g))
    grads = [None] * len(operands)
    for i, c_i in enumerate(parts):
        if _no_cotangent(c_i):
            continue
        moved = _with_operand(operands, i, c_i)
        g_seed = g_seed + np.einsum(subscripts, *moved, **kwargs)  # <c_i, G_i(g)>: linear in g
        for j, part in enumerate(einsum(g, value, subscripts, *moved, **kwargs)[1:]):
            if j != i:  # <c_i, G_i> in operand j is G_j with operand i replaced by c_i
                grads[j] = part if grads[j] is None else grads[j] + part
    # the rule does not read np.einsum's value (its second argument): a zero gradient there
    return (g_seed, np.zeros(np.shape(value)), None,
            *[np.zeros(np.shape(o)) if part is None else part for o, part in zip(operands, grads)])


def einsum_gradient_along_seed(t, ans, g, value, subscripts, *operands, **kwargs):
    return einsum(t, value, subscripts, *operands, **kwargs)


def einsum_gradient_along_operand(t, ans, g, value, subscripts, *operands, argnum, **kwargs):
    """Along operand ``j``: each other operand's gradient with operand ``j`` replaced by ``t``; its own is zero."""
    _einsum_string_form(subscripts)
    j = argnum - 3
    found = einsum(g, value, subscripts, *_with_operand(operands, j, t), **kwargs)
    return tuple(part if i != j + 1 else np.zeros(np.shape(operands[j]), np.result_type(part))
                 for i, part in enumerate(found))


def einsum_gradient_along_value(t, ans, g, value, subscripts, *operands, **kwargs):
    """The rule does not read np.einsum's value: a zero tangent."""
    return (None, *[np.zeros(np.shape(o), np.result_type(g, t)) for o in operands])


defvjp(einsum, einsum_gradient_vjp)
defjvp(einsum, einsum_gradient_along_seed, einsum_gradient_along_value, None, rest=einsum_gradient_along_operand)
sequence_outputs.add(einsum)
defjvp(np.kron, kron_jvp_a, kron_jvp_b)
defjvp(np.cross, cross_jvp_a, cross_jvp_b)


def symmetric_read(t, UPLO="L"):
    """The symmetric matrix numpy reads from one triangle of ``t`` (``eigh``, ``cholesky``, ``hermitian=True``)."""
    if np.iscomplexobj(t):
        raise ValueError("astgrad: no tangent for a complex Hermitian matrix read through one triangle "
                         "(numpy.linalg.eigh, eigvalsh, cholesky, hermitian=True); pass a real matrix")
    if UPLO == "L":
        return np.tril(t) + T(np.tril(t, -1))
    return np.triu(t) + T(np.triu(t, 1))


@defjvp(np.linalg.inv)
def inv_jvp(t, ans, a):
    return -ans @ t @ ans


@defjvp(np.linalg.det)
def det_jvp(t, ans, a):
    """One number per matrix: the reverse rule's gradient for a unit weight, dotted with ``t`` (also where a is singular)."""
    return np.sum(det(np.ones(np.shape(ans)), ans, a) * t, axis=(-2, -1))


@defjvp(np.linalg.slogdet)
def slogdet_jvp(t, ans, a):
    """``d det / det = tr(a^-1 t)``: its real part moves log|det|, its imaginary part the phase ``sign``.

    A real sign is piecewise constant: no tangent.
    """
    moved = np.sum(T(np.linalg.inv(a)) * t, axis=(-2, -1))
    if not np.iscomplexobj(ans[0]):
        return None, np.real(moved)
    return ans[0] * 1j * np.imag(moved), np.real(moved)


@defjvp(slogdet_sign)
def slogdet_sign_jvp(t, ans, a):
    if not np.iscomplexobj(ans):
        return np.zeros(np.shape(ans))
    return ans * 1j * np.imag(np.sum(T(np.linalg.inv(a)) * t, axis=(-2, -1)))


@defjvp(logabsdet)
def logabsdet_jvp(t, ans, a):
    return np.real(np.sum(T(np.linalg.inv(a)) * t, axis=(-2, -1)))  # log|det| is real, also for a complex a


def solve_jvp_a(t, ans, a, b):
    vector = np.ndim(b) == 1 if _SOLVE_VECTOR_IS_1D else np.ndim(b) == np.ndim(a) - 1
    if vector:
        return -np.squeeze(np.linalg.solve(a, t @ np.expand_dims(ans, -1)), -1)
    return -np.linalg.solve(a, t @ ans)


def solve_jvp_b(t, ans, a, b):
    return np.linalg.solve(a, t)


defjvp(np.linalg.solve, solve_jvp_a, solve_jvp_b)


@defjvp(np.linalg.cholesky)
def cholesky_jvp(t, ans, a, upper=False):
    """``dL = L phi(L^-1 dA L^-T)``, ``phi`` the lower triangle with half the diagonal."""
    if upper:
        raise ValueError("astgrad: the tangent of numpy.linalg.cholesky supports upper=False only")
    l_inv = np.linalg.inv(ans)
    inner = l_inv @ symmetric_read(t, "L") @ T(l_inv)
    return ans @ (np.tril(inner) - 0.5 * np.eye(np.shape(a)[-1]) * inner)


@defjvp(eigh_values)
def eigh_values_jvp(t, ans, a, UPLO="L"):
    return eigenvalues_tangent("numpy.linalg.eigh", t, ans, a, UPLO)


@defjvp(eigh_vectors)
def eigh_vectors_jvp(t, ans, a, UPLO="L"):
    w = np.linalg.eigh(a, UPLO)[0]
    gaps = np.expand_dims(w, -2) - np.expand_dims(w, -1)
    n = np.shape(a)[-1]
    if np.any(eigenvalue_ties(w)):
        raise ValueError("astgrad: no tangent for the eigenvectors of numpy.linalg.eigh: two eigenvalues are "
                         "equal, so the vectors are not determined; a function of the eigenvalues alone "
                         "(np.linalg.eigvalsh, or eigh(a)[0]) has one")
    f = np.where(np.eye(n, dtype=bool), 0, 1 / np.where(np.eye(n, dtype=bool), 1, gaps))
    return ans @ (f * (T(ans) @ symmetric_read(t, UPLO) @ ans))


@defjvp(np.linalg.eigh)
def eigh_jvp(t, ans, a, UPLO="L"):
    return eigh_values_jvp(t, ans[0], a, UPLO), eigh_vectors_jvp(t, ans[1], a, UPLO)


@defjvp(np.linalg.pinv)
def pinv_jvp(t, ans, a, rcond=None, hermitian=False, *, rtol=None):
    """``dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P`` (Golub and Pereyra; ``^H`` conjugates)."""
    if hermitian:  # numpy reads the lower triangle as a symmetric matrix
        return pinv_jvp(symmetric_read(t, "L"), ans, np.tril(a) + T(np.tril(a, -1)))
    p, p_h, t_h = ans, np.conj(T(ans)), np.conj(T(t))
    eye_m = np.eye(np.shape(a)[-2])
    eye_n = np.eye(np.shape(a)[-1])
    return (-p @ t @ p
            + p @ p_h @ t_h @ (eye_m - a @ p)
            + (eye_n - p @ a) @ t_h @ p_h @ p)


# ---------------------------------------------------------------- the array API's names for the same products


for _alias, _original in ((np.linalg.matmul, np.matmul), (np.linalg.outer, np.outer),
                          (np.linalg.tensordot, np.tensordot)):
    defvjp(_alias, {np.matmul: matmul, np.outer: outer, np.tensordot: tensordot}[_original])
    defjvp(_alias, *{np.matmul: (matmul_jvp_a, matmul_jvp_b), np.outer: (outer_jvp_a, outer_jvp_b),
                     np.tensordot: (tensordot_jvp_a, tensordot_jvp_b)}[_original])


def matrix_transpose(g, ans, x):
    """The last two axes swapped back."""
    return np.swapaxes(g, -1, -2)


def matrix_transpose_jvp(t, ans, x):
    return np.swapaxes(t, -1, -2)


for _transpose in (np.matrix_transpose, np.linalg.matrix_transpose):
    defvjp(_transpose, matrix_transpose)
    defjvp(_transpose, matrix_transpose_jvp)


def vecdot(g, ans, x1, x2, axis=-1):
    """``sum(conj(x1) * x2, axis)``: conjugate-linear in ``x1`` as ``vdot`` is, linear in ``x2``."""
    g = np.expand_dims(g, axis)
    return np.conj(g * x2), g * np.conj(x1)


def vecdot_jvp_x1(t, ans, x1, x2, axis=-1):
    return np.sum(np.conj(t) * x2, axis=axis)


def vecdot_jvp_x2(t, ans, x1, x2, axis=-1):
    return np.sum(np.conj(x1) * t, axis=axis)


for _vecdot in (np.vecdot, np.linalg.vecdot):
    defvjp(_vecdot, vecdot)
    defjvp(_vecdot, vecdot_jvp_x1, vecdot_jvp_x2)
