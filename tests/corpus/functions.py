"""The corpus: functions covering what ``@grad`` supports, with sample inputs.

Each function is checked three ways (generated adjoint, tape, central
differences) by ``test_corpus.py``.  A case is ``Case(f, args, wrt,
taped)``; ``taped=False`` marks functions the tape cannot run (Python
float arguments, ``math.*``), where ``check_grads`` must report the taped
mode as skipped.  Inputs keep away from kinks, ties and branch boundaries,
so central differences are a fair reference.
"""

import math
from dataclasses import dataclass

import numpy as np

import astgrad

RNG = np.random.default_rng(1234)
V3 = np.array([0.3, -0.2, 0.5])
V4 = np.array([0.7, -0.4, 1.1, 0.2])
M34 = RNG.standard_normal((3, 4))
M43 = RNG.standard_normal((4, 3))
SPD = np.array([[3.0, 0.5, 0.2], [0.5, 2.0, 0.3], [0.2, 0.3, 1.5]])
WEIGHTS = np.array([1.0, -2.0, 0.5])
SCALE = 1.7


@dataclass
class Case:
    f: object
    args: tuple
    wrt: object = 0
    taped: bool = True
    id: str = ""


CASES = []


def case(*args, wrt=0, taped=True, id=""):
    """Register the decorated function with one set of sample inputs (stackable)."""

    def register(f):
        CASES.append(Case(f, args, wrt, taped, id or f.__name__))
        return f

    return register


# ------------------------------------------------- arithmetic and broadcasting


@case(V3, V3[::-1] + 1.0, wrt=(0, 1))
def arithmetic(x, y):
    return np.sum(x * y + x - y / 2.0 - 3.0 * x * x)


@case(M34, V4, wrt=(0, 1))
def broadcast_row(x, b):
    return np.sum((x + b) ** 2)


@case(M34, np.array([[0.5], [-1.0], [2.0]]), wrt=(0, 1))
def broadcast_column(x, c):
    return np.sum(x * c - c)


@case(np.array(0.8), V4, wrt=(0, 1), id="broadcast_0d")
def broadcast_scalar_array(s, x):
    return np.sum(s * x + s / (1.0 + x * x))


@case(M43, M34, wrt=(0, 1))
def matmul(w, x):
    return np.sum(np.tanh(x @ w))


@case(V4 + 1.0)
def unary_and_abs(x):
    return np.sum(-x + (+x) * 2 - abs(x - 3.0))


@case(np.array([0.5, 1.2, 2.0]))
def powers(x):
    return np.sum(x ** 3 + 2.0 ** x + x ** 0.5 + x ** x)


@case(V3, V3 + 0.4, wrt=(0, 1))
def division(x, y):
    return np.sum(x / (y * y + 1.0) - 1.0 / (x + 2.0))


# ------------------------------------------------- numpy calls with keywords


@case(M34)
def softmax_keepdims(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    p = e / np.sum(e, axis=1, keepdims=True)
    return np.sum(p * np.arange(4.0))


@case(M34)
def mean_var_std(x):
    return np.sum(np.mean(x, axis=0)) + np.sum(np.var(x, axis=1)) + np.std(x)


@case(np.array([0.4, 1.3, 2.2]))
def elementwise_functions(x):
    return np.sum(np.sin(x) * np.cos(x) + np.exp(-x) + np.log(x) + np.tanh(x) * np.sqrt(x))


@case(np.array([0.4, -1.3, 2.2, -0.1]))
def relu_and_leaky(x):
    return np.sum(np.maximum(x, 0.0) * 2 + np.where(x > 0, x, 0.1 * x) ** 2)


@case(np.array([0.4, -1.3, 2.2, -0.1]))
def clip_keywords(x):
    return np.sum(np.clip(x, a_min=-1.0, a_max=1.0) * x)


@case(V3, V4, wrt=(0, 1))
def concatenate_stack(x, y):
    z = np.concatenate([x, y], axis=0)
    s = np.stack([x, x * 2, np.sin(x)], axis=1)
    return np.sum(z * z) + np.sum(s @ np.array([1.0, -1.0, 0.5]))


@case(M34)
def reshape_transpose(x):
    y = np.reshape(x, (2, 6))
    return np.sum(np.transpose(y) @ y)


@case(V3, V4, wrt=(0, 1))
def outer_and_dot(x, y):
    return np.dot(np.outer(x, y) @ y, x) + np.sum(np.square(y))


@case(M34)
def cumulative(x):
    return np.sum(np.cumsum(x, axis=1) * np.cumprod(x * 0.5 + 1.0, axis=0))


@case(np.array([0.4, -1.3, 2.2]))
def logaddexp_hypot(x):
    return np.sum(np.logaddexp(x, 0.5 * x) + np.hypot(x, 1.0) + np.arctan2(x, 2.0))


# ------------------------------------------------- array methods and attributes


@case(M34)
def array_methods(x):
    # not x.var() / x.std(): on a Tensor they follow PyTorch (unbiased), on an array numpy (biased)
    return x.sum() + x.mean(axis=1).sum() + x.max() - x.min() + (x * x).mean() + x.prod(axis=0).sum()


@case(M34)
def transpose_attribute(x):
    # not x.size: on a Tensor it is PyTorch's method, on an array numpy's attribute
    return np.sum(x.T @ x) / x.shape[0] + x.ndim * np.sum(x.T[1])


@case(V3, V3 * 2, wrt=(0, 1))
def dot_method(x, y):
    return x.dot(y) * x.dot(x)


@case(M34)
def shape_methods(x):
    y = x.reshape(4, 3).ravel()
    z = x.flatten() * y
    w = x.reshape(1, 3, 4).squeeze().swapaxes(0, 1)
    return np.sum(z) + np.sum(w[0]) + np.sum(x.clip(-0.5, 0.5) ** 2)


@case(np.array([0.5, 1.5, 0.8]))
def prod_method(x):
    return x.prod() + np.prod(x.reshape(3, 1), axis=1).sum()


@case(np.ones((2, 2)))
def tutorial(x):
    y = x + 2
    z = y * y * 3
    return z.mean()


# ------------------------------------------------- math on Python floats


@case(0.7, taped=False)
def math_functions(a):
    return math.sin(a) * math.exp(a) + math.log(a) + math.sqrt(a) * math.tanh(a)


@case(0.6, V3, wrt=(0, 1), taped=False)
def float_scales_array(a, x):
    return np.sum(np.sin(x * a)) * math.cos(a)


@case(1.3, 0.4, wrt=(0, 1), taped=False)
def float_arithmetic(a, b):
    c = a * b + a / b
    if c > 1.0:
        c = c * c
    return c - b ** 3


# ------------------------------------------------- assignment forms


@case(V3)
def tuple_unpacking(x):
    a, b = x[0], x[1]
    a, b = b, a * b
    c = d = a + x[2]
    return a * c + b * d


@case(V3)
def augmented_assignment(x):
    y = x * 1.0
    y += 1.0
    y *= x
    y -= x / 2
    y /= 3.0
    y **= 2
    return np.sum(y)


@case(V4)
def item_assignment(x):
    y = x * 0.0  # not np.zeros(4): a numpy buffer cannot hold taped values
    y[0] = x[1] * 2.0
    y[1:3] = x[2:] * x[:2]
    y[3] += np.sum(x)
    return np.sum(y * y)


# ------------------------------------------------- subscripts and slices


@case(M34)
def unpack_rows(x):
    first, second, third = x
    return np.sum(first * third)


@case(np.linspace(-1.0, 1.0, 6))
def split_pieces(x):
    a, b, c = np.split(x, 3)
    return np.sum(a * c)


@case(V4)
def integer_index(x):
    return x[0] * x[2] + x[-1] ** 2


@case(M34)
def slices(x):
    return np.sum(x[1:, ::2] ** 2) + np.sum(x[0, :] * x[:, 1][:, None])


@case(V4)
def fancy_index_with_repeats(x):
    idx = np.array([0, 2, 2, 1, 0])
    return np.sum(x[idx] ** 2)


@case(M34)
def boolean_mask(x):
    mask = np.array([True, False, True])
    return np.sum(np.exp(x[mask]))


@case(M34)
def ellipsis_and_newaxis(x):
    return np.sum(x[..., 1] * x[None, :, 2])


# ------------------------------------------------- branches


@case(V3, id="if_elif_else-positive")
@case(V3 * 5, id="if_elif_else-large")
@case(-V3 * 3, id="if_elif_else-negative")
def if_elif_else(x):
    s = np.sum(x)
    if s > 1.0:
        y = x * 2
    elif s > 0.0:
        y = np.sin(x) * x
    else:
        y = x ** 3
    return np.sum(y)


@case(V3, id="conditional_expression-positive")
@case(-V3 * 2, id="conditional_expression-negative")
def conditional_expression(x):
    y = x * x if np.sum(x) > 0 else -x
    return np.sum(y * x)


@case(V3)
def branch_per_element(x):
    total = 0.0
    for v in x:
        if v > 0:
            total = total + v * v
        else:
            total = total - np.sin(v)
    return total


@case(V3)
def and_or_conditions(x):
    s = np.sum(x)
    if s > 0 and np.max(x) < 1 or s < -5:
        return np.sum(x * x)
    return np.sum(x)


# ------------------------------------------------- loops


@case(V3)
def for_range(x):
    y = x
    for i in range(3):
        y = y * x + np.sin(y) * i
    return np.sum(y)


@case(M34)
def for_over_rows(x):
    total = 0.0
    for row in x:
        total = total + np.sum(row * row) * np.max(row)
    return total


@case(V3)
def for_over_list(x):
    total = 0.0
    for w in [0.5, -1.0, 2.0]:
        total = total + np.sum(np.exp(x * w))
    return total


@case(V3, V3 + 1.0, wrt=(0, 1))
def for_over_list_of_arrays(x, y):
    total = 0.0
    for a in [x, y, x * y]:
        total = total + np.sum(np.tanh(a))
    return total


@case(V3, np.array([1.0, 2.0, -1.0]), wrt=(0, 1))
def enumerate_and_zip(x, y):
    total = 0.0
    for i, v in enumerate(x):
        total = total + v * i
    for a, b in zip(x, y):
        total = total + a * b
    return total


@case(V3)
def nested_loops(x):
    y = x
    for i in range(3):
        for j in range(2):
            y = np.sin(y) * (i + j + 1)
    return np.sum(y)


@case(V3)
def while_tutorial(x):
    y = x * 2
    while np.linalg.norm(y) < 1000:
        y = y * 2
    return y


@case(V3)
def while_data_and_counter(x):
    y = x
    n = 0
    while np.sum(y * y) < 50.0 and n < 30:
        y = y * 1.3 + 0.1
        n = n + 1
    return np.sum(y)


@case(np.array([0.3, 0.25]))
def for_with_break(x):
    s = 0.0
    for i in range(10):
        s = s + np.sum(x * i)
        if s > 5:
            break
        s = s * 1.1
    return s


@case(V3)
def for_with_continue(x):
    s = 0.0
    for i in range(6):
        if i % 2 == 0:
            continue
        s = s + np.sum(np.sin(x * i))
    return s


@case(V3)
def while_true_break(x):
    y = x
    n = 0
    while True:
        y = y * 1.5 + 0.1
        n = n + 1
        if np.sum(y) > 10 or n > 20:
            break
    return np.sum(y * y)


@case(V3 * 2, id="several_returns-first")
@case(V3 * 0.5, id="several_returns-second")
@case(-V3 * 2, id="several_returns-last")
def several_returns(x):
    s = np.sum(x)
    if s > 0.5:
        return s * s
    if s > 0.0:
        return np.sum(np.exp(x))
    return -s


@case(V3 * 2, id="return_in_loop-early")
@case(-V3, id="return_in_loop-late")
def return_in_loop(x):
    y = x
    for i in range(10):
        y = y * 1.3
        if np.sum(y) > 3:
            return np.sum(y * y)
    return np.sum(y)


# ------------------------------------------------- calls, recursion, scopes


def helper_inner(a, b):
    return np.sin(a) * b


def helper_outer(x, y):
    return helper_inner(x, y) + helper_inner(y, x) * 2.0


@case(V3, V3 + 0.5, wrt=(0, 1))
def nested_calls(x, y):
    return np.sum(helper_outer(x, y * y))


def power_by_recursion(x, n):
    if n == 0:
        return x * 0.0 + 1.0
    return x * power_by_recursion(x, n - 1)


@case(V3)
def recursion(x):
    return np.sum(power_by_recursion(x, 4))


def halve_until_small(y):
    if np.linalg.norm(y) < 0.1:
        return y
    return halve_until_small(y * 0.5)


@case(V3 * 3)
def recursion_data_dependent(x):
    return np.sum(np.sin(halve_until_small(x)))


def split_pair(x):
    return x * 2.0, np.exp(x)


@case(V3)
def tuple_returning_helper(x):
    a, b = split_pair(x)
    return np.sum(a * b)


@case(V3)
def reads_globals(x):
    return np.sum(x * WEIGHTS) * SCALE


def make_closure(c):
    def closure(x):
        return np.sum(np.sin(x) * c)

    return closure


closure = make_closure(np.array([2.0, -1.0, 0.5]))
case(V3)(closure)


def scaled(x, scale=2.0, *, shift=0.5):
    return np.sum((x + shift) * scale)


@case(V3)
def defaults_and_keywords(x):
    return scaled(x) + scaled(x, 3.0) + scaled(x, shift=1.5) + scaled(scale=x, x=x)


@case(V3)
def own_default(x, rate=0.3):
    return np.sum(np.exp(x * rate))


@case(V3)
def lambdas(x):
    square = lambda v: v * v  # noqa: E731
    shifted = lambda v, s=1.0: v + s  # noqa: E731
    return np.sum(square(shifted(x)) + square(x))


@case(V3)
def list_comprehension(x):
    terms = [np.sum(x ** k) for k in range(1, 4)]
    return terms[0] + terms[1] * terms[2]


@case(V4)
def list_comprehension_with_filter(x):
    picked = [v * v for v in x if v > 0]
    return picked[0] + picked[-1] * 2.0


@case(V3)
def list_append(x):
    parts = []
    for i in range(3):
        parts.append(x * (i + 1))
    return np.sum(parts[0] * parts[2]) + np.sum(parts[1])


# ------------------------------------------------- stop-gradients


# .detach() exists on Tensors only and check_grads evaluates f on float64
# arrays, so this one is not a Case: test_corpus.py checks both engines on a
# Tensor against the closed form d/dx = 3 x.
def detach_is_constant(x):
    c = x.detach() * 3.0
    return np.sum(x * c)


@case(M34)
def no_grad_block(x):
    # the shift cancels mathematically, so stopping its gradient keeps the true gradient
    with astgrad.no_grad():
        shift = np.max(x, axis=1, keepdims=True)
    return np.sum(shift + np.log(np.sum(np.exp(x - shift), axis=1, keepdims=True)))


# ------------------------------------------------- linear algebra


@case(V4)
def norm(x):
    return np.linalg.norm(x) + np.linalg.norm(x * x, ord=1)


@case(M34)
def matrix_norm(x):
    return np.linalg.norm(x, axis=1).sum()


@case(SPD, V3, wrt=(0, 1))
def inverse_and_solve(a, b):
    return np.sum(np.linalg.inv(a) @ b) + np.sum(np.linalg.solve(a, b * b))


@case(SPD)
def determinant(a):
    return np.linalg.det(a) + np.trace(a @ a)


@case(SPD)
def cholesky_logdet(a):
    chol = np.linalg.cholesky((a + a.T) / 2)  # cholesky reads one triangle; its rule assumes symmetry
    return 2.0 * np.sum(np.log(np.diag(chol)))


@case(M34)
def gram_eigenvalues(x):
    w, v = np.linalg.eigh(x @ x.T)
    return np.sum(w * np.arange(1.0, 4.0))


# ------------------------------------------------- reductions


@case(M34)
def reductions_axis_keepdims(x):
    a = np.max(x, axis=0, keepdims=True)
    b = np.min(x, axis=1)
    c = np.prod(x * 0.3 + 1.0, axis=0)
    return np.sum(x - a) + np.sum(b * b) + np.sum(c)


@case(M34)
def logsumexp(x):
    m = np.max(x, axis=1, keepdims=True)
    return np.sum(m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)))


@case(M34)
def mean_keywords(x):
    return np.sum(np.mean(x, axis=(0, 1), keepdims=True) * x) + np.average(x, axis=0).sum()


# ------------------------------------------------- small models


@case(M43, V3 * 0.1, wrt=(0, 1))
def one_layer_mse(w, b):
    x = np.linspace(-1.0, 1.0, 8).reshape(2, 4)
    target = np.array([[1.0, 0.0, -1.0], [0.5, 0.5, 0.5]])
    h = np.tanh(x @ w + b)
    return np.mean((h - target) ** 2)


@case(V3, V3 * 0.5, wrt=(0, 1))
def logistic_loss(w, b):
    x = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
    y = np.array([1.0, 0.0])
    z = x @ w + np.sum(b)
    p = 1.0 / (1.0 + np.exp(-z))
    return -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))


@case(V3)
def newton_sqrt(x):
    guess = x * 0.0 + 1.0
    for i in range(5):
        guess = 0.5 * (guess + (x * x + 1.0) / guess)
    return np.sum(guess)
