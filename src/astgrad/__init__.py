"""astgrad: gradients of numpy code by source transformation, checked by a tape.

Public names only; everything else lives in private modules.
"""

from . import rules
from .rules import NoRuleError, defjvp, defnondiff, defvjp, primitive
from .tape import (
    Tensor, arange, cat, enable_grad, eye, from_numpy, full, inference_mode, is_grad_enabled, linspace,
    manual_seed, no_grad, ones, ones_like, rand, randn, set_grad_enabled, stack, tensor, where, zeros,
    zeros_like,
)
from . import autograd
from .api import TransformError, grad, show, value_and_grad, vjp
from ._jvp import jvp
from ._compose import elementwise_grad, hessian, hvp, jacfwd, jacobian, jacrev
from . import _gradient_calls  # noqa: F401  (the table entry of a gradient called inside a differentiated function)
from ._trees import register_pytree, tree_flatten, tree_map, tree_unflatten
from .check import GradientMismatch, GradReport, check_grads
from ._graphs import graph

__version__ = "0.1.0"

rules._registry.mark_shipped()
