"""Whether a generated adjoint surely returns fresh arrays of its arguments' shapes and dtypes.

The compiled entry of a gradient (api/gradient.py) returns a gradient as it
is only when it is a fresh array of its argument's shape and dtype, no view
of anything, writeable, and none of the arguments nor another gradient;
otherwise ``_finish`` copies it.  Those tests were about two fifths of the
entry's own cost on a 2x2 gradient (W1, docs/performance.md).  Where the
adjoint is a straight line of arithmetic on its float array arguments and
numbers, the answer is known when the entry is compiled, and the entry
leaves the tests out.

``fresh_like`` reads the generated function (parsed from the source it was
compiled from, never a function put in its place) and follows each local
through its assignments, knowing only this much of numpy and Python:

* a parameter the entry's guard proves to be an exact ``ndarray`` of rank 1
  or more with a real float dtype (float64, float32 or float16) is an array
  "like" that argument: its shape and dtype;
* a number literal (``int`` or ``float``, not ``bool``), the seed's default
  (a number: the grad entry never passes a seed), ``a.size`` and ``a.ndim``
  of such an array, and ``+ - * /`` and unary ``-`` of numbers, are Python
  numbers (never complex: ``**`` of two numbers is not taken);
* ``+ - * / **`` of an array like argument ``p`` with a number or another
  array like ``p``, and ``-`` of one, are a new array like ``p``: numpy
  allocates the result (``base`` None, writeable), its shape is ``p``'s,
  and a real float dtype keeps itself against Python numbers (NEP 50; the
  same under numpy 1's value-based casting, where a scalar of the same kind
  never widens an array);
* ``add_into``, ``subtract_into``, ``multiply_into`` and ``divide_into``
  (runtime) compute the operator, possibly into their first operand: the
  result may be that operand's object.

A statement that only computes shapes with the runtime's helpers (the check
of a value nothing reads, ``broadcast_shape(shape(t2), shape(x))``) may
raise, and changes nothing.  Anything else (another call, a subscript, a
branch, a loop, any other statement) proves nothing, and the entry keeps
every test.  The proof holds for all the returned gradients or
for none: each must be a new array like its own argument, and no two may be
the same object.
"""

from __future__ import annotations

import ast

from ..transform import runtime

#: what numpy computes for these operators on float arrays and Python numbers keeps the array's shape and dtype
_ARRAY_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
#: between two Python numbers (``int`` or ``float``), these give an ``int`` or a ``float``, never a complex
_NUMBER_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Div)
#: the runtime helpers that compute an operator, possibly into their first operand
_INTO = {runtime.add_into: ast.Add(), runtime.subtract_into: ast.Sub(), runtime.multiply_into: ast.Mult(),
         runtime.divide_into: ast.Div()}

#: the runtime helpers that compute a shape from shapes or values, and keep nothing
_SHAPES = (runtime.shape, runtime.broadcast_shape, runtime.reduced_shape, runtime.matmul_shape)

#: every global and attribute name a function this module can prove reads
_NAMES = frozenset({"size", "ndim", *(f.__name__ for f in (*_INTO, *_SHAPES))})

_NUMBER = ("number",)


def fresh_like(generated, arrays) -> list | None:
    """For each gradient ``generated`` returns, the position of the parameter it is a new array like; None
    unless that is proven for every one of them, and no two may be the same object.

    ``arrays`` holds the positions of the generated function's parameters
    that the entry's guard proves exact ``ndarray``s of rank 1 or more with
    a real float dtype.  The function must return one name per gradient (a
    tuple of them for several).
    """
    function = generated.function
    code = getattr(function, "__code__", None)
    if generated.guarded is not None or generated.allocator is not None or code is None \
            or code.co_filename != generated.filename:  # under the net, compiled, or not the generated function
        return None
    if not set(code.co_names) <= _NAMES:  # another global or attribute: nothing to prove, and no parse
        return None
    node = next((n for n in ast.parse(generated.source).body if isinstance(n, ast.FunctionDef)
                 and n.name == code.co_name and n.lineno == code.co_firstlineno), None)
    if node is None or node.args.vararg or node.args.kwarg or node.args.posonlyargs:
        return None
    kinds: dict = {arg.arg: ("array", i, None) if i in arrays else None for i, arg in enumerate(node.args.args)}
    defaults = function.__kwdefaults__ or {}
    for arg in node.args.kwonlyargs:  # the seed: the grad entry never passes it
        kinds[arg.arg] = _NUMBER if type(defaults.get(arg.arg)) in (int, float) else None
    *body, last = node.body
    for count, statement in enumerate(body):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            kinds[statement.targets[0].id] = _kind(statement.value, kinds, function.__globals__, count)
        elif isinstance(statement, ast.Expr) and _shape_check(statement.value, function.__globals__):
            pass  # raises where numpy would, keeps nothing
        elif isinstance(statement, ast.Delete) and all(isinstance(t, ast.Name) for t in statement.targets):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    kinds.pop(target.id, None)
        else:
            return None
    if not isinstance(last, ast.Return) or last.value is None:
        return None
    found: list[tuple] = []
    for name in last.value.elts if isinstance(last.value, ast.Tuple) else [last.value]:
        kind = kinds.get(name.id) if isinstance(name, ast.Name) else None
        if kind is None or kind is _NUMBER or kind[2] is None:  # not a new array
            return None
        found.append(kind)
    if len({k[2] for k in found}) != len(found):  # two gradients that may be one object
        return None
    return [k[1] for k in found]


def _kind(node, kinds, namespace, count):
    """``_NUMBER``, ``("array", position, identity)`` (identity None: the argument itself), or None."""
    if isinstance(node, ast.Constant):
        return _NUMBER if type(node.value) in (int, float) else None
    if isinstance(node, ast.Name):
        return kinds.get(node.id)
    if isinstance(node, ast.Attribute):
        inner = _kind(node.value, kinds, namespace, count)
        return _NUMBER if inner is not None and inner[0] == "array" and node.attr in ("size", "ndim") else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _kind(node.operand, kinds, namespace, count)
        if inner is None or inner is _NUMBER:
            return inner
        return ("array", inner[1], count)
    if isinstance(node, ast.BinOp):
        return _operator(node.op, _kind(node.left, kinds, namespace, count),
                         _kind(node.right, kinds, namespace, count), count)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2 \
            and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
        op = _INTO.get(namespace.get(node.func.id))
        if op is None:
            return None
        buffer = _kind(node.args[0], kinds, namespace, count)
        made = _operator(op, buffer, _kind(node.args[1], kinds, namespace, count), count)
        if made is None or made is _NUMBER:
            return made
        # the result may be the buffer itself: its identity, and not fresh if the buffer is an argument
        return ("array", made[1], buffer[2]) if buffer is not _NUMBER else made
    return None


def _shape_check(node, namespace) -> bool:
    """Whether ``node`` only computes shapes, with the runtime's helpers, from names and numbers
    (``broadcast_shape(shape(t2), shape(x))``, the check of a value nothing reads)."""
    for part in ast.walk(node):
        if isinstance(part, ast.Call):
            if not isinstance(part.func, ast.Name) or namespace.get(part.func.id) not in _SHAPES or part.keywords:
                return False
        elif not isinstance(part, (ast.Name, ast.Constant, ast.Tuple, ast.Load)):
            return False
    return True


def _operator(op, left, right, count):
    if left is None or right is None:
        return None
    if left is _NUMBER and right is _NUMBER:
        return _NUMBER if isinstance(op, _NUMBER_OPERATORS) else None
    if not isinstance(op, _ARRAY_OPERATORS):
        return None
    arrays = {k[1] for k in (left, right) if k is not _NUMBER}
    if len(arrays) != 1:  # arrays like two arguments: their shapes and dtypes may differ
        return None
    return ("array", arrays.pop(), count)
