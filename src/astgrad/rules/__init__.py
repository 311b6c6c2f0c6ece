"""The one derivative table both engines use.

``defvjp`` registers a rule (``defjvp`` its forward rules beside it), ``primitive`` makes a function opaque to both
engines, ``lookup`` finds an entry and ``unbroadcast`` is the central
un-broadcasting step.  Importing this package fills the table.
"""

from ._registry import (
    NoRuleError,
    Rule,
    apply,
    defbatch,
    defjvp,
    defnondiff,
    defvjp,
    find,
    generation,
    is_nondifferentiable,
    is_shipped,
    library_function,
    lookup,
    maybe_sequence_outputs,
    primitive,
    qualified_name,
    raw,
    registered,
    sequence_outputs,
    shipped,
)
from ._forward import add_tangents, broadcast_tangent, tangent_of_call
from ._support import expand_reduced, normalize_axis, reduced_count, tie_weights, unbroadcast, within
from . import _extra, complex, decomposition_tangents, decompositions, elementwise, joining, linalg, losses, reductions, selection, sequences, shapes  # noqa: F401  (registers the rules)
from . import convolution, fourier, grids, order_statistics, sliding_windows  # noqa: F401  (registers the rules)
from . import array_api, polynomials, statistics, two_outputs  # noqa: F401  (registers the rules)
from . import batching, batching_products, batching_shared  # noqa: F401  (registers the batching rules, after the entries they join)
from . import batching_elementwise, batching_shapes, batching_reductions, batching_sequences, batching_layers  # noqa: F401
from . import batching_fourier, batching_linalg  # noqa: F401  (numpy.linalg's and numpy.fft's batching rules)
from . import batching_python, batching_selection  # noqa: F401  (math's and the builtins'; np.unique's refusals)
from . import batching_rule_helpers  # noqa: F401  (the reverse rules' helpers that take *args)
from .losses import (
    binary_cross_entropy, binary_cross_entropy_with_logits, embedding, huber_loss, layer_norm, leaky_relu, linear, nll_loss,
    smooth_l1_loss,
)
from .decompositions import eig_values, eig_vectors, lstsq_residuals, lstsq_solution, qr_q, qr_r, svd_u, svd_values, svd_vh
from .selection import gradient_along, gradient_axes, histogram_counts, histogram_edges
from ._extra import (
    astype,
    eigh_values,
    eigh_vectors,
    logabsdet,
    scatter_along_axis,
    first_extreme_mask,
    getitem,
    log_softmax,
    max_along,
    mse_loss,
    min_along,
    relu,
    scatter,
    setitem,
    through_cast,
    slogdet_sign,
    sigmoid,
    softmax,
    vector_norm,
    written,
)
