"""astgrad: gradients of numpy code by source transformation, checked by a tape.

Public names only; everything else lives in private modules.
"""

from .rules import NoRuleError, defnondiff, defvjp, primitive

__version__ = "0.1.0"
