"""Deterministic names for generated code.

Temporaries are ``t1, t2, ...``, adjoints are ``d`` + the primal name, and
names taken from rules or the generated module namespace keep their own name
unless it is taken.  The same function always gets the same names, which is
what makes golden tests of generated source possible.
"""

from __future__ import annotations

import itertools


class Names:
    """Hands out names that do not collide with anything already used."""

    def __init__(self, taken=()):
        self.taken = set(taken)
        self._temps = itertools.count(1)

    def reserve(self, *names):
        self.taken.update(names)

    def fresh(self, base: str) -> str:
        """``base`` if free, else ``base_2``, ``base_3``, ..."""
        if base not in self.taken:
            self.taken.add(base)
            return base
        for n in itertools.count(2):
            candidate = f"{base}_{n}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate
        raise AssertionError("unreachable")

    def temp(self) -> str:
        while True:
            candidate = f"t{next(self._temps)}"
            if candidate not in self.taken:
                self.taken.add(candidate)
                return candidate


class Adjoints:
    """Maps each primal variable to the name of its adjoint (``x`` -> ``dx``)."""

    def __init__(self, names: Names):
        self.names = names
        self.table: dict[str, str] = {}

    def __call__(self, var: str) -> str:
        if var not in self.table:
            base = "d" + var if not var.startswith("_") else "d" + var
            self.table[var] = self.names.fresh(base)
        return self.table[var]
