"""Tensor.split, chunk, unbind, narrow, gather, masked_fill, sort, topk, tril/triu, repeat, flip, new_*;
torch.einsum and torch.linalg: gradients against central differences, node names, printed forms, errors.
"""

import numpy as np
import pytest

import astgrad.torch as torch
from _taped import check_grad
from astgrad.tape._modes import numpy_methods

RNG = np.random.default_rng(11)


def name(t):
    return type(t.grad_fn).__name__


def joined(pieces):
    """Pieces weighted differently, so that a gradient sent to the wrong piece shows."""
    return torch.cat([p.reshape(-1) * (i + 1) for i, p in enumerate(pieces)])


# ------------------------------------------------------------------- pieces


@pytest.mark.parametrize("cut", [
    lambda x: x.split(2, 1), lambda x: x.split([1, 3, 1], 1), lambda x: x.split(1), lambda x: x.chunk(2, 1),
    lambda x: x.chunk(3, -1), lambda x: x.unbind(1), lambda x: x.unbind(), lambda x: (x.narrow(1, 1, 3),),
    lambda x: torch.split(x, 3, dim=1), lambda x: torch.chunk(x, 2), lambda x: torch.unbind(x, 0),
    lambda x: (torch.narrow(x, 1, -2, 2),),
])
def test_pieces_gradients_match_finite_differences(cut):
    check_grad(lambda x: joined(cut(x)), RNG.normal(size=(2, 5)))


def test_pieces_sizes_names_and_values():
    x = torch.arange(10.0).reshape(2, 5).requires_grad_()
    assert [p.shape[1] for p in x.split(2, 1)] == [2, 2, 1]
    assert [p.shape[1] for p in x.chunk(2, 1)] == [3, 2]
    assert [p.shape[1] for p in x.chunk(5, 1)] == [1, 1, 1, 1, 1]
    assert [p.shape[1] for p in torch.arange(6.0).reshape(1, 6).chunk(4, 1)] == [2, 2, 2]  # fewer than asked
    assert {name(p) for p in x.split(2, 1) + x.chunk(2, 1)} == {"SplitBackward0"}
    assert {name(p) for p in x.split([2, 3], 1)} == {"SplitWithSizesBackward0"}
    assert {name(p) for p in x.unbind(1)} == {"UnbindBackward0"}
    assert name(x.narrow(1, 1, 2)) == "SliceBackward0"
    assert repr(x.unbind(1)[4]) == "tensor([4., 9.], grad_fn=<UnbindBackward0>)"
    assert repr(x.narrow(0, 1, 1)) == "tensor([[5., 6., 7., 8., 9.]], grad_fn=<SliceBackward0>)"
    assert isinstance(x.split(2), tuple) and isinstance(x.unbind(), tuple)


def test_pieces_are_views_sharing_storage_and_version():
    base = torch.zeros(2, 4)
    first, second = base.split(2, 1)
    second[0, 0] = 7.0
    assert base[0, 2].item() == 7.0
    assert base._version == first._version == 1
    x = torch.ones(4, requires_grad=True)
    y = x * 1
    piece = y.narrow(0, 1, 2)
    piece.mul_(3)  # in place through a view: the base's history follows
    y.sum().backward()
    assert repr(x.grad) == "tensor([1., 3., 3., 1.])"


def test_pieces_errors():
    x = torch.ones(2, 5)
    with pytest.raises(RuntimeError, match=r"^split_with_sizes expects split_sizes to sum exactly to 5 \(input "
                                           r"tensor's size at dimension 1\), but got split_sizes=\[2, 2\]$"):
        x.split([2, 2], 1)
    with pytest.raises(RuntimeError, match="^chunk expects `chunks` to be greater than 0, got: 0$"):
        x.chunk(0)
    with pytest.raises(RuntimeError, match=r"^start \(4\) \+ length \(2\) exceeds dimension size \(5\).$"):
        x.narrow(1, 4, 2)
    with pytest.raises(IndexError, match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but "
                                         r"got 2\)$"):
        x.unbind(2)
    with pytest.raises(RuntimeError, match="^split_size can only be 0 if dimension size is 0"):
        x.split(0)


# ------------------------------------------------------------------ picking


def test_gather_gradient_accumulates_repeated_indices():
    index = torch.tensor([[0, 0, 2], [1, 2, 1]])
    check_grad(lambda x: x.gather(1, index), RNG.normal(size=(2, 3)))
    check_grad(lambda x: torch.gather(x, 0, torch.tensor([[1, 0], [1, 1]])), RNG.normal(size=(3, 4)))
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    out = x.gather(1, index)
    assert repr(out) == "tensor([[1., 1., 3.],\n        [5., 6., 5.]], grad_fn=<GatherBackward0>)"
    out.sum().backward()
    assert repr(x.grad) == "tensor([[2., 0., 1.],\n        [0., 2., 1.]])"


def test_gather_errors():
    x = torch.ones(2, 3)
    with pytest.raises(RuntimeError, match="^gather\\(\\): Expected dtype int64 for index$"):
        x.gather(1, torch.tensor([[0]], dtype=torch.int32))
    with pytest.raises(RuntimeError, match="^index 3 is out of bounds for dimension 1 with size 3$"):
        x.gather(1, torch.tensor([[3], [0]]))
    with pytest.raises(RuntimeError, match="^Index tensor must have the same number of dimensions as input tensor$"):
        x.gather(1, torch.tensor([0]))
    with pytest.raises(RuntimeError, match="^Size does not match at dimension 0"):
        x.gather(1, torch.tensor([[0], [0], [0]]))


def test_masked_fill_with_a_number_and_with_a_tensor():
    mask = torch.tensor([[True, False, False], [False, True, True]])
    check_grad(lambda x: x.masked_fill(mask, 0.5), RNG.normal(size=(2, 3)))
    check_grad(lambda x, v: x.masked_fill(mask, v), RNG.normal(size=(2, 3)), np.array(2.0))
    check_grad(lambda x: torch.masked_fill(x, torch.tensor([True, False, True]), -1.0), RNG.normal(size=(2, 3)))
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert repr(x.masked_fill(mask, 0)) == ("tensor([[0., 2., 3.],\n        [4., 0., 0.]], "
                                            "grad_fn=<MaskedFillBackward0>)")
    value = torch.tensor(9.0, requires_grad=True)
    filled = x.masked_fill(mask, value)
    assert name(filled) == "MaskedFillBackward1"
    filled.sum().backward()
    assert repr(value.grad) == "tensor(3.)"
    assert repr(torch.tensor([1, 2]).masked_fill(torch.tensor([True, False]), 0.7)) == "tensor([0, 2])"
    with pytest.raises(RuntimeError, match="^masked_fill_ only supports boolean masks, but got mask with dtype "
                                           "long int$"):
        x.masked_fill(torch.tensor([1, 0, 1]), 0.0)
    x.grad = None
    y = x * 2
    assert y.masked_fill_(mask, -1.0) is y
    assert repr(y) == "tensor([[-1.,  4.,  6.],\n        [ 8., -1., -1.]], grad_fn=<MaskedFillBackward0>)"
    y.sum().backward()
    assert repr(x.grad) == "tensor([[0., 2., 2.],\n        [2., 0., 0.]])"
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place"):
        x.masked_fill_(mask, 0.0)


def test_sort_and_topk_send_each_gradient_to_its_source_also_at_ties():
    check_grad(lambda x: x.sort(1).values, RNG.normal(size=(2, 4)))
    check_grad(lambda x: x.sort(0, descending=True)[0], RNG.normal(size=(3, 2)))
    check_grad(lambda x: x.topk(2).values, RNG.normal(size=(2, 4)))
    check_grad(lambda x: torch.topk(x, 2, dim=0, largest=False)[0], RNG.normal(size=(3, 2)))
    x = torch.tensor([3.0, 1.0, 3.0, 2.0], requires_grad=True)
    values, indices = x.sort(descending=True)
    assert repr(indices) == "tensor([0, 2, 3, 1])"  # ties keep their order
    (values * torch.tensor([1.0, 10.0, 100.0, 1000.0])).sum().backward()
    assert repr(x.grad) == "tensor([   1., 1000.,   10.,  100.])"
    assert repr(x.topk(2)) == ("torch.return_types.topk(\nvalues=tensor([3., 3.], grad_fn=<TopkBackward0>),\n"
                               "indices=tensor([0, 2]))")
    assert repr(torch.sort(torch.tensor([2.0, 1.0]))) == (
        "torch.return_types.sort(\nvalues=tensor([1., 2.]),\nindices=tensor([1, 0]))")
    with pytest.raises(RuntimeError, match="^selected index k out of range$"):
        x.topk(5)


def test_tril_triu_repeat_flip():
    check_grad(lambda x: x.tril(), RNG.normal(size=(3, 4)))
    check_grad(lambda x: torch.triu(x, -1), RNG.normal(size=(2, 3, 3)))
    check_grad(lambda x: x.repeat(2, 3), RNG.normal(size=(2, 2)))
    check_grad(lambda x: x.repeat(2, 1, 2), RNG.normal(size=(3,)))
    check_grad(lambda x: x.flip(0), RNG.normal(size=(3, 2)))
    check_grad(lambda x: torch.flip(x, [0, 1]), RNG.normal(size=(3, 2)))
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    assert repr(x.tril()) == "tensor([[1., 0.],\n        [3., 4.]], grad_fn=<TrilBackward0>)"
    assert name(x.triu()) == "TriuBackward0"
    assert repr(x[0].repeat(2)) == "tensor([1., 2., 1., 2.], grad_fn=<RepeatBackward0>)"
    assert repr(x.flip(1)) == "tensor([[2., 1.],\n        [4., 3.]], grad_fn=<FlipBackward0>)"
    with pytest.raises(RuntimeError, match="^tril: input tensor must have at least 2 dimensions$"):
        x[0].tril()
    with pytest.raises(RuntimeError, match="^Number of dimensions of repeat dims can not be smaller"):
        x.repeat(2)


def test_numpy_code_on_tensors_keeps_numpys_repeat_and_refuses_in_place_sort():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with numpy_methods():
        repeated = x.repeat(2)
        assert repr(repeated.detach()) == "tensor([1., 1., 2., 2.])"
        with pytest.raises(TypeError, match="ndarray.sort\\(\\) sorts in place"):
            x.sort()
    (repeated * torch.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    assert repr(x.grad) == "tensor([3., 7.])"


def test_new_tensor_and_new_factories_take_this_tensors_dtype():
    x = torch.ones(2, dtype=torch.float64, requires_grad=True)
    made = x.new_tensor([1, 2])
    assert repr(made) == "tensor([1., 2.], dtype=torch.float64)"
    assert made.grad_fn is None and not made.requires_grad
    assert repr(x.new_tensor([1, 2], dtype=torch.int32)) == "tensor([1, 2], dtype=torch.int32)"
    assert repr(x.new_zeros(2, 1)) == "tensor([[0.],\n        [0.]], dtype=torch.float64)"
    assert repr(x.new_ones((1,), requires_grad=True)) == "tensor([1.], dtype=torch.float64, requires_grad=True)"
    assert repr(x.new_full((2,), 3)) == "tensor([3., 3.], dtype=torch.float64)"
    with pytest.warns(UserWarning, match="rather than tensor.new_tensor\\(sourceTensor\\)"):
        copied = x.new_tensor(x)
    assert not copied.requires_grad


# ----------------------------------------------------------- einsum, linalg


@pytest.mark.parametrize("equation, shapes", [
    ("i,i->", [(3,), (3,)]), ("ij,jk->ik", [(2, 3), (3, 4)]), ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]),
    ("ii->i", [(3, 3)]), ("ij->ji", [(2, 3)]), ("i,j->ij", [(2,), (3,)]),
])
def test_einsum_gradients_match_finite_differences(equation, shapes):
    check_grad(lambda *ops: torch.einsum(equation, *ops), *[RNG.normal(size=s) for s in shapes])
    check_grad(lambda *ops: torch.einsum(equation, list(ops)), *[RNG.normal(size=s) for s in shapes])


def test_einsum_value_and_name():
    a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert repr(torch.einsum("i,i->", a, torch.tensor([4.0, 5.0, 6.0]))) == "tensor(32., grad_fn=<ViewBackward0>)"


@pytest.mark.parametrize("norm", [
    lambda x: torch.linalg.norm(x), lambda x: torch.linalg.norm(x, dim=1), lambda x: torch.linalg.norm(x, "fro"),
    lambda x: torch.linalg.norm(x, "nuc"), lambda x: torch.linalg.norm(x, 2), lambda x: torch.linalg.norm(x, -2),
    lambda x: torch.linalg.norm(x, 1), lambda x: torch.linalg.norm(x, float("inf")),
    lambda x: torch.linalg.vector_norm(x), lambda x: torch.linalg.vector_norm(x, 1, dim=0),
    lambda x: torch.linalg.vector_norm(x, 3, dim=(0, 1), keepdim=True), lambda x: torch.linalg.matrix_norm(x),
    lambda x: torch.linalg.vector_norm(x, float("-inf"), dim=1),
])
def test_norms_match_finite_differences(norm):
    check_grad(norm, RNG.normal(size=(3, 4)))


def test_norm_values_names_and_errors():
    A = torch.tensor([[3.0, 0.0], [0.0, -4.0]], requires_grad=True)
    assert repr(torch.linalg.norm(A)) == "tensor(5., grad_fn=<LinalgVectorNormBackward0>)"
    assert repr(torch.linalg.norm(A[0])) == "tensor(3., grad_fn=<LinalgVectorNormBackward0>)"
    assert repr(torch.linalg.vector_norm(A, 1)) == "tensor(7., grad_fn=<LinalgVectorNormBackward0>)"
    assert repr(torch.linalg.norm(A, "nuc")) == "tensor(7., grad_fn=<SumBackward1>)"
    assert repr(torch.linalg.norm(A, 2)) == "tensor(4., grad_fn=<AmaxBackward0>)"
    assert repr(torch.linalg.norm(A, -2)) == "tensor(3., grad_fn=<AminBackward0>)"
    torch.linalg.norm(torch.zeros(3, requires_grad=True)).backward()  # no nan at zero
    with pytest.raises(RuntimeError, match="^linalg.norm: If dim is not specified but ord is, the input must be 1D "
                                           "or 2D. Got 3D.$"):
        torch.linalg.norm(torch.ones(2, 2, 2), 2)
    with pytest.raises(RuntimeError, match="^linalg.vector_norm: Expected a floating point or complex tensor as "
                                           "input. Got Long$"):
        torch.linalg.vector_norm(torch.tensor([1, 2]))
