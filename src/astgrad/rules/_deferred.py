"""Rules of optional libraries, registered once the user's program has imported the library.

``import astgrad`` never imports scipy: its rules live in modules of their
own (``scipy_special``, ``scipy_linalg`` with ``scipy_spectral``, ``scipy_stats``,
``scipy_signal``), and the table
(``_registry.load_deferred``) registers them the first time it is asked for
a callable it lacks while the library is in ``sys.modules``.  A program
that calls ``scipy.special.gammaln`` has imported ``scipy.special``, so the
first lookup of ``gammaln`` finds its rule.  A rule a user registered
earlier for one of these callables is kept.
"""

from __future__ import annotations

import importlib
import sys

#: library module -> the modules of astgrad.rules holding its rules
DEFERRED = {  # each library's batching rules after its entries
    "scipy.special": ("astgrad.rules.scipy_special", "astgrad.rules.batching_scipy_special"),
    "scipy.linalg": ("astgrad.rules.scipy_linalg", "astgrad.rules.scipy_spectral", "astgrad.rules.batching_scipy_linalg"),
    "scipy.stats": ("astgrad.rules.scipy_stats", "astgrad.rules.batching_scipy_stats"),
    "scipy.signal": ("astgrad.rules.scipy_signal", "astgrad.rules.batching_scipy_signal"),
}

_pending = dict(DEFERRED)


def take_imported() -> list[str]:
    """The rules modules of the deferred libraries imported since the last call, each given out once."""
    if not _pending:
        return []
    return [module for library in [lib for lib in _pending if lib in sys.modules] for module in _pending.pop(library)]


def import_installed() -> None:
    """Import every deferred library that is installed (the catalogue lists all their rules)."""
    for library in list(_pending):
        try:
            importlib.import_module(library)
        except ImportError:
            _pending.pop(library)
