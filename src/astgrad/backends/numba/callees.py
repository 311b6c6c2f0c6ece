"""Each callee's forward/backward pair pushes on a stack of its own under backend="numba".

The numpy module passes one stack through every call: a callee's forward
function pushes what its backward function pops.  Numba types a list as a
list of one type, and the entry's loop counters, a callee's saved tuple and
another callee's saved arrays are of different types.  The pushes of one
pair are popped only by that pair, last in first out, so the subsequence of
one pair's pushes and pops is last in first out on its own: each pair gets
its own list, made by the entry and passed to every function (the
callees are inlined into the entry, see ``compiled``, so Numba types each
list from the pushes it sees there).
"""

from __future__ import annotations

from ...transform.ir import compat
from ...transform.ir.compat import gast
from ...transform.ir.trees import is_marker


def own_stacks(functions, stack, pairs) -> None:
    """Rewrite ``functions`` (the entry first) so each (forward, backward) name pair has its own stack list."""
    present = {f.name: f for f in functions}
    pairs = [(forward, backward) for forward, backward in pairs if forward in present or backward in present]
    if not pairs:
        return
    taken = {n.id for f in functions for n in gast.walk(f) if isinstance(n, gast.Name)} | set(present)
    stack_of: dict = {}
    extra: list = []
    for forward, backward in pairs:
        if not _pushes(present.get(forward), stack):
            stack_of[forward] = stack_of[backward] = None  # the pair saves nothing: given None for a stack
            continue
        name = f"{stack}_{forward}"
        while name in taken:
            name += "_"
        taken.add(name)
        stack_of[forward] = stack_of[backward] = name
        extra.append(name)
    entry = functions[0]
    entry.body[:0] = [compat.assign(compat.name(name, store=True), compat.make("List", elts=[], ctx=gast.Load()))
                      for name in extra]
    for fn_def in functions[1:]:
        if fn_def.name in stack_of and stack_of[fn_def.name] is not None:
            fn_def.args.args[1:1] = [compat.make("Name", id=name, ctx=gast.Param(), annotation=None,
                                                 type_comment=None) for name in extra]
    for fn_def in functions:
        for node in gast.walk(fn_def):
            if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in stack_of:
                own = stack_of[node.func.id]
                node.args = [compat.const(None) if own is None else compat.name(own)] \
                    + ([compat.name(n) for n in extra] if own is not None else []) + node.args[1:]
    if not _pushes(entry, stack):  # the entry's own stack, now unused: Numba cannot type an empty list
        entry.body = [s for s in entry.body if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                                    and isinstance(s.targets[0], gast.Name)
                                                    and s.targets[0].id == stack)]


def _pushes(fn_def, stack) -> bool:
    """Whether ``fn_def`` pushes on its stack (``_stack.append(...)``)."""
    return fn_def is not None and any(
        isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == "append"
        and isinstance(n.func.value, gast.Name) and n.func.value.id == stack for n in gast.walk(fn_def))


_WRAPPERS = ("only_shape", "saved_value")
#: the key of the branch records: ``_stack.append(t2)`` right after ``if t2:``, popped by ``if _stack.pop():``
_BRANCHES = "<branches>"  # no variable's name


def stacks_per_name(entry, stack) -> None:
    """The entry's stack split into one list per saved variable, where each push saves one variable's value and
    each pop restores one (``_stack.append(only_shape(t2))`` ... ``t2 = _stack.pop()``).

    Numba's list holds one type, and a loop saves numbers (``k[0]``) beside
    arrays (``rates``).  The generated code pushes a variable's value before
    it is overwritten and pops it back into the same variable: the pops of
    one variable take the values its pushes saved, last in first out, so the
    pushes and pops of one variable alone are last in first out too.  The
    same holds for what an item write saves (``overwritten(u, index)``,
    popped by ``u = restored(u, _stack.pop())``) and for the records of which
    branch an ``if`` took (``_stack.append(t2)`` right after ``if t2:``,
    popped by ``if _stack.pop():``), which get a list of their own.  Left
    as it is where the stack is used otherwise (a callee's, ``pop_numbers``)
    or a push or pop does not name one variable.
    """
    pushes, pops, uses = _pushes_and_pops(entry, stack)
    made = [s for s in entry.body if isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and s.targets[0].id == stack]
    own = _split(pushes, pops, len(made) == 1 and uses == len(pushes) + len(pops) + 1,
                 {n.id for n in gast.walk(entry) if isinstance(n, gast.Name)}, stack)
    if own:
        at = entry.body.index(made[0])
        entry.body[at:at + 1] = [compat.assign(compat.name(name, store=True), compat.make("List", elts=[],
                                                                                          ctx=gast.Load()))
                                 for name in own.values()]


def callee_stacks_per_name(functions, stack) -> None:
    """``stacks_per_name`` for each callee's forward/backward pair: the lists made by the forward function
    and handed to the backward one in the tuple of values it saves last (pushed last, popped first).

    ``forward_rk4`` saves a step size (a number) and states (arrays) in its
    loop; on one list Numba refuses the second kind.
    """
    present = {f.name: f for f in functions}
    for forward in functions[1:]:
        backward = present.get("backward_" + forward.name[8:]) if forward.name.startswith("forward_") else None
        if backward is None or len(forward.body) < 2 or not backward.body:
            continue
        push, pop = forward.body[-2], backward.body[0]
        if not (isinstance(push, gast.Expr) and _is_method(push.value, stack, "append") and len(push.value.args) == 1
                and isinstance(push.value.args[0], gast.Tuple) and isinstance(pop, gast.Assign)
                and len(pop.targets) == 1 and isinstance(pop.targets[0], gast.Tuple)
                and _is_method(pop.value, stack, "pop") and not pop.value.args
                and isinstance(forward.body[-1], gast.Return)):
            continue
        pushes, pops, uses = _pushes_and_pops(forward, stack)
        more_pops, more_uses = _pushes_and_pops(backward, stack)[1:]
        pushes = [(call, key) for call, key in pushes if call is not push.value]
        pops = [(call, key) for call, key in pops + more_pops if call is not pop.value]
        taken = {n.id for f in (forward, backward) for n in gast.walk(f) if isinstance(n, gast.Name)}
        own = _split(pushes, pops, uses + more_uses == len(pushes) + len(pops) + 4, taken, stack)
        if not own:
            continue
        forward.body[:0] = [compat.assign(compat.name(name, store=True), compat.make("List", elts=[], ctx=gast.Load()))
                            for name in own.values()]
        push.value.args[0].elts += [compat.name(name) for name in own.values()]
        pop.targets[0].elts += [compat.name(name, store=True) for name in own.values()]


def _split(pushes, pops, only_these, taken, stack) -> dict:
    """Each saved variable's own list name (key -> name), the pushes and pops renamed; {} where not split."""
    pushed = {key for _, key in pushes}
    popped = {key for _, key in pops}
    if not only_these or None in pushed or None in popped or pushed != popped or len(pushed) < 2:
        return {}
    counts = {key: [0, 0] for key in pushed}
    for _, key in pushes:
        counts[key][0] += 1
    for _, key in pops:
        counts[key][1] += 1
    if counts.get(_BRANCHES, [0, 0])[0] != counts.get(_BRANCHES, [0, 0])[1]:
        return {}  # the branch records are told apart by their place: the same number pushed as popped, or leave it
    own = {}
    for key in sorted(pushed):
        candidate = f"{stack}_{'branches' if key == _BRANCHES else key}"
        while candidate in taken:
            candidate += "_"
        taken.add(candidate)
        own[key] = candidate
    for call, key in pushes + pops:
        call.func.value = compat.name(own[key])
    return own


def _pushes_and_pops(fn_def, stack):
    """The pushes on ``stack`` in ``fn_def`` (call, key), its pops (call, key), and how often it names it."""
    pushes: list = []  # (call node, key)
    pops: list = []  # (the pop call node, key)
    uses = 0
    for node in gast.walk(fn_def):
        if isinstance(node, gast.Name) and node.id == stack:
            uses += 1
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if not isinstance(block, list):  # an IfExp's body and orelse are expressions
                continue
            block = [stmt for stmt in block if not is_marker(stmt)]
            for before, stmt in zip([None] + block[:-1], block):
                if isinstance(stmt, gast.Expr) and _is_method(stmt.value, stack, "append"):
                    pushes.append((stmt.value, _branch_record(before, stmt.value) or _saved_name(stmt.value)))
                elif isinstance(stmt, gast.If) and _is_method(stmt.test, stack, "pop") and not stmt.test.args:
                    pops.append((stmt.test, _BRANCHES))
                elif isinstance(stmt, gast.Assign):
                    pop = _restoring_pop(stmt, stack)
                    if pop is not None:
                        pops.append(pop)
    return pushes, pops, uses


def _branch_record(before, push):
    """``_BRANCHES`` for ``_stack.append(t2)`` right after ``if t2: ...`` (which branch ran), else None."""
    if isinstance(before, gast.If) and isinstance(before.test, gast.Name) and len(push.args) == 1 \
            and isinstance(push.args[0], gast.Name) and push.args[0].id == before.test.id:
        return _BRANCHES
    return None


def _restoring_pop(stmt, stack):
    """``(pop call, name)`` for ``name = _stack.pop()`` and ``name = restored(name, _stack.pop())``, else None;
    ``(pop call, None)`` for another statement that pops."""
    value = stmt.value
    target = stmt.targets[0] if len(stmt.targets) == 1 and isinstance(stmt.targets[0], gast.Name) else None
    if _is_method(value, stack, "pop"):
        return (value, target.id if target is not None and not value.args else None)
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id == "restored" \
            and len(value.args) == 2 and _is_method(value.args[1], stack, "pop"):
        if target is None or not isinstance(value.args[0], gast.Name) or value.args[0].id != target.id:
            return (value.args[1], None)
        return (value.args[1], target.id if not value.args[1].args else None)
    return None


def _is_method(node, stack, method) -> bool:
    return isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute) and node.func.attr == method \
        and isinstance(node.func.value, gast.Name) and node.func.value.id == stack


def _saved_name(push):
    """``v`` for a push of ``v``, ``only_shape(v)``, ``saved_value(v)`` (nested) or ``overwritten(v, index)``;
    else None."""
    if len(push.args) != 1 or push.keywords:
        return None
    value = push.args[0]
    if isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id == "overwritten" \
            and len(value.args) == 2 and not value.keywords:
        value = value.args[0]
    while isinstance(value, gast.Call) and isinstance(value.func, gast.Name) and value.func.id in _WRAPPERS \
            and len(value.args) == 1 and not value.keywords:
        value = value.args[0]
    return value.id if isinstance(value, gast.Name) else None


def unread_parameters(functions) -> set:
    """Positions of the entry's parameters no generated function reads: each is only passed on, to a
    parameter of a generated function that is itself only passed on (``f`` in ``rk4(f, y0, t, p)``, whose
    calls of ``f`` the transform resolved to the function it was given: the gradient is made for that one)."""
    params = {f.name: [a.id for a in f.args.args] for f in functions}
    unread = {(f.name, p) for f in functions for p in params[f.name]}
    changed = True
    while changed:
        changed = False
        for f in functions:
            passed: set = set()
            for node in gast.walk(f):
                if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in params:
                    callee = params[node.func.id]
                    passed.update(id(a) for k, a in enumerate(node.args) if isinstance(a, gast.Name)
                                  and k < len(callee) and (node.func.id, callee[k]) in unread)
            for node in gast.walk(f):
                if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Load) and (f.name, node.id) in unread \
                        and id(node) not in passed:
                    unread.discard((f.name, node.id))
                    changed = True
    entry = functions[0]
    return {k for k, p in enumerate(params[entry.name]) if (entry.name, p) in unread and p != "dresult"
            and k < len(entry.args.args) - len(entry.args.defaults)}
