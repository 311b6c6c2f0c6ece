"""The normal form the passes work on: one operation per statement.

``normalize`` turns a function body into a list of these statements; every
operand is an *atom* (a gast ``Name`` or a literal), so each statement is one
primitive, one copy, one call of a user function or one control-flow node.
Each statement keeps the user's line and node for comments and errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .compat import gast

# Kinds of Op:
#   prim    a primitive with a rule (numpy function, ufunc, operator, method)
#   nondiff a value that carries no gradient (comparisons, x.shape, argmax)
#   copy    y = x
#   stop    y = x.detach(): a copy the gradient does not flow through
#   pack    y = (a, b) / [a, b]
#   unpack  a, b = y
#   call    y = user_function(...): transformed transitively
#   opaque  an operation without a rule: fine while inactive, an error if not


@dataclass
class Op:
    targets: list[str]
    kind: str
    expr: Any                      # gast expression emitted in the primal
    line: int                      # user's line number in the file
    text: str                      # user's source line
    node: Any = None               # user's node, for error locations
    fn: Any = None                 # primitive or user function
    args: list = field(default_factory=list)      # atoms, rule order
    kwargs: dict = field(default_factory=dict)    # name -> atom
    error: Any = None              # (message, hint) raised if active
    sequence: bool = False         # pack into a list rather than a tuple
    inplace: Any = None            # (what, instead): the user's code writes into the target's memory
    through: bool = False          # the write is a[i] = t of a[i][j] = v (normalize.store_through)
    augmented: bool = False        # x op= v on a name (aliasing: a number there is only rebound)
    checkpoint: bool = False       # a call of astgrad.checkpoint(g): its adjoint runs g's forward half again


@dataclass
class If:
    test: str
    body: list
    orelse: list
    line: int
    text: str


@dataclass
class For:
    target: str
    iter: Any                      # gast expression over atoms (range(n) or a name)
    body: list
    line: int
    text: str
    counted: bool = False          # body may break: count the trips
    every: Any = None              # astgrad.checkpointed(iterable, every): the atom of every (a None constant
    #                                by default); None for a loop that is not checkpointed
    snapshots: Any = None          # checkpointed(iterable, snapshots=s): the atom of s (binomial schedule), else None


@dataclass
class While:
    cond: list                     # statements computing the test
    test: str
    body: list
    line: int
    text: str


@dataclass
class Break:
    line: int = 0
    text: str = ""


@dataclass
class Raw:
    """A statement kept as is in the primal with no adjoint (print(...))."""

    stmt: Any
    line: int = 0
    text: str = ""
    guard: Any = None              # (node, message, hint): refused if it reads a value that depends on wrt
    call: Any = None               # the Op of a call kept only for its effect, which this statement runs
    adjoint: Any = None            # a statement the adjoint sweep runs where it passes this one (contexts.py)
    kept: Any = None               # (obj, attr, node) of obj.attr = v into a parameter's object (caller_state)


def atom_names(node) -> list[str]:
    """Local variable names an atom (or small literal expression) reads."""
    if node is None:
        return []
    if isinstance(node, gast.Name):
        return [node.id]
    return [n.id for n in gast.walk(node) if isinstance(n, gast.Name)]


def op_reads(op: Op) -> list[str]:
    names = []
    for a in op.args:
        names += atom_names(a)
    for a in op.kwargs.values():
        names += atom_names(a)
    return names


# -- the one visitor -----------------------------------------------------------
# A pass over this IR dispatches on the statement kind with ``dispatch`` (a
# method per kind) and reaches nested statements through ``blocks`` or
# ``branches``; a new statement kind is added here and in each pass's methods,
# not in an isinstance ladder per module.

def blocks(s) -> list:
    """The statement lists nested in ``s``, in the order they run first: a While's cond, then its body."""
    if isinstance(s, If):
        return [s.body, s.orelse]
    if isinstance(s, For):
        return [s.body]
    if isinstance(s, While):
        return [s.cond, s.body]
    return []


def branches(s) -> list:
    """The statement lists ``s`` enters after its test: ``blocks`` without a While's cond."""
    return [s.body] if isinstance(s, While) else blocks(s)


def control_names(s) -> list:
    """The names a control-flow statement binds or tests itself: a For's target, an If's or While's test."""
    if isinstance(s, For):
        return [s.target]
    if isinstance(s, (If, While)):
        return [s.test]
    return []


def dispatch(visitor, prefix, s, *args):
    """``visitor.<prefix>_<kind>(s, *args)``, the kind being ``op``, ``if``, ``for``, ``while``, ``break``, ``raw``."""
    return getattr(visitor, f"{prefix}_{type(s).__name__.lower()}")(s, *args)


def own_reads(s) -> list:
    """The names statement ``s`` reads itself, not in its nested blocks (a name read twice counts twice)."""
    if isinstance(s, Op):
        return atom_names(s.expr)
    if isinstance(s, (If, While)):
        return [s.test]
    if isinstance(s, For):
        return atom_names(s.iter)
    if isinstance(s, Raw):
        return [n.id for n in gast.walk(s.stmt) if isinstance(n, gast.Name)]
    return []


def assigned(stmts) -> set:
    """Every name the statements (nested ones too) bind: targets, loop variables and tests."""
    return {t for s in walk_statements(stmts) for t in (s.targets if isinstance(s, Op) else control_names(s))}


def binding_sites(body) -> tuple[dict, set]:
    """``(sites, exposed)`` of a body, nested blocks included: ``sites[name]``, each statement binding ``name``
    (an Op binding it alone, a For whose target it is; None for an Op binding several names at once), and
    ``exposed``, the names a statement kept as written (Raw) reads or writes, where anything may happen."""
    exposed: set = set()
    sites: dict = {}
    for s in walk_statements(body):
        if isinstance(s, Op):
            for t in s.targets:
                sites.setdefault(t, []).append(s if len(s.targets) == 1 else None)
        elif isinstance(s, For):
            sites.setdefault(s.target, []).append(s)
        elif isinstance(s, Raw):
            exposed.update(n.id for n in gast.walk(s.stmt) if isinstance(n, gast.Name))
    return sites, exposed


def walk_statements(stmts, nested=blocks):
    """Every statement in a statement list and the blocks ``nested`` gives for each, depth first.

    ``nested=branches`` leaves out a While's cond.
    """
    for s in stmts:
        yield s
        for block in nested(s):
            yield from walk_statements(block, nested)


def walk_ops(stmts):
    """Every Op in a statement list, depth first."""
    return (s for s in walk_statements(stmts) if isinstance(s, Op))


def breaks(stmts) -> bool:
    """Whether ``stmts`` break out of the loop they are the body of (a nested loop's break is its own)."""
    for s in stmts:
        if isinstance(s, Break):
            return True
        if isinstance(s, If) and (breaks(s.body) or breaks(s.orelse)):
            return True
    return False


def first_bindings(body, params) -> dict:
    """``{id(op): names}`` for top-level ops that give a name its first value.

    Before such an op the name has no value, so there is nothing to push
    (and no ``name = None`` to start from), and nothing to restore after
    its adjoint.  Names first assigned inside if/for/while are left out.
    """
    bound = set(params)
    found = {}
    for s in body:
        if isinstance(s, Op):
            new = {t for t in s.targets if t not in bound}
            if new:
                found[id(s)] = new
            bound.update(s.targets)
        else:
            bound.update(t for op in walk_ops([s]) for t in op.targets)
            bound.update(control_names(s))
    return found


def conditional_ops(stmts, inside=False, found=None) -> set:
    """The ids of the Ops of ``stmts`` that run only in a branch of an ``if`` (maybe not for given inputs)."""
    found = set() if found is None else found
    for s in stmts:
        if isinstance(s, Op):
            if inside:
                found.add(id(s))
        else:
            for block in blocks(s):
                conditional_ops(block, inside or isinstance(s, If), found)
    return found
