"""RNN, LSTM, GRU and their cells: printed modules, parameter names and shapes, initial ranges, shapes, errors."""

import math
import warnings

import torch

nn = torch.nn
print(nn.RNN(3, 4), nn.RNN(3, 4, 2, "relu"), nn.RNN(3, 4, nonlinearity="relu", bias=False, batch_first=True))
print(nn.LSTM(10, 20, num_layers=2, batch_first=True), nn.LSTM(3, 4, proj_size=2, bidirectional=True))
print(nn.GRU(3, 4, num_layers=2, dropout=0.5), nn.GRU(3, 4, 1, False, True, 0.0, True))
print(nn.RNNCell(3, 4), nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), nn.LSTMCell(3, 4), nn.GRUCell(3, 4, False))
print(nn.Sequential(nn.LSTM(3, 4), nn.Linear(4, 2)))
rnn = nn.RNN(3, 4, 2, "relu")
print(rnn.nonlinearity, rnn.mode, nn.RNNCell(3, 4).nonlinearity, type(rnn).__module__, type(rnn).__mro__[1].__name__)

for module in [nn.LSTM(3, 4, num_layers=2, bidirectional=True), nn.LSTM(3, 4, proj_size=2), nn.GRU(3, 5, bias=False),
               nn.RNN(2, 3, num_layers=2), nn.LSTMCell(3, 4), nn.GRUCell(2, 3), nn.RNNCell(4, 6, bias=False)]:
    print(type(module).__name__, [(name, tuple(p.shape)) for name, p in module.named_parameters()])
    bound = 1 / math.sqrt(module.hidden_size)
    values = torch.cat([p.detach().reshape(-1) for p in module.parameters()])
    print(bool(values.abs().max() <= bound), bool(values.max() > 0.5 * bound), bool(values.min() < -0.5 * bound),
          all(p.requires_grad and p.dtype == torch.float32 for p in module.parameters()))
lstm = nn.LSTM(3, 4, num_layers=2)
print(len(lstm.all_weights), [tuple(w.shape) for w in lstm.all_weights[1]], lstm.flatten_parameters())
print(nn.GRU(3, 4).double().weight_hh_l0.dtype, nn.GRUCell(3, 4, dtype=torch.float64).bias_ih.dtype,
      nn.LSTMCell(3, 4, bias=False).bias_hh)

torch.manual_seed(0)
for module, shape in [(nn.RNN(3, 4), (5, 2, 3)), (nn.RNN(3, 4, batch_first=True), (2, 5, 3)), (nn.RNN(3, 4), (5, 3)),
                      (nn.GRU(3, 4, num_layers=2), (5, 2, 3)), (nn.GRU(3, 4, bidirectional=True), (5, 2, 3)),
                      (nn.GRU(3, 4, batch_first=True, bidirectional=True), (2, 5, 3)), (nn.LSTM(3, 4), (5, 2, 3)),
                      (nn.LSTM(3, 4, batch_first=True), (2, 5, 3)), (nn.LSTM(3, 4, bidirectional=True), (5, 2, 3)),
                      (nn.LSTM(3, 4, num_layers=2, batch_first=True), (5, 3)), (nn.LSTM(3, 4).double(), (5, 2, 3)),
                      (nn.LSTM(3, 4, num_layers=3, bidirectional=True, proj_size=2).double(), (5, 2, 3)),
                      (nn.RNN(3, 4), (5, 0, 3))]:
    output, hidden = module(torch.randn(*shape, dtype=module.weight_ih_l0.dtype))
    states = hidden if isinstance(hidden, tuple) else (hidden,)
    print(module, tuple(output.shape), [tuple(h.shape) for h in states], output.grad_fn.name(),
          [h.grad_fn.name() for h in states])
for cell, shape in [(nn.RNNCell(3, 4), (2, 3)), (nn.RNNCell(3, 4, nonlinearity="relu"), (2, 3)),
                    (nn.RNNCell(3, 4), (3,)), (nn.GRUCell(3, 4), (2, 3)), (nn.GRUCell(3, 4), (3,)),
                    (nn.LSTMCell(3, 4), (2, 3)), (nn.LSTMCell(3, 4), (3,))]:
    result = cell(torch.randn(*shape))
    states = result if isinstance(result, tuple) else (result,)
    print(cell, [tuple(h.shape) for h in states], [h.grad_fn.name() for h in states])
with torch.no_grad():
    print(nn.LSTM(3, 4)(torch.randn(5, 2, 3))[0].grad_fn)

warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    print(nn.LSTM(3, 4, dropout=0.5), nn.LSTM(3, 4, num_layers=2, dropout=0.5))
print([str(w.message) for w in caught], [w.category.__name__ for w in caught])

for call in ["nn.RNN(3, 4, nonlinearity='gelu')", "nn.GRU(3, 4, proj_size=2)", "nn.RNN(3, 4, proj_size=2)",
             "nn.LSTM(3, 4, proj_size=4)", "nn.LSTM(3, 4, proj_size=-1)", "nn.LSTM(3, 4, dropout=1.5)",
             "nn.LSTM(3, 4, dropout=True)", "nn.LSTM(3, 4, num_layers=0)", "nn.LSTM(3.0, 4)", "nn.LSTM(3, 0)",
             "nn.LSTM(3, 4, bias=1)", "nn.LSTM(3, 4, batch_first=None)", "nn.GRU(3, 4.0)",
             "nn.RNN(3, 4)(torch.randn(5, 2, 5))", "nn.RNN(3, 4)(torch.randn(5, 2, 3), torch.randn(1, 3, 4))",
             "nn.RNN(3, 4)(torch.randn(5, 2, 3), torch.randn(2, 4))",
             "nn.RNN(3, 4)(torch.randn(5, 3), torch.randn(1, 1, 4))", "nn.RNN(3, 4)(torch.randn(2, 5, 2, 3))",
             "nn.GRU(3, 4)(torch.randn(3))", "nn.LSTM(3, 4)(torch.randn(3))", "nn.RNN(3, 4)(torch.randn(0, 2, 3))",
             "nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(1, 2, 4), torch.randn(1, 2, 5)))",
             "nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(1, 3, 4), torch.randn(1, 2, 4)))",
             "nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(1, 2, 4), torch.randn(2, 4)))",
             "nn.LSTM(3, 4)(torch.randn(5, 3), (torch.randn(1, 1, 4), torch.randn(1, 1, 4)))",
             "nn.LSTM(3, 4)(torch.randn(5, 2, 3), torch.randn(1, 2, 4))",
             "nn.LSTM(3, 4)(torch.randn(5, 2, 3), (torch.randn(1, 2, 4),))",
             "nn.LSTM(3, 4)(torch.randn(5, 2, 3, dtype=torch.float64))",
             "nn.RNN(3, 4)(torch.randn(5, 2, 3, dtype=torch.float64))",
             "nn.GRU(3, 4)(torch.randn(5, 2, 3), torch.randn(1, 2, 4, dtype=torch.float64))",
             "nn.RNNCell(3, 4)(torch.randn(2, 5))", "nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(3, 4))",
             "nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(2, 5))", "nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(4))",
             "nn.RNNCell(3, 4)(torch.randn(2, 3, dtype=torch.float64))",
             "nn.RNNCell(3, 4)(torch.randn(2, 3), torch.randn(2, 4, dtype=torch.float64))",
             "nn.RNNCell(3, 4, nonlinearity='sigmoid')(torch.randn(2, 3))", "nn.RNNCell(3, 4)(torch.randn(2, 2, 3))",
             "nn.RNNCell(3, 4)(torch.randn(3), torch.randn(1, 1, 4))", "nn.GRUCell(3, 4)(torch.randn(2, 3, 3))",
             "nn.GRUCell(3, 4)(torch.randn(2, 3), torch.randn(3, 4))",
             "nn.LSTMCell(3, 4)(torch.randn(2, 3), (torch.randn(2, 4), torch.randn(2, 5)))",
             "nn.LSTMCell(3, 4)(torch.randn(2, 5))", "nn.LSTMCell(3, 4)(torch.randn(2, 3), torch.randn(2, 4))",
             "nn.LSTMCell(3, 4)(torch.randn(2, 3), (torch.randn(2, 4),))",
             "nn.LSTMCell(3, 4)(torch.randn(2, 3), (torch.randn(2, 4), torch.randn(2, 2, 4)))"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)
