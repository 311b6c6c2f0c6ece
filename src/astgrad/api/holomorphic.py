"""Complex Jacobians of holomorphic functions: ``jacfwd(f, holomorphic=True)`` and ``jacobian(..., holomorphic=True)``.

For ``f`` holomorphic in a complex argument ``z``, its derivative is one
complex matrix ``J[i, j] = d f_i / d z_j`` (JAX's ``holomorphic=True``
returns the same): the forward sweep's tangent along a complex direction
``u`` is ``J u`` and the pullback of a complex cotangent ``c`` is ``c J``
(astgrad's convention, the conjugate of PyTorch's ``.grad``, has no
conjugation for a holomorphic function).  Columns come from the generated
jvp along the complex basis vectors, rows from the generated vjp along the
output's.

JAX takes ``holomorphic=True`` as the caller's promise.  Here it is checked
at the point: a map ``J`` that is the derivative of a holomorphic function
is complex-linear, so along one fixed direction ``v`` the product along
``1j * v`` is ``1j`` times the product along ``v``.  A function that is
not holomorphic there (``abs``, ``conj``, ``real``) fails that test for
almost every ``v``, and the Jacobian is refused instead of returned as a
matrix that means nothing; the cost is two more products.
"""

from __future__ import annotations

import numpy as np

#: one fixed complex direction per size, drawn once: the check is deterministic
_RNG_SEED = 20261203


def _direction(shape) -> np.ndarray:
    rng = np.random.default_rng(_RNG_SEED)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def check_options(holomorphic, has_aux, what: str) -> None:
    """Refuse a ``holomorphic`` that is not a bool, and its combination with ``has_aux``."""
    if not isinstance(holomorphic, bool):
        raise TypeError(f"astgrad.{what}: holomorphic is True or False, got {holomorphic!r}")
    if holomorphic and has_aux:
        raise TypeError(f"astgrad.{what}: holomorphic=True with has_aux=True is not supported; return the output "
                        f"alone from the function you give it")


def _complex_input(value, what: str, name: str) -> np.ndarray:
    if isinstance(value, (dict, list, tuple)):
        raise TypeError(f"astgrad.{what}(..., holomorphic=True): the argument {name!r} holds dicts, lists or tuples; "
                        f"holomorphic Jacobians take one complex array or number per argument")
    if not np.iscomplexobj(value):
        raise TypeError(f"astgrad.{what}(..., holomorphic=True) needs complex inputs, but the argument {name!r} has "
                        f"dtype {np.result_type(value)}: pass it as a complex array (x.astype(complex))")
    return np.asarray(value)


def _complex_output(value, f, what: str):
    if isinstance(value, (dict, list, tuple)) or not np.iscomplexobj(value):
        kind = type(value).__name__ if isinstance(value, (dict, list, tuple)) else f"dtype {np.result_type(value)}"
        raise TypeError(f"astgrad.{what}(..., holomorphic=True) needs a complex array or number as the output, but "
                        f"{getattr(f, '__qualname__', f)} returned {kind}")
    return value


def _check_linear(along, shape, what: str, f, name: str) -> None:
    """Refuse unless ``along(u)``, a product with the derivative, is complex-linear at this point."""
    v = _direction(shape)
    once, turned = np.asarray(along(v)), np.asarray(along(1j * v))
    scale = max(float(np.max(np.abs(once), initial=0.0)), float(np.max(np.abs(turned), initial=0.0)), 1e-300)
    gap = float(np.max(np.abs(turned - 1j * once), initial=0.0))
    if gap > 1e-8 * scale:
        raise ValueError(f"astgrad.{what}(..., holomorphic=True): {getattr(f, '__qualname__', f)} is not holomorphic "
                         f"in {name!r} at this point (its derivative along 1j*v is not 1j times that along v: they "
                         f"differ by {gap:.3g}, against {scale:.3g}), so no complex Jacobian exists there. Take the "
                         f"Jacobian of the real and imaginary parts instead: pass them as two real arguments "
                         f"(z = re + 1j * im inside f) and use wrt=(re, im)")


def forward_columns(f, product, names, inputs, single, args, kwargs, what="jacfwd"):
    """``jacfwd(f, holomorphic=True)(*args)``: one jvp per element of each complex input, checked linear."""
    zs = [_complex_input(x, what, n) for x, n in zip(inputs, names)]
    zeros = [np.zeros_like(z) for z in zs]
    blocks, value = [], None

    def tangents_for(i, u):
        return u if single else tuple(u if j == i else zero for j, zero in enumerate(zeros))

    for i, (z, name) in enumerate(zip(zs, names)):
        def along(u, i=i):
            return product(*args, tangents_for(i, u.astype(complex)), **kwargs)[1]

        _check_linear(along, np.shape(z), what, f, name)
        columns = []
        for index in np.ndindex(*np.shape(z)):
            e = np.zeros(np.shape(z), complex)
            e[index] = 1.0
            value, tangent = product(*args, tangents_for(i, e), **kwargs)
            columns.append(np.asarray(tangent))
        if value is None:
            value = f(*args, **kwargs)
        out = np.shape(_complex_output(value, f, what))
        blocks.append(np.stack(columns, axis=-1).reshape(out + np.shape(z)) if columns else
                      np.zeros(out + np.shape(z), complex))
    return blocks[0] if single else tuple(blocks)


def reverse_rows(f, product, names, inputs, single, args, kwargs, what="jacobian"):
    """``jacobian(f, holomorphic=True)(*args)``: one vjp per element of the complex output, checked linear."""
    zs = [_complex_input(x, what, n) for x, n in zip(inputs, names)]
    out = np.shape(_complex_output(f(*args, **kwargs), f, what))

    def along(c):
        grads = product(*args, c.astype(complex), **kwargs)
        return np.concatenate([np.ravel(g) for g in ((grads,) if single else grads)])

    _check_linear(along, out, what, f, ", ".join(names))
    rows = []
    for index in np.ndindex(*out):
        e = np.zeros(out, complex)
        e[index] = 1.0
        grads = product(*args, e, **kwargs)
        rows.append((grads,) if single else tuple(grads))
    blocks = tuple(np.stack([np.broadcast_to(r[k], np.shape(z)) for r in rows], axis=0).reshape(out + np.shape(z))
                   if rows else np.zeros(out + np.shape(z), complex) for k, z in enumerate(zs))
    return blocks[0] if single else blocks
