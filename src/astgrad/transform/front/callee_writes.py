"""What a call the transform does not follow may write into outside its arguments, checked where it runs.

A call whose result reaches nothing differentiated (``reset()``,
``log.record(x)``, ``BOX.clear()``) is not transformed: the function runs as
written.  ``effects`` refuses such a call given a value that carries a
gradient when the function may write into it.  What it can also reach is
everything its code names without being given it: its module's globals,
its closure, ``self`` of a bound method, and what the caller gives it that
carries no gradient (a global of the caller's).  If one of those objects is,
or is inside, a differentiated argument (``G = x`` then ``G[:] = 0``), the
function reads the new values while the gradient is counted for the old
ones; if it is an array, the adjoint may read it after the write.  Neither
is known before the call runs, so the callee's source (and its callees',
transitively) is read at transform time for every object it may write into,
and the caller's generated code checks those objects just before the call
(``checks.written_by_call``).  A ``global`` (or ``nonlocal``) name
the callee rebinds that the differentiated function reads is refused at
transform time: the adjoint reads that name again after the call.

Long: reading a callee's source for every object it may write into is one
analysis over several doors (globals, closures, self, defaults, what it is
given, what it calls in turn); it is due to move with the other front-end
checks into ``front/``.
"""

from __future__ import annotations

import inspect
import sysconfig
import types
import weakref

from ..ir import compat
from . import numpy_writes
from ..ir.compat import gast
from .effects import _CHANGING, _numpy, _only_reads, _root, _stores_into, unseen_door
from ..ir.errors import UnsupportedSyntaxError
from .parse import _MISSING as _NO
from .parse import Dependencies, FunctionSource
from ..runtime.checks import CELL, GIVEN, GLOBAL, SELF, WHOLLY, callable_code, follow, stores_given

#: methods of arrays, lists and dicts that only read the object they are called on
_READING_METHODS = numpy_writes.READING_METHODS | {"get", "keys", "values", "items", "copy", "index", "count"}


class Plan:
    """What a call may write into: ``writes``, each ``(kind, where_found, steps, shown)``.

    ``steps`` is the path from the root object to the object written into,
    ``(("attr", name) | ("item", constant), ...)``, or None where it is not
    known (an index the callee computes, a function the object is given to,
    a name made from the root): then everything the root reaches is checked.
    """

    __slots__ = ("fn", "name", "writes")

    def __init__(self, fn, name, writes):
        self.fn, self.name, self.writes = fn, name, writes


def plan_call(fn, bound_self, given, caller, node, reads, dependencies):
    """The Plan of a call of ``fn`` (``bound_self`` for a method), given ``{parameter: i}`` (the caller's check
    is given that argument's object i-th), or None when the call writes into nothing outside.  Raises at
    ``node`` of ``caller`` (its FunctionSource) if ``fn`` rebinds a global the caller ``reads``."""
    roots = {param: (GIVEN, i, () if isinstance(i, int) else None) for param, i in given.items()}
    first = _first_parameter(fn)
    if bound_self is not None and first is not None:
        roots[first] = (SELF, None, ())
    writes: list = []
    _collect(fn, roots, bound_self, writes, set(), dependencies, (caller, node, reads), set(roots))
    if not writes:
        return None
    unique: dict = {}
    for w in writes:  # the same root reached twice is checked once
        unique.setdefault((w[0], (id(w[1][0]), w[1][1]) if w[0] == GLOBAL else id(w[1]) if w[0] == CELL else w[1], w[2]), w)
    return Plan(fn, getattr(fn, "__qualname__", "the function"), tuple(unique.values()))


def _first_parameter(fn):
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    return params[0].name if params and params[0].kind in (params[0].POSITIONAL_ONLY,
                                                           params[0].POSITIONAL_OR_KEYWORD) else None


def _collect(fn, roots, self_value, writes, seen, dependencies, caller, bound=None):
    """Add to ``writes`` what ``fn`` may write into through ``roots`` (``{parameter: (kind, where, steps)}``),
    its globals and closure, the defaults of the parameters the call does not bind (all but ``bound``), and the
    Python functions it calls (read in turn)."""
    if _library(fn):  # its own module's state is no user's array: only what the user's objects reach
        roots = {p: r for p, r in roots.items() if r[0] in (GIVEN, GLOBAL, CELL)}
        if not roots:
            return
    else:  # def clobber(buf=BOX): a default is one object, kept by the function, that every call without it sees
        roots = {**{p: (CELL, cell, ()) for p, cell in _default_cells(fn).items() if bound is not None
                    and p not in bound}, **roots}
    key = (fn, tuple(sorted((p, r[0], id(r[1]) if r[0] in (GLOBAL, CELL) else r[1], r[2]) for p, r in roots.items())))
    if key in seen:
        return
    if len(seen) > 200:  # too many functions to read: what it is given and names is checked wholly
        _unread(fn, roots, writes)
        return
    seen.add(key)
    try:
        source = FunctionSource(fn)
    except Exception:  # no source to read: whatever it is given or names may be written, wholly
        _unread(fn, roots, writes)
        return
    dependencies.update(source.dependencies)
    tree = source.tree
    declared = {n for s in gast.walk(tree) if isinstance(s, (gast.Global, gast.Nonlocal)) for n in s.names}
    stored = {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
              and isinstance(n.ctx, (gast.Store, gast.Param, gast.Del))}
    _rebinds(tree, source, declared, stored, caller)
    if not _library(fn):
        _refuse_unseen(tree, source, stored - declared, caller)
    aliases: dict = {}  # a name in fn -> (kind, where, steps to the object it holds, or None)
    library = _library(fn)
    for name in {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)}:
        if name in roots:
            kind, where, steps = roots[name]
            rebound = any(isinstance(n, gast.Name) and n.id == name and isinstance(n.ctx, (gast.Store, gast.Del))
                          for n in gast.walk(tree))
            aliases[name] = (kind, where, None if rebound else steps)
        elif not library and (name not in stored or name in declared):
            found = _outside(source, name)
            if found is not None:
                aliases[name] = found
    values = {name: _value_at_transform(root, self_value) for name, root in aliases.items()}
    _follow_aliases(tree, aliases)
    held = {n.targets[0].id: n.value.value for n in gast.walk(tree) if isinstance(n, gast.Assign)
            and len(n.targets) == 1 and isinstance(n.targets[0], gast.Name) and isinstance(n.value, gast.Attribute)
            and n.value.attr in _CHANGING}  # w = get_box().fill: a changing method kept in a name
    for node in gast.walk(tree):
        if isinstance(node, gast.Call) and isinstance(node.func, gast.Name) and node.func.id in held:
            owner = held[node.func.id]
            found = [_path(owner, aliases)] if _path(owner, aliases) is not None else \
                _returned(owner, aliases, source, stored - declared, caller)
            line = getattr(node, "lineno", 1)
            writes += [(*_wholly(f), f"{source.filename}:{line}: {source.lines[line - 1].strip()}") for f in found]
        for hit in _writes_of(node, aliases, values, source, stored - declared, writes, seen, dependencies, caller):
            line = getattr(node, "lineno", 1)
            writes.append((*hit, f"{source.filename}:{line}: {source.lines[line - 1].strip()}"))


_LIBRARY_PATHS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")})


_DEFAULTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _default_cells(fn) -> dict:
    """``{parameter: cell}`` holding each default of ``fn`` an object could be written into (not a number, a
    string, None or code): the runtime check reads it as it reads a closure's cell."""
    defaults = dict(zip(fn.__code__.co_varnames[fn.__code__.co_argcount - len(fn.__defaults__ or ()):
                                                fn.__code__.co_argcount], fn.__defaults__ or ()))
    defaults.update(fn.__kwdefaults__ or {})
    known = _DEFAULTS.setdefault(fn, {})
    cells = {}
    for name, value in defaults.items():
        if value is None or isinstance(value, (int, float, complex, str, bytes, bool, tuple, frozenset)) or _code(value):
            continue
        if name not in known or known[name].cell_contents is not value:
            known[name] = types.CellType(value)
        cells[name] = known[name]
    return cells


def _refuse_unseen(tree, source, local, caller):
    """Refuse a callee run as written that uses ``exec``, ``eval``, ``globals()``, ``vars()``, ``sys.modules``...:
    through them it may write into (or rebind) any object, where no name shows which."""
    for node in gast.walk(tree):
        why = unseen_door(node, source, local)
        if why is not None:
            caller_source, at, _ = caller
            line = getattr(node, "lineno", 1)
            raise caller_source.error(
                at, f"{getattr(source.fn, '__qualname__', 'the function')}(...) is run as written, and "
                f"{source.filename}:{line + source.first_line - 1}: {source.lines[line - 1].strip()}: {why}, so it "
                "may write into or rebind any object, where astgrad cannot see which; the gradient could miss "
                "the change", "Name the objects it changes directly, pass them in and return their new values "
                "(x = f(x)), or call the function outside the differentiated one.", UnsupportedSyntaxError)


def _library(fn) -> bool:
    """A function of the standard library or an installed package: what its module keeps (a logger's handlers,
    a cache) is not read for writes, only the objects of the user's it is given or reached through."""
    return fn.__code__.co_filename.startswith(_LIBRARY_PATHS)


def _outside(source, name):
    """``(kind, where, ())`` of a free name of the callee holding an object it could write into, or None."""
    if name in source.closure:
        try:
            value = source.closure[name].cell_contents
        except ValueError:
            return None
        return None if _code(value) else (CELL, source.closure[name], ())
    if name in source.globals:
        return None if _code(source.globals[name]) else (GLOBAL, (source.globals, name), ())
    return None


def _code(value) -> bool:
    """Modules, functions and classes: what code names to call, not an object it writes into."""
    return isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type,
                              types.MethodType))



def _value_at_transform(root, self_value):
    """The object a root holds now (to find the methods called on it), or _NO."""
    kind, where, steps = root
    if steps is None:
        return _NO
    if kind == GLOBAL:
        value = where[0].get(where[1], _NO)
    elif kind == CELL:
        try:
            value = where.cell_contents
        except ValueError:
            return _NO
    elif kind == SELF:
        value = self_value
    else:
        return _NO
    return follow(value, steps, _NO)


def _follow_aliases(tree, aliases):
    """A name made from a root (``s = STATE``, ``for row in G``, ``lst.append(G)``) may hold its objects,
    anywhere in them."""
    changed = True
    while changed:
        changed = False
        for node in gast.walk(tree):
            if _stores_into(node, aliases):
                held = next(aliases[_root(a)] for a in node.args if _root(a) in aliases)
                target = _root(node.func.value)
                if target not in aliases:
                    aliases[target] = (*held[:2], None)
                    changed = True
            if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For, gast.withitem)):
                value = node.iter if isinstance(node, gast.For) else getattr(node, "value", None) or \
                    getattr(node, "context_expr", None)
                targets = [node.target] if hasattr(node, "target") else list(getattr(node, "targets", []))
                if isinstance(node, gast.withitem) and node.optional_vars:
                    targets.append(node.optional_vars)
                held = [aliases[n.id] for n in gast.walk(value) if isinstance(n, gast.Name) and n.id in aliases] \
                    if value is not None else []
                for t in targets:
                    for n in gast.walk(t):
                        if held and isinstance(n, gast.Name) and n.id not in aliases:
                            aliases[n.id] = (*held[0][:2], None)
                            changed = True


def _chain(node):
    """``(name, steps)`` of ``node``, a name followed by items and attributes (steps None where an item is not a
    constant), or ``(None, None)``."""
    steps: list | None = []
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        if isinstance(node, gast.Attribute):
            steps = steps if steps is None else [*steps, ("attr", node.attr)]
        elif isinstance(node.slice, gast.Constant):
            steps = steps if steps is None else [*steps, ("item", node.slice.value)]
        else:
            steps = None
        node = node.value
    if not isinstance(node, gast.Name):
        return None, None
    return node.id, None if steps is None else tuple(reversed(steps))


def _path(node, aliases):
    """``(kind, where, steps)`` of the object ``node`` (a root name and constant items and attributes) is,
    steps None if the path is not known; None if ``node`` reaches no root."""
    name, steps = _chain(node)
    if name not in aliases:
        return None
    kind, where, prefix = aliases[name]
    return kind, where, None if steps is None or prefix is None else prefix + steps


def _writes_of(node, aliases, values, source, local, writes, seen, dependencies, caller):
    """``(kind, where, steps)`` of each object ``node`` may write into (a call of a Python function adds that
    function's writes to ``writes`` itself)."""
    if isinstance(node, (gast.Assign, gast.Delete, gast.AugAssign, gast.AnnAssign)):
        found = []
        for t in (node.targets if isinstance(node, (gast.Assign, gast.Delete)) else [node.target]):
            for part in (t.elts if isinstance(t, (gast.Tuple, gast.List)) else [t]):
                if isinstance(part, (gast.Subscript, gast.Attribute)):
                    found.append(_path(part.value, aliases))
                    found += _returned(part.value, aliases, source, local, caller)
                if isinstance(node, gast.AugAssign):  # in place where the object has the operator
                    found.append(_path(part, aliases))
        return [f for f in found if f is not None]
    return _writes_of_call(node, aliases, values, source, local, writes, seen, dependencies, caller)


def _writes_of_call(node, aliases, values, source, local, writes, seen, dependencies, caller):
    """The objects a call may write into, as ``_writes_of`` gives them."""
    if not isinstance(node, gast.Call):
        return []
    func = node.func
    for k in node.keywords:
        if k.arg == "out" and _path(k.value, aliases) is not None:
            return [_path(k.value, aliases), *_given_to(node, aliases, source, local, func)]
        if k.arg == "out" and _returned(k.value, aliases, source, local, caller):  # out=get_box()
            return [*_returned(k.value, aliases, source, local, caller), *_given_to(node, aliases, source, local, func)]
    if isinstance(func, gast.Name) and func.id in aliases:  # fill = G.fill; fill(0.0): a method held in a name
        return [_wholly(_path(func, aliases)), *_given_to(node, aliases, source, local, func)]
    if isinstance(func, gast.Attribute) and func.attr in _CHANGING and _path(func.value, aliases) is None:
        returned = _returned(func.value, aliases, source, local, caller)  # np.asarray(G).fill(0.0), get().fill(0.0)
        if returned:
            return [*returned, *_given_to(node, aliases, source, local, func)]
    written = [w for n in _door_arguments(node, source, local) for w in
               [_path(n, aliases), *_returned(n, aliases, source, local, caller)] if w is not None]
    if written:  # np.multiply(G, 2.0, G), np.median(G, overwrite_input=True)
        return [*written, *_given_to(node, aliases, source, local, func)]
    if isinstance(func, gast.Attribute) and _path(func.value, aliases) is not None:
        obj = _path(func.value, aliases)
        if func.attr in _CHANGING:
            return [obj, *_given_to(node, aliases, source, local, func)]
        value = _value_of(func.value, values)
        method = getattr(value, func.attr, _NO) if value is not _NO else _NO
        found = callable_code(method) if method is not _NO else None
        if found is not None:
            _collect_callee(found[0], obj, node, aliases, writes, seen, dependencies, caller, found[1])
            return []
        if func.attr in _READING_METHODS and not isinstance(method, types.MethodType):
            return _given_to(node, aliases, source, local, func)
        # a method not known to only read: it may write anywhere into its object and what it is given
        return [_wholly(obj), *_given_to(node, aliases, source, local, func), *_results_given(node, aliases, source,
                                                                                              local, caller)]
    callee = source.resolve_expr(func, local)
    found = callable_code(callee) if callee is not _NO else None
    if found is not None and not _only_reads(callee):
        self_root = _path(func, aliases) if found[1] is not None else None
        _collect_callee(found[0], self_root, node, aliases, writes, seen, dependencies, caller, found[1])
        return []
    if callee is not _NO and _only_reads(callee):
        return []
    # a function or method no one knows (rng.standard_normal(None, np.float64, get_box())): what it is given
    return [*_given_to(node, aliases, source, local, func, callee), *_results_given(node, aliases, source, local, caller)]


def _results_given(node, aliases, source, local, caller):
    """What the call results ``node`` is given may be (``_returned``), each wholly."""
    values = [a.value if isinstance(a, gast.Starred) else a for a in node.args] + [k.value for k in node.keywords]
    return [w for v in values for w in _returned(v, aliases, source, local, caller)]


def _door_arguments(call, source, local):
    """The argument nodes a numpy call writes into through its doors (``numpy_writes``)."""
    func = call.func
    fn = source.resolve_expr(func, local)
    if fn is _NO and isinstance(func, gast.Attribute):
        fn = numpy_writes.ufunc_method(source.resolve_expr(func.value, local), func.attr) or _NO
    found = numpy_writes.doors(fn) if fn is not _NO and _numpy(fn) else () if fn is not _NO else \
        numpy_writes.method_doors(func.attr) if isinstance(func, gast.Attribute) else ()
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    nodes: list = []
    for w in numpy_writes.used(found, call.args, keywords):
        node = func.value if w.node is None else w.node
        nodes += node.elts if isinstance(node, gast.Tuple) else [node]
    return nodes


def _returned(node, aliases, source, local, caller, depth=0):
    """What a write into ``node``, a chain rooted in a call's result (``get()[0]``, ``np.asarray(G)``), may
    reach, each wholly: the roots the call is given (numpy may return a view of them; a method may return
    an object inside its own), and, for a Python function, every global, closure and default it names.
    A call of anything else is refused at the caller (``caller``): no one can tell what it returns."""
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    if not isinstance(node, gast.Call):
        return []
    found = [_wholly(p) for p in (_path(n, aliases) for n in gast.walk(node)
                                  if isinstance(n, (gast.Name, gast.Attribute, gast.Subscript))) if p is not None]
    callee = source.resolve_expr(node.func, local)
    code = callable_code(callee) if callee is not _NO else None
    if code is not None and depth < 4:
        try:
            inner = FunctionSource(code[0])
        except Exception:
            inner = None
        if inner is not None:
            stored = {n.id for n in gast.walk(inner.tree) if isinstance(n, gast.Name)
                      and isinstance(n.ctx, (gast.Store, gast.Param, gast.Del))}
            reached = {name: _outside(inner, name) for name in sorted({n.id for n in gast.walk(inner.tree)
                                                                      if isinstance(n, gast.Name)} - stored)}
            reached = {name: root for name, root in reached.items() if root is not None}
            reached.update({name: (CELL, cell, ()) for name, cell in _default_cells(code[0]).items()})
            found += [_wholly(root) for root in reached.values()]
            for ret in (n for n in gast.walk(inner.tree) if isinstance(n, gast.Return) and n.value is not None):
                found += _returned(ret.value, reached, inner, stored - set(reached), caller, depth + 1)
            return found
    if callee is not _NO and (_only_reads(callee) or callee in (list, dict, tuple, set)) or \
            isinstance(node.func, gast.Attribute) and _path(node.func.value, aliases) is not None:
        return found
    caller_source, at, _ = caller
    shown = compat.to_source(node).strip()
    raise caller_source.error(at, f"{getattr(source.fn, '__qualname__', 'the function')}(...) is run as written, "
                              f"and writes into what {shown} returns, which astgrad cannot tell; it may be an "
                              "array the gradient reads", "Assign what it returns to a name of the module (or pass "
                              "it in), or call the function outside the differentiated one.",
                              UnsupportedSyntaxError)


def _value_of(node, values):
    """The object ``node`` (a name and constant items and attributes) holds at transform time, or _NO."""
    name, steps = _chain(node)
    if steps is None or values.get(name, _NO) is _NO:
        return _NO
    return follow(values[name], steps, _NO)


def _given_to(node, aliases, source, local, func, callee=_NO):
    """The roots given to a function not known to only read: it may write anywhere into each."""
    given = [_path(a.value if isinstance(a, gast.Starred) else a, aliases) for a in node.args]
    given += [_path(k.value, aliases) for k in node.keywords]
    given = [g for g in given if g is not None]
    if not given:
        return []
    if callee is _NO:
        callee = source.resolve_expr(func, local)
    if callee is not _NO and _only_reads(callee):
        return []
    return [_wholly(g) for g in given]


def _wholly(found):
    """``found`` (kind, where, steps) as a write anywhere into the object the steps reach."""
    kind, where, steps = found
    return kind, where, None if steps is None else (*steps, WHOLLY)


def _collect_callee(fn, self_root, call, aliases, writes, seen, dependencies, caller, self_value):
    """A Python function the callee calls: what it may write into, its parameters given the roots they are."""
    roots = {}
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = []
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if self_value is not None and positional:
        if self_root is not None:
            roots[positional[0]] = self_root
        positional = positional[1:]
    for i, a in enumerate(call.args):
        found = _path(a.value if isinstance(a, gast.Starred) else a, aliases)
        if found is None:
            continue
        if isinstance(a, gast.Starred) or i >= len(positional) or any(isinstance(b, gast.Starred) for b in call.args):
            writes.append((found[0], found[1], None, f"{fn.__qualname__}(...), given *args"))
            continue
        roots[positional[i]] = found
    for k in call.keywords:
        found = _path(k.value, aliases)
        if found is not None:
            if k.arg in {p.name for p in params}:
                roots[k.arg] = found
            else:
                writes.append((found[0], found[1], None, f"{fn.__qualname__}(...), given **kwargs"))
    bound = None if any(isinstance(a, gast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) \
        else set(positional[:len(call.args)]) | {k.arg for k in call.keywords}
    _collect(fn, roots, self_value, writes, seen, dependencies, caller, bound)


def _unread(fn, roots, writes):
    """A function whose source cannot be read: anything it is given or names may be written, wholly."""
    where = f"{getattr(fn, '__qualname__', fn)} (its source cannot be read)"
    for kind, root, _ in roots.values():
        writes.append((kind, root, None, where))
    code = getattr(fn, "__code__", None)
    for name in sorted(set(code.co_names if code is not None else ()) & set(getattr(fn, "__globals__", {}))):
        if not _code(fn.__globals__[name]):
            writes.append((GLOBAL, (fn.__globals__, name), None, where))


def _rebinds(tree, source, declared, stored, caller):
    """Refuse ``global W; W = ...`` in a callee when the differentiated function reads ``W``: the adjoint reads it
    again after the call."""
    caller_source, node, reads = caller
    for name in sorted(declared & stored):
        same = source.globals is caller_source.globals and name not in caller_source.closure or \
            name in source.closure and caller_source.closure.get(name) is source.closure[name]
        if same and name in reads:
            line = next(getattr(n, "lineno", 1) for n in gast.walk(tree) if isinstance(n, gast.Name)
                        and n.id == name and isinstance(n.ctx, (gast.Store, gast.Del)))
            raise caller_source.error(
                node, f"{getattr(source.fn, '__qualname__', 'the function')}(...) rebinds {name} "
                f"({source.filename}:{line}: {source.lines[line - 1].strip()}), which this function reads; the call "
                "runs as written, and the gradient would read the new value where the function read the old one",
                f"Pass {name} in and return its new value ({name} = f({name})), or call the function outside the "
                "differentiated one.", UnsupportedSyntaxError)


class CallSite:
    """One call the transform runs as written, and the Plan of each function it has been seen to run.

    A call by a name the transform resolves (``reset()``) is planned at
    transform time; a method of an object known only when it runs
    (``box.reset()``) is planned at its first call of each function, and
    planned again when a function that plan read has been rebound.
    """

    __slots__ = ("source", "node", "reads", "positional", "keywords", "plans", "outside", "given_gradient")

    def __init__(self, source, node, reads, positional, keywords, outside):
        self.source, self.node, self.reads = source, node, reads
        self.positional, self.keywords = positional, keywords
        # for a function without Python source (a C method): whether its object, then each argument, is a
        # global's (or a closure's), which it may write into; the function's own locals are followed where made
        self.outside = outside
        # the call's line when an argument (or its object) carries a gradient: anything the function stores
        # may be computed from it, and read back later it would count as a constant
        self.given_gradient = ""
        self.plans: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> (Plan or None, deps)

    def plan(self, found, dependencies=None):
        """The Plan of the call running ``found`` (``callable_code``), made now if not made or out of date."""
        fn, bound_self = found
        known = self.plans.get(fn)
        if known is not None and (dependencies is None and known[1].current()):
            return known[0]
        deps = Dependencies()
        try:
            bound = inspect.signature(fn).bind(*([None] if bound_self is not None else []),
                                               *range(self.positional), **{k: k for k in self.keywords}).arguments
        except (TypeError, ValueError):
            bound = {}
        given = {}
        for param, value in bound.items():  # the index of each object given, a tuple of them for *args, **kwargs
            if isinstance(value, (tuple, dict)):
                values = value.values() if isinstance(value, dict) else value
                given[param] = tuple(self._index(v) for v in values)
            elif value is not None:
                given[param] = self._index(value)
        plan = plan_call(fn, bound_self, given, self.source, self.node, self.reads, deps)
        self.plans[fn] = (plan, deps)
        if dependencies is not None:
            dependencies.update(deps)
        return plan

    @staticmethod
    def only_reads(obj) -> bool:
        """A builtin or numpy callable known to write into nothing it is given (effects)."""
        return _only_reads(obj)

    def _index(self, value):
        return value if isinstance(value, int) else self.positional + self.keywords.index(value)


def check_untransformed_calls(body, analysis, source, ns, local_names):
    """``body`` with a check before each call the transform runs as written whose function may write into
    an object outside it (``checks.written_by_call``); a callee rebinding a global the function reads is
    refused here."""
    from ..ir import compat
    from ..runtime import checks
    from ..ir.nodes import For, If, Op, Raw, While
    from ..runtime.origins import ORIGIN

    reads = frozenset({n.id for n in gast.walk(source.tree) if isinstance(n, gast.Name)} - set(local_names))
    returned = _returned_names(body, local_names)

    def block(stmts):
        out = []
        for s in stmts:
            op = s.call if isinstance(s, Raw) else s
            if isinstance(op, Op) and op.kind in ("call", "opaque", "nondiff") and isinstance(op.expr, gast.Call) \
                    and (op is not s or not analysis.is_active(op)):
                check = _check_for(op)
                if check is not None:
                    out.append(check)
            if isinstance(s, If):
                s.body, s.orelse = block(s.body), block(s.orelse)
            elif isinstance(s, For):
                s.body = block(s.body)
            elif isinstance(s, While):
                s.cond, s.body = block(s.cond), block(s.body)
            out.append(s)
        return out

    def _check_for(op):
        call = op.expr
        given = list(call.args) + [k.value for k in call.keywords]  # no *args or **kwargs: check refuses them
        outside = tuple(_root(a) is not None and (_root(a) not in local_names or _root(a) in returned)
                        for a in [call.func, *given])
        site = CallSite(source, op.node, reads, len(call.args), [k.arg for k in call.keywords], outside)
        site.given_gradient = op.text.strip() if analysis.reads_of(op) & analysis.active else ""
        fn = op.fn
        if fn is not None:  # known now: planned now, its errors located at transform time
            found = callable_code(fn)
            if found is not None and (_internal(found[0]) or site.plan(found, source.dependencies) is None):
                return None
            if found is not None and site.given_gradient:
                stores_given(site, found[0], site.plan(found, source.dependencies), source)
            if found is None and (_only_reads(fn) or not any(outside)):
                return None
        elif not (isinstance(call.func, gast.Attribute) and call.func.attr not in _READING_METHODS):
            return None
        elif numpy_writes.ufunc_method(source.resolve_expr(call.func.value, local_names), call.func.attr) is not None:
            return None  # np.add.reduce(G, 0): it writes only through its out, which normalize made an assignment
        atoms = [compat.clone(a) for a in call.args] + [compat.clone(k.value) for k in call.keywords]
        check = compat.call(compat.name(ns.helper(checks.written_by_call)),
                            [compat.name(ns.bind(site, "call_site")), compat.clone(call.func), *atoms])
        stmt = compat.expr_stmt(check)
        setattr(stmt, ORIGIN, (source.filename, op.line, op.text, False))
        return Raw(stmt, op.line, op.text)

    return block(body)


def _returned_names(body, local_names) -> set:
    """Names that may hold what a function returned (``t = get_box()``), a global's item or attribute (``G[0]``,
    ``H.data``, a property), and views and names made from them: an object of anyone's, as a global's name is."""
    from .aliasing import shares_memory
    from ..ir.nodes import atom_names, op_reads, walk_ops

    ops = list(walk_ops(body))
    found = {t for op in ops if isinstance(op.expr, gast.Call) and (op.kind == "call" or op.kind == "opaque" and not (
        op.fn is not None and _only_reads(op.fn))) for t in op.targets}  # a numpy function's: new, or a view of its own
    found |= {t for op in ops if (shares_memory(op) or isinstance(op.expr, gast.Attribute)) and  # G[0], H.data
              _data_read(op) - set(local_names) for t in op.targets}
    grown = True
    while grown:
        grown = False
        for op in ops:
            reads = set(atom_names(op.expr)) | set(op_reads(op))
            if shares_memory(op) and reads & found and not set(op.targets) <= found:
                found.update(op.targets)
                grown = True
    return found


def _data_read(op) -> set:
    """The names of the values ``op`` reads (its arguments; the object of ``H.data``), not the functions it calls."""
    from ..ir.nodes import atom_names, op_reads

    if op.args or op.kwargs:
        return set(op_reads(op))
    root = _root(op.expr)
    return {root} if root is not None else set(atom_names(op.expr))


def _ident(name):
    return "".join(c if c.isalnum() else "_" for c in name)


def _internal(fn) -> bool:
    """astgrad's own code (generated code, the runtime's helpers): it writes into nothing it is not given."""
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith("<astgrad") or \
        str(getattr(fn, "__module__", "")).startswith("astgrad.")
