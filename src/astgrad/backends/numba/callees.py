"""Each callee's forward/backward pair pushes on a stack of its own under backend="numba".

The numpy module passes one stack through every call: a callee's forward
function pushes what its backward function pops.  Numba types a list as a
list of one type, and the entry's loop counters, a callee's saved tuple and
another callee's saved arrays are of different types.  The pushes of one
pair are popped only by that pair, last in first out, so the subsequence of
one pair's pushes and pops is last in first out on its own: each pair gets
its own list, made by the entry and passed to every function (the
callees are inlined into the entry, see ``compiled``, so Numba types each
list from the pushes it sees there).  ``returned_saves`` then rewrites that
form, where it can, so that no list is passed between functions: each
callee may then be compiled once, apart, and called.
"""

from __future__ import annotations

from ...transform.ir import compat
from ...transform.ir.compat import gast
from ...transform.ir.trees import is_marker
from ...transform.runtime.origins import keep_origin


def own_stacks(functions, stack, pairs) -> tuple[dict, list]:
    """Rewrite ``functions`` (the entry first) so each (forward, backward) name pair has its own stack list.

    Returns each pair's function names to its list's name (None: the pair saves nothing), and the lists'
    names in the order every callee of a pair that saves takes them after its own stack.
    """
    present = {f.name: f for f in functions}
    pairs = [(forward, backward) for forward, backward in pairs if forward in present or backward in present]
    if not pairs:
        return {}, []
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
    return stack_of, extra


def _pushes(fn_def, stack) -> bool:
    """Whether ``fn_def`` pushes on its stack (``_stack.append(...)``)."""
    return fn_def is not None and any(
        isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute) and n.func.attr == "append"
        and isinstance(n.func.value, gast.Name) and n.func.value.id == stack for n in gast.walk(fn_def))


_WRAPPERS = ("only_shape", "saved_value")
#: the key of the branch records: ``_stack.append(t2)`` right after ``if t2:``, popped by ``if _stack.pop():``
_BRANCHES = "<branches>"  # no variable's name
_TRIPS = "<trips>"  # the trips a loop left by break, or a while loop, ran: pushed after it, popped in its reverse's header


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
        own = _split(pushes, pops, uses + more_uses == len(pushes) + len(pops) + 4, taken, stack, least=1)
        if not own:
            continue
        forward.body[:0] = [compat.assign(compat.name(name, store=True), compat.make("List", elts=[], ctx=gast.Load()))
                            for name in own.values()]
        push.value.args[0].elts += [compat.name(name) for name in own.values()]
        pop.targets[0].elts += [compat.name(name, store=True) for name in own.values()]


def _split(pushes, pops, only_these, taken, stack, least=2) -> dict:
    """Each saved variable's own list name (key -> name), the pushes and pops renamed; {} where not split (fewer
    than ``least`` variables: the entry's one variable keeps the stack it has)."""
    pushed = {key for _, key in pushes}
    popped = {key for _, key in pops}
    if not only_these or None in pushed or None in popped or pushed != popped or len(pushed) < least:
        return {}
    counts = {key: [0, 0] for key in pushed}
    for _, key in pushes:
        counts[key][0] += 1
    for _, key in pops:
        counts[key][1] += 1
    if any(counts.get(key, [0, 0])[0] != counts.get(key, [0, 0])[1] for key in (_BRANCHES, _TRIPS)):
        return {}  # branch records and trip counts are told apart by their place: as many pushed as popped, or leave it
    own = {}
    for key in sorted(pushed):
        candidate = f"{stack}_{'branches' if key == _BRANCHES else 'trips' if key == _TRIPS else key}"
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
                    pushes.append((stmt.value, _branch_record(before, stmt.value) or _trip_count(before, stmt.value)
                                   or _saved_name(stmt.value)))
                elif isinstance(stmt, gast.If) and _is_method(stmt.test, stack, "pop") and not stmt.test.args:
                    pops.append((stmt.test, _BRANCHES))
                elif isinstance(stmt, gast.For):
                    counted = [n for n in gast.walk(stmt.iter) if _is_method(n, stack, "pop") and not n.args]
                    if len(counted) == 1:  # range(_stack.pop()), range(last_of_range(a, b, s, _stack.pop()), ...)
                        pops.append((counted[0], _TRIPS))
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


def _trip_count(before, push):
    """``_TRIPS`` for ``_stack.append(_trips)`` right after the loop that counted them, else None."""
    if isinstance(before, (gast.For, gast.While)) and len(push.args) == 1 and isinstance(push.args[0], gast.Name) \
            and push.args[0].id.startswith("_trips"):
        return _TRIPS
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


def returned_saves(functions, stack, pairs, stack_of, extra) -> bool:
    """Rewrite the callees so each can be compiled once, as a function of its own, and called; False (nothing
    changed) where the module is not of the form this needs, and the callees stay inlined into the entry.

    Inlined, a callee is typed, lowered and optimised again at each call:
    RK4's right-hand side four times a step, its gradient four times more,
    which was most of that gradient's compile.  What kept it inlined is the
    stack a pair shares (``own_stacks``): a list Numba types only from the
    pushes it sees in the function that made it.  Here the forward function
    returns what it saved beside its result, ``return result, (a, b)``, and
    its caller pushes that on a list of its own, one per callee pair and
    calling function (``t, s = forward_f(x); _saves_forward_f.append(s)``);
    the backward function takes it as its first argument
    (``backward_f(_saves_forward_f.pop(), g)``) in place of its pop.  A
    forward function's own lists of callee saves go into the tuple it
    returns, as its other lists do (``callee_stacks_per_name``), so its
    backward function pops from the same lists.

    The order of the values is the stack's: a pair's pushes and pops are
    last in first out on their own, and so are those made by one call of
    one function, which are all the list of that call holds.
    """
    if len(functions) < 2 or not stack_of or any(f.name not in stack_of for f in functions[1:]):
        return False
    forward_of = {}  # a pair's function name -> its forward function's name
    pair_of = {}  # forward name -> backward name
    for forward, backward in pairs:
        if forward in stack_of:
            forward_of[forward] = forward_of[backward] = forward
            pair_of[forward] = backward
    if any(name not in forward_of for name in stack_of):
        return False
    new = compat.clone(list(functions))
    present = {f.name: f for f in new}
    taken = {n.id for f in new for n in gast.walk(f) if isinstance(n, gast.Name)} | set(present)
    saves = _unique("_saves", taken)  # what a call of a forward function saved
    argument = _unique("_saved", taken)  # a backward function's parameter: what its forward's call saved

    def list_name(caller, forward) -> str:
        """The list holding what ``forward``'s calls in ``caller`` (or in its forward function) saved."""
        key = (forward_of.get(caller, caller), forward)
        if key not in lists:
            lists[key] = _unique(f"_saves_{forward}", taken)
        return lists[key]
    lists: dict = {}
    made: dict = {}  # function name -> the lists it makes (pushes on)
    popped: dict = {}  # function name -> the lists it pops from
    for fn_def in new:
        counter = [0]
        if not _calls_to_returned_saves(fn_def, fn_def.body, present, stack_of, extra, forward_of, saves,
                                        counter, lambda f, c=fn_def.name: list_name(c, f), made, popped):
            return False
    # the callees' own stacks: the forward's last push becomes its return, the backward's first pop its argument
    for fn_def in new[1:]:
        own = stack_of[fn_def.name]
        fn_def.args.args = fn_def.args.args[1 + (len(extra) if own is not None else 0):]
        if own is None:
            if made.get(fn_def.name) or popped.get(fn_def.name):
                return False  # a pair that saves nothing of its own around calls of one that does
            continue
        if fn_def.name in pair_of:
            push, ret = fn_def.body[-2], fn_def.body[-1]
            if sum(isinstance(n, gast.Return) for n in gast.walk(fn_def)) != 1 or not (isinstance(push, gast.Expr) and _is_method(push.value, stack, "append")
                    and len(push.value.args) == 1 and isinstance(push.value.args[0], gast.Tuple)
                    and isinstance(ret, gast.Return) and ret.value is not None):
                return False
            saved = push.value.args[0]
            saved.elts += [compat.name(n) for n in made.get(fn_def.name, [])]
            fn_def.body[-2:] = [keep_origin(ret, compat.ret(compat.tuple_([ret.value, saved])))]
            fn_def.body[:0] = [compat.assign(n, compat.make("List", elts=[], ctx=gast.Load()))
                               for n in made.get(fn_def.name, [])]
        else:
            pop = fn_def.body[0] if fn_def.body else None
            if not (isinstance(pop, gast.Assign) and len(pop.targets) == 1 and isinstance(pop.targets[0], gast.Tuple)
                    and _is_method(pop.value, stack, "pop") and not pop.value.args):
                return False
            forward = forward_of[fn_def.name]
            pop.targets[0].elts += [compat.name(n, store=True) for n in made.get(forward, [])]
            pop.value = compat.name(argument)
            fn_def.args.args.insert(0, compat.make("Name", id=argument, ctx=gast.Param(), annotation=None,
                                                   type_comment=None))
            if made.get(fn_def.name) or set(popped.get(fn_def.name, ())) - set(made.get(forward, ())):
                return False  # calls a forward function (a recomputation), or pops what its forward did not save
    entry = new[0]
    if set(popped.get(entry.name, ())) - set(made.get(entry.name, ())):
        return False
    entry.body = [s for s in entry.body if not (isinstance(s, gast.Assign) and len(s.targets) == 1
                                                and isinstance(s.targets[0], gast.Name) and s.targets[0].id in extra)]
    entry.body[:0] = [compat.assign(n, compat.make("List", elts=[], ctx=gast.Load())) for n in made.get(entry.name, [])]
    gone = set(extra)
    for fn_def in new:
        names = {n.id for n in gast.walk(fn_def) if isinstance(n, gast.Name)}
        if names & gone or (fn_def is not entry and stack in names):
            return False  # a list still shared between functions
    functions[:] = new
    return True


def _calls_to_returned_saves(fn_def, block, present, stack_of, extra, forward_of, saves, counter, list_name,
                             made, popped) -> bool:
    """``returned_saves``'s rewrite of the calls of generated functions in ``block`` (and the blocks in it)."""
    at = 0
    while at < len(block):
        stmt = block[at]
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt) and not \
                    _calls_to_returned_saves(fn_def, inner, present, stack_of, extra, forward_of, saves,
                                             counter, list_name, made, popped):
                return False
        calls = [n for n in gast.walk(stmt) if isinstance(n, gast.Call) and isinstance(n.func, gast.Name)
                 and n.func.id in present and n.func.id in stack_of]
        calls = [c for c in calls if not any(c is n for field in ("body", "orelse", "finalbody")
                                             for s in (getattr(stmt, field, None) or []) if isinstance(s, gast.AST)
                                             for n in gast.walk(s))]
        if not calls:
            at += 1
            continue
        if len(calls) != 1 or not isinstance(stmt, gast.Assign) or stmt.value is not calls[0] or len(stmt.targets) != 1:
            return False
        call = calls[0]
        callee = call.func.id
        own = stack_of[callee]
        call.args = call.args[1 + (len(extra) if own is not None else 0):]
        if own is None:
            at += 1
            continue
        forward = forward_of[callee]
        held = list_name(forward)
        if callee == forward:
            if not isinstance(stmt.targets[0], gast.Name):
                return False
            counter[0] += 1
            name = saves if counter[0] == 1 else f"{saves}_{counter[0]}"
            stmt.targets[0] = compat.make("Tuple", elts=[stmt.targets[0], compat.name(name, store=True)],
                                          ctx=gast.Store())
            push = keep_origin(stmt, compat.expr_stmt(compat.call(compat.attr(compat.name(held), "append"),
                                                                  [compat.name(name)])))
            block.insert(at + 1, push)
            made.setdefault(fn_def.name, [])
            if held not in made[fn_def.name]:
                made[fn_def.name].append(held)
            at += 2
            continue
        call.args.insert(0, compat.call(compat.attr(compat.name(held), "pop")))
        popped.setdefault(fn_def.name, []).append(held)
        at += 1
    return True


def _unique(name, taken) -> str:
    while name in taken:
        name += "_"
    taken.add(name)
    return name



def call_counts(functions) -> dict:
    """How many calls of each generated function the module writes (a callee written once is inlined where it is
    called: typed and optimised once either way, and not again inside its caller's machine code)."""
    names = {f.name for f in functions}
    counts: dict = {}
    for node in (n for f in functions for n in gast.walk(f)):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in names:
            counts[node.func.id] = counts.get(node.func.id, 0) + 1
    return counts


def single_saves(functions) -> None:
    """``backward_f(_saves, g)`` for ``backward_f(_saves_forward_f.pop(), g)`` where the list holds one call's saves.

    ``returned_saves`` gives each calling function a list per callee pair:
    ``_saves_forward_f = []`` first, ``_saves_forward_f.append(_saves)``
    after each call of the forward function, a pop at each call of the
    backward one.  Where the function's own body (outside its loops and
    branches, so each runs once, in order) appends once and pops once after
    it, and names the list nowhere else, the pop returns what was appended:
    ``_saves`` itself, bound once in the function.  Compiled, the list of a
    tuple of saves cost Numba a list type, its append and pop (RK4's
    entry: a tuple of 25 values, over 2,000 lines of unoptimised LLVM text).
    """
    for fn_def in functions:
        body = fn_def.body
        made = {s.targets[0].id: s for s in body if isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.List) and not s.value.elts}
        for name, made_at in made.items():
            uses = [n for n in gast.walk(fn_def) if isinstance(n, gast.Name) and n.id == name]
            appends = [s for s in body if isinstance(s, gast.Expr) and _is_method(s.value, name, "append")
                       and len(s.value.args) == 1 and not s.value.keywords and isinstance(s.value.args[0], gast.Name)]
            pops = [(s, n) for s in body for n in gast.walk(s) if _is_method(n, name, "pop") and not n.args
                    and not n.keywords]
            if len(uses) != 3 or len(appends) != 1 or len(pops) != 1 or isinstance(pops[0][0], _NESTED):
                continue
            append, (popping, pop) = appends[0], pops[0]
            if not body.index(made_at) < body.index(append) < body.index(popping):
                continue
            saved = append.value.args[0].id
            stores = [n for n in gast.walk(fn_def) if isinstance(n, gast.Name) and n.id == saved
                      and not isinstance(n.ctx, gast.Load)]
            if len(stores) != 1:
                continue
            _replace(popping, pop, compat.name(saved))
            body.remove(made_at)
            body.remove(append)


_NESTED = (gast.For, gast.While, gast.If, gast.With, gast.Try, gast.FunctionDef)


def _replace(stmt, old, new) -> None:
    """Put ``new`` where ``old`` (a node inside ``stmt``) is."""
    for node in gast.walk(stmt):
        for field, value in gast.iter_fields(node):
            if value is old:
                setattr(node, field, new)
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return
    raise AssertionError("the pop is not inside its statement")
