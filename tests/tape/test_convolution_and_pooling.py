"""Convolution and pooling on the tape: gradients against central differences, ties, writes, higher orders, modules.

Values, node names and messages are pinned against PyTorch in
transcripts/convolution.py; here every gradient (input, weight, bias; first
and second order; forward mode) is checked against finite differences over
settings PyTorch users combine (stride, padding ints and strings, dilation,
groups, unbatched input, ceil mode).
"""

import pickle

import numpy as np
import pytest

import astgrad.torch as torch
from _numeric import directional, gradient
from _taped import check_grad

F = torch.nn.functional
RNG = np.random.default_rng(11)


def distinct(*shape):
    """Values well apart, so no window holds a tie or a near-tie (a kink finite differences cannot cross)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n) * 0.37 + RNG.uniform(0, 0.1, n) - n * 0.15).reshape(shape)


# ------------------------------------------------------------- convolution


CONV2D = [
    dict(input=(2, 3, 6, 5), weight=(4, 3, 3, 2)),
    dict(input=(1, 4, 7, 6), weight=(6, 2, 3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
    dict(input=(2, 2, 5, 5), weight=(4, 2, 2, 3), padding="same", dilation=2),  # odd total: one more after
    dict(input=(1, 2, 8, 7), weight=(3, 2, 3, 3), stride=3, padding=1),  # the last rows no window reads
    dict(input=(3, 5, 4), weight=(6, 1, 3, 2), padding=1, groups=3),  # unbatched, depthwise-like groups
    dict(input=(1, 2, 4, 4), weight=(2, 2, 2, 2), padding="valid"),
]


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("case", CONV2D, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_conv2d_gradients_match_finite_differences(case, with_bias):
    settings = {k: v for k, v in case.items() if k not in ("input", "weight")}
    arrays = [RNG.normal(size=case["input"]), RNG.normal(size=case["weight"])]
    if with_bias:
        arrays.append(RNG.normal(size=case["weight"][0]))
    grads = check_grad(lambda x, w, *b: F.conv2d(x, w, *b, **settings), *arrays)
    assert [g.shape for g in grads] == [a.shape for a in arrays]


@pytest.mark.parametrize("settings", [{}, dict(stride=2, padding=2), dict(padding="same", dilation=3),
                                      dict(groups=2, dilation=2, padding=1)], ids=str)
@pytest.mark.parametrize("batched", [True, False])
def test_conv1d_gradients_match_finite_differences(settings, batched):
    shape = (2, 4, 9) if batched else (4, 9)
    check_grad(lambda x, w, b: F.conv1d(x, w, b, **settings), RNG.normal(size=shape),
               RNG.normal(size=(2, 4 // settings.get("groups", 1), 3)), RNG.normal(size=2))


def test_a_view_with_other_strides_convolves_as_its_copy():
    x = RNG.normal(size=(2, 3, 5, 6))
    w = torch.tensor(RNG.normal(size=(4, 3, 2, 2)))
    view = torch.tensor(x).transpose(2, 3)[:, :, ::2]
    copy = torch.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)[:, :, ::2]))
    np.testing.assert_allclose(F.conv2d(view, w, padding=1).numpy(), F.conv2d(copy, w, padding=1).numpy())


def test_float32_stays_float32():
    x = torch.tensor(RNG.normal(size=(1, 2, 5, 5)), dtype=torch.float32, requires_grad=True)
    layer = torch.nn.Conv2d(2, 3, 3)
    out = F.avg_pool2d(F.max_pool2d(layer(x), 2, stride=1), 2)
    out.sum().backward()
    assert out.dtype == x.grad.dtype == layer.weight.grad.dtype == layer.bias.grad.dtype == torch.float32


# ----------------------------------------------------------------- pooling


@pytest.mark.parametrize("settings", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2)),
                                      dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                      dict(kernel_size=(3, 2), padding=(1, 1), dilation=(2, 1), stride=1)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 6, 7), (3, 5, 5)], ids=["batched", "unbatched"])
def test_max_pool2d_gradient_matches_finite_differences(settings, shape):
    check_grad(lambda x: F.max_pool2d(x, **settings), distinct(*shape))


@pytest.mark.parametrize("settings", [dict(kernel_size=2), dict(kernel_size=(2, 3), stride=(1, 2), padding=1),
                                      dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                      dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                           count_include_pad=False),
                                      dict(kernel_size=2, divisor_override=3)], ids=str)
@pytest.mark.parametrize("shape", [(2, 3, 6, 7), (3, 5, 5)], ids=["batched", "unbatched"])
def test_avg_pool2d_gradient_matches_finite_differences(settings, shape):
    check_grad(lambda x: F.avg_pool2d(x, **settings), RNG.normal(size=shape))


@pytest.mark.parametrize("shape", [(2, 3, 9), (3, 8)])
def test_one_axis_pooling_gradients_match_finite_differences(shape):
    check_grad(lambda x: F.max_pool1d(x, 3, stride=2, padding=1, ceil_mode=True), distinct(*shape))
    check_grad(lambda x: F.avg_pool1d(x, 2, padding=1, count_include_pad=False), RNG.normal(size=shape))


@pytest.mark.parametrize("size", [(2, 3), (1, 1), (None, 2), 2])
def test_adaptive_avg_pool2d_gradient_matches_finite_differences(size):
    check_grad(lambda x: F.adaptive_avg_pool2d(x, size), RNG.normal(size=(2, 3, 4, 6)))


def test_adaptive_avg_pool2d_refuses_windows_of_different_sizes():
    with pytest.raises(NotImplementedError, match=r"adaptive_avg_pool2d to \(3, 3\) from an input of \(5, 5\)"):
        F.adaptive_avg_pool2d(torch.ones(1, 1, 5, 5), 3)


def test_a_tie_sends_the_whole_gradient_to_the_first_maximum_of_each_window():
    """PyTorch's kernel keeps the first maximum (row by row): equal values never share a window's gradient."""
    x = torch.ones(1, 1, 4, 4, requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    expected = np.zeros((4, 4))
    expected[::2, ::2] = 1
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)
    x.grad = None
    F.max_pool2d(x, 2, stride=1).sum().backward()  # overlapping windows: each gives its top-left corner one
    expected = np.zeros((4, 4))
    expected[:3, :3] = 1
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], expected)


def test_a_window_of_minus_infinities_and_padding_picks_its_first_element_inside_the_input():
    x = torch.full((1, 1, 3, 3), -np.inf, requires_grad=True)
    out, indices = F.max_pool2d(x, 2, padding=1, return_indices=True)
    np.testing.assert_array_equal(indices.numpy()[0, 0], [[0, 1], [3, 4]])
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy()[0, 0], [[1, 1, 0], [1, 1, 0], [0, 0, 0]])


# ----------------------------------------------- writes between forward and backward


def test_an_input_written_after_the_convolution_stops_backward():
    x = torch.tensor(RNG.normal(size=(1, 2, 4, 4)), requires_grad=True)
    w = torch.tensor(RNG.normal(size=(3, 2, 2, 2)), requires_grad=True)
    h = x * 1
    out = F.conv2d(h, w)
    h.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_a_weight_stepped_before_backward_stops_it():
    """The input's gradient reads the weight (its own gradient does not: that one needs no check)."""
    layer = torch.nn.Conv2d(2, 3, 2)
    out = layer(torch.ones(1, 2, 4, 4, requires_grad=True))
    with torch.no_grad():
        layer.weight.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_a_pooled_input_written_before_backward_stops_it():
    """The gradient goes where the maximum was: a write since would move it, so it is an error."""
    x = torch.tensor(distinct(1, 1, 4, 4), requires_grad=True)
    h = x * 1
    out = F.max_pool2d(h, 2)
    h.neg_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# ----------------------------------------------------- higher orders, forward mode


def _second_order(f, arrays, seed):
    """The tape's gradient of ``<grad f, v>`` and central differences of the tape's first gradient."""
    rng = np.random.default_rng(seed)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    firsts = torch.autograd.grad(f(*leaves), leaves, create_graph=True)
    directions = [rng.normal(size=a.shape) for a in arrays]
    sum(((g * torch.tensor(v)).sum() for g, v in zip(firsts, directions))).backward()

    def inner(k, moved):
        point = [torch.tensor(moved if j == k else a, requires_grad=True) for j, a in enumerate(arrays)]
        grads = torch.autograd.grad(f(*point), point)
        return sum(float(np.sum(g.numpy() * v)) for g, v in zip(grads, directions))

    for k, (leaf, a) in enumerate(zip(leaves, arrays)):
        np.testing.assert_allclose(leaf.grad.numpy(), gradient(lambda m, k=k: inner(k, m), a), rtol=1e-5, atol=1e-6)


def test_second_derivatives_of_a_convolution_match_finite_differences():
    weight = torch.tensor(RNG.uniform(0.5, 1.5, (2, 5, 3)))

    def f(x, w, b):
        return (F.conv2d(x, w, b, stride=(1, 2), padding=1, groups=2) ** 3 * weight).sum()

    _second_order(f, [RNG.normal(size=(1, 4, 5, 5)), RNG.normal(size=(2, 2, 3, 2)), RNG.normal(size=2)], seed=1)


def test_second_derivatives_of_the_poolings_match_finite_differences():
    def f(x):
        return (F.max_pool2d(x, 2, stride=1) ** 3).sum() + (F.avg_pool2d(x, 2, padding=1) ** 3).sum()

    _second_order(f, [distinct(1, 2, 4, 5)], seed=2)


def test_forward_mode_tangents_match_finite_differences():
    fwAD = torch.autograd.forward_ad
    x, w, b = RNG.normal(size=(2, 2, 5, 6)), RNG.normal(size=(4, 1, 2, 3)), RNG.normal(size=4)
    u, v, t = RNG.normal(size=x.shape), RNG.normal(size=w.shape), RNG.normal(size=b.shape)

    def network(x, w, b):
        y = F.conv2d(x, w, b, padding=(1, 0), dilation=(1, 2), groups=2)
        return F.avg_pool2d(F.max_pool2d(y, 2, stride=1, ceil_mode=True), 2, ceil_mode=True)

    weight = RNG.normal(size=network(torch.tensor(x), torch.tensor(w), torch.tensor(b)).shape)
    with fwAD.dual_level():
        out = network(*(fwAD.make_dual(torch.tensor(a), torch.tensor(d)) for a, d in ((x, u), (w, v), (b, t))))
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    stacked = np.concatenate([x.ravel(), w.ravel(), b.ravel()])
    direction = np.concatenate([u.ravel(), v.ravel(), t.ravel()])

    def value(flat):
        parts = np.split(flat, [x.size, x.size + w.size])
        arrays = [torch.tensor(p.reshape(a.shape)) for p, a in zip(parts, (x, w, b))]
        return float(np.sum(network(*arrays).numpy() * weight))

    np.testing.assert_allclose(np.sum(tangent * weight), directional(value, stacked, direction), rtol=1e-6)


# ----------------------------------------------------------------- modules


@pytest.mark.parametrize("layer, fan_in", [(lambda: torch.nn.Conv2d(3, 8, 3), 27),
                                           (lambda: torch.nn.Conv2d(4, 6, (3, 2), groups=2), 12),
                                           (lambda: torch.nn.Conv1d(5, 40, 4), 20)])
def test_initial_values_are_uniform_within_one_over_root_fan_in(layer, fan_in):
    torch.manual_seed(5)
    module = layer()
    bound = 1 / np.sqrt(fan_in)
    for p in (module.weight, module.bias):
        values = p.detach().numpy()
        assert np.all(np.abs(values) <= bound)
    values = module.weight.detach().numpy()
    assert values.max() > 0.8 * bound and values.min() < -0.8 * bound  # spread over the range, not a corner of it


def test_a_padding_string_pytorch_does_not_know_is_refused_as_pytorch_refuses_it():
    """PyTorch prints the allowed strings as a set, in an order that varies between processes."""
    with pytest.raises(ValueError, match=r"^Invalid padding string 'full', should be one of "
                                         r"\{'(same', 'valid|valid', 'same)'\}$"):
        torch.nn.Conv2d(3, 4, 3, padding="full")


def test_padding_modes_other_than_zeros_are_refused():
    with pytest.raises(NotImplementedError, match="padding_mode='reflect' is not supported"):
        torch.nn.Conv2d(3, 4, 3, padding_mode="reflect")


class Wider(torch.nn.Conv2d):
    """A user's subclass: pickled by its own module."""


def test_a_network_of_convolutions_and_poolings_pickles_and_computes_the_same():
    torch.manual_seed(2)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3, padding=1), torch.nn.MaxPool2d(2), Wider(2, 2, 1),
                              torch.nn.AvgPool2d(2), torch.nn.Flatten())
    payload = pickle.dumps(net)
    assert b"torch.nn.modules.conv" not in payload and b"torch.nn.modules.pooling" not in payload  # printed names
    loaded = pickle.loads(payload)
    x = torch.tensor(RNG.normal(size=(2, 1, 4, 4)), dtype=torch.float32)
    np.testing.assert_array_equal(loaded(x).detach().numpy(), net(x).detach().numpy())
    assert repr(loaded) == repr(net) and type(loaded[2]) is Wider
