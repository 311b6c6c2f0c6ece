"""Rules of optional libraries, registered once the user's program has imported the library.

``import astgrad`` never imports scipy: its rules live in modules of their
own (``scipy_special``, ``scipy_linalg``, ``scipy_stats``), and the table registers them
the first time it is asked for a callable it lacks while the library is in
``sys.modules``.  A program that calls ``scipy.special.gammaln`` has
imported ``scipy.special``, so the first lookup of ``gammaln`` finds its
rule.  A rule a user registered earlier for one of these callables is kept.
"""

from __future__ import annotations

import importlib
import sys

#: library module -> the module of astgrad.rules holding its rules
DEFERRED = {
    "scipy.special": "astgrad.rules.scipy_special",
    "scipy.linalg": "astgrad.rules.scipy_linalg",
    "scipy.stats": "astgrad.rules.scipy_stats",
}

_pending = dict(DEFERRED)
#: set once astgrad's own table is complete (``mark_shipped``): no library's rules load while it is filled
ready = False


def load_imported() -> bool:
    """Register the rules of every deferred library imported since the last call; whether any were."""
    global ready
    if not _pending or not ready:
        return False
    imported = [library for library in _pending if library in sys.modules]
    ready = False  # the rules modules' own registrations look entries up: no loading within loading
    try:
        for library in imported:
            _register(_pending.pop(library))
    finally:
        ready = True
    return bool(imported)


def load_all() -> None:
    """Import every deferred library that is installed and register its rules (the catalogue lists them all)."""
    for library in list(_pending):
        try:
            importlib.import_module(library)
        except ImportError:
            _pending.pop(library)
    load_imported()


def _register(module: str) -> None:
    from . import _registry

    before = dict(_registry._TABLE)
    importlib.import_module(module)
    for key, rule in before.items():  # the user's own rule for a library callable stays
        if _registry._TABLE.get(key) is not rule:
            _registry._TABLE[key] = rule
    _registry._SHIPPED.update(key for key in _registry._TABLE if key not in before)
    _registry.changed()
