"""astgrad: gradients of numpy code by source transformation, checked by a tape.

Public names only; everything else lives in private modules.
"""

from . import rules
from .rules import NoRuleError, defbatch, defjvp, defnondiff, defvjp, primitive
from .tape import (
    Tensor, arange, cat, enable_grad, eye, from_numpy, full, inference_mode, is_grad_enabled, linspace,
    manual_seed, no_grad, ones, ones_like, rand, randn, set_grad_enabled, stack, tensor, where, zeros,
    zeros_like,
)
from . import autograd
from .api.gradient import TransformError, grad, show, value_and_grad
from .api.forward import jvp
from .api.batched import vmap
from .api.linearize import linearize
from .api.pullback import vjp
from .api.compose import elementwise_grad, hessian, hvp, jacfwd, jacobian, jacrev, make_ggnvp
from .api import inside as _gradient_calls
from .api import vmapped as _vmapped_calls
from .transform.runtime.checkpoints import checkpoint, checkpointed
from .values.trees import register_pytree, tree_flatten, tree_map, tree_unflatten
from .check import GradientMismatch, GradReport, check_grads
from .views.graphs import graph

__version__ = "0.1.0"

rules._registry.mark_shipped()
