"""Reprs of section 2.8, grad_fn names of section 4 and graph structure of section 5."""

import pytest

import astgrad.torch as torch
import astgrad.torch.nn.functional as F
from _taped import mask_addresses


def leaves():
    x = torch.tensor([1.5, -0.5, 2.0], requires_grad=True)
    w = torch.tensor([0.5, 1.0, -1.5], requires_grad=True)
    c = torch.tensor([2.0, 3.0, 4.0])
    A = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    B = torch.ones(3, 4, requires_grad=True)
    T3 = torch.ones(2, 3, 4, requires_grad=True)
    U3 = torch.ones(2, 4, 5, requires_grad=True)
    s = torch.tensor(2.0, requires_grad=True)
    return dict(x=x, w=w, c=c, A=A, B=B, T3=T3, U3=U3, s=s, torch=torch, F=F)


NAMES = [
    ("x + 2", "AddBackward0"), ("2 + x", "AddBackward0"), ("x + w", "AddBackward0"),
    ("x + c", "AddBackward0"), ("c + x", "AddBackward0"), ("A + x", "AddBackward0"),
    ("x + s", "AddBackward0"), ("torch.add(x, w)", "AddBackward0"), ("x.add(w, alpha=2)", "AddBackward0"),
    ("x + 2.5", "AddBackward0"),
    ("x - 2", "SubBackward0"), ("x - w", "SubBackward0"), ("c - x", "SubBackward0"), ("torch.sub(x, w)", "SubBackward0"),
    ("2 - x", "RsubBackward1"),
    ("x * 2", "MulBackward0"), ("2 * x", "MulBackward0"), ("x * w", "MulBackward0"), ("x * c", "MulBackward0"),
    ("torch.outer(x, w)", "MulBackward0"),
    ("x / 2", "DivBackward0"), ("x / w", "DivBackward0"), ("c / x", "DivBackward0"),
    ("2 / x", "MulBackward0"), ("1 / x", "MulBackward0"), ("x.reciprocal()", "ReciprocalBackward0"),
    ("x ** 2", "PowBackward0"), ("x ** 0.5", "PowBackward0"), ("x ** 1", "PowBackward0"), ("x ** 0", "PowBackward0"),
    ("x ** -1", "PowBackward0"), ("x.pow(2)", "PowBackward0"), ("torch.square(x)", "PowBackward0"),
    ("x.square()", "PowBackward0"),
    ("x ** w", "PowBackward1"), ("x ** s", "PowBackward1"), ("torch.pow(x, w)", "PowBackward1"),
    ("torch.tensor(2.) ** x", "PowBackward1"),
    ("2 ** x", "PowBackward2"), ("2.5 ** x", "PowBackward2"), ("torch.pow(2, x)", "PowBackward2"),
    ("-x", "NegBackward0"), ("x.neg()", "NegBackward0"), ("torch.neg(x)", "NegBackward0"),
    ("A @ B", "MmBackward0"), ("torch.matmul(A, B)", "MmBackward0"), ("A.mm(B)", "MmBackward0"),
    ("torch.mm(A, B)", "MmBackward0"),
    ("x @ w", "DotBackward0"), ("x.dot(w)", "DotBackward0"), ("torch.dot(x, w)", "DotBackward0"),
    ("A @ x", "MvBackward0"), ("A.mv(x)", "MvBackward0"), ("torch.mv(A, x)", "MvBackward0"),
    ("x @ B", "SqueezeBackward4"),
    ("T3 @ U3", "UnsafeViewBackward0"), ("T3 @ B.t()", "UnsafeViewBackward0"),
    ("x.mean()", "MeanBackward0"), ("torch.mean(x)", "MeanBackward0"),
    ("A.mean(dim=0)", "MeanBackward1"), ("A.mean(0, keepdim=True)", "MeanBackward1"), ("x.mean(dim=0)", "MeanBackward1"),
    ("x.sum()", "SumBackward0"), ("torch.sum(x)", "SumBackward0"),
    ("A.sum(dim=1)", "SumBackward1"), ("A.sum(0, keepdim=True)", "SumBackward1"), ("x.sum(dim=0)", "SumBackward1"),
    ("A.sum((0, 1))", "SumBackward1"),
    ("x.exp()", "ExpBackward0"), ("x.abs().log()", "LogBackward0"), ("x.sin()", "SinBackward0"),
    ("x.cos()", "CosBackward0"), ("x.tanh()", "TanhBackward0"), ("x.sigmoid()", "SigmoidBackward0"),
    ("torch.exp(x)", "ExpBackward0"), ("torch.sigmoid(x)", "SigmoidBackward0"),
    ("x.relu()", "ReluBackward0"), ("torch.relu(x)", "ReluBackward0"), ("F.relu(x)", "ReluBackward0"),
    ("x.abs()", "AbsBackward0"), ("torch.abs(x)", "AbsBackward0"), ("abs(x)", "AbsBackward0"),
    ("c.sqrt() * x", "MulBackward0"), ("w.abs().sqrt()", "SqrtBackward0"), ("torch.sqrt(x.abs())", "SqrtBackward0"),
    ("x.max()", "MaxBackward1"), ("torch.max(x)", "MaxBackward1"),
    ("A.max(dim=0)[0]", "MaxBackward0"), ("A.max(dim=0).values", "MaxBackward0"), ("A.max(1, keepdim=True)[0]", "MaxBackward0"),
    ("torch.max(x, w)", "MaximumBackward0"), ("torch.maximum(x, w)", "MaximumBackward0"),
    ("x.min()", "MinBackward1"), ("A.min(dim=1)[0]", "MinBackward0"), ("torch.min(x, w)", "MinimumBackward0"),
    ("torch.minimum(x, w)", "MinimumBackward0"),
    ("torch.amax(A)", "AmaxBackward0"), ("torch.amin(A, 1)", "AminBackward0"),
    ("A.reshape(3, 2)", "ViewBackward0"), ("A.reshape(-1)", "ViewBackward0"), ("A.reshape(2, 3)", "ViewBackward0"),
    ("A.view(6)", "ViewBackward0"), ("A.view(3, 2)", "ViewBackward0"), ("A.flatten()", "ViewBackward0"),
    ("x.view_as(x)", "ViewBackward0"),
    ("A.t().reshape(-1)", "UnsafeViewBackward0"),
    ("A.transpose(0, 1)", "TransposeBackward0"), ("A.mT", "TransposeBackward0"), ("T3.transpose(1, 2)", "TransposeBackward0"),
    ("A.T", "PermuteBackward0"), ("A.permute(1, 0)", "PermuteBackward0"),
    ("A.t()", "TBackward0"),
    ("x[0]", "SelectBackward0"), ("x[-1]", "SelectBackward0"), ("A[0]", "SelectBackward0"), ("A[:, 1]", "SelectBackward0"),
    ("A[0, 1]", "SelectBackward0"), ("A[0][1]", "SelectBackward0"), ("A[0, :]", "SelectBackward0"),
    ("x[1:]", "SliceBackward0"), ("x[:2]", "SliceBackward0"), ("x[:]", "SliceBackward0"), ("x[::2]", "SliceBackward0"),
    ("A[:, ::2]", "SliceBackward0"),
    ("x[[0, 2]]", "IndexBackward0"), ("x[torch.tensor([0, 1])]", "IndexBackward0"), ("x[x > 0]", "IndexBackward0"),
    ("x[None]", "UnsqueezeBackward0"), ("A[..., None]", "UnsqueezeBackward0"), ("x.unsqueeze(0)", "UnsqueezeBackward0"),
    ("x.unsqueeze(-1)", "UnsqueezeBackward0"), ("torch.unsqueeze(x, 0)", "UnsqueezeBackward0"),
    ("x[None].squeeze()", "SqueezeBackward0"), ("x[None].squeeze(0)", "SqueezeBackward1"),
    ("torch.cat([x, w])", "CatBackward0"), ("torch.cat([c, x])", "CatBackward0"),
    ("torch.stack([x, w])", "StackBackward0"),
    ("x.clamp(-0.5, 0.5)", "ClampBackward1"), ("torch.clamp(x, min=0, max=1)", "ClampBackward1"),
    ("x.clamp(min=0)", "ClampBackward1"), ("x.clamp(max=0)", "ClampBackward1"), ("x.clip(0, 1)", "ClampBackward1"),
    ("x.clamp(min=c)", "ClampBackward0"), ("x.clamp(c, c + 1)", "ClampBackward0"),
    ("torch.where(x > 0, x, w)", "WhereBackward0"), ("torch.where(x > 0, x, 0.)", "WhereBackward0"),
    ("torch.where(x > 0, c, w)", "WhereBackward0"),
    ("x.clone()", "CloneBackward0"), ("A.t().contiguous()", "CloneBackward0"),
    ("x.expand(2, 3)", "ExpandBackward0"), ("x.expand_as(A)", "ExpandBackward0"),
    ("x.norm()", "LinalgVectorNormBackward0"), ("torch.norm(x)", "LinalgVectorNormBackward0"),
    ("x.norm(p=1)", "LinalgVectorNormBackward0"), ("x.norm(2)", "LinalgVectorNormBackward0"),
    ("A.norm(dim=1)", "LinalgVectorNormBackward0"),
    ("x.double()", "ToCopyBackward0"), ("x.to(torch.float64)", "ToCopyBackward0"), ("x.type(torch.float64)", "ToCopyBackward0"),
]


@pytest.mark.parametrize("expression, name", NAMES)
def test_grad_fn_name(expression, name):
    t = eval(expression, leaves())
    assert type(t.grad_fn).__name__ == name
    assert t.grad_fn.name() == name
    assert repr(t).endswith(f"grad_fn=<{name}>)")
    assert mask_addresses(repr(t.grad_fn)) == f"<{name} object at 0x...>"
    assert str(type(t.grad_fn)) == f"<class '{name}'>"
    assert type(t.grad_fn).__module__ == "builtins"
    assert t.requires_grad and not t.is_leaf


@pytest.mark.parametrize("expression", [
    "x.detach()", "x.detach().clone()", "x.data", "x > 0", "x.argmax()", "x.long()",
    "torch.zeros_like(x)", "torch.ones_like(x)", "torch.cat([c, c])", "c * 2", "torch.where(x > 0, c, c)",
])
def test_results_without_grad_fn(expression):
    t = eval(expression, leaves())
    assert t.grad_fn is None and t.requires_grad is False and t.is_leaf


@pytest.mark.parametrize("expression", ["x.float()", "x.to(torch.float32)", "x.contiguous()", "x.flatten()"])
def test_operations_returning_the_input_itself(expression):
    env = leaves()
    t = eval(expression, env)
    assert t is env["x"] and t.grad_fn is None and t.is_leaf


def test_other_reprs():
    x = torch.ones(2, 3)
    assert repr(x.shape) == "torch.Size([2, 3])" and repr(x.size()) == "torch.Size([2, 3])"
    assert str(torch.tensor(1.0).shape) == "torch.Size([])"
    assert x.size(1) == 3 and x.dim() == 2 and x.numel() == 6
    assert repr(x.dtype) == "torch.float32"
    assert torch.float is torch.float32
    assert repr(torch.double) == "torch.float64" and repr(torch.long) == "torch.int64"
    assert repr(torch.int) == "torch.int32"
    assert repr(x.device) == "device(type='cpu')"
    assert x.type() == "torch.FloatTensor"
    assert x.double().type() == "torch.DoubleTensor"
    assert torch.tensor([1, 2]).type() == "torch.LongTensor"
    assert torch.tensor([True]).type() == "torch.BoolTensor"
    assert str(type(x)) == "<class 'torch.Tensor'>"
    leaf = torch.ones(2, requires_grad=True)
    assert leaf.grad_fn is None and leaf.grad is None
    assert mask_addresses(repr(torch.no_grad())) == "<torch.autograd.grad_mode.no_grad object at 0x...>"
    with torch.no_grad() as bound:
        assert bound is None
    assert mask_addresses(repr(torch.manual_seed(7))) == "<torch._C.Generator object at 0x...>"
    assert repr(torch.nn.Parameter(torch.ones(2))) == "Parameter containing:\ntensor([1., 1.], requires_grad=True)"
    handle = leaf.register_hook(lambda g: g)
    assert mask_addresses(repr(handle)) == "<torch.utils.hooks.RemovableHandle object at 0x...>"
    handle.remove()


def test_set_grad_enabled_echo():
    mode = torch.set_grad_enabled(False)
    try:
        assert repr(mode) == "torch.autograd.grad_mode.set_grad_enabled(mode=False)"
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()


def test_max_dim_namedtuple_repr():
    A = torch.tensor([[1.5410, -0.2934, -2.1788], [0.5684, -1.0845, -1.3986]], requires_grad=True)
    result = A.max(dim=0)
    assert repr(result) == (
        "torch.return_types.max(\nvalues=tensor([ 1.5410, -0.2934, -1.3986], grad_fn=<MaxBackward0>),\n"
        "indices=tensor([0, 0, 1]))"
    )
    values, indices = result
    assert values is result.values and indices.grad_fn is None and indices.dtype == torch.int64


def test_accumulate_grad_node():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    acc = y.grad_fn.next_functions[0][0]
    assert mask_addresses(repr(acc)) == "<AccumulateGrad object at 0x...>"
    assert acc.name() == "torch::autograd::AccumulateGrad"
    assert acc.variable is x
    assert acc.next_functions == ()
    assert (x * 3).grad_fn.next_functions[0][0] is acc


def test_tutorial_graph_structure():
    x = torch.ones(2, 2, requires_grad=True)
    y = x + 2
    z = y * y * 3
    out = z.mean()
    assert (x.is_leaf, y.is_leaf, z.is_leaf, out.is_leaf) == (True, False, False, False)
    assert mask_addresses(repr(y.grad_fn.next_functions)) == "((<AccumulateGrad object at 0x...>, 0), (None, 0))"
    assert mask_addresses(repr(z.grad_fn.next_functions)) == "((<MulBackward0 object at 0x...>, 0), (None, 0))"
    yy = z.grad_fn.next_functions[0][0]
    assert yy.next_functions[0][0] is y.grad_fn and yy.next_functions[1][0] is y.grad_fn
    assert yy.next_functions[0][1] == 0
    assert len(out.grad_fn.next_functions) == 1 and out.grad_fn.next_functions[0][0] is z.grad_fn
    assert y.grad_fn.metadata == {}
    assert isinstance(y.grad_fn, torch.autograd.graph.Node)
    out.backward()
    assert out.grad_fn is not None and len(out.grad_fn.next_functions) == 1


def _slots(t):
    return tuple(("Acc" if type(n).__name__ == "AccumulateGrad" else n) if n is not None else None
                 for n, _ in t.grad_fn.next_functions)


def test_number_of_slots_per_op():
    a = torch.tensor([1.0, 2.0], requires_grad=True)
    b = torch.tensor([3.0, 4.0], requires_grad=True)
    c = torch.tensor([5.0, 6.0])
    assert _slots(a + b) == ("Acc", "Acc")
    assert _slots(a * c) == ("Acc", None)
    assert _slots(c * a) == (None, "Acc")
    assert _slots(a * 2) == _slots(2 * a) == _slots(a - 1) == ("Acc", None)
    for one in (1 - a, a ** 2, -a, a.sum(), a.mean(), a.exp(), a[0]):
        assert _slots(one) == ("Acc",)
    assert _slots(a ** b) == ("Acc", "Acc")
    assert _slots(a.dot(b)) == ("Acc", "Acc")
    assert _slots(torch.cat([a, b, c])) == ("Acc", "Acc", None)
    assert _slots(torch.stack([a, c])) == ("Acc", None)
