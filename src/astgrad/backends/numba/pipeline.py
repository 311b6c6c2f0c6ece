"""Numba's pipeline as astgrad compiles a generated module: array expressions rewritten only where they fuse.

After type inference Numba rewrites every elementwise operation on arrays
(``dt26 = dt24 * t25``) into an "array expression": a scalar function of
its own, written as Python text, typed, lowered and optimised for each
expression, run by a broadcasting loop.  Where two or more operations meet
(``a * b + c``, as fuse.py writes them) that buys one loop and no array
between them.  A single operation gains nothing from it: Numba's own
implementation of the operator on arrays (its ufunc loop for
``np.multiply``) is the same loop, and needs no function compiled for it.
The reverse sweep of RK4 (S2) writes 34 such single operations; rewritten,
they cost about 0.4 s of its first compile (2.6 s for the entry alone)
and nothing at run time.

``AstgradCompiler`` is Numba's nopython pipeline with its post-inference
rewrites run from a registry of their own, where Numba's array-expression
rewrite is replaced by ``_FusedOnly``: the same rewrite, applied only to
operations that take part in an expression of two or more, and to single
operations whose values differ between the two (``//``, ``%``, ``**``,
written in an array expression with Python's scalar meaning: Numba's ufunc
loop gives ``inf // 2.0`` as inf, its array expression and numpy as nan).  Numba's
registry is left as it is, so no other Numba code changes.  A Numba whose
rewrites differ from the ones this was written for (no ``_get_operands``,
no registry to copy) keeps its own rewrite pass: slower to compile, the
same numbers.
"""

from __future__ import annotations

_pipeline = None


def compiler():
    """The pipeline class astgrad compiles with (made once, Numba imported here)."""
    global _pipeline
    if _pipeline is None:
        _pipeline = _make()
    return _pipeline


def _make():
    import operator

    from numba.core import postproc
    from numba.core.compiler import CompilerBase, DefaultPassBuilder
    from numba.core.compiler_machinery import FunctionPass, register_pass
    from numba.core.rewrites import registry
    from numba.core.typed_passes import NopythonRewrites, fallback_context
    from numba.np.ufunc.array_exprs import RewriteArrayExprs

    known = hasattr(RewriteArrayExprs, "_get_operands") and hasattr(registry.rewrite_registry, "rewrites")

    exact = {operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pos,
             operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne}

    def plain(expr) -> bool:
        """Whether Numba's loop for the operation ``expr`` gives the values its array expression gives: an
        operator IEEE arithmetic defines, or a ufunc called by name (both run the ufunc's own kernel)."""
        return expr.op == "call" or (expr.op in ("unary", "binop") and expr.fn in exact)

    class _FusedOnly(RewriteArrayExprs):
        """Numba's array-expression rewrite of a block, keeping only the operations that fuse with another: one
        whose operand is another matched operation's temporary, or whose temporary is such an operand."""

        def match(self, func_ir, block, typemap, calltypes):
            if not super().match(func_ir, block, typemap, calltypes):
                return False
            found = self.array_assigns
            operands = {name: [v.name for v in self._get_operands(assign.value)] for name, assign in found.items()}
            fused = {v for name, assign in found.items() for v in operands[name]
                     if v in found and found[v].target.is_temp}
            kept = [(name, assign) for name, assign in found.items()
                    if name in fused or any(v in fused for v in operands[name]) or not plain(assign.value)]
            found.clear()
            found.update(kept)
            return bool(kept)

    def rewrites():
        """Numba's post-inference rewrites as registered now, ``_FusedOnly`` in the place of its array
        expressions."""
        own = registry.RewriteRegistry()
        own.rewrites["after-inference"] = [_FusedOnly if kind is RewriteArrayExprs else kind
                                           for kind in registry.rewrite_registry.rewrites["after-inference"]]
        return own

    @register_pass(mutates_CFG=True, analysis_only=False)
    class FusedRewrites(FunctionPass):
        _name = "astgrad_nopython_rewrites"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            # as Numba's pass: its rewrites expect the IR's ``del`` statements, which are taken out after
            processor = postproc.PostProcessor(state.func_ir)
            processor.run(True)
            with fallback_context(state, f'Internal error in post-inference rewriting pass encountered during '
                                         f'compilation of function "{state.func_id.func_name}"'):
                rewrites().apply("after-inference", state)
            processor.remove_dels()
            return True

    class AstgradCompiler(CompilerBase):
        def define_pipelines(self):
            manager = self.nopython_passes()
            manager.finalize()
            return [manager]

        def nopython_passes(self):
            """Numba's nopython pass manager (not finalized) with our rewrites in the place of Numba's."""
            manager = DefaultPassBuilder.define_nopython_pipeline(self.state)
            for i, (kind, _) in enumerate(manager.passes):
                if known and kind is NopythonRewrites:
                    manager.passes[i] = (FusedRewrites, "nopython rewrites (array expressions where they fuse)")
            return manager

    return AstgradCompiler
