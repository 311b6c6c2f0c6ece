"""Recurrent layers on fixed weights: outputs, final states and the gradients of every parameter, input and state."""

import numpy as np

import torch

nn = torch.nn


def shown(tensor):
    """Six places in float64, four in float32 (where the order of the sums moves the seventh digit)."""
    places = 6 if tensor.dtype == torch.float64 else 4
    return (np.round(tensor.detach().numpy().astype(np.float64), places) + 0.0).tolist()  # + 0.0: no -0.0


def check(module, shape, states=(), dtype=torch.float64):
    """Weights, input and initial states drawn from one seed; the loss weighs every output element differently."""
    module = module.to(dtype)
    rng = np.random.default_rng(sum(shape) + len(states))
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.8, 0.8, tuple(p.shape))))
    x = torch.tensor(rng.normal(size=shape), dtype=dtype, requires_grad=True)
    given = [torch.tensor(rng.normal(size=s), dtype=dtype, requires_grad=True) for s in states]
    hx = None if not given else tuple(given) if len(given) == 2 else given[0]
    result = module(x) if hx is None else module(x, hx)
    results = []
    for r in result if isinstance(result, tuple) else (result,):
        results.extend(r if isinstance(r, tuple) else (r,))
    loss = sum((r * torch.tensor(rng.normal(size=tuple(r.shape)), dtype=dtype)).sum() for r in results)
    loss.backward()
    print(module, tuple(shape), [tuple(s) for s in states])
    for r in results:
        print(" ", tuple(r.shape), r.grad_fn.name(), shown(r))
    print("  d input", shown(x.grad), *["d state " + str(shown(g.grad)) for g in given])
    for name, p in module.named_parameters():
        print("  d", name, shown(p.grad))


check(nn.RNN(2, 3), (4, 2, 2))
check(nn.RNN(2, 2, num_layers=2, nonlinearity="relu"), (3, 2), [(2, 2)])
check(nn.RNN(2, 2, bias=False, batch_first=True, bidirectional=True), (2, 3, 2), [(2, 2, 2)])
check(nn.GRU(2, 3), (4, 2, 2), [(1, 2, 3)])
check(nn.GRU(2, 2, num_layers=2, bidirectional=True), (3, 2))
check(nn.GRU(3, 2, batch_first=True, bias=False), (2, 3, 3))
check(nn.LSTM(2, 3), (4, 2, 2), [(1, 2, 3), (1, 2, 3)])
check(nn.LSTM(2, 2, num_layers=2, batch_first=True), (2, 3, 2))
check(nn.LSTM(2, 2, bidirectional=True, bias=False), (3, 2), [(2, 2), (2, 2)])
check(nn.LSTM(2, 3, proj_size=2, num_layers=2), (3, 1, 2), [(2, 1, 2), (2, 1, 3)])
check(nn.RNNCell(2, 3), (2, 2), [(2, 3)])
check(nn.RNNCell(2, 2, nonlinearity="relu", bias=False), (2,))
check(nn.GRUCell(2, 3), (2, 2), [(2, 3)])
check(nn.GRUCell(3, 2), (3,))
check(nn.LSTMCell(2, 3), (2, 2), [(2, 3), (2, 3)])
check(nn.LSTMCell(3, 2, bias=False), (3,), [(2,), (2,)])

# Dropout between layers: p=1 zeroes the second layer's input while training (weight_ih_l1 gets a zero gradient,
# the first layer a gradient through h_n alone); after eval() it drops nothing
check(nn.GRU(2, 2, num_layers=2, dropout=1.0), (3, 1, 2))
check(nn.LSTM(2, 2, num_layers=2, dropout=1.0).eval(), (3, 1, 2))

# float32, as the tutorials run
check(nn.LSTM(3, 4), (5, 1, 3), dtype=torch.float32)
