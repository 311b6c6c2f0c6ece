"""Array methods and non-differentiable helpers in both engines.

The same function body runs on numpy arrays (the transformer maps each
method to the table's numpy callable) and on Tensors (whose methods accept
numpy's keywords); check_grads compares both with central differences.
"""

import numpy as np
import pytest



def m_sum_axis(x):
    return (x.sum(axis=0) ** 2).sum()


def m_sum_keepdims(x):
    return (x * x.sum(axis=1, keepdims=True)).sum()


def m_mean(x):
    return x.mean() * x.mean(axis=1).sum()


def m_max_min(x):
    return x.max() + x.min(axis=0).sum() + x.max(axis=1).sum()


def m_clip(x):
    return (x.clip(-0.5, 0.5) * x).sum()


def m_astype_copy(x):
    y = x.astype(np.float64).copy()
    return (y * y).sum()


def m_flatten_ravel(x):
    return (x.flatten() * x.ravel()[::-1]).sum()


def m_reshape_transpose(x):
    return (x.reshape(3, 2) @ x.T.reshape(2, 3)).sum() + x.transpose().sum()


def m_dot(x):
    return x.dot(x.T).sum()


def m_swapaxes_squeeze(x):
    return (x.swapaxes(0, 1)[None] ** 2).squeeze().sum()


def m_cumsum_prod(x):
    return x.cumsum(axis=1).sum() + (x[0] * 0.5 + 1.0).prod() + (x * 0.1 + 1.0).cumprod(axis=0).sum()


def m_trace_square(x):
    return (x @ x.T).trace() + x.diagonal().sum() + x.take([0, 4]).sum()


def m_var_std(x):
    # Tensor.var()/std() default to PyTorch's unbiased estimate; np.var/np.std or ddof= mean numpy's
    return np.var(x) + np.std(x, axis=0).sum() + x.var(ddof=0)


def m_nondiff_helpers(x):
    big = x > 0
    order = np.argsort(x[0])
    count = np.count_nonzero(big)
    scale = np.ones_like(x) * count
    return (x * scale).sum() + x[0][order][0] + np.where(big, x, 0.0).sum() * np.all(np.isfinite(x))


METHOD_FUNCTIONS = [m_sum_axis, m_sum_keepdims, m_mean, m_max_min, m_clip, m_astype_copy, m_flatten_ravel,
                    m_reshape_transpose, m_dot, m_swapaxes_squeeze, m_cumsum_prod, m_trace_square, m_var_std, m_nondiff_helpers]


@pytest.mark.parametrize("f", METHOD_FUNCTIONS, ids=[f.__name__ for f in METHOD_FUNCTIONS])
def test_method_in_both_engines(f, gradcheck):
    x = np.array([[0.3, -1.2, 0.8], [1.1, 0.4, -0.7]])
    report = gradcheck(f, x)
    assert set(report.gradients) == {"generated", "taped", "numeric"}, report.skipped
