"""Every op's gradient against float64 central differences, and the reference values of section 6."""

import numpy as np
import pytest

import astgrad.torch as torch
from _taped import check_grad

R = np.random.default_rng(0)
V3 = R.uniform(0.5, 2.0, 3)          # positive, away from kinks
M23 = R.uniform(-2.0, 2.0, (2, 3))
M23P = R.uniform(0.5, 2.0, (2, 3))
M34 = R.uniform(-2.0, 2.0, (3, 4))
T234 = R.uniform(-2.0, 2.0, (2, 3, 4))
T245 = R.uniform(-2.0, 2.0, (2, 4, 5))
COL = R.uniform(-2.0, 2.0, (3, 1))
ROW = R.uniform(-2.0, 2.0, (1, 4))
S = np.array(1.3)

UNARY = {
    "neg": lambda x: -x,
    "exp": lambda x: x.exp(),
    "log": lambda x: x.log(),
    "sin": lambda x: x.sin(),
    "cos": lambda x: x.cos(),
    "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: (x - 1.2).relu(),
    "abs": lambda x: (x - 1.2).abs(),
    "sqrt": lambda x: x.sqrt(),
    "pow3": lambda x: x ** 3,
    "pow_half": lambda x: x ** 0.5,
    "pow_neg": lambda x: x.pow(-1.5),
    "square": lambda x: x.square(),
    "reciprocal": lambda x: x.reciprocal(),
    "rsqrt": lambda x: x.rsqrt(),
    "rpow": lambda x: 2 ** x,
    "rsub": lambda x: 2 - x,
    "rdiv": lambda x: 2 / x,
    "clamp": lambda x: x.clamp(0.8, 1.6),
    "clamp_min": lambda x: x.clamp(min=1.1),
    "clamp_max": lambda x: x.clamp(max=1.1),
    "log1p": lambda x: x.log1p(),
    "clone": lambda x: x.clone(),
    "torch_exp": lambda x: torch.exp(x),
    "torch_sqrt": lambda x: torch.sqrt(x),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary(name):
    check_grad(UNARY[name], V3)


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "add_alpha": lambda a, b: a.add(b, alpha=2.5),
    "sub_alpha": lambda a, b: torch.sub(a, b, alpha=0.5),
    "maximum": lambda a, b: torch.maximum(a, b * 1.1),
    "minimum": lambda a, b: torch.min(a, b * 1.1),
    "where": lambda a, b: torch.where(a > 1.0, a * a, b.exp()),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_same_shape(name):
    check_grad(BINARY[name], M23P, R.uniform(0.5, 2.0, (2, 3)))


def test_clamp_with_tensor_bounds():
    check_grad(lambda a, b: a.clamp(min=b), M23P, R.uniform(0.5, 2.0, (2, 3)))
    check_grad(lambda a, lo, hi: a.clamp(lo, hi), M23P, M23P - 0.3, M23P + 0.3 * R.choice([-2, 1], (2, 3)))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum"])
@pytest.mark.parametrize("shapes", [((2, 3), (3,)), ((2, 3), (1, 3)), ((2, 3), ()), ((3, 1), (1, 4)),
                                    ((1,), (2, 3)), ((2, 1, 3), (4, 1))])
def test_binary_broadcasting(name, shapes):
    a = R.uniform(0.5, 2.0, shapes[0])
    b = R.uniform(0.5, 2.0, shapes[1])
    grads = check_grad(BINARY[name], a, b)
    assert [tuple(g.shape) for g in grads] == [shapes[0], shapes[1]]


def test_binary_with_constants():
    c = torch.tensor(R.uniform(0.5, 2.0, 3))
    check_grad(lambda x: x * c + c / x - c ** x + x ** c, V3)
    check_grad(lambda x: 3 * x - x / 4 + 1.5 ** x, V3)


REDUCTIONS = {
    "sum": lambda a: a.sum(),
    "sum0": lambda a: a.sum(0),
    "sum1_keep": lambda a: a.sum(dim=1, keepdim=True),
    "sum_neg": lambda a: a.sum(-1),
    "sum_tuple": lambda a: a.sum((0, 2)),
    "mean": lambda a: a.mean(),
    "mean1": lambda a: a.mean(dim=1),
    "mean0_keep": lambda a: a.mean(0, keepdim=True),
    "mean_tuple_keep": lambda a: a.mean((0, 1), keepdim=True),
    "max": lambda a: a.max(),
    "min": lambda a: a.min(),
    "max_dim": lambda a: a.max(dim=1)[0],
    "max_dim_keep": lambda a: a.max(1, keepdim=True).values,
    "min_dim": lambda a: a.min(dim=0).values,
    "amax": lambda a: torch.amax(a, 2),
    "norm": lambda a: a.norm(),
    "norm_dim": lambda a: a.norm(dim=1),
    "norm_p1": lambda a: a.norm(p=1),
    "norm_keep": lambda a: a.norm(dim=2, keepdim=True),
    "torch_sum": lambda a: torch.sum(a, 1),
    "torch_mean": lambda a: torch.mean(a),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions(name):
    check_grad(REDUCTIONS[name], T234)


SHAPES = {
    "reshape": lambda a: a.reshape(4, 6) * torch.arange(24.).double().reshape(4, 6),
    "reshape_neg": lambda a: a.reshape(-1, 3),
    "view": lambda a: a.view(6, 4),
    "flatten": lambda a: a.flatten(),
    "transpose": lambda a: a.transpose(0, 2),
    "permute": lambda a: a.permute(2, 0, 1),
    "unsqueeze": lambda a: a.unsqueeze(1),
    "squeeze": lambda a: a[:, :1].squeeze(),
    "squeeze_dim": lambda a: a[:, :1].squeeze(1),
    "expand": lambda a: a[:, :1].expand(2, 5, 4),
    "expand_new_dim": lambda a: a.expand(3, 2, 3, 4),
    "mT": lambda a: a.mT,
    "t_reshape": lambda a: a[0].t().reshape(-1),
    "T": lambda a: a[0].T,
    "t": lambda a: a[1].t(),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shape_ops(name):
    check_grad(SHAPES[name], T234)


INDEXING = {
    "select": lambda a: a[1],
    "select_neg": lambda a: a[-1, 2],
    "slice": lambda a: a[:, 1:],
    "step": lambda a: a[:, ::2],
    "ellipsis_none": lambda a: a[..., None],
    "list": lambda a: a[[0, 0, 1]],
    "tensor_index": lambda a: a[:, torch.tensor([2, 0, 2])],
    "mask": lambda a: a[a > 0],
    "chained": lambda a: a[0][1],
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing_read(name):
    check_grad(INDEXING[name], M23)


def test_indexing_write():
    def f(a, b):
        out = a * 1
        out[0, 1:] = b[:2] * 3
        out[1] = (out[1] + 1) * b  # out[1] * b would save a view that the write then modifies
        return out

    check_grad(f, M23, R.uniform(-1, 1, 3))


def test_indexing_write_into_plain_buffer():
    def f(x):
        buf = torch.zeros(2, 3, dtype=torch.float64)
        buf[0] = x.sin()
        buf[1, ::2] = x[:2] ** 2
        return buf

    check_grad(f, V3)


PRODUCTS = [
    ("mm", (2, 3), (3, 4), lambda a, b: a @ b),
    ("mm_method", (2, 3), (3, 4), lambda a, b: a.mm(b)),
    ("matmul_fn", (2, 3), (3, 4), lambda a, b: torch.matmul(a, b)),
    ("dot", (3,), (3,), lambda a, b: a.dot(b)),
    ("vecvec", (3,), (3,), lambda a, b: a @ b),
    ("mv", (2, 3), (3,), lambda a, b: a.mv(b)),
    ("matvec", (2, 3), (3,), lambda a, b: a @ b),
    ("vecmat", (3,), (3, 4), lambda a, b: a @ b),
    ("batched", (2, 3, 4), (2, 4, 5), lambda a, b: a @ b),
    ("batched_matrix", (2, 3, 4), (4, 5), lambda a, b: a @ b),
    ("broadcast_batch", (1, 3, 4), (2, 4, 5), lambda a, b: a @ b),
    ("outer", (3,), (4,), lambda a, b: torch.outer(a, b)),
]


@pytest.mark.parametrize("name, sa, sb, f", PRODUCTS, ids=[p[0] for p in PRODUCTS])
def test_products(name, sa, sb, f):
    check_grad(f, R.uniform(-2, 2, sa), R.uniform(-2, 2, sb))


def test_cat_stack_where():
    check_grad(lambda a, b: torch.cat([a, b * 2, a.exp()]), V3, V3 * 0.5)
    check_grad(lambda a, b: torch.cat([a, b], dim=1), M23, M34[:2])
    check_grad(lambda a: torch.cat([a, torch.ones(2, 3, dtype=torch.float64)], -1) * 2, M23)
    check_grad(lambda a, b: torch.stack([a, b]), V3, V3 * 3)
    check_grad(lambda a, b: torch.stack([a, b, a], dim=1), M23, M23P)
    check_grad(lambda a, b: torch.where(a > 0, a, b), M23, M23P)
    check_grad(lambda a: torch.where(a > 0, a, 0.0), M23)
    check_grad(lambda a, b: torch.where(a > 0, a, b[0]), M23, M23P)


def test_repeated_use_and_composite_graph():
    def f(x, w):
        h = (x @ w).tanh()
        return (h * h + h).sum(1).sigmoid() * x.mean() - (w ** 2).sum().sqrt()

    check_grad(f, M23, M34)


INPLACE = {
    "add_": lambda x: (x * 2).add_(x),
    "iadd": lambda x: _iop(x, "iadd"),
    "mul_": lambda x: (x + 1).mul_(x),
    "sub_": lambda x: (x * 3).sub_(x.exp(), alpha=2),
    "div_": lambda x: (x + 1).div_(x),
    "pow_": lambda x: (x + 1).pow_(2),
    "exp_": lambda x: (x * 0.5).exp_(),
    "neg_": lambda x: (x * 1).neg_(),
    "relu_": lambda x: (x - 1.2).relu_(),
    "sigmoid_": lambda x: (x * 2).sigmoid_(),
    "tanh_": lambda x: (x * 2).tanh_(),
    "clamp_": lambda x: (x * 1).clamp_(min=1.0),
    "zero_": lambda x: (x * 1).zero_() + x,
    "fill_": lambda x: (x * 1).fill_(2.0) * x,
    "copy_": lambda x: (x * 1).copy_(x.sin()),
    "chain": lambda x: (x * 2).add_(1).mul_(x),
    "slice_mul_": lambda x: _slice_mul(x),
}


def _iop(x, kind):
    y = x * 2
    y += x * x
    y *= 3
    y -= x
    y /= 2
    return y


def _slice_mul(x):
    y = x * 1
    y[1:].mul_(x[:2])
    return y


@pytest.mark.parametrize("name", sorted(INPLACE))
def test_inplace_on_non_leaf(name):
    check_grad(INPLACE[name], V3)


def test_numpy_protocol_calls():
    check_grad(lambda t: np.sin(t), M23)
    check_grad(lambda t: np.sum(t, axis=0), M23)
    check_grad(lambda t: np.sum(t * t, axis=1, keepdims=True), M23)
    check_grad(lambda t: np.linalg.norm(t), M23)
    check_grad(lambda t: np.linalg.norm(t, axis=1), M23)
    check_grad(lambda t: t.mean(), M23)
    check_grad(lambda t: np.mean(t, axis=1), M23)
    check_grad(lambda t: np.exp(t) * np.tanh(t) + np.log(t), M23P)
    check_grad(lambda t: np.maximum(t, 0.3) + np.where(t > 1, t, -t), M23P)
    check_grad(lambda t: np.dot(t, np.ones(3)), M23)
    check_grad(lambda a, b: np.matmul(a, b), M23, M34)
    check_grad(lambda t: np.concatenate([t, t * 2], axis=1), M23)
    check_grad(lambda t: np.stack([t, t.sin()]), M23)
    check_grad(lambda t: np.transpose(t) @ t, M23)
    check_grad(lambda t: np.reshape(t, (3, 2)) * np.arange(6.0).reshape(3, 2), M23)
    check_grad(lambda t: np.sqrt(np.square(t) + 1.0), M23)
    check_grad(lambda t: np.max(t, axis=1) + np.min(t), M23)


def test_numpy_protocol_records_the_tape():
    t = torch.tensor(M23, requires_grad=True)
    assert np.sin(t).grad_fn.name() == "SinBackward0"
    assert np.sum(t, axis=0).grad_fn.name() == "SumBackward1"
    assert np.sum(t).grad_fn.name() == "SumBackward0"
    assert np.linalg.norm(t).grad_fn.name() == "LinalgVectorNormBackward0"
    assert type(np.sin(t)).__name__ == "Tensor"
    plain = np.sin(torch.tensor([0.0, 1.0]))
    assert plain.grad_fn is None and repr(plain) == "tensor([0.0000, 0.8415])"


# ------------------------------------------------------------ section 6 references


def test_tutorial_reference_values_with_retain_grad():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    y.retain_grad()
    z.retain_grad()
    out = z.mean()
    out.backward()
    assert str(z.grad) == "tensor([[0.2500, 0.2500],\n        [0.2500, 0.2500]])"
    assert str(y.grad) == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"
    assert str(x.grad) == "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])"


def _grad_of(f, data, **kw):
    x = torch.tensor(data, requires_grad=True, **kw)
    f(x).backward()
    return x.grad


def test_reduction_reference_values():
    assert repr(_grad_of(lambda a: a.mean(), [[1.0] * 3] * 2)) == (
        "tensor([[0.1667, 0.1667, 0.1667],\n        [0.1667, 0.1667, 0.1667]])")
    assert repr(_grad_of(lambda a: a.mean(dim=1).sum(), [[1.0] * 3] * 2)) == (
        "tensor([[0.3333, 0.3333, 0.3333],\n        [0.3333, 0.3333, 0.3333]])")
    assert repr(_grad_of(lambda a: a.sum(dim=0).sum(), [[1.0] * 3] * 2)) == (
        "tensor([[1., 1., 1.],\n        [1., 1., 1.]])")


def test_product_reference_values():
    A = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    B = torch.tensor([[5.0, 6.0], [7.0, 8.0]], requires_grad=True)
    (A @ B).sum().backward()
    assert A.grad.tolist() == [[11.0, 15.0], [11.0, 15.0]] and B.grad.tolist() == [[4.0, 4.0], [6.0, 6.0]]
    v = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([3.0, 4.0], requires_grad=True)
    v.dot(w).backward()
    assert v.grad.tolist() == [3.0, 4.0] and w.grad.tolist() == [1.0, 2.0]
    A.grad, v.grad = None, None
    A.mv(v).sum().backward()
    assert A.grad.tolist() == [[1.0, 2.0], [1.0, 2.0]] and v.grad.tolist() == [4.0, 6.0]


ELEMENTWISE_REFERENCE = [
    (lambda x: x.exp(), "tensor([1.6487, 2.7183, 7.3891])"),
    (lambda x: x.log(), "tensor([2.0000, 1.0000, 0.5000])"),
    (lambda x: x.sin(), "tensor([ 0.8776,  0.5403, -0.4161])"),
    (lambda x: x.cos(), "tensor([-0.4794, -0.8415, -0.9093])"),
    (lambda x: x.tanh(), "tensor([0.7864, 0.4200, 0.0707])"),
    (lambda x: x.sigmoid(), "tensor([0.2350, 0.1966, 0.1050])"),
    (lambda x: x.sqrt(), "tensor([0.7071, 0.5000, 0.3536])"),
    (lambda x: x ** 3, "tensor([ 0.7500,  3.0000, 12.0000])"),
    (lambda x: 2 ** x, "tensor([0.9803, 1.3863, 2.7726])"),
    (lambda x: x ** x, "tensor([0.2170, 1.0000, 6.7726])"),
    (lambda x: 1 / x, "tensor([-4.0000, -1.0000, -0.2500])"),
    (lambda x: x.norm(), "tensor([0.2182, 0.4364, 0.8729])"),
    (lambda x: x.mean(), "tensor([0.3333, 0.3333, 0.3333])"),
]


@pytest.mark.parametrize("f, expected", ELEMENTWISE_REFERENCE)
def test_elementwise_reference_values(f, expected):
    assert repr(_grad_of(lambda x: f(x).sum(), [0.5, 1.0, 2.0])) == expected


KINKS = [
    ([1.0, 3.0, 3.0], lambda x: x.max(), "tensor([0.0000, 0.5000, 0.5000])"),
    ([5.0, 5.0, 5.0, 5.0], lambda x: x.max(), "tensor([0.2500, 0.2500, 0.2500, 0.2500])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: x.max(), "tensor([[0.3333, 0.3333],\n        [0.0000, 0.3333]])"),
    ([1.0, 3.0, 3.0], lambda x: x.min(), "tensor([1., 0., 0.])"),
    ([1.0, 3.0, 3.0], lambda x: x.max(dim=0).values, "tensor([0., 1., 0.])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: x.max(dim=1).values.sum(), "tensor([[1., 0.],\n        [0., 1.]])"),
    ([[2.0, 2.0], [1.0, 2.0]], lambda x: torch.amax(x, dim=1).sum(),
     "tensor([[0.5000, 0.5000],\n        [0.0000, 1.0000]])"),
    ([-1.0, 0.0, 2.0], lambda x: x.abs().sum(), "tensor([-1.,  0.,  1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.relu().sum(), "tensor([0., 0., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: torch.nn.functional.relu(x).sum(), "tensor([0., 0., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(min=0).sum(), "tensor([0., 1., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(0, 2).sum(), "tensor([0., 1., 1.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.clamp(max=0).sum(), "tensor([1., 1., 0.])"),
    ([-1.0, 0.0, 2.0], lambda x: x.sign().sum(), "tensor([0., 0., 0.])"),
    ([0.0, 4.0], lambda x: x.sqrt().sum(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: (x ** 0.5).sum(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: (x.sqrt() * 0).sum(), "tensor([nan, 0.])"),
    ([0.0, 4.0], lambda x: x.log().sum(), "tensor([   inf, 0.2500])"),
    ([0.0, 4.0], lambda x: (x ** 2).sum(), "tensor([0., 8.])"),
    ([0.0, 4.0], lambda x: (x ** 0).sum(), "tensor([0., 0.])"),
    ([0.0, 4.0], lambda x: (x ** 1.5).sum(), "tensor([0., 3.])"),
    ([0.0, 0.0, 0.0], lambda x: x.norm(), "tensor([0., 0., 0.])"),
    ([3.0, 4.0], lambda x: x.norm(), "tensor([0.6000, 0.8000])"),
    ([-1.0, 4.0], lambda x: torch.where(x > 0, x.sqrt(), 0).sum(), "tensor([   nan, 0.2500])"),
    ([0.0], lambda x: (x / x).sum(), "tensor([nan])"),
]


@pytest.mark.parametrize("data, f, expected", KINKS)
def test_ties_kinks_and_singular_points(data, f, expected):
    assert repr(_grad_of(f, data)) == expected


def test_forward_values_at_singular_points():
    x = torch.tensor([0.0, 4.0], requires_grad=True)
    assert repr(x.sqrt()) == "tensor([0., 2.], grad_fn=<SqrtBackward0>)"
    assert repr(x.log()) == "tensor([  -inf, 1.3863], grad_fn=<LogBackward0>)"
    y = torch.tensor([1.0, 3.0, 3.0], requires_grad=True)
    values, indices = y.max(dim=0)
    assert repr(values) == "tensor(3., grad_fn=<MaxBackward0>)" and repr(indices) == "tensor(1)"


def test_maximum_ties_share_evenly():
    z = torch.tensor([1.0, 2.0], requires_grad=True)
    w = torch.tensor([1.0, 0.0], requires_grad=True)
    torch.maximum(z, w).sum().backward()
    assert repr(z.grad) == "tensor([0.5000, 1.0000])" and repr(w.grad) == "tensor([0.5000, 0.0000])"
    z.grad = w.grad = None
    torch.max(z, w).sum().backward()
    assert repr(z.grad) == "tensor([0.5000, 1.0000])" and repr(w.grad) == "tensor([0.5000, 0.0000])"
