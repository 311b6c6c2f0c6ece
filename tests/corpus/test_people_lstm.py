"""An LSTM written as the well-known minimal numpy LSTM is written, differentiated as written.

The forward pass preallocates one array per quantity (``Hin``, ``IFOG``,
``IFOGf``, ``C``, ``Ct``, ``Hout``), writes row ``t`` of each in a loop,
reads the previous row through ``prevh = Hout[t - 1] if t > 0 else h0`` (a
view of ``Hout``, read before ``Hout[t]`` is written), applies the gate
nonlinearities to slices, and returns ``Hout, C[t], Hout[t], cache`` with the
cache in a dict.  The gradient of a loss of its outputs is compared with a
backward pass written by hand in the same style, with central finite
differences, with forward mode, and with the tape running the same cell
written without preallocated arrays (the tape refuses, as PyTorch does,
writes into an array whose earlier rows its backward pass still needs).
"""

import numpy as np

import astgrad
from _numeric import numeric_grad

N, B, INPUT, HIDDEN = 5, 3, 4, 6


def lstm_forward(X, WLSTM, c0=None, h0=None):
    """X is (time, batch, input); WLSTM is (1 + input + hidden, 4 * hidden), bias in row 0."""
    n, b, input_size = X.shape
    d = WLSTM.shape[1] // 4  # hidden size
    if c0 is None:
        c0 = np.zeros((b, d))
    if h0 is None:
        h0 = np.zeros((b, d))
    xphpb = WLSTM.shape[0]  # x plus h plus bias
    Hin = np.zeros((n, b, xphpb))  # [1, x_t, h_t-1] for each step
    Hout = np.zeros((n, b, d))  # the hidden states
    IFOG = np.zeros((n, b, d * 4))  # input, forget, output gates and the candidate, before
    IFOGf = np.zeros((n, b, d * 4))  # and after their nonlinearities
    C = np.zeros((n, b, d))  # the cell
    Ct = np.zeros((n, b, d))  # tanh of the cell
    for t in range(n):
        prevh = Hout[t - 1] if t > 0 else h0
        Hin[t, :, 0] = 1  # bias
        Hin[t, :, 1:input_size + 1] = X[t]
        Hin[t, :, input_size + 1:] = prevh
        IFOG[t] = Hin[t].dot(WLSTM)
        IFOGf[t, :, :3 * d] = 1.0 / (1.0 + np.exp(-IFOG[t, :, :3 * d]))  # sigmoids on the gates
        IFOGf[t, :, 3 * d:] = np.tanh(IFOG[t, :, 3 * d:])  # tanh on the candidate
        prevc = C[t - 1] if t > 0 else c0
        C[t] = IFOGf[t, :, :d] * IFOGf[t, :, 3 * d:] + IFOGf[t, :, d:2 * d] * prevc
        Ct[t] = np.tanh(C[t])
        Hout[t] = IFOGf[t, :, 2 * d:3 * d] * Ct[t]
    cache = {}
    cache["WLSTM"] = WLSTM
    cache["Hout"] = Hout
    cache["IFOGf"] = IFOGf
    cache["IFOG"] = IFOG
    cache["C"] = C
    cache["Ct"] = Ct
    cache["Hin"] = Hin
    cache["c0"] = c0
    cache["h0"] = h0
    return Hout, C[t], Hout[t], cache


def lstm_loss(WLSTM, X, c0, h0, Y):
    """A loss of every hidden state and of the last cell."""
    Hout, cn, hn, _ = lstm_forward(X, WLSTM, c0, h0)
    return np.sum(Hout * Y) + 0.5 * np.sum(cn * cn)


def lstm_backward(WLSTM, X, c0, h0, Y):
    """The gradient of lstm_loss by hand: of WLSTM, X, c0 and h0."""
    Hout, cn, _, cache = lstm_forward(X, WLSTM, c0, h0)
    IFOGf, C, Ct, Hin = cache["IFOGf"], cache["C"], cache["Ct"], cache["Hin"]
    n, b, d = Hout.shape
    input_size = X.shape[2]
    dIFOG = np.zeros_like(IFOGf)
    dIFOGf = np.zeros_like(IFOGf)
    dWLSTM = np.zeros_like(WLSTM)
    dX = np.zeros_like(X)
    dC = np.zeros_like(C)
    dC[n - 1] = cn  # from 0.5 * sum(cn * cn)
    dHout = Y.copy()
    dh0 = np.zeros_like(h0)
    dc0 = np.zeros_like(c0)
    for t in reversed(range(n)):
        dIFOGf[t, :, 2 * d:3 * d] = Ct[t] * dHout[t]
        dC[t] += (1 - Ct[t] ** 2) * (IFOGf[t, :, 2 * d:3 * d] * dHout[t])
        if t > 0:
            dIFOGf[t, :, d:2 * d] = C[t - 1] * dC[t]
            dC[t - 1] += IFOGf[t, :, d:2 * d] * dC[t]
        else:
            dIFOGf[t, :, d:2 * d] = c0 * dC[t]
            dc0 = IFOGf[t, :, d:2 * d] * dC[t]
        dIFOGf[t, :, :d] = IFOGf[t, :, 3 * d:] * dC[t]
        dIFOGf[t, :, 3 * d:] = IFOGf[t, :, :d] * dC[t]
        dIFOG[t, :, 3 * d:] = (1 - IFOGf[t, :, 3 * d:] ** 2) * dIFOGf[t, :, 3 * d:]
        gates = IFOGf[t, :, :3 * d]
        dIFOG[t, :, :3 * d] = gates * (1 - gates) * dIFOGf[t, :, :3 * d]
        dWLSTM += Hin[t].T.dot(dIFOG[t])
        dHin = dIFOG[t].dot(WLSTM.T)
        dX[t] = dHin[:, 1:input_size + 1]
        if t > 0:
            dHout[t - 1] += dHin[:, input_size + 1:]
        else:
            dh0 += dHin[:, input_size + 1:]
    return dWLSTM, dX, dc0, dh0


def lstm_loss_in_steps(WLSTM, X, c0, h0, Y):
    """The same loss with the state carried in names and lists: no array is written after it is read."""
    n, b, input_size = X.shape
    d = WLSTM.shape[1] // 4
    h, c, hs = h0, c0, []
    for t in range(n):
        hin = np.concatenate([np.ones((b, 1)), X[t], h], axis=1)
        ifog = hin.dot(WLSTM)
        gates = 1.0 / (1.0 + np.exp(-ifog[:, :3 * d]))
        c = gates[:, :d] * np.tanh(ifog[:, 3 * d:]) + gates[:, d:2 * d] * c
        h = gates[:, 2 * d:3 * d] * np.tanh(c)
        hs.append(h)
    return np.sum(np.stack(hs) * Y) + 0.5 * np.sum(c * c)


def _args():
    rng = np.random.default_rng(3)
    WLSTM = rng.standard_normal((1 + INPUT + HIDDEN, 4 * HIDDEN)) / np.sqrt(INPUT + HIDDEN)
    X = rng.standard_normal((N, B, INPUT))
    c0 = rng.standard_normal((B, HIDDEN)) * 0.5
    h0 = rng.standard_normal((B, HIDDEN)) * 0.5
    Y = rng.standard_normal((N, B, HIDDEN))
    return WLSTM, X, c0, h0, Y


WRT = (0, 1, 2, 3)


def test_the_lstm_as_written_matches_its_backward_pass_and_finite_differences():
    args = _args()
    value, got = astgrad.value_and_grad(lstm_loss, wrt=WRT)(*args)
    assert value == lstm_loss(*args)
    for g, want, i in zip(got, lstm_backward(*args), WRT):
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(g, numeric_grad(lstm_loss, args, i), rtol=1e-6, atol=1e-8)


def test_the_lstm_without_initial_state_uses_zeros():
    WLSTM, X, _, _, Y = _args()

    def loss(WLSTM, X, Y):
        Hout, cn, hn, cache = lstm_forward(X, WLSTM)
        return np.sum(Hout * Y) + 0.5 * np.sum(cn * cn)

    zeros = np.zeros((B, HIDDEN))
    got = astgrad.grad(loss, wrt=(0, 1))(WLSTM, X, Y)
    for g, want in zip(got, lstm_backward(WLSTM, X, zeros, zeros, Y)):
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


def test_forward_mode_agrees_with_the_backward_pass():
    args = _args()
    rng = np.random.default_rng(4)
    tangent = rng.standard_normal(args[0].shape)
    value, derivative = astgrad.jvp(lstm_loss, wrt=0)(*args, tangent)
    assert np.isclose(value, lstm_loss(*args), rtol=1e-13)
    assert np.isclose(derivative, np.sum(lstm_backward(*args)[0] * tangent), rtol=1e-10)


def test_the_tape_runs_the_same_cell_written_in_steps():
    args = _args()
    want = lstm_backward(*args)
    tensors = [astgrad.tensor(a, requires_grad=True) for a in args[:4]]
    lstm_loss_in_steps(*tensors, args[4]).backward()
    for t, w in zip(tensors, want):
        np.testing.assert_allclose(t.grad.detach().numpy(), w, rtol=1e-10, atol=1e-12)
    for g, w in zip(astgrad.grad(lstm_loss_in_steps, wrt=WRT)(*args), want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
