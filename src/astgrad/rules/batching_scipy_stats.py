"""Batching rules (``astgrad.vmap``) of ``scipy.stats``' entries, registered with their derivative rules once a
program imports ``scipy.stats`` (``_deferred``).

The univariate densities and distribution functions broadcast their
points and parameters elementwise: they share the elementwise rule.  The
multivariate ones (``multivariate_normal.logpdf``, ``dirichlet``'s) read a
point along an axis and squeeze what they return, so they loop over the
examples in Python (:func:`looped`).
"""

from __future__ import annotations

from scipy import stats

from ._registry import defbatch
from .batching import elementwise
from .batching_linalg import looped
from .scipy_stats import _ELEMENTWISE

__all__: list = []

for _family, _rules in _ELEMENTWISE.items():
    for _rule in _rules:
        defbatch(getattr(getattr(stats, _family), _rule.__name__[len(_family) + 1:]), elementwise)


@defbatch(stats.multivariate_normal.logpdf)
def multivariate_normal_logpdf_batched(bdims, x, mean=None, cov=1, allow_singular=False):
    return looped(stats.multivariate_normal.logpdf, bdims[:3], (x, mean, cov), {"allow_singular": allow_singular})


@defbatch(stats.dirichlet.logpdf)
def dirichlet_logpdf_batched(bdims, x, alpha):
    return looped(stats.dirichlet.logpdf, bdims, (x, alpha))


@defbatch(stats.dirichlet.pdf)
def dirichlet_pdf_batched(bdims, x, alpha):
    return looped(stats.dirichlet.pdf, bdims, (x, alpha))
