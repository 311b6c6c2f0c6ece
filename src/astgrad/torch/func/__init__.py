"""``torch.func``: function transforms over the taped engine.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``,
``hessian``, ``vmap`` and ``functional_call``, named and called as in
PyTorch, composing with each other (``vmap(grad(loss))``,
``jacfwd(jacrev(f))``).  They are the taped counterparts of astgrad's
generated transformations: the same question answered by the tape, to
check the generated code against.  ``vmap`` loops over the examples
(docs/tape.md says what that changes).
"""

from ._eager import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._functional_call import functional_call
from ._vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp", "vjp", "vmap"]
