"""``bn_param["running_mean"] = v`` into a dict the caller keeps: the write reaches the caller's dict.

``aliasing.check_writes`` accepts such a write in the function ``grad`` was given (``_for_caller``: the
parameter is not differentiated, every binding of it is a write under a string key, and every other use
reads one item).  The parameter is then a dict the generated code treats as one it built itself: the
write runs in place (``runtime.caller_state.put_kept``), as numpy's does, in the primal sweep only, once
a call, storing the value the primal computed (a plain array); items read back carry their gradients by
key, as for a dict literal (whose adjoint never asks a dict for its old values).  The function's first
statement checks, when it runs, that a dict given there is one the function reaches by no other route
(``runtime.caller_state.caller_dict``); the write refuses anything but a dict.  ``x.get(key, default)``
on it becomes ``x[key] if key in x else default``, so that a read of a written key carries its gradient
too.

A function the differentiated one calls may write so into a parameter its caller passes down
(``passed_down``): the caller's own parameter, not differentiated, that the caller passes to that one
call only, outside loops, never binds, and reads items of only before the call, and that its own caller
passed down to it the same way (the entry's parameters start the chain).  Then the callee runs once per
call of the differentiated function, its reads of items it did not write see the caller's values (no
gradient), and no read of what it wrote escapes its gradient.  The caller checks the dict where it makes
the call (``call_checks``), as the entry's first statement does.
"""

from __future__ import annotations

from ... import rules
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import For, If, Op, Raw, While, atom_names, blocks, own_reads
from ..ir.errors import UnsupportedSyntaxError
from ..runtime import attributes, caller_state, checks
from ..runtime.origins import with_origin
from .aliasing import _got, _holds, _reads_beyond_first
from .normalize import local_names


def run_into_caller(body, writes, params, sequences, ns, names, fn) -> None:
    """For each ``(x, op, written)`` of ``writes`` (``op`` binds ``x`` to ``written``, ``t = setitem(x,
    key, value)``): ``written`` writes into ``x`` in place, ``x`` is a container (``sequences``), its
    ``.get`` calls are branches, and the body starts with the check of what ``x`` holds."""
    if not writes:
        return
    head = []
    function = compat.name(ns.bind(fn, fn.__name__))
    for x, op, written in writes:
        written.expr = compat.call(compat.name(ns.helper(caller_state.put_kept)),
                                   [compat.clone(a) for a in written.args] + [compat.const(x), compat.const(op.text.strip())])
        if x in sequences:
            continue
        sequences.add(x)
        others = compat.make("Dict", keys=[compat.const(p) for p in params if p != x],
                             values=[compat.name(p) for p in params if p != x])
        check = compat.call(compat.name(ns.helper(caller_state.caller_dict)),
                            [compat.name(x), compat.const(x), others, compat.const(op.text.strip()), function])
        head.append(Raw(compat.expr_stmt(check), op.line, op.text))
    _branch_gets(body, sequences & {x for x, _, _ in writes}, names)
    body[:0] = head


def _branch_gets(stmts, dicts, names) -> None:
    """``v = x.get(key, default)`` as ``if key in x: v = x[key] else: v = default``."""
    for i, s in enumerate(stmts):
        for block in blocks(s):
            _branch_gets(block, dicts, names)
        got = _get(s, dicts)
        if got is None:
            continue
        x, key, default = got
        test = names.temp()
        has = Op([test], "nondiff", compat.make("Compare", left=compat.clone(key), ops=[gast.In()],
                                                comparators=[compat.name(x)]), s.line, s.text, s.node)
        read = Op(list(s.targets), "prim", compat.make("Subscript", value=compat.name(x), slice=compat.clone(key),
                                                       ctx=gast.Load()),
                  s.line, s.text, s.node, rules.getitem, [compat.name(x), compat.clone(key)])
        other = Op(list(s.targets), "copy", compat.clone(default), s.line, s.text, s.node, args=[compat.clone(default)])
        stmts[i:i + 1] = [has, If(test, [read], [other], s.line, s.text)]


def _get(s, dicts):
    """``(x, key, default)`` of ``v = x.get(key, default)`` (``default`` None if not given), else None."""
    if not (isinstance(s, Op) and s.kind == "opaque" and len(s.targets) == 1):
        return None
    e = s.expr
    if not (isinstance(e, gast.Call) and isinstance(e.func, gast.Attribute) and e.func.attr == "get"
            and isinstance(e.func.value, gast.Name) and e.func.value.id in dicts and not e.keywords
            and 1 <= len(e.args) <= 2):
        return None
    return e.func.value.id, e.args[0], e.args[1] if len(e.args) == 2 else compat.const(None)


def store_into_objects(ctx) -> None:
    """``layer.attr = v`` (``Raw.kept``) on a parameter's object, run as written (``put_attribute``): refused
    at its line unless the object is one the caller keeps (a parameter not differentiated; in a called
    function, one passed down as ``passed_down`` says), no statement binds the parameter, and nothing that
    may run after the write reads that attribute or uses the object otherwise than by reading another
    attribute or setting one: a value read back would carry no gradient.  Then the object is checked where
    the function starts, as a dict written into is."""
    order: list = []
    _statements(ctx.body, (), order)
    writes = [(i, s) for i, (s, _) in enumerate(order) if isinstance(s, Raw) and s.kept is not None]
    if not writes:
        return
    caller, bound_names = ctx.fn.__name__, _bound(ctx.body)
    head: dict = {}
    for at, raw in writes:
        obj, attr, node = raw.kept
        shown = f"{obj}.{attr} = ..."
        reason = None
        if ctx.forward_stack is not None:
            reason = "forward mode runs over generated code here"
        elif obj in ctx.wrt:
            reason = f"{obj} is differentiated"
        elif ctx.kept_allowed is not None and obj not in ctx.kept_allowed:
            reason = "it is in a function the differentiated one calls, and " + ctx.kept_reasons.get(
                obj, f"{caller}'s caller does not pass {obj} down as it is")
        elif obj in bound_names:
            reason = f"{caller} binds {obj} too"
        else:
            reason = _read_back(obj, attr, order, at, ctx.ns)
        if reason is not None:
            raise ctx.source.error(node, f"{shown} would set an attribute of the caller's {obj}; astgrad runs such "
                                   f"a write into the caller's object when nothing the function runs after it "
                                   f"reads the value back, and here {reason}",
                                   "Keep the value in a local variable and return it (has_aux=True returns it "
                                   "beside the gradient), and store it on the object outside the differentiated "
                                   "function.", UnsupportedSyntaxError)
        head.setdefault(obj, raw)
    checks = []
    for obj, raw in head.items():
        others = compat.make("Dict", keys=[compat.const(p) for p in ctx.params if p != obj],
                             values=[compat.name(p) for p in ctx.params if p != obj])
        check = compat.call(compat.name(ctx.ns.helper(caller_state.caller_dict)),
                            [compat.name(obj), compat.const(obj), others,
                             compat.const(f"{compat.to_source(raw.kept[2]).strip()} = ..."),
                             compat.name(ctx.ns.bind(ctx.fn, ctx.fn.__name__))])
        checks.append(Raw(compat.expr_stmt(check), raw.line, raw.text))
    ctx.body[:0] = checks
    ctx.kept_dicts = ctx.kept_dicts | set(head)


def _read_back(obj, attr, order, at, ns):
    """Why the write ``obj.attr = ...`` at ``order[at]`` may be read back: a statement that uses ``obj``
    otherwise than reading or setting an attribute (a name or a function given it may read any later), or
    that may run after the write and reads ``obj.attr``; or None."""
    loops = set(order[at][1])
    for i, (s, in_loops) in enumerate(order):
        after = i > at or bool(loops & set(in_loops))
        if i == at or _asks_the_method(s, ns):
            continue
        if isinstance(s, Raw) and s.kept is not None and s.kept[0] == obj:
            if obj in _names_in(s.stmt.value.args[2]):
                return f"line {s.line} stores {obj} itself"
            continue
        if obj not in own_reads(s) and not (isinstance(s, Op) and obj in _op_names(s)):
            continue
        if isinstance(s, Op) and s.kind == "prim" and s.fn is attributes.attribute \
                and getattr(s.args[0], "id", None) == obj and obj not in _reads_beyond_first(s):
            if getattr(s.args[1], "value", None) != attr or not after:
                continue
            return f"line {s.line} reads {obj}.{attr} after it ({s.text.strip()}), which would carry no gradient"
        return f"line {s.line} uses {obj} as a whole ({s.text.strip()}), and what it is given may read the " \
               f"value back"
    return None


def _names_in(node) -> set:
    return {n.id for n in compat.walk(node) if isinstance(n, gast.Name)}


def passed_down(ctx, call, bound) -> tuple:
    """``(kept, reasons)`` for ``call``, an Op of ``ctx``'s body calling a user function, given ``bound``
    (``{parameter: atom}``): the callee's parameters that may write into the dict the caller passes there
    (its caller's, untouched in between), and for the others why not (``{parameter: reason}``)."""
    order: list = []
    _statements(ctx.body, (), order)
    at = next(i for i, (s, _) in enumerate(order) if s is call)
    in_loop = bool(order[at][1])
    caller = ctx.fn.__name__
    bound_names = _bound(ctx.body)
    user = local_names(ctx.source.tree)
    kept, reasons = set(), {}
    for param, atom in bound.items():
        x = atom.id if isinstance(atom, gast.Name) else ""
        reason = None
        if x not in ctx.params:
            shown = x if x in user else "what it passes there"
            reason = f"{shown} is not a parameter of {caller} (pass down the dict the differentiated function is given)"
        elif x in ctx.wrt:
            reason = f"{x} is differentiated in {caller}"
        elif ctx.kept_allowed is not None and x not in ctx.kept_allowed:
            reason = ctx.kept_reasons.get(x, f"{caller}'s caller does not pass {x} down as it is")
        elif x in bound_names:
            reason = f"{caller} binds {x} too"
        elif in_loop:
            reason = f"the call is in a loop of {caller} (each run would read what the last one wrote)"
        elif atom_names(call.expr).count(x) != 1:
            reason = f"{caller} passes {x} to the call twice"
        else:
            reason = _other_uses(x, order, at, caller, ctx.ns)
        if reason is None:
            kept.add(param)
        else:
            reasons[param] = reason
    return frozenset(kept), reasons


def call_checks(ctx, call, bound, kept) -> list:
    """Before ``call``: refuse, when it runs, a dict passed to the callee's parameters ``kept`` (which write
    into it) that the caller also reaches by another route, as ``caller_dict`` does at an entry's start."""
    out = []
    for param in sorted(kept):
        x = bound[param].id
        others = compat.make("Dict", keys=[compat.const(p) for p in ctx.params if p != x],
                             values=[compat.name(p) for p in ctx.params if p != x])
        check = compat.call(compat.name(ctx.ns.helper(caller_state.caller_dict)),
                            [compat.name(x), compat.const(x), others, compat.const(call.text.strip()),
                             compat.name(ctx.ns.bind(ctx.fn, ctx.fn.__name__))])
        out.append(with_origin(compat.expr_stmt(check), ctx.source.filename, call.line, call.text))
    return out


def _statements(stmts, loops, out) -> None:
    """``(statement, the loops around it)`` of every statement, nested ones too, in the order they are written."""
    for s in stmts:
        out.append((s, loops))
        for block in blocks(s):
            _statements(block, loops + (id(s),) if isinstance(s, (For, While)) else loops, out)


def _bound(stmts) -> set:
    """Every name a statement binds: targets, loop variables, stores in statements kept as written."""
    found: set = set()
    for s in stmts:
        if isinstance(s, Op):
            found.update(s.targets)
        elif isinstance(s, For):
            found.add(s.target)
        elif isinstance(s, Raw):
            found.update(n.id for n in compat.walk(s.stmt) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store))
        for block in blocks(s):
            found |= _bound(block)
    return found


def _other_uses(x, order, at, caller, ns):
    """Why ``x`` may not be passed down at ``order[at]``: a use elsewhere that is not a read of one item
    before the call (which sees the caller's value), or None."""
    for i, (s, _) in enumerate(order):
        if i == at or x not in own_reads(s) and not (isinstance(s, Op) and x in _op_names(s)) \
                or _asks_the_method(s, ns):
            continue
        if not (isinstance(s, Op) and _item_read(s, x)):
            return f"{caller} uses {x} elsewhere too (line {s.line}: {s.text.strip()})"
        if i > at:
            return f"{caller} reads {x} after the call (line {s.line}: {s.text.strip()}), where it would see the " \
                   f"written values without their gradient"
    return None


def _asks_the_method(s, ns) -> bool:
    """``same_method(obj, ...)`` before ``obj.method(...)``: a check of which function the call runs, which
    reads the object's class only (checks.same_method)."""
    return isinstance(s, Raw) and isinstance(s.stmt, gast.Expr) and isinstance(s.stmt.value, gast.Call) \
        and isinstance(s.stmt.value.func, gast.Name) and ns.globals.get(s.stmt.value.func.id) is checks.same_method


def _op_names(op) -> set:
    names = set(atom_names(op.expr))
    for a in list(op.args) + list(op.kwargs.values()):
        names.update(atom_names(a))
    return names


def _item_read(op, x) -> bool:
    """``x["k"]``, ``x.get("k", d)`` or ``"k" in x``: one item of ``x``, or whether it has one."""
    return op.kind in ("prim", "nondiff") and op.fn is rules.getitem and getattr(op.args[0], "id", None) == x \
        and x not in _reads_beyond_first(op) or _got(op, x) or _holds(op, x)
