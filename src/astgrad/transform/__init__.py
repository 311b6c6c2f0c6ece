"""Differentiation by source transformation, reverse and forward.

``build(fn, wrt, mode, preserve_result, has_aux, level)`` runs the passes
of pipeline.py (parse, check, normalize, analyse, reverse, the optimisation
passes of the level, emit) and returns the generated module's source and
its entry function; ``build_forward(fn, wrt, level)`` runs its forward-mode
list (``FORWARD_STAGES``: the same front end, then the forward sweep).  Each
pass lives in a module of its own.
"""

from __future__ import annotations

from .ir.errors import NoRuleTransformError, TransformError, UnsupportedSyntaxError
from .runtime import helper_rules
from .pipeline import (DEFAULT_LEVEL, FORWARD_STAGES, LEVELS, STAGES, Generated, build, build_forward,
                       check_only as check, describe_ranks)

__all__ = ["build", "check", "TransformError", "UnsupportedSyntaxError", "NoRuleTransformError", "Generated",
           "LEVELS", "DEFAULT_LEVEL", "STAGES", "describe_ranks", "build_forward", "FORWARD_STAGES"]
