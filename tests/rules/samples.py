"""Sample calls for every entry of the derivative table.

Each ``Case`` exercises one table entry on concrete inputs; the table tests
run every case through the taped engine and compare with central finite
differences (and, where it exists, the generated engine).  Adding a rule
without adding a case here fails ``test_every_entry_has_a_case``.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import dataclass, field

import numpy as np

from astgrad import rules
from astgrad.rules._support import filled, reverse_cumsum
from astgrad.transform.runtime.tangents import add_tangents, jvp_tangent, tangent_of
from astgrad.transform.runtime import attributes, structural
from astgrad.transform import runtime
from collections import namedtuple
from astgrad.transform.runtime import append, as_column
from astgrad.api.inside import gradient_at
from astgrad.api.vmapped import vmap_at, vmap_at_vjp
import astgrad


def _gradient_sample(x, y):
    return np.sum(np.sin(x) * y ** 2) + np.sum(x * x * y)


_GRADIENT_SAMPLE = astgrad.grad(_gradient_sample)
_GRADIENTS_SAMPLE = astgrad.grad(_gradient_sample, wrt=(0, 1))


def _vmapped_sample(x, w):
    return np.tanh(x * w) + np.sum(x ** 2)


_VMAPPED_SAMPLE = astgrad.vmap(_vmapped_sample, in_axes=(0, None))


@dataclass
class Arg:
    """An argument: drawn from ``make(rng)``; ``diff`` ones are differentiated."""

    make: object
    diff: bool = True

    def draw(self, rng):
        if isinstance(self.make, list):
            return [a.draw(rng) for a in self.make]
        return self.make(rng) if self.diff else self.make


@dataclass
class Case:
    entry: object
    args: list
    kwargs: dict = field(default_factory=dict)
    call: object = None
    name: str = ""
    tape: bool = True  # False for math.* (Python floats) and list-valued transformer helpers
    # False for helpers whose value is a list or tuple of gradients: generated reverse mode reads a primitive's
    # value as one array (it differentiates such helpers only forward, for hessians over containers)
    generated: bool = True
    expected: object = None  # edge samples only: gradients for unit output weights (see EDGES)

    @property
    def function(self):
        return self.call or self.entry


def normal(*shape):
    return Arg(lambda rng: rng.standard_normal(shape))


def positive(*shape):
    return Arg(lambda rng: rng.uniform(0.5, 2.0, shape))


def unit(*shape):
    return Arg(lambda rng: rng.uniform(-0.8, 0.8, shape))


def unit_open(*shape):
    """Probabilities away from 0 and 1."""
    return Arg(lambda rng: rng.uniform(0.1, 0.9, shape))


def above_one(*shape):
    return Arg(lambda rng: rng.uniform(1.2, 3.0, shape))


def spaced(*shape):
    """Distinct values, well apart, so no ties or near-ties break max/sort."""
    n = int(np.prod(shape))
    return Arg(lambda rng: (rng.permutation(n) * 0.37 + rng.uniform(0, 0.1, n) - n * 0.15).reshape(shape))


def well_conditioned(n, batch=()):
    return Arg(lambda rng: rng.standard_normal(batch + (n, n)) * 0.3 + 2 * np.eye(n))


def const(value):
    return Arg(value, diff=False)


def scalar(lo=0.3, hi=1.5):
    return Arg(lambda rng: float(rng.uniform(lo, hi)))


# -- helper calls for entries whose inputs need a structure ---------------------


def eigh_symmetric(a):
    return np.linalg.eigh((a + np.swapaxes(a, -1, -2)) / 2)


def eigh_values_symmetric(a):
    return rules.eigh_values((a + np.swapaxes(a, -1, -2)) / 2)


def eigh_vectors_squared(a):
    return rules.eigh_vectors((a + np.swapaxes(a, -1, -2)) / 2) ** 2


def eigh_both(a):
    w, v = np.linalg.eigh((a + np.swapaxes(a, -1, -2)) / 2)
    return w, v ** 2


def cholesky_spd(a):
    return np.linalg.cholesky(a @ np.swapaxes(a, -1, -2) + np.eye(a.shape[-1]))


def unique_values_counted(a):
    values, counts = np.unique(a, return_counts=True)
    return values * counts


def sort_complex_parts(a, b):
    return np.real(np.sort_complex(a)), np.imag(np.sort_complex(a + 1j * b))


def histogram_weighted(a, w):
    return np.histogram(a, 4, None, None, w)


def histogram_density(a, w):
    return np.histogram(a, 3, None, True, w)


def histogram_given_edges(a, edges):
    return np.histogram(a, np.sort(edges), None, True)


def sorted_edges():
    return Arg(lambda rng: np.array([-2.5, -0.6, 0.3, 2.8]) + rng.uniform(-0.05, 0.05, 4))


def split_in_three(a):
    return np.split(a, 3, axis=1)


def array_split_uneven(a):
    return np.array_split(a, 2)


def slogdet_both(a):
    sign, logdet = np.linalg.slogdet(a)
    return logdet


def svd_squared(a):
    """Singular vectors squared: the loss does not depend on the sign LAPACK gives each pair."""
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return u ** 2, s, vh ** 2


def svd_square_full(a):
    u, s, vh = np.linalg.svd(a)
    return u ** 2, s ** 2, vh ** 2


def svd_values_only(a):
    return np.linalg.svd(a, compute_uv=False)


def svd_u_squared(a):
    return rules.svd_u(a, False) ** 2


def svd_vh_squared(a):
    return rules.svd_vh(a, False) ** 2


def hsplit_in_two(a):
    return np.hsplit(a, 2)


def vsplit_at(a):
    return np.vsplit(a, [1])


def dsplit_in_two(a):
    return np.dsplit(a, 2)


def select_first_true(a, b, c):
    return np.select([a > 0, b > 0.5], [a * 2.0, b], c)


def linspace_along_axis1(start, stop):
    return np.linspace(start, stop, 5, axis=1)


def qr_squared(a):
    q, r = np.linalg.qr(a)
    return q ** 2, r ** 2


def qr_r_only(a):
    return np.linalg.qr(a, mode="r") ** 2


def qr_q_squared(a):
    return rules.qr_q(a) ** 2


def qr_r_squared(a):
    return rules.qr_r(a) ** 2


def lstsq_outputs(a, b):
    x, residuals, rank, s = np.linalg.lstsq(a, b)
    return x, residuals, s


def eigvalsh_symmetric(a):
    return np.linalg.eigvalsh((a + np.swapaxes(a, -1, -2)) / 2)


def eig_real_spectrum(a):
    """A matrix near diag(1, 3, 5): its eigenvalues are real and apart (Gershgorin), its vectors real.

    ``np.real``: numpy 2.5 returns them as complex numbers with zero imaginary parts.
    """
    w, v = np.linalg.eig(a * 0.15 + np.diag([1.0, 3.0, 5.0]))
    return np.real(w), np.real(v) ** 2


def eigvals_modulus(a):
    """Eigenvalues that may be complex, through a real function of them."""
    return np.abs(np.linalg.eigvals(a))


def eig_values_real(a):
    return np.real(rules.eig_values(a * 0.15 + np.diag([1.0, 3.0, 5.0])))


def eig_vectors_squared(a):
    return np.real(rules.eig_vectors(a * 0.15 + np.diag([1.0, 3.0, 5.0]))) ** 2


def gradient_both_axes(f):
    return np.gradient(f)


def gradient_spacings(f, h, k):
    return np.gradient(f, h, k, edge_order=2)


UNARY_ANY = [np.negative, np.positive, np.exp, np.exp2, np.expm1, np.sin, np.cos, np.tan, np.arctan, np.sinh,
             np.cosh, np.tanh, np.arcsinh, np.square, np.absolute, np.fabs, np.sinc, np.deg2rad, np.rad2deg,
             np.degrees, np.radians, np.sign, np.floor, np.ceil, np.rint, np.trunc, np.round, np.around, np.fix,
             np.cbrt, rules.sigmoid, rules.relu, np.conjugate, np.real, np.imag]
UNARY_POSITIVE = [np.log, np.log2, np.log10, np.log1p, np.sqrt, np.reciprocal]
UNARY_UNIT = [np.arcsin, np.arccos, np.arctanh]
BINARY = [np.add, np.subtract, np.multiply, np.divide, np.maximum, np.minimum, np.fmax, np.fmin, np.arctan2,
          np.hypot, np.logaddexp, np.logaddexp2]
REDUCTIONS = [np.sum, np.mean, np.max, np.min, np.amax, np.amin, np.prod, np.var, np.std, np.ptp, np.nansum,
              np.nanmean]


#: an object whose field ``w`` an attribute_gradient case reads
_FIELDS = namedtuple("Fields", "w b")(np.zeros(3), np.zeros(2))


def _cases():
    cases = []
    for fn in UNARY_ANY:
        domain = spaced if fn in (np.absolute, np.fabs, rules.relu, np.sign, np.floor, np.ceil, np.rint,
                                  np.trunc, np.round, np.around, np.fix, np.cbrt) else normal
        cases += [Case(fn, [domain(3, 4)]), Case(fn, [domain(5)], name="1d")]
    cases += [Case(fn, [positive(3, 4)]) for fn in UNARY_POSITIVE]
    cases += [Case(fn, [unit(2, 3)]) for fn in UNARY_UNIT]
    cases += [Case(np.arccosh, [above_one(2, 3)])]
    for fn in BINARY:
        maker = spaced if fn in (np.maximum, np.minimum, np.fmax, np.fmin) else normal
        if fn is np.divide:
            cases += [Case(fn, [normal(2, 3), positive(2, 3)]), Case(fn, [normal(4, 3), positive(3)], name="bcast")]
            continue
        cases += [Case(fn, [maker(2, 3), maker(2, 3)]), Case(fn, [maker(4, 1, 3), maker(2, 1)], name="bcast")]
    cases += [
        Case(np.power, [positive(2, 3), normal(2, 3)]),
        Case(np.power, [positive(2, 3), const(3.0)], name="const_exponent"),
        Case(np.power, [const(2.0), normal(3)], name="const_base"),
        Case(np.float_power, [positive(3), normal(3)]),
        Case(np.copysign, [spaced(2, 3), const(np.array([1.0, -1.0, 1.0]))]),
        Case(np.remainder, [Arg(lambda rng: rng.uniform(0.1, 0.9, (2, 3)) + np.arange(3)), positive(3)]),
    ]
    for fn in REDUCTIONS:
        maker = spaced if fn in (np.max, np.min, np.amax, np.amin, np.ptp, np.prod) else normal
        cases += [Case(fn, [maker(3, 4)]), Case(fn, [maker(3, 4)], {"axis": 1}, name="axis1"),
                  Case(fn, [maker(2, 3, 2)], {"axis": (0, 2), "keepdims": True}, name="axes_keepdims")]
    cases += [
        Case(np.average, [normal(3, 4)]),
        Case(np.average, [normal(3, 4), const(1), positive(4)], name="weights"),
        Case(np.average, [normal(3, 4), const(0), positive(3, 4)], name="full_weights"),
        Case(np.var, [normal(3, 4)], {"axis": 0, "ddof": 1}, name="ddof"),
        Case(np.cumsum, [normal(3, 4)]), Case(np.cumsum, [normal(3, 4)], {"axis": 0}, name="axis0"),
        Case(np.cumprod, [positive(3, 4)]), Case(np.cumprod, [positive(3, 4)], {"axis": 1}, name="axis1"),
        Case(np.trace, [normal(3, 4)]), Case(np.trace, [normal(3, 3, 2)], {"offset": 1}, name="3d"),
        Case(np.diff, [normal(3, 5)]), Case(np.diff, [normal(3, 5)], {"n": 2, "axis": 0}, name="n2"),
        Case(np.linalg.norm, [normal(4)]), Case(np.linalg.norm, [normal(3, 4)], name="fro"),
        Case(np.linalg.norm, [normal(3, 4)], {"axis": 1}, name="axis"),
        Case(np.linalg.norm, [spaced(5)], {"ord": 1}, name="ord1"),
        Case(np.linalg.norm, [spaced(5)], {"ord": np.inf}, name="ordinf"),
        Case(rules.vector_norm, [normal(3, 4)], {"ord": 3, "axis": 0}),
        Case(rules.max_along, [spaced(3, 4)], {"axis": 1}),
        Case(rules.min_along, [spaced(3, 4)], {"axis": 0, "keepdims": True}),
        # shapes
        Case(np.reshape, [normal(3, 4), const((2, 6))]),
        Case(np.ravel, [normal(3, 4)]),
        Case(np.squeeze, [normal(3, 1, 4)]),
        Case(np.expand_dims, [normal(3, 4), const(1)]),
        Case(np.atleast_1d, [normal()]), Case(np.atleast_2d, [normal(3)]),
        Case(np.broadcast_to, [normal(3, 1), const((2, 3, 4))]),
        Case(np.copy, [normal(3, 4)]),
        Case(np.transpose, [normal(2, 3, 4)]), Case(np.transpose, [normal(2, 3, 4), const((1, 2, 0))], name="axes"),
        Case(np.swapaxes, [normal(2, 3, 4), const(0), const(2)]),
        Case(np.moveaxis, [normal(2, 3, 4), const(0), const(-1)]),
        Case(np.flip, [normal(3, 4)]), Case(np.flip, [normal(3, 4)], {"axis": 1}, name="axis"),
        Case(np.fliplr, [normal(3, 4)]), Case(np.flipud, [normal(3, 4)]),
        Case(np.roll, [normal(3, 4), const(2)]), Case(np.roll, [normal(3, 4), const((1, -1))], {"axis": (0, 1)}, name="axes"),
        Case(np.rot90, [normal(3, 4)]),
        Case(np.concatenate, [Arg([normal(2, 3), normal(1, 3)])]),
        Case(np.concatenate, [Arg([normal(2, 3), normal(2, 2)])], {"axis": 1}, name="axis1"),
        Case(np.stack, [Arg([normal(2, 3), normal(2, 3)])], {"axis": 1}),
        Case(np.hstack, [Arg([normal(2, 3), normal(2, 1)])]), Case(np.hstack, [Arg([normal(3), normal(2)])], name="1d"),
        Case(np.vstack, [Arg([normal(3), normal(2, 3)])]),
        *([Case(np.row_stack, [Arg([normal(3), normal(2, 3)])])] if hasattr(np, "row_stack") else []),
        Case(np.split, [normal(2, 6)], call=split_in_three),
        Case(np.array_split, [normal(5, 2)], call=array_split_uneven),
        Case(np.tile, [normal(2, 3), const((2, 1, 2))]),
        Case(np.repeat, [normal(2, 3), const(2)]), Case(np.repeat, [normal(2, 3), const(2)], {"axis": 1}, name="axis"),
        Case(np.repeat, [normal(3, 2), const(np.array([1, 0, 2]))], {"axis": 0}, name="array"),
        Case(np.pad, [normal(2, 3), const(((1, 0), (2, 1)))]),
        Case(np.where, [const(np.array([[True, False, True]])), normal(2, 3), normal(3)]),
        Case(np.clip, [spaced(3, 4), const(-0.5), const(0.6)]),
        Case(np.take, [normal(3, 4), const(np.array([0, 2, 2]))]),
        Case(np.take, [normal(3, 4), const(np.array([3, 0, 3]))], {"axis": 1}, name="axis"),
        Case(np.take_along_axis, [normal(3, 4), const(np.array([[0, 0], [3, 1], [2, 2]])), const(1)]),
        Case(np.sort, [spaced(3, 4)]), Case(np.sort, [spaced(3, 4)], {"axis": 0}, name="axis0"),
        Case(np.diag, [normal(3)]), Case(np.diag, [normal(3, 4)], {"k": 1}, name="extract"),
        Case(np.diagonal, [normal(3, 4)]), Case(np.diagonal, [normal(2, 3, 3)], {"offset": -1, "axis1": 1, "axis2": 2}, name="3d"),
        Case(np.triu, [normal(3, 4)]), Case(np.tril, [normal(3, 4)], {"k": -1}),
        Case(rules.getitem, [normal(3, 4), const((slice(1, None), np.array([0, 2, 2])))]),
        Case(rules.scatter, [normal(3), const((2, 4)), const((1, np.array([0, 3, 3])))]),
        Case(rules.scatter_along_axis, [normal(2, 2), const(np.array([[0, 2], [1, 1]])), const(1), const((2, 3))]),
        Case(rules.setitem, [normal(3, 4), const((0, slice(1, 3))), normal(2)]),
        Case(rules.setitem, [normal(3, 4), const((np.array([2, 0, 2]), 1)), normal(3)], name="repeated"),
        Case(rules.written, [normal(3, 4), const((np.array([2, 0, 2, 2]), slice(1, 3)))]),
        Case(rules.through_cast, [normal(3), const(np.zeros(3))]),
        Case(rules.through_cast, [normal(3), const(np.zeros(3, int))], name="into_integers", tape=False),
        Case(rules.astype, [normal(3), const(np.float64)]),
        Case(rules.softmax, [normal(3, 4), const(1)]), Case(rules.log_softmax, [normal(3, 4), const(0)]),
        Case(rules.mse_loss, [normal(3, 4), normal(3, 4)]),
        Case(rules.mse_loss, [normal(3, 4), normal(3, 4), const("sum")], name="sum"),
        Case(rules.mse_loss, [normal(3, 4), normal(3, 4), const("none")], name="none"),
        Case(rules.linear, [normal(2, 3), normal(4, 3), normal(4)]),
        Case(rules.linear, [normal(3), normal(4, 3)], name="vector_without_bias"),
        Case(rules.linear, [normal(2, 2, 3), normal(4, 3), normal(4)], name="batched"),
        Case(rules.leaky_relu, [spaced(3, 4)]), Case(rules.leaky_relu, [spaced(5), const(0.2)], name="slope"),
        Case(rules.nll_loss, [normal(3, 4), const(np.array([0, 3, 1]))]),
        Case(rules.nll_loss, [normal(3, 4), const(np.array([0, 3, 3])), const(np.array([0.5, 1.0, 2.0, 3.0])),
                              const(3), const("none")], name="weighted_ignored_none"),
        Case(rules.nll_loss, [normal(2, 3, 2), const(np.array([[0, 2], [1, 1]]))], {"reduction": "sum"},
             name="spatial_sum"),
        Case(rules.nll_loss, [normal(4), const(2)], name="one_sample"),
        Case(rules.losses.target_weights, [const(np.zeros((3, 4))), const(np.array([0, 3, 1])), positive(4), const(1)]),
        Case(rules.binary_cross_entropy, [unit_open(3, 4), unit_open(3, 4)]),
        Case(rules.binary_cross_entropy, [unit_open(5), unit_open(5), const(np.linspace(0.5, 2, 5)), const("sum")],
             name="weighted_sum"),
        Case(rules.binary_cross_entropy_with_logits, [normal(3, 4), unit_open(3, 4)]),
        Case(rules.binary_cross_entropy_with_logits, [normal(5), unit_open(5), const(np.linspace(0.5, 2, 5)),
                                                      const(np.linspace(3, 1, 5)), const("sum")],
             name="weighted_sum"),
        Case(rules.binary_cross_entropy_with_logits, [normal(2, 3), unit_open(2, 3)], {"reduction": "none"},
             name="none"),
        Case(rules.smooth_l1_loss, [normal(3, 4), normal(3, 4)]),
        Case(rules.smooth_l1_loss, [normal(3, 4), normal(4)], {"beta": 0.5, "reduction": "sum"}, name="beta_sum"),
        Case(rules.smooth_l1_loss, [normal(5), normal(5), const("none"), const(0.0)], name="l1"),
        Case(rules.huber_loss, [normal(3, 4), normal(3, 4)]),
        Case(rules.huber_loss, [normal(3, 4), normal(3, 4)], {"delta": 0.5, "reduction": "none"}, name="delta_none"),
        Case(rules.embedding, [normal(5, 3), const(np.array([[0, 2], [4, 2]]))]),
        Case(rules.layer_norm, [normal(2, 3, 4), const((4,)), normal(4), normal(4)]),
        Case(rules.layer_norm, [normal(3, 2, 2), const((2, 2))], {"eps": 1e-3}, name="plain"),
        # convolution and pooling layers: settings resolved per spatial axis, padding as (before, after)
        Case(rules.sliding_windows.convolution, [normal(2, 3, 5, 4), normal(4, 3, 2, 3), normal(4)]),
        Case(rules.sliding_windows.convolution, [normal(1, 4, 7, 6), normal(6, 2, 3, 2), const(None), const((2, 1)),
                                                 const(((1, 2), (0, 1))), const((1, 2)), const(2)],
             name="strided_padded_dilated_groups"),
        Case(rules.sliding_windows.convolution, [normal(2, 2, 9), normal(3, 2, 3)],
             {"stride": (3,), "padding": ((2, 2),)}, name="one_axis"),
        Case(rules.sliding_windows.convolution_input_gradient, [normal(1, 6, 4, 5), normal(6, 2, 3, 2),
                                                               const((1, 4, 7, 6)), const((2, 1)),
                                                               const(((1, 2), (0, 1))), const((1, 2)), const(2)]),
        Case(rules.sliding_windows.convolution_weight_gradient, [normal(1, 6, 4, 5), normal(1, 4, 7, 6),
                                                                const((6, 2, 3, 2)), const((2, 1)),
                                                                const(((1, 2), (0, 1))), const((1, 2)), const(2)]),
        Case(rules.sliding_windows.max_pool, [spaced(2, 3, 5, 6), const((2, 3)), const((2, 2)),
                                              const(((1, 1), (1, 1))), const((1, 2)), const(True)]),
        Case(rules.sliding_windows.max_pool, [spaced(1, 2, 4, 4), const((2, 2)), const((1, 1)),
                                              const(((0, 0), (0, 0))), const((1, 1))], name="overlapping"),
        Case(rules.sliding_windows.avg_pool, [normal(2, 3, 5, 6), const((2, 3)), const((2, 2)),
                                              const(((1, 1), (1, 1))), const(True)]),
        Case(rules.sliding_windows.avg_pool, [normal(2, 5, 5), const((3, 2)), const((1, 2)), const(((1, 1), (0, 0))),
                                              const(True), const(False), const(None)], name="without_padding_counted"),
        Case(rules.sliding_windows.avg_pool, [normal(1, 1, 6)], {"kernel": (4,), "stride": (2,),
                                                                 "padding": ((2, 2),), "divisor_override": 3},
             name="divisor"),
        # the transformer's functional list append: on the tape a Python list.append needs no node
        Case(append, [Arg([normal(2), normal(2)]), normal(2)], tape=False),
        # an item of np.c_[...] in generated code
        Case(as_column, [normal(3)]), Case(as_column, [normal()], name="number"),
        Case(as_column, [normal(2, 3)], name="matrix"),
        # products and linear algebra
        Case(np.matmul, [normal(2, 3), normal(3, 4)]), Case(np.matmul, [normal(3), normal(3)], name="vv"),
        Case(np.matmul, [normal(2, 3, 4), normal(4)], name="batched_mv"),
        Case(np.matmul, [normal(4), normal(2, 4, 3)], name="vm_batched"),
        Case(np.matmul, [normal(2, 2, 3), normal(3, 4)], name="bcast"),
        Case(np.dot, [normal(2, 3), normal(3, 4)]), Case(np.dot, [normal(3), normal(3)], name="vv"),
        Case(np.dot, [normal(2, 3), normal()], name="scalar"),
        Case(np.vdot, [normal(2, 3), normal(6)]),
        Case(np.inner, [normal(2, 3), normal(4, 3)]), Case(np.inner, [normal(3), normal(3)], name="vv"),
        Case(np.outer, [normal(3), normal(2, 2)]),
        Case(np.tensordot, [normal(2, 3, 4), normal(4, 3, 5)], {"axes": ([1, 2], [1, 0])}),
        Case(np.tensordot, [normal(2, 3), normal(3, 4)], {"axes": 1}, name="int"),
        Case(np.einsum, [const("ij,jk->ik"), normal(2, 3), normal(3, 4)]),
        Case(np.einsum, [const("ijk,k->ij"), normal(2, 3, 4), normal(4)], name="contract"),
        Case(np.einsum, [const("ij,k"), normal(2, 3), normal(2)], name="implicit_outer"),
        Case(np.kron, [normal(2, 3), normal(2, 2)]), Case(np.kron, [normal(3), normal(2)], name="1d"),
        Case(np.cross, [normal(4, 3), normal(4, 3)]),
        Case(np.linalg.inv, [well_conditioned(3)]), Case(np.linalg.inv, [well_conditioned(2, (2,))], name="batch"),
        Case(np.linalg.det, [well_conditioned(3)]),
        Case(np.linalg.slogdet, [well_conditioned(3)], call=slogdet_both),
        Case(rules.logabsdet, [well_conditioned(3)]),
        Case(rules.slogdet_sign, [well_conditioned(3)]),  # real: piecewise constant (complex: test_complex_convention)
        Case(np.linalg.solve, [well_conditioned(3), normal(3)]),
        Case(np.linalg.solve, [well_conditioned(3), normal(3, 2)], name="matrix"),
        Case(np.linalg.cholesky, [normal(3, 3)], call=cholesky_spd),
        Case(np.linalg.eigh, [normal(3, 3)], call=eigh_both),
        Case(rules.eigh_values, [normal(3, 3)], call=eigh_values_symmetric),
        Case(rules.eigh_vectors, [normal(3, 3)], call=eigh_vectors_squared),
        Case(np.linalg.pinv, [normal(3, 2)]),
    ]
    cases += [
        # Python sequences: numpy.array of a list (the tape cannot see inside np.array, so it refuses)
        Case(np.array, [Arg([normal(3), normal(3)])], tape=False),
        Case(np.array, [Arg([scalar(), scalar(), scalar()])], name="numbers", tape=False),
        Case(np.array, [normal(2, 3)], name="copy", tape=False),
        Case(np.asarray, [normal(3, 2)], tape=False),
        # builtins (on the tape Python runs them itself; an item max did not pick gets None there, as in PyTorch)
        Case(builtins.sum, [Arg([normal(2, 3), normal(3), normal(2, 3)])], name="builtin"),
        Case(builtins.sum, [normal(3, 2)], name="builtin_array"),
        Case(builtins.max, [Arg([scalar(0.1, 0.5), scalar(1.6, 2.0), scalar(0.6, 0.9)])], name="builtin",
             tape=False),
        Case(builtins.max, [spaced(5)], name="builtin_array"),
        Case(builtins.min, [Arg([scalar(0.6, 0.9), scalar(0.1, 0.5)])], name="builtin", tape=False),
        Case(builtins.min, [spaced(5)], name="builtin_array"),
    ]
    cases += [
        # decompositions
        Case(np.linalg.svd, [normal(4, 3)], call=svd_squared, name="tall"),
        Case(np.linalg.svd, [normal(3, 4)], call=svd_squared, name="wide"),
        Case(np.linalg.svd, [normal(2, 3, 3)], call=svd_square_full, name="batch_full"),
        Case(np.linalg.svd, [normal(3, 4)], call=svd_values_only, name="values"),
        Case(np.linalg.svdvals, [normal(4, 3)]),
        Case(rules.svd_values, [normal(2, 4, 3)]),
        Case(rules.svd_u, [normal(4, 3)], call=svd_u_squared),
        Case(rules.svd_vh, [normal(3, 4)], call=svd_vh_squared),
    ]
    cases += [
        # more joining, splitting and axis moves
        Case(np.append, [normal(2, 3), normal(4)]),
        Case(np.append, [normal(2, 3), normal(1, 3)], {"axis": 0}, name="axis0"),
        Case(np.column_stack, [Arg([normal(3), normal(3, 2)])]),
        Case(np.hsplit, [normal(3, 4)], call=hsplit_in_two), Case(np.vsplit, [normal(3, 4)], call=vsplit_at),
        Case(np.dsplit, [normal(2, 2, 4)], call=dsplit_in_two),
        Case(np.atleast_3d, [normal(3)]), Case(np.atleast_3d, [normal(2, 3)], name="2d"),
        Case(np.rollaxis, [normal(2, 3, 4), const(2)]),
        Case(np.rollaxis, [normal(2, 3, 4), const(0), const(2)], name="start"),
        # choosing values, grids
        Case(np.select, [normal(3, 4), normal(4), normal(3, 4)], call=select_first_true),
        Case(np.partition, [spaced(3, 5), const(2)]),
        Case(np.partition, [spaced(4, 3), const(1)], {"axis": 0}, name="axis0"),
        Case(np.nan_to_num, [normal(3, 4)]),
        Case(np.unique, [spaced(3, 4)]), Case(np.unique, [spaced(4, 3)], {"axis": 0}, name="axis0"),
        Case(np.unique, [spaced(5)], call=unique_values_counted, name="counts"),
        Case(np.sort_complex, [spaced(2, 4), normal(2, 4)], call=sort_complex_parts),
        Case(np.full_like, [normal(2, 3), scalar()]), Case(np.full_like, [normal(2, 3), normal(3)], name="row"),
        Case(np.histogram, [normal(7), positive(7)], call=histogram_weighted),
        Case(np.histogram, [normal(7), positive(7)], call=histogram_density, name="density"),
        Case(np.histogram, [normal(7), sorted_edges()], call=histogram_given_edges, name="edges"),
        Case(rules.histogram_counts, [normal(7), const(3), const(None), const(True), positive(7)]),
        Case(rules.histogram_edges, [normal(7), const(3)]),
        Case(np.linspace, [normal(), normal(), const(4)]),
        Case(np.linspace, [normal(2), normal(2)], call=linspace_along_axis1, name="axis1"),
    ]
    cases += [
        Case(np.linalg.qr, [normal(4, 3)], call=qr_squared, name="tall"),
        Case(np.linalg.qr, [normal(3, 5)], call=qr_squared, name="wide"),
        Case(np.linalg.qr, [normal(2, 3, 3)], call=qr_squared, name="batch"),
        Case(np.linalg.qr, [normal(4, 3)], call=qr_r_only, name="r"),
        Case(rules.qr_q, [normal(4, 3)], call=qr_q_squared), Case(rules.qr_r, [normal(3, 4)], call=qr_r_squared),
        Case(np.linalg.lstsq, [normal(5, 3), normal(5)], call=lstsq_outputs),
        Case(np.linalg.lstsq, [normal(5, 2), normal(5, 2)], call=lstsq_outputs, name="matrix"),
        Case(np.linalg.lstsq, [normal(2, 4), normal(2)], call=lstsq_outputs, name="wide"),
        Case(rules.lstsq_solution, [normal(5, 3), normal(5)]), Case(rules.lstsq_residuals, [normal(5, 3), normal(5)]),
        Case(np.linalg.eigvalsh, [normal(3, 3)], call=eigvalsh_symmetric),
        Case(np.linalg.matrix_power, [normal(3, 3), const(3)]),
        Case(np.linalg.matrix_power, [well_conditioned(3), const(-2)], name="inverse"),
        Case(np.linalg.matrix_power, [normal(2, 3, 3), const(1)], name="batch"),
    ]
    cases += [
        # matrix norms, products off the last axes, einsum with ... and repeated letters
        Case(np.linalg.norm, [normal(3, 4)], {"ord": 2}, name="ord2"),
        Case(np.linalg.norm, [normal(3, 4)], {"ord": -2}, name="ord_minus2"),
        Case(np.linalg.norm, [normal(2, 3, 4)], {"ord": "nuc", "axis": (2, 0)}, name="nuc_axes"),
        Case(np.linalg.norm, [spaced(3, 4)], {"ord": 1, "axis": (0, 1), "keepdims": True}, name="ord1_matrix"),
        Case(np.linalg.norm, [spaced(3, 4)], {"ord": -np.inf, "axis": (0, 1)}, name="ord_minus_inf_matrix"),
        Case(np.dot, [normal(2, 3), normal(4, 3, 2)], name="nd"),
        Case(np.cross, [normal(3, 4), normal(4, 3)], {"axisa": 0, "axisc": 0}, name="axes"),
        Case(np.cross, [normal(3, 4), normal(3, 1)], {"axis": 0}, name="axis"),
        Case(np.einsum, [const("ii->"), normal(3, 3)], name="trace"),
        Case(np.einsum, [const("iij,j->i"), normal(3, 3, 2), normal(2)], name="diagonal"),
        Case(np.einsum, [const("...ij,...jk->...ik"), normal(2, 3, 4), normal(4, 2)], name="ellipsis"),
        Case(np.einsum, [const("...j,...j"), normal(1, 3), normal(4, 3)], name="ellipsis_implicit"),
    ]
    cases += [
        Case(np.linalg.eig, [normal(3, 3)], call=eig_real_spectrum),
        Case(np.linalg.eigvals, [normal(3, 3)], call=eigvals_modulus),
        Case(rules.eig_values, [normal(3, 3)], call=eig_values_real),
        Case(rules.eig_vectors, [normal(3, 3)], call=eig_vectors_squared),
    ]
    cases += [
        Case(np.gradient, [normal(6)]), Case(np.gradient, [normal(3, 4)], call=gradient_both_axes, name="2d"),
        Case(np.gradient, [normal(4, 5), scalar(), scalar()], call=gradient_spacings, name="spacings"),
        Case(np.gradient, [normal(3, 4), scalar()], {"axis": 1}, name="axis"),
        Case(rules.gradient_along, [normal(3, 4), scalar(), const(0)]),
    ]
    cases += [Case(np.angle, [normal(3, 4)]), Case(np.real_if_close, [normal(3, 4)])]
    cases += [  # the helpers generated code calls (transform/runtime/helper_rules.py): gradients of gradients
        Case(filled, [normal(3, 1), const((2, 3, 4))]), Case(filled, [scalar(), const((3, 2))], name="number"),
        Case(runtime.unbroadcast, [normal(4, 3), const((3,))], name="runtime"),
        Case(runtime.unbroadcast, [normal(2, 3), const((2, 1))], name="runtime_keep"),
        Case(runtime.unbroadcast, [normal(3), const((4, 3))], name="runtime_lower_rank"),
        Case(runtime.summed, [normal(4, 3)]), Case(runtime.summed, [scalar()], name="number"),
        Case(rules.unbroadcast, [normal(2, 4, 3), const((4, 1))]),
        Case(rules.unbroadcast, [normal(3), const((2, 3))], name="lower_rank"),
        Case(rules.expand_reduced, [normal(3), const((3, 4)), const(1)]),
        Case(rules.expand_reduced, [normal(), const((3, 4))], name="all"),
        Case(rules.expand_reduced, [normal(2, 1, 1), const((2, 3, 4)), const((1, 2)), const(True)], name="keepdims"),
        Case(rules.expand_reduced, [normal(), const(())], name="0d"),
        Case(runtime.T, [normal(3, 4)]), Case(runtime.T, [normal(2, 3, 4)], name="3d"),
        Case(runtime.in_place, [normal(3), const(((3,), np.dtype(np.float64))), const("+")], tape=False),
        Case(runtime.cast_into, [normal(3), const(np.zeros(3)), const("same_kind")], tape=False),
        Case(reverse_cumsum, [normal(3, 4), const(1)]),
        Case(structural.cleaned, [const(np.array([[True, False, False], [False, True, False]])), normal(2, 3)]),
        Case(structural.cleaned, [const(None), normal(2, 3)], name="no_mask"),
        Case(runtime.unpacked_gradient, [Arg([normal(3), normal(3)]), const(np.zeros((2, 3)))], tape=False),
        # and of generated forward code (a jvp differentiated again): spread a tangent, add two
        Case(tangent_of, [normal(3), const(np.zeros((2, 3)))], tape=False),
        Case(tangent_of, [scalar(), const(np.zeros(4))], name="number", tape=False),
        Case(add_tangents, [normal(2, 3), normal(2, 3)], tape=False),
        Case(jvp_tangent, [normal(2, 3), normal(2, 3), const("the tangent of x")], tape=False),  # reverse over forward
        # np.einsum's reverse rule, which generated gradients call (its *operands keep it from being inlined)
        Case(rules.linalg.einsum, [normal(2, 4), const(np.zeros((2, 4))), const("ij,jk->ik"), normal(2, 3),
                                   normal(3, 4)], tape=False, generated=False),
        Case(rules.linalg.einsum, [normal(3), const(np.zeros(3)), const("iij,j->i"), normal(3, 3, 2), normal(2)],
             name="diagonal", tape=False, generated=False),
        # a generated gradient called inside a differentiated function: hessian blocks of _gradient_sample
        Case(gradient_at, [const(_GRADIENT_SAMPLE), normal(3), normal(3)], tape=False),
        Case(gradient_at, [const(_GRADIENTS_SAMPLE), normal(2), normal(2)], name="two", tape=False, generated=False),
        # a vmapped function called inside a differentiated function: its value, and its reverse rule (whose
        # tangents a hessian through the call reads)
        Case(vmap_at, [const(_VMAPPED_SAMPLE), normal(4, 2), normal(2)], tape=False),
        Case(vmap_at_vjp, [normal(4, 2), const(np.zeros((4, 2))), const(_VMAPPED_SAMPLE), normal(4, 2), normal(2)],
             tape=False, generated=False),
        # gradients of containers and lists (arrays, and lists of arrays, as generated code holds them)
        Case(runtime.accumulate, [normal(2, 3), normal(3)], tape=False),
        Case(runtime.accumulate, [Arg([normal(3), normal(2)]), Arg([normal(3), normal(2)])], name="lists", tape=False, generated=False),
        Case(runtime.sequence_gradient, [normal(3), const((np.zeros(3), np.zeros(3))), const(1)], tape=False, generated=False),
        Case(runtime.getitem_gradient, [normal(2), const(np.zeros((3, 2))), const(1)], tape=False),
        Case(runtime.getitem_gradient, [normal(3), const((np.zeros(2), np.zeros(3))), const(1)], name="list",
             tape=False, generated=False),
        Case(runtime.add_item, [Arg([normal(3), normal(2)]), normal(3), const((np.zeros(3), np.zeros(2))), const(0)],
             tape=False, generated=False),
        Case(runtime.part, [normal(3, 2), const(1)], tape=False),
        # items[index] = value in a list or dict: the item's gradient, and the rest (here rows of an array)
        Case(runtime.replacing_gradient, [normal(3, 2), const(1)], tape=False),
        Case(runtime.replaced_gradient, [normal(3, 2), const(1)], tape=False),
        Case(runtime.split_last, [Arg([normal(3), normal(2)])], tape=False, generated=False),
        Case(runtime.split_last, [normal(3, 2)], name="rows", tape=False, generated=False),
        Case(runtime.gradient_tuple, [normal(3), const(2)], tape=False, generated=False),
        # an attribute read: a field of an object (its gradient a list, one item per child), an array's .T
        Case(attributes.attribute, [normal(3, 4), const("T")], tape=False),
        Case(attributes.field, [normal(3, 4), const("T")], tape=False),  # attribute's rules, the value looked at
        Case(attributes.item, [normal(3), const("D['a']")], tape=False),
        Case(runtime.stand_in, [normal(3)], tape=False),  # a value passes through (a Shaped is never differentiated)
        Case(attributes.attribute_gradient, [normal(3), const(_FIELDS), const("w"), const(_FIELDS.w)], tape=False,
             generated=False),
    ]
    for fn, maker in ((math.sin, scalar()), (math.cos, scalar()), (math.tan, scalar()), (math.exp, scalar()),
                      (math.log, scalar()), (math.sqrt, scalar()), (math.tanh, scalar())):
        cases.append(Case(fn, [maker], tape=False))
    return cases


CASES = _cases()
try:
    import scipy  # noqa: F401  (optional: its entries and their cases come with it)
except ImportError:
    pass
else:
    from .samples_scipy import scipy_cases
    CASES += scipy_cases()


def case_id(case: Case) -> str:
    name = getattr(case.entry, "__name__", str(case.entry))
    if getattr(case.entry, "__self__", None) is not None and not isinstance(case.entry.__self__, type):
        name = f"{type(case.entry.__self__).__name__.removesuffix('_gen')}.{name}"  # scipy.stats.norm.cdf
    module = "math." if case.entry in MATH else ""
    return f"{module}{name}" + (f"-{case.name}" if case.name else "")


MATH = {math.sin, math.cos, math.tan, math.exp, math.log, math.sqrt, math.tanh}


# -- edge samples ------------------------------------------------------------------
# Inputs where a rule is easy to get wrong: zeros for products, ties for
# max/min/sort, constant reductions, matrices read through one triangle.
# Each runs through both engines (test_table_edges.py) against central
# differences, or, at a kink where central differences split the difference,
# against ``expected``: the gradients for unit output weights, PyTorch's
# convention.  No NaN and no RuntimeWarning where the derivative exists.


def fixed(value):
    """A differentiated argument with the same value every draw."""
    return Arg(lambda rng: np.array(value, dtype=np.float64))


def fixed_float(value):
    return Arg(lambda rng: float(value))


def eigh_values_squared(a):
    w, v = np.linalg.eigh(a)
    return w, v ** 2


def eigh_upper(a):
    w, v = np.linalg.eigh(a, "U")
    return w, v ** 2


def eigh_vectors_only_squared(a):
    return rules.eigh_vectors(a) ** 2


def pinv_hermitian(a):
    return np.linalg.pinv(a, hermitian=True)


def svd_hermitian(a):
    u, s, vh = np.linalg.svd(a, hermitian=True)
    return s, u ** 2, vh ** 2


LOPSIDED = [[2.0, 0.5, 0.3], [-0.4, 3.0, 0.2], [0.9, 0.1, 4.0]]  # not symmetric: numpy reads one triangle
SPD_LOPSIDED = [[4.0, 1.0, 0.5], [0.8, 3.0, -0.3], [0.2, 0.6, 2.5]]


def _edges():
    edges = [
        Case(np.prod, [fixed([0.0, 2.0, 3.0])], name="one_zero"),
        Case(np.prod, [fixed([0.0, 2.0, 0.0])], name="two_zeros"),
        Case(np.prod, [fixed([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0], [1.0, 2.0, 0.5]])], {"axis": 1}, name="axis_zeros"),
        Case(np.prod, [fixed([[[0.0, 2.0], [3.0, 1.0]], [[1.0, 2.0], [0.5, 3.0]]])],
             {"axis": (1, 2), "keepdims": True}, name="axes_zero"),
        Case(np.cumprod, [fixed([2.0, 0.0, 3.0, 0.0, 1.5])], name="zeros"),
        Case(np.cumprod, [fixed([[0.0, 2.0, 3.0], [1.5, 2.0, 0.0]])], {"axis": 1}, name="axis_zeros"),
        Case(np.cumprod, [fixed([[1.0, 2.0], [0.0, 3.0]])], {"axis": 0}, name="axis0_zero"),
        Case(np.cumprod, [fixed([[1.0, 2.0], [0.0, 3.0]])], name="flat_zero"),
        Case(np.std, [fixed([2.0])], name="one_value"),
        Case(np.std, [fixed([2.0, 2.0, 2.0])], name="equal"),
        Case(np.std, [fixed([[1.0, 1.0], [1.0, 3.0]])], {"axis": 1}, name="equal_row"),
        Case(np.std, [fixed([1.0, 1.0])], {"ddof": 1}, name="equal_ddof"),
        Case(np.var, [fixed([2.0])], name="one_value"),
        Case(np.var, [fixed([2.0, 2.0, 2.0])], name="equal"),
        Case(np.max, [fixed([1.0, 3.0, 3.0])], name="tie"),
        Case(np.max, [fixed([[1.0, 1.0], [0.0, 2.0]])], {"axis": 1}, name="tie_axis"),
        Case(np.max, [fixed([5.0, 5.0, 5.0, 5.0])], name="all_equal", expected=[[0.25] * 4]),
        Case(np.min, [fixed([3.0, 1.0, 1.0])], name="tie"),
        Case(np.amax, [fixed([2.0, 2.0])], name="tie"), Case(np.amin, [fixed([2.0, 2.0])], name="tie"),
        Case(np.ptp, [fixed([1.0, 3.0, 3.0, 1.0])], name="ties"),
        Case(np.maximum, [fixed([1.0, 3.0]), fixed([1.0, 2.0])], name="tie"),
        Case(np.minimum, [fixed([1.0, 3.0]), fixed([1.0, 2.0])], name="tie"),
        Case(np.fmax, [fixed([1.0, 3.0]), fixed([1.0, 2.0])], name="tie"),
        Case(np.fmin, [fixed([1.0, 3.0]), fixed([1.0, 2.0])], name="tie"),
        Case(np.sort, [fixed([2.0, 1.0, 2.0])], name="tie", expected=[[1.0, 1.0, 1.0]]),
        Case(np.unique, [fixed([2.0, 1.0, 2.0])], name="tie", expected=[[0.5, 1.0, 0.5]]),
        Case(np.sort, [fixed([[1.5, 2.5, -0.5], [3.0, 0.7, 2.2]])], {"axis": None}, name="flat"),
        Case(np.absolute, [fixed([-1.0, 0.0, 2.0])], name="zero"),
        Case(rules.relu, [fixed([-1.0, 0.0, 2.0])], name="zero", expected=[[0.0, 0.0, 1.0]]),
        Case(np.clip, [fixed([-1.0, 0.0, 0.5, 2.0]), const(0.0), const(2.0)], name="bounds",
             expected=[[0.0, 1.0, 1.0, 1.0]]),
        Case(np.sinc, [fixed([0.0, 0.5])], name="zero"),
        Case(np.clip, [fixed([-1.0, 0.5, 2.0]), fixed([1.0, 1.5, 1.0]), fixed([0.0, 0.2, -0.3])],
             name="min_above_max"),
        Case(np.clip, [fixed([-1.0, 0.5, 2.0])], {"min": 0.0}, name="min_keyword"),
        Case(np.clip, [fixed([-1.0, 0.5, 2.0, 0.1])], {"max": 0.3, "min": -0.6}, name="both_keywords"),
        Case(np.hypot, [fixed([0.0, 3.0]), fixed([0.0, 4.0])], name="origin"),
        Case(np.linalg.norm, [fixed([0.0, 0.0, 0.0])], name="zero"),
        Case(np.linalg.norm, [fixed([[0.0, 0.0], [0.0, 0.0]])], name="zero_fro"),
        Case(np.linalg.norm, [fixed([3.0, -3.0, 1.0])], {"ord": np.inf}, name="inf_tie"),
        Case(np.linalg.norm, [fixed([3.0, -1.0, 1.0, 2.0])], {"ord": -np.inf}, name="minus_inf_tie"),
        Case(np.linalg.norm, [fixed([3.0, 0.0, -1.0])], {"ord": 0}, name="count"),
        Case(np.linalg.norm, [fixed([3.0, -0.5, 1.0])], {"ord": -1}, name="minus_one"),
        Case(rules.vector_norm, [fixed([[3.0, 0.0], [-1.0, 2.0]])], {"ord": 0, "axis": 1}, name="count"),
        Case(rules.vector_norm, [fixed([[3.0, -3.0], [-1.0, 2.0]])], {"ord": -np.inf, "axis": 1}, name="minus_inf"),
        Case(rules.vector_norm, [fixed([[0.0, 0.0], [1.0, 2.0]])], {"ord": 3, "axis": 1}, name="zero_row"),
        Case(np.linalg.eigh, [fixed(LOPSIDED)], call=eigh_values_squared, name="one_triangle"),
        Case(np.linalg.eigh, [fixed(LOPSIDED)], call=eigh_upper, name="upper_triangle"),
        Case(rules.eigh_values, [fixed(LOPSIDED)], name="one_triangle"),
        Case(rules.eigh_vectors, [fixed(LOPSIDED)], call=eigh_vectors_only_squared, name="one_triangle"),
        Case(np.linalg.cholesky, [fixed(SPD_LOPSIDED)], name="one_triangle"),
        Case(np.linalg.eigvalsh, [fixed(LOPSIDED)], name="one_triangle"),
        Case(np.linalg.eigvalsh, [fixed(LOPSIDED)], {"UPLO": "U"}, name="upper_triangle"),
        Case(np.linalg.pinv, [fixed(SPD_LOPSIDED)], call=pinv_hermitian, name="hermitian_one_triangle"),
        Case(np.linalg.svd, [fixed(SPD_LOPSIDED)], call=svd_hermitian, name="hermitian_one_triangle"),
        Case(rules.svd_values, [fixed(SPD_LOPSIDED)], {"hermitian": True}, name="hermitian_one_triangle"),
        Case(np.linalg.det, [fixed([[1.0, 2.0], [2.0, 4.0]])], name="singular"),
        # numpy 2 reads b as a vector only when it is 1-D: a (3, 3) b beside a stack of 3 matrices is a matrix
        Case(np.linalg.solve, [well_conditioned(3, (3,)), normal(3, 3)], name="stack_and_matrix"),
        Case(np.linalg.solve, [well_conditioned(3, (2,)), normal(3)], name="stack_and_vector"),
        Case(np.linalg.det, [fixed([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.5, 1.0, 2.0]])], name="singular_3"),
        Case(np.linalg.det, [fixed([[0.0, 0.0], [0.0, 0.0]])], name="zero"),
        Case(np.nansum, [fixed([1.0, np.nan, 2.0])], name="nan", expected=[[1.0, 0.0, 1.0]]),
        Case(np.take, [fixed([1.5, 2.5, -0.5, 3.0]), const(np.array([-1, 5, 1]))], {"mode": "clip"}, name="clip"),
        Case(np.take, [fixed([[1.5, 2.5, -0.5], [3.0, 1.0, 2.0]]), const(np.array([[-1, 7]]))],
             {"axis": 1, "mode": "wrap"}, name="wrap"),
        Case(np.diff, [fixed([1.5, 2.5, -0.5, 3.0])], {"prepend": 0.0}, name="prepend"),
        Case(np.diff, [fixed([[1.5, 2.5], [-0.5, 3.0], [1.0, 2.0]])],
             {"n": 2, "axis": 0, "append": [[1.0, 2.0], [0.5, 0.5]]}, name="append"),
        Case(np.nanmean, [fixed([1.0, np.nan, 3.0])], name="nan", expected=[[0.5, 0.0, 0.5]]),
        Case(np.nan_to_num, [fixed([1.0, np.nan, np.inf, -np.inf])], name="non_finite",
             expected=[[1.0, 0.0, 0.0, 0.0]]),
        Case(rules.max_along, [fixed([[2.0, 2.0, 1.0]])], {"axis": 1}, name="tie_first", expected=[[[1.0, 0.0, 0.0]]]),
        Case(rules.min_along, [fixed([[1.0, 3.0, 1.0]])], {"axis": 1}, name="tie_first", expected=[[[1.0, 0.0, 0.0]]]),
        Case(builtins.max, [fixed([2.0, 3.0, 3.0])], name="builtin_tie_first", expected=[[0.0, 1.0, 0.0]]),
        Case(builtins.min, [fixed([2.0, 1.0, 1.0])], name="builtin_tie_first", expected=[[0.0, 1.0, 0.0]]),
        # nn.Embedding's padding row is held constant: no gradient reaches it (rows counted by how often picked)
        Case(rules.embedding, [fixed(np.arange(15.0).reshape(5, 3)), const(np.array([1, 3, 3, 0, 1])), const(3)],
             name="padding", expected=[[[1.0] * 3, [2.0] * 3, [0.0] * 3, [0.0] * 3, [0.0] * 3]]),
        # max pooling keeps PyTorch's one index per window: the first maximum; overlapping windows add up
        Case(rules.sliding_windows.max_pool, [fixed([[[[2.0, 2.0, 1.0], [2.0, 2.0, 2.0]]]]), const((2, 2)), const((1, 1)),
                                              const(((0, 0), (0, 0))), const((1, 1))],
             name="tie_first", expected=[[[[[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]]]]),
    ]
    return edges


EDGES = _edges()

from .samples_signals import breadth_cases, breadth_edges  # noqa: E402  (they use the makers above)

CASES += breadth_cases()
EDGES += breadth_edges()

from .samples_numpy_api import numpy_api_cases, numpy_api_edges  # noqa: E402

CASES += numpy_api_cases()
EDGES += numpy_api_edges()
try:
    import scipy  # noqa: F401
except ImportError:
    pass
else:
    from .samples_scipy import scipy_edges
    EDGES += scipy_edges()


def edge_id(case: Case) -> str:
    return "edge-" + case_id(case)
