"""Elementwise chains written as one expression, so that Numba compiles them into one loop.

The generated code writes one operation a line (``t9 = t10 * t12``,
``t4 = t5 + t9``, ``t3 = np.exp(t4)``).  Numba fuses the elementwise
operations of one expression into a single loop with no arrays between
them (its array-expression rewrite), but not across statements: each line
allocates and fills an array.  This pass puts a temporary's expression in
the place of its one read, ``t3 = np.exp(t5 + t10 * t12)``, where that
gives the same values:

* the temporary is bound once in the function (besides the ``t = None``
  that declares it) by arithmetic (``+ - * / **``, unary minus) or a numpy
  ufunc on names, numbers, items or slices of names (``z[:, j]``) and such
  expressions, and read once, later in
  the same block, as an operand of arithmetic or of a ufunc, or as the
  value ``add_at``/``added_at`` adds at a slice (loops.py adds it element by
  element, or computes it first); ``chosen(c, a, b)`` (``np.where``) of a
  condition that is a name (or ``saved_value`` of one) counts as such an
  operation of its branches, never of its condition (loops.py computes the
  branch chosen at each element);
* between the two, no statement binds a name the expression reads, writes
  into an item or an attribute, adds into an array in place (``add_at``),
  or changes a list the expression reads an item of (a method call on it,
  ``grow``, ``split_last``, ``add_item``): the expression reads the same
  values where it moves.

A temporary whose shape the reverse sweep reads (``shape(t5)``), that is
saved, or that is read twice keeps its line.
"""

from __future__ import annotations

import numpy as np

from ...rules import sequences
from ...transform import runtime
from ...transform.ir import compat
from ...transform.ir.compat import gast
from ...transform.runtime.origins import keep_origin
from .reductions import _constant
from .saved import saved_value
from .shaping import chosen, rolled

_ARITHMETIC = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.Pow)
#: statements a temporary's read may be in (not a loop or a branch: a read there may run another number of times)
_READERS = (gast.Assign, gast.Expr, gast.Return)


def fuse(fn_def, namespace) -> None:
    """Rewrite ``fn_def`` in place: each temporary read once in an elementwise chain becomes part of it."""
    stores: dict = {}
    loads: dict = {}
    shapes = _shape_reads(fn_def, namespace)
    for node in compat.walk(fn_def):
        if isinstance(node, gast.Name) and id(node) not in shapes:
            table = loads if isinstance(node.ctx, gast.Load) else stores
            table[node.id] = table.get(node.id, 0) + 1
    declared = {s.targets[0].id for s in fn_def.body if _declaration(s)}
    once = {name for name, count in loads.items() if count == 1 and stores.get(name, 0) == 1 + (name in declared)}
    once -= {a.id for a in fn_def.args.args}
    if not once:
        return
    shaped = {name for name in shapes.values() if name in once}
    fused: set = set()
    _blocks(fn_def, once, namespace, shaped, fused)
    if fused & shaped:  # their shape is what the name holds now: shape(t) is t
        _read_shapes_as_names(fn_def, fused & shaped, namespace)


def _shape_reads(fn_def, namespace) -> dict:
    """id of each name read as ``shape(name)`` (the call's only argument) -> the name."""
    return {id(node.args[0]): node.args[0].id for node in compat.walk(fn_def)
            if _shape_call(node, namespace)}


def _shape_call(node, namespace) -> bool:
    return isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
        and isinstance(node.args[0], gast.Name) and _callee(node.func, namespace) is runtime.shape


def _read_shapes_as_names(fn_def, names, namespace) -> None:
    """``held_shape(t)`` for ``shape(t)`` where ``t`` holds the shape of what it named."""
    held = _bound(namespace, held_shape)
    for node in compat.walk(fn_def):
        if _shape_call(node, namespace) and node.args[0].id in names:
            node.func = compat.name(held)


def held_shape(value):
    """The shape a fused temporary holds (``fused_shape``), for ``shape(t)`` of the array it named."""
    return value


def _declaration(stmt) -> bool:
    """``t = None`` (how the generated code declares a name a loop binds)."""
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
        and isinstance(stmt.value, gast.Constant) and stmt.value.value is None


def _blocks(node, once, namespace, shaped, fused) -> None:
    for field in ("body", "orelse", "finalbody"):
        stmts = getattr(node, field, None)
        if isinstance(stmts, list) and stmts and isinstance(stmts[0], gast.stmt):
            setattr(node, field, _block(stmts, once, namespace, shaped, fused))
            for stmt in getattr(node, field):
                _blocks(stmt, once, namespace, shaped, fused)


def _block(stmts, once, namespace, shaped, fused) -> list:
    out = list(stmts)
    i = 0
    while i < len(out):
        stmt = out[i]
        if _temporary(stmt, once, namespace):
            name = stmt.targets[0].id
            at = _reader(out, i, name, stmt.value, namespace)
            leaves = _leaves(stmt.value)
            if at is not None and (name not in shaped or leaves):
                _replace(out[at], name, stmt.value)
                fused.add(name)
                if name in shaped:  # the shape the reverse sweep reads, from the operands, without the array
                    helper = compat.name(_bound(namespace, fused_shape))
                    out[i] = keep_origin(stmt, compat.assign(name, compat.call(helper, leaves)))
                else:
                    del out[i]
                    continue  # the next statement is at i now
        i += 1
    return out


def _leaves(value) -> list:
    """The names and items an elementwise expression reads (each once), for the shape of its result."""
    found: dict = {}

    def visit(node):
        if isinstance(node, (gast.Name, gast.Subscript)):
            found.setdefault(compat.to_source(node).strip(), node)
        elif isinstance(node, gast.BinOp):
            visit(node.left)
            visit(node.right)
        elif isinstance(node, gast.UnaryOp):
            visit(node.operand)
        elif isinstance(node, gast.Call):
            for a in node.args:
                visit(a)
    visit(value)
    return [compat.clone(n) for n in found.values()]


def fused_shape(*operands):
    """The shape of an elementwise expression of ``operands`` (numpy's broadcasting), without computing it."""
    return np.broadcast_shapes(*(np.shape(o) for o in operands))


def _bound(namespace, obj) -> str:
    """The global name of ``obj`` in ``namespace``, bound under its own name if it has none."""
    for name, value in namespace.items():
        if value is obj:
            return name
    if obj.__name__ in namespace:
        raise KeyError(f"astgrad: the generated module binds {obj.__name__!r} to something else")
    namespace[obj.__name__] = obj
    return obj.__name__


def _temporary(stmt, once, namespace) -> bool:
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
        and stmt.targets[0].id in once and _elementwise(stmt.value, namespace)


def _elementwise(node, namespace) -> bool:
    """Arithmetic and numpy ufuncs of names and numbers (at least one operation)."""
    if isinstance(node, gast.BinOp):
        return isinstance(node.op, _ARITHMETIC) and _operand(node.left, namespace) and _operand(node.right, namespace)
    if isinstance(node, gast.UnaryOp):
        return isinstance(node.op, (gast.USub, gast.UAdd)) and _operand(node.operand, namespace)
    if isinstance(node, gast.Call):
        if rolled_read(node, namespace):
            return True
        if _choice(node, namespace):
            return _operand(node.args[1], namespace) and _operand(node.args[2], namespace)
        return not node.keywords and isinstance(_callee(node.func, namespace), np.ufunc) and node.args \
            and all(_operand(a, namespace) for a in node.args)
    return False


def _choice(node, namespace) -> bool:
    """``chosen(c, a, b)`` (``np.where``) of a condition ``c`` that is a name or ``saved_value`` of one:
    elementwise in its branches (``loops`` computes the branch chosen at each element)."""
    if not (isinstance(node, gast.Call) and _callee(node.func, namespace) is chosen and len(node.args) == 3
            and not node.keywords):
        return False
    condition = node.args[0]
    if isinstance(condition, gast.Call) and len(condition.args) == 1 and not condition.keywords:
        condition = condition.args[0] if _callee(condition.func, namespace) is saved_value else condition
    return isinstance(condition, gast.Name)


def rolled_read(node, namespace) -> bool:
    """``rolled(x, s, k)`` of a name ``x``, a shift that is a name or an integer, a constant axis ``k``:
    an elementwise read (``loops`` reads it at the shifted index, with no array between)."""
    return isinstance(node, gast.Call) and _callee(node.func, namespace) is rolled and len(node.args) == 3 \
        and not node.keywords and isinstance(node.args[0], gast.Name) \
        and (isinstance(node.args[1], gast.Name) or type(_constant(node.args[1])) is int) \
        and type(_constant(node.args[2])) is int


def _operand(node, namespace) -> bool:
    if isinstance(node, gast.Name):
        return True
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, gast.Subscript):  # z[:, j], u[1:-1]: a read of names, numbers and slices
        return isinstance(node.value, gast.Name) and all(
            isinstance(n, (gast.Name, gast.Constant, gast.Slice, gast.Tuple, gast.expr_context, gast.UnaryOp, gast.USub))
            for n in compat.walk(node.slice))
    return _elementwise(node, namespace)


def _reader(stmts, i, name, value, namespace):
    """The position of the statement after ``i`` that reads ``name``, if the value may move there; else None."""
    read = {n.id for n in compat.walk(value) if isinstance(n, gast.Name)}
    for at in range(i + 1, len(stmts)):
        stmt = stmts[at]
        names = [n for n in compat.walk(stmt) if isinstance(n, gast.Name)]
        if any(n.id == name for n in names):
            fits = isinstance(stmt, _READERS) and _operand_of_elementwise(stmt, name, namespace)
            return at if fits and not _nested_scope(stmt, name) else None
        if any(n.id in read and not isinstance(n.ctx, gast.Load) for n in names) or _writes(stmt, namespace) \
                or _changes_in_place(stmt, read, namespace):
            return None
    return None


def _operand_of_elementwise(stmt, name, namespace) -> bool:
    """Whether ``stmt`` reads ``name`` as an operand of arithmetic or of a ufunc (where Numba fuses it)."""
    for node in compat.walk(stmt):
        if isinstance(node, gast.BinOp) and name in _names(node.left, node.right) \
                or isinstance(node, gast.UnaryOp) and name in _names(node.operand):
            return _elementwise(node, namespace)
        if isinstance(node, gast.Call) and name in _names(*node.args):
            if _callee(node.func, namespace) in _ADDS_AT:  # the added value: loops.py adds it element by element
                return len(node.args) == 4 and not node.keywords and _names(node.args[1]) == {name}
            if _choice(node, namespace) and name in _names(node.args[0]):
                return False  # not into the condition
            return not rolled_read(node, namespace) and _elementwise(node, namespace)  # not into a roll's array
    return False


def _names(*nodes) -> set:
    return {n.id for n in nodes if isinstance(n, gast.Name)}


def _nested_scope(stmt, name) -> bool:
    """Whether ``name`` is read inside a lambda or a comprehension of ``stmt`` (run later, or many times)."""
    scopes = (gast.Lambda, gast.GeneratorExp, gast.ListComp, gast.SetComp, gast.DictComp)
    return any(isinstance(n, gast.Name) and n.id == name
               for s in compat.walk(stmt) if isinstance(s, scopes) for n in compat.walk(s))


def _writes(stmt, namespace) -> bool:
    """Whether ``stmt`` may change an array in place: an item or attribute written, ``+=``, ``add_at``; or a block."""
    if not isinstance(stmt, _READERS):
        return True
    for node in compat.walk(stmt):
        if isinstance(node, (gast.Subscript, gast.Attribute)) and not isinstance(node.ctx, gast.Load):
            return True
        if isinstance(node, gast.AugAssign):
            return True
        if isinstance(node, gast.Call) and _callee(node.func, namespace) is runtime.add_at:
            return True
    return False


def _changes_in_place(stmt, read, namespace) -> bool:
    """Whether ``stmt`` calls a method of a name in ``read`` (``ys.pop()``) or passes one to a helper that
    changes a list in place (``grow``, ``split_last``, ``add_item``): an item of it may read another value."""
    for node in compat.walk(stmt):
        if not isinstance(node, gast.Call):
            continue
        if isinstance(node.func, gast.Attribute) and isinstance(node.func.value, gast.Name) \
                and node.func.value.id in read:
            return True
        if _callee(node.func, namespace) in _LIST_CHANGERS and _names(*node.args) & read:
            return True
    return False


#: the gradient of a read of a slice added at it (``add_at(total, g, shape, index)``), in place or into a copy
_ADDS_AT = (runtime.add_at, runtime.added_at)

#: helpers that change a list given to them in place
_LIST_CHANGERS = (sequences.grow, sequences.split_last, runtime.add_item)


def _callee(func, namespace):
    """The object a call's function expression names (``np.exp``, ``add_at``), or None."""
    if isinstance(func, gast.Name):
        return namespace.get(func.id)
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and namespace.get(func.value.id) is np:
        return getattr(np, func.attr, None)
    return None


def _replace(stmt, name, value) -> None:
    """Put ``value`` (in parentheses, as a tree) where ``stmt`` reads ``name``."""
    for node in compat.walk(stmt):
        for field, child in list(node.__dict__.items()):
            if isinstance(child, gast.Name) and child.id == name:
                setattr(node, field, value)
                return
            if isinstance(child, list):
                for k, item in enumerate(child):
                    if isinstance(item, gast.Name) and item.id == name:
                        child[k] = value
                        return
