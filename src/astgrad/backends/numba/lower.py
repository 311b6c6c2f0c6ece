"""The generated numpy module rewritten into the Python subset Numba compiles.

The adjoint the pipeline writes is already close to what Numba's nopython
mode takes: one numpy operation a line, numbers and arrays, a list used as a
stack.  What differs is written here, statement by statement, on the gast
trees before they are rendered, so the text ``.source`` shows is the text
Numba compiles:

* ``del a, b`` (the numpy backend's release of memory) goes: Numba frees
  arrays by reference counting and refuses ``del``;
* a parameter after ``*`` (the seed ``dresult``) becomes an ordinary one
  with the same default: Numba takes no keyword-only parameters;
* ``for i in reversed(range(a, b, s))`` counts down with ``range`` itself:
  Numba has no ``reversed``;
* ``np.s_[1:3]`` (an index a rule passes on) is ``slice(1, 3)``;
* reductions along constant axes, ``np.squeeze`` along constant axes and
  ``np.reshape`` call helpers (reductions.py, shaping.py);
* a linear recurrence's loop is kept as written, without the numpy
  backend's vectorised alternative (``pop_numbers``): compiled, the loop is
  the fast form;
* the gradient of a parameter (or of a local bound once) that starts as
  the number 0.0 starts as zeros of its shape (``zeros_like_gradient``): Numba needs one type per
  variable;
* the entry's check that a parameter is a number (``type(x) is not float
  and shape(x)``) keeps its shape test only: the type test is the numpy
  backend's shortcut, and Numba has no ``type()``.

The runtime helpers the code calls (``shape``, ``unbroadcast``, ...) keep
their names: ``helpers.py`` gives each a Numba implementation.

Long: each rewrite above is small and walks the same trees with the same
namespace; they are one module because together they are the difference
between the two backends' texts, which ``.source`` shows and docs/backends.md
lists row by row.
"""

from __future__ import annotations

import builtins
import math
import types

import numpy as np

from ... import rules
from ...rules import _extra, _support, sequences
from ...transform.ir import compat
from ...transform import runtime
from ...transform.runtime import checks
from ...transform.ir.compat import gast
from ...transform.runtime.origins import keep_origin
from . import reductions, shaping
from .fuse import fuse
from .loops import _declared_none, _integer, stencil_loops
from .saved import saved_value


def lower(functions, namespace, zeros=None, stack=None, adjoints=None, callee_adjoints=None) -> list:
    """Copies of the module's FunctionDefs, rewritten for Numba; ``namespace`` maps global names to objects.

    ``zeros`` maps the entry's adjoint names to parameters of their shape (see ``_zeros_shaped``);
    ``stack`` is the name of the stack generated functions push on; ``adjoints`` maps all the entry's
    adjoint names to their values' names (a local's gradient starts as zeros of it where its value is fixed);
    ``callee_adjoints`` maps each callee's backward function's name to its forward function's and its table.
    """
    out: list = []
    for fn_def in compat.clone(list(functions)):
        _positional(fn_def.args)
        if stack is not None:
            _pushes_of_none(fn_def, stack, namespace)
        if not out and adjoints:  # a value a pass folded into the line reading it has no name to take zeros of
            bound = _bound_names(fn_def)
            adjoints = {gradient: value for gradient, value in adjoints.items() if value in bound}
        if not out and (zeros or adjoints):
            _zeros_shaped_in_order(fn_def, dict(zeros or {}), adjoints or {}, namespace)
        table = adjoints if not out else (callee_adjoints or {}).get(fn_def.name, (None, {}))[1]
        if table:
            kept = _saved_locals(fn_def, namespace)
            maintained = _every_overwrite_saved(fn_def, stack, namespace, kept)
            _zeros_after_pops(fn_def.body, {d: v for d, v in table.items() if v in maintained}, set(), namespace,
                              kept)
        fn_def.body = _block(fn_def.body, namespace, {} if out else adjoints or {}) or [compat.make("Pass")]
        _fold_constant_tests(fn_def, namespace)
        _Slices(namespace).visit(fn_def)
        _KnownTypes(namespace).visit(fn_def)
        _RowsInPlace(namespace).visit(fn_def)
        _MathDomains(namespace).visit(fn_def)
        _Reductions(namespace).visit(fn_def)
        fn_def.body = _without_empty_checks(fn_def.body, namespace) or [compat.make("Pass")]
        _tuples_for_arrays(fn_def, namespace, stack)
        _index_lists_as_arrays(fn_def, namespace, stack)
        _constant_rows(fn_def, namespace)
        fuse(fn_def, namespace)
        _items_added_in_place(fn_def.body, namespace)
        stencil_loops(fn_def, namespace)
        out.append(fn_def)
    if stack is not None:
        _callee_parameter_zeros(out, stack, namespace)
        _callee_local_zeros(out, stack, namespace, callee_adjoints or {})
        _unread_parameter_zeros(out, stack, namespace)
        _seed_guard_zeros(out, stack, namespace, callee_adjoints or {})
    return out


def _unread_parameter_zeros(functions, stack, namespace) -> None:
    """``return zeros_like_gradient(a), db`` for a callee's ``return 0.0, db``, ``a`` a parameter of its forward
    function that the forward never rebinds (and the seed guard's ``0.0`` for ``a`` the same).

    A callee returns one gradient per parameter, in their order; one it
    never reads gets the number 0.0.  The caller binds it to its argument's
    gradient (``dx = t44`` for ``x = h(x, y)``), and where the caller's other
    lines make that an array, Numba refuses the two types.  Zeros of the
    parameter's shape give the same numbers to whatever the caller adds
    them to; the forward saves ``a`` with its other values (one tuple,
    ``_callee_pair``) and the backward pops it.  Compiled,
    ``zeros_like_gradient`` of a value that is neither a number nor an array
    is the 0.0 written here before.
    """
    present = {f.name: f for f in functions}
    for backward in functions[1:]:
        if not backward.name.startswith("backward_") or "forward_" + backward.name[9:] not in present:
            continue
        forward = present["forward_" + backward.name[9:]]
        final = backward.body[-1] if backward.body else None
        params = [a.id for a in forward.args.args if a.id != stack]
        if not isinstance(final, gast.Return) or final.value is None:
            continue
        ends = final.value.elts if isinstance(final.value, gast.Tuple) else [final.value]
        unread = [i for i, end in enumerate(ends) if isinstance(end, gast.Constant) and type(end.value) is float
                  and end.value == 0.0]
        if len(ends) != len(params) or not unread:
            continue
        pair = _callee_pair(forward, backward, stack, single=True)
        if pair is None:
            continue
        pop = pair[1]
        popped = {t.id for t in pop.targets[0].elts if isinstance(t, gast.Name)}
        rebound = {n.id for n in gast.walk(forward) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        taken = {n.id for n in gast.walk(backward) if isinstance(n, gast.Name)}
        stores = [n.id for n in gast.walk(backward) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)]
        guard = _seed_guard(backward)
        early = guard.body[0].value if guard is not None else None
        guarded = early.elts if isinstance(early, gast.Tuple) else [early] if early is not None else []
        for i in unread:
            name = params[i]
            if name in rebound or name in popped and stores.count(name) != 1 or name not in popped and name in taken:
                continue
            if name not in popped:
                _carry(pair, name)
                popped.add(name)
            zeros = compat.call(compat.name(_bound(namespace, zeros_like_gradient)), [compat.name(name)])
            ends[i] = zeros
            if len(guarded) == len(ends) and isinstance(guarded[i], gast.Constant):
                guarded[i] = compat.call(compat.name(_bound(namespace, zeros_like_gradient)), [compat.name(name)])
        if not isinstance(final.value, gast.Tuple):
            final.value = ends[0]
        if early is not None and not isinstance(early, gast.Tuple) and len(guarded) == 1:
            guard.body[0].value = guarded[0]


def _seed_guard_zeros(functions, stack, namespace, callee_adjoints) -> None:
    """``return zeros_like_gradient(y), zeros_like_gradient(p)`` for a callee's seed guard's ``return 0.0, 0.0``
    (passes/computed_seeds.py), each for a parameter of its forward function that the forward never rebinds.

    Numba types a function's returns as one type: where the backward
    function's last return gives arrays, the guard's placeholders must be
    arrays too, and zeros of the parameter are the gradient the placeholder
    stands for.  The backward function has no ``p`` of its own: the tuple
    the forward pushes last (and the backward pops first) carries it, as
    ``_callee_parameter_zeros`` does.  A returned gradient of anything else
    (a number the sweep never reached, a rebound parameter) keeps its
    ``0.0``.  Every call passes ``computed``; where some pass True and some
    False, as ``bool(True)`` and ``bool(False)``: Numba types a constant as a
    literal, and each literal (and the default) compiled the function again.
    (Where every call passes True, the literal lets Numba drop the guard.)
    """
    present = {f.name: f for f in functions}
    guarded = set()
    for backward in functions[1:]:
        forward_name, adjoints = callee_adjoints.get(backward.name, (None, {}))
        forward = present.get(forward_name)
        guard = _seed_guard(backward)
        final = backward.body[-1] if backward.body else None
        if forward is None or guard is None or not isinstance(final, gast.Return):
            continue
        guarded.add(backward.name)
        pair = _callee_pair(forward, backward, stack, single=True)
        early = guard.body[0].value
        ends = final.value.elts if isinstance(final.value, gast.Tuple) else [final.value]
        zeros = early.elts if isinstance(early, gast.Tuple) else [early]
        params = [a.id for a in forward.args.args]
        rebound = {n.id for n in gast.walk(forward) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        popped = {t.id for t in pair[1].targets[0].elts if isinstance(t, gast.Name)} if pair else set()
        new = []
        for zero, end in zip(zeros, ends):
            name = adjoints.get(end.id) if isinstance(end, gast.Name) else None
            if name is None or name not in params or name in rebound or (name not in popped and pair is None):
                new.append(zero)
                continue
            if name not in popped and pair is not None:
                _carry(pair, name)
                popped.add(name)
            new.append(compat.call(compat.name(_bound(namespace, zeros_like_gradient)), [compat.name(name)]))
        guard.body[0].value = new[0] if not isinstance(early, gast.Tuple) else compat.tuple_(new)
    calls: dict = {}  # a guarded function's name -> its calls, each passing ``computed``
    for fn_def in functions:
        for node in gast.walk(fn_def):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in guarded \
                    and not node.keywords:
                count = len(present[node.func.id].args.args)
                if len(node.args) == count - 1:
                    node.args.append(compat.const(False))
                if len(node.args) == count:
                    calls.setdefault(node.func.id, []).append(node)
    for name, made in calls.items():
        flags = {flag.value if isinstance(flag, gast.Constant) else None for flag in (c.args[-1] for c in made)}
        if len(flags) > 1:  # True and False: as literals, each would compile the function
            for call in made:
                call.args[-1] = compat.call(compat.name(_bound(namespace, builtins.bool)), [call.args[-1]])


def _items_added_in_place(block, namespace) -> None:
    """``d = added_item(d, g, shape(x), 1)`` for ``d = add_at(d, g, shape(x), 1)`` (an integer index) where ``d``
    holds the array ``d = scatter(v, shape(x), k)`` made earlier in the same block, and no statement between
    read ``d`` or rebound ``x`` (those adds aside): that array has ``x``'s shape and is no other name's, so adding
    into it changes nothing else.  A right-hand side's gradient of ``np.array([...])`` of numbers
    (``backward_lotka_volterra``: two scatters, five adds), where ``add_at`` also compiled its other path
    (``total + scatter(...)``, for a total of another shape)."""
    for stmt in block:
        for _, _, inner in compat.own_blocks(stmt):
            _items_added_in_place(inner, namespace)
    fresh: dict = {}  # name -> the name whose shape its array has
    for stmt in block:
        call = stmt.value if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], gast.Name) and isinstance(stmt.value, gast.Call) \
            and not stmt.value.keywords else None
        target = stmt.targets[0].id if call is not None else None
        if call is not None and len(call.args) == 4 and _is(call.func, namespace, runtime.add_at) \
                and _integer(call.args[3]) and fresh.get(target) == _shape_of(call.args[2], namespace) \
                and isinstance(call.args[0], gast.Name) and call.args[0].id == target \
                and not _names(call.args[1]) & {target, fresh[target]}:
            call.func = compat.name(_bound(namespace, added_item))
            continue
        names = _names(stmt)
        fresh = {d: x for d, x in fresh.items() if d not in names and x not in names}
        if call is not None and len(call.args) == 3 and _is(call.func, namespace, _extra.scatter) \
                and _integer(call.args[2]) and _shape_of(call.args[1], namespace) not in (None, target) \
                and target not in _names(call.args[0]):
            fresh[target] = _shape_of(call.args[1], namespace)


def _shape_of(node, namespace):
    """``x`` for ``shape(x)``, ``x`` a name; else None."""
    if isinstance(node, gast.Call) and _is(node.func, namespace, runtime.shape) and len(node.args) == 1 \
            and not node.keywords and isinstance(node.args[0], gast.Name):
        return node.args[0].id
    return None


def _names(node) -> set:
    return {n.id for n in gast.walk(node) if isinstance(n, gast.Name)}


def _seed_guard(backward):
    """The ``if not computed and is_zero(dresult): return ...`` of a backward function (its first or second
    statement, ``computed`` its last parameter, False by default), or None."""
    args = backward.args
    if not args.args or len(args.defaults) != 1 or not isinstance(args.defaults[0], gast.Constant) \
            or args.defaults[0].value is not False:
        return None
    computed = args.args[-1].id
    for stmt in backward.body[:2]:
        test = stmt.test if isinstance(stmt, gast.If) else None
        if isinstance(test, gast.BoolOp) and isinstance(test.op, gast.And) and len(test.values) == 2 \
                and isinstance(test.values[0], gast.UnaryOp) and isinstance(test.values[0].op, gast.Not) \
                and isinstance(test.values[0].operand, gast.Name) and test.values[0].operand.id == computed \
                and len(stmt.body) == 1 and isinstance(stmt.body[0], gast.Return) and not stmt.orelse:
            return stmt
    return None


def _lists_bound_once(fn_def) -> dict:
    """name -> its ``name = [...]``, for each name ``fn_def`` binds once, to a list display."""
    assigns, others = _plain_bindings(fn_def)
    return {name: stmts[0] for name, stmts in assigns.items()
            if len(stmts) == 1 and name not in others and isinstance(stmts[0].value, gast.List)}


def _tuples_for_arrays(fn_def, namespace, stack) -> None:
    """``t = (a, b)`` for ``t = [a, b]`` where ``t`` is only read by ``np.array``, saved on a stack, and read by
    ``_like`` (which cuts the array's gradient into the display's items).

    ``np.array([p[0] * y[0], ...])`` in a right-hand side: a list of numbers
    in Numba is a list object that cannot be saved in the tuple of values a
    function pushes, and its gradient (``_like``) is a list; a tuple of
    numbers makes the same array, is saved as it is, and its gradient is
    the array's (helpers.py).  In the entry the reverse sweep reads the
    display itself (``_like(dv, t1)``, where a callee's reads what it saved):
    Numba's ``_like`` takes a tuple of numbers only, and refused the list.
    """
    displays = _lists_bound_once(fn_def)
    if not displays:
        return
    allowed: set = set()
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Call) and (_of_numpy(node.func, namespace) and isinstance(node.func, gast.Attribute)
                                            and node.func.attr in ("array", "asarray")):
            allowed.update(id(a) for a in node.args[:1])
        elif isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr == "append" \
                and isinstance(node.func.value, gast.Name) and node.func.value.id == stack and node.args \
                and isinstance(node.args[0], gast.Tuple):
            allowed.update(id(a) for a in node.args[0].elts)
        elif isinstance(node, gast.Call) and _is(node.func, namespace, sequences._like) and len(node.args) == 2:
            allowed.add(id(node.args[1]))
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id in displays \
                and id(node) not in allowed:
            displays.pop(node.id)
    for assign in displays.values():
        assign.value = compat.tuple_(list(assign.value.elts))


def _index_lists_as_arrays(fn_def, namespace, stack=None) -> None:
    """``t = index_array([2, 0, 1])`` for ``t = [2, 0, 1]``, a list of integers that only indexes (``x[t]``, the
    index a gradient is scattered or added at), is carried in a tuple (a callee's saves) or is pushed on the
    stack ``stack`` (a loop's trip saves it, and the reverse loop pops it back into ``t``).

    ``x[[2, 0, 1]]`` is numpy's integer-array indexing; Numba indexes by an
    array of integers, not by a list.  The array gives the same items, and
    its gradient is added back position by position (helpers.py,
    ``_scattered_rows``: a position named twice gets both).  Every binding
    of ``t`` must be such a list, the ``None`` that declares it, or a pop of
    ``stack`` (which gives back what the trip pushed of ``t``); any other
    binding or read leaves the lists as written (Numba then refuses).
    """
    for node in [n for n in gast.walk(fn_def) if _integer_list_index(n)]:  # ``y[[2, 0, 1]]``, the index unnamed
        node.slice = compat.call(compat.name(_bound(namespace, index_array)), [node.slice])
    lists = _index_list_displays(fn_def, stack)
    if not lists:
        return
    allowed: set = set()
    at = {**_INDEX_ARGUMENTS, added_item: 3}

    def allow(node):
        allowed.add(id(_unwrapped(node, namespace)))
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Subscript):
            allow(node.slice)
        elif isinstance(node, gast.Tuple) and isinstance(node.ctx, gast.Load):
            for element in node.elts:
                allow(element)
        elif isinstance(node, gast.Call):
            for fn, position in at.items():
                if _is(node.func, namespace, fn) and len(node.args) > position:
                    allow(node.args[position])
            if stack is not None and _stack_method(node, stack, "append") and len(node.args) == 1:
                allow(node.args[0])
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id in lists \
                and id(node) not in allowed:
            lists.pop(node.id)
    for displays in lists.values():
        for assign in displays:
            assign.value = compat.call(compat.name(_bound(namespace, index_array)), [assign.value])


def _index_list_displays(fn_def, stack) -> dict:
    """name -> its bindings to a display of integers (``t = [2, 0, 1]``), for each name every binding of which
    is one, ``t = None`` or ``t = <stack>.pop()``, with at least one display."""
    assigns, others = _plain_bindings(fn_def)
    found: dict = {}
    for name, stmts in assigns.items():
        displays = [stmt for stmt in stmts if _integer_display(stmt.value)]
        if displays and name not in others and all(
                _integer_display(stmt.value) or _none_constant(stmt.value) or stack is not None
                and isinstance(stmt.value, gast.Call) and _stack_method(stmt.value, stack, "pop")
                and not stmt.value.args for stmt in stmts):
            found[name] = displays
    return found


def _plain_bindings(fn_def) -> tuple:
    """``(name -> its statements name = value, the names bound any other way)``: a tuple's target, a loop's, a
    with's, an augmented assignment."""
    assigns: dict = {}
    plain: set = set()
    for node in gast.walk(fn_def):  # a statement before the names in it
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            assigns.setdefault(node.targets[0].id, []).append(node)
            plain.add(id(node.targets[0]))
    others = {node.id for node in gast.walk(fn_def) if isinstance(node, gast.Name)
              and isinstance(node.ctx, gast.Store) and id(node) not in plain}
    return assigns, others


def _integer_display(node) -> bool:
    """Whether ``node`` is a list display of integers, ``[2, 0, -1]``."""
    return isinstance(node, gast.List) and bool(node.elts) and all(_integer_constant(e) for e in node.elts)


def _integer_list_index(node) -> bool:
    """Whether ``node`` reads an item at a display of integers, ``y[[2, 0, 1]]``."""
    return isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Load) and _integer_display(node.slice)


def _stack_method(call, stack, method) -> bool:
    """Whether ``call`` is ``<stack>.<method>(...)``."""
    func = call.func
    return isinstance(func, gast.Attribute) and func.attr == method and isinstance(func.value, gast.Name) \
        and func.value.id == stack


def index_array(items):
    """The integers ``items`` as an array: an index Numba takes where it takes no list."""
    return np.array(items, dtype=np.intp)


def _integer_constant(node) -> bool:
    """An ``int`` literal (not a bool), or its negation."""
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) is int


def _constant_rows(fn_def, namespace) -> None:
    """``np.array((1.0, 0.5))`` for ``np.array([1.0, 0.5])``: numbers written in the call, all of one type.

    The same array; Numba builds no list for it, and compiles ``np.array`` of
    a tuple of floats once where a right-hand side's ``np.array(t1)`` of such
    a tuple compiled it already (S2's initial state beside its
    Lotka-Volterra).  Numbers of two types (``[1, 0.5]``) stay a list, which
    Numba makes of one type and a tuple would not.
    """
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr == "array" \
                and _of_numpy(node.func, namespace) and node.args and isinstance(node.args[0], gast.List) \
                and node.args[0].elts and all(isinstance(e, gast.Constant) for e in node.args[0].elts) \
                and len({type(e.value) for e in node.args[0].elts}) == 1 \
                and type(node.args[0].elts[0].value) in (int, float):
            node.args[0] = compat.tuple_(list(node.args[0].elts))


def _callee_parameter_zeros(functions, stack, namespace) -> None:
    """``dp = zeros_like_gradient(p)`` for ``dp = 0.0`` in a callee's backward function, ``p`` a parameter of
    its forward function that the forward never rebinds: the forward saves ``p`` with its other values.

    The gradient of a parameter the callee reads in a loop starts as 0.0
    before the reverse loop (``backward_rk4``'s ``dp``); Numba needs one
    type per variable, and the loop makes it an array.  Zeros of the
    parameter's shape are the same start; where the backward function has
    no ``p`` of its own, the tuple the forward pushes last (and the backward
    pops first) carries it, and where that tuple carries it already (the
    backward reads ``p``: ``dx = dx + g * w``), the pop binds it.
    """
    present = {f.name: f for f in functions}
    for backward in functions[1:]:
        if not backward.name.startswith("backward_") or "forward_" + backward.name[9:] not in present:
            continue
        forward = present["forward_" + backward.name[9:]]
        pair = _callee_pair(forward, backward, stack)
        if pair is None:
            continue
        pop = pair[1]
        popped = {t.id for t in pop.targets[0].elts if isinstance(t, gast.Name)}
        params = [a.id for a in forward.args.args]
        rebound = {n.id for n in gast.walk(forward) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        taken = {n.id for n in gast.walk(backward) if isinstance(n, gast.Name)}
        stores = [n.id for n in gast.walk(backward) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)]
        zeros, passed = {}, set()
        for stmt in backward.body:
            if _is_zero_start(stmt) and stmt.targets[0].id.startswith("d"):
                name = stmt.targets[0].id[1:]
                if name not in params or name in rebound:
                    continue
                if name in popped and stores.count(name) == 1:  # passed already: its pop binds it, nothing else
                    zeros[stmt.targets[0].id] = name
                elif name not in popped and name not in taken - {stmt.targets[0].id}:
                    zeros[stmt.targets[0].id] = name
                    passed.add(name)
        if not zeros:
            continue
        for name in sorted(passed):
            _carry(pair, name)
        _zeros_shaped(backward.body, zeros, namespace)


def _callee_pair(forward, backward, stack, single=False) -> tuple | None:
    """``(push, pop)``: the forward function's last push (``_stack.append((...))`` before its return) and the
    backward function's first pop (``a, b = _stack.pop()``), the two statements that pass the forward's values
    on; None where the pair is not of that form.  With ``single``, a push of one value and its pop
    (``_stack.append(result)``, ``result = _stack.pop()``) are first written as a tuple's
    (``_stack.append((result,))``, ``result, = _stack.pop()``), which passes the same value on."""
    push = forward.body[-2] if len(forward.body) >= 2 else None
    pop = backward.body[0] if backward.body else None
    if not (isinstance(push, gast.Expr) and isinstance(push.value, gast.Call)
            and isinstance(push.value.func, gast.Attribute) and push.value.func.attr == "append"
            and isinstance(push.value.func.value, gast.Name) and push.value.func.value.id == stack
            and len(push.value.args) == 1 and isinstance(pop, gast.Assign) and len(pop.targets) == 1
            and isinstance(pop.value, gast.Call) and isinstance(pop.value.func, gast.Attribute)
            and pop.value.func.attr == "pop" and isinstance(forward.body[-1], gast.Return)):
        return None
    pushed, target = push.value.args[0], pop.targets[0]
    if single and not isinstance(pushed, gast.Tuple) and isinstance(target, gast.Name) \
            and isinstance(pop.value.func.value, gast.Name) and pop.value.func.value.id == stack:
        push.value.args[0] = compat.tuple_([pushed])
        pop.targets[0] = compat.make("Tuple", elts=[target], ctx=gast.Store())
    elif not (isinstance(pushed, gast.Tuple) and isinstance(target, gast.Tuple)):
        return None
    return push, pop


def _carry(pair, name) -> None:
    """``name`` passed on from the forward function to the backward one: one more item of the tuple the
    ``pair``'s push pushes and its pop binds (``_callee_pair``)."""
    push, pop = pair
    push.value.args[0].elts.append(compat.name(name))
    pop.targets[0].elts.append(compat.name(name, store=True))


def _callee_local_zeros(functions, stack, namespace, callee_adjoints) -> None:
    """``dacc = zeros_like_gradient(acc)`` for ``dacc = 0.0`` before a callee's reverse loop, ``acc`` a local (or
    a parameter) of its forward function that holds the value its one loop left (``_holds_its_loops_last_value``).

    The entry's rewrite (``_zeros_shaped_in_order``) for a callee's pair:
    the forward function's body, up to its last push, followed by the
    backward function's, after its first pop, is the entry's body in one
    function, where the pop binds each name to the value the push took
    (the push names ``acc`` itself, at the pop's position of ``acc``).  A
    velocity Verlet step called from another function (``verlet(v, x, m,
    0.01, 5)``) is such a callee: its ``dacc`` started as 0.0 and became an
    array in the loop, which Numba refuses.
    """
    present = {f.name: f for f in functions}
    for backward in functions[1:]:
        forward_name, adjoints = callee_adjoints.get(backward.name, (None, {}))
        forward = present.get(forward_name)
        pair = _callee_pair(forward, backward, stack) if adjoints and forward is not None else None
        if pair is None or forward is None:
            continue
        push, pop = pair
        passed = {t.id for t, v in zip(pop.targets[0].elts, push.value.args[0].elts)
                  if isinstance(t, gast.Name) and isinstance(v, gast.Name) and v.id == t.id}
        body = forward.body[:-2] + backward.body[1:]
        parameters = {a.id for a in forward.args.args}
        helper = None
        for position in range(len(forward.body) - 2, len(body)):
            stmt = body[position]
            name = adjoints.get(stmt.targets[0].id) if _is_zero_start(stmt) else None
            if name is not None and name in passed \
                    and _holds_its_loops_last_value(body, position, name, name in parameters):
                helper = helper or _bound(namespace, zeros_like_gradient)
                stmt.value = compat.call(compat.name(helper), [compat.name(name)])


class _Slices(gast.NodeTransformer):
    """``slice(1, 3)`` for ``np.s_[1:3]`` (an index a rule passes on), and tuples of them: Numba has no ``np.s_``."""

    def __init__(self, namespace):
        self.namespace = namespace

    def visit_Subscript(self, node):
        self.generic_visit(node)
        value = node.value
        if not (isinstance(value, gast.Attribute) and value.attr == "s_"
                and _is(value.value, self.namespace, np)):
            return node
        index = node.slice
        if isinstance(index, gast.Tuple):
            return compat.tuple_([self._slice(i) for i in index.elts])
        return self._slice(index)

    def _slice(self, node):
        if not isinstance(node, gast.Slice):
            return node
        parts = [compat.clone(p) if p is not None else compat.const(None) for p in (node.lower, node.upper, node.step)]
        return compat.call(compat.name(_bound(self.namespace, builtins.slice)), parts)


class _KnownTypes(gast.NodeTransformer):
    """``b`` for ``a if isinstance(c, (tuple, list)) else b`` where ``c`` is a number in the text.

    A rule's test of its argument's kind, such as ``np.roll``'s
    ``tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift``,
    is written into the generated code with the argument in place; where
    that is a constant the test is decided here (Numba compiles no
    generator expression, and types both branches).  ``Shaped(...) if
    floats(a, b) else a + b`` (a value the numpy backend leaves uncomputed
    on floats) is the value: Numba types both branches, and frees by
    reference counts anyway.
    """

    def __init__(self, namespace):
        self.namespace = namespace

    def visit_IfExp(self, node):
        self.generic_visit(node)
        test = node.test
        if isinstance(test, gast.Call) and isinstance(test.func, gast.Name) \
                and self.namespace.get(test.func.id) is runtime.floats:
            return node.orelse  # the value as written (the numpy backend's shape stands in for it only on floats)
        if not (isinstance(test, gast.Call) and len(test.args) == 2 and not test.keywords
                and self._builtin(test.func, builtins.isinstance) and isinstance(test.args[1], gast.Tuple)):
            return node
        value = reductions._constant(test.args[0])
        kinds = [self._kind(k) for k in test.args[1].elts]
        if type(value) not in (int, float, bool) or any(k is None for k in kinds):
            return node
        return node.body if isinstance(value, tuple(kinds)) else node.orelse

    def _builtin(self, node, obj) -> bool:
        return isinstance(node, gast.Name) and self.namespace.get(node.id, getattr(builtins, node.id, None)) is obj

    def _kind(self, node):
        for kind in (tuple, list, int, float, bool):
            if self._builtin(node, kind):
                return kind
        return None


def added_item(total, g, shape, index):
    """``add_at(total, g, shape, index)``, ``total`` proven an array of ``shape`` no other name holds (compiled:
    ``total[index] += g``, helpers.py; ``_items_added_in_place``)."""
    return runtime.add_at(total, g, shape, index)


def rows(g):
    """``list(g)``: the rows of ``g`` (``np.stack``'s gradient cut into its items).

    Compiled, the rows of a C-contiguous array are C-contiguous arrays
    (helpers.py), where Numba's ``list(g)`` types them as of any layout: every
    helper the items' gradients reach (``unbroadcast``, ``add_item``, ...)
    was compiled a second time for that layout.
    """
    return list(g)


class _RowsInPlace(gast.NodeTransformer):
    """``rows(g)`` for ``list(np.moveaxis(g, 0, 0))`` (``np.stack``'s gradient along axis 0, cut into rows).

    Moving axis 0 to 0 is no move; numpy raises for a 0-d ``g`` and so does
    Numba's ``list`` (it cannot iterate it).  Numba's ``np.moveaxis`` sorts
    its axes with a list sort it compiles per type: seconds of a first
    compile (RK4's ``np.stack(ys)``) for no work.
    """

    def __init__(self, namespace):
        self.namespace = namespace

    def visit_Call(self, node):
        self.generic_visit(node)
        if not (isinstance(node.func, gast.Name) and self.namespace.get(node.func.id, builtins.list) is builtins.list
                and node.func.id == "list" and len(node.args) == 1 and not node.keywords):
            return node
        moved = node.args[0]
        if isinstance(moved, gast.Call) and isinstance(moved.func, gast.Attribute) and moved.func.attr == "moveaxis" \
                and _is(moved.func.value, self.namespace, np) and len(moved.args) == 3 and not moved.keywords \
                and all(reductions._constant(a) == 0 and type(reductions._constant(a)) is int for a in moved.args[1:]):
            node.func = compat.name(_bound(self.namespace, rows))
            node.args = [moved.args[0]]
        return node


#: math functions that raise ValueError outside their domain, where Numba's return nan: the test of the domain
MATH_DOMAINS = {"sqrt": "x < 0.0", "log": "x <= 0.0", "log2": "x <= 0.0", "log10": "x <= 0.0", "log1p": "x <= -1.0",
                "acos": "x < -1.0 or x > 1.0", "asin": "x < -1.0 or x > 1.0", "acosh": "x < 1.0",
                "atanh": "x <= -1.0 or x >= 1.0"}


def checked_math(name, x):
    """``math.<name>(x)`` (Python's, ValueError outside its domain)."""
    return getattr(math, name)(x)


class _MathDomains(gast.NodeTransformer):
    """``checked_math('sqrt', x)`` for ``math.sqrt(x)``: compiled, it raises Python's ValueError where Numba's
    ``math.sqrt`` returns nan (then the numpy adjoint, run again, raises it at the user's line)."""

    def __init__(self, namespace):
        self.namespace = namespace

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and func.attr in MATH_DOMAINS
                and self.namespace.get(func.value.id) is math and len(node.args) == 1 and not node.keywords):
            return node
        return compat.call(compat.name(_bound(self.namespace, checked_math)),
                           [compat.const(func.attr), compat.clone(node.args[0])])


def _fold_constant_tests(fn_def, namespace) -> None:
    """Tests a rule writes into the code whose answer the text decides, decided: Numba types every branch.

    * ``d[j] is None`` where ``d = sequence_gradient(g, items, k)`` (the one store of ``d``) and ``g`` is
      never None: ``j != k`` (the gradient of one item of a tuple, ``np.linalg.slogdet(S)[1]``);
    * ``a if True else b``, ``c if x else c``, and a test ``x and False`` or ``x or True`` (``x`` calls
      nothing but numpy's functions and the helpers that read shapes);
    * ``if name:`` where the function binds ``name`` once, to a constant (``vector = True`` in the rule of
      ``np.linalg.solve``), and ``if True:``: the branch taken, the other gone.
    """
    stores: dict = {}
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    nones = {t.id for node in gast.walk(fn_def) if isinstance(node, gast.Assign) and isinstance(node.value, gast.Constant)
             and node.value.value is None for t in node.targets if isinstance(t, gast.Name)}
    nones |= {a.id for a in fn_def.args.args}
    picked = {}
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], gast.Name) \
                and stores.get(node.targets[0].id) == 1 and isinstance(node.value, gast.Call) \
                and _is(node.value.func, namespace, runtime.sequence_gradient) and len(node.value.args) == 3 \
                and isinstance(node.value.args[2], gast.Constant) and type(node.value.args[2].value) is int:
            given = node.value.args[0]
            if isinstance(given, gast.Name) and given.id not in nones or isinstance(given, (gast.BinOp, gast.Call)):
                picked[node.targets[0].id] = node.value.args[2].value
    _ConstantTests(namespace, picked).visit(fn_def)
    constants = {}
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], gast.Name) \
                and stores.get(node.targets[0].id) == 1 and isinstance(node.value, gast.Constant) \
                and type(node.value.value) is bool:
            constants[node.targets[0].id] = node.value.value
    fn_def.body = _taken(fn_def.body, constants) or [compat.make("Pass")]


class _ConstantTests(gast.NodeTransformer):
    def __init__(self, namespace, picked):
        self.namespace, self.picked = namespace, picked

    def visit_Compare(self, node):
        self.generic_visit(node)
        if not (len(node.ops) == 1 and isinstance(node.ops[0], (gast.Is, gast.IsNot))
                and isinstance(node.comparators[0], gast.Constant) and node.comparators[0].value is None):
            return node
        left = node.left
        if isinstance(left, gast.Subscript) and isinstance(left.value, gast.Name) and left.value.id in self.picked \
                and isinstance(left.slice, gast.Constant) and type(left.slice.value) is int:
            is_none = left.slice.value != self.picked[left.value.id]
            return compat.const(is_none if isinstance(node.ops[0], gast.Is) else not is_none)
        return node

    def visit_IfExp(self, node):
        self.generic_visit(node)
        node.test = self._decided(node.test)
        if isinstance(node.test, gast.Constant) and type(node.test.value) is bool:
            return node.body if node.test.value else node.orelse
        if isinstance(node.body, gast.Constant) and isinstance(node.orelse, gast.Constant) \
                and type(node.body.value) is type(node.orelse.value) and node.body.value == node.orelse.value \
                and self._pure(node.test):
            return node.body
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        node.test = self._decided(node.test)
        return node

    def _decided(self, test):
        """``x and False`` as False, ``x or True`` as True, where ``test`` is a test (only its truth is read)."""
        if not isinstance(test, gast.BoolOp):
            return test
        decides = isinstance(test.op, gast.Or)  # the constant that decides: True for or, False for and
        if any(isinstance(v, gast.Constant) and v.value is decides for v in test.values) \
                and all(self._pure(v) for v in test.values):
            return compat.const(decides)
        return test

    def _pure(self, node) -> bool:
        """Whether evaluating ``node`` has no effect: it calls only numpy's functions and the shape helpers."""
        for n in gast.walk(node):
            if isinstance(n, gast.Call) and not (_of_numpy(n.func, self.namespace) or any(
                    _is(n.func, self.namespace, f) for f in (runtime.ndim, runtime.shape, runtime.size))):
                return False
        return True


def _taken(stmts, constants) -> list:
    """``stmts`` with each ``if`` whose test is a constant (or a name bound once to one) replaced by its branch."""
    out: list = []
    for stmt in stmts:
        for _, field, inner in compat.own_blocks(stmt):
            setattr(stmt, field, _taken(inner, constants) or [keep_origin(stmt, compat.make("Pass"))])
        if isinstance(stmt, gast.If):
            test = stmt.test
            value = test.value if isinstance(test, gast.Constant) and type(test.value) is bool else \
                constants.get(test.id) if isinstance(test, gast.Name) else None
            if value is not None:
                out += [s for s in (stmt.body if value else stmt.orelse) if not isinstance(s, gast.Pass)]
                continue
        out.append(stmt)
    return out


def _without_empty_checks(stmts, namespace) -> list:
    """``stmts`` without the checks of calls run as written that provably check nothing (``written_by_call``).

    The numpy backend checks, before a call it runs as written, that the
    function cannot write into what the adjoint reads.  For a numpy
    function reached through a module (``np.eye(3)``, ``np.ones(n)``) that
    writes into nothing it is given, the check returns at once on any
    arguments, and the same function is called at every run: it goes.  The
    checks that remain are refused at the user's line (``compiled``).

    So does ``checked(value)`` (a value computed only for what numpy raises:
    the loss of ``grad``, ``checked(np.sum(u ** 2))``) where compiled code
    provably raises nothing computing it from numbers and arrays
    (``_unraising_check``), for ``shape(u)`` of each name it reads: Numba
    types ``shape`` for numbers and arrays only, so a name holding anything
    else is refused at the user's line, as computing the value was.
    Compiling the value cost a first call a tenth to a third of a second
    (``np.sum``'s implementation and the power's loop).
    """
    out = []
    for stmt in stmts:
        if _unraising_check(stmt, namespace):
            out += _operand_kinds(stmt, namespace)
        elif not _empty_check(stmt, namespace):
            out.append(stmt)
        for _, field, inner in compat.own_blocks(stmt):
            setattr(stmt, field, _without_empty_checks(inner, namespace) or [keep_origin(stmt, compat.make("Pass"))])
    return out


def _unraising_check(stmt, namespace) -> bool:
    """Whether ``stmt`` is ``checked(value)`` where Numba's code for ``value`` raises nothing, whatever numbers
    and arrays its names hold: names, numbers, ``+``, ``-`` and ``*`` between a value and a number (never
    between two values: two arrays may not broadcast), ``value ** k`` for a constant integer ``k >= 0``,
    ``np.sum(value)`` (no axis) and ``stand_in(value)``.  Anything else (a division, which raises
    ZeroDivisionError compiled; two arrays added; a negation, which numpy refuses for booleans; another
    call) keeps its check."""
    call = getattr(stmt, "value", None)
    return isinstance(stmt, gast.Expr) and isinstance(call, gast.Call) and _is(call.func, namespace, runtime.checked) \
        and len(call.args) == 1 and not call.keywords and _raises_nothing(call.args[0], namespace)


def _operand_kinds(stmt, namespace) -> list:
    """``shape(u)`` for each name ``stmt``'s checked value reads, in order: what remains of the check."""
    names: list = []
    todo = [stmt.value.args[0]]
    while todo:  # _raises_nothing's expressions: a call's function (np.sum, stand_in) is not an operand
        node = todo.pop(0)
        if isinstance(node, gast.Name) and node.id not in names:
            names.append(node.id)
        elif isinstance(node, gast.BinOp):
            todo += [node.left, node.right]
        elif isinstance(node, gast.Call):
            todo += node.args
    shape = _bound(namespace, runtime.shape)
    return [keep_origin(stmt, compat.expr_stmt(compat.call(compat.name(shape), [compat.name(n)]))) for n in names]


def _raises_nothing(node, namespace) -> bool:
    """``_unraising_check``'s expressions."""
    if isinstance(node, gast.Name):
        return True
    if isinstance(node, gast.Constant):
        return _number(node)
    if isinstance(node, gast.BinOp):
        if isinstance(node.op, gast.Pow):
            return isinstance(node.right, gast.Constant) and type(node.right.value) is int and node.right.value >= 0 \
                and _raises_nothing(node.left, namespace)
        if not isinstance(node.op, (gast.Add, gast.Sub, gast.Mult)):
            return False
        if isinstance(node.left, gast.Constant) and _number(node.left):
            return _raises_nothing(node.right, namespace)
        return isinstance(node.right, gast.Constant) and _number(node.right) and _raises_nothing(node.left, namespace)
    if isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and not isinstance(node.args[0], gast.Starred):
        func = node.func
        summed = isinstance(func, gast.Attribute) and func.attr == "sum" and isinstance(func.value, gast.Name) \
            and namespace.get(func.value.id) is np
        return (summed or _is(func, namespace, runtime.stand_in)) and _raises_nothing(node.args[0], namespace)
    return False


def _number(node) -> bool:
    """A constant int or float (not a bool: numpy refuses ``-`` between booleans)."""
    return type(node.value) in (int, float)


#: numpy functions that write only into the array they make and take numbers for sizes (their plans allow writes
#: into what they are given, which numbers never are): Numba compiles them for integer sizes only
_FRESH = (np.eye, np.identity, np.ones, np.full)


def _empty_check(stmt, namespace) -> bool:
    call = getattr(stmt, "value", None)
    if not (isinstance(stmt, gast.Expr) and isinstance(call, gast.Call) and len(call.args) >= 2
            and _is(call.func, namespace, checks.written_by_call) and isinstance(call.args[0], gast.Name)):
        return False
    site, callee = namespace.get(call.args[0].id), call.args[1]
    if not (isinstance(callee, gast.Attribute) and isinstance(callee.value, gast.Name)
            and isinstance(namespace.get(callee.value.id), types.ModuleType)):
        return False
    function = getattr(namespace[callee.value.id], callee.attr, None)
    if function is not None and any(function is f for f in _FRESH):
        return True
    owner = getattr(function, "__self__", None)
    if function is None or owner is not None and not isinstance(owner, types.ModuleType):
        return False
    found = checks.callable_code(function)
    if found is None:
        return bool(site.only_reads(function))
    plan = site.plan(found)
    if plan is None or not plan.writes and not site.given_gradient:
        return True
    # numpy's own Python (np.eye writes into the array it made): a write the plan puts in an argument that is a
    # constant in the text (a number, a tuple of numbers) finds nothing there to refuse
    given = call.args[2:]
    return bool(site.only_reads(function)) and not site.given_gradient and all(
        kind == checks.GIVEN and type(where) is int and where < len(given)
        and reductions._constant(given[where]) is not reductions._NOT_CONSTANT for kind, where, *_ in plan.writes)


class _Reductions(gast.NodeTransformer):
    """``max_along(x, 1, True)`` for ``np.max(x, axis=1, keepdims=True)``: Numba's reductions take no keepdims.

    Also ``squeeze_along(x, 1)`` for ``np.squeeze(x, 1)`` and ``reshaped(g, s)`` for ``np.reshape(g, s)``
    (shaping.py): Numba has no squeeze and reshapes only contiguous arrays.
    """

    def __init__(self, namespace):
        self.namespace = namespace

    def visit_Call(self, node):
        self.generic_visit(node)
        bound = lambda obj: _bound(self.namespace, obj)  # noqa: E731
        return reductions.helper_call(node, self._resolve, bound) or shaping.helper_call(node, self._resolve, bound) \
            or node

    def _resolve(self, node):
        if isinstance(node, gast.Name):
            return self.namespace.get(node.id)
        if isinstance(node, gast.Attribute) and isinstance(node.value, gast.Name):
            return getattr(self.namespace.get(node.value.id), node.attr, None)
        return None


def _zeros_shaped_in_order(fn_def, zeros, adjoints, namespace) -> None:
    """``_zeros_shaped`` over the entry's statements, a local's gradient included once its value is fixed.

    A local the function binds once, by a statement of its body's top
    level, keeps that value for every statement after it: the reverse
    sweep's ``dy = 0.0`` there is the start of a gradient of ``y``'s shape.
    """
    stores: dict = {}
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    local_of = {name: adjoint for adjoint, name in adjoints.items()}
    params = {a.id for a in fn_def.args.args}
    for position, stmt in enumerate(fn_def.body):
        name = adjoints.get(stmt.targets[0].id) if _is_zero_start(stmt) else None
        if name is not None and stmt.targets[0].id not in zeros \
                and _holds_its_loops_last_value(fn_def.body, position, name, name in params):
            stmt.value = compat.call(compat.name(_bound(namespace, zeros_like_gradient)), [compat.name(name)])
        _zeros_shaped([stmt], zeros, namespace)
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
            name = stmt.targets[0].id
            if stores.get(name) == 1 and name in local_of and name not in {a.id for a in fn_def.args.args}:
                zeros[local_of[name]] = name


def _zeros_after_pops(stmts, adjoints, popped, namespace, saved_locals) -> None:
    """``dx = zeros_like_gradient(x)`` for ``dx = 0.0`` where the reverse sweep has put ``x``'s value back.

    Where a branch overwrites ``x`` (``x = np.maximum(...)`` in one arm of an
    ``if``), the reverse sweep pops ``x``'s earlier value back and writes the
    number 0.0 for its gradient from there: what the arm's lines added is the
    gradient of the value they overwrote.  Numba needs one type per variable,
    and the other arm leaves ``dx`` an array.  After the pop (``x =
    _stack_x.pop()``, a name bound by a tuple's pop, or ``x = _saved1`` where
    the forward sweep kept ``x`` in ``_saved1``; in the same block or
    one around it, with no statement between binding ``x``, nor the body of a
    loop between the two, except a reverse loop or an ``if`` that binds
    ``x`` only by such pops: after a loop, ``x`` holds the value it held
    before the forward loop ran, after an ``if`` the value before its
    forward arm ran), ``x`` holds the
    value whose gradient ``dx`` now is, so zeros of it are the same start: the
    terms added later have its shape, and ``0.0 + g`` and ``zeros + g`` are
    the same numbers (a number's zeros are 0.0).  That holds where every
    overwrite of ``x`` is saved (``_every_overwrite_saved``: the caller
    leaves other names out of ``adjoints``): a save the numpy backend dropped
    as unread would leave a later value in ``x`` at the restore before.
    """
    popped = set(popped)
    for stmt in stmts:
        if _is_zero_start(stmt) and adjoints.get(stmt.targets[0].id) in popped:
            stmt.value = compat.call(compat.name(_bound(namespace, zeros_like_gradient)),
                                     [compat.name(adjoints[stmt.targets[0].id])])
        stored = {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        for _, _, inner in compat.own_blocks(stmt):  # a loop's later trips start with what its body bound
            _zeros_after_pops(inner, adjoints, popped - stored if isinstance(stmt, (gast.For, gast.While))
                              else popped, namespace, saved_locals)
        if isinstance(stmt, (gast.For, gast.While, gast.If)):  # what it held, or (a trip, an arm ran) a pop's
            popped -= stored - _restored_only(stmt, saved_locals)
        else:
            popped -= stored
        if _restores(stmt, saved_locals):
            popped |= stored


def _every_overwrite_saved(fn_def, stack, namespace, saved_locals) -> set:
    """The names ``fn_def`` saves before each statement that overwrites them (a push on ``stack``, or
    ``_saved1 = x``), so that the reverse sweep puts back every value they held: each restore there gives the
    value the forward sweep had at that point, never one a later line left because its save was dropped as
    unread (``_zeros_after_pops`` reads the name at a point the numpy backend did not).  A name's first
    binding outside any loop (before it, nothing to save), ``t = None`` declarations and restores
    (``_restores``) need no save; any other binding without one (a loop's target, a line the reverse sweep
    computes again) leaves the name out."""
    names = {n.id for n in gast.walk(fn_def) if isinstance(n, gast.Name)}
    unsaved: set = set()
    bound = {a.id for a in fn_def.args.args}

    def saved_names(stmt) -> set:
        if isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call) and stack is not None \
                and _stack_method(stmt.value, stack, "append") and len(stmt.value.args) == 1:
            pushed = stmt.value.args[0]
            items = pushed.elts if isinstance(pushed, gast.Tuple) else [pushed]
            return {n.id for item in items for n in [_unwrapped(item, namespace)] if isinstance(n, gast.Name)}
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
                and stmt.targets[0].id in saved_locals:
            return {saved_locals[stmt.targets[0].id]}
        return set()

    def block(stmts, in_loop, saved) -> None:
        saved = set(saved)
        for stmt in stmts:
            saved |= saved_names(stmt)
            if isinstance(stmt, gast.Assign) and _restores(stmt, saved_locals):
                continue
            declares = isinstance(stmt, gast.Assign) and _none_constant(stmt.value)
            nested = [inner for _, _, inner in compat.own_blocks(stmt)]
            inside = {id(n) for inner in nested for s in inner for n in gast.walk(s)}
            for node in gast.walk(stmt):
                if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store) and id(node) not in inside:
                    if not declares and node.id not in saved and (node.id in bound or in_loop):
                        unsaved.add(node.id)
                    saved.discard(node.id)
                    bound.add(node.id)
            loop = isinstance(stmt, (gast.For, gast.While))
            for inner in nested:
                block(inner, in_loop or loop, saved)
            for inner in nested:  # after a block, a name it bound may hold a value its save did not cover
                saved -= {n.id for s in inner for n in gast.walk(s) if isinstance(n, gast.Name)
                          and isinstance(n.ctx, gast.Store)}
    block(fn_def.body, False, set())
    return names - unsaved


def _unwrapped(node, namespace):
    """``x`` for ``saved_value(x)``, ``only_shape(x)`` or ``only_shape(saved_value(x))``; else ``node``."""
    while isinstance(node, gast.Call) and len(node.args) == 1 and not node.keywords \
            and any(_is(node.func, namespace, w) for w in (saved_value, runtime.only_shape)):
        node = node.args[0]
    return node


def _restored_only(loop, saved_locals) -> set:
    """The names ``loop`` (a loop or an ``if``) binds only by restores (``_restores``), anywhere in it (a
    loop's target is not one)."""
    restoring: set = set()
    for node in gast.walk(loop):
        if isinstance(node, gast.Assign) and _restores(node, saved_locals):
            restoring.update(id(n) for n in gast.walk(node.targets[0]) if isinstance(n, gast.Name))
    stores = [n for n in gast.walk(loop) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)]
    return {n.id for n in stores} - {n.id for n in stores if id(n) not in restoring}


def _restores(stmt, saved_locals=None) -> bool:
    """Whether ``stmt`` binds names to values the forward sweep pushed or kept: ``x = _stack_x.pop()``, ``a, b =
    _stack.pop()``, ``x = _popped_stack_x`` (a name such a pop bound), or ``x = _saved1`` where ``saved_locals``
    (``_saved_locals``) says ``_saved1`` holds a value of ``x``."""
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1):
        return False
    value = stmt.value
    popping = isinstance(value, gast.Call) and not value.args and not value.keywords \
        and isinstance(value.func, gast.Attribute) and value.func.attr == "pop" \
        and isinstance(value.func.value, gast.Name) and value.func.value.id.startswith("_stack")
    kept = isinstance(value, gast.Name) and isinstance(stmt.targets[0], gast.Name) \
        and (saved_locals or {}).get(value.id) == stmt.targets[0].id
    return popping or kept or isinstance(value, gast.Name) and value.id.startswith("_popped_")


def _saved_locals(fn_def, namespace) -> dict:
    """``_saved1 -> x`` for each local named ``_saved...`` whose every binding is ``_saved1 = x`` or ``_saved1 =
    only_shape(x)`` (the forward sweep keeps the value a line overwrites, passes/saves_in_locals.py; compiled,
    ``only_shape`` is the array itself): such a local only holds values of ``x``."""
    assigns, others = _plain_bindings(fn_def)
    found: dict = {}
    for name, stmts in assigns.items():
        values = [_unwrapped(stmt.value, namespace) for stmt in stmts]
        if name.startswith("_saved") and name not in others and all(isinstance(v, gast.Name) for v in values) \
                and len({v.id for v in values}) == 1:
            found[name] = values[0].id
    return found


def _bound_names(fn_def) -> set:
    """The names ``fn_def`` binds anywhere, its parameters included."""
    return {a.id for a in fn_def.args.args} | {n.id for n in gast.walk(fn_def)
                                               if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}


def _is_zero_start(stmt) -> bool:
    """Whether ``stmt`` is ``name = 0.0``."""
    return isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
        and isinstance(stmt.value, gast.Constant) and type(stmt.value.value) is float and stmt.value.value == 0.0


def _stores(node, name) -> bool:
    return any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, gast.Store) for n in gast.walk(node))


def _holds_its_loops_last_value(body, position, name, parameter=False) -> bool:
    """Whether, at ``body[position]`` (a gradient's ``0.0`` before a reverse loop), the local ``name`` holds the
    value its one loop left, so that zeros of it have the shape of that value's gradient.

    The gradient of a local rebound in a loop (``prev = u`` in a stencil, ``acc = -pos / mass`` in velocity
    Verlet) starts as the number 0.0 before the reverse loop: the numpy backend does not know its shape
    there.  Its shape is that of the value the forward loop left in the local, and the local holds that value
    there when every statement before that stores it is either a statement of the body's top level before
    the loop (so it is bound when the loop runs no iteration) or the loop itself, nothing after the loop
    rebinding it, and the statements between the ``0.0`` and the reverse loop leave it alone.  The reverse
    loop restores the local's earlier values, reads only the last one where every value has its shape, or
    does not read it.  A ``parameter`` (``x = x * 0.9`` in the loop) is bound before the loop by the call;
    where the loop runs no trip its gradient is zeros of the argument, as the numpy backend returns for the
    0.0 it starts as.
    """
    after = position + 1
    while after < len(body) and isinstance(body[after], (gast.Assign, gast.AugAssign)) \
            and not _stores(body[after], name):
        after += 1
    if after == len(body) or not isinstance(body[after], (gast.For, gast.While)):
        return False
    # the reverse loop restores the local, reads it alone (its shape fixed: passes/fixed_shapes.py), or names it
    # no more where a proof of its trips' shapes dropped the unbroadcast that read it (passes/trip_shapes.py):
    # either way the local holds the forward loop's last value here
    loops = [at for at, stmt in enumerate(body[:position]) if _stores(stmt, name)
             and isinstance(stmt, (gast.For, gast.While, gast.If, gast.With, gast.Try))]
    if len(loops) != 1 or not isinstance(body[loops[0]], (gast.For, gast.While)):
        return False
    stored = [at for at, stmt in enumerate(body[:position]) if _stores(stmt, name)]
    return (parameter or stored[0] < loops[0]) and stored[-1] == loops[0]


def _zeros_shaped(stmts, zeros, namespace) -> None:
    """``dx = zeros_like_gradient(x)`` for ``dx = 0.0``, where ``x`` is a parameter the function never rebinds.

    Where a gradient may not have been reached (before a loop that adds to
    it), the numpy backend writes the number 0.0: the shape is not known
    there.  Numba needs one type per variable, and the loop makes it an
    array.  The gradient of a parameter that keeps its value has that
    parameter's shape, so zeros of it are the same start: 0.0 + g and
    zeros + g are the same numbers.
    """
    for stmt in stmts:
        if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) \
                and stmt.targets[0].id in zeros and isinstance(stmt.value, gast.Constant) \
                and type(stmt.value.value) is float and stmt.value.value == 0.0:
            helper = _bound(namespace, zeros_like_gradient)
            stmt.value = compat.call(compat.name(helper), [compat.name(zeros[stmt.targets[0].id])])
        for _, _, inner in compat.own_blocks(stmt):
            _zeros_shaped(inner, zeros, namespace)


def _zeros_when_skipped(stmt, namespace, adjoints) -> None:
    """``da = zeros_like_gradient(a)`` for ``da = 0.0`` in ``if is_zero(g): ... else: da = unbroadcast(e, shape(a))``.

    A callee's backward function skips its rules when the gradient it is
    given is zero, and writes the number 0.0 for each gradient the rules
    would have made; Numba needs one type per variable.  Where the rule
    makes the gradient ``unbroadcast(e, shape(a))``, which has ``a``'s shape,
    zeros of that shape are the same start: added to or multiplied with what
    follows, 0.0 and zeros give the same numbers.  In the entry, whose
    adjoint names are known (``adjoints``: adjoint -> value), the gradient
    of a value has its shape wherever the rule made it (the rule of ``a @
    b`` of matrices makes ``g @ T(b)`` without an ``unbroadcast``): zeros of
    that value there too.
    """
    test = stmt.test
    if not (isinstance(test, gast.Call) and _is(test.func, namespace, runtime.is_zero)):
        return
    shaped = {}
    for other in stmt.orelse:
        value = getattr(other, "value", None)
        if isinstance(other, gast.Assign) and len(other.targets) == 1 and isinstance(other.targets[0], gast.Name) \
                and isinstance(value, gast.Call) and any(_is(value.func, namespace, u) for u in _SHAPED) \
                and len(value.args) in (2, 3) and isinstance(value.args[1], gast.Call) \
                and _is(value.args[1].func, namespace, runtime.shape) and len(value.args[1].args) == 1 \
                and isinstance(value.args[1].args[0], gast.Name):
            shaped[other.targets[0].id] = value.args[1].args[0].id
        elif isinstance(other, gast.Assign) and len(other.targets) == 1 and isinstance(other.targets[0], gast.Name) \
                and other.targets[0].id in adjoints:
            shaped.setdefault(other.targets[0].id, adjoints[other.targets[0].id])
    helper = None
    for zero in stmt.body:
        if isinstance(zero, gast.Assign) and len(zero.targets) == 1 and isinstance(zero.targets[0], gast.Name) \
                and zero.targets[0].id in shaped and isinstance(zero.value, gast.Constant) \
                and type(zero.value.value) is float and zero.value.value == 0.0:
            helper = helper or _bound(namespace, zeros_like_gradient)
            zero.value = compat.call(compat.name(helper), [compat.name(shaped[zero.targets[0].id])])
    _zeros_of_arithmetic(stmt, namespace)


def _zeros_of_arithmetic(stmt, namespace) -> None:
    """``da = zeros_like_gradient(g * s)`` for ``da = 0.0`` in ``if is_zero(g): ... else: da = g * s``.

    Where a proof of the reverse sweep's shapes dropped the ``unbroadcast``
    (passes/trip_shapes.py: ``e`` has ``a``'s shape on every trip), the
    other arm binds the gradient to an expression of names and numbers.
    Zeros of that expression's value are of its type (Numba needs one type
    per variable) and, where the zero arm runs (``g`` the number 0), of the
    shape the expression would have: the same start as 0.0 for what
    follows, and no ``a`` to save for its shape.  Only where the expression
    is arithmetic (``+ - * /``, negation) on names the other arm does not
    bind and numbers: it reads what is bound before the test, and raises
    nothing there that it would not raise in the other arm.  An arm that
    Numba types dead (``g`` an array) is never run.
    """
    stored = {n.id for other in stmt.orelse for n in gast.walk(other)
              if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    values: dict = {}
    for other in stmt.orelse:
        if isinstance(other, gast.Assign) and len(other.targets) == 1 and isinstance(other.targets[0], gast.Name) \
                and _arithmetic(other.value, stored):
            values.setdefault(other.targets[0].id, []).append(other.value)
    helper = None
    for zero in stmt.body:
        if isinstance(zero, gast.Assign) and len(zero.targets) == 1 and isinstance(zero.targets[0], gast.Name) \
                and len(values.get(zero.targets[0].id, ())) == 1 and isinstance(zero.value, gast.Constant) \
                and type(zero.value.value) is float and zero.value.value == 0.0:
            helper = helper or _bound(namespace, zeros_like_gradient)
            zero.value = compat.call(compat.name(helper), [compat.clone(values[zero.targets[0].id][0])])


def _arithmetic(node, stored) -> bool:
    """Whether ``node`` is ``+ - * /`` and negation of names not in ``stored`` and numbers, one name at least."""
    names = 0
    for n in gast.walk(node):
        if isinstance(n, gast.Name):
            if n.id in stored:
                return False
            names += 1
        elif isinstance(n, gast.Constant):
            if type(n.value) not in (int, float):
                return False
        elif not isinstance(n, (gast.BinOp, gast.UnaryOp, gast.Add, gast.Sub, gast.Mult, gast.Div, gast.USub,
                                gast.Load)):
            return False
    return names > 0


_UNBROADCASTS = (runtime.unbroadcast, rules.unbroadcast, _support.unbroadcast)
#: helpers whose result has the shape their second argument gives (``scatter(g, shape(y), i)``: a gradient of y;
#: ``filled(g, shape(t))``, a sum's gradient spread over its operand)
_SHAPED = _UNBROADCASTS + (_extra.scatter, _support.filled)


def zeros_like_gradient(x):
    """A zero gradient for ``x``: 0.0 for a number, zeros of its shape (a float dtype) for an array."""
    if isinstance(x, np.ndarray):
        return np.zeros(x.shape, x.dtype if x.dtype.kind in "fc" else np.float64)
    return 0.0


def _pushes_of_none(fn_def, stack, namespace) -> None:
    """``_stack.append(saved_value(t))`` for a push of ``t`` where ``t`` starts as None.

    A value a loop overwrites is pushed before each write, the first time
    as the None it starts as (before the loop it has no value); the reverse
    loop pops it back and never reads it after.  Numba types a stack as a
    list of one type, and None is not an array: ``saved_value`` gives an
    empty array of the same type (0.0, 0, False for numbers) where the
    value is None, and the value itself elsewhere.  The same for such a
    name read by a numpy function or read as an array or an index
    (``c[t12]``, an item the reverse loop computes again from the index its
    trip saved): Numba's functions and indexing take no "None or a value".
    A None the user wrote is left alone: the code may read it back.
    """
    starts_none = _declared_none(fn_def)
    if not starts_none:
        return
    helper = _bound(namespace, saved_value)
    for node in gast.walk(fn_def):
        if not isinstance(node, gast.Call) or _is(node.func, namespace, saved_value):
            continue
        if isinstance(node.func, gast.Attribute) and node.func.attr == "append" \
                and isinstance(node.func.value, gast.Name) and node.func.value.id == stack:
            node.args = [_NoneSaved(starts_none, helper).visit(arg) for arg in node.args]
        elif _of_numpy(node.func, namespace):  # Numba types the name "None or an array"; numpy takes no such
            node.args = [compat.call(compat.name(helper), [arg]) if isinstance(arg, gast.Name) and arg.id in starts_none
                         and isinstance(arg.ctx, gast.Load) else arg for arg in node.args]
    def indexing(call):
        return next((position for fn, position in _INDEX_ARGUMENTS.items() if _is(call.func, namespace, fn)), None)
    valued = {n.id for s in gast.walk(fn_def) if isinstance(s, gast.Assign) and not _none_constant(s.value)
              for t in s.targets for n in gast.walk(t) if isinstance(n, gast.Name)}
    _items_of_none(fn_def.body, starts_none, set(), helper, indexing, valued)


def _none_constant(node) -> bool:
    """Whether ``node`` is the constant ``None``."""
    return isinstance(node, gast.Constant) and node.value is None


#: the helpers that take an index, and its position: the gradient of ``x[t]`` scattered or added at ``t``
_INDEX_ARGUMENTS = {_extra.scatter: 2, runtime.getitem_gradient: 2, runtime.add_at: 3, runtime.added_at: 3}


def _items_of_none(stmts, starts_none, bound, helper, indexing, valued) -> None:
    """``c[saved_value(t12)]`` for an item read at (or of) a name declared None, where the statements before it
    in its block (``bound``, with the loop's target in a loop's body) have not bound the name: there Numba
    types it "None or a value" (the reverse loop reads ``c[t12]`` again before it pops ``t12`` back), and it
    indexes with no such type.  Where the block bound it, Numba types that value alone: left as written.
    The same for the index a gradient is scattered or added at (``indexing``: a call -> the position of its
    index, or None), ``scatter(dt1, shape(t2), saved_value(t3))``, and for an operand of a comparison
    (``saved_value(t14) > 0.1``: compared, None is the literal False, which no array of booleans unifies with),
    where the function binds the name to something else than None somewhere (``valued``).
    """
    bound = set(bound)
    for stmt in stmts:
        saved = _NoneSaved(starts_none - bound, helper)
        compared = _NoneSaved((starts_none - bound) & valued, helper)
        blocks = [inner for _, _, inner in compat.own_blocks(stmt)]
        nested = {id(s) for inner in blocks for s in inner}
        for node in _own_nodes(stmt, nested):
            if isinstance(node, gast.Subscript) and isinstance(node.ctx, gast.Load):
                if isinstance(node.value, gast.Name):
                    node.value = saved.visit(node.value)
                if isinstance(node.slice, gast.Name):
                    node.slice = saved.visit(node.slice)
                elif isinstance(node.slice, gast.Tuple):
                    node.slice.elts = [saved.visit(e) if isinstance(e, gast.Name) else e for e in node.slice.elts]
            elif isinstance(node, gast.Call) and (position := indexing(node)) is not None:
                if len(node.args) > position and isinstance(node.args[position], gast.Name):
                    node.args[position] = saved.visit(node.args[position])
            elif isinstance(node, gast.Compare) and not any(isinstance(op, (gast.Is, gast.IsNot)) for op in node.ops):
                # ``t14 > 0.1``: Numba types None's comparison a literal False (``t is None`` stays: it tests the
                # None itself, and Numba drops the branch it decides)
                node.left = compared.visit(node.left) if isinstance(node.left, gast.Name) else node.left
                node.comparators = [compared.visit(c) if isinstance(c, gast.Name) else c for c in node.comparators]
        target = {n.id for n in gast.walk(stmt.target) if isinstance(n, gast.Name)} \
            if isinstance(stmt, gast.For) else set()
        for _, field, inner in compat.own_blocks(stmt):
            _items_of_none(inner, starts_none, bound | target if field == "body" else bound, helper, indexing,
                           valued)
        stored = {n.id for n in gast.walk(stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
        if isinstance(stmt, gast.Assign) and not (isinstance(stmt.value, gast.Constant) and stmt.value.value is None):
            bound |= stored
        else:  # a declaration, a block or a loop: after it, the name may hold the None again
            bound -= stored


def _own_nodes(stmt, nested) -> list:
    """The nodes of ``stmt`` outside the statements of its blocks (``nested``: their ids)."""
    found, todo = [], [stmt]
    while todo:
        node = todo.pop()
        found.append(node)
        todo += [child for child in gast.iter_child_nodes(node) if id(child) not in nested]
    return found


def _of_numpy(func, namespace) -> bool:
    """Whether ``func`` is a function of numpy's reached through the module (``np.where``, ``np.linalg.inv``)."""
    while isinstance(func, gast.Attribute):
        func = func.value
    if not isinstance(func, gast.Name):
        return False
    module = namespace.get(func.id)
    return isinstance(module, types.ModuleType) and module.__name__.split(".")[0] == "numpy"


class _NoneSaved(gast.NodeTransformer):
    def __init__(self, names, helper):
        self.names, self.helper = names, helper

    def visit_Name(self, node):
        if node.id in self.names and isinstance(node.ctx, gast.Load):
            return compat.call(compat.name(self.helper), [node])
        return node


def _positional(args) -> None:
    """Keyword-only parameters after the positional ones, with their defaults.

    Defaults cover a suffix of the parameters, so a keyword-only parameter
    without one gets None when an earlier one has a default (callers name it).
    """
    if not args.kwonlyargs:
        return
    kw_defaults = list(args.kw_defaults)
    if args.defaults or any(d is not None for d in kw_defaults):
        args.defaults = list(args.defaults) + [compat.const(None) if d is None else d for d in kw_defaults]
    args.args = list(args.args) + list(args.kwonlyargs)
    args.kwonlyargs, args.kw_defaults = [], []


def _block(stmts, namespace, adjoints) -> list:
    out: list = []
    stmts = list(stmts)
    for position, stmt in enumerate(stmts):
        if isinstance(stmt, gast.Delete) or _loop_after(stmt, stmts[position - 1] if position else None, namespace):
            continue
        looped = _loop_after(stmts[position + 1] if position + 1 < len(stmts) else None, stmt, namespace)
        if looped is not None:
            out += _block(looped, namespace, adjoints)  # the loop as written; the next statement (its If) is skipped
            continue
        if isinstance(stmt, gast.For):
            stmt.iter = _counting_down(stmt.iter, namespace) or stmt.iter
        if isinstance(stmt, (gast.If, gast.While)):
            stmt.test = _without_type_test(stmt.test, namespace)
        if isinstance(stmt, gast.If):
            _zeros_when_skipped(stmt, namespace, adjoints)
        for _, field, inner in compat.own_blocks(stmt):
            setattr(stmt, field, _block(inner, namespace, adjoints) or [keep_origin(stmt, compat.make("Pass"))])
        out.append(stmt)
    return out


def _loop_after(stmt, before, namespace):
    """The loop as written, for ``if saved is None: <loop> else: <vectorised>`` after ``saved = pop_numbers(...)``.

    ``pop_numbers`` takes a linear recurrence's saved numbers off the stack
    as one array when every value is a number, so numpy computes the
    recurrence with array operations; else None, and the loop runs.  Compiled,
    the loop is the fast form, and a variable that is None or a tuple has
    no one type: the loop is kept and the rest goes.
    """
    if not (isinstance(stmt, gast.If) and isinstance(before, gast.Assign) and len(before.targets) == 1
            and isinstance(before.targets[0], gast.Name) and isinstance(before.value, gast.Call)
            and _is(before.value.func, namespace, runtime.pop_numbers)):
        return None
    test = stmt.test
    if isinstance(test, gast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], gast.Is) \
            and isinstance(test.left, gast.Name) and test.left.id == before.targets[0].id \
            and isinstance(test.comparators[0], gast.Constant) and test.comparators[0].value is None:
        return stmt.body
    return None


def _is(node, namespace, obj) -> bool:
    """Whether ``node`` is a global name bound to ``obj`` (generated code binds builtins by name too)."""
    return isinstance(node, gast.Name) and node.id in namespace and namespace[node.id] is obj


def _counting_down(iterable, namespace):
    """``range(last_of_range(a, b, s), a - s, -s)`` for ``reversed(range(a, b, s))``, and
    ``range(last_of_range(a, b, s, t), a - s, -s)`` for ``reversed(range(a, b, s)[:t])`` (the trips a loop
    with a ``break`` ran, reversed: Numba slices no range and reverses nothing); else None."""
    if not (isinstance(iterable, gast.Call) and _is(iterable.func, namespace, builtins.reversed)
            and len(iterable.args) == 1 and not iterable.keywords):
        return None
    inner, count = iterable.args[0], None
    if isinstance(inner, gast.Subscript) and isinstance(inner.slice, gast.Slice) and inner.slice.lower is None \
            and inner.slice.step is None and inner.slice.upper is not None:
        inner, count = inner.value, inner.slice.upper
    if not (isinstance(inner, gast.Call) and _is(inner.func, namespace, builtins.range) and not inner.keywords
            and 1 <= len(inner.args) <= 3):
        return None
    args = list(inner.args)
    if len(args) == 1 and count is None:  # range(n): n - 1 down to 0
        stop = args[0]
        return compat.call(compat.clone(inner.func), [compat.binop(compat.clone(stop), "Sub", compat.const(1)),
                                                       compat.const(-1), compat.const(-1)])
    start, stop = (args[0], args[1]) if len(args) > 1 else (compat.const(0), args[0])
    step = args[2] if len(args) == 3 else compat.const(1)
    parts = [compat.clone(a) for a in (start, stop, step)] + ([compat.clone(count)] if count is not None else [])
    last = compat.call(compat.name(_bound(namespace, last_of_range)), parts)
    end = compat.binop(compat.clone(start), "Sub", compat.clone(step))
    down = compat.make("UnaryOp", op=gast.USub(), operand=compat.clone(step))
    return compat.call(compat.clone(inner.func), [last, end, down])


def last_of_range(start, stop, step, count=None):
    """The last item of ``range(start, stop, step)``, or of its first ``count`` items (``[:count]``, a negative
    count leaving that many out as a slice does); ``start - step`` when there is none."""
    return start + (len(range(start, stop, step)[:count]) - 1) * step


def _bound(namespace, obj) -> str:
    """The global name ``obj`` has in ``namespace`` (the builtin's own name when the module did not bind it)."""
    for name, value in namespace.items():
        if value is obj:
            return name
    name = obj.__name__
    if name in namespace:
        raise KeyError(f"astgrad: the generated module binds {name!r} to something else than the builtin")
    namespace[name] = obj
    return name


def _without_type_test(test, namespace):
    """``shape(x)`` for ``type(x) is not float and shape(x)``; other tests as they are."""
    if not (isinstance(test, gast.BoolOp) and isinstance(test.op, gast.And)):
        return test
    kept = [v for v in test.values if not _is_float_test(v, namespace)]
    if len(kept) == len(test.values):
        return test
    return kept[0] if len(kept) == 1 else compat.make("BoolOp", op=gast.And(), values=kept)


def _is_float_test(node, namespace) -> bool:
    return isinstance(node, gast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], gast.IsNot) \
        and isinstance(node.left, gast.Call) and _is(node.left.func, namespace, builtins.type) \
        and _is(node.comparators[0], namespace, builtins.float)
