"""What a rule reads: the one place both engines ask.

A rule is ``rule(g, ans, *args, **kwargs)``.  The tape decides from this
module which arguments (and whether the output) a node must keep alive and
version-check; the transformer decides which primal values the adjoint reads
(so they are saved, or not overwritten).  Both ask the same questions:

* :func:`parameter_usage`: per parameter of the rule, ``"value"`` (read),
  ``"meta"`` (only its ``.shape``/``.ndim``/``.dtype``/``.size``) or
  ``"unused"``, from the rule's source; ``"value"`` for everything when the
  source cannot be read;
* :func:`argument_usage`: the same for positional argument ``i`` of a call
  (or its output), mapped through the rule's signature; an argument that
  lands in ``*args``, or that the signature cannot name, counts as read;
* :func:`without_unneeded_gradients`: a variant of the rule that computes
  only the gradients a call needs, with that variant's usage.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import weakref
from typing import Callable

#: attributes of an argument that a rule may read without keeping the
#: argument itself alive (the tape keeps only this metadata when a rule reads
#: nothing else of the argument).
META_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size"})

_positional_names: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def positional_parameters(rule: Callable) -> list:
    """The rule's parameters after ``g`` and ``ans`` that a call's positional arguments fill, in order.

    Stops at ``*args`` or the first keyword-only parameter: arguments past
    those are not matched to a named parameter.
    """
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = []
    for param in list(inspect.signature(rule).parameters.values())[2:]:
        if param.kind not in kinds:
            break
        positional.append(param)
    return positional


def argument_usage(rule: Callable, usage: dict, index: int) -> str:
    """How ``rule`` (with ``usage`` from :func:`parameter_usage`) uses positional argument ``index``.

    ``index`` -1 is the output ``ans``.  An argument that does not land on a
    named positional parameter (it goes into ``*args``, or the signature
    cannot be read) is ``"value"``: read, the safe answer.
    """
    try:
        names = _positional_names.get(rule)
    except TypeError:  # not weakly referenceable (None: no rule)
        names = None
    if names is None:
        try:
            params = list(inspect.signature(rule).parameters.values())
        except (TypeError, ValueError):
            return "value"
        ans = [params[1].name] if len(params) > 1 and params[1].kind in (
            params[1].POSITIONAL_ONLY, params[1].POSITIONAL_OR_KEYWORD) else [None]
        names = ans + [p.name for p in positional_parameters(rule)]
        try:
            _positional_names[rule] = names
        except TypeError:  # not weakly referenceable: ask again next time
            pass
    position = 0 if index < 0 else index + 1
    if position >= len(names) or names[position] is None:
        return "value"
    return usage.get(names[position], "value")


def parameter_names(rule: Callable) -> list[str]:
    """The rule's named parameters (not ``*args``/``**kwargs``)."""
    return [
        p.name
        for p in inspect.signature(rule).parameters.values()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def parameter_usage(rule: Callable) -> dict[str, str]:
    """Per named parameter of ``rule``: ``"value"``, ``"meta"`` or ``"unused"`` (see the module)."""
    params = parameter_names(rule)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(rule)))
    except (OSError, TypeError, SyntaxError):
        return {name: "value" for name in params}
    func = tree.body[0]
    if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return {name: "value" for name in params}  # a lambda: the conservative answer
    return _usage_in(func, params)


def without_unneeded_gradients(rule: Callable, needed: tuple):
    """Recompile ``rule`` with unneeded tuple entries of its returns set to None.

    Returns ``(variant, usage)``, or ``None`` when nothing would change or the
    rule cannot be recompiled faithfully (no source, a closure, no literal
    tuple return).
    """
    if all(needed) or getattr(rule, "__closure__", None):
        return None
    try:
        lines, first_line = inspect.getsourcelines(rule)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    func = tree.body[0]
    if not isinstance(func, ast.FunctionDef):
        return None
    func.decorator_list = []
    changed = False
    for node in _own_nodes(func):
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
            for i, wanted in enumerate(needed[: len(node.value.elts)]):
                if not wanted:
                    node.value.elts[i] = ast.copy_location(ast.Constant(None), node.value.elts[i])
                    changed = True
    if not changed:
        return None
    ast.increment_lineno(tree, first_line - 1)
    namespace: dict = {}
    exec(compile(tree, inspect.getsourcefile(rule) or "<rule>", "exec"), rule.__globals__, namespace)
    variant = namespace[func.name]
    variant.__defaults__ = rule.__defaults__
    variant.__kwdefaults__ = rule.__kwdefaults__
    return variant, _usage_in(func, parameter_names(rule))


def _own_nodes(func):
    """The nodes of ``func``'s body, not descending into nested functions."""
    stack = list(func.body)
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                stack.append(child)


def _numpy_meta_call(call, node) -> bool:
    """``np.shape(a)``, ``np.ndim(a)``, ``np.size(a)``: numpy reads ``a.shape`` (``.ndim``, ``.size``) first."""
    return (
        isinstance(call, ast.Call)
        and call.args == [node]
        and not call.keywords
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in ("shape", "ndim", "size")
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id in ("np", "numpy")
    )


def _usage_in(func: ast.FunctionDef | ast.AsyncFunctionDef, params: list[str]) -> dict[str, str]:
    """Per parameter: read as a value, only for its metadata, or not at all."""
    body = ast.Module(body=func.body, type_ignores=[])
    parents: dict[int, ast.AST] = {}
    for node in ast.walk(body):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    usage = {name: "unused" for name in params}
    for node in ast.walk(body):
        if isinstance(node, ast.Name) and node.id in usage:
            parent = parents.get(id(node))
            meta = (
                isinstance(parent, ast.Attribute)
                and parent.value is node
                and parent.attr in META_ATTRIBUTES
            ) or _numpy_meta_call(parent, node)
            if not meta:
                usage[node.id] = "value"
            elif usage[node.id] == "unused":
                usage[node.id] = "meta"
    return usage
