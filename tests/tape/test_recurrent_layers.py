"""torch.nn's recurrent layers (RNN, LSTM, GRU and their cells) beyond what the PyTorch transcripts pin.

transcripts/recurrent_*.py compare names, shapes, errors and numbers with
PyTorch's; here finite differences are the independent reference for a few
parameters' gradients, and the cases a user could get a wrong number from
without an error: dropout between layers, a parameter replaced after
construction, writes into the input or state after the forward pass, and a
pickled layer.
"""

import pickle
import pickletools

import numpy as np
import pytest

import astgrad.torch as torch
from _numeric import gradient

nn = torch.nn
RNG = np.random.default_rng(34)


def _loss_of(module, x, hx=None):
    """A scalar that weighs every output and final state element differently (fixed weights per shape)."""
    result = module(x) if hx is None else module(x, hx)
    parts = []
    for r in result if isinstance(result, tuple) else (result,):
        parts.extend(r if isinstance(r, tuple) else (r,))
    weights = np.random.default_rng(0)
    return sum((p * torch.tensor(weights.normal(size=tuple(p.shape)))).sum() for p in parts)


def _set(parameter, value):
    with torch.no_grad():
        parameter.copy_(torch.tensor(value))


@pytest.mark.parametrize("make, shape, name", [
    (lambda: nn.LSTM(2, 3, num_layers=2), (4, 2, 2), "weight_hh_l0"),
    (lambda: nn.LSTM(2, 3, proj_size=2, batch_first=True), (2, 3, 2), "weight_hr_l0"),
    (lambda: nn.GRU(2, 3, bidirectional=True), (3, 2), "bias_hh_l0_reverse"),  # r times (W_hn h + b_hn)
    (lambda: nn.GRU(3, 2), (4, 1, 3), "weight_hh_l0"),
    (lambda: nn.RNN(2, 3, num_layers=2, bidirectional=True), (3, 2, 2), "weight_ih_l1_reverse"),
    (lambda: nn.LSTMCell(2, 3), (2, 2), "bias_ih"),
    (lambda: nn.GRUCell(2, 3), (2,), "weight_hh"),
    (lambda: nn.RNNCell(2, 3, nonlinearity="relu"), (4, 2), "weight_ih"),
])
def test_parameter_gradients_match_finite_differences(make, shape, name):
    module = make().double()
    x = torch.tensor(RNG.normal(size=shape), requires_grad=True)
    _loss_of(module, x).backward()
    parameter = dict(module.named_parameters())[name]
    start = parameter.detach().numpy().copy()

    def loss_at(value):
        _set(parameter, value)
        with torch.no_grad():
            return _loss_of(module, x.detach()).item()

    expected = gradient(loss_at, start)
    _set(parameter, start)
    np.testing.assert_allclose(parameter.grad.numpy(), expected, rtol=1e-6, atol=1e-8)
    expected_x = gradient(lambda value: _loss_of(module, torch.tensor(value)).item(), x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected_x, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_initial_state_gradients_match_finite_differences(kind):
    module = getattr(nn, kind)(2, 3, num_layers=2, batch_first=True).double()
    x = torch.tensor(RNG.normal(size=(2, 4, 2)))
    states = [RNG.normal(size=(2, 2, 3)) for _ in range(2 if kind == "LSTM" else 1)]

    def state(values):
        return tuple(values) if kind == "LSTM" else values[0]

    given = [torch.tensor(s, requires_grad=True) for s in states]
    _loss_of(module, x, state(given)).backward()
    for i, s in enumerate(states):
        def loss_at(value, i=i):
            trial = [torch.tensor(v) for v in states]
            trial[i] = torch.tensor(value)
            return _loss_of(module, x, state(trial)).item()
        np.testing.assert_allclose(given[i].grad.numpy(), gradient(loss_at, s), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_falls_between_layers_while_training_and_nowhere_else(kind):
    """Two layers with dropout = layer 0, F.dropout with the same generator state, layer 1 (never on the output)."""
    torch.manual_seed(5)
    both = getattr(nn, kind)(3, 4, num_layers=2, dropout=0.5).double()
    first, second = getattr(nn, kind)(3, 4).double(), getattr(nn, kind)(4, 4).double()
    for layer, module in enumerate((first, second)):
        for name, p in module.named_parameters():
            _set(p, getattr(both, name.replace("l0", f"l{layer}")).detach().numpy())
    x = torch.tensor(RNG.normal(size=(6, 2, 3)))
    torch.manual_seed(11)
    output = both(x)[0]
    torch.manual_seed(11)
    by_hand = second(nn.functional.dropout(first(x)[0], 0.5, training=True))[0]
    np.testing.assert_allclose(output.detach().numpy(), by_hand.detach().numpy(), rtol=1e-12)
    without = second(first(x)[0])[0].detach().numpy()
    assert not np.allclose(output.detach().numpy(), without)
    both.eval()
    np.testing.assert_allclose(both(x)[0].detach().numpy(), without, rtol=1e-12)


def test_a_parameter_replaced_after_construction_is_the_one_used():
    """No copy of the weights is kept at construction: assigning a new Parameter changes the result."""
    lstm = nn.LSTM(2, 3).double()
    x = torch.tensor(RNG.normal(size=(3, 1, 2)))
    lstm.weight_ih_l0 = nn.Parameter(torch.zeros(12, 2, dtype=torch.float64))
    output = lstm(x)[0]
    output.sum().backward()
    reference = nn.LSTM(2, 3).double()
    for name, p in lstm.named_parameters():
        _set(getattr(reference, name), p.detach().numpy())
    np.testing.assert_allclose(output.detach().numpy(), reference(x)[0].detach().numpy())
    assert lstm.weight_ih_l0.grad is not None and lstm.all_weights[0][0] is lstm.weight_ih_l0


@pytest.mark.parametrize("written", ["input", "state"])
def test_writing_into_the_input_or_state_after_the_forward_pass_is_refused(written):
    rnn = nn.RNN(2, 3)
    x, h = torch.randn(4, 2), torch.randn(1, 3)
    output, _ = rnn(x, h)
    (x if written == "input" else h).add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        output.sum().backward()


@pytest.mark.parametrize("make", [lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True), lambda: nn.GRU(3, 4),
                                  lambda: nn.RNN(3, 4, nonlinearity="relu"), lambda: nn.LSTMCell(3, 4),
                                  lambda: nn.GRUCell(3, 4), lambda: nn.RNNCell(3, 4, bias=False)])
def test_a_pickled_layer_is_astgrads_and_computes_the_same(make):
    """The classes print as torch.nn.modules.rnn's: pickled by that name, they would load as PyTorch's, or fail."""
    module = make()
    payload = pickle.dumps(module, protocol=2)  # protocol 2 names each class in a GLOBAL opcode
    imported = {arg.split(" ")[0] for op, arg, _ in pickletools.genops(payload) if op.name == "GLOBAL"}
    assert not any(m.split(".")[0] == "torch" for m in imported), imported
    loaded = pickle.loads(payload)
    assert type(loaded) is type(module) and repr(loaded) == repr(module)
    x = torch.randn(5, 2, 3) if isinstance(module, nn.RNNBase) else torch.randn(2, 3)
    first, again = module(x), loaded(x)
    first = first[0] if isinstance(first, tuple) else first
    again = again[0] if isinstance(again, tuple) else again
    np.testing.assert_array_equal(first.detach().numpy(), again.detach().numpy())


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_forward_mode_tangents_agree_with_reverse_mode_gradients(kind):
    """The layers are compositions of taped operations, so forward mode reaches them too: <w, J u> both ways."""
    import astgrad.torch.autograd.forward_ad as fwAD

    module = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=True).double()
    x, u = RNG.normal(size=(4, 2, 2)), RNG.normal(size=(4, 2, 2))
    with fwAD.dual_level():
        output = module(fwAD.make_dual(torch.tensor(x), torch.tensor(u)))[0]
        tangent = fwAD.unpack_dual(output).tangent.numpy()
    w = RNG.normal(size=tangent.shape)
    xt = torch.tensor(x, requires_grad=True)
    (module(xt)[0] * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(np.sum(tangent * w), np.sum(xt.grad.numpy() * u), rtol=1e-10)
