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

    def __init__(self, taken=(), parent: "Names | None" = None):
        self.taken = set(taken)
        self.parent = parent
        self.children: list[Names] = []
        if parent is not None:
            parent.children.append(self)
        self._next_temp = 1
        self.temps: set[str] = set()

    def child(self, taken=()) -> "Names":
        """Names for one generated function: its own, plus the module's."""
        return Names(taken, parent=self)

    def is_taken(self, name: str) -> bool:
        if name in self.taken or (self.parent is not None and name in self.parent.taken):
            return True
        return any(name in c.taken for c in self.children)

    def reserve(self, *names):
        self.taken.update(names)

    def fresh(self, base: str) -> str:
        """``base`` if free, else ``base_2``, ``base_3``, ..."""
        if not self.is_taken(base):
            self.taken.add(base)
            return base
        for n in itertools.count(2):
            candidate = f"{base}_{n}"
            if not self.is_taken(candidate):
                self.taken.add(candidate)
                return candidate
        raise AssertionError("unreachable")

    def temp(self) -> str:
        while True:
            candidate = f"t{self._next_temp}"
            self._next_temp += 1
            if not self.is_taken(candidate):
                self.taken.add(candidate)
                self.temps.add(candidate)
                return candidate

    def snapshot(self):
        return set(self.taken), self._next_temp

    def restore(self, state):
        self.taken, self._next_temp = set(state[0]), state[1]


class Adjoints:
    """Maps each primal variable to the name of its adjoint (``x`` -> ``dx``)."""

    def __init__(self, names: Names):
        self.names = names
        self.table: dict[str, str] = {}

    def __call__(self, var: str) -> str:
        if var not in self.table:
            self.table[var] = self.names.fresh("d" + var)
        return self.table[var]
