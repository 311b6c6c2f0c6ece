"""Deterministic names for generated code, none of which meets a user's name.

Temporaries are ``t1, t2, ...``, adjoints are ``d`` + the primal name, and
names taken from rules or the generated module namespace keep their own name
unless it is taken.  The same function always gets the same names, which is
what makes golden tests of generated source possible.

Hygiene: one generated module holds the entry function and a forward and
backward variant of every user function it calls, so the root ``Names`` of a
module is told, before anything is named, every identifier of every user
function it will transform (``UserNames``).  A name local to one generated
function (a temporary, an adjoint, a seed, the stack) avoids all of them, so
it can neither shadow a global or closure variable the user's code reads
nor overwrite one of its locals.  A module-level name (``np``, a runtime
helper, ``forward_f``) avoids the user's locals only: a free name such as
``np`` or a global ``w`` keeps its own name, bound once in the namespace.
"""

from __future__ import annotations

import builtins
import itertools
import types

from ..ir import compat
from ..ir.compat import gast
from .primitives import classify, is_user_function, unwrap_gradient_object

class UserNames:
    """Identifiers of user functions: ``all`` of them, and the ``locals`` among them."""

    def __init__(self, all=(), locals=()):
        self.all = set(all)
        self.locals = set(locals)

    def add_code(self, code, namespace):
        """A code object's names, through every nested code object (lambdas, comprehensions).

        ``co_names`` mixes global names with attribute names; only those
        ``namespace`` (the function's globals) or the builtins define can be
        read as globals, and a global the transform reads must be defined.
        """
        self.locals.update(code.co_varnames, code.co_cellvars)
        self.all.update(code.co_varnames, code.co_cellvars, code.co_freevars)
        self.all.update(n for n in code.co_names if n in namespace or hasattr(builtins, n))
        for const in code.co_consts:
            if isinstance(const, types.CodeType):
                self.add_code(const, namespace)

    def add_tree(self, fn_def):
        """The names of a function's parameters and body: every Name and nested definition.

        (Its decorators, defaults and annotations are evaluated outside it.)
        """
        args = fn_def.args
        params = list(args.posonlyargs or []) + list(args.args) + list(args.kwonlyargs)
        params += [a for a in (args.vararg, args.kwarg) if a is not None]
        self.all.update(a.id for a in params)
        self.locals.update(a.id for a in params)
        for node in (n for stmt in fn_def.body for n in compat.walk(stmt)):
            if isinstance(node, gast.Name):
                self.all.add(node.id)
                if not isinstance(node.ctx, gast.Load):
                    self.locals.add(node.id)
            elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                self.all.add(node.name)
                self.locals.add(node.name)
            elif isinstance(node, (gast.Global, gast.Nonlocal)):
                self.all.update(node.names)
            elif isinstance(node, gast.alias):
                self.all.add((node.asname or node.name).split(".")[0])
                self.locals.add((node.asname or node.name).split(".")[0])

    def covers(self, other: "UserNames") -> bool:
        return other.all <= self.all and other.locals <= self.locals

    def union(self, other: "UserNames") -> "UserNames":
        return UserNames(self.all | other.all, self.locals | other.locals)


def scope_names(fn_def, stores=False, body=None) -> set:
    """Names a function's own scope uses (with ``stores``, assigns): not those only inside comprehensions.

    A comprehension has its own scope, except for its first iterable.  ``body``
    replaces the function's statements (a rewritten body).
    """
    found = set()
    todo = list(fn_def.body if body is None else body)
    for node in todo:
        if isinstance(node, gast.Name) and (not stores or not isinstance(node.ctx, gast.Load)):
            found.add(node.id)
        if isinstance(node, (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)):
            todo.append(node.generators[0].iter)
            continue
        for child in gast.iter_child_nodes(node):
            todo.append(child)
    args = fn_def.args
    return found | {a.id for a in list(args.posonlyargs or []) + list(args.args) + list(args.kwonlyargs)}


def read_elsewhere(code) -> set:
    """Names ``code`` and its nested code objects read from an enclosing scope, the globals or
    as attributes: a comprehension variable among them must not keep its name in generated code."""
    found = set(code.co_names) | set(code.co_freevars)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            found |= read_elsewhere(const)
    return found


class Names:
    """Hands out names that do not collide with anything already used.

    The root of a module's pools names module-level things; each generated
    function has a ``child`` pool for its locals.  A name is taken when the
    pool, its root or (for the root) any child holds it, and as said above
    when the user's functions use it.
    """

    def __init__(self, taken=(), parent: "Names | None" = None, user: UserNames | None = None):
        self.taken = set(taken)
        self.parent = parent
        self.user: UserNames = user if user is not None else (parent.user if parent is not None else UserNames())
        self.children: list[Names] = []
        if parent is not None:
            parent.children.append(self)
        self._next_temp = 1
        self.temps: set[str] = set()

    def child(self, taken=()) -> "Names":
        """Names for one generated function: its own, plus the module's."""
        return Names(taken, parent=self)

    def is_taken(self, name: str) -> bool:
        if name in self.taken:
            return True
        if self.parent is not None:  # a local of one generated function
            return name in self.user.all or name in self.parent.taken
        return name in self.user.locals or any(name in c.taken for c in self.children)

    def reserve(self, *names):
        self.taken.update(names)

    def fresh(self, base: str) -> str:
        """``base`` if free, else ``base_2``, ``base_3``, ..."""
        return self._first_free(base, self.is_taken)

    def local_everywhere(self, base: str) -> str:
        """A root name that every generated function may use as a local (the stack)."""
        assert self.parent is None
        return self._first_free(base, lambda name: name in self.user.all or self.is_taken(name))

    def _first_free(self, base, taken) -> str:
        if not taken(base):
            self.taken.add(base)
            return base
        for n in itertools.count(2):
            candidate = f"{base}_{n}"
            if not taken(candidate):
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


def user_names_of(fn) -> UserNames:
    """The names of ``fn`` and of the user functions it may call, from their code objects."""
    found = UserNames()
    seen = set()
    todo = [fn]
    while todo:
        f = todo.pop()
        code = f.__code__
        if code in seen:
            continue
        seen.add(code)
        found.add_code(code, f.__globals__)
        todo += _callees(f, code)
    return found


def _callees(fn, code) -> list:
    """Functions ``fn`` names (a global, a closure variable, a module's attribute) that a transform would enter."""
    names = set()
    codes = [code]
    for c in codes:
        names.update(c.co_names)
        codes += [k for k in c.co_consts if isinstance(k, types.CodeType)]
    values = [fn.__globals__[name] for name in names if name in fn.__globals__]
    for cell in fn.__closure__ or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:
            pass
    found = []
    try:  # a guess, never a new way to fail: what it misses, build() meets and runs again for
        for module in [v for v in values if isinstance(v, types.ModuleType)]:
            # the module's dict, not getattr: a module's __getattr__ runs code
            # (numpy's warns for np.str, np.object)
            values += [vars(module).get(name) for name in names]
        for value in values:
            value = unwrap_gradient_object(value)
            if is_user_function(value) and classify(value)[0] == "call":  # transformed, not a rule
                found.append(value)
    except Exception:
        pass
    return found
