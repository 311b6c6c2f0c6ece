"""Refuse a user function called for its effect on a value that carries a gradient, where it may write.

A call of a user function whose result reaches nothing that is differentiated
(``reset(params)``, ``r = scale(y)`` with ``r`` unused) is not transformed: it
runs as written in the primal.  If it writes into what it is given
(``p["W"] = ...``, ``a *= 0.0``, ``lst.append(v)``), the caller's values change
in Python, and the adjoint, which never saw the write, gives the gradient of
the values as they were before.  So each such call given a value that
carries a gradient is checked, by reading the called function's source: a
write through the parameter (or a name made from it, or an item of it),
a method that changes its object, ``out=``, or a call that may write (one not
known to be a numpy function or a builtin that only reads; a user function
is read in turn) is refused at the call, located, naming the line that may
write.  The check is by name and conservative.
"""

from __future__ import annotations

import inspect

import numpy as np

from ..ir import compat
from . import numpy_writes
from ..ir.compat import gast
from ..ir.errors import UnsupportedSyntaxError
from ..ir.nodes import walk_ops
from .locate import bound_arguments
from .parse import MISSING as _NO
from .parse import FunctionSource

#: methods that change the object they are called on (lists, dicts, sets, arrays)
_CHANGING = numpy_writes.CHANGING
#: those of them that store what they are given, so that a later write through the object reaches it
_STORING = {"append", "extend", "insert", "add", "update", "setdefault", "__setitem__"}
_READING_BUILTINS = {print, len, str, repr, format, isinstance, type, float, int, bool, abs, min, max, sum, round,
                     range, enumerate, zip, sorted, list, tuple, dict, set, any, all, hash, id}
_WRITING_NUMPY = {np.copyto, np.put, np.place, np.putmask, np.fill_diagonal, np.put_along_axis}


def check_calls_for_effect(body, analysis, source, ignore=None) -> None:
    """Raise UnsupportedSyntaxError at a call not differentiated, given a value that carries a gradient, whose
    function may write into it (``ignore``: generated code's stack, which its calls change on purpose)."""
    for op in walk_ops(body):
        if op.kind != "call" or analysis.is_active(op) or not analysis.reads_of(op) & analysis.active:
            continue
        if _generated(op.fn):
            continue  # astgrad's own code: it writes into nothing it is given but its stack
        bound = bound_arguments(op, source)
        given = {p: a.id for p, a in bound.items()
                 if isinstance(a, gast.Name) and a.id in analysis.active and a.id != ignore}
        found = _may_write(op.fn, set(given), set())
        if found is not None:
            where, param = found
            name = getattr(op.fn, "__name__", "the function")
            shown = _as_written(op, param) or given.get(param, ", ".join(sorted(given.values())))
            raise source.error(op.node, f"{name}(...) is given {shown}, which carries a gradient, and may change it "
                               f"({where}); its result is not used, so astgrad runs the call as written and the "
                               "gradient would miss the change", "Return the new value from the function and use "
                               "it (x = f(x)), or call the function outside the differentiated one.",
                               UnsupportedSyntaxError)


def _as_written(op, param):
    """The user's text of the argument given to ``param`` in the call ``op`` stands for (``a[::-1]`` rather than
    the normalizer's temporary name), or None."""
    call = op.node
    if not isinstance(call, gast.Call) or param is None:
        return None
    try:
        bound = inspect.signature(op.fn).bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
    except (TypeError, ValueError):
        return None
    value = bound.arguments.get(param)
    return compat.to_source(value).strip() if isinstance(value, gast.AST) else None


def _generated(fn) -> bool:
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename.startswith("<astgrad")


def _may_write(fn, params, seen):
    """``(where, parameter)`` of a statement of ``fn`` that may write into one of ``params``, or None."""
    if (fn, frozenset(params)) in seen or not params:
        return None
    seen.add((fn, frozenset(params)))
    try:
        source = FunctionSource(fn)
    except Exception:  # no source to read: anything may happen
        return f"the source of {getattr(fn, '__name__', fn)!r} cannot be read", next(iter(params))
    tree = source.tree
    aliases = {p: p for p in params}  # a name -> the parameter whose object it may hold
    changed = True
    while changed:
        changed = False
        for node in gast.walk(tree):
            if _stores_into(node, aliases):  # lst.append(x): lst holds x from here on
                aliases[_root(node.func.value)] = next(aliases[_root(a)] for a in node.args if _root(a) in aliases)
                changed = True
            if isinstance(node, (gast.Assign, gast.AugAssign, gast.AnnAssign, gast.For, gast.withitem)):
                value = node.iter if isinstance(node, gast.For) else getattr(node, "value", None) or \
                    getattr(node, "context_expr", None)
                targets = [node.target] if hasattr(node, "target") else getattr(node, "targets", [])
                targets += [node.optional_vars] if isinstance(node, gast.withitem) and node.optional_vars else []
                held = [aliases[n.id] for n in gast.walk(value) if isinstance(n, gast.Name) and n.id in aliases] \
                    if value is not None else []
                for t in targets:
                    for n in gast.walk(t):
                        if held and isinstance(n, gast.Name) and n.id not in aliases:
                            aliases[n.id] = held[0]
                            changed = True
    local_names = set(aliases) | {n.id for n in gast.walk(tree) if isinstance(n, gast.Name)
                                  and isinstance(n.ctx, (gast.Store, gast.Param, gast.Del))}
    for node in gast.walk(tree):
        param = _written(node, aliases)
        if param is None and isinstance(node, gast.Call):
            param = _call_may_write(node, aliases, source, local_names, seen)
        if param is None and unseen_door(node, source, local_names) is not None:
            param = next(iter(sorted(params)))  # exec, globals(): any of them
        if param is not None:
            line = getattr(node, "lineno", 1) + source.first_line - 1
            return f"{source.filename}:{line}: {source.lines[getattr(node, 'lineno', 1) - 1].strip()}", param
    return None


def _stores_into(node, aliases) -> bool:
    """``lst.append(x)``, ``d.update(x)``: a changing method of another object, given a name of the value."""
    func = getattr(node, "func", None)
    return isinstance(node, gast.Call) and isinstance(func, gast.Attribute) and func.attr in _STORING and \
        _root(func.value) is not None and _root(func.value) not in aliases and \
        any(_root(a) in aliases for a in node.args)


def _root(node):
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return node.id if isinstance(node, gast.Name) else None


def _written(node, aliases):
    """The parameter a statement writes through: ``a[i] = v``, ``a.b = v``, ``a += v``, ``del a[i]``, and
    ``np.asarray(a)[0] = v`` (what a call given ``a`` returns may be ``a`` or a view of it)."""
    targets = []
    if isinstance(node, (gast.Assign, gast.Delete)):
        targets = node.targets
    elif isinstance(node, (gast.AugAssign, gast.AnnAssign)):
        targets = [node.target]
    for t in targets:
        for part in (t.elts if isinstance(t, (gast.Tuple, gast.List)) else [t]):
            root = _root(part)
            if root in aliases and (not isinstance(part, gast.Name) or isinstance(node, gast.AugAssign)):
                return aliases[root]
            if root is None and not isinstance(part, gast.Name):
                found = returned_from(part, aliases)
                if found is not None:
                    return found
    return None


def returned_from(node, aliases):
    """The alias a chain rooted in a call's result (``np.asarray(a)[0]``, ``get(a).fill``) may reach: a name in
    ``aliases`` anywhere in the call, which may return it or a view of it; or None."""
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    if not isinstance(node, gast.Call):
        return None
    return next((aliases[n.id] for n in gast.walk(node) if isinstance(n, gast.Name) and n.id in aliases), None)


def unseen_door(node, source, local_names):
    """Why ``node`` names ``exec``, ``eval``, ``globals``, ``vars``, ``sys.modules``... (``numpy_writes.unseen``),
    through which code writes where no name shows, or None."""
    if not isinstance(node, (gast.Name, gast.Attribute)) or isinstance(node, gast.Name) and node.id in local_names:
        return None
    if isinstance(node, gast.Attribute) and node.attr != "modules":
        return None
    return numpy_writes.unseen(source.resolve_expr(node, local_names))


def _call_may_write(call, aliases, source, local_names, seen):
    """The parameter a call may write into: a changing method of it, ``out=`` it, or a function given it that
    is not known to only read (a user function is read in turn)."""
    func = call.func
    if isinstance(func, gast.Attribute) and _root(func.value) in aliases and func.attr in _CHANGING:
        return aliases[_root(func.value)]
    if isinstance(func, gast.Attribute) and func.attr in _CHANGING and returned_from(func.value, aliases):
        return returned_from(func.value, aliases)  # np.asarray(a).fill(0.0)
    if isinstance(func, gast.Name) and func.id in aliases:
        return aliases[func.id]  # fill = a.fill; fill(0.0): a method of the value, held in a name
    written = numpy_doors(call, source, local_names, aliases)
    if written is not None:
        return written
    given = [(i, aliases[_root(a)]) for i, a in enumerate(call.args) if _root(a) in aliases]
    given += [(k.arg, aliases[_root(k.value)]) for k in call.keywords if _root(k.value) in aliases]
    if not given:
        return None
    if any(k == "out" for k, _ in given):
        return next(p for k, p in given if k == "out")
    if isinstance(func, gast.Attribute) and (_root(func.value) in aliases or _stores_into(call, aliases)):
        return None  # a method of the value that does not change it (x.sum(), d.get(k)); lst.append(x)
    obj = source.resolve_expr(func, local_names)
    if _only_reads(obj):
        return None
    if not inspect.isfunction(obj):
        return given[0][1]
    try:
        bound = inspect.signature(obj).bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
    except TypeError:
        return given[0][1]
    names = set()
    for name, value in bound.arguments.items():
        if not isinstance(value, gast.AST):  # *args or **kwargs: any of them
            return given[0][1]
        if _root(value) in aliases:
            names.add(name)
    found = _may_write(obj, names, seen)
    return None if found is None else given[0][1]


def numpy_doors(call, source, local_names, aliases):
    """The alias a numpy call writes into through a door ``numpy_writes`` reads from numpy (a ufunc's output by
    position, ``np.add.reduce(m, 0, None, a)``, ``overwrite_input=True``, ``copy=False``, ``x.cumsum(0, None, a)``),
    or None."""
    func = call.func
    fn = source.resolve_expr(func, local_names)
    if fn is _NO and isinstance(func, gast.Attribute):
        fn = numpy_writes.ufunc_method(source.resolve_expr(func.value, local_names), func.attr) or _NO
    if fn is not _NO and _numpy(fn):
        found = numpy_writes.doors(fn)
    elif fn is _NO and isinstance(func, gast.Attribute):
        found = numpy_writes.method_doors(func.attr)
    else:
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    for w in numpy_writes.used(found, call.args, keywords):
        nodes = [func.value] if w.node is None else w.node.elts if isinstance(w.node, gast.Tuple) else [w.node]
        for node in nodes:
            root = _root(node)
            if root in aliases:
                return aliases[root]
            if returned_from(node, aliases) is not None:
                return returned_from(node, aliases)
    return None


def _numpy(obj) -> bool:
    return isinstance(obj, np.ufunc) or isinstance(getattr(obj, "__self__", None), np.ufunc) or \
        callable(obj) and (getattr(obj, "__module__", None) or "").startswith("numpy")


def _only_reads(obj) -> bool:
    """A builtin that only reads, or a numpy function (``out=`` aside) that does not write into its arguments."""
    try:
        if obj in _READING_BUILTINS:
            return True
    except TypeError:  # unhashable
        return False
    if obj in _WRITING_NUMPY or obj is np.random.shuffle:
        return False
    return isinstance(obj, np.ufunc) or callable(obj) and (getattr(obj, "__module__", None) or "").startswith("numpy")
