"""``torch.nn.RNN``, ``LSTM``, ``GRU`` and their cells, composed of the tape's differentiable operations.

A step is ``linear``, ``chunk``, ``sigmoid``, ``tanh``/``relu``, products and
sums of taped tensors, and a sequence is those steps stacked (``stack``,
``cat``): the gradients come from the rule table, and no recurrent layer has a
rule of its own to get wrong.  Parameter names, shapes, gate order (LSTM:
input, forget, cell, output; GRU: reset, update, new), initialisation
(uniform in +-1/sqrt(hidden_size), from the tape's generator), printed form,
errors and output shapes are PyTorch's.  ``PackedSequence`` inputs are not
supported.
"""

from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from ...tape import apply_op, bfloat16, check_device, empty, float32, is_tensor, no_grad, rand, stack, zeros
from . import functional as F
from .module import Module
from .parameter import Parameter

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _uniform_(parameters, hidden_size: int) -> None:
    """PyTorch's default for recurrent layers: every parameter from U(-1/sqrt(hidden), 1/sqrt(hidden))."""
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    with no_grad():
        for p in parameters:
            p.copy_(rand(*p.shape, dtype=p.dtype) * (2 * bound) - bound)


def _scalar_name(tensor) -> str:
    """``Float``, ``Double``, ...: the name PyTorch's matrix-product errors give a dtype."""
    return tensor.type()[len("torch."):-len("Tensor")]


def _check_same_dtype(state, weight) -> None:
    """PyTorch refuses a state of another dtype than the weights; promoting it would change the arithmetic."""
    if state.dtype != weight.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_scalar_name(state)} and "
                           f"{_scalar_name(weight)}")


# One step of each kind: ``gates_in`` is ``x W_ih^T + b_ih`` for this step, ``(N, gates * hidden)``.

def _tanh_step(gates_in, h, w_hh, b_hh):
    return (gates_in + F.linear(h, w_hh, b_hh)).tanh()


def _relu_step(gates_in, h, w_hh, b_hh):
    return (gates_in + F.linear(h, w_hh, b_hh)).relu()


def _lstm_step(gates_in, state, w_hh, b_hh, w_hr=None):
    h, c = state
    i, f, g, o = (gates_in + F.linear(h, w_hh, b_hh)).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_step(gates_in, h, w_hh, b_hh):
    """The reset gate scales ``W_hn h + b_hn``, after the product, as PyTorch (and cuDNN) do."""
    in_r, in_z, in_n = gates_in.chunk(3, 1)
    hid_r, hid_z, hid_n = F.linear(h, w_hh, b_hh).chunk(3, 1)
    r = (in_r + hid_r).sigmoid()
    z = (in_z + hid_z).sigmoid()
    n = (in_n + r * hid_n).tanh()
    return n + z * (h - n)


STEPS = {"RNN_TANH": _tanh_step, "RNN_RELU": _relu_step, "LSTM": _lstm_step, "GRU": _gru_step}


class RNNBase(Module):
    """Layers of recurrent steps over a sequence, in one or two directions; what RNN, LSTM and GRU share."""

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device=None, dtype=None):
        super().__init__()
        check_device(device)
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             "being zeroed")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          UserWarning, stacklevel=3)
        for argument, value, expected in (("bias", bias, bool), ("batch_first", batch_first, bool),
                                          ("input_size", input_size, int)):
            if not isinstance(value, expected):
                raise TypeError(f"{argument} should be of type {expected.__name__}, got: {type(value).__name__}")
        if input_size <= 0:
            raise ValueError("input_size must be greater than zero")
        if not isinstance(hidden_size, int):
            raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
        if hidden_size <= 0:
            raise ValueError("hidden_size must be greater than zero")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        if mode not in GATES:
            raise ValueError("Unrecognized RNN mode: " + mode)
        gate_size = GATES[mode] * hidden_size
        out_size = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names, self._all_weights = [], []
        for layer in range(num_layers):
            for direction in range(self._directions):
                layer_input_size = input_size if layer == 0 else out_size * self._directions
                shapes: list[tuple[str, tuple[int, ...]]] = [("weight_ih", (gate_size, layer_input_size)), ("weight_hh", (gate_size, out_size))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes += [("weight_hr", (proj_size, hidden_size))]
                names = []
                for prefix, shape in shapes:
                    name = f"{prefix}_l{layer}{'_reverse' if direction else ''}"
                    setattr(self, name, Parameter(empty(shape, dtype=dtype)))
                    names.append(name)
                self._flat_weights_names.extend(names)
                self._all_weights.append(names)
        self.reset_parameters()

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    def reset_parameters(self) -> None:
        _uniform_(self.parameters(), self.hidden_size)

    def flatten_parameters(self) -> None:
        """A no-op, as in PyTorch on the CPU: the weights are separate tensors, each used where it is."""

    @property
    def all_weights(self):
        """The parameters of each layer and direction, in the order of ``named_parameters``."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _out_size(self) -> int:
        return self.proj_size if self.proj_size > 0 else self.hidden_size

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            text += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            text += f", num_layers={self.num_layers}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if self.batch_first is not False:
            text += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            text += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            text += f", bidirectional={self.bidirectional}"
        return text

    def _check_input(self, input) -> None:
        weight = getattr(self, self._flat_weights_names[0])
        if input.dtype != weight.dtype:
            raise ValueError(f"RNN input dtype ({input.dtype}) does not match weight dtype ({weight.dtype}). "
                             f"Convert input: input.to({weight.dtype}), or convert model: model.to({input.dtype})")
        if self.input_size != input.shape[-1]:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, got "
                               f"{input.shape[-1]}")
        if input.shape[1 if self.batch_first else 0] == 0:
            raise RuntimeError("Expected sequence length to be larger than 0 in RNN")

    def _expected_state_size(self, input, size: int) -> tuple:
        return (self.num_layers * self._directions, input.shape[0 if self.batch_first else 1], size)

    def _check_state(self, state, expected: tuple, message: str) -> None:
        if tuple(state.shape) != expected:
            raise RuntimeError(message.format(expected, list(state.shape)))
        _check_same_dtype(state, getattr(self, self._flat_weights_names[1]))

    def _with_batch(self, input, kind: str):
        """``(input with a batch dimension, whether it had one)``: a 2-D input is one sequence without a batch."""
        if input.dim() not in (2, 3):
            noun = " tensor" if kind == "RNN" else ""
            raise ValueError(f"{kind}: Expected input to be 2D or 3D, got {input.dim()}D{noun} instead")
        batched = input.dim() == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        return input, batched

    def _zeros(self, input, size: int):
        return zeros(*self._expected_state_size(input, size), dtype=input.dtype)

    def _run(self, input, states):
        """Every layer and direction over the sequence: (output, final states as one tensor per kind of state).

        ``states`` holds the initial state tensors (``(h0,)``, or ``(h0, c0)``
        for an LSTM), each ``(layers * directions, batch, size)``.
        """
        time_axis = 1 if self.batch_first else 0
        steps = input.shape[time_axis]
        step = STEPS[self.mode]
        initial = [s.unbind(0) for s in states]
        finals: list[list] = [[] for _ in states]
        layer_input = input
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(self._directions):
                index = layer * self._directions + direction
                names = self._all_weights[index]
                w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
                b_ih, b_hh = (getattr(self, names[2]), getattr(self, names[3])) if self.bias else (None, None)
                extra = (getattr(self, names[-1]),) if self.proj_size > 0 else ()
                gates_in = F.linear(layer_input, w_ih, b_ih).unbind(time_axis)
                state = tuple(s[index] for s in initial)
                state = state if self.mode == "LSTM" else state[0]
                seen = [None] * steps
                for t in (reversed(range(steps)) if direction else range(steps)):
                    state = step(gates_in[t], state, w_hh, b_hh, *extra)
                    seen[t] = state[0] if self.mode == "LSTM" else state
                outputs.append(seen)
                for kept, value in zip(finals, state if self.mode == "LSTM" else (state,)):
                    kept.append(value)
            last = layer == self.num_layers - 1
            layer_input = self._join(outputs, time_axis, self._output_node(input) if last else None)
            if not last and self.training and self.dropout > 0:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, tuple(stack(kept, 0) for kept in finals)

    def _output_node(self, input) -> str:
        """The ``grad_fn`` name PyTorch's output has: its kernels differ by mode, layout and dtype."""
        if self.batch_first:
            return "TransposeBackward0" if self.mode == "LSTM" else "TransposeBackward1"
        if self.bidirectional:
            return "CatBackward0"
        if self.mode == "LSTM" and self.proj_size == 0 and input.dtype in (float32, bfloat16):
            return "MkldnnRnnLayerBackward0"  # PyTorch's oneDNN kernel computes this case
        return "StackBackward0"

    @staticmethod
    def _join(outputs, time_axis: int, name):
        """The steps of each direction stacked along time, the directions side by side along features.

        ``name`` (the last layer's) names the one node that joins them, so
        the output prints PyTorch's ``grad_fn`` while the gradient is the
        rule table's stack or concatenation.
        """
        if len(outputs) == 1:
            if name is None:
                return stack(outputs[0], time_axis)
            return apply_op(name, np.stack, (list(outputs[0]),), {"axis": time_axis}, promote=True)
        directions = [stack(steps, time_axis) for steps in outputs]
        if name is None:
            name = "CatBackward0"
        return apply_op(name, np.concatenate, (directions,), {"axis": 2}, promote=True)


class RNN(RNNBase):
    """Elman recurrent layers: ``h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)`` (or ReLU)."""

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None, **kwargs):
        _refuse_projection(kwargs)
        modes = {"tanh": "RNN_TANH", "relu": "RNN_RELU"}
        if nonlinearity not in modes:
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(modes[nonlinearity], input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        """``(output, h_n)``: the last layer's state at every step, and every layer's state after the last step."""
        return _forward_one_state(self, "RNN", input, hx)


class GRU(RNNBase):
    """Gated recurrent layers: reset and update gates, the reset gate applied to ``W_hn h + b_hn``."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, dtype=None, **kwargs):
        _refuse_projection(kwargs)
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional, 0,
                         device, dtype)

    def forward(self, input, hx=None):
        """``(output, h_n)``, as ``RNN.forward``."""
        return _forward_one_state(self, "GRU", input, hx)


def _refuse_projection(kwargs) -> None:
    if "proj_size" in kwargs:
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
    if kwargs:
        raise TypeError(f"__init__() got an unexpected keyword argument '{next(iter(kwargs))}'")


def _forward_one_state(module: RNNBase, kind: str, input, hx):
    """RNN's and GRU's forward: one state tensor, ``(layers * directions, batch, hidden)`` or without the batch."""
    input, batched = module._with_batch(input, kind)
    if hx is not None:
        if hx.dim() != (3 if batched else 2):
            raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, hx should also be "
                               f"{3 if batched else 2}-D but got {hx.dim()}-D tensor")
        hx = hx if batched else hx.unsqueeze(1)
    hx = module._zeros(input, module.hidden_size) if hx is None else hx
    module._check_input(input)
    module._check_state(hx, module._expected_state_size(input, module.hidden_size), "Expected hidden size {}, got {}")
    output, (hidden,) = module._run(input, (hx,))
    if not batched:
        return output.squeeze(0 if module.batch_first else 1), hidden.squeeze(1)
    return output, hidden


class LSTM(RNNBase):
    """Long short-term memory layers (gates in the order input, forget, cell, output); ``proj_size`` projects h."""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def forward(self, input, hx=None):
        """``(output, (h_n, c_n))``; ``hx`` is ``(h_0, c_0)`` or None for zeros."""
        input, batched = self._with_batch(input, "LSTM")
        if hx is None:
            hx = (self._zeros(input, self._out_size), self._zeros(input, self.hidden_size))
        else:
            dims = 3 if batched else 2
            if hx[0].dim() != dims or hx[1].dim() != dims:
                raise RuntimeError(f"For {'batched 3-D' if batched else 'unbatched 2-D'} input, hx and cx should "
                                   f"also be {dims}-D but got ({hx[0].dim()}-D, {hx[1].dim()}-D) tensors")
            hx = (hx[0], hx[1]) if batched else (hx[0].unsqueeze(1), hx[1].unsqueeze(1))
        self._check_input(input)
        self._check_state(hx[0], self._expected_state_size(input, self._out_size), "Expected hidden[0] size {}, got {}")
        self._check_state(hx[1], self._expected_state_size(input, self.hidden_size),
                          "Expected hidden[1] size {}, got {}")
        output, (h, c) = self._run(input, hx)
        if not batched:
            return output.squeeze(0 if self.batch_first else 1), (h.squeeze(1), c.squeeze(1))
        return output, (h, c)


class RNNCellBase(Module):
    """One recurrent step with its own ``weight_ih``, ``weight_hh`` (and ``bias_ih``, ``bias_hh``)."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device=None, dtype=None):
        super().__init__()
        check_device(device)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        for name in ("bias_ih", "bias_hh"):
            self._parameters[name] = Parameter(empty(num_chunks * hidden_size, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _uniform_(self.parameters(), self.hidden_size)

    def extra_repr(self) -> str:
        text = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            text += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            text += f", nonlinearity={self.nonlinearity}"
        return text

    def _prepared(self, kind: str, input, states, count: int):
        """``input`` as ``(batch, input_size)`` and ``count`` states as ``(batch, hidden_size)``, zeros if not given.

        A 1-D input is one example without a batch, its states 1-D too;
        PyTorch's checks and messages, in PyTorch's order.
        """
        batched = input.dim() == 2
        if not batched:
            input = input.unsqueeze(0)
            states = None if states is None else [s.unsqueeze(0) for s in states]
        if states is None:
            states = [zeros(input.shape[0], self.hidden_size, dtype=input.dtype)] * count
        if input.shape[1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[1]} expected {self.input_size}")
        _check_same_dtype(input, self.weight_ih)
        for i, state in enumerate(states):
            if input.shape[0] != state.shape[0]:
                raise RuntimeError(f"Input batch size {input.shape[0]} doesn't match hidden{i} batch size "
                                   f"{state.shape[0]}")
            if state.shape[1] != self.hidden_size:
                raise RuntimeError(f"hidden{i} has inconsistent hidden_size: got {state.shape[1]}, expected "
                                   f"{self.hidden_size}")
            if state.dim() != 2:
                raise RuntimeError(f"{kind}: a 1-D input takes 1-D hidden states, got a {state.dim() - 1}-D one")
            if i == 0 or kind != "LSTMCell":  # PyTorch's LSTM cell promotes a cell state of another dtype
                _check_same_dtype(state, self.weight_hh)
        return input, states, batched

    def _one_state(self, kind: str, step, input, hx):
        """RNNCell's and GRUCell's forward: ``h'`` from ``x`` and ``h``."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{kind}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None and hx.dim() not in (1, 2):
            raise ValueError(f"{kind}: Expected hidden to be 1D or 2D, got {hx.dim()}D instead")
        if step is None:
            raise RuntimeError(f"Unknown nonlinearity: {self.nonlinearity}")
        input, (h,), batched = self._prepared(kind, input, None if hx is None else [hx], 1)
        h = step(F.linear(input, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if batched else h.squeeze(0)


class RNNCell(RNNCellBase):
    """``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)`` (or ReLU) for one step."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        step = {"tanh": _tanh_step, "relu": _relu_step}.get(self.nonlinearity)
        return self._one_state("RNNCell", step, input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step: ``(h', c')`` from ``x`` and ``(h, c)``, gates in the order input, forget, cell, output."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        if input.dim() not in (1, 2):
            raise ValueError(f"LSTMCell: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if hx is not None:
            for index, value in enumerate(hx):
                if value.dim() not in (1, 2):
                    raise ValueError(f"LSTMCell: Expected hx[{index}] to be 1D or 2D, got {value.dim()}D instead")
            if is_tensor(hx):
                raise TypeError("lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, not Tensor")
            if len(hx) != 2:
                raise RuntimeError("lstm_cell expects two hidden states")
        input, state, batched = self._prepared("LSTMCell", input, None if hx is None else list(hx), 2)
        h, c = _lstm_step(F.linear(input, self.weight_ih, self.bias_ih), state, self.weight_hh, self.bias_hh)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: reset, update and new gates, the reset gate applied to ``W_hn h + b_hn``."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        return self._one_state("GRUCell", _gru_step, input, hx)


for _cls in (RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell):
    _cls.__module__ = "torch.nn.modules.rnn"
del _cls
