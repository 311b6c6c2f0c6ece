"""A-normal form of one expression assigned to one name.

Called by ``normalize`` for every ``target = expression``: the operands are
turned into atoms first (emitting their own statements), then one ``Op``
records the operation, the callable whose rule applies and its arguments in
the order the rule expects them.

Long: one branch per kind of expression, calls above all (primitives, user
functions, methods, lambdas, function arguments, library functions).
"""

from __future__ import annotations

import builtins
import functools
import types

import numpy as _np

from ... import rules
from ...rules.joining import as_column
from .. import runtime
from ..runtime import attributes, checkpoints, checks, reruns
from ..runtime.value_types import held_data, other_meaning
from ..ir import compat
from . import methods, primitives
from .numpy_writes import CHANGING as _CHANGING
from ..ir.compat import gast
from .generated_calls import generated_jvp, jvp_call, made_vmap
from .syntax import consumed_generator
from ..ir.nodes import If
from .parse import MISSING
from .writes import write_call


def assign_expression(n, target: str, expr):
    """Emit the statements computing ``expr`` into ``target`` on normalizer ``n``."""
    kind = type(expr).__name__
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise n.error(expr, f"{kind} expressions are not supported",
                      "Rewrite it with plain operators, calls, subscripts or comprehensions.")
    handler(n, target, expr)


def _name(n, target, expr):
    atom = n.load_name(expr)
    kind = "copy" if atom.id in n.locals or atom.id in n.temps else "nondiff"
    n.emit([target], kind, atom, expr, args=[atom])
    if atom.id in n.sequences:  # xs, hs = {}, {}: a copy of a list or dict literal is one
        n.sequences.add(target)


def _constant(n, target, expr):
    n.emit([target], "nondiff", compat.clone(expr), expr)


def _binop(n, target, expr):
    left = n.atomize(expr.left)
    right = n.atomize(expr.right)
    fn = primitives.BINARY_OPS.get(type(expr.op))
    node = compat.make("BinOp", left=left, op=expr.op, right=right)
    if isinstance(expr.op, (gast.Add, gast.Mult)) and any(_sequence_like(n, e, a) for e, a in
                                                          ((expr.left, left), (expr.right, right))):
        n.emit([target], "opaque", node, expr, args=[left, right], error=(
            "+ and * join or repeat lists and tuples, which has no gradient rule",
            "Build the list with lst.append(v) or a list comprehension, or join arrays with np.concatenate."))
        return
    if fn is None:
        n.emit([target], "opaque", node, expr, error=(f"the operator {type(expr.op).__name__} has no gradient rule",
                                                      "Rewrite it with arithmetic numpy functions."))
        return
    _primitive(n, target, node, expr, fn, [left, right], {})


def _sequence_like(n, node, atom) -> bool:
    """A list or tuple, where ``+`` concatenates (the user's node, or a name known to hold one)."""
    if isinstance(node, (gast.List, gast.Tuple, gast.ListComp)):
        return True
    return isinstance(atom, gast.Name) and atom.id in n.sequences


def _unaryop(n, target, expr):
    if compat.is_literal(expr):
        n.emit([target], "nondiff", compat.clone(expr), expr)
        return
    operand = n.atomize(expr.operand)
    node = compat.make("UnaryOp", op=expr.op, operand=operand)
    fn = primitives.UNARY_OPS.get(type(expr.op))
    if fn is None:  # not, ~
        n.emit([target], "nondiff", node, expr)
        return
    _primitive(n, target, node, expr, fn, [operand], {})


def _compare(n, target, expr):
    left = n.atomize(expr.left)
    rest = [n.atomize(c) for c in expr.comparators]
    node = compat.make("Compare", left=left, ops=expr.ops, comparators=rest)
    n.emit([target], "nondiff", node, expr)


def _boolop(n, target, expr):
    # a and b: t = a; if t: t = b     a or b: t = a; if not t: t = b
    first, rest = expr.values[0], expr.values[1:]
    n.assign(target, first)
    for value in rest:
        if isinstance(expr.op, gast.And):
            test = target
        else:
            test = n.temp()
            n.emit([test], "nondiff", compat.make("UnaryOp", op=gast.Not(), operand=compat.name(target)), expr)
        saved, n.out = n.out, []
        n.assign(target, value)
        body, n.out = n.out, saved
        n.out.append(If(test if not isinstance(expr.op, gast.And) else _pin(n, target, expr), body, [],
                        n.src.user_line(n.stmt), n.src.line_text(n.stmt)))


def _pin(n, name, node):
    temp = n.temp()
    n.emit([temp], "nondiff", compat.name(name), node)
    return temp


def _ifexp(n, target, expr):
    test = n.test_name(expr.test, [])
    saved, n.out = n.out, []
    n.assign(target, expr.body)
    body, n.out = n.out, []
    n.assign(target, expr.orelse)
    orelse, n.out = n.out, saved
    n.out.append(If(test, body, orelse, n.src.user_line(n.stmt), n.src.line_text(n.stmt)))


def _sequence(n, target, expr):
    if isinstance(expr, gast.Tuple) and compat.is_literal(expr):
        n.emit([target], "nondiff", compat.clone(expr), expr)
        return
    atoms = [n.atomize(e) for e in expr.elts]
    is_list = isinstance(expr, gast.List)
    node = compat.make("List" if is_list else "Tuple", elts=atoms, ctx=gast.Load())
    n.emit([target], "pack", node, expr, args=atoms, sequence=is_list)
    n.sequences.add(target)


def _dict(n, target, expr):
    """``{"W": w, "b": b}``: a pack whose items are read back by key (containers.pack_index).

    The keys must be literals, each once, for the values to carry gradients:
    a key held in a variable could be rebound before the adjoint reads it,
    and a repeated key keeps only its last value, whose gradient the first
    would get too.  Otherwise the dict is built as written and refused only
    if a value carries a gradient.
    """
    keys = [k.value if isinstance(k, gast.Constant) and isinstance(k.value, (str, int))
            and not isinstance(k.value, bool) else _NOT_LITERAL for k in expr.keys]
    problem = None
    if _NOT_LITERAL in keys:
        problem = ("a dict literal's keys must be strings or integers written as literals for its values to "
                   "carry gradients", "Write each key itself ({'W1': w}).")
    elif len(set(keys)) != len(keys):
        twice = next(k for i, k in enumerate(keys) if k in keys[:i])
        problem = (f"the key {twice!r} appears twice in the dict literal",
                   "Python keeps only the last value; write the key once.")
    if problem is not None:
        key_atoms = [None if k is None else n.atomize(k) for k in expr.keys]
        values = [n.atomize(v) for v in expr.values]
        node = compat.make("Dict", keys=key_atoms, values=values)
        n.emit([target], "opaque", node, expr, args=values, error=problem)
        return
    atoms = [n.atomize(v) for v in expr.values]
    node = compat.make("Dict", keys=[compat.const(k) for k in keys], values=atoms)
    n.emit([target], "pack", node, expr, args=atoms)
    n.sequences.add(target)


_NOT_LITERAL = object()


def _subscript(n, target, expr):
    if isinstance(expr.value, (gast.Attribute, gast.Name)):  # np.r_, or r_ imported from numpy
        concatenator = n.static(expr.value)
        if concatenator is _np.r_ or concatenator is _np.c_:
            _index_concatenation(n, target, expr, columns=concatenator is _np.c_)
            return
    base = n.atomize(expr.value)
    index, arg = n.index(expr.slice)
    node = compat.make("Subscript", value=base, slice=index, ctx=gast.Load())
    if _read_from_outside(n, expr.value):  # D['M'], self.cfg['M']: the item is looked at as it enters
        node = compat.call(compat.name(n.ns.helper(attributes.item)), [node, compat.const(compat.to_source(expr).strip())])
    _primitive(n, target, node, expr, rules.getitem, [base, arg], {})


def _read_from_outside(n, expr) -> bool:
    """Whether ``expr`` is a field (``self.cfg``), a global or closure container (``D``), or an item of one."""
    if isinstance(expr, gast.Subscript):
        return _read_from_outside(n, expr.value)
    if isinstance(expr, gast.Attribute):
        return not hasattr(_np.ndarray, expr.attr)
    return isinstance(expr, gast.Name) and isinstance(n.static(expr), (dict, list, tuple))


def _index_concatenation(n, target, expr, columns):
    """``np.r_[a, 0:3, b]`` is ``np.concatenate([np.atleast_1d(a), np.r_[0:3], np.atleast_1d(b)])``.

    ``np.c_`` makes each item a column (``rules.joining.as_column``) and joins them
    along the last axis.  A slice is a range of numbers: a constant.  The
    string directives (``np.r_['0,2', a, b]``) are refused.
    """
    name = "np.c_" if columns else "np.r_"
    items = expr.slice.elts if isinstance(expr.slice, gast.Tuple) else [expr.slice]
    pieces = []
    for item in items:
        if isinstance(item, gast.Constant) and isinstance(item.value, str):
            raise n.error(item, f"{name}[...] with the directive {item.value!r} is not supported",
                          "Join the arrays with np.concatenate, np.stack or np.column_stack.")
        piece = n.temp()
        if isinstance(item, gast.Slice):
            index, _ = n.index(item)
            node = compat.make("Subscript", value=compat.attr(compat.name(n.ns.bind(_np, "np")),
                                                              "c_" if columns else "r_"),
                               slice=index, ctx=gast.Load())
            n.emit([piece], "nondiff", node, expr)
        else:
            atom = n.atomize(item)
            fn = as_column if columns else _np.atleast_1d
            _primitive(n, piece, compat.call(n.ns.ref(fn), [atom]), expr, fn, [atom], {})
        pieces.append(compat.name(piece))
    joined = n.temp()
    n.emit([joined], "pack", compat.make("List", elts=pieces, ctx=gast.Load()), expr, args=pieces, sequence=True)
    n.sequences.add(joined)
    axis = compat.const(-1 if columns else 0)
    node = compat.call(n.ns.ref(_np.concatenate), [compat.name(joined)], {"axis": axis})
    _primitive(n, target, node, expr, _np.concatenate, [compat.name(joined)], {"axis": axis})


def _attribute(n, target, expr):
    obj = n.static(expr)
    if obj is not MISSING:
        ref = n.static_ref(expr)
        if held_data(obj):  # config.M of a module: read as a field, so that a matrix bound there later is seen too
            ref = compat.call(compat.name(n.ns.helper(attributes.field)), [ref.value, compat.const(ref.attr)])
        n.emit([target], "nondiff", ref, expr)
        return
    if expr.attr in _CHANGING:  # fill = a.fill; fill(0.0) would write into a where no analysis looks
        shown = compat.to_source(expr).strip()
        raise n.error(expr, f"{shown} is a method that changes its object, taken here as a value: a call of it "
                      "later writes where astgrad cannot see", f"Call it directly ({shown}(...)) where the write "
                      "happens.")
    base = n.atomize(expr.value)
    node = compat.attr(base, expr.attr)
    if expr.attr in primitives.META_ATTRIBUTES:
        n.emit([target], "nondiff", node, expr)
    elif expr.attr == "T":
        transpose = rules.find(_np.transpose)
        assert transpose is not None, "the table has numpy.transpose"
        _primitive(n, target, node, expr, transpose.fn, [base], {})
    elif not hasattr(_np.ndarray, expr.attr):  # a field of a dataclass, a named tuple, a registered class
        read = compat.call(compat.name(n.ns.helper(attributes.field)), [base, compat.const(expr.attr)])
        _primitive(n, target, read, expr, attributes.attribute, [base, compat.const(expr.attr)], {})
    else:
        n.emit([target], "opaque", node, expr,
               error=(f"attribute .{expr.attr} of a differentiable value has no gradient rule",
                      "Use a numpy function with a rule instead (see docs/supported-python.md)."))


def _lambda(n, target, expr):
    raise n.error(expr, "a lambda can only be assigned to a name and called",
                  "Write `f = lambda x: ...` and call `f(...)`, or define a module-level function.")


def _listcomp(n, target, expr):
    # [elt for v in xs if c] -> target = []; for v in xs: if c: target.append(elt)
    reads = {node.id for node in gast.walk(expr) if isinstance(node, gast.Name)}
    if target not in n.temps and target not in n.scope or target in reads:
        # the value of a return, or of xs = [f(x) for x in xs], which reads the list it replaces: grown in a
        # temp nothing else sees, then bound
        built = n.temp()
        _listcomp(n, built, expr)
        n.emit([target], "copy", compat.name(built), expr, args=[compat.name(built)])
        return
    n.emit([target], "nondiff", compat.make("List", elts=[], ctx=gast.Load()), expr)
    n.sequences.add(target)
    loc = dict(lineno=expr.lineno, col_offset=expr.col_offset)
    renames = {}
    for gen in expr.generators:
        for node in gast.walk(gen.target):
            if isinstance(node, gast.Name):
                renames[node.id] = _comprehension_variable(n, node.id)
    def renamed(node):
        node = compat.clone(node)
        for sub in gast.walk(node):
            if isinstance(sub, gast.Name) and sub.id in renames:
                sub.id = renames[sub.id]
        return node
    append = compat.make("Expr", value=compat.call(compat.attr(compat.name(target), "append"),
                                                   [renamed(expr.elt)]), **loc)
    stmt = append
    for gen in reversed(expr.generators):
        for cond in reversed(gen.ifs):
            stmt = compat.make("If", test=renamed(cond), body=[stmt], orelse=[], **loc)
        iterable = gen.iter if gen is expr.generators[0] else renamed(gen.iter)  # the first: the outer scope's
        stmt = compat.make("For", target=renamed(gen.target), iter=iterable, body=[stmt], orelse=[], **loc)
    n.locals |= set(renames.values()) | {target}
    saved = n.stmt
    n.statement(stmt)
    n.stmt = saved


def _comprehension_variable(n, name):
    """The local a comprehension's variable becomes: its own name, unless the function's scope or
    another comprehension has it (or the module: never, module-level names avoid every user local)."""
    if name in n.scope or name in n.comprehension_names or name in n.names.parent.taken:
        name = n.names.fresh(name)
    n.comprehension_names.add(name)
    return name


#: how the refusal of a call of a local name begins: a gradient whose code is refused so waits for the
#: functions its parameters hold (api.GradientFunction._for_functions)
CALLING_A_LOCAL = "calling a local variable"


def _bound_parts(n, obj, args, kwargs):
    """``(function, args, kwargs)`` of a call of ``obj``: a ``functools.partial`` calls its function with the
    arguments it fixed first, a bound method (an object with ``__call__``: that method) its function with
    ``self`` first (both bound as constants;
    a partial's keywords, a dict that can change, are recorded so that a change makes the transform stale)."""
    while True:
        if rules.find(obj) is not None:  # the table's own entry (scipy's norm.cdf, a bound method): a primitive
            return obj, args, kwargs
        if isinstance(obj, functools.partial):
            for key, value in obj.keywords.items():
                n.src.dependencies.record_key(obj.keywords, key, value, always=True)
            args = [_fixed(n, a) for a in obj.args] + args
            kwargs = {**{k: _fixed(n, v) for k, v in obj.keywords.items()}, **kwargs}
            obj = obj.func
        elif isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType) \
                and not rules.library_function(obj.__func__):  # a library's method stays whole: refused by its name
            args = [_fixed(n, obj.__self__)] + args
            obj = obj.__func__
        elif _user_callable_object(obj):
            obj = types.MethodType(type(obj).__call__, obj)
        else:
            return obj, args, kwargs


def _user_callable_object(obj) -> bool:
    """An object whose class, a user's, defines ``__call__`` in Python (not a gradient object, not a library's
    such as ``np.vectorize``, whose source astgrad never follows)."""
    kind = type(obj)
    call = next((vars(c)["__call__"] for c in kind.__mro__ if "__call__" in vars(c)), None)  # as type(obj).__call__
    return not isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__astgrad_function__", None) is None \
        and isinstance(call, types.FunctionType) \
        and str(kind.__module__).split(".")[0] not in ("numpy", "scipy", "astgrad")


def _fixed(n, value):
    """An argument a partial or a bound method fixed, as an atom of generated code."""
    if value is None or type(value) in (bool, int, float, str):
        return compat.const(value)
    return compat.name(n.ns.bind(value, "fixed"))


def _call(n, target, expr):
    func = expr.func
    if isinstance(func, gast.Name) and func.id in n.lambdas:
        _inline_lambda(n, target, expr, n.lambdas[func.id])
        return
    if write_call(n, target, expr):
        return
    if any(isinstance(a, gast.Starred) for a in expr.args) or any(kw.arg is None for kw in expr.keywords):
        _spread_call(n, target, expr)
        return
    if consumed_generator(expr):  # tuple(x for x in xs): the items of the list comprehension, in order
        generator = expr.args[0]
        if n.static(func) is not getattr(builtins, func.id):
            raise n.error(generator, "generator expressions are not supported", "Use a list comprehension [...] "
                          "instead.")
        expr.args[0] = compat.make("ListComp", elt=generator.elt, generators=generator.generators,
                                   lineno=generator.lineno, col_offset=generator.col_offset)
    args = [n.atomize(a) for a in expr.args]
    kwargs = {kw.arg: n.atomize(kw.value) for kw in expr.keywords}
    obj = n.static(func)
    marked = False  # astgrad.checkpoint(g)(...), or g made by @astgrad.checkpoint: recomputed, not saved
    if isinstance(func, gast.Call) and n.static(func.func) is checkpoints.checkpoint:
        if len(func.args) != 1 or func.keywords or isinstance(func.args[0], gast.Starred):
            raise n.error(func, "astgrad.checkpoint takes one function", "Write `astgrad.checkpoint(step)(x, p)`.")
        func, marked = func.args[0], True
        obj = n.static(func)
    elif isinstance(obj, checkpoints.Checkpointed):
        obj, marked = obj.__wrapped__, True
    elif obj is MISSING and (made := made_vmap(n, func)) is not None:
        obj = made  # astgrad.vmap(g)(x): the vmapped function, as if bound to a name
    if getattr(obj, "__astgrad_raw__", None) is None and getattr(obj, "__astgrad_primitive__", None) is not None:
        obj = obj.__astgrad_primitive__  # a primitive's function itself (generated code calls append so): its entry
    if obj is MISSING and isinstance(func, gast.Name) and func.id == n.src.fn.__code__.co_name \
            and func.id not in n.locals:
        obj = n.src.fn  # a decorated function calling itself while being decorated
    if obj is MISSING and isinstance(func, gast.Name) and func.id in n.callables:
        obj = n.callables[func.id]  # a parameter holding a function: the one it holds in the calls served
    if obj is MISSING and (method := methods.method_of(n, func)) is not None:  # self.forward(x)
        base = n.atomize(func.value)
        n.out.append(n.checked(checks.same_method, base, func.attr, n.ns.ref(method),
                               compat.to_source(expr).strip()))
        n.emit([target], "call", compat.call(n.ns.ref(method), [base] + args, kwargs), expr, fn=method,
               args=[base] + args, kwargs=kwargs)
        return
    if obj is getattr and len(args) == 2 and not kwargs and isinstance(args[1], gast.Constant) \
            and isinstance(args[1].value, str):  # getattr(obj, "M"): obj.M, read as a field is
        _attribute(n, target, compat.make("Attribute", value=args[0], attr=args[1].value, ctx=gast.Load(),
                                          lineno=expr.lineno, col_offset=expr.col_offset))
        return
    if obj is not MISSING:
        obj, args, kwargs = _bound_parts(n, obj, args, kwargs)
    if obj is MISSING and isinstance(func, gast.Attribute):
        _method(n, target, expr, n.atomize(func.value), func.attr, args, kwargs)
        return
    if obj is MISSING:
        callee = n.atomize(func)
        node = compat.call(callee, args, kwargs)
        what = f"{CALLING_A_LOCAL} ({func.id})" if isinstance(func, gast.Name) else \
            f"calling a function computed in the body ({compat.to_source(func).strip()})"
        n.emit([target], "opaque", node, expr, error=(
            f"{what} is not supported: astgrad cannot tell which function it is",
            "Call a module-level function or a numpy function by its name. (A parameter of the function given to "
            "grad, value_and_grad or vjp is called as the function it holds when the gradient is called: "
            "a Python function, a lambda, a functools.partial or a bound method.)"))
        return
    inner = primitives.unwrap_gradient_object(obj)
    if inner is not obj and inner is not getattr(n.src.fn, "__astgrad_function__", n.src.fn) \
            and generated_jvp(obj) is not None:
        jvp_call(n, target, expr, obj, _primitive)  # reverse over forward: the jvp's code, a callee
        return
    why = "calling a generated gradient or jvp inside a differentiated function is not supported"
    if inner is not obj and inner is not getattr(n.src.fn, "__astgrad_function__", n.src.fn) \
            and getattr(type(obj), "_as_primitive", None) is not None:
        primitive, why = obj._as_primitive(kwargs)
        if primitive is not None:  # grad(f) called here: its derivatives are hessian blocks of f
            given = [n.ns.ref(obj) if isinstance(func, gast.Call) else n.static_ref(func), *args]
            _primitive(n, target, compat.call(n.ns.ref(primitive), given), expr, primitive, given, {})
            return
    if inner is not obj:
        if inner is not getattr(n.src.fn, "__astgrad_function__", n.src.fn):
            node = compat.call(n.ns.ref(obj) if isinstance(func, gast.Call) else n.static_ref(func), args, kwargs)
            why, hint = why if isinstance(why, tuple) else (why, (
                "Its derivative would be a higher derivative, which the generated engine computes only for "
                "grad(f) and jvp(f) of a plain function called with every argument by position. Compute the "
                "inner gradient outside, write grad(grad(f)), astgrad.hessian(f) or astgrad.hvp(f)(*args, v); "
                "or use the tape: astgrad.autograd.grad(..., create_graph=True)."))
            n.emit([target], "opaque", node, expr, error=(why, hint))
            return
        obj = inner  # a decorated function calling itself by name: recursion on the primal
    callee = n.static_ref(func) if obj is n.static(func) else n.ns.ref(obj)
    if obj is runtime.put and len(args) == 3 and not kwargs:  # generated code differentiated again (hessian)
        _primitive(n, target, compat.call(callee, args), expr, rules.setitem, args, {})  # as normalize made it
        return
    kind, info = primitives.classify(obj)
    if kind == "prim" and (isinstance(obj, _np.ufunc) or obj in primitives.ARRAY_ARGUMENTS):
        args = [_as_array(n, a, expr) for a in args]
    node = compat.call(callee, args, kwargs)
    if kind == "prim":
        _primitive(n, target, node, expr, obj, args, kwargs, rule=info)
    elif kind == "opaque":
        n.emit([target], "opaque", node, expr, fn=obj, args=args, kwargs=kwargs, error=(
            info.split(". ")[0], _rule_hint(info)))
    elif kind == "copy":
        if len(args) != 1 or kwargs:
            raise n.error(expr, "float() takes one argument here")
        n.emit([target], "copy", node, expr, args=args)
    else:
        op = n.emit([target], kind, node, expr, fn=obj, args=args, kwargs=kwargs)
        if marked and kind == "call":
            drawn = reruns.random_use(obj)
            if drawn is not None:
                raise n.error(expr, f"astgrad.checkpoint({obj.__qualname__}) would run it again in the reverse sweep, "
                              f"and it draws random numbers ({drawn}): the second run would differ from the first",
                              "Draw the random numbers outside the checkpointed function and pass them in.")
            wrote = reruns.state_writes(obj)
            if wrote is not None:
                raise n.error(expr, f"astgrad.checkpoint({obj.__qualname__}) would run it again in the reverse sweep, "
                              f"and it may write state its call does not return ({wrote}): the second run would "
                              "write it again and read what the first wrote",
                              "Make the function return what it computes and write nothing else, or drop "
                              "astgrad.checkpoint.")
            op.checkpoint = True


def _spread_call(n, target, expr):
    """``np.random.rand(*x.shape)``, ``np.zeros(**spec)``: a call with ``*`` or ``**``, run as written where
    the callable gives no gradient (no rule, or declared to have none): a rule or a user function binds
    its arguments one by one, which a spread list does not say."""
    obj = n.static(expr.func)
    kind = primitives.classify(obj)[0] if obj is not MISSING else "method"
    if kind not in ("nondiff", "opaque"):
        raise n.error(expr, f"*args or **kwargs in a call of {compat.to_source(expr.func).strip()}, which astgrad "
                      "differentiates, is not supported",
                      "Pass the arguments one by one (`f(a, b)`, `f(x, k=v)`).")
    args = [compat.make("Starred", value=n.atomize(a.value), ctx=gast.Load()) if isinstance(a, gast.Starred)
            else n.atomize(a) for a in expr.args]
    keywords = [compat.make("keyword", arg=kw.arg, value=n.atomize(kw.value)) for kw in expr.keywords]
    node = compat.make("Call", func=n.static_ref(expr.func), args=args, keywords=keywords)
    plain = [a.value if isinstance(a, gast.Starred) else a for a in args]
    if kind == "nondiff":
        n.emit([target], "nondiff", node, expr, fn=obj, args=plain)
    else:
        n.emit([target], "opaque", node, expr, fn=obj, args=plain, error=(
            f"no gradient rule for {rules.qualified_name(obj)}", "Call it on values that carry no gradient."))


def _as_array(n, atom, expr):
    """A list or tuple given where numpy takes an array, as the array numpy makes of it (``np.asarray``).

    ``np.dot([x, 1.0], w)``: the rule then computes with an array, never with the list
    (``g * [x, 1.0]`` is no product), and the list gets its gradient back through asarray's rule.
    """
    if not isinstance(atom, gast.Name) or atom.id not in n.sequences:
        return atom
    temp = n.temp()
    _primitive(n, temp, compat.call(n.ns.ref(_np.asarray), [atom]), expr, _np.asarray, [atom], {})
    return compat.name(temp)


def _rule_hint(message: str) -> str:
    parts = message.split(". ", 1)
    return parts[1] if len(parts) > 1 else ""


#: the methods of scipy.stats's distributions that have rules when called on the distribution itself
DISTRIBUTION_METHODS = frozenset({"logpdf", "pdf", "cdf", "sf", "logcdf", "logsf", "logpmf", "pmf"})


def _method(n, target, expr, base, method, args, kwargs):
    if method == "view" and _numpy_view(n, expr, args, kwargs):  # x.view(), x.view(Sub): x, as a plain array
        _primitive(n, target, compat.call(n.ns.ref(_np.asarray), [base]), expr, _np.asarray, [base], {})
        return
    if method in primitives.STOP_METHODS and not args:
        n.emit([target], "stop", base, expr, args=[base])
        return
    if method in primitives.COPY_METHODS and not args:
        n.emit([target], "copy", base, expr, args=[base])
        return
    entry = primitives.METHODS.get(method)
    if entry is None:
        node = compat.call(compat.attr(base, method), args, kwargs)
        shown = compat.to_source(expr.func.value if isinstance(expr.func, gast.Attribute) else base).strip()
        hint = (f"Call a numpy function with a rule instead (see docs/supported-python.md); for a method of your own, "
                f"call it through its class, `TheClass.{method}({shown}, ...)`, which astgrad then differentiates (a "
                f"method called on self or on a global object is found by itself).")
        if method in DISTRIBUTION_METHODS:
            hint += (f" For a frozen scipy.stats distribution, call the distribution's method with its parameters as "
                     f"arguments: norm.{method}(x, loc, scale), not norm(loc, scale).{method}(x).")
        n.emit([target], "opaque", node, expr, error=(
            f"{shown}.{method}(...) has no gradient rule: astgrad cannot tell which function it calls (the method "
            f".{method}() of an array has none, and an object's class is known only where it runs)", hint))
        return
    fn, packs = entry
    if packs and len(args) > 1:
        args = [compat.tuple_(args)]
    kind, rule = primitives.classify(fn)
    node = compat.call(n.ns.ref(fn), [base] + args, kwargs)
    if kind == "prim":
        _primitive(n, target, node, expr, fn, [base] + args, kwargs, rule=rule)
    else:
        n.emit([target], kind, node, expr, fn=fn, args=[base] + args, kwargs=kwargs)


def _numpy_view(n, expr, args, kwargs) -> bool:
    """Whether ``x.view(...)`` has numpy's meaning and views ``x`` as the plain array it is; or a refusal.

    ``x.view()`` and ``x.view(T)`` for a subclass ``T`` of ndarray that
    changes no meaning (``value_types``): True.  ``x.view(T)`` for one that
    does, and ``x.view(dtype)`` (the same bytes read as other numbers): a
    ``TransformError`` at the call.  Anything else (``x.view(2, 3)``,
    ``x.view(-1)``) is the Tensor method, a reshape: False.
    """
    given = list(args) + [kwargs[k] for k in ("dtype", "type") if k in kwargs]
    if not given:
        return True
    if len(given) > 1:
        return False
    kind = given[0].value if isinstance(given[0], gast.Constant) else n.static(given[0])
    if kind is MISSING or isinstance(kind, (int, tuple, list)) and not isinstance(kind, bool):
        return False
    shown = compat.to_source(expr).strip()
    if isinstance(kind, type) and issubclass(kind, _np.ndarray):
        why = other_meaning(_np.empty(0).view(kind), compat.to_source(expr.func.value).strip())
        if why is None:
            return True
        raise n.error(expr, f"{shown} makes {why}", "Compute with the plain array (drop the .view).")
    try:
        _np.dtype(kind)
    except TypeError:
        return False
    raise n.error(expr, f"{shown} reads the bytes of the array as numbers of another dtype: the values jump with "
                  "the bits, so there is no derivative", "Convert the values with .astype(...) instead.")


def defined_lambda(n, name, lam):
    """``lam`` with each default replaced by a name holding its value now: Python evaluates a lambda's
    defaults where it is defined, and the call that inlines the body may come after their names changed.

    The body is inlined at every call of ``name``, so ``name`` must be bound once in the function: with
    two lambdas (one per branch) a call would inline the last one read, whichever ran.
    """
    stores = [node for node in gast.walk(n.src.tree) if isinstance(node, gast.Name) and node.id == name
              and isinstance(node.ctx, (gast.Store, gast.Del))]
    if len(stores) > 1:
        raise n.error(lam, f"{name} is bound to this lambda and elsewhere in the function; astgrad inlines "
                           f"a lambda at its calls, so it must be the only value the name holds",
                      "Give each lambda its own name, or write a def.")
    lam = compat.clone(lam)
    defaults = []
    for default in lam.args.defaults:
        if not compat.is_literal(default):
            atom = n.atomize(default)
            default = compat.name(n.temp())
            n.emit([default.id], "copy", atom, args=[atom])
        defaults.append(default)
    lam.args.defaults = defaults
    return lam


def _inline_lambda(n, target, expr, lam):
    params = [a.id for a in lam.args.args]
    if expr.keywords or len(expr.args) > len(params):
        raise n.error(expr, "call local lambdas with positional arguments only")
    atoms = [n.atomize(a) for a in expr.args]
    defaults = list(lam.args.defaults)
    missing = len(params) - len(atoms)
    if missing > len(defaults):
        raise n.error(expr, "too few arguments for the lambda")
    atoms += [compat.clone(d) for d in defaults[len(defaults) - missing:]] if missing else []
    body = compat.clone(lam.body)
    mapping = dict(zip(params, atoms))
    _substitute(body, mapping)
    n.assign(target, body)


def _substitute(tree, mapping):
    for node in gast.walk(tree):
        for field, value in gast.iter_fields(node):
            if isinstance(value, gast.Name) and value.id in mapping:
                setattr(node, field, compat.clone(mapping[value.id]))
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, gast.Name) and item.id in mapping:
                        value[i] = compat.clone(mapping[item.id])


def _primitive(n, target, node, expr, fn, args, kwargs, rule=None):
    if rule is None:
        kind, info = primitives.classify(fn)
        rule = info if kind == "prim" else rules.find(fn)
    if rule is None:
        n.emit([target], "opaque", node, expr, fn=fn, args=args, kwargs=kwargs,
               error=(f"no gradient rule for {rules.qualified_name(fn)}", ""))
    elif not rule.differentiable or _integer_result(n, fn, args, kwargs):
        n.emit([target], "nondiff", node, expr, fn=fn, args=args, kwargs=kwargs)
    else:
        n.emit([target], "prim", node, expr, fn=fn, args=args, kwargs=kwargs)


def _integer_result(n, fn, args, kwargs) -> bool:
    """``np.sum(x, dtype=int)``, ``x.astype(np.int32)``: integers carry no gradient (the tape drops them too).

    Only a dtype written as a constant or a module-level name is known here; another is left to the rule.
    """
    dtype = kwargs.get("dtype")
    if dtype is None and fn is rules.astype and len(args) > 1:
        dtype = args[1]
    if dtype is None:
        return False
    value = dtype.value if isinstance(dtype, gast.Constant) else n.static(dtype)
    if value is MISSING or value is None:
        return False
    try:
        return _np.dtype(value).kind in "biu"
    except TypeError:
        return False


_HANDLERS = {
    "Name": _name, "Constant": _constant, "BinOp": _binop, "UnaryOp": _unaryop,
    "Compare": _compare, "BoolOp": _boolop, "IfExp": _ifexp, "Tuple": _sequence,
    "List": _sequence, "Dict": _dict, "Subscript": _subscript, "Attribute": _attribute,
    "Lambda": _lambda, "ListComp": _listcomp, "Call": _call,
    "JoinedStr": lambda n, t, e: n.emit([t], "nondiff", n.kept_as_written(e), e),
}
