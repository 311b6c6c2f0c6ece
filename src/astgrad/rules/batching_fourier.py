"""Batching rules (``astgrad.vmap``) of ``numpy.fft``: the transform itself, along the example's axes.

Each transform runs along axes it is told (``axis=``, ``axes=``), which
count one further along the batched array; where it is told none, along the
example's last axis (``fft``), every axis of the example (``fftn``,
``fftshift``), or its last ``len(s)`` axes (``fftn`` with ``s=``), never the
batch axis.  ``n=``, ``s=`` and ``norm=`` hold for every example as given; an
array given there has no batched meaning, and numpy raises for it.  An
``out=`` array is refused: every example would write into it.
"""

from __future__ import annotations

import numpy as np

from ._registry import defbatch
from .batching import batch_axis, every_axis, unbatchable

__all__: list = []


def transform_axes(a, s, axes):
    """The batched array's axes an n-dimensional transform of each example runs along: ``axes`` one further,
    or numpy's default, every axis of the example (its last ``len(s)`` where ``s`` is given)."""
    if axes is None:
        return every_axis(np.ndim(a)) if s is None else tuple(range(-len(s), 0))
    return batch_axis(axes)


@defbatch(np.fft.fft)
def fft_batched(bdims, a, n=None, axis=-1, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.fft(a, n, batch_axis(axis), norm)


@defbatch(np.fft.ifft)
def ifft_batched(bdims, a, n=None, axis=-1, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.ifft(a, n, batch_axis(axis), norm)


@defbatch(np.fft.rfft)
def rfft_batched(bdims, a, n=None, axis=-1, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.rfft(a, n, batch_axis(axis), norm)


@defbatch(np.fft.irfft)
def irfft_batched(bdims, a, n=None, axis=-1, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.irfft(a, n, batch_axis(axis), norm)


@defbatch(np.fft.hfft)
def hfft_batched(bdims, a, n=None, axis=-1, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.hfft(a, n, batch_axis(axis), norm)


@defbatch(np.fft.ihfft)
def ihfft_batched(bdims, a, n=None, axis=-1, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.ihfft(a, n, batch_axis(axis), norm)


@defbatch(np.fft.fftn)
def fftn_batched(bdims, a, s=None, axes=None, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.fftn(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.ifftn)
def ifftn_batched(bdims, a, s=None, axes=None, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.ifftn(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.rfftn)
def rfftn_batched(bdims, a, s=None, axes=None, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.rfftn(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.irfftn)
def irfftn_batched(bdims, a, s=None, axes=None, norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.irfftn(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.fft2)
def fft2_batched(bdims, a, s=None, axes=(-2, -1), norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.fft2(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.ifft2)
def ifft2_batched(bdims, a, s=None, axes=(-2, -1), norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.ifft2(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.rfft2)
def rfft2_batched(bdims, a, s=None, axes=(-2, -1), norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.rfft2(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.irfft2)
def irfft2_batched(bdims, a, s=None, axes=(-2, -1), norm=None, out=None):
    if out is not None:
        return unbatchable("np.fft with out=, an array every example would write into (assign the result)")
    return np.fft.irfft2(a, s, transform_axes(a, s, axes), norm)


@defbatch(np.fft.fftshift)
def fftshift_batched(bdims, x, axes=None):
    return np.fft.fftshift(x, every_axis(np.ndim(x)) if axes is None else batch_axis(axes))


@defbatch(np.fft.ifftshift)
def ifftshift_batched(bdims, x, axes=None):
    return np.fft.ifftshift(x, every_axis(np.ndim(x)) if axes is None else batch_axis(axes))
