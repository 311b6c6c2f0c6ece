"""The values a loop saves once a step, one tuple a step, under backend="numba" (``saves_per_step``).

``callees.stacks_per_name`` gives each saved variable a list of its own;
this merges the lists of one loop and its reverse loop where that keeps
every value, and is a job of its own on the text ``compiled`` writes.
"""

from __future__ import annotations

from ...transform.ir import compat
from ...transform.ir.compat import gast
from ...transform.runtime.origins import keep_origin
from .callees import _unique


def saves_per_step(functions) -> None:
    """The lists one loop pushes on once an iteration and one reverse loop pops once an iteration, made one
    list of tuples: ``_stack_a.append(x)`` ... ``_stack_b.append(y)`` in a step become ``_pushed_stack_a = x``
    ... ``_pushed_stack_b = y`` and, at the end of the step, ``_stack_a_b.append((_pushed_stack_a,
    _pushed_stack_b))``; the reverse step starts with ``_popped_stack_a, _popped_stack_b = _stack_a_b.pop()``
    and reads those in place of the pops.

    ``stacks_per_name`` gave each saved variable a list (Numba's list holds
    one type); compiled, each list's push and pop are lowered where they
    are written, and a stencil's step saves ten to twenty variables.  A
    tuple holds values of different types, and a list of them is one push
    and one pop a step.  The values are the same: each list was pushed
    exactly once in each iteration of its loop and popped exactly once in
    each iteration of its reverse loop (a push or pop at the top of the
    loop's body, no ``break`` or ``continue`` or ``return`` in it), so the
    k-th pop of each list read the value of the k-th push from the end, as
    the k-th tuple popped holds.  A list a forward function makes and hands
    to its backward function in the tuple it saves (``callee_stacks_per_name``)
    is merged the same way.
    """
    present = {f.name: f for f in functions}
    for fn_def in functions:
        backward = None
        if fn_def.name.startswith("forward_"):
            backward = present.get("backward_" + fn_def.name[len("forward_"):])
        _merge_steps(fn_def, backward)


def _merge_steps(fn_def, backward) -> None:
    made = [s for s in fn_def.body if isinstance(s, gast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.List) and not s.value.elts]
    if len(made) < 2:
        return
    scopes = [fn_def] + ([backward] if backward is not None else [])
    uses: dict = {}
    for scope in scopes:
        for node in compat.walk(scope):
            if isinstance(node, gast.Name):
                uses.setdefault(node.id, []).append(node)
    handed = _handed_tuples(fn_def, backward)  # the forward's saved tuple, the backward's unpacking of it
    groups: dict = {}
    steps = _Steps(scopes)  # read once: the tree changes only below, once every list's loops are known
    for stmt in made:
        name = stmt.targets[0].id
        found = steps.push_and_pop(name)
        if found is None:
            continue
        push_loop, push, pop_loop, pop_call = found
        expected = 3 + sum(1 for t in handed if any(isinstance(e, gast.Name) and e.id == name for e in t.elts))
        in_tuples = sum(1 for t in handed for e in t.elts if isinstance(e, gast.Name) and e.id == name)
        if len(uses.get(name, [])) != expected or in_tuples not in (0, 2) or (in_tuples and len(handed) != 2):
            continue  # read elsewhere, or handed on some other way
        groups.setdefault((id(push_loop), id(pop_loop)), []).append((name, stmt, push_loop, push, pop_loop, pop_call))
    taken = {n for n in uses}
    for members in groups.values():
        if len(members) < 2:
            continue
        names = [m[0] for m in members]
        merged = _unique("_stack_" + "_".join(n[len("_stack_"):] if n.startswith("_stack_") else n for n in names)[:40]
                         if len(names) <= 3 else "_stack_steps", taken)
        push_loop, pop_loop = members[0][2], members[0][4]
        pushed, popped = [], []
        for name, _, _, push, _, pop_call in members:
            item = _unique(f"_pushed_{name.lstrip('_')}", taken)
            back = _unique(f"_popped_{name.lstrip('_')}", taken)
            at = push_loop.body.index(push)
            push_loop.body[at] = keep_origin(push, compat.assign(item, push.value.args[0]))
            pushed.append(item)
            popped.append(back)
            _replace_node(pop_loop, pop_call, compat.name(back))
        push_loop.body.append(compat.expr_stmt(compat.call(compat.attr(compat.name(merged), "append"),
                                                           [compat.tuple_([compat.name(n) for n in pushed])])))
        pop_loop.body.insert(0, compat.assign(popped, compat.call(compat.attr(compat.name(merged), "pop"))))
        first = members[0][1]
        fn_def.body = [s for s in fn_def.body if not any(s is m[1] for m in members[1:])]
        first.targets[0].id = merged
        for t in handed:
            store = isinstance(t.ctx, gast.Store)
            kept = [e for e in t.elts if not (isinstance(e, gast.Name) and e.id in names)]
            if len(kept) != len(t.elts):
                t.elts = kept + [compat.name(merged, store=store)]


def _handed_tuples(forward, backward) -> list:
    """The tuple of saved values ``forward`` pushes or returns last and ``backward`` unpacks first, or []."""
    if backward is None or not forward.body or not backward.body:
        return []
    last = forward.body[-1]
    first = backward.body[0]
    saved = None
    if isinstance(last, gast.Return) and isinstance(last.value, gast.Tuple) and len(last.value.elts) == 2 \
            and isinstance(last.value.elts[1], gast.Tuple):
        saved = last.value.elts[1]  # returned_saves: ``return result, (...)``
    elif len(forward.body) >= 2 and isinstance(forward.body[-2], gast.Expr) \
            and isinstance(forward.body[-2].value, gast.Call) and len(forward.body[-2].value.args) == 1 \
            and isinstance(forward.body[-2].value.args[0], gast.Tuple):
        saved = forward.body[-2].value.args[0]
    if saved is None or not (isinstance(first, gast.Assign) and len(first.targets) == 1
                             and isinstance(first.targets[0], gast.Tuple)):
        return []
    return [saved, first.targets[0]]


class _Steps:
    """Every push at the top of a loop's body and every pop in a statement of one, by list, read in one walk
    of the scopes (a walk per list cost a stencil's lowering a tenth of its time)."""

    def __init__(self, scopes):
        self.pushes: dict = {}
        self.pops: dict = {}
        self.exits: dict = {}
        for scope in scopes:
            for loop in gast.walk(scope):
                if isinstance(loop, (gast.For, gast.While)):
                    self._read(loop)

    def _read(self, loop) -> None:
        for stmt in loop.body:
            pushed = None
            call = stmt.value if isinstance(stmt, gast.Expr) else None
            if isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute) and call.func.attr == "append" \
                    and isinstance(call.func.value, gast.Name) and len(call.args) == 1 and not call.keywords:
                pushed = call.func.value.id
                self.pushes.setdefault(pushed, []).append((loop, stmt))
            if isinstance(stmt, (gast.For, gast.While)):
                continue
            for field, value in gast.iter_fields(stmt):
                if field in ("body", "orelse", "finalbody"):
                    continue
                for node in (value if isinstance(value, list) else [value]):
                    if not isinstance(node, gast.AST):
                        continue
                    for n in compat.walk(node):
                        if isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == "pop" \
                                and isinstance(n.func.value, gast.Name) and not n.args and n.func.value.id != pushed:
                            self.pops.setdefault(n.func.value.id, []).append((loop, n))  # a push's own list: not
                            # a pop of it (a push of one list may pop another)

    def _exits(self, loop) -> bool:
        """Whether ``loop``'s body has a break, continue or return (at any depth)."""
        found = self.exits.get(id(loop))
        if found is None:
            found = self.exits[id(loop)] = any(isinstance(n, (gast.Break, gast.Continue, gast.Return))
                                               for s in loop.body for n in compat.walk(s))
        return found

    def push_and_pop(self, name):
        """``(loop, push statement, reverse loop, pop call)`` where ``name`` is pushed once at the top of one
        loop's body and popped once at the top of another's (no break, continue or return in either), else
        None."""
        pushes, pops = self.pushes.get(name, []), self.pops.get(name, [])
        if len(pushes) != 1 or len(pops) != 1:
            return None
        (push_loop, push), (pop_loop, pop_call) = pushes[0], pops[0]
        if push_loop is pop_loop or push_loop.orelse or pop_loop.orelse:
            return None
        if self._exits(push_loop) or self._exits(pop_loop):
            return None
        return push_loop, push, pop_loop, pop_call


def _replace_node(tree, old, new) -> None:
    """Put ``new`` where ``old`` is in ``tree`` (one place)."""
    for node in gast.walk(tree):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
                return
            if isinstance(value, list):
                for k, item in enumerate(value):
                    if item is old:
                        value[k] = new
                        return
