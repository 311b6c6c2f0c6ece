"""The global namespace of a generated module.

Callables and modules are bound once, at transform time, under their own
names (``np``, ``expand_reduced``) or a numbered variant if that name is
taken.  Data that the user's code reads from globals or closures is looked
up live at call time, so a training loop that updates a global weight sees
the new value without re-transforming.  Every global name generated code
reads is bound here, builtins too, so none falls through to a name of the
user's (see ``naming``).
"""

from __future__ import annotations

import keyword
import math
import types

import numpy as np

from ... import rules
from ..ir import compat
from ..runtime.value_types import other_meaning


def identifier(text: str) -> str:
    """``text`` made into a usable Python name (``<lambda>`` -> ``lambda_``)."""
    name = "".join(c for c in str(text) if c.isascii() and (c.isalnum() or c == "_")) or "fn"
    if name[0].isdigit() or keyword.iskeyword(name):
        name = name + "_"
    return name


class LiveGlobals(dict):
    """A globals dict that reads some names from elsewhere on each access."""

    def __init__(self):
        super().__init__()
        self.live: dict[str, tuple] = {}

    def __fork__(self, copy, memo):
        """A copy binding the same objects and reading the same places (ir/forks.py)."""
        made = memo[id(self)] = LiveGlobals()
        made.update(self)
        made.live = dict(self.live)
        return made

    def __missing__(self, key):
        where = self.live.get(key)
        if where is None:
            raise KeyError(key)
        place, name = where
        if isinstance(place, types.CellType):
            try:
                value = place.cell_contents
            except ValueError:
                raise KeyError(key) from None
        else:
            value = place[name]
        if type(value) is not np.ndarray and (why := other_meaning(value, name)) is not None:
            raise TypeError(f"astgrad: {name}, which the differentiated code reads from "
                            f"{'its closure' if isinstance(place, types.CellType) else 'its globals'}, is {why}.")
        return value


class Namespace:
    def __init__(self, names):
        self.names = names
        self.globals = LiveGlobals()
        self._by_id: dict = {}  # id(obj), or ("live", id(place), key) -> name
        self.order: list[str] = []
        self.pure: set[str] = set()  # names of side-effect-free callables
        self.stack = names.local_everywhere("_stack")  # the stack every generated function may use

    def bind(self, obj, preferred: str) -> str:
        """The name under which ``obj`` is reachable from generated code."""
        known = self._by_id.get(id(obj))
        if known is not None:
            return known
        name = self.names.fresh(identifier(preferred))
        self.globals[name] = obj
        self._by_id[id(obj)] = name
        self.order.append(name)
        return name

    def name_of(self, obj) -> str | None:
        """The name ``obj`` is bound under in the generated module, or None where nothing bound it."""
        return self._by_id.get(id(obj))

    def helper(self, fn) -> str:
        """The name of ``fn``, a side-effect-free function the generated code calls (``shape``, ``add_into``)."""
        name = self.bind(fn, fn.__name__)
        self.pure.add(name)
        return name

    def bind_live(self, place, key: str, preferred: str) -> str:
        token = ("live", id(place), key)
        known = self._by_id.get(token)
        if known is not None:
            return known
        name = self.names.fresh(preferred)
        self.globals.live[name] = (place, key)
        self._by_id[token] = name
        return name

    def ref(self, obj):
        """A gast expression naming ``obj``: ``np.sum``, ``math.sin``, ``sigmoid``."""
        name = getattr(obj, "__name__", None)
        if name and getattr(np, name, None) is obj:
            return compat.attr(compat.name(self.bind(np, "np")), name)
        if name and getattr(np.linalg, name, None) is obj:
            return compat.attr(compat.attr(compat.name(self.bind(np, "np")), "linalg"), name)
        if name and getattr(math, name, None) is obj:
            return compat.attr(compat.name(self.bind(math, "math")), name)
        bound = self.bind(obj, name or "fn")
        if _has_rule(obj):
            self.pure.add(bound)
        return compat.name(bound)


def _has_rule(obj) -> bool:
    return rules.find(obj) is not None
