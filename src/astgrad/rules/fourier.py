"""Derivative rules for ``np.fft``.

The discrete Fourier transform is linear with a symmetric matrix, so the
gradient of ``fft`` is ``fft`` of the gradient (``ifft``'s is ``ifft``'s,
with the same ``norm``), cut or zero-padded back to the input's length where
``n=`` or ``s=`` padded or cut it; in the complex convention of
docs/rules.md no conjugation appears (the transform is holomorphic), and a
real input takes the real part.  ``rfft`` keeps the first ``n // 2 + 1``
outputs of ``fft`` of a real input: its gradient is the real part of
``fft`` of the gradient padded to ``n``.  ``irfft`` reads the real and
imaginary parts of its input (the imaginary part of the first and, for an
even ``n``, the middle entry not at all): its gradient is
``conj(rfft(g))`` with the opposite ``norm``, doubled where an entry stands
for itself and its mirror image.  Every transform is linear, so its forward
rule is the transform of the tangent.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._registry import defjvp, defvjp
from .convolution import real_for

#: the norm whose scaling is the transpose of a norm's, between a transform and its inverse
OPPOSITE_NORM: dict[str | None, Any] = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}


def fitted(x, lengths, axes):
    """``x`` cut or zero-padded at the end of each of ``axes`` to ``lengths`` (the transpose of a pad or a cut)."""
    for axis, n in zip(axes, lengths):
        have = np.shape(x)[axis]
        if have > n:
            x = x[(slice(None),) * axis + (slice(0, n),)]
        elif have < n:
            x = np.pad(x, [(0, n - have) if k == axis else (0, 0) for k in range(np.ndim(x))])
    return x


def transform_axes(ndim, s, axes, default):
    """The axes an n-dimensional transform of an array of ``ndim`` axes runs along (non-negative), as numpy
    chooses them.  The helpers take numbers and shapes, not the arrays: what a function returns from an array
    given to it counts as carrying its derivative, and a hessian differentiates these rules again."""
    if axes is None:
        axes = default if default is not None else (range(-len(s), 0) if s is not None else range(ndim))
    return [axis % ndim for axis in axes]


def _lengths(shape, axes):
    return [shape[axis] for axis in axes]


# ---------------------------------------------------------------- complex transforms


@defvjp(np.fft.fft)
def fft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    axes = [axis % np.ndim(a)]
    return real_for(fitted(np.fft.fft(g, None, axis, norm), _lengths(np.shape(a), axes), axes), a)


@defvjp(np.fft.ifft)
def ifft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    axes = [axis % np.ndim(a)]
    return real_for(fitted(np.fft.ifft(g, None, axis, norm), _lengths(np.shape(a), axes), axes), a)


@defvjp(np.fft.fftn)
def fftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    axes = transform_axes(np.ndim(a), s, axes, None)
    return real_for(fitted(np.fft.fftn(g, None, axes, norm), _lengths(np.shape(a), axes), axes), a)


@defvjp(np.fft.ifftn)
def ifftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    axes = transform_axes(np.ndim(a), s, axes, None)
    return real_for(fitted(np.fft.ifftn(g, None, axes, norm), _lengths(np.shape(a), axes), axes), a)


@defvjp(np.fft.fft2)
def fft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    axes = transform_axes(np.ndim(a), s, axes, (-2, -1))
    return real_for(fitted(np.fft.fftn(g, None, axes, norm), _lengths(np.shape(a), axes), axes), a)


@defvjp(np.fft.ifft2)
def ifft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    axes = transform_axes(np.ndim(a), s, axes, (-2, -1))
    return real_for(fitted(np.fft.ifftn(g, None, axes, norm), _lengths(np.shape(a), axes), axes), a)


# ---------------------------------------------------------------- transforms of real values and to real values


def _real_input(a, name):
    if np.iscomplexobj(a):
        raise ValueError(f"astgrad: numpy.fft.{name} of complex values (numpy refuses them too); use numpy.fft.fft")


def rfft_gradient(g, a, lengths, axes, norm):
    """``rfftn``'s gradient: ``fftn`` of ``g`` padded to the full lengths, real part, fitted to ``a``."""
    padded = fitted(g, lengths[-1:], axes[-1:])
    return np.real(fitted(np.fft.fftn(padded, None, axes, norm), _lengths(np.shape(a), axes), axes))


def irfft_gradient(g, ans, a, axes, norm):
    """``irfftn``'s gradient: ``conj(rfftn(g))`` with the opposite norm, doubled where an entry has a mirror."""
    lengths = _lengths(np.shape(ans), axes)
    spectrum = np.conj(np.fft.rfftn(np.real(g), lengths, axes, OPPOSITE_NORM[norm]))
    last, n = axes[-1], lengths[-1]
    doubled = np.full(n // 2 + 1, 2.0)
    doubled[0] = 1.0
    if n % 2 == 0:
        doubled[-1] = 1.0
    layout = [1] * np.ndim(ans)
    layout[last] = -1
    return fitted(spectrum * np.reshape(doubled, layout), _lengths(np.shape(a), axes), axes)


@defvjp(np.fft.rfft)
def rfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    _real_input(a, "rfft")
    axes = [axis % np.ndim(a)]
    return rfft_gradient(g, a, [np.shape(a)[axes[0]] if n is None else n], axes, norm)


@defvjp(np.fft.rfftn)
def rfftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    _real_input(a, "rfftn")
    axes = transform_axes(np.ndim(a), s, axes, None)
    return rfft_gradient(g, a, _lengths(np.shape(a), axes) if s is None else list(s), axes, norm)


@defvjp(np.fft.rfft2)
def rfft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    _real_input(a, "rfft2")
    axes = transform_axes(np.ndim(a), s, axes, (-2, -1))
    return rfft_gradient(g, a, _lengths(np.shape(a), axes) if s is None else list(s), axes, norm)


@defvjp(np.fft.irfft)
def irfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return irfft_gradient(g, ans, a, [axis % np.ndim(a)], norm)


@defvjp(np.fft.irfftn)
def irfftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return irfft_gradient(g, ans, a, transform_axes(np.ndim(a), s, axes, None), norm)


@defvjp(np.fft.irfft2)
def irfft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return irfft_gradient(g, ans, a, transform_axes(np.ndim(a), s, axes, (-2, -1)), norm)


@defvjp(np.fft.hfft)
def hfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    """``irfft(conj(a))`` with the opposite norm: irfft's gradient, conjugated back."""
    return real_for(np.conj(irfft_gradient(g, ans, np.conj(a), [axis % np.ndim(a)], OPPOSITE_NORM[norm])), a)


@defvjp(np.fft.ihfft)
def ihfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    """``conj(rfft(a))`` with the opposite norm: rfft's gradient of the conjugated ``g``."""
    return rfft(np.conj(g), np.conj(ans), a, n, axis, OPPOSITE_NORM[norm])


# ---------------------------------------------------------------- shifts: permutations


@defvjp(np.fft.fftshift)
def fftshift(g, ans, x, axes=None):
    return np.fft.ifftshift(g, axes)


@defvjp(np.fft.ifftshift)
def ifftshift(g, ans, x, axes=None):
    return np.fft.fftshift(g, axes)


# ---------------------------------------------------------------- forward rules: the transform of the tangent


def fft_jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.fft(t, n, axis, norm)


def ifft_jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.ifft(t, n, axis, norm)


def rfft_jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.rfft(t, n, axis, norm)


def irfft_jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.irfft(t, n, axis, norm)


def fftn_jvp(t, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.fftn(t, s, axes, norm)


def ifftn_jvp(t, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.ifftn(t, s, axes, norm)


def rfftn_jvp(t, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.rfftn(t, s, axes, norm)


def irfftn_jvp(t, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.irfftn(t, s, axes, norm)


def fft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return np.fft.fft2(t, s, axes, norm)


def ifft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return np.fft.ifft2(t, s, axes, norm)


def rfft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return np.fft.rfft2(t, s, axes, norm)


def irfft2_jvp(t, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return np.fft.irfft2(t, s, axes, norm)


defjvp(np.fft.fft, fft_jvp)
defjvp(np.fft.ifft, ifft_jvp)
defjvp(np.fft.rfft, rfft_jvp)
defjvp(np.fft.irfft, irfft_jvp)
defjvp(np.fft.fftn, fftn_jvp)
defjvp(np.fft.ifftn, ifftn_jvp)
defjvp(np.fft.rfftn, rfftn_jvp)
defjvp(np.fft.irfftn, irfftn_jvp)
defjvp(np.fft.fft2, fft2_jvp)
defjvp(np.fft.ifft2, ifft2_jvp)
defjvp(np.fft.rfft2, rfft2_jvp)
defjvp(np.fft.irfft2, irfft2_jvp)


@defjvp(np.fft.fftshift)
def fftshift_jvp(t, ans, x, axes=None):
    return np.fft.fftshift(t, axes)


@defjvp(np.fft.ifftshift)
def ifftshift_jvp(t, ans, x, axes=None):
    return np.fft.ifftshift(t, axes)


@defjvp(np.fft.hfft)
def hfft_jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.hfft(t, n, axis, norm)  # real-linear in a: irfft of conj(t)


@defjvp(np.fft.ihfft)
def ihfft_jvp(t, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.ihfft(t, n, axis, norm)
