"""Reverse loops whose adjoint is a linear recurrence, solved with cumulative products.

The adjoint of a scalar loop such as ``x = f(x)`` repeated ``n`` times is a
Python loop of ``n`` steps, each one popping the saved ``x`` and updating
``dx = dx * f'(x)`` (plus, where the loop also sums ``x``, ``dx = dx +
dtotal``).  That update is affine in ``dx``: ``dx = a_t * dx + b_t`` with
``a_t``, ``b_t`` computed from what step ``t`` saved.  An expert solves it
without the loop: the saved values as one array, ``a`` and ``b`` computed
elementwise over it, and ``dx = dx * prod(a) + sum_t b_t * prod_{s<t} a_s``
with one cumulative product (``runtime.linear_recurrence``).

``solve_linear_loops`` recognises such loops at the top level of the
generated function and writes both forms, chosen at run time::

    saved = pop_numbers(_stack, range(steps), 'n', dx, dtotal)
    if saved is None:
        for _ in reversed(range(steps)): ...   # the loop, untouched
    else:
        x = saved[0]
        t9 = 0.9 * np.cos(x) + ...
        dx = linear_recurrence(dx, t9, dtotal * t9, len(x))

``pop_numbers`` takes the saved values off the stack only if every one of
them, and every other value the steps read (``dx``, ``dtotal``), is a plain
number; otherwise (arrays, objects of the user's) the loop runs as it was.
The recognition is strict: the loop body may hold only pops of saved values
and updates of one adjoint ``d`` of the forms ``d = d + e``, ``d = e + d``,
``d = d - e``, ``d = d * e``, ``d = e * d``, where ``e`` does not read ``d``
and is built from numbers, names the body does not assign, the values it
pops, ``+ - *`` and numpy ufuncs.  Anything else (a branch, a break, a
second adjoint, a call of anything but a ufunc, a division, which Python
numbers raise on where arrays do not) leaves the loop alone.
"""

from __future__ import annotations

import builtins

import numpy as np

from ..ir import compat
from .. import runtime
from ..ir.tagged import popped_into
from ..ir.compat import gast
from ..ir.trees import is_marker


def solve_linear_loops(fn_def, ns, names, seed=None, given=None):
    """Give each top-level reverse loop whose steps are affine in one adjoint its vectorised form.

    ``seed``: a vjp's seed parameter, and ``given`` a callable returning the
    entry's GivenFloats (or None): a loop over the seed that pops and reads
    nothing else, where the seed surely holds real floats, is solved
    without ``pop_numbers`` (``_checked_already``).
    """
    body = fn_def.body
    out: list = []
    bound = {a.id for a in fn_def.args.args + fn_def.args.kwonlyargs}
    moved: set = set()  # ids of statements folded into the solved loop before them (_scaled_after)
    for i, stmt in enumerate(body):
        if id(stmt) in moved:
            continue
        found = _recognise(stmt, body[i + 1:], ns, bound) if isinstance(stmt, gast.For) else None
        then = _scaled_after(found.d, body[i + 1:]) if found else None
        if then is not None:
            moved.add(id(then[0]))
        if found and _checked_already(found, seed, given, body[:i]):
            out += _solved(stmt, found, ns, names, then)[1].orelse
            continue
        out += _solved(stmt, found, ns, names, then) if found else [stmt]
        if isinstance(stmt, gast.Assign):
            bound.update(n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name))
        elif isinstance(stmt, gast.Delete):
            bound.difference_update(n.id for t in stmt.targets for n in compat.walk(t) if isinstance(n, gast.Name))
    fn_def.body = out
    return fn_def


class _Loop:
    """What a recognised loop's steps do: the pops, in order, and the affine updates of ``d``."""

    def __init__(self, count):
        self.count = count  # the range the loop runs over (its length is the number of steps)
        self.d = None
        self.pops = []  # popped names, in the order each step pops them (a name may be popped twice)
        self.updates = []  # (a, b, refs): d = a * d + b (None for 1 and 0); refs: name -> the pop it reads
        self.invariants = []  # names the steps read that they do not assign
        self.number_d = False  # d must be a number (it is read under unbroadcast), not any float array

    def sources(self):
        """What each update reads of the popped names: ``("n", j)`` the value pop ``j`` of this step
        gave, ``("c", j)`` the one it gave the step before (read before this step pops the name)."""
        last = {name: j for j, name in enumerate(self.pops)}
        return [{r: ("n", j) if j is not None else ("c", last[r]) for r, j in refs.items() if r in last}
                for _, _, refs in self.updates]


def _recognise(loop, after, ns, bound):
    if loop.orelse or not isinstance(loop.target, gast.Name):
        return None
    count = _range_of(loop.iter, ns)
    if count is None:
        return None
    found = _Loop(count)
    current = {}  # popped name -> the pop of this step it holds
    read = set()
    for stmt in loop.body:
        if is_marker(stmt):
            continue
        name = popped_into(stmt)
        if name is not None:
            current[name] = len(found.pops)
            found.pops.append(name)
            continue
        reads: set = set()
        update = _affine(stmt, ns, reads)
        if update is None:
            return None
        found.number_d = found.number_d or _UNBROADCAST in reads
        reads.discard(_UNBROADCAST)
        d, a, b = update
        if found.d not in (None, d):
            return None
        found.d = d
        read |= reads
        found.updates.append((a, b, {r: current.get(r) for r in reads}))
    popped = set(found.pops)
    if not found.updates or found.d in popped or found.d in read or loop.target.id in read:
        return None
    found.invariants = sorted(read - popped)
    carried = {r for refs in found.sources() for r, (kind, _) in refs.items() if kind == "c"}
    if not {found.d, *found.invariants, *carried} <= bound:
        return None  # read before the loop's first step, they must surely be bound (a loop of no steps reads none)
    later = {n.id for s in after for n in compat.walk(s) if isinstance(n, gast.Name)}
    if later & (popped | {loop.target.id}):
        return None  # what the loop leaves in them is read (or deleted) after it
    if any(isinstance(n, gast.Name) and n.id == ns.stack for n in compat.walk(count)) \
            or ns.stack in found.invariants:
        return None
    return found


def _range_of(node, ns):
    """``range(...)`` (maybe sliced) that ``node`` iterates over, directly or reversed; else None."""
    if isinstance(node, gast.Call) and _is_global(node.func, ns, builtins.reversed) and len(node.args) == 1 \
            and not node.keywords:
        node = node.args[0]
    inner = node.value if isinstance(node, gast.Subscript) else node
    if not (isinstance(inner, gast.Call) and _is_global(inner.func, ns, builtins.range) and not inner.keywords):
        return None
    pure = (gast.Name, gast.Constant, gast.Slice, gast.Subscript, gast.BinOp, gast.UnaryOp, gast.Call,
            gast.Load, gast.operator, gast.unaryop)
    for n in compat.walk(node):
        if not isinstance(n, pure) or isinstance(n, gast.Call) and n is not inner:
            return None
    return node


def _is_global(node, ns, obj) -> bool:
    return isinstance(node, gast.Name) and dict.get(ns.globals, node.id) is obj


_UNBROADCAST = "<unbroadcast>"  # in the names an update reads: it sums d to a shape, so d must be a number


def _affine(stmt, ns, reads):
    """``(d, a, b)`` for a statement ``d = <a * d + b>`` (``a``, ``b`` None for 1 and 0); else None.

    ``d`` appears once, under ``+ - *`` and ``unbroadcast(..., shape(v))``
    (the identity on numbers, which ``pop_numbers`` checks ``v`` is); every
    other operand must be ``_elementwise``.
    """
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)):
        return None
    d = stmt.targets[0].id
    found = _linear(stmt.value, d, ns, reads)
    return None if found is None else (d,) + found


def _mentions(node, d) -> bool:
    return any(isinstance(n, gast.Name) and n.id == d for n in compat.walk(node))


def _linear(e, d, ns, reads):
    if isinstance(e, gast.Name) and e.id == d:
        return None, None
    if isinstance(e, gast.Call) and _resolve(e.func, ns) is runtime.unbroadcast and len(e.args) == 2 \
            and not e.keywords and isinstance(e.args[1], gast.Call) and _resolve(e.args[1].func, ns) is runtime.shape \
            and len(e.args[1].args) == 1 and isinstance(e.args[1].args[0], gast.Name):
        reads.update((e.args[1].args[0].id, _UNBROADCAST))
        return _linear(e.args[0], d, ns, reads)
    if not (isinstance(e, gast.BinOp) and isinstance(e.op, (gast.Add, gast.Sub, gast.Mult))):
        return None
    in_left = _mentions(e.left, d)
    inner, other = (e.left, e.right) if in_left else (e.right, e.left)
    if _mentions(other, d) or not _elementwise(other, ns, reads):
        return None
    found = _linear(inner, d, ns, reads)
    if found is None:
        return None
    a, b = found
    other = compat.clone(other)
    if isinstance(e.op, gast.Mult):
        return _times(a, other), None if b is None else _times(b, compat.clone(other))
    if isinstance(e.op, gast.Add):
        return a, _plus(b, other)
    if in_left:  # d - other
        return a, _plus(b, compat.make("UnaryOp", op=gast.USub(), operand=other))
    minus = compat.make("UnaryOp", op=gast.USub(), operand=a or compat.const(1.0))
    return minus, _plus(other, None if b is None else compat.make("UnaryOp", op=gast.USub(), operand=b))


def _times(x, y):
    """``x * y``, None standing for 1."""
    return None if x is None and y is None else x if y is None else y if x is None else compat.binop(x, "Mult", y)


def _plus(x, y):
    """``x + y``, None standing for 0."""
    return x if y is None else y if x is None else compat.binop(x, "Add", y)


def _elementwise(e, ns, reads) -> bool:
    """Whether ``e`` computes elementwise from numbers and names (those it reads go into ``reads``)."""
    if isinstance(e, gast.Constant):
        return type(e.value) in (int, float, complex)
    if isinstance(e, gast.Name):
        reads.add(e.id)
        return True
    if isinstance(e, gast.BinOp):
        return isinstance(e.op, (gast.Add, gast.Sub, gast.Mult)) and _elementwise(e.left, ns, reads) \
            and _elementwise(e.right, ns, reads)
    if isinstance(e, gast.UnaryOp):
        return isinstance(e.op, (gast.USub, gast.UAdd)) and _elementwise(e.operand, ns, reads)
    if isinstance(e, gast.Call):
        fn = _resolve(e.func, ns)
        return isinstance(fn, np.ufunc) and fn.nout == 1 and fn.nin == len(e.args) and not e.keywords \
            and all(_elementwise(a, ns, reads) for a in e.args)
    return False


def _resolve(node, ns):
    """The object a name or an attribute chain of the module's globals (``np.cos``) is bound to, else None."""
    if isinstance(node, gast.Attribute):
        base = _resolve(node.value, ns)
        return None if base is None else getattr(base, node.attr, None)
    if isinstance(node, gast.Name):
        return dict.get(ns.globals, node.id)
    return None


def _checked_already(found, seed, given, before) -> bool:
    """Whether ``pop_numbers`` would surely take the vectorised form: a loop that pops nothing and reads
    nothing but its adjoint ``d``, which is the vjp's seed, assigned nowhere before the loop, and holds real
    floats in every call this code serves (the entry specialises on it: ``GivenFloats``).

    ``pop_numbers`` then only tests that ``d`` is a number or an array of
    floats (W5's ``pop_numbers(None, range(_trips), '', dy)``, a call per
    gradient); the entry's guard has tested it.  Where the seed is not known
    to hold real floats, ``asked`` makes the general adjoint specialise on it.
    """
    if seed is None or found.d != seed or found.pops or found.invariants or found.number_d:
        return False
    if any(isinstance(n, gast.Name) and n.id == seed and not isinstance(n.ctx, gast.Load)
           for stmt in before for n in compat.walk(stmt)):
        return False
    floats = given()
    if floats is None:
        return False
    if seed not in floats.names:
        floats.asked = True
        return False
    return True


def _scaled_after(d, after):
    """``(stmt, e, c)`` where the next statement to read ``d`` after the loop is ``stmt``, ``e = d * c`` (or
    ``c * d``) with ``c`` a number literal, and nothing after it reads the ``d`` the loop left (``e`` may be
    ``d``); else None.

    The solved form then returns ``e`` at once (``linear_recurrence(..., c)``:
    one multiplication of an array where there were two; W5's ``dx = dy *
    2`` after its loop of ``dy = dy * 2``), and the loop as written is
    followed by ``stmt``.  Only ``del`` of other names and comments may
    stand between: ``stmt`` moves before them.
    """
    for j, stmt in enumerate(after):
        if is_marker(stmt):
            continue
        if isinstance(stmt, gast.Delete) and all(isinstance(t, gast.Name) and t.id != d for t in stmt.targets):
            continue
        break
    else:
        return None
    if not (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name)
            and isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, gast.Mult)):
        return None
    e, left, right = stmt.targets[0].id, stmt.value.left, stmt.value.right
    factor = right if isinstance(left, gast.Name) and left.id == d else left if \
        isinstance(right, gast.Name) and right.id == d else None
    if not (isinstance(factor, gast.Constant) and (type(factor.value) is float or type(factor.value) is int
                                                                and abs(factor.value) <= 2 ** 53)):
        return None
    if any(isinstance(t, gast.Name) and t.id == e for s in after[:j] if isinstance(s, gast.Delete) for t in s.targets):
        return None  # moved before a ``del e``, the value would be deleted
    for s in after[j + 1:] if e != d else ():  # (``d = d * c``: what is read after is the new value)
        if not isinstance(s, gast.Delete) and _mentions(s, d):
            return None  # what the loop leaves in ``d`` is read after: it must be computed
    return stmt, e, factor.value


def _solved(loop, found, ns, names, then=None):
    """``saved = pop_numbers(...)``, then the loop where that is None, else the recurrence solved.

    With ``then`` (``_scaled_after``), ``e = d * c`` follows the loop and the
    solved form computes ``e`` in the same multiplication.
    """
    sources = found.sources()
    used = sorted({source for refs in sources for source in refs.values()}, key=lambda s: (s[1], s[0] == "c"))
    kinds = {j: kind for kind, j in reversed(used)}  # "n" where a pop is read in its step, else "c"
    pops = "".join(kinds.get(j, "-") for j in range(len(found.pops)))
    of_name: dict = {}
    for kind, j in used:
        of_name.setdefault(found.pops[j], []).append((kind, j))
    carried = sorted({found.pops[j] for kind, j in used if kind == "c"})
    numbers = ([found.d] if found.number_d else []) + found.invariants + carried
    saved = names.fresh("saved")
    take = compat.assign(saved, compat.call(compat.name(ns.helper(runtime.pop_numbers)), [
        compat.name(ns.stack) if found.pops else compat.const(None), compat.clone(found.count), compat.const(pops),
        compat.name(found.d)] + [compat.name(v) for v in numbers]))
    vectorised, arrays = [], {}
    for kind, j in used:  # a name read from one pop keeps its name; from several, each gets one
        name = found.pops[j]
        arrays[kind, j] = name if len(of_name[name]) == 1 else names.fresh(name)
        column = compat.make("Subscript", value=compat.name(saved), slice=compat.const(j), ctx=gast.Load())
        if kind == "c":  # the value the previous step popped; the first step reads the one before the loop
            column = compat.call(compat.name(ns.helper(runtime.shifted)), [column, compat.name(name)])
        vectorised.append(compat.assign(arrays[kind, j], column))
    a = b = None
    for (a_step, b_step, _), refs in zip(found.updates, sources):  # d = a_step * (a * d + b) + b_step
        renamed = {r: arrays[source] for r, source in refs.items()}
        for part in (a_step, b_step):
            for n in [] if part is None else compat.walk(part):
                if isinstance(n, gast.Name) and n.id in renamed:
                    n.id = renamed[n.id]
        if a_step is not None and b is not None and not isinstance(a_step, (gast.Name, gast.Constant)):
            factor = names.temp()
            vectorised.append(compat.assign(factor, a_step))
            a_step = compat.name(factor)
        a = _times(a, a_step)
        b = _plus(None if b is None else _times(b, None if a_step is None else compat.clone(a_step)), b_step)
    steps = compat.call(compat.name(ns.bind(builtins.len, "len")), [
        compat.name(arrays[used[0]]) if used else compat.clone(found.count)])
    solve = compat.call(compat.name(ns.helper(runtime.linear_recurrence)),
                        [compat.name(found.d), a or compat.const(1.0), b or compat.const(None), steps]
                        + ([compat.const(then[2])] if then else []))
    vectorised.append(compat.assign(then[1] if then else found.d, solve))
    none = compat.make("Compare", left=compat.name(saved), ops=[gast.Is()], comparators=[compat.const(None)])
    return [take, compat.if_stmt(none, [loop] + ([then[0]] if then else []), vectorised)]
