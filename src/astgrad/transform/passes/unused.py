"""Remove what the generated function computes but never uses.

Dead-store elimination over a generated function: an assignment to a name
that nothing reads is dropped when its value has no side effects (a pop
from the stack stays, as a bare ``_stack.pop()``); ``if`` statements left
with empty branches collapse; reverse loops with empty bodies disappear.
Runs to a fixed point, so chains of dead temporaries go too.

``unbind`` then writes a primal temporary that is read once, by the next
statement, into that statement: ``h = np.tanh(t2 + b1)`` instead of
``t1 = t2 + b1`` and ``h = np.tanh(t1)``, so the array is freed as soon as
it has been used instead of living until the gradient returns.

Long: dead-store elimination with the effect and liveness analyses it needs
over the generated tree.
"""

from __future__ import annotations

import numpy as np

from ..ir import compat
from .. import runtime
from ..ir.tagged import POP, PUSH, RELEASE, kind, pushed, shape_kept, shape_of
from ..ir.compat import gast
from ..ir.trees import is_marker
from ..ir.trees import rewrite
from ..runtime.origins import keep_origin
from .float_flow import ARRAY, FLOATS, floats_before
from .saves import restored_unread

_PURE_BUILTINS = (range, len, min, reversed, float, abs, tuple)  # by identity: a name may be the user's


def optimize(fn_def, ns, keep=(), given=None):
    """Dead code out of ``fn_def``; ``given`` (a GivenFloats, or None) folds the guards on real floats."""
    names: dict = {fn: ns.helper(fn) for fn in _CHECKS}  # runtime helpers and the str keys below -> names
    while True:
        names[_ARITHMETIC] = _arithmetic(fn_def, ns)
        names[_FOLDS] = _folds(fn_def, ns)
        _note_floats(names, fn_def, ns, given)
        reads = _needed(fn_def, ns, set(keep), names)
        changed = [False]
        fn_def.body = _sweep(fn_def.body, reads, ns, changed, names) or [compat.make("Pass")]
        if not changed[0]:
            _releases_of_bound_names(fn_def)
            return fn_def


def _releases_of_bound_names(fn_def) -> None:
    """Drop from each ``del`` that frees memory (cleanup.py ``release``) the names no statement binds or reads
    any more.

    The release is written where a name is surely bound; a value computed
    only for what it may raise is then read no more, its binding becomes a
    bare check (``t6 = np.sum(c) > -0.5`` nothing reads: ``checked(...)``),
    and ``del t6`` would raise UnboundLocalError.  A name read but bound
    nowhere is kept: a backward half reads what the pop written at its
    start (later, by ``split``) binds.
    """
    bound = {a.id for a in fn_def.args.args + fn_def.args.kwonlyargs + fn_def.args.posonlyargs} | {
        n.id for n in compat.walk(fn_def) if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Load))}

    def block(stmts):
        out = []
        for s in stmts:
            if kind(s) == RELEASE:
                s.targets = [t for t in s.targets if t.id in bound]
                if not s.targets:
                    continue
            for _, field, inner in compat.own_blocks(s):
                setattr(s, field, block(inner) or [compat.make("Pass")])
            out.append(s)
        return out
    fn_def.body = block(fn_def.body) or [compat.make("Pass")]


#: the keys of ``names`` under which ``optimize`` passes the results of arithmetic and the folds
_ARITHMETIC, _FOLDS = "arithmetic", "folds"
#: the keys of ``names`` for the names surely of real floats, those that would be with every parameter of
#: floats, and the GivenFloats whose ``asked`` a guard left in place sets
_FLOATS, _FLOATS_IF_GIVEN, _GIVEN = "floats", "floats if given", "given"
#: the keys of ``names`` for those known before the statement a check is made for (``_floats_at``)
_FLOATS_AT, _FLOATS_IF_GIVEN_AT = "floats here", "floats here if given"


class GivenFloats:
    """The parameters that hold real floats in every call the generated code serves, as ranks are given.

    ``floats(x)``, which guards a value left uncomputed (``shape(y) if
    floats(y) else y * y * 3``), is then known at transform time wherever
    ``y`` surely holds real floats, and the guard folds to the shape
    computation.  api/gradient.py keeps one adjoint per set of such
    parameters; ``asked`` says that a guard stayed which more of them would
    have folded (the general adjoint then specialises on them).
    """

    __slots__ = ("names", "asked", "callees", "_returns")

    def __init__(self, names=(), callees=None):
        self.names = frozenset(names)
        self.asked = False
        self.callees = {} if callees is None else callees  # forward function's name -> its FunctionDef
        self._returns: dict = {}  # (name, kinds of its parameters) -> the kind it returns (None while found)

    def returned(self, name, kinds, ns):
        """The kind (float_flow.py) of what the callee's forward function ``name`` returns, its parameters of ``kinds``.

        None unless every return surely gives it: the function ends in a
        ``return``, and a recursive call is not followed (None).
        """
        key = (name, tuple(sorted(kinds.items())))
        if key in self._returns:
            return self._returns[key]
        self._returns[key] = None
        fn_def = self.callees[name]
        if not fn_def.body or not isinstance(fn_def.body[-1], gast.Return):
            return None
        before = floats_before(fn_def, kinds, lambda v, k: _kind(v, k, ns, self))
        found = [_kind(s.value, before[id(s)], ns, self) if s.value is not None and id(s) in before else None
                 for s in compat.walk(fn_def) if isinstance(s, gast.Return)]
        self._returns[key] = kind = None if None in found else min(k for k in found if k is not None)
        return kind


def _note_floats(names, fn_def, ns, given):
    """Put into ``names`` what ``_unless_floats`` needs to fold guards (nothing when ``given`` is None)."""
    if given is None:
        names.pop(_GIVEN, None)
        return
    params = {a.id for a in fn_def.args.posonlyargs + fn_def.args.args + fn_def.args.kwonlyargs}
    names[_GIVEN] = given
    names[_FLOATS] = floats_before(fn_def, dict.fromkeys(given.names & params, ARRAY),
                                   lambda v, k: _kind(v, k, ns, given))
    names[_FLOATS_IF_GIVEN] = floats_before(fn_def, dict.fromkeys(params, ARRAY), lambda v, k: _kind(v, k, ns, given))


def _kind(expr, known, ns, given):
    """``ARRAY``, ``FLOATS`` or None (float_flow.py): what ``expr`` surely gives where ``known`` holds (``given``:
    the GivenFloats, whose ``callees`` tell what a call of a callee's forward function returns)."""
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and expr.func.id in given.callees:
        fn_def = given.callees[expr.func.id]
        if expr.keywords or fn_def.args.vararg or any(isinstance(a, gast.Starred) for a in expr.args):
            return None
        positional = [a.id for a in fn_def.args.posonlyargs + fn_def.args.args]
        return given.returned(expr.func.id, {p: known[a.id] for p, a in zip(positional, expr.args)
                                             if isinstance(a, gast.Name) and a.id in known}, ns)
    arrays = {name for name, kind in known.items() if kind == ARRAY}
    if _real_floats(expr, arrays, known, ns):
        return ARRAY
    return FLOATS if _shaped_floats(expr, arrays, known, ns) else None


def _floats_at(names, stmt):
    """``names`` with the names known to hold real floats before ``stmt`` (float_flow.py), to fold its guard."""
    if _GIVEN not in names:
        return names
    return {**names, _FLOATS_AT: names[_FLOATS].get(id(stmt), {}), _FLOATS_IF_GIVEN_AT: names[_FLOATS_IF_GIVEN].get(id(stmt), {})}


#: numpy functions giving an array (or a numpy scalar) of real floats of arrays of real floats, or raising
_KEEP_FLOATS = (np.dot, np.matmul, np.transpose, np.reshape, np.ravel, np.squeeze, np.expand_dims)


def _real_floats(expr, arrays, found, ns) -> bool:
    """Whether ``expr`` is surely an array or numpy scalar of real floats (or raises), with ``arrays`` such
    names and ``found`` those that may be ``Shaped`` of floats too."""
    if isinstance(expr, gast.Name):
        return expr.id in arrays
    if isinstance(expr, gast.IfExp):
        return _real_floats(expr.body, arrays, found, ns) and _real_floats(expr.orelse, arrays, found, ns)
    if isinstance(expr, gast.Subscript) or isinstance(expr, gast.Attribute) and expr.attr == "T":
        return isinstance(expr.value, gast.Name) and expr.value.id in arrays
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.MatMult):
        return all(isinstance(e, gast.Name) and e.id in arrays for e in (expr.left, expr.right))
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and len(expr.args) == 1 and not expr.keywords \
            and isinstance(expr.args[0], gast.Name):
        helper = ns.globals.get(expr.func.id)
        if helper is runtime.stand_in:  # a Shaped of floats stands in as ones of its dtype
            return expr.args[0].id in found
        if helper is runtime.T:
            return expr.args[0].id in arrays
    if isinstance(expr, gast.Call) and not expr.keywords and expr.args and isinstance(expr.args[0], gast.Name):
        fn = _numpy_function(expr.func, ns)
        if any(fn is f for f in _KEEP_FLOATS):
            operands = expr.args if fn in (np.dot, np.matmul) else expr.args[:1]
            return all(isinstance(a, gast.Name) and a.id in arrays for a in operands)
    return _arithmetic_of(expr, arrays, ns)


def _shaped_floats(expr, arrays, found, ns) -> bool:
    """Whether ``expr`` is surely of real floats or a ``Shaped`` of them (or raises), with ``found`` such names
    (``arrays``: those surely arrays or numpy scalars)."""
    if _real_floats(expr, arrays, found, ns):
        return True
    if isinstance(expr, gast.Name):
        return expr.id in found
    if isinstance(expr, gast.IfExp):
        branches = [expr.body] if _is_guard(expr, ns) and all(  # floats(a, b) surely true: the shape
            isinstance(a, gast.Name) and a.id in found for a in expr.test.args) else [expr.body, expr.orelse]
        return all(_shaped_floats(e, arrays, found, ns) for e in branches)
    if isinstance(expr, gast.Call) and isinstance(expr.func, gast.Name) and not expr.keywords:
        helper = ns.globals.get(expr.func.id)
        if helper is runtime.Shaped:
            return len(expr.args) == 1  # float64, unless a dtype is given (comparisons: "bool")
        if helper is runtime.only_shape:
            return len(expr.args) == 1 and isinstance(expr.args[0], gast.Name) and expr.args[0].id in found
    return _arithmetic_of(expr, found, ns)


def _arithmetic_of(expr, found, ns) -> bool:
    """An elementwise operation or a reduction (``_shape_expression``, no comparison) of names in ``found``
    and numbers: on real floats numpy gives real floats (of at most 64 bits), on a ``Shaped`` it raises."""
    if isinstance(expr, gast.Compare):
        return False
    operands: list = []
    return _shape_expression(expr, ns, {}, operands) is not None and bool(operands) \
        and all(n.id in found for n in operands)


def _folds(fn_def, ns) -> dict:
    """``t -> (statement, reader)`` for a temporary ``t`` bound once by ``statement`` whose one read is the pure assignment ``reader``, later in its block.

    ``t1 = y * y`` and ``z = t1 * 3``, both unused, get one check,
    ``checked(shape(y) if floats(y) else y * y * 3)``, at ``z``: a check of
    ``t1`` alone would keep ``t1`` computed for ``z``'s.  Only where
    nothing between them stores ``t`` or a name ``value`` reads.
    """
    stores: dict = {}
    loads: dict = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name):
            counts = loads if isinstance(n.ctx, gast.Load) else stores
            counts[n.id] = counts.get(n.id, 0) + 1
    folds = {}
    for block in _blocks(fn_def.body):
        for i, stmt in enumerate(block):
            name = _single_target(stmt)
            if name is None or stores.get(name) != 1 or loads.get(name) != 1 or _leaf(stmt.value) \
                    or not _pure(stmt.value, ns) or _shape_expression(stmt.value, ns, {}) is None:
                continue
            reads = {n.id for n in compat.walk(stmt.value) if isinstance(n, gast.Name)} | {name}
            for later in block[i + 1:]:
                if any(isinstance(n, gast.Name) and n.id == name for n in compat.walk(later)):
                    target = _single_target(later)
                    if target is not None and target != name and _pure(later.value, ns) \
                            and not any(isinstance(n, gast.Name) and n.id == target for n in compat.walk(later.value)):
                        folds[name] = (stmt, later)
                    break
                if any(isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load) and n.id in reads
                       for n in compat.walk(later)):
                    break
    return folds


def _blocks(stmts):
    yield stmts
    for s in stmts:
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from _blocks(inner)


def specialise_callees(entry, functions, ns, given):
    """Dead code out of each callee's forward function again, knowing which parameters every call gives real floats.

    A callee's pair serves every call in the module (``ModuleBuilder.variant``),
    so its guards fold only where each of its calls, all of them in the
    ``entry`` (none from another of the ``functions``, itself included),
    passes a name the entry knows to hold real floats there (float_flow.py).
    In the general adjoint (no parameter known) a guard left in a callee
    marks it float dependent.
    """
    if given is None or not given.callees:
        return
    if not given.names:
        given.asked |= any(_is_guard(n, ns) for name in given.callees for n in compat.walk(given.callees[name]))
        return
    params = {a.id for a in entry.args.posonlyargs + entry.args.args + entry.args.kwonlyargs}
    before = floats_before(entry, dict.fromkeys(given.names & params, ARRAY), lambda v, k: _kind(v, k, ns, given))
    elsewhere = {n.id for f in functions if f is not entry for n in compat.walk(f) if isinstance(n, gast.Name)}
    sites: dict = {}
    for stmt in _statements(entry.body):
        for n in compat.walk(_own_parts(stmt)):
            if isinstance(n, gast.Name) and n.id in given.callees:
                sites.setdefault(n.id, []).append((n, before.get(id(stmt))))
    calls = {id(n.func): n for n in compat.walk(entry) if isinstance(n, gast.Call)}
    for name, found in sites.items():
        fn_def = given.callees[name]
        positional = [a.id for a in fn_def.args.posonlyargs + fn_def.args.args]
        floats = set(positional)
        for node, known in found:
            call = calls.get(id(node))  # None: the function read as a value, not called
            if name in elsewhere or known is None or call is None or call.keywords \
                    or any(isinstance(a, gast.Starred) for a in call.args):
                floats = set()
                break
            floats &= {p for p, a in zip(positional, call.args) if isinstance(a, gast.Name) and known.get(a.id) == ARRAY}
        if floats:
            inner = GivenFloats(floats, given.callees)
            kinds = floats_before(fn_def, dict.fromkeys(floats, ARRAY), lambda v, k, inner=inner: _kind(v, k, ns, inner))
            fn_def.body = _folded_guards(fn_def.body, kinds, ns) or [compat.make("Pass")]
            optimize(fn_def, ns, given=inner)


def _folded_guards(stmts, kinds, ns):
    """``stmts`` with each guard ``shape if floats(a, b) else value`` whose operands ``kinds`` (the names known
    before each statement) prove real floats replaced by ``shape``; a check left with nothing to raise goes."""
    out = []
    for s in stmts:
        known = kinds.get(id(s))
        for _, field, inside in compat.own_blocks(s):
            setattr(s, field, _folded_guards(inside, kinds, ns) or [compat.make("Pass")])
        if known is None or not isinstance(s, (gast.Assign, gast.Expr)):
            out.append(s)
            continue

        def fold(node, known=known):
            if _is_guard(node, ns) and all(isinstance(a, gast.Name) and a.id in known for a in node.test.args):
                return node.body
            return None
        s.value = rewrite(s.value, fold)
        if isinstance(s, gast.Expr) and isinstance(s.value, gast.Call) and isinstance(s.value.func, gast.Name) \
                and ns.globals.get(s.value.func.id) is runtime.checked and not _is_guard(s.value.args[0], ns):
            shape = s.value.args[0]  # checked(shape): the check as it reads without a guard
            if _cannot_raise(shape, ns):
                continue
            s = keep_origin(s, compat.expr_stmt(shape))
        out.append(s)
    return out


def _check_of(stmt, ns, names):
    """The check of ``stmt``, a pure assignment nothing reads (``_raising_part`` of its value, folds written in)."""
    folds = names.get(_FOLDS, {})
    if _single_target(stmt) in folds:
        return None  # checked where it is read: its reader is unused too, or this would be needed
    return _raising_part(_folded(stmt.value, stmt, folds), ns, _floats_at(names, stmt), _targets(stmt))


def _folded(expr, reader, folds):
    """``expr`` (read by ``reader``) with each name folded into ``reader`` replaced by its value, folded too."""
    inner = {name: stmt for name, (stmt, by) in folds.items() if by is reader}
    if not inner:
        return expr

    def replace(node):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id in inner:
            stmt = inner[node.id]
            return _folded(stmt.value, stmt, folds)
        return None
    return rewrite(compat.clone(expr), replace)


def _arithmetic(fn_def, ns) -> set:
    """Local names every assignment of which is an elementwise operation or a reduction (``y = t3 * x``).

    What numpy computed by arithmetic is numbers, and numpy reduces numbers
    of any dtype raising nothing that the reduction's shape computation
    does not: ``np.sum(y)`` of such a ``y``, unused, needs no guard.
    """
    values: dict = {}
    simple = set()  # the targets of name = value
    for node in compat.walk(fn_def):
        if isinstance(node, gast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], gast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
            simple.add(id(node.targets[0]))
    other = {n.id for n in compat.walk(fn_def)  # loop targets, tuples
             if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store) and id(n) not in simple}
    params = {a.id for a in fn_def.args.args + fn_def.args.kwonlyargs + fn_def.args.posonlyargs}
    return {name for name, assigned in values.items() if name not in params and name not in other
            and all(not _leaf(v) and _shape_expression(v, ns, {}) is not None for v in assigned)}


def _needed(fn_def, ns, keep, names):
    """Names whose values something uses: read by a statement with an effect, or by what such a name needs.

    ``total = total + x`` in a loop, with ``total`` read nowhere else, is
    not needed: reading itself does not make a name live.  What a pure
    value's check reads (``_raising_part``) is needed: the check stays.
    """
    needs: dict = {}  # name -> names its pure assignments read
    needed = set(keep) | {names[fn] for fn in _CHECKS}  # the check helpers: read by any check
    pure = []  # (targets, statement) of the pure assignments
    for stmt in _statements(fn_def.body):
        if isinstance(stmt, gast.Assign) and all(isinstance(t, gast.Name) or isinstance(t, gast.Tuple) and all(
                isinstance(e, gast.Name) for e in t.elts) for t in stmt.targets):
            nodes = compat.walk(stmt.value)
            if _pure_nodes(nodes, ns):
                reads = {n.id for n in nodes if isinstance(n, gast.Name)}
                targets = _targets(stmt)
                for name in targets:
                    needs.setdefault(name, set()).update(reads)
                pure.append((targets, stmt))
                continue
        needed |= {n.id for n in compat.walk(_own_parts(stmt))
                   if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load)}
    # A check reads only names its value reads and the helpers, so it adds
    # nothing to a needed assignment's reads: checks are built only for the
    # assignments not (yet) needed, each once, until none adds a name.
    todo = list(needed)
    while todo:
        while todo:
            for name in needs.get(todo.pop(), ()):
                if name not in needed:
                    needed.add(name)
                    todo.append(name)
        unneeded = [(t, s) for t, s in pure if not t & needed]
        pure = [(t, s) for t, s in pure if t & needed]
        for targets, stmt in unneeded:
            check = _check_of(stmt, ns, names)
            for n in compat.walk(check) if check is not None else ():
                if isinstance(n, gast.Name) and n.id not in needed:
                    needed.add(n.id)
                    todo.append(n.id)
    return needed


def _statements(stmts):
    for s in stmts:
        yield s
        for field in ("body", "orelse"):
            inner = getattr(s, field, None)
            if isinstance(inner, list):
                yield from _statements(inner)


def _own_parts(stmt):
    """``stmt`` without its nested blocks (they are statements of their own)."""
    if isinstance(stmt, gast.For):
        return compat.tuple_([stmt.iter])
    if isinstance(stmt, (gast.If, gast.While)):
        return stmt.test
    return stmt


def _sweep(stmts, reads, ns, changed, names):
    out = []
    for s in stmts:
        if isinstance(s, gast.Assign) and _dead(s, reads):
            changed[0] = True
            if not _pure(s.value, ns):
                out.append(keep_origin(s, compat.expr_stmt(s.value)))
            else:
                check = _check_of(s, ns, names)
                if check is not None:  # what numpy would raise still raises
                    out.append(keep_origin(s, compat.expr_stmt(check)))
            continue
        if isinstance(s, gast.If):
            s.body = _sweep(s.body, reads, ns, changed, names)
            s.orelse = _sweep(s.orelse, reads, ns, changed, names)
            if _empty(s.body) and _empty(s.orelse):
                changed[0] = True
                if not _pure(s.test, ns):
                    out.append(compat.expr_stmt(s.test))
                continue
            if _empty(s.orelse):
                s.orelse = []
            if _empty(s.body):  # if c: pass / else: ...  ->  if not c: ...
                s.test = compat.make("UnaryOp", op=gast.Not(), operand=s.test)
                s.body, s.orelse = s.orelse, []
        elif isinstance(s, (gast.For, gast.While)):
            s.body = _sweep(s.body, reads, ns, changed, names) or [compat.make("Pass")]
            if isinstance(s, gast.For) and _empty(s.body) and _pure(s.iter, ns) \
                    and s.target.id not in reads:
                changed[0] = True
                continue
        out.append(s)
    if out and _empty(out) and not any(isinstance(s, gast.Pass) for s in out):
        out.append(compat.make("Pass"))  # only comments left: still a block
    return out


def _empty(stmts):
    """Nothing but ``pass`` and comment markers (``__comment_3__``)."""
    return all(isinstance(s, gast.Pass) or is_marker(s) for s in stmts)


def _targets(stmt):
    return {n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name)}


def _dead(stmt, reads):
    targets = stmt.targets[0]
    names = [targets] if isinstance(targets, gast.Name) else list(getattr(targets, "elts", []))
    return names and all(isinstance(n, gast.Name) and n.id not in reads for n in names)


def _pure(expr, ns) -> bool:
    """No side effects: names, constants, operators and known pure calls."""
    return _pure_nodes(compat.walk(expr), ns)


def _pure_nodes(nodes, ns) -> bool:
    """``_pure`` for an expression given as the list of its nodes."""
    for node in nodes:
        if isinstance(node, gast.Call):
            func = node.func
            root = func
            while isinstance(root, gast.Attribute):
                root = root.value
            if not isinstance(root, gast.Name):
                return False
            if kind(node) in (PUSH, POP):
                return False
            obj = ns.globals.get(root.id)
            if root.id in ns.pure or any(obj is b for b in _PURE_BUILTINS):
                continue
            if getattr(obj, "__name__", "") in ("numpy", "math") and not _random(func):
                continue
            return False
        elif isinstance(node, (gast.Yield, gast.Await, gast.NamedExpr)):
            return False
    return True


#: attributes and helpers that read an array's metadata and cannot raise
_SAFE_ATTRIBUTES = ("shape", "size", "ndim", "T", "dtype")
_SAFE_HELPERS = (runtime.shape, runtime.size, runtime.ndim, runtime.only_shape, runtime.T, runtime.array_kind)
#: the shape computations a check is made of
_CHECKS = (runtime.shape, runtime.broadcast_shape, runtime.reduced_shape, runtime.matmul_shape, runtime.floats,
           runtime.checked)


def _raising_part(expr, ns, names, own=frozenset()):
    """What must still run of ``expr``, a pure value nothing reads, so that it raises where it would; or None.

    Names, constants and metadata cannot raise: nothing.  An elementwise
    expression or a reduction (see ``_shape_expression``): its shape
    computation, which raises numpy's broadcasting and axis errors without
    making an array, where its operands are real floats (``floats``), and
    the expression itself where they are not (``k ** -1`` of integers,
    ``a - b`` of booleans raise on their dtypes or values).  ``a @ b`` of
    such operands: ``matmul_shape``.  Anything else (indexing, reshapes,
    other calls) runs whole.
    """
    if _cannot_raise(expr, ns):
        return None
    if own & {n.id for n in compat.walk(expr) if isinstance(n, gast.Name)}:
        return None  # a running total, t = t + x: its shape changes as it runs (not checked)
    operands: list = []
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, gast.MatMult):
        left, right = (_shape_expression(e, ns, names, operands, top=False) for e in (expr.left, expr.right))
        if left is None or right is None:
            return expr
        shape = compat.call(compat.name(names[runtime.matmul_shape]), [left, right])
        guard = _unless_floats(shape, expr, operands, names)
        return shape if guard is shape else _checked(guard, names)
    shape = _shape_expression(expr, ns, names, operands)
    if shape is None:
        return expr
    guard = shape if _leaf(expr) or _reduction_of(expr, names.get(_ARITHMETIC, ()), ns) \
        else _unless_floats(shape, expr, operands, names)
    if guard is shape:
        return None if _cannot_raise(shape, ns) else shape
    return _checked(guard, names)


def _checked(guard, names):
    """``checked(guard)``: a statement that is a call, as generated code differentiated again needs."""
    return compat.call(compat.name(names[runtime.checked]), [guard])


def _reduction_of(expr, arithmetic, ns) -> bool:
    """``np.sum(y)`` (a reduction of _REDUCTIONS) of a name in ``arithmetic``."""
    return isinstance(expr, gast.Call) and bool(expr.args) and isinstance(expr.args[0], gast.Name) \
        and expr.args[0].id in arithmetic and getattr(_numpy_function(expr.func, ns), "__name__", "") in _REDUCTIONS


def _unless_floats(shape, expr, operands, names):
    """``shape if floats(a, b) else expr``: the shape computation stands in for ``expr`` only on real floats.

    ``shape`` itself where the operands surely are real floats (GivenFloats).
    """
    seen: list = []
    for n in operands:
        if n.id not in seen:
            seen.append(n.id)
    given = names.get(_GIVEN)
    if given is not None:
        if all(n in names[_FLOATS_AT] for n in seen):
            return shape
        given.asked |= all(n in names[_FLOATS_IF_GIVEN_AT] for n in seen)
    test = compat.call(compat.name(names[runtime.floats]), [compat.name(n) for n in seen])
    return compat.make("IfExp", test=test, body=shape, orelse=expr)


def guarded_reads(tree, ns) -> set:
    """The ids of the names ``tree`` reads in a guard ``reduced_shape(shape(t)) if floats(t) else np.sum(t)``.

    Such a read is a read for the shape: where ``t`` is a shape standing in
    for floats (``Shaped``), ``floats(t)`` is true and the guard computes
    only the shape; else ``t`` is the value, computed as written.
    """
    out = set()
    for node in compat.walk(tree):
        if _is_guard(node, ns):
            tested = {a.id for a in node.test.args}
            out |= {id(n) for n in compat.walk(node) if isinstance(n, gast.Name) and n.id in tested}
    return out


def _is_guard(node, ns) -> bool:
    """``shape if floats(...) else value``."""
    return isinstance(node, gast.IfExp) and isinstance(node.test, gast.Call) \
        and isinstance(node.test.func, gast.Name) and ns.globals.get(node.test.func.id) is runtime.floats


def _leaf(expr) -> bool:
    """A name or a number: no operation that could raise."""
    return isinstance(expr, gast.Name) or _number(expr)


def _number(expr) -> bool:
    """A numeric literal, signed or not (``-1`` is an operator applied to ``1``)."""
    if isinstance(expr, gast.UnaryOp) and isinstance(expr.op, (gast.USub, gast.UAdd)):
        expr = expr.operand
    return isinstance(expr, gast.Constant) and isinstance(expr.value, (int, float)) \
        and not isinstance(expr.value, bool)


def _cannot_raise(expr, ns) -> bool:
    for node in compat.walk(expr):
        if isinstance(node, gast.Call):
            fn = ns.globals.get(node.func.id) if isinstance(node.func, gast.Name) else None
            if fn is runtime.reduced_shape and isinstance(node.args[1], gast.Constant) and node.args[1].value is None \
                    and len(node.args) < 4:
                continue  # over every axis: no axis to be out of range (a max or min still raises over nothing)
            if not any(fn is h for h in _SAFE_HELPERS):
                return False
        elif isinstance(node, gast.Attribute):
            if node.attr not in _SAFE_ATTRIBUTES:
                return False
        elif isinstance(node, gast.UnaryOp):
            if not isinstance(node.operand, gast.Constant):  # -a of booleans, of None raises
                return False
        elif not isinstance(node, (gast.Name, gast.Constant, gast.Tuple, gast.List, gast.expr_context,
                                   gast.USub, gast.UAdd, gast.Not)):
            return False
    return True


def _random(func) -> bool:
    return any(isinstance(n, gast.Attribute) and n.attr == "random" for n in compat.walk(func))


def unbind(fn_def, primal, temps, ns):
    """Write single-use temporaries of the ``primal`` statements into the statement that reads them."""
    loads: dict = {}
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name):
            key = "load" if isinstance(n.ctx, gast.Load) else "store"
            loads.setdefault(n.id, {"load": 0, "store": 0})[key] += 1
    once = {name for name, c in loads.items() if name in temps and c["load"] == 1 and c["store"] == 1}
    ids = {id(s) for s in primal}
    fn_def.body = [s for s in _unbind_block(fn_def.body, once, ns, ids)]
    return fn_def


def _unbind_block(stmts, once, ns, ids):
    out = []
    for s in stmts:
        if ids is not None and id(s) not in ids:
            out.append(s)
            continue
        if isinstance(s, (gast.For, gast.While)):
            s.body = _unbind_block(s.body, once, ns, None)
        elif isinstance(s, gast.If):
            s.body = _unbind_block(s.body, once, ns, None)
            s.orelse = _unbind_block(s.orelse, once, ns, None)
        prev = out[-1] if out else None
        name = _single_target(prev)
        if name in once and prev is not None and isinstance(s, gast.Assign) and _pure(prev.value, ns) and _pure(s.value, ns) \
                and (ids is None or id(prev) in ids):
            uses = [n for n in compat.walk(s.value) if isinstance(n, gast.Name) and n.id == name]
            if len(uses) == 1:
                value = prev.value
                s.value = _replace_name(s.value, name, value)
                out[-1] = s
                continue
        out.append(s)
    return out


def _single_target(stmt):
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name):
        return stmt.targets[0].id
    return None


def _replace_name(tree, name, value):
    if isinstance(tree, gast.Name) and tree.id == name:
        return value
    for field, child in gast.iter_fields(tree):
        if isinstance(child, gast.AST):
            setattr(tree, field, _replace_name(child, name, value))
        elif isinstance(child, list):
            setattr(tree, field, [_replace_name(c, name, value) if isinstance(c, gast.AST) else c for c in child])
    return tree


def shapes_on_stack(fn_def, adjoint, shape_helpers, keep_shape):
    """Push ``keep_shape(t)`` instead of ``t`` where the ``adjoint`` statements read ``t`` only as ``shape(t)``
    (or ``size(t)``: ``shape_helpers`` names both).

    ``t5 = h @ Wh`` in a loop is saved for ``unbroadcast(dt4, shape(t5))``:
    the stack then holds its shape, not the array.
    """
    shape_reads, other_reads = set(), set()
    for stmt in adjoint:
        inside = set()
        for n in compat.walk(stmt):
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in shape_helpers \
                    and len(n.args) == 1 and isinstance(n.args[0], gast.Name):
                inside.add(id(n.args[0]))
                shape_reads.add(n.args[0].id)
        for n in compat.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load) and id(n) not in inside:
                other_reads.add(n.id)
    only = shape_reads - other_reads
    targets = {n.id for s in compat.walk(fn_def) if isinstance(s, gast.For) for n in compat.walk(s.target)
               if isinstance(n, gast.Name)}  # a loop's counter: a number, kept as it is
    only |= restored_unread(fn_def, other_reads - targets, shape_helpers)
    if not only:
        return fn_def
    adjoint_ids = {id(stmt) for stmt in adjoint}
    for n in (n for stmt in fn_def.body if id(stmt) not in adjoint_ids for n in compat.walk(stmt)):
        arg = pushed(n)
        if isinstance(arg, gast.Name) and arg.id in only:
            n.value.args = [shape_of(keep_shape, arg)]
    return fn_def


def drop_arrays(fn_def, primal, adjoint, helpers, temps, ns):
    """Keep only the shape of a primal temporary the ``adjoint`` reads only for its shape.

    After the last primal statement that reads ``t2`` (``h = np.tanh(t2 +
    b1)``) comes ``t2 = only_shape(t2)``: the array is freed, and the
    adjoint's ``shape(t2)``, ``t2.shape`` and ``t2.size`` read the shape.
    ``helpers`` names ``shape``, ``size`` and ``only_shape`` in the module.
    Temporaries made by arithmetic, ``@`` or a numpy function (``np.roll(u,
    1)``), the values that are arrays as large as their operands; not a
    view a numpy function returns (``np.reshape(w, -1)``), which frees nothing.
    """
    shape_fn, size_fn, keep_fn = helpers
    stores: dict = {}
    meta: dict = {}
    other: set = set()
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
    adjoint_ids = {id(s) for s in adjoint}
    primal_ids = {id(s) for s in primal}
    for stmt in fn_def.body:
        if id(stmt) in primal_ids:
            continue
        inside: dict = {}
        for n in compat.walk(stmt) if id(stmt) in adjoint_ids else ():
            if isinstance(n, gast.Call) and isinstance(n.func, gast.Name) and n.func.id in (shape_fn, size_fn) \
                    and len(n.args) == 1 and isinstance(n.args[0], gast.Name):
                inside[id(n.args[0])] = None
            elif isinstance(n, gast.Attribute) and n.attr in ("shape", "size") and isinstance(n.value, gast.Name):
                inside[id(n.value)] = n
        for n in compat.walk(stmt):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                if id(n) in inside:
                    meta.setdefault(n.id, []).append(inside[id(n)])
                else:
                    other.add(n.id)
    top = [s for s in fn_def.body if id(s) in primal_ids]
    assigned: dict = {}
    for i, s in enumerate(top):
        name = _single_target(s)
        if name is not None and (isinstance(s.value, gast.BinOp) or isinstance(s.value, gast.Call)
                                 and _numpy_function(s.value.func, ns) not in (None,) + _VIEWS):
            assigned.setdefault(name, i)
    chosen = sorted(name for name in meta if name not in other and name in temps
                    and stores.get(name) == 1 and name in assigned)
    if not chosen:
        return fn_def
    after: dict = {}
    read = [{n.id for n in compat.walk(s) if isinstance(n, gast.Name)} for s in top]
    for name in chosen:
        last = max(i for i, names in enumerate(read) if name in names)
        after.setdefault(id(top[last]), []).append(name)
    replacements = {id(node): node for name in chosen for node in meta[name] if node is not None}

    def replace(node):
        if id(node) in replacements:
            fn = shape_fn if node.attr == "shape" else size_fn
            return compat.call(compat.name(fn), [node.value])
        return None
    for stmt in adjoint:
        rewrite(stmt, replace)
    body = []
    for s in fn_def.body:
        body.append(s)
        for name in after.get(id(s), ()):
            body.append(compat.assign(name, shape_of(keep_fn, compat.name(name))))
    fn_def.body = body
    return fn_def



#: reductions whose result shape follows from the input's shape, ``axis`` and ``keepdims``
_REDUCTIONS = ("sum", "mean", "max", "min", "prod", "amax", "amin")
#: those without an identity, which numpy refuses over an axis of length 0, by the name in numpy's message
_NO_IDENTITY = {"max": "maximum", "amax": "maximum", "min": "minimum", "amin": "minimum"}


#: numpy functions whose result may be a view of their operand: keeping only its shape frees nothing
_VIEWS = (np.reshape, np.ravel, np.transpose, np.squeeze, np.expand_dims, np.broadcast_to, np.asarray,
          np.atleast_1d, np.atleast_2d, np.atleast_3d, np.swapaxes, np.moveaxis, np.diagonal)


def shapes_only(fn_def, ns, helpers, given=None):
    """Compute only the shape of a primal value that everything reads for its shape.

    ``t7 = Y * (logits - lse)`` and ``t6 = np.sum(t7, axis=1)``, with the
    adjoint reading nothing but ``shape(t7)`` and ``t6.size``, become
    ``t7 = Shaped(broadcast_shape(shape(Y), shape(logits), shape(lse))) if
    floats(Y, logits, lse) else Y * (logits - lse)`` and ``t6 =
    Shaped(reduced_shape(shape(t7), 1, False)) if floats(t7) else
    np.sum(t7, axis=1)``: no array is made where the operands are real
    floats, on which numpy raises nothing but the shape errors the shape
    computation raises too; on others (integers, booleans, Python numbers)
    the value is computed as written, so numpy's own errors fire (``given``,
    a GivenFloats: only where the operands are not surely real floats).  For local names bound once, at the top level, to an elementwise
    expression (operators, ufuncs) or a reduction whose ``axis`` and
    ``keepdims`` are literals or names; a name read by another such one
    counts as read for its shape when that one is chosen too.  ``helpers``
    names ``shape``, ``size`` and ``only_shape`` in the module.
    """
    shape_fn = helpers[0]
    body = fn_def.body
    stores: dict = {}
    keeps: dict = {}
    defs: dict = {}
    loads, meta = [], set()  # the names read, those read as shape(n), size(n), n.shape, n.size, n.ndim
    for n in compat.walk(fn_def):
        if isinstance(n, gast.Name):
            if isinstance(n.ctx, gast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
            elif isinstance(n.ctx, gast.Load):
                loads.append(n)
        elif isinstance(n, gast.Call):
            if isinstance(n.func, gast.Name) and n.func.id in helpers and len(n.args) == 1 \
                    and isinstance(n.args[0], gast.Name):
                meta.add(id(n.args[0]))
        elif isinstance(n, gast.Attribute) and n.attr in ("shape", "size", "ndim") and isinstance(n.value, gast.Name):
            meta.add(id(n.value))
    meta |= guarded_reads(fn_def, ns)
    params = {a.id for a in fn_def.args.args + fn_def.args.kwonlyargs + fn_def.args.posonlyargs}
    for i, s in enumerate(body):
        name = _single_target(s)
        if name is None or name in params:
            continue
        if getattr(shape_kept(s.value), "id", None) == name:  # t7 = only_shape(t7)
            keeps[name] = keeps.get(name, 0) + 1
        elif _shape_expression(s.value, ns, {}) is not None:
            defs.setdefault(name, []).append(i)
    chosen = {name for name, where in defs.items() if len(where) == 1 and stores[name] == 1 + keeps.get(name, 0)}
    if not chosen:
        return fn_def
    inside = {}  # a name read for its shape by the definition of a chosen one -> that one
    for name in chosen:
        operands: list = []
        _shape_expression(body[defs[name][0]].value, ns, {}, operands)
        for n in operands:
            inside[id(n)] = name
    loads = [n for n in loads if n.id in chosen and id(n) not in meta]
    changed = True
    while changed:
        changed = False
        for n in loads:
            if n.id in chosen and inside.get(id(n)) not in chosen:
                chosen.discard(n.id)
                changed = True
    if not chosen:
        return fn_def
    names = {fn: ns.helper(fn) for fn in (runtime.Shaped, runtime.broadcast_shape, runtime.reduced_shape,
                                          runtime.floats, runtime.stand_in)}
    names[runtime.shape] = shape_fn
    _note_floats(names, fn_def, ns, given)
    out = []
    for i, s in enumerate(body):
        name = _single_target(s)
        if name in chosen and i != defs[name][0]:
            continue  # t7 = only_shape(t7)
        if name in chosen:
            operands = []
            shape = _shape_expression(s.value, ns, names, operands)
            booleans = [compat.const("bool")] if isinstance(s.value, gast.Compare) else []
            value = compat.call(compat.name(names[runtime.Shaped]), [shape] + booleans)
            if not _leaf(s.value):  # numpy raises on the dtypes or values of other operands: computed then
                value = _unless_floats(value, s.value, operands, _floats_at(names, s))
            s = keep_origin(s, compat.assign(name, value))
        out.append(s)
    fn_def.body = out
    _stand_ins(fn_def, chosen, ns, names[runtime.stand_in])
    return fn_def


def _stand_ins(tree, shaped, ns, helper):
    """``stand_in(t)`` for each read of a name in ``shaped`` where a guard computes a value as written.

    ``t1 = ... if floats(t2, k) else t2 / k`` with ``t2`` kept as a shape and
    ``k`` an integer: the value is computed with ones in ``t2``'s place.
    """
    def wrap(node):
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and node.id in shaped:
            return compat.call(compat.name(helper), [compat.name(node.id)])
        return None
    for node in [n for n in compat.walk(tree) if _is_guard(n, ns)]:
        node.orelse = rewrite(node.orelse, wrap)


#: operators numpy computes on real floats raising nothing but shape errors (``&``, ``<<``, ``~`` raise TypeError)
_FLOAT_OPERATORS = (gast.Add, gast.Sub, gast.Mult, gast.Div, gast.FloorDiv, gast.Mod, gast.Pow)
_COMPARISONS = (gast.Eq, gast.NotEq, gast.Lt, gast.LtE, gast.Gt, gast.GtE)


def _shape_expression(expr, ns, names, operands=None, top=True):
    """An expression for the shape of ``expr``'s value without computing it, or None.

    With ``names`` empty, only whether there is one; else ``names`` maps
    ``runtime.shape``, ``broadcast_shape`` and ``reduced_shape`` to their
    names in the module.  ``operands`` collects the names read for their
    shape (not ``axis=a``, read for its value).

    Only operations that, given real floats, give real floats and raise
    nothing but the errors of shapes (a comparison, giving booleans, at the
    ``top`` only): what stands in for the value is guarded by ``floats`` of
    the operands, and an operation of numbers alone (``1.0 / 0.0``) has no
    operand to guard.
    """
    if isinstance(expr, gast.Name):
        if operands is not None:
            operands.append(expr)
        return compat.call(compat.name(names[runtime.shape]), [compat.name(expr.id)]) if names else expr
    if _number(expr):
        return compat.make("Tuple", elts=[], ctx=gast.Load())
    if isinstance(expr, gast.BinOp) and isinstance(expr.op, _FLOAT_OPERATORS):
        arguments = [expr.left, expr.right]
    elif isinstance(expr, gast.UnaryOp) and isinstance(expr.op, (gast.USub, gast.UAdd)):
        arguments = [expr.operand]
    elif isinstance(expr, gast.Compare) and len(expr.ops) == 1 and isinstance(expr.ops[0], _COMPARISONS) and top:
        arguments = [expr.left] + expr.comparators
    elif isinstance(expr, gast.Call):
        fn = _numpy_function(expr.func, ns)
        if isinstance(fn, np.ufunc) and fn.signature is None and not expr.keywords and len(expr.args) == fn.nin \
                and fn.nout == 1 and "d" * fn.nin + "->d" in fn.types:
            arguments = expr.args
        elif fn is not None and fn.__name__ in _REDUCTIONS and fn is getattr(np, fn.__name__):
            return _reduction_shape(expr, ns, names, operands)
        else:
            return None
    else:
        return None
    if all(_number(a) for a in arguments):
        return None  # Python computes it (1.0 / 0.0 raises): computed as written
    parts = []
    for operand in arguments:
        part = _shape_expression(operand, ns, names, operands, top=False)
        if part is None:
            return None
        parts.append(part)
    if not names:
        return parts
    seen, flat = set(), []
    for part in parts:
        inner = part.args if _is_call_to(part, names[runtime.broadcast_shape]) else [part]
        for p in inner:
            if isinstance(p, gast.Tuple) and not p.elts:
                continue  # a number broadcasts to anything
            key = compat.to_source(p)
            if key not in seen:
                seen.add(key)
                flat.append(p)
    if not flat:
        return compat.make("Tuple", elts=[], ctx=gast.Load())
    if len(flat) == 1:
        return flat[0]
    return compat.call(compat.name(names[runtime.broadcast_shape]), flat)


def _reduction_shape(call, ns, names, operands):
    """``reduced_shape(shape(x), axis, keepdims)`` for ``np.sum(x, axis, keepdims=...)``.

    The options must be literals or names (read for their value).
    """
    if not call.args or len(call.args) > 2:
        return None
    options = {"axis": call.args[1] if len(call.args) == 2 else compat.const(None), "keepdims": compat.const(False)}
    for k in call.keywords:
        if k.arg not in options or k.arg == "axis" and len(call.args) == 2:
            return None
        options[k.arg] = k.value
    if not all(compat.is_literal(v) or isinstance(v, gast.Name) for v in options.values()):
        return None
    if _number(call.args[0]):
        return None
    inner = _shape_expression(call.args[0], ns, names, operands, top=False)
    if inner is None or not names:
        return inner
    name = _NO_IDENTITY.get(_numpy_function(call.func, ns).__name__)
    return compat.call(compat.name(names[runtime.reduced_shape]),
                       [inner, compat.clone(options["axis"]), compat.clone(options["keepdims"])]
                       + ([compat.const(name)] if name else []))


def _is_call_to(node, fn_name) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id == fn_name


def _numpy_function(func, ns):
    """The numpy function ``np.sum`` (or a name bound to a ufunc) refers to, or None."""
    if isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name) and ns.globals.get(func.value.id) is np:
        return getattr(np, func.attr, None)
    if isinstance(func, gast.Name) and func.id in ns.globals and isinstance(ns.globals[func.id], np.ufunc):
        return ns.globals[func.id]
    return None
