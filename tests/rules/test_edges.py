"""Gradients at ties, kinks and singular points, the same in both engines.

Reference values are PyTorch's, measured in TORCH_SEMANTICS.md section 6.1.
"""

import numpy as np
import pytest

import astgrad


def max_all(x):
    return np.max(x)


def min_all(x):
    return np.min(x)


def amax_rows(x):
    return np.sum(np.max(x, axis=1))


def maximum_pair(z, w):
    return np.sum(np.maximum(z, w))


def abs_sum(x):
    return np.sum(np.abs(x))


def clip_low(x):
    return np.sum(np.clip(x, 0, None))


def clip_both(x):
    return np.sum(np.clip(x, 0, 2))


def clip_high(x):
    return np.sum(np.clip(x, None, 0))


def sign_sum(x):
    return np.sum(np.sign(x))


def sqrt_sum(x):
    return np.sum(np.sqrt(x))


def sqrt_times_zero(x):
    return np.sum(np.sqrt(x) * 0)


def log_sum(x):
    return np.sum(np.log(x))


def norm_of(x):
    return np.linalg.norm(x)


def where_sqrt(q):
    return np.sum(np.where(q > 0, np.sqrt(q), 0))


def self_ratio(p):
    return np.sum(p / p)


CASES = [
    (max_all, [[1.0, 3.0, 3.0]], [0.0, 0.5, 0.5]),
    (max_all, [[5.0, 5.0, 5.0, 5.0]], [0.25] * 4),
    (max_all, [[[2.0, 2.0], [1.0, 2.0]]], [[1 / 3, 1 / 3], [0.0, 1 / 3]]),
    (min_all, [[1.0, 3.0, 3.0]], [1.0, 0.0, 0.0]),
    (amax_rows, [[[1.0, 1.0], [0.0, 2.0]]], [[0.5, 0.5], [0.0, 1.0]]),
    (abs_sum, [[-1.0, 0.0, 2.0]], [-1.0, 0.0, 1.0]),
    (clip_low, [[-1.0, 0.0, 2.0]], [0.0, 1.0, 1.0]),
    (clip_both, [[-1.0, 0.0, 2.0]], [0.0, 1.0, 1.0]),
    (clip_high, [[-1.0, 0.0, 2.0]], [1.0, 1.0, 0.0]),
    (sign_sum, [[-1.0, 0.0, 2.0]], [0.0, 0.0, 0.0]),
    (sqrt_sum, [[0.0, 4.0]], [np.inf, 0.25]),
    (sqrt_times_zero, [[0.0, 4.0]], [np.nan, 0.0]),
    (log_sum, [[0.0, 4.0]], [np.inf, 0.25]),
    (norm_of, [[0.0, 0.0, 0.0]], [0.0, 0.0, 0.0]),
    (norm_of, [[3.0, 4.0]], [0.6, 0.8]),
    (self_ratio, [[0.0]], [np.nan]),
]


def generated(f, args, wrt=0):
    return astgrad.grad(f, wrt=wrt)(*[np.asarray(a, dtype=np.float64) for a in args])


def taped(f, args, wrt=0):
    tensors = [astgrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=(i == wrt))
               for i, a in enumerate(args)]
    with np.errstate(all="ignore"):
        f(*tensors).backward()
    return tensors[wrt].grad.numpy()


@pytest.mark.parametrize("engine", [generated, taped])
@pytest.mark.parametrize("f, args, expected", CASES, ids=[f"{c[0].__name__}-{i}" for i, c in enumerate(CASES)])
def test_edge_gradient(engine, f, args, expected):
    with np.errstate(all="ignore"):
        got = engine(f, args)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)


def test_the_unselected_side_of_where():
    """PyTorch's NaN on the tape; numpy's derivative, 0, in the generated engine, which knows the adjoint of
    the side np.where did not take is structurally zero (guarantees.md, structural zeros)."""
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(taped(where_sqrt, [[-1.0, 4.0]]), [np.nan, 0.25])
        np.testing.assert_allclose(generated(where_sqrt, [[-1.0, 4.0]]), [0.0, 0.25])


def square_power(x):
    return np.sum(x ** 2.0)


def zero_power(x):
    return np.sum(x ** 0.0)


def three_halves_power(x):
    return np.sum(x ** 1.5)


def half_power(x):
    return np.sum(x ** 0.5)


POWERS = [(square_power, [0.0, 8.0]), (zero_power, [0.0, 0.0]), (three_halves_power, [0.0, 3.0]),
          (half_power, [np.inf, 0.25])]


@pytest.mark.parametrize("engine", [generated, taped])
@pytest.mark.parametrize("f, expected", POWERS, ids=[p[0].__name__ for p in POWERS])
def test_power_at_zero(engine, f, expected):
    with np.errstate(all="ignore"):
        got = engine(f, [[0.0, 4.0]])
    np.testing.assert_allclose(got, expected)


@pytest.mark.parametrize("engine", [generated, taped])
def test_maximum_splits_ties_evenly(engine):
    z, w = [1.0, 3.0], [1.0, 2.0]
    np.testing.assert_allclose(engine(maximum_pair, [z, w], 0), [0.5, 1.0])
    np.testing.assert_allclose(engine(maximum_pair, [z, w], 1), [0.5, 0.0])


def fft_energy(x):
    return np.sum(np.abs(np.unwrap(x)))


def test_unknown_numpy_callable_names_itself_and_defvjp_in_both_engines():
    with pytest.raises(astgrad.TransformError) as generated_error:
        astgrad.grad(fft_energy)(np.ones(4))
    with pytest.raises(astgrad.NoRuleError) as taped_error:
        fft_energy(astgrad.ones(4, requires_grad=True))
    for message in (str(generated_error.value), str(taped_error.value)):
        assert "numpy.unwrap" in message and "defvjp" in message
