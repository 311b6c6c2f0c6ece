"""Zero tests Numba's types decide, and the branches they make dead, removed before Numba types the function.

A callee's backward function (and the entry, where control flow joins)
guards each rule with ``if is_zero(g):``: the numpy backend writes the
number 0.0 for a gradient a path did not reach, and a rule skips its work
for it.  Compiled, ``is_zero`` of an array is False and of None is True
(helpers.py's implementation decides on the type alone), yet Numba types,
lowers and hands LLVM both arms of every such test, and a dead arm can
stop the compile: ``dt15 = 0.0`` in the arm of ``if is_zero(dvel0):``,
where ``dvel0`` is an array, makes ``dt15`` a number on one path and an
array on the other ("Cannot unify").

``ZeroTestsCompiler`` is astgrad's pipeline (pipeline.py) with one pass more, before type
inference: it types the function as far as it can (Numba's partial type
inference, which raises nothing), replaces each ``is_zero(x)`` whose
argument it typed as an array or a list (False) or None (True) by that
constant, prunes the branches that constant decides with Numba's own
pruning (which mends the SSA joins), and repeats while a round decided a
test (a pruned arm can make another name one type).  The proof is checked
after the real type inference: every argument decided keeps the type it
was decided on, or the compile stops with an error (never a different
number).  Tests on numbers (``g == 0.0``, decided when the code runs) and
on "None or an array" are left as written.  The module is compiled this
way only where a test's arm binds a number the other arm does not
(``needed``): the rounds of typing cost more than they spare elsewhere.
"""

from __future__ import annotations

from ...transform import runtime
from ...transform.ir.compat import gast
from . import pipeline

#: rounds of partial typing at most (each decides the tests the pruning before it made decidable)
_ROUNDS = 4

_pipeline = None


def needed(functions, namespace) -> bool:
    """Whether a zero test of ``functions`` has an arm binding a name to a number (``dt15 = 0.0``) where its
    other arm binds it to something else: only there can a dead arm stop the compile ("Cannot unify").

    Elsewhere pipeline.py's is kept: the rounds of partial typing
    cost more than the dead arms they spare on RK4 (S2, one run: 7.0 s of
    a first compile against 8.0 s with the pass).
    """
    def zero_test(node) -> bool:
        if isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
            node = node.operand
        return isinstance(node, gast.Call) and isinstance(node.func, gast.Name) \
            and namespace.get(node.func.id) is runtime.is_zero

    def numbers(stmts) -> set:
        return {s.targets[0].id for s in stmts if isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and isinstance(s.value, gast.Constant)
                and type(s.value.value) is float}

    def bound(stmts) -> set:
        return {t.id for s in stmts for n in gast.walk(s) if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store)
                for t in [n]}
    for fn_def in functions:
        for node in gast.walk(fn_def):
            if isinstance(node, gast.If) and zero_test(node.test):
                arms = (node.body, node.orelse)
                if any(numbers(arm) & (bound(other) - numbers(other)) for arm, other in (arms, arms[::-1])):
                    return True
    return False


def compiler():
    """The pipeline class (made once, Numba imported here)."""
    global _pipeline
    if _pipeline is None:
        _pipeline = _make()
    return _pipeline


def _make():
    from numba.core import ir, types
    from numba.core.analysis import dead_branch_prune
    from numba.core.compiler_machinery import FunctionPass, register_pass
    from numba.core.errors import NumbaError
    from numba.core.ir_utils import build_definitions, get_definition, guard
    from numba.core.typed_passes import NopythonTypeInference, type_inference_stage
    from numba.core.untyped_passes import LiteralPropagationSubPipelinePass

    def decided(kind):
        """The value ``is_zero`` has for every value of the type ``kind``, or None where it depends on the value."""
        if isinstance(kind, (types.Array, types.List)):
            return False
        if isinstance(kind, types.NoneType):
            return True
        return None

    def zero_tests(func_ir):
        """``(assignment, argument name)`` of each ``is_zero(x)`` call in ``func_ir``."""
        found = []
        for block in func_ir.blocks.values():
            for stmt in block.body:
                value = stmt.value if isinstance(stmt, ir.Assign) else None
                if isinstance(value, ir.Expr) and value.op == "call" and len(value.args) == 1 and not value.kws:
                    callee = guard(get_definition, func_ir, value.func)
                    if isinstance(callee, (ir.Global, ir.FreeVar)) and callee.value is runtime.is_zero:
                        found.append((stmt, value.args[0].name))
        return found

    @register_pass(mutates_CFG=True, analysis_only=False)
    class DecideZeroTests(FunctionPass):
        _name = "astgrad_decide_zero_tests"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            func_ir = state.func_ir
            proofs = state.metadata.setdefault("astgrad_zero_tests", {})
            changed = False
            for _ in range(_ROUNDS):
                tests = zero_tests(func_ir)
                if not tests:
                    break
                typemap = type_inference_stage(state.typingctx, state.targetctx, func_ir, state.args, None,
                                               state.locals, raise_errors=False)[0]
                done = 0
                for stmt, name in tests:
                    kind = typemap.get(name)
                    value = decided(kind) if kind is not None else None
                    if value is None:
                        continue
                    proofs[name] = value
                    const = ir.Const(value, loc=stmt.loc)
                    definitions = func_ir._definitions[stmt.target.name]
                    func_ir._definitions[stmt.target.name] = [const if d is stmt.value else d for d in definitions]
                    stmt.value = const
                    done += 1
                if not done:
                    break
                dead_branch_prune(func_ir, state.args)
                func_ir._definitions = build_definitions(func_ir.blocks)
                changed = True
            return changed

    @register_pass(mutates_CFG=False, analysis_only=True)
    class CheckZeroTests(FunctionPass):
        _name = "astgrad_check_zero_tests"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            for name, value in state.metadata.get("astgrad_zero_tests", {}).items():
                kind = state.typemap.get(name)
                if kind is not None and decided(kind) is not value:
                    raise NumbaError(f"astgrad: a zero test decided on the type of {name!r} before type inference "
                                     f"({value}) does not hold for its type {kind}")
            return False

    base: type = pipeline.compiler()

    class ZeroTestsCompiler(base):  # type: ignore[valid-type,misc]
        def define_pipelines(self):
            pm = self.nopython_passes()
            pm.add_pass_after(DecideZeroTests, LiteralPropagationSubPipelinePass)
            pm.add_pass_after(CheckZeroTests, NopythonTypeInference)
            pm.finalize()
            return [pm]

    return ZeroTestsCompiler
