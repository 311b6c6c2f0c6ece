"""A generated jvp called inside a differentiated function: reverse over forward, by transforming its code.

``grad(lambda x: np.sum(f_jvp(x, u)[1] * w))`` differentiates the code
``f_jvp = jvp(f)`` generated: a plain numpy function of ``f``'s arguments
and the tangents, whose text is registered in linecache.  The call becomes a
call of that function, a callee like any user function (its ``jvp_g``
callees too), so the gradient follows its value and its tangent, with
respect to the point and to the direction.  Before the call, each tangent
goes through ``jvp_tangent``, which checks it as ``f_jvp`` itself would
(its shape, a number made an array), since the jvp's own checks run in
Python around the generated code and are not part of it.  The caller's
generated code is current only while the jvp's is: the dependencies of the
jvp's code join the caller's.
"""

from __future__ import annotations

import ast

from ..ir import compat
from ..ir.compat import gast
from ..runtime.tangents import jvp_tangent
from .parse import MISSING


def generated_jvp(obj):
    """The generated jvp ``obj`` is, called as a function (not a method or a partial of one), or None."""
    describe = getattr(type(obj), "_as_callee", None)
    return obj if describe is not None else None


def jvp_call(n, target, expr, jvp, primitive) -> None:
    """``target = jvp(*args, tangents)`` as a call of the jvp's generated function, with its tangents checked.

    ``primitive`` is expressions._primitive (it emits the checks).  Only the
    form whose binding is known here is taken: every argument of ``f``
    positionally, then the tangents (a tuple written in the call for a
    tuple ``wrt``); anything else is refused at the call, saying what to write.
    """
    generated, parameters, names, positions, single = jvp._as_callee()
    owner = jvp.__wrapped__.__qualname__
    shown = n.src.line_text(expr) or owner
    directions = ["d" + name for name in names]
    form = f"{', '.join(parameters)}, {directions[0] if single else '(' + ', '.join(directions) + ')'}"
    starred = any(isinstance(a, gast.Starred) for a in expr.args)
    if expr.keywords or starred or positions is None or len(expr.args) != len(parameters) + 1:
        passed = "keywords" if expr.keywords else "*args" if starred else \
            f"{owner}'s keyword-only parameters" if positions is None else f"{len(expr.args)} arguments"
        raise n.error(expr, f"the jvp of {owner}, called inside a differentiated function, is differentiated "
                            f"through its generated code, which takes every argument of {owner} positionally and "
                            f"then the tangents; this call passes {passed}",
                      f"Write the arguments in order, then the tangent{'' if single else 's as a tuple'}: "
                      f"jvp_of_{owner}({form}), with a value for each")
    *given, tangents = expr.args
    if single:
        tangents = [tangents]
    elif isinstance(tangents, (gast.Tuple, gast.List)) and len(tangents.elts) == len(names):
        tangents = list(tangents.elts)
    else:
        raise n.error(expr, f"the jvp of {owner} with respect to {', '.join(names)} is called here inside a "
                            f"differentiated function with its tangents in one value; its gradient needs to "
                            f"see each tangent",
                      f"Write the {len(names)} tangents as a tuple in the call: jvp_of_{owner}({form})")
    args = [n.atomize(a) for a in given]
    checked = []
    for name, position, tangent in zip(names, positions, tangents):
        tangent = n.atomize(tangent)
        temp = n.temp()
        what = compat.const(f"the argument {name} of {owner}'s jvp, in `{shown}`")
        check = [args[position], tangent, what]
        primitive(n, temp, compat.call(n.ns.ref(jvp_tangent), check), expr, jvp_tangent, check, {})
        checked.append(compat.name(temp))
    n.src.dependencies.update(generated.dependencies)
    function = generated.function
    args = args + checked
    n.emit([target], "call", compat.call(n.ns.ref(function), args), expr, fn=function, args=args, kwargs={})


def made_vmap(n, func):
    """The vmapped function ``astgrad.vmap(g, in_axes, out_axes)`` written as the function of a call, made now
    (as if bound to a name), or None where ``func`` is not such a call.

    ``g`` must be a name the front end resolves (a module-level function:
    the caller's code is made again where it is rebound) and the axes
    literals: a function defined or a value computed in the body could hold
    a differentiated value, which the call's derivative would miss.
    """
    if not isinstance(func, gast.Call) or not getattr(n.static(func.func), "__astgrad_vmap__", False):
        return None
    shown = compat.to_source(func).strip()
    hint = ("Define the function at module level, give it what it reads from the differentiated function as "
            "arguments (in_axes None for those every example shares), and write astgrad.vmap(g, in_axes=(0, "
            "None))(x, w) with literal axes.")
    if not func.args or isinstance(func.args[0], gast.Starred) or len(func.args) > 3 \
            or any(kw.arg not in ("in_axes", "out_axes") for kw in func.keywords):
        raise n.error(func, f"{shown}: astgrad.vmap called inside a differentiated function takes the function, "
                            f"then in_axes and out_axes", hint)
    fn = n.static(func.args[0])
    if fn is MISSING:
        raise n.error(func, f"{shown} inside a differentiated function batches a function defined or computed "
                            f"in the body, which may read a differentiated value that its derivative would "
                            f"miss", hint)
    given = {}
    for key, node in [*zip(("in_axes", "out_axes"), func.args[1:]), *((kw.arg, kw.value) for kw in func.keywords)]:
        try:
            given[key] = ast.literal_eval(compat.to_source(node).strip())
        except (ValueError, SyntaxError):
            raise n.error(node, f"{shown}: the {key} of astgrad.vmap inside a differentiated function is a "
                                f"literal (a number, None, or a tuple of them)", hint) from None
    try:
        return n.static(func.func)(fn, **given)
    except (TypeError, ValueError) as exc:
        raise n.error(func, str(exc)) from None
