"""Reject what the transformer does not support, before transforming.

Each unsupported construct gets an error that points at it and says what to
write instead.  Constructs that are fine on constants but not on values the
gradient flows through (calls without rules, unknown attributes) are checked
later, by ``analyse``, once activity is known.
"""

from __future__ import annotations

import contextlib

from ..ir.compat import gast
from ..ir.errors import UnsupportedSyntaxError

_UNSUPPORTED = {
    gast.Try: ("try/except cannot be differentiated",
               "Move the try/except outside the differentiated function, or check the condition with an if."),
    gast.ClassDef: ("class definitions inside a differentiated function are not supported",
                    "Define the class at module level."),
    gast.FunctionDef: ("nested function definitions are not supported",
                       "Define the helper at module level (it is then differentiated too), or use a lambda."),
    gast.AsyncFunctionDef: ("async functions cannot be differentiated", "Write a plain def function."),
    gast.AsyncFor: ("async for cannot be differentiated", "Use a plain for loop."),
    gast.AsyncWith: ("async with cannot be differentiated", "Remove the async context manager."),
    gast.Await: ("await cannot be differentiated", "Compute the awaited value outside the function."),
    gast.Yield: ("generators cannot be differentiated",
                 "Return a list or an array instead of yielding values."),
    gast.YieldFrom: ("generators cannot be differentiated",
                     "Return a list or an array instead of yielding values."),
    gast.Global: ("global statements (writes to globals) are not supported",
                  "Return the value instead of assigning a global; reading globals is fine."),
    gast.Nonlocal: ("nonlocal statements are not supported",
                    "Return the value instead of assigning to an enclosing variable."),
    gast.Delete: ("del is not supported", "Leave the variable alone, or assign None to it."),
    gast.NamedExpr: ("assignment expressions (:=) are not supported",
                     "Assign the value in its own statement first."),
    gast.GeneratorExp: ("generator expressions are not supported",
                        "Use a list comprehension [...] instead."),
    gast.SetComp: ("set comprehensions are not supported", "Use a list comprehension."),
    gast.DictComp: ("dict comprehensions are not supported", "Use a list comprehension."),
    gast.Starred: ("starred expressions (*args) are not supported",
                   "Pass the arguments one by one."),
    gast.Import: ("import inside a differentiated function is not supported",
                  "Import at module level."),
    gast.ImportFrom: ("import inside a differentiated function is not supported",
                      "Import at module level."),
}

_MATCH = getattr(gast, "Match", None)


def check_function(source) -> None:
    """Raise UnsupportedSyntaxError for the first unsupported construct."""
    fn = source.tree
    args = fn.args
    if args.vararg is not None or args.kwarg is not None:
        raise source.error(fn, f"{fn.name} takes *args or **kwargs, which cannot be differentiated",
                           "Give the function named parameters.", UnsupportedSyntaxError)
    for node in gast.walk(fn):  # a generator returns nothing too: the yield is what to point at
        if isinstance(node, (gast.Yield, gast.YieldFrom)):
            _check_node(source, node, set())
    returns = [n for n in gast.walk(fn) if isinstance(n, gast.Return)]
    if not returns:
        raise source.error(fn, f"{fn.name} returns nothing, so it has no gradient",
                           "Return the value to differentiate.", UnsupportedSyntaxError)
    stored = {n.id for n in gast.walk(fn) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)}
    params = {a.id for a in args.posonlyargs + args.args + args.kwonlyargs}
    local_names = params | stored
    spread = {id(a) for n in gast.walk(fn) if isinstance(n, gast.Call) for a in n.args if isinstance(a, gast.Starred)}
    spread |= {id(n.args[0]) for n in gast.walk(fn) if consumed_generator(n)}  # normalize reads it as a list
    for stmt in fn.body:
        for node in gast.walk(stmt):
            if id(node) not in spread:  # f(*x.shape): normalize takes it where f has no gradient to give
                _check_node(source, node, local_names, params - stored)


#: the builtins that consume every item of a generator they are given, in order, as they would a list's
EAGER_CONSUMERS = ("tuple", "list", "sum", "sorted", "min", "max")


def consumed_generator(call) -> bool:
    """``tuple(x for x in xs)`` (or list, sum, sorted, min, max of one generator expression): normalize lowers the
    generator as the list comprehension, the same items in the same order, where the name is the builtin."""
    return isinstance(call, gast.Call) and isinstance(call.func, gast.Name) and call.func.id in EAGER_CONSUMERS \
        and len(call.args) == 1 and isinstance(call.args[0], gast.GeneratorExp) and not call.keywords


def _check_node(source, node, local_names, objects=frozenset()):
    for kind, (message, hint) in _UNSUPPORTED.items():
        if isinstance(node, kind):
            raise source.error(node, message, hint, UnsupportedSyntaxError)
    if _MATCH is not None and isinstance(node, _MATCH):
        raise source.error(node, "match statements are not supported", "Use if/elif/else.",
                           UnsupportedSyntaxError)
    if isinstance(node, (gast.For, gast.While)) and node.orelse:
        raise source.error(node, "else clauses on loops are not supported",
                           "Use a flag variable set before break, and test it after the loop.",
                           UnsupportedSyntaxError)
    if isinstance(node, gast.Lambda) and (node.args.vararg or node.args.kwarg):
        raise source.error(node, "lambdas with *args or **kwargs are not supported",
                           "Give the lambda named parameters.", UnsupportedSyntaxError)
    if isinstance(node, gast.Assign):
        for target in node.targets:
            if not (isinstance(target, gast.Attribute) and isinstance(target.value, gast.Name)
                    and target.value.id in objects):  # layer.running_mean = v: front/caller_state decides
                _check_target(source, target, local_names)
    if isinstance(node, gast.AugAssign):
        _check_target(source, node.target, local_names)
    if isinstance(node, gast.With):
        _check_with(source, node, local_names)


def _check_with(source, node, local_names):
    """``with m: body`` runs as written (normalize.with_block): no ``as`` target, no manager that may swallow an
    exception, no jump out of the block (the generated code leaves it only at its end)."""
    for item in node.items:
        expr = item.context_expr
        made = source.resolve_expr(expr.func, local_names) if isinstance(expr, gast.Call) else None
        if getattr(made, "__name__", "") == "no_grad" and len(node.items) == 1:
            return
        if made is contextlib.suppress:
            raise source.error(node, "`with contextlib.suppress(...)` goes on after the block when an exception "
                               "is raised in it, which astgrad's generated code cannot follow",
                               "Catch the exception outside the differentiated function, or test for the "
                               "condition with `if`.", UnsupportedSyntaxError)
        if item.optional_vars is not None:
            raise source.error(node, "`with ... as name` is not supported inside a differentiated function",
                               "Drop `as name` (the block runs under the manager as written), or use the "
                               "manager outside the function.", UnsupportedSyntaxError)
    for inner in _jumps(node.body, loop=False):
        raise source.error(inner, f"{type(inner).__name__.lower()} inside a `with` block is not supported: "
                           "astgrad's generated code leaves the manager only at the end of the block",
                           "Set a flag or the result in the block and act on it after the block.",
                           UnsupportedSyntaxError)


def _jumps(stmts, loop):
    """The ``return`` statements in ``stmts`` and the ``break``/``continue`` not inside a loop there."""
    for s in stmts:
        if isinstance(s, gast.Return) or not loop and isinstance(s, (gast.Break, gast.Continue)):
            yield s
        for field in ("body", "orelse"):
            yield from _jumps(getattr(s, field, []), loop or isinstance(s, (gast.For, gast.While)))


def _check_target(source, target, local_names):
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:  # h[:, t, :], c = step(...): each target as if assigned alone, left to right
            if isinstance(elt, gast.Starred):
                raise source.error(elt, "starred unpacking (`a, *rest = ...`) is not supported",
                                   "Unpack by position (`a, rest = xs[0], xs[1:]`).", UnsupportedSyntaxError)
            _check_target(source, elt, local_names)
    elif isinstance(target, (gast.Attribute, gast.Subscript)):
        base, attribute = target, False
        while isinstance(base, (gast.Subscript, gast.Attribute)):  # a[i][j] = v: normalize writes a[i] back
            attribute = attribute or isinstance(base, gast.Attribute)
            base = base.value
        if attribute and (not isinstance(base, gast.Name) or base.id in local_names):
            raise source.error(target, "assigning to an attribute of an object the function was given or made is "
                               "not supported (a method that stores into self included): the gradient cannot follow "
                               "a value through the object to where it is read back",
                               "Keep the value in a local variable and return it; store arrays on the object before "
                               "the differentiated call and pass the object in (its fields are read as written; a "
                               "dataclass or a class registered with astgrad.register_pytree gets its gradient back "
                               "in its structure).", UnsupportedSyntaxError)
        if not isinstance(base, gast.Name):
            raise source.error(target, "only item assignment into a name (`name[i] = v`, `name[i][j] = v`) is "
                               "supported", "Assign the inner object to a name first.", UnsupportedSyntaxError)
