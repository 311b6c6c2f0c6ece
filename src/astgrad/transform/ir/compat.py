"""The one module that touches gast and astor, and what differs between Python versions.

Every other pass builds and reads trees through these helpers, so a new
Python, gast or astor release means changing this file only.  The ``gast``
the passes import from here is gast's namespace with a cheaper ``walk``
(``_ordered_walk``: the same nodes in the same order); gast's own module is
left as it is.
"""

from __future__ import annotations

import ast
import collections
import copy
import types
from typing import TYPE_CHECKING

import astor
import gast as _gast

__all__ = [
    "gast", "parse", "from_ast", "to_source", "make", "name", "const", "attr", "call",
    "assign", "expr_stmt", "if_stmt", "for_stmt", "while_stmt", "ret",
    "tuple_", "binop", "clone", "is_literal", "walk", "add_note", "unparse",
]

def _ordered_walk(node):
    """Every node of a tree in ``ast.walk``'s order (breadth first, a node's children queued before it is
    yielded, so a caller may change a node's fields once it has it): ``ast.walk`` with its two generators a
    node (``iter_child_nodes`` over ``iter_fields``) written out, which cost the transform a tenth of its
    time (the passes walk whole functions hundreds of thousands of times, RK4's first Numba call)."""
    todo = collections.deque((node,))
    take, queue = todo.popleft, todo.append
    while todo:
        node = take()
        for field in node._fields:
            try:
                value = getattr(node, field)
            except AttributeError:
                continue
            if isinstance(value, ast.AST):
                queue(value)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        queue(item)
        yield node


if TYPE_CHECKING:  # the checker reads gast's own names
    gast = _gast
else:  # gast's namespace, read by every pass through this module, with ``walk`` the one above
    gast = types.ModuleType(_gast.__name__, _gast.__doc__)
    gast.__dict__.update({key: value for key, value in vars(_gast).items() if not key.startswith("__")})
    gast.walk = _ordered_walk

_LIST_FIELDS = {"body", "orelse", "args", "keywords", "targets", "elts",
                "decorator_list", "type_params", "posonlyargs", "kwonlyargs",
                "kw_defaults", "defaults", "comparators", "ops", "values",
                "generators", "ifs", "handlers", "finalbody", "type_ignores",
                "keys", "names", "items"}


def parse(source: str):
    """Parse module source into a gast tree."""
    return gast.parse(source)


def from_ast(node):
    """The gast tree of a stdlib ``ast`` node (a new tree: ``node`` is left as it is)."""
    return gast.ast_to_gast(node)


def make(kind: str, **fields):
    """Build a gast node, filling fields this gast version has but we omit."""
    cls = getattr(gast, kind)
    node = cls.__new__(cls)
    for field in cls._fields:
        if field in fields:
            value = fields.pop(field)
        else:
            value = [] if field in _LIST_FIELDS else None
        setattr(node, field, value)
    for key, value in fields.items():  # attributes such as lineno
        setattr(node, key, value)
    return node


def name(identifier: str, store: bool = False):
    return make("Name", id=identifier, ctx=gast.Store() if store else gast.Load())


def const(value):
    return make("Constant", value=value)


def attr(value, attribute: str):
    return make("Attribute", value=value, attr=attribute, ctx=gast.Load())


def call(func, args=(), keywords=None):
    kws = [make("keyword", arg=k, value=v) for k, v in (keywords or {}).items()]
    return make("Call", func=func, args=list(args), keywords=kws)


def assign(target, value):
    if isinstance(target, str):
        target = name(target, store=True)
    elif isinstance(target, (list, tuple)):
        target = make("Tuple", elts=[name(t, store=True) for t in target], ctx=gast.Store())
    return make("Assign", targets=[target], value=value)


def expr_stmt(value):
    return make("Expr", value=value)


def if_stmt(test, body, orelse=()):
    return make("If", test=test, body=list(body) or [make("Pass")], orelse=list(orelse))


def for_stmt(target: str, iterable, body):
    return make("For", target=name(target, store=True), iter=iterable,
                body=list(body) or [make("Pass")], orelse=[])


def while_stmt(test, body):
    return make("While", test=test, body=list(body) or [make("Pass")], orelse=[])


def ret(value):
    return make("Return", value=value)


def tuple_(elts):
    return make("Tuple", elts=list(elts), ctx=gast.Load())


def binop(left, op: str, right):
    return make("BinOp", left=left, op=getattr(gast, op)(), right=right)


def walk(node):
    """Every node of a tree, like ``gast.walk`` but cheaper: a list, for sets and tests, not order.

    (A list grown while it is iterated: half the time of a generator, which
    every pass over a whole function pays for each node.)
    """
    out = [node]
    append = out.append
    for n in out:
        for value in n.__dict__.values():
            if value.__class__ is list:
                for v in value:
                    if isinstance(v, _AST):
                        append(v)
            elif isinstance(value, _AST):
                append(value)
    return out


_AST = gast.AST


def statement_blocks(tree):
    """``(node, field, statements)`` for each non-empty statement list in ``tree``, a ``body`` or an ``orelse``
    (not a Lambda's or an IfExp's expression), outermost first.

    Each list is read when its turn comes, so a caller may replace one
    (``setattr(node, field, new)``) or rewrite the statements of an outer
    block before an inner block is reached: the nodes are those of the
    tree as it was at the start.
    """
    for node in walk(tree):
        yield from own_blocks(node)


def own_blocks(node):
    """``(node, field, statements)`` for each non-empty statement list of ``node`` itself: its body, its orelse."""
    for field in ("body", "orelse"):
        stmts = getattr(node, field, None)
        if stmts.__class__ is list and stmts and isinstance(stmts[0], gast.stmt):
            yield node, field, stmts


def clone(node):
    """A deep copy of a tree (nodes and lists; leaves such as names and constants are immutable)."""
    if isinstance(node, list):
        return [clone(n) for n in node]
    if not isinstance(node, gast.AST):
        return copy.deepcopy(node) if isinstance(node, (dict, set)) else node
    new = node.__class__.__new__(node.__class__)
    for key, value in node.__dict__.items():
        new.__dict__[key] = clone(value) if isinstance(value, (gast.AST, list)) else value
    return new


def is_literal(node) -> bool:
    """A constant, or a tuple of constants (``axis=(0, 1)``)."""
    if isinstance(node, gast.Constant):
        return True
    if isinstance(node, gast.Tuple):
        return all(is_literal(e) for e in node.elts)
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, (gast.USub, gast.UAdd)):
        return isinstance(node.operand, gast.Constant)
    return False


def to_source(node) -> str:
    """Python source for a gast node (module, statement or expression)."""
    tree = gast.gast_to_ast(node)
    return astor.to_source(tree, pretty_source=_one_line)


def _one_line(tokens) -> str:
    # astor's default pretty printer wraps long lines; generated code keeps
    # one statement per line so comments and golden files stay stable.
    return "".join(tokens)


def add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)``: a line a traceback prints below the message (PEP 678, Python 3.11).

    Python 3.10 has neither the method nor the printing.  There the note is
    kept in ``__notes__`` as 3.11 keeps it (pytest and IPython print it from
    there) and the ``exceptiongroup`` backport, a dependency on 3.10 only, is
    imported: it makes plain tracebacks print notes too.  The message stays
    the exception's own.
    """
    if hasattr(exc, "add_note"):
        exc.add_note(note)
        return
    exc.__notes__ = [*getattr(exc, "__notes__", ()), note]  # type: ignore[attr-defined]
    try:
        import exceptiongroup  # noqa: F401
    except ImportError:  # installed without its dependencies: the note is kept, not printed
        pass


def unparse(node: ast.AST) -> str:
    """``ast.unparse`` of a stdlib node, as Python 3.11 and later write it on every version.

    Python 3.10 puts parentheses around the tuple an assignment binds
    (``(t3, t4) = f(x)``, where 3.11 writes ``t3, t4 = f(x)``).
    """
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Tuple) and t.elts for t in node.targets):
        targets = [", ".join(map(ast.unparse, t.elts)) + ("," if len(t.elts) == 1 else "")
                   if isinstance(t, ast.Tuple) and t.elts else ast.unparse(t) for t in node.targets]
        return " = ".join([*targets, ast.unparse(node.value)])
    return ast.unparse(node)
