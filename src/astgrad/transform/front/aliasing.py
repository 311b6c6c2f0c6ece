"""Reject writes into memory that Python would share with another name.

The user's code writes into an array's memory with ``x[i] = v``, ``x += v``
(and the other augmented assignments), ``out=x`` and in-place methods such
as ``x.sort()``.  The generated code rebinds instead: ``x = setitem(x, i,
v)``, ``x = x + v``, a new array each time, so the adjoint still has the old
value.  That equals numpy's write only while no other name refers to the
memory ``x`` holds.  This check proves that, or raises a located error
saying where to copy or what to write instead:

* ``x`` must be a local of the function; a parameter (the caller's array)
  may be written only after a fresh value was assigned to it;
* every value of ``x`` that may reach the write must be a fresh array
  (``np.zeros``, ``x.copy()``, arithmetic, reductions), not a view or
  another name, unless every such value is surely a number (``k = 0``,
  ``k += 1``), which no write can share;
* a name that may share memory with ``x`` (``y = x``, ``y = x[0]``,
  ``y = x.T``, ``lst.append(x)``, ``f(x)``) must not be read after a later
  write to ``x``.

The analysis is by name and conservative: it may ask for a copy that is
not strictly needed, never the other way round.

Long: reaching definitions, the alias closure and the escape check are one
analysis over the same sites; it is due to move into ``front/`` with the other
checks.
"""

from __future__ import annotations

import types

import numpy as np

from ... import rules
from ...rules.sequences import append
from ..ir import compat
from ..ir.compat import gast
from ..ir.errors import UnsupportedSyntaxError
from .fresh_results import _KEEPS_NOTHING, numpy_allocates, returns_fresh
from .primitives import returns_sequence
from ..ir.nodes import For, If, Op, Raw, While, atom_names, blocks
from ..runtime.origins import ORIGIN

_FRESH_NAMES = (
    "zeros ones empty full zeros_like ones_like empty_like full_like array copy eye identity arange "
    "linspace sum mean prod max min amax amin var std dot matmul outer inner concatenate stack vstack "
    "hstack cumsum cumprod where select clip tile repeat kron trace tensordot diff sort cross convolve").split()
_FRESH = {id(getattr(np, n)) for n in _FRESH_NAMES if hasattr(np, n)} | {
    id(getattr(np.linalg, n)) for n in ("norm", "inv", "det", "solve", "pinv", "slogdet")}
_COPY_CALLS = {"copy", "clone", "item", "numpy", "tolist", "float", "abs"}
#: set by normalize on the target of ``x[i] op= v``: numpy changes the item's array in place there
AUGMENTED_ITEM = "_astgrad_augmented_item"


class _Site:
    """An Op with where it sits: order, enclosing loops, enclosing blocks."""

    def __init__(self, op, pos, loops, path):
        self.op, self.pos, self.loops, self.path = op, pos, loops, path


class _Join(_Site):
    """The end of an ``if`` (id ``branch``) whose branches both bind ``names``: a definition of each
    that no value bound before the ``if`` gets past."""

    def __init__(self, pos, loops, path, branch, names):
        super().__init__(None, pos, loops, path)
        self.branch, self.names = branch, names


def check_writes(body, ret, params, local_names, source, array_helper=None, caller_writes=None, wrt=(),
                 allowed=(None, None)) -> tuple:
    """Raise UnsupportedSyntaxError where a write into ``x`` may reach memory another name sees.

    Returns two lists of what no analysis by name can tell a number from an array in, each checked when
    it runs (``number_checks``): the augmented assignments ``x op= v`` whose ``x`` a user function
    returned (``loss, dx = f(...)``; ``loss += reg``), which only rebind a number; and the names bound to
    what a user function returned that would share memory with ``x`` if they were arrays (``e0 =
    energy(pos, vel)`` before ``vel += ...``), which share nothing if they are numbers.

    Given a list ``caller_writes`` (the entry function), ``x["key"] = v`` into a parameter ``x`` that is
    not in ``wrt`` is not refused where ``_for_caller`` allows it: ``(x, op, setitem_op)`` is appended,
    and ``caller_state`` runs the write into the caller's dict.  ``allowed``: in a called function, the
    parameters its caller passes down so (``caller_state.passed_down``), and why not the others; None
    in the function grad is given, all of whose parameters are the caller's."""
    allowed, reasons = allowed
    _rebind_plain_aliases(body, params, array_helper, source)
    sites: list = []
    joins: list = []
    escapes: list = []
    _flatten(body, (), (), sites, joins, escapes)
    writes: dict = {}
    for s in sites:
        if s.op.inplace and s.op.inplace[1] is not None:
            writes.setdefault(s.op.targets[0], []).append(s)
    _check_effects(sites, local_names, source)
    checked: list = []
    returns: list = []
    if not writes:
        return checked, returns
    defs: dict = {}
    for s in sites:
        for t in s.op.targets:
            defs.setdefault(t, []).append(s)
    end = _Site(None, len(sites), (), ())
    if caller_writes is not None and allowed is not None:  # a called function: the dicts passed down only
        params_kept = [p for p in params if p in allowed]
    else:
        params_kept = params
    kept = frozenset() if caller_writes is None else frozenset(  # dicts that may be the caller's after the call
        x for x in writes if x in params_kept and x not in wrt and all(d.op.inplace for d in defs.get(x, [])))
    for x, ws in writes.items():
        if x not in local_names:
            raise _error(source, ws[0], f"{_what(ws[0])} would change the array {x} outside the function; "
                         f"astgrad's {_what(ws[0])} writes to a copy",
                         f"Copy first: {x.lower()}_copy = {x}.copy(), and write into the copy.")
        risky = []
        entry = _Site(None, -1, (), ()) if x in params else None
        for w in ws:
            reaching = _reaching_through(defs.get(x, []), w, entry)
            if entry not in reaching and all(_number(d.op, defs, dict.fromkeys(params, False)) for d in reaching):
                continue  # a number: nothing else can see the write
            if w.op.augmented and entry not in reaching and all(
                    _returned(d.op, defs) or _number(d.op, defs, dict.fromkeys(params, False)) for d in reaching):
                checked.append((w.op, x))  # a user function's result: a number, checked when it runs
                continue
            written = _setitem_of(w, defs) if entry in reaching and _keyed(w.op.node) else None
            if written is not None and caller_writes is not None and x in params_kept \
                    and _for_caller(x, w, defs, wrt, sites, params, source):
                caller_writes.append((x, w.op, written))  # into the caller's dict as well (front/caller_state)
                continue
            risky.append(w)
            if entry in reaching and _keyed(w.op.node):
                key = compat.to_source(w.op.node).strip()
                raise _error(source, w, f"{key} = ... would change the caller's {x}; astgrad runs a write into "
                             f"the caller's dict only as x['key'] = v in the function grad is given (or one it "
                             f"calls, given that dict as it is), into a parameter not differentiated that no "
                             f"statement rebinds, and here {_not_for_caller(x, w, wrt, caller_writes, allowed, reasons)}",
                             f"Return the value instead (with has_aux=True grad returns it beside the gradient) "
                             f"and store it outside the differentiated function; if the caller does not need it, "
                             f"copy first: {x} = {x}.copy().")
            if entry in reaching and caller_writes is not None and isinstance(w.op.node, gast.Subscript) \
                    and isinstance(w.op.node.slice, gast.Name) and not w.op.through:
                key = w.op.node.slice.id  # cache[name] = v: an array's index, or a dict's key in a variable
                raise _error(source, w, f"{_what(w)} would change the caller's array {x} (or dict); astgrad's "
                             f"{_what(w)} writes to a copy, and it runs a write into the caller's dict only under "
                             f"a key written as a string constant ({x}['key'] = v): a key held in a variable "
                             f"({key}) may be any key, which astgrad does not follow to the reads",
                             f"Copy first: {x} = {x}.copy(){_instead(w)}; for a dict, write each key as a "
                             f"constant, or return the values (has_aux=True returns them beside the gradient) "
                             f"and store them outside.")
            if entry in reaching:
                raise _error(source, w, f"{_what(w)} would change the caller's array {x}; "
                             f"astgrad's {_what(w)} writes to a copy",
                             f"Copy first: {x} = {x}.copy(){_instead(w)}")
            for d in reaching:
                if not d.op.inplace and not _fresh(d.op, defs) and not (d.op.kind == "call" and _appends(w)):
                    raise _error(source, d, f"{x} may share memory with another array here, so {_what(w)} "
                                 f"on line {w.op.line} would change that array too; astgrad's {_what(w)} "
                                 "writes to a copy", _copy_hint(x, d, w))
        _check_escapes(x, ws, escapes, sites, source)
        if risky:
            returns += _check_aliases(x, risky, sites, defs, joins, entry, ret, end, source, kept)
        for w in ws:
            if w.op.through:
                _check_items_owned(x, w, sites, defs, set(local_names) | set(params), source)
    return checked, returns


def _rebind_plain_aliases(body, params, array_helper, source) -> None:
    """After a write into ``x``, ``z = x`` again for each plain alias ``z`` that surely names ``x``'s array.

    ``scores = H; H -= np.max(H, axis=1, keepdims=True)``: in numpy both names see the write.  The
    generated ``H = H - ...`` makes a new array, so ``scores = H`` is inserted after it, which is what
    numpy's ``scores`` holds, in value and (by the copy's adjoint) in gradient.  Only where ``z`` surely
    names the array written: ``z`` is bound once in the function, by ``z = x`` in the write's own block
    (same loops, before it), and between the two ``x`` is changed only by writes in that block (each of
    which gets the same rebinding).  Anything else (an alias made in one branch, before a loop, of a
    parameter, an alias of an alias, a write through ``z``) is left to ``check_writes``, which refuses
    it where a name could see a stale array."""
    sites: list = []
    _flatten(body, (), (), sites, [])
    defs: dict = {}
    for s in sites:
        for t in s.op.targets:
            defs.setdefault(t, []).append(s)
    bound_otherwise = _bound_not_by_ops(body)  # a loop's target, a name a kept statement binds
    after: dict = {}
    for w in sites:
        if not (w.op.inplace and w.op.inplace[1] is not None and len(w.op.targets) == 1):
            continue
        x = w.op.targets[0]
        for z, zdefs in defs.items():
            if z == x or z in params or len(zdefs) != 1 or z in bound_otherwise:
                continue
            d = zdefs[0]
            op = d.op
            if not (op.kind == "copy" and isinstance(op.expr, gast.Name) and op.expr.id == x
                    and not _copy_call(op.node)  # z = x, or out= returning x: z = x.copy() is no alias
                    and len(op.targets) == 1 and d.path == w.path and d.loops == w.loops and d.pos < w.pos):
                continue
            if w.op.augmented and (array_helper is None or all(
                    _number(r.op, defs, dict.fromkeys(params, False)) for r in _reaching_through(defs[x], w, None))):
                continue  # x op= v on a number rebinds x only: the alias keeps the old number
            between = [e for e in defs.get(x, []) if d.pos < e.pos < w.pos]
            if all(e.op.inplace and e.op.inplace[1] is not None and e.path == w.path for e in between):
                after.setdefault(id(w.op), []).append(z)
    if after:
        _insert_after(body, after, array_helper, source)


def _bound_not_by_ops(stmts, found=None) -> set:
    """Names bound other than as an Op's target: a ``for`` target, a Store in a statement kept as is."""
    found = set() if found is None else found
    for s in stmts:
        if isinstance(s, For):
            found.add(s.target)
        elif isinstance(s, Raw):
            found.update(n.id for n in compat.walk(s.stmt) if isinstance(n, gast.Name)
                         and isinstance(n.ctx, gast.Store))
        for block in blocks(s):
            _bound_not_by_ops(block, found)
    return found


def _insert_after(stmts, after, array_helper, source) -> None:
    """``z = x`` after each write into ``x`` with aliases ``z``; before an ``x op= v``, a check that ``x`` holds
    an array when it runs (``x op= v`` on a numpy scalar rebinds ``x`` only, and ``z`` keeps the old value)."""
    for i in reversed(range(len(stmts))):
        s = stmts[i]
        if isinstance(s, Op) and id(s) in after:
            x = s.targets[0]
            stmts[i + 1:i + 1] = [Op([z], "copy", compat.name(x), s.line, s.text, node=compat.name(x),
                                     args=[compat.name(x)]) for z in sorted(after[id(s)])]
            if s.augmented:
                first = i
                while first > 0 and isinstance(stmts[first - 1], Op) and stmts[first - 1].line == s.line:
                    first -= 1  # before the statement's first operation, where x still holds the old value
                call = compat.call(compat.name(array_helper), [compat.name(x), compat.const(s.inplace[0]),
                                                               compat.const(", ".join(sorted(after[id(s)]))),
                                                               compat.const(s.inplace[1])])
                stmt = compat.expr_stmt(call)
                setattr(stmt, ORIGIN, (source.filename, s.line, s.text, False))
                stmts.insert(first, Raw(stmt, s.line, s.text))
        else:
            for block in blocks(s):
                _insert_after(block, after, array_helper, source)


def _returned(op, defs) -> bool:
    """Whether ``op`` binds what a user function returned, or an item of it (``loss, dx = f(x)``)."""
    if op.kind == "call":
        return True
    source = op.args[0].id if op.kind == "unpack" and isinstance(op.args[0], gast.Name) else None
    return source is not None and bool(defs.get(source)) and all(d.op.kind == "call" for d in defs[source])


def number_checks(body, checked, returns, helpers, source) -> None:
    """Before each ``x op= v`` in ``checked``, ``a_number(x, ...)``; after each op in ``returns``,
    ``a_returned_number(name, ...)`` (``helpers``): each raises, naming the user's line, unless the name
    holds a number when it runs."""
    before = {id(op): x for op, x in checked}
    after = {id(op): (name, x, w) for op, name, x, w in returns}
    for block in _all_blocks(body):
        for i in reversed(range(len(block))):
            op = block[i]
            if not isinstance(op, Op):
                continue
            if id(op) in after:
                name, x, w = after[id(op)]
                made = f"{name} = {compat.to_source(op.node).strip()}" if isinstance(op.node, gast.Call) else \
                    op.text.strip()
                call = compat.call(compat.name(helpers[1]), [compat.name(name), compat.const(made),
                                                             compat.const(x), compat.const(_what(w)),
                                                             compat.const(w.op.line)])
                stmt = compat.expr_stmt(call)
                setattr(stmt, ORIGIN, (source.filename, op.line, op.text, False))
                block.insert(i + 1, Raw(stmt, op.line, op.text))
            if id(op) in before:
                x = before[id(op)]
                call = compat.call(compat.name(helpers[0]), [compat.name(x), compat.const(op.inplace[0]),
                                                             compat.const(op.inplace[1])])
                stmt = compat.expr_stmt(call)
                setattr(stmt, ORIGIN, (source.filename, op.line, op.text, False))
                block.insert(i, Raw(stmt, op.line, op.text))


def _all_blocks(stmts):
    yield stmts
    for s in stmts:
        for block in blocks(s):
            yield from _all_blocks(block)


def _check_effects(sites, local_names, source):
    """A call the generated code cannot see into (``inplace`` is ``(what, None)``) really writes in
    place; the adjoint reads its operands after the whole function ran, so nothing may read them
    (or a name sharing their memory) before the call."""
    for w in [s for s in sites if s.op.inplace and s.op.inplace[1] is None]:
        group, work = set(), [w.op.targets[0]]
        while work:
            name = work.pop()
            if name not in group:
                group.add(name)
                work += [t for s in sites if name in _reads(s.op) and shares_memory(s.op) for t in s.op.targets]
        for r in sites:
            read = group & _reads(r.op)
            if not read or r.op.inplace and r.op.inplace[1] is None or not _may_follow(r, w):
                continue
            x = w.op.targets[0]
            x = x if x in local_names else "an array it is given"
            shown = min(read & set(local_names), default="that array")
            raise _error(source, w, f"{w.op.inplace[0]} changes {x} in place, and line {r.op.line} reads "
                         f"{shown} before that; astgrad's adjoint reads it again after the function ran "
                         "and would see the changed values",
                         "Call it before the array is first used, or outside the differentiated function.")


def _for_caller(x, w, defs, wrt, sites, params, source) -> bool:
    """Whether ``x["key"] = v`` (site ``w``) may run into the caller's dict, in place (``caller_state``):
    ``x`` is not differentiated, names the caller's object all through the function (every binding of
    ``x`` is such a write), and the write binds the key anew (``x["k"] += v`` would change the caller's
    array in place, which other holders of it see).  Then every other use of ``x`` must read one item
    (``x["k"]``, ``x.get("k", d)``) or ask for a key (``"k" in x``): the gradient of a name bound to the
    whole dict, or of a function given it, would not reach the items the function writes; that is refused
    here."""
    if x in wrt or x not in params or w.op.through or getattr(w.op.node, AUGMENTED_ITEM, False):
        return False
    if not all(d.op.inplace and not d.op.through and _keyed(d.op.node)
               and not getattr(d.op.node, AUGMENTED_ITEM, False) for d in defs.get(x, [])):
        return False
    for s in sites:
        op = s.op
        if x not in _reads(op) or op.inplace and op.targets == [x]:
            continue
        item = op.kind in ("prim", "nondiff") and op.fn in (rules.getitem, rules.setitem) \
            and getattr(op.args[0], "id", None) == x and x not in _reads_beyond_first(op) or _got(op, x) \
            or _holds(op, x)
        if not item:
            raise _error(source, s, f"{x} is written into on line {w.op.line} ({_what(w)}), a dict the caller "
                         f"keeps, and used here as a whole; astgrad runs the write into the caller's dict and "
                         f"follows reads of its items only",
                         f"Read the items you need ({x}['key']) instead of passing or naming the dict, or "
                         f"return the values (has_aux=True) and store them outside the differentiated function.")
    return True


def _not_for_caller(x, w, wrt, caller_writes, allowed, reasons) -> str:
    """Why the write ``x[key] = ...`` at ``w`` into the caller's ``x`` is not run into the caller's dict."""
    if caller_writes is None:
        return "it is in a function forward mode runs over generated code"
    if x in wrt:
        return f"{x} is differentiated"
    if allowed is not None and x not in allowed:
        why = reasons.get(x, "its caller does not pass it a dict of its own caller's")
        return f"it is in a function the differentiated one calls, and {why} (return the value to it instead)"
    if getattr(w.op.node, AUGMENTED_ITEM, False):
        return f"{_what(w).split(' =')[0]} op= v would change the array held there in place"
    if w.op.through:
        return f"it writes into an item of {x}"
    return f"{x} may name another object when it runs (it is bound elsewhere in the function)"


def _setitem_of(w, defs):
    """The ``t = setitem(x, key, v)`` that the write ``x = t`` (site ``w``) names again, or None."""
    op = w.op
    if op.kind == "prim" and op.fn is rules.setitem:
        return op
    if op.kind == "copy" and isinstance(op.expr, gast.Name) and len(defs.get(op.expr.id, [])) == 1:
        made = defs[op.expr.id][0].op
        if made.kind == "prim" and made.fn is rules.setitem and len(made.args) == 3:
            return made
    return None


def _got(op, x) -> bool:
    """``x.get(key, default)`` reading nothing else of ``x`` (an opaque op: refused if what it reads is active)."""
    e = op.expr
    return isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and e.func.attr == "get" \
        and isinstance(e.func.value, gast.Name) and e.func.value.id == x and not e.keywords \
        and x not in {n for a in e.args for n in atom_names(a)}


def _holds(op, x) -> bool:
    """``key in x`` or ``key not in x``: a bool, asked of the dict as it is at that point, as numpy asks it."""
    e = op.expr
    return op.kind == "nondiff" and isinstance(e, gast.Compare) and len(e.ops) == 1 \
        and isinstance(e.ops[0], (gast.In, gast.NotIn)) and isinstance(e.comparators[0], gast.Name) \
        and e.comparators[0].id == x and x not in atom_names(e.left)


def _reads_beyond_first(op) -> set:
    names = set()
    for a in list(op.args[1:]) + list(op.kwargs.values()):
        names.update(atom_names(a))
    return names


def _keyed(node) -> bool:
    """``bn_param["running_mean"] = v``: a write under a string key, into a dict of settings or state."""
    return isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant) and \
        isinstance(node.slice.value, str)


def _what(site) -> str:
    return site.op.inplace[0]


def _instead(site) -> str:
    instead = site.op.inplace[1]
    return f", or write {instead} (a new array; nothing else changes)" if instead else ""


def _copy_hint(x, d, w) -> str:
    looped = d.op.text.lstrip().startswith("for ")
    if looped and w.op.inplace[1]:  # an item of the loop's sequence
        return f"Write {w.op.inplace[1]} (a new array; nothing else changes)."
    if d.op.kind == "unpack" or looped:  # a, b = np.modf(x): the tuple has no .copy(), its item has
        where = "as the first line of the loop's body" if looped else f"on the line after {d.op.text.strip()}"
        return f"Copy the item first: {x} = {x}.copy() {where}{_instead(w)}"
    if d.op.kind == "prim" and _returns_tuple(d.op) and isinstance(d.op.node, gast.Call):  # r = np.unstack(x)
        call = compat.to_source(d.op.node).strip()
        return f"Copy the items first: {x} = [item.copy() for item in {call}] (a tuple has no .copy()){_instead(w)}"
    return f"Copy first: {x} = {_copied(d)}{_instead(w)}"


def _returns_tuple(op) -> bool:
    """Whether a primitive operation returns a tuple or list of arrays (``np.modf``, ``np.unstack``)."""
    return isinstance(op.fn, np.ufunc) and op.fn.nout > 1 or returns_sequence(op)


def _copied(site) -> str:
    node = site.op.node
    if not isinstance(node, gast.expr) or getattr(node, "lineno", None) is None:  # the normalizer's name
        return "(...).copy()"
    text = compat.to_source(node).strip()
    return f"({text}).copy()" if not isinstance(node, (gast.Name, gast.Subscript, gast.Call, gast.Attribute)) \
        else f"{text}.copy()"


def _reaching(defs, write, entry, joins=()) -> list:
    """The definitions of the written name whose value may be the one ``write`` writes into.

    ``joins`` are the ends of ``if`` statements that bind the name in both branches (``_Join``)."""
    found = [d for d in defs if _may_follow(d, write)] + ([entry] if entry else [])
    kills = [k for k in [*defs, *joins] if k.pos < write.pos and write.path[:len(k.path)] == k.path]
    return [d for d in found if not any(_kills(k, d, write) for k in kills)]


def _reaching_through(defs, write, entry) -> list:
    """As ``_reaching``, looking through writes in place (``x += ...``, ``rng.shuffle(x)``): after
    them ``x`` is still the memory an earlier definition bound, the caller's array included."""
    found, seen, todo = [], set(), [write]
    while todo:
        for d in _reaching(defs, todo.pop(), entry):
            if id(d) in seen:
                continue
            seen.add(id(d))
            if d is not entry and d.op.inplace:
                todo.append(d)
            else:
                found.append(d)
    return found


def _kills(k, d, write) -> bool:
    """Every path from ``d`` to ``write`` passes ``k`` (``k`` sits before ``write`` in a block around it)."""
    if d is k or isinstance(k, _Join) and k.branch in {b for b, _ in d.path}:
        return False  # a definition inside the if is what the name holds after it
    if d.pos < k.pos:
        return True
    return d.pos > write.pos and set(d.loops) & set(write.loops) <= set(k.loops)


def _number(op, defs, seen) -> bool:
    """Whether ``op`` surely binds a number (immutable: a write to it is a rebinding)."""
    if op.kind == "nondiff" and op.fn is None:
        return isinstance(op.expr, gast.Constant) and type(op.expr.value) in (int, float, bool)
    if op.kind == "nondiff":
        return op.fn in (len, int)
    if op.kind == "copy":
        if isinstance(op.expr, gast.Name):
            return _number_name(op.expr.id, defs, seen)
        node = op.node.func if isinstance(op.node, gast.Call) else None
        return (node.attr if isinstance(node, gast.Attribute) else getattr(node, "id", "")) in ("float", "item")
    if op.kind == "prim" and isinstance(op.expr, (gast.BinOp, gast.UnaryOp)):
        return all(_number_name(a.id, defs, seen) if isinstance(a, gast.Name) else
                   isinstance(a, gast.Constant) and type(a.value) in (int, float) for a in op.args)
    return False


def _number_name(name, defs, seen) -> bool:
    """``seen`` starts with the parameters, False: the caller's values are not known to be numbers."""
    if name in seen:  # True on a cycle through arithmetic (k = k + 1): numbers if its other values are
        return seen[name]
    seen[name] = True
    return bool(defs.get(name)) and all(_number(d.op, defs, seen) for d in defs[name])


def _check_aliases(x, writes, sites, defs, joins, entry, ret, end, source, kept=frozenset()) -> list:
    """Raise where a name sharing memory with ``x`` is read after a write to ``x`` (a name in ``kept``, a dict
    the caller keeps, counts as read at the end: the caller sees it after the call).  A chain of such names
    that starts at what a user function returned (``e0 = energy(pos, vel)``; ``vel += ...`` later) may
    start at a number, which shares nothing: returns those ``(op, name, x, write)``, checked when they run."""
    returned: dict = {}
    written = {id(w): _buffers(x, w, defs, entry) for w in writes}
    work = []
    for s in sites:
        if x in _reads(s.op) and _aliases(s.op) and not _next_version(s.op, x) and not _copied_in(s.op, x, defs) \
                and not _returns_new(s.op):
            shared = _buffers(x, s, defs, entry)  # the values of x that s may read
            hit = tuple(w for w in writes if shared & written[id(w)])
            work += [(t, s, hit, _returned_root(s, t, None)) for t in s.op.targets if hit]
    seen = set()
    while work:
        name, made, hit, root = work.pop()
        if (name, id(made)) in seen:
            continue
        seen.add((name, id(made)))
        uses = [s for s in sites if name in _reads(s.op)]
        if ret is not None and name in atom_names(ret) or name in kept:
            uses.append(end)
        single = len(defs.get(name, [])) == 1
        kills = [j for j in joins if name in j.names]
        for use in uses:
            for w in hit:
                if w is not use and _between(made, w, use, single) and _carries(made, w, use, defs[name], kills):
                    if root is not None:  # a user function's result: shares nothing if it is a number
                        returned.setdefault(id(root[0]), (root[0].op, root[1], x, w))
                        continue
                    raise _error(source, made, f"{made.op.text!r} makes a name that shares memory with {x}, "
                                 f"and {_what(w)} on line {w.op.line} changes {x} before it is read; "
                                 f"astgrad's {_what(w)} writes to a copy, so the two would differ",
                                 f"Copy first (`{x}.copy()` where the second name is made), or finish "
                                 f"writing {x} before taking views of it{_instead(w)}.")
            if use.op is not None and _aliases(use.op) and not _copied_in(use.op, name, defs) and not _returns_new(use.op) \
                    and _may_follow(made, use):  # a use before ``made`` (no loop around both) reads older values
                # x's own next version is x: its writes are checked
                work += [(t, use, hit, _returned_root(use, t, root)) for t in use.op.targets if t != x]
    return list(returned.values())


def _returned_root(made, name, root):
    """Where the chain of names sharing memory starts, when it starts at what a user function returned
    (``e0 = energy(x, v)``, or an item of it, ``e, g = f(v)``): ``(site, name)``; None otherwise."""
    if made.op.kind == "call":
        return made, name
    if made.op.kind == "unpack" and root is not None and root[0].op.kind == "call" \
            and getattr(made.op.args[0], "id", None) == root[1]:
        return made, name
    return root


def _check_items_owned(x, write, sites, defs, named, source):
    """``a[i][j] = v`` changes the object ``a[i]`` holds, which the generated code copies: no name but
    ``a`` may see that object.  So every value put into ``a`` (by ``a[k] = w``, ``a.append(w)``, a literal,
    also into a list ``a`` was copied from) must be one only ``a`` holds: made in that statement by an
    operation that makes a new value (``np.zeros(...)``, ``h.copy()``, ``[0.0] * 3`` excluded), not named."""
    reads: dict = {}
    for s in sites:
        for n in _reads(s.op):
            reads[n] = reads.get(n, 0) + 1
    todo, seen = [x], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        stored = []
        for s in sites:
            op = s.op
            if op.fn in (rules.setitem, append) and getattr(op.args[0], "id", None) == name:
                stored.append((s, op.args[-1]))
            elif name in op.targets and op.kind == "pack":
                stored += [(s, a) for a in op.args]
            elif name in op.targets and op.kind == "copy" and isinstance(op.expr, gast.Name):
                todo.append(op.expr.id)
            elif name in op.targets and _new_container(op):
                # a new list or tuple, but its items are the operands' own ([z] * 2 holds z twice, list((z, z))
                # too): a write through one of them reaches every other name and item holding it
                raise _error(source, s, f"{name} holds the items of what it was made from (line {s.op.line}), and "
                             f"{_what(write)} on line {write.op.line} changes them there too in Python; astgrad's "
                             f"{_what(write)} writes to a copy",
                             f"Build {name} of new values ([np.zeros(3) for _ in range(n)], not [np.zeros(3)] * n), "
                             f"or store a copy first: {name}[i] = {name}[i].copy().")
        for s, atom in stored:
            if not _owned(atom, defs, reads, named, 0):
                shown = atom.id if isinstance(atom, gast.Name) and atom.id in named else "a value another name sees"
                raise _error(source, s, f"{x} may hold {shown} (line {s.op.line}), and {_what(write)} on line "
                             f"{write.op.line} changes it there too in Python; astgrad's {_what(write)} writes "
                             "to a copy", f"Store a copy: {x}[...] = {shown if shown in named else 'value'}.copy()")


def _owned(atom, defs, reads, named, depth) -> bool:
    """Whether ``atom`` is a constant, or a new value the normalizer named and only one statement reads."""
    if not isinstance(atom, gast.Name):
        return True
    name = atom.id
    if name in named or reads.get(name, 0) != 1 or len(defs.get(name, [])) != 1 or depth > 8:
        return False
    op = defs[name][0].op
    if op.kind == "pack":
        return all(_owned(a, defs, reads, named, depth + 1) for a in op.args)
    return _fresh(op, defs) and op.kind != "copy" or _copy_call(op.node)


def _appends(site) -> bool:
    """``lst.append(v)``: a list a user function returned is the caller's to append to."""
    return site.op.inplace[0].endswith(".append(...)")


def _next_version(op, x) -> bool:
    """``t = append(x, v)``, ``t = setitem(x, i, v)``: the container ``x`` itself, changed, which ``x = t``
    names again (the value ``v`` it now holds shares memory with it: ``_aliases``)."""
    return op.fn in (append, rules.setitem) and getattr(op.args[0], "id", None) == x and x not in _names(op.args[1:])


def _copied_in(op, name, defs) -> bool:
    """``t = setitem(a, i, v)`` with ``name`` read only in ``i`` or ``v``, into an array of numbers: numpy
    copies ``v``'s numbers into ``a``, so ``t`` shares no memory with ``name``."""
    a = op.args[0] if op.fn is rules.setitem else None
    return isinstance(a, gast.Name) and a.id != name and _number_array(a.id, defs)


def _number_array(name, defs) -> bool:
    """Whether ``name`` is surely a numpy array of numbers: made by ``np.zeros(shape)``, ``np.ones(shape)``
    or ``np.empty(shape)`` (no dtype: ``dtype=object`` would hold references), then only written into."""
    made = [d for d in defs.get(name, []) if not d.op.inplace]
    return bool(made) and all(d.op.fn in (np.zeros, np.ones, np.empty) and len(d.op.args) == 1 and not d.op.kwargs
                              for d in made)


def _names(atoms) -> set:
    return {n for a in atoms for n in atom_names(a)}


def _buffers(x, site, defs, entry) -> set:
    """The definitions of ``x`` whose array ``x`` may hold at ``site``: a write keeps the array it wrote."""
    found, seen, todo = set(), set(), [site]
    while todo:
        for d in _reaching(defs.get(x, []), todo.pop(), entry):
            if d.op is None or not d.op.inplace:
                found.add(id(d))
            elif id(d) not in seen:  # a write in a loop reaches itself
                seen.add(id(d))
                todo.append(d)
    return found


def _between(made, write, use, single) -> bool:
    """Whether ``write`` may run after ``made`` and before ``use`` reads what ``made`` bound."""
    if single and use.path[:len(made.path)] == made.path and made.pos < use.pos:
        # use reads the value made bound last: a write must sit between them,
        # or in a loop around the use that does not contain made
        inner = set(use.loops) - set(made.loops)
        return made.pos < write.pos < use.pos or bool(inner & set(write.loops))
    return _may_follow(made, write) and _may_follow(write, use)


def _carries(made, write, use, defs, joins) -> bool:
    """Whether the name may still hold what ``made`` bound when ``write`` runs, and again at ``use``
    after it: ``made`` reaches ``write``, and a definition standing at ``write`` would reach ``use``.
    (``prevh = H[t - 1] if t > 0 else h0`` at the top of a loop, read before ``H[t] = ...``: every
    iteration binds ``prevh`` anew before reading it, so no write to ``H`` comes between.)"""
    at_write = _Site(None, write.pos, write.loops, write.path)
    return made in _reaching(defs, write, None, joins) and at_write in _reaching([*defs, at_write], use, None, joins)


def _may_follow(a, b) -> bool:
    return b.pos > a.pos or bool(set(a.loops) & set(b.loops))


class _Escape(_Site):
    """A statement run as written that stores the values of ``names`` where the function's names cannot see
    (``G.h = h``, ``D["h"] = h``, ``L.append(h)``): what it stores keeps the memory those names hold."""

    def __init__(self, pos, loops, path, raw, names, where):
        super().__init__(None, pos, loops, path)
        self.raw, self.names, self.where = raw, names, where


def _flatten(stmts, loops, path, out, joins, escapes=None):
    for s in stmts:
        if isinstance(s, Op):
            out.append(_Site(s, len(out), loops, path))
        elif isinstance(s, Raw) and escapes is not None:
            kept = _stored_names(s)
            if kept:
                escapes.append(_Escape(len(out) - 0.5, loops, path, s, *kept))
        elif isinstance(s, If):
            _flatten(s.body, loops, path + ((id(s), 0),), out, joins, escapes)
            _flatten(s.orelse, loops, path + ((id(s), 1),), out, joins, escapes)
            names = _always_bound(s.body) & _always_bound(s.orelse)
            if names:
                joins.append(_Join(len(out) - 0.5, loops, path, id(s), names))
        elif isinstance(s, For):
            _flatten(s.body, loops + (id(s),), path + ((id(s), 0),), out, joins, escapes)
        elif isinstance(s, While):
            _flatten(s.cond, loops, path, out, joins, escapes)
            _flatten(s.body, loops + (id(s),), path + ((id(s), 0),), out, joins, escapes)


def _stored_names(raw) -> tuple | None:
    """``(names, where)``: the local names whose values ``raw`` may store somewhere outside the function's
    names, and that place as the user wrote it; None when it stores nothing.

    Three kinds of statement run as written can keep a value: an assignment into an object the function does
    not own (``G.h = h``; the normalizer guards it with ``written_outside``), one into a parameter's object
    (``layer.x = x``, ``put_attribute``), and a call kept for its effect
    (``L.append(h)``, ``cache.update(h=h)``, a user function storing its argument) unless it is a numpy
    function or a builtin that keeps no reference."""
    stmt = raw.stmt
    if isinstance(stmt, gast.Assign) and raw.guard is not None:
        names = set(atom_names(stmt.value))
        return (names, compat.to_source(stmt.targets[0]).strip()) if names else None
    if raw.kept is not None:  # layer.x = x into a parameter's object (front/caller_state)
        names = set(atom_names(stmt.value.args[2]))
        return (names, compat.to_source(raw.kept[2]).strip()) if names else None
    if raw.call is None or not isinstance(stmt, gast.Expr) or not isinstance(stmt.value, gast.Call):
        return None
    fn = raw.call.fn
    if fn is not None and (fn in _KEEPS_NOTHING or isinstance(fn, np.ufunc)
                           or str(getattr(fn, "__module__", "") or "").split(".")[0] == "numpy"):
        return None
    call = stmt.value
    names = set()
    for a in [*call.args, *(k.value for k in call.keywords)]:
        names.update(atom_names(a))
    if isinstance(call.func, gast.Attribute):  # L.append(h): the object the method belongs to keeps it
        where = compat.to_source(call.func.value).strip()
    else:
        where = f"what {compat.to_source(call.func).strip()} keeps"
    return (names, where) if names else None


def _check_escapes(x, writes, escapes, sites, source):
    """Refuse a write into ``x`` after a value that may share its memory was stored outside (``_Escape``)."""
    group, work = set(), [x]
    while work:  # x and the names made from it that may share its memory
        name = work.pop()
        if name not in group:
            group.add(name)
            work += [t for s in sites if name in _reads(s.op) and _aliases(s.op) and not _returns_new(s.op)
                     for t in s.op.targets]
    for e in escapes:
        kept = e.names & group
        if not kept:
            continue
        for w in writes:
            if _may_follow(e, w):
                raise _error(source, w, f"{_what(w)} changes {x} after line {e.raw.line} stored "
                             f"{min(kept)} in {e.where}, which keeps the same array; astgrad's {_what(w)} writes to "
                             f"a copy, so {e.where} would not see the change",
                             f"Store a copy ({min(kept)}.copy()), or finish writing {x} before storing it"
                             f"{_instead(w)}.")


def _always_bound(stmts) -> set:
    """The names every run of ``stmts`` that reaches its end binds (a loop may run no times)."""
    names: set = set()
    for s in stmts:
        if isinstance(s, Op):
            names.update(s.targets)
        elif isinstance(s, If):
            names |= _always_bound(s.body) & _always_bound(s.orelse)
    return names


def _reads(op) -> set:
    names = set(atom_names(op.expr))
    for a in list(op.args) + list(op.kwargs.values()):
        names.update(atom_names(a))
    return names


def _is_fresh_fn(fn) -> bool:
    return isinstance(fn, np.ufunc) or id(fn) in _FRESH


def _copy_call(node) -> bool:
    if not isinstance(node, gast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", "")
    return name in _COPY_CALLS


def shares_memory(op) -> bool:
    """Whether what ``op`` binds may share memory with what it reads in the generated code.

    Unlike the user's code, the generated code copies nothing on ``y.copy()``: it never writes in
    place itself, so ``t = y`` is enough for it.  Only calls it cannot see into may write.
    """
    return op.kind == "copy" or _aliases(op)


def _aliases(op) -> bool:
    """Whether the value ``op`` binds may share memory with (or contain) what it reads."""
    if op.kind == "copy":
        return not _copy_call(op.node)
    if op.kind in ("stop", "pack", "unpack", "call"):
        return True
    if op.fn is not None:
        return not _is_fresh_fn(op.fn)
    return isinstance(op.expr, gast.Name)


def _returns_new(op) -> bool:
    """A call of a user function whose every result is new memory (``fresh_results``): it shares none with what
    it is given, so ``step(h[:, t - 1, :])`` makes no name that sees ``h``."""
    if op.kind != "call":
        return False
    found = getattr(op, "returns_new", None)  # read from the callee's source once per op
    if found is None:
        found = op.returns_new = returns_fresh(op.fn, lambda obj: numpy_allocates(obj, _FRESH))
    return found


def _fresh(op, defs, depth=0) -> bool:
    """Whether ``op`` binds a new array no other name refers to."""
    if op.kind == "copy" and not isinstance(op.node, gast.Name):
        if _copy_call(op.node):
            return True
        source = op.args[0].id if op.args and isinstance(op.args[0], gast.Name) else None
        return depth < 8 and source is not None and all(
            _fresh(d.op, defs, depth + 1) for d in defs.get(source, []))
    if _new_container(op):
        return True  # a new list or tuple (tuple(x), [0] * n, s + (1,)): an item write into it reaches no other
        # name; a write through one of its items may (_check_items_owned)
    if op.kind in ("prim", "nondiff", "opaque", "call") and op.fn is not None:  # np.ones is a Python function
        copy = op.kwargs.get("copy")  # np.array(y, copy=False) or copy=None may return y itself
        if copy is not None and not (isinstance(copy, gast.Constant) and copy.value is True):
            return False
        # list(x) is a new list; tuple(x) may be x itself, which no write can change (a tuple's += rebinds)
        return op.fn in (rules.setitem, append, list, tuple) or _is_fresh_fn(op.fn)
    if op.kind in ("nondiff", "pack") and op.fn is None:
        return not isinstance(op.expr, gast.Name)
    return False


def _new_container(op) -> bool:
    """``list(x)``, ``tuple(x)``, ``a + b`` or ``a * n`` not lowered to an array operation: a new list or tuple
    whose items are its operands' own."""
    return op.kind == "opaque" and (op.fn in (list, tuple) or op.fn is None and isinstance(op.expr, gast.BinOp))


def _error(source, site, message, hint):
    node = site.op.node
    if getattr(node, "lineno", None) is None:  # a name the normalizer made: point at the user's line
        lineno = site.op.line - source.first_line + 1
        text = source.lines[lineno - 1] if 0 < lineno <= len(source.lines) else ""
        node = types.SimpleNamespace(lineno=lineno, col_offset=len(text) - len(text.lstrip()))
    return source.error(node, message, hint, UnsupportedSyntaxError)
