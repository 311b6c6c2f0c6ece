"""Checkpointing of a loop marked ``for t in astgrad.checkpointed(iterable):``, square-root or binomial.

The primal sweep runs the loop in segments of ``every`` steps (about the
square root of their number) as the user wrote it, saving nothing but the
loop's *state* at the start of each segment: the values of the names the
body reads before it writes them (and once, before the loop, the saved
names it overwrites).
The adjoint sweep takes the segments last first: it binds the names to the
segment's state, runs the segment's steps again as the ordinary primal
sweep does (pushing what each step's adjoint reads), then their adjoints.
Memory: the states of n / every segments plus the saves of one segment's
steps, ``2 sqrt(n)`` steps' worth for the default; time: one more forward
run of the loop.

With ``snapshots=s`` the forward sweep is the same, its segments cut by
Griewank's binomial schedule (runtime checkpoints.Binomial), and the
adjoint sweep reverses one step at a time: it takes the newest state kept
back (a copy: it may be taken again), runs on from it, keeping the states
the schedule says, then runs the step with its saves and its adjoint.
Memory: s states and one step's saves; time: the fewest steps run again
for s states.

The steps run without saves (the forward sweep's, the runs between kept
states) and the step run again with its saves let each value go once the
step has read it (``released``: ``t3 = None`` after its last read), as the
user's Python lets a temporary go: only names no later step, no code after
the loop and no adjoint read, else a step would hold all its intermediates
to the next one (S1's heat stencil: 10 arrays at the peak with two states
against the primal's 3, now 6).

It is exact because the names keep their values: the state holds the
arrays themselves (an item write in normal form makes a new array,
``setitem``) and copies of dicts and lists (``put`` writes a dict in
place), and the steps run again compute what they computed.  What
would break that is refused: a ``break`` (normalize.py), a list the body
appends to in place (its items would be appended twice), random numbers
(reruns.random_use at transform time, checkpoints.fixed_state on
the state at run time).
"""

from __future__ import annotations

import dataclasses

from ...rules import sequences
from ..front import primitives
from ..ir import compat
from ..ir.compat import gast
from ..ir.nodes import Break, For, If, Op, Raw, While, atom_names, op_reads, walk_ops, walk_statements
from ..ir.tagged import pop, popped_into, push, pushed
from ..runtime import caller_state, checkpoints, reruns
from ..runtime.origins import ORIGIN, with_origin


def primal(rev, s):
    """The loop run segment by segment with no saves but each segment's state; the segments and states pushed."""
    dead = _dead_after_steps(rev, s)  # released as a step passes them, as the user's Python does
    if not rev.needed(s):  # nothing of it reaches the adjoint
        return [compat.for_stmt(s.target, compat.clone(s.iter), released(plain(rev, s.body), dead)
                                or [compat.make("Pass")])]
    _refuse(rev, s)
    for op in walk_ops(s.body):  # the callees' pairs made now: the adjoint's sweeps of the body may be undone
        if op.kind == "call" and rev.an.is_active(op):
            rev.call_variant(op)
    ns, names = rev.ns, rev.names
    state, entry = loop_state(rev, s)
    rev.bound_first.update(state)  # a name the body reads after writing it on one path only
    parts, states, part = names.fresh("_segments"), names.fresh("_states"), names.fresh("_segment")
    if s.snapshots is None:
        helper, given = compat.name(ns.bind(checkpoints.segments, "segments")), [compat.clone(s.every)]
    else:
        helper = compat.name(ns.bind(checkpoints.binomial, "binomial"))
        given = [compat.clone(s.every), compat.clone(s.snapshots)]
    keep = [rev.fixed_state([compat.name(v) for v in state], f"the state of the checkpointed loop at line {s.line}"),
            compat.expr_stmt(compat.call(compat.attr(compat.name(states), "append"),
                                         [rev.kept([compat.name(v) for v in state])]))]
    inner = compat.for_stmt(s.target, compat.name(part), released(plain(rev, s.body), dead))
    kept = [push(ns.stack, compat.tuple_([compat.name(v) for v in entry]))] if entry else []
    schedule = with_origin(compat.assign(parts, compat.call(helper, [compat.clone(s.iter)] + given)),
                           rev.plan.source.filename, s.line, s.text)  # a bad every= or snapshots= names the loop
    return kept + [schedule,
            compat.assign(states, compat.make("List", elts=[], ctx=gast.Load())),
            compat.for_stmt(part, compat.name(parts), keep + [inner]),
            push(ns.stack, compat.tuple_([compat.name(parts), compat.name(states)]))]


def adjoint(rev, s, live):
    """Each segment, last first: its state bound again, its steps run with their saves, then their adjoints."""
    if s.snapshots is not None:
        return binomial_adjoint(rev, s, live)
    ns, names = rev.ns, rev.names
    state, entry = loop_state(rev, s)
    before, body = rev.loop_body(s.body, live)
    parts, states, part, k = (names.fresh(n) for n in ("_segments", "_states", "_segment", "_k"))
    inner = dataclasses.replace(s, iter=compat.name(part), every=None)
    rerun, body = _saves_read(rev, rev.primal_for(inner), body, state, s.target)
    rerun = _released_steps(rerun, _releasable(rev, s, state) - _names_in(body))
    steps = compat.call(compat.name(ns.bind(reversed, "reversed")), [compat.name(part)])
    back = [compat.for_stmt(s.target, steps, body)]
    if s.target in rev.an.saved:
        back.append(compat.assign(s.target, pop(ns.stack)))
    restore = compat.call(compat.attr(compat.name(states), "pop"), [])
    segment = [compat.assign(part, compat.make("Subscript", value=compat.name(parts), slice=compat.name(k),
                                               ctx=gast.Load()))]
    if state:
        segment.append(compat.assign(list(state), restore))
    else:
        segment.append(compat.expr_stmt(restore))
    count = compat.call(compat.name(ns.bind(len, "len")), [compat.name(parts)])
    every = compat.call(compat.name(ns.bind(range, "range")), [count])
    order = compat.call(compat.name(ns.bind(reversed, "reversed")), [every])
    kept = [compat.assign(list(entry), pop(ns.stack))] if entry else []
    return ([compat.assign([parts, states], pop(ns.stack))] + before
            + [compat.for_stmt(k, order, segment + rerun + back)] + kept)


def binomial_adjoint(rev, s, live):
    """Each step, last first, as the schedule says (runtime checkpoints.Binomial): the newest state kept bound
    again (copied: it may be taken again), the runs from it, keeping the states they reach when it says so,
    then the step run with its saves and its adjoint."""
    ns, names = rev.ns, rev.names
    state, entry = loop_state(rev, s)
    before, body = rev.loop_body(s.body, live)
    schedule, states, drops, runs, run, keep, step, part = (names.fresh(n) for n in (
        "_segments", "_states", "_drops", "_runs", "_run", "_keep", "_step", "_segment"))
    restore = compat.call(compat.name(ns.bind(checkpoints.restored, "restored")),
                          [compat.name(states), compat.name(drops)])
    forget = _forgotten(rev, s, state)  # the values the last step's adjoint read, and the forward sweep's last
    task = forget + [compat.assign(list(state), restore) if state else compat.expr_stmt(restore)]
    store = compat.expr_stmt(compat.call(compat.attr(compat.name(states), "append"),
                                         [rev.kept([compat.name(v) for v in state])]))
    advance = compat.for_stmt(s.target, compat.name(run), released(plain(rev, s.body), _releasable(rev, s, state))
                              or [compat.make("Pass")])
    task.append(_for_each((run, keep), compat.name(runs), [advance, compat.if_stmt(compat.name(keep), [store])]))
    task.append(compat.assign(part, compat.make("List", elts=[compat.name(step)], ctx=gast.Load())))
    rerun, body = _saves_read(rev, rev.primal_for(dataclasses.replace(s, iter=compat.name(part), every=None,
                                                                       snapshots=None)), body, state, s.target)
    # what the step computes that its adjoint does not read: let go as the step passes it
    task += _released_steps(rerun, _releasable(rev, s, state) - _names_in(body))
    # the step's adjoint's own names too (dt1 = ...: held, dead, from the last step's adjoint through the runs)
    dead = _set_first(body) - _names_in(task) - set(state) - {s.target}
    steps = compat.call(compat.name(ns.bind(reversed, "reversed")), [compat.name(part)])
    task.append(compat.for_stmt(s.target, steps, body))
    if s.target in rev.an.saved:
        task.append(compat.assign(s.target, pop(ns.stack)))
    task[:0] = _cleared(dead)
    order = compat.call(compat.name(ns.bind(checkpoints.backward, "backward")), [compat.name(schedule)])
    out = [compat.assign([schedule, states], pop(ns.stack))] + before + [_for_each((drops, runs, step), order, task)]
    return out + ([compat.assign(list(entry), pop(ns.stack))] if entry else [])


def _set_first(stmts) -> set:
    """The names a top-level assignment of ``stmts`` sets before any statement reads them: each run of
    ``stmts`` sets them before it reads them, and leaves them set, so their values before it are never read."""
    read: set = set()
    found: set = set()
    for st in stmts:
        loads = {n.id for n in compat.walk(st) if isinstance(n, gast.Name) and not isinstance(n.ctx, gast.Store)}
        if isinstance(st, gast.Assign):
            for target in st.targets:
                elts = target.elts if isinstance(target, gast.Tuple) else [target]
                found |= {t.id for t in elts if isinstance(t, gast.Name)} - read - loads
        read |= loads
    return found


def _names_in(stmts):
    return {n.id for st in stmts for n in compat.walk(st) if isinstance(n, gast.Name)}


def _cleared(names) -> list:
    """``a = b = None`` for ``names`` (sorted), nothing for none."""
    if not names:
        return []
    return [compat.make("Assign", targets=[compat.name(n, store=True) for n in sorted(names)], value=compat.const(None))]


def _forgotten(rev, s, state) -> list:
    """``t1 = t2 = ... = None`` for the names the body writes before it reads them, before a step runs again
    with its saves: their values (the runs', or the forward sweep's last step's) would be pushed and held
    through the step's adjoint, which pops them only to have the next step's runs overwrite them; the
    values before the loop, which the adjoint of the code before it may read, come back from ``entry``."""
    return _cleared(_written(rev, s, state))


def _written(rev, s, state) -> set:
    """The locals the body writes before it reads them (not the state, not the loop's target): a step's values
    of them are read in that step only."""
    written = {t for op in walk_ops(s.body) for t in op.targets} | _loop_targets(s.body)
    return written & rev.an.locals - set(state) - {s.target}


def _releasable(rev, s, state) -> set:
    """The names ``_written`` gives that no closure or generator reads (a lambda made in the step may be called
    after the step's last read of a name it reads) and no statement kept as written names: a step may let
    them go once it has read them (``released``) if nothing after the step reads them."""
    captured = set()
    for x in _walk(rev.plan.body):
        if isinstance(x, Op):
            deferred = [n for n in compat.walk(x.expr) if isinstance(n, _DEFERRED)]
            captured |= {n.id for d in deferred for n in compat.walk(d) if isinstance(n, gast.Name)}
        elif isinstance(x, Raw):
            captured |= _names_in([x.stmt] + ([x.adjoint] if x.adjoint is not None else []))
    return _written(rev, s, state) - captured


def _dead_after_steps(rev, s) -> set:
    """The names ``_releasable`` gives that nothing outside the loop names (the code after it, its adjoint, the
    value returned): the forward sweep's values of them are dead once the step that made them has read them."""
    state, _ = loop_state(rev, s)
    inside = {id(x) for x in _walk(s.body)}
    named = set(atom_names(rev.plan.ret)) | set(atom_names(rev.plan.pair))
    for x in _walk(rev.plan.body):
        if id(x) not in inside and x is not s:
            named |= _statement_names(x)
    named |= set(atom_names(s.iter)) | set(atom_names(s.every)) | set(atom_names(s.snapshots))
    return _releasable(rev, s, state) - named


#: expressions whose names are read later than where they stand, or in a scope of their own
_DEFERRED = (gast.Lambda, gast.GeneratorExp, gast.ListComp, gast.SetComp, gast.DictComp)


def _statement_names(x) -> set:
    """The names an IR statement itself reads or writes (not those of the blocks nested in it)."""
    if isinstance(x, Op):
        return set(op_reads(x)) | set(atom_names(x.expr)) | set(x.targets)
    if isinstance(x, If):
        return {x.test}
    if isinstance(x, For):
        return ({x.target} | set(atom_names(x.iter)) | set(atom_names(x.every)) | set(atom_names(x.snapshots)))
    if isinstance(x, While):
        return {x.test}
    return set()


def released(stmts, names) -> list:
    """``stmts`` with ``a = b = None`` after the statement that last names each of ``names`` (at the top level;
    a nested block counts as its statement): a value no later statement reads is let go as the user's
    Python lets a temporary go, not held to the end of the step.  ``names`` must hold only names whose
    values after ``stmts`` nothing reads.  A push stays next to the statements around it (``t = setitem(y, i,
    v); _stack.append(y); y = t``, which passes/saves.py reads as one write): what would be let go before it
    is let go after the statement that follows it.  A view of a name's slice (``t1 = u[1:-1]``) is let go at the
    end: it holds no values of its own, and passes/slice_views.py reads a later ``u[1:-1]`` through it."""
    last: dict = {}
    views = _views(stmts)
    for i, st in enumerate(stmts):
        for n in _names_in([st]) & set(names):
            last[n] = len(stmts) - 1 if n in views else i
    out, pending = [], set()
    for i, st in enumerate(stmts):
        out.append(st)
        pending |= {n for n, j in last.items() if j == i}
        if pending and not (i + 1 < len(stmts) and (pushed(stmts[i + 1]) is not None or pushed(st) is not None)):
            out += _cleared(pending)
            pending = set()
    return out + _cleared(pending)


def _saves_read(rev, stmts, body, state, target) -> tuple[list, list]:
    """``stmts`` (a step run again with its saves) and its adjoint ``body`` without the pushes and pops of a
    name ``body`` pops but never reads (``t1`` of ``x + 0.01 * np.tanh(...)``, whose adjoint a fused
    expression computes without it): passes/cleanup.py's drop_unread_saves drops them from a loop's saves,
    but it reads the step run again as adjoint code, which reads ``t1``.  Not the loop's state (the name
    popped last holds the value from before the loop, which the adjoint of the code before it may read)
    nor its ``target``; the other names the body writes come back from before the loop (``entry``).
    (Pushing ``only_shape(t)`` of a name ``body`` reads only as ``shape(t)`` would keep less again, but
    costs the making of a Shaped a step: 2% to 5% more time for a 100-entry state, so it stays whole.)"""
    read: set = set()
    popped: set = set()
    for st in body:
        for n in compat.walk(st):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Load):
                read.add(n.id)
            popped.add(popped_into(n))
    unread = popped - read - set(state) - {target, None}
    return _without_saves(stmts, unread), _without_saves(body, unread)


def _without_saves(stmts, names) -> list:
    """``stmts`` without the pushes of ``names`` and the pops into them, in every block."""
    out = []
    for st in stmts:
        value = pushed(st)
        if popped_into(st) in names or isinstance(value, gast.Name) and value.id in names:
            continue
        for field in ("body", "orelse"):
            inner = getattr(st, field, None)
            if isinstance(inner, list) and inner:
                setattr(st, field, _without_saves(inner, names) or [compat.make("Pass")])
        out.append(st)
    return out


def _views(stmts) -> set:
    """The names a statement of ``stmts`` binds to a slice of literal ints of a name (``t1 = u[1:-1]``)."""
    found = set()
    for st in stmts:
        if isinstance(st, gast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], gast.Name) \
                and isinstance(st.value, gast.Subscript) and isinstance(st.value.value, gast.Name):
            index = st.value.slice
            parts = index.elts if isinstance(index, gast.Tuple) else [index]
            if all(isinstance(p, gast.Slice) and all(b is None or _literal_int(b) for b in (p.lower, p.upper, p.step))
                   or _literal_int(p) for p in parts):
                found.add(st.targets[0].id)
    return found


def _literal_int(node) -> bool:
    if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.USub):
        node = node.operand
    return isinstance(node, gast.Constant) and type(node.value) is int


def _released_steps(stmts, names) -> list:
    """``stmts`` (a step's loop run again with its saves, as primal_for makes it) with the loop's body
    ``released``."""
    for st in stmts:
        if isinstance(st, gast.For):
            st.body = released(st.body, names)
    return stmts


def _for_each(targets, iterable, body):
    """``for a, b in iterable: body``."""
    target = compat.make("Tuple", elts=[compat.name(t, store=True) for t in targets], ctx=gast.Store())
    return compat.make("For", target=target, iter=iterable, body=list(body), orelse=[])


def loop_state(rev, s) -> tuple[list[str], list[str]]:
    """The names each segment's steps need bound as they were (read before written in the body), and the
    saved names the body writes that are not among them, which need their values from before the loop
    only: each segment's pops put back what its steps run again pushed, and the last segment undone
    must leave them as the loop found them, for the adjoint of the code before it."""
    locals_ = rev.an.locals | set(rev.plan.params)
    exposed = _exposed(s.body, set(), locals_) - {s.target}
    written = {t for op in walk_ops(s.body) for t in op.targets} | _loop_targets(s.body)
    saved = (written | {s.target}) & rev.an.saved
    return sorted(exposed), sorted(saved - exposed)


def _exposed(stmts, defined, locals_) -> set:
    """Names ``stmts`` may read before they write them (``defined``: written on every path so far; updated)."""
    found = set()
    for s in stmts:
        if isinstance(s, Op):
            found |= (set(op_reads(s)) | set(atom_names(s.expr))) & locals_ - defined
            defined.update(s.targets)
        elif isinstance(s, If):
            found |= {s.test} & locals_ - defined
            left, right = set(defined), set(defined)
            found |= _exposed(s.body, left, locals_) | _exposed(s.orelse, right, locals_)
            defined.update(left & right)
        elif isinstance(s, For):
            found |= set(atom_names(s.iter)) & locals_ - defined
            found |= set(atom_names(s.every)) & locals_ - defined if s.every is not None else set()
            found |= set(atom_names(s.snapshots)) & locals_ - defined if s.snapshots is not None else set()
            found |= _exposed(s.body, set(defined) | {s.target}, locals_)
        elif isinstance(s, While):
            inner = set(defined)
            found |= _exposed(s.cond, inner, locals_)
            found |= _exposed(s.body, inner, locals_)
        elif isinstance(s, Raw):
            found |= {n.id for n in compat.walk(s.stmt) if isinstance(n, gast.Name)} & locals_ - defined
    return found


def _loop_targets(stmts) -> set:
    return {x.target for x in _walk(stmts) if isinstance(x, For)}


def _walk(stmts):
    for s in stmts:
        yield s
        for block in ([s.body, s.orelse] if isinstance(s, If) else [s.body] if isinstance(s, For)
                      else [s.cond, s.body] if isinstance(s, While) else []):
            yield from _walk(block)


def plain(rev, stmts) -> list:
    """``stmts`` as the user's code runs them: no saves, calls of user functions as written."""
    out = []
    for s in stmts:
        if isinstance(s, Op):
            target = s.targets if s.kind == "unpack" else s.targets[0]
            out.append(compat.assign(target, compat.clone(s.expr)))
            setattr(out[-1], ORIGIN, (rev.plan.source.filename, s.line, s.text, False))
        elif isinstance(s, If):
            out.append(compat.if_stmt(compat.name(s.test), plain(rev, s.body) or [compat.make("Pass")],
                                      plain(rev, s.orelse)))
        elif isinstance(s, For):
            out.append(compat.for_stmt(s.target, compat.clone(s.iter), plain(rev, s.body) or [compat.make("Pass")]))
        elif isinstance(s, While):
            test = compat.name(s.test)
            out += plain(rev, s.cond)
            out.append(compat.while_stmt(test, plain(rev, s.body) or [compat.make("Pass")]))
        elif isinstance(s, Break):
            out.append(compat.make("Break"))
        elif isinstance(s, Raw):
            out.append(with_origin(s.stmt, rev.plan.source.filename, s.line, s.text))
    return out


def _refuse(rev, s):
    """A list the body grows in place, random numbers it draws, or a write into state the caller keeps: the steps
    run again would not be the same, or would write twice."""
    put_kept = rev.ns.name_of(caller_state.put_kept)
    for st in walk_statements(s.body):
        into_dict = isinstance(st, Op) and isinstance(st.expr, gast.Call) and isinstance(st.expr.func, gast.Name) \
            and st.expr.func.id == put_kept
        if into_dict or isinstance(st, Raw) and st.kept is not None:
            raise rev.plan.source.error(st.node if isinstance(st, Op) else st.kept[2], "a checkpointed loop writes into a dict or object its caller keeps: "
                                        "its steps run again in the reverse sweep would write again, reading what "
                                        "the first run wrote", "Move the write out of the loop, or drop "
                                        "astgrad.checkpointed from this loop.")
    for op in walk_ops(s.body):
        if id(op) in rev.plan.grown or op.fn is sequences.append:
            raise rev.plan.source.error(op.node, "a checkpointed loop appends to a list, which its steps run again "
                                        "in the reverse sweep would append to twice",
                                        "Write the items into a preallocated array (out[t] = v), or drop "
                                        "astgrad.checkpointed from this loop.")
        user = op.fn is not None and not reruns.library(op.fn)  # run as written or differentiated: run again
        why = reruns.random_use(op.fn) if op.kind == "call" or user else None
        why = why or _random_primitive(op)
        if why is not None:
            raise rev.plan.source.error(op.node, f"a checkpointed loop draws random numbers ({why}): its steps run "
                                        "again in the reverse sweep would draw other ones",
                                        "Draw the random numbers before the loop and index them in it.")
        wrote = reruns.state_writes(op.fn) if user else None
        if wrote is not None:
            raise rev.plan.source.error(op.node, f"a checkpointed loop calls a function that may write state its "
                                        f"call does not return ({wrote}): its steps run again in the reverse sweep "
                                        "would write it again and read what the first run wrote",
                                        "Make the function return what it computes and write nothing else, or "
                                        "drop astgrad.checkpointed from this loop.")


def _random_primitive(op):
    fn = op.fn
    if fn is None:
        return None
    module = getattr(fn, "__module__", None) or ""
    owner = getattr(fn, "__self__", None)
    if module.split(".")[0] == "random" or module.startswith("numpy.random") \
            or isinstance(owner, checkpoints.GENERATORS) or fn in primitives.RANDOM_STATE:
        return getattr(fn, "__qualname__", getattr(fn, "__name__", "a random function"))
    return None
