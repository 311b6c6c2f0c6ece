"""A callee that cannot be differentiated stops the gradient only where it runs.

A model whose ``loss`` dispatches on ``cell_type`` to an RNN forward or to an
LSTM forward written with a construct astgrad refuses (here ``try``) was
refused for the branch that never ran.  A call in a branch of an ``if`` now
gets functions that raise the callee's refusal (same type, message and
location) when the call runs, so no number ever comes from it; a call on
every path of the function refuses at transform time, as before.  The
gradients are compared with a hand-written backpropagation through time and
central differences, in reverse and forward mode, and with the tape.
"""

import numpy as np
import pytest

import astgrad
from astgrad.transform.ir.errors import UnsupportedSyntaxError
from tests._numeric import directional, gradient


def rnn_forward(x, h0, Wx, Wh):
    h = h0
    total = 0.0
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ Wx + h @ Wh)
        total = total + np.sum(h * h)
    return total


def lstm_forward(x, h0, Wx, Wh):
    total = 0.0
    h = h0
    c = np.zeros_like(h0)
    for t in range(x.shape[0]):
        a = x[t] @ Wx + h @ Wh
        try:  # refused: try/except cannot be differentiated
            gate = 1.0 / (1.0 + np.exp(-a))
        except FloatingPointError:
            gate = np.where(a > 0, 1.0, 0.0)
        c = c + gate * np.tanh(a)
        h = gate * np.tanh(c)
        total = total + np.sum(h * h)
    return total


def loss(Wx, Wh, x, h0, cell_type):
    if cell_type == "rnn":
        value = rnn_forward(x, h0, Wx, Wh)
    else:
        value = lstm_forward(x, h0, Wx, Wh)
    return value


def lstm_on_every_path(Wx, Wh, x, h0):
    return lstm_forward(x, h0, Wx, Wh)


def _hand_bptt(Wx, Wh, x, h0):
    hs, h = [h0], h0
    for t in range(x.shape[0]):
        h = np.tanh(x[t] @ Wx + h @ Wh)
        hs.append(h)
    dWx, dWh, dh = np.zeros_like(Wx), np.zeros_like(Wh), np.zeros_like(h0)
    for t in reversed(range(x.shape[0])):
        dh = dh + 2 * hs[t + 1]
        da = dh * (1 - hs[t + 1] ** 2)
        dWx += x[t].T @ da
        dWh += hs[t].T @ da
        dh = da @ Wh.T
    return dWx, dWh


def _data():
    rng = np.random.default_rng(7)
    return (rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((4, 4)) * 0.5,
            rng.standard_normal((5, 2, 3)), rng.standard_normal((2, 4)) * 0.1)


@pytest.mark.parametrize("optimize", [0, 1, 2])
def test_the_branch_that_runs_is_differentiated(optimize):
    Wx, Wh, x, h0 = _data()
    dWx, dWh = astgrad.grad(loss, wrt=(0, 1), optimize=optimize)(Wx, Wh, x, h0, "rnn")
    hand_x, hand_h = _hand_bptt(Wx, Wh, x, h0)
    np.testing.assert_allclose(dWx, hand_x, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWh, hand_h, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dWh, gradient(lambda w: loss(Wx, w, x, h0, "rnn"), Wh), rtol=1e-6, atol=1e-8)


def _transform_time_refusal():
    with pytest.raises(UnsupportedSyntaxError) as info:
        astgrad.grad(lstm_on_every_path)(*_data())
    return str(info.value)


def test_the_refusal_is_raised_where_the_branch_runs_with_the_same_message():
    Wx, Wh, x, h0 = _data()
    expected = _transform_time_refusal()
    assert "try/except cannot be differentiated" in expected
    assert "test_refused_only_where_it_runs.py" in expected
    g = astgrad.grad(loss)
    g(Wx, Wh, x, h0, "rnn")
    with pytest.raises(UnsupportedSyntaxError) as info:
        g(Wx, Wh, x, h0, "lstm")
    assert str(info.value) == expected
    # the same gradient object keeps working for the branch that can be differentiated
    np.testing.assert_allclose(g(Wx, Wh, x, h0, "rnn"), _hand_bptt(Wx, Wh, x, h0)[0], rtol=1e-10)
    with pytest.raises(UnsupportedSyntaxError):  # raised again, every time it runs
        g(Wx, Wh, x, h0, "lstm")


def test_forward_mode_defers_too():
    Wx, Wh, x, h0 = _data()
    v = np.random.default_rng(8).standard_normal(Wx.shape)
    _, tangent = astgrad.jvp(loss)(Wx, Wh, x, h0, "rnn", v)
    assert np.isclose(tangent, np.sum(_hand_bptt(Wx, Wh, x, h0)[0] * v), rtol=1e-10)
    assert np.isclose(tangent, directional(lambda w: loss(w, Wh, x, h0, "rnn"), Wx, v), rtol=1e-6)
    with pytest.raises(UnsupportedSyntaxError, match="try/except cannot be differentiated"):
        astgrad.jvp(loss)(Wx, Wh, x, h0, "lstm", v)


def test_hessian_of_the_branch_that_runs():
    Wx, Wh, x, h0 = _data()

    def hand_grad_wh(w):
        return _hand_bptt(Wx, w, x, h0)[1]

    H = astgrad.hessian(loss, wrt=1)(Wx, Wh, x, h0, "rnn")
    numeric = np.stack([gradient(lambda w: hand_grad_wh(w)[index], Wh) for index in np.ndindex(Wh.shape)])
    np.testing.assert_allclose(H.reshape(numeric.shape), numeric, rtol=1e-5, atol=1e-7)


def test_a_call_on_every_path_still_refuses_at_transform_time():
    with pytest.raises(UnsupportedSyntaxError, match="try/except cannot be differentiated"):
        astgrad.grad(lstm_on_every_path)  # made, not called: users still learn early
    astgrad.grad(loss)  # in a branch: made without error


def both_paths(Wx, Wh, x, h0, cell_type):
    if cell_type == "rnn":
        first = rnn_forward(x, h0, Wx, Wh)
    else:
        first = lstm_forward(x, h0, Wx, Wh)
    return first + lstm_forward(x, h0, Wx, Wh)  # on every path: refused now, though met first in a branch


def test_a_callee_met_in_a_branch_and_then_on_every_path_refuses_at_transform_time():
    with pytest.raises(UnsupportedSyntaxError, match="try/except cannot be differentiated"):
        astgrad.grad(both_paths)


@pytest.mark.parametrize("cell_type", ["rnn", "lstm"])
def test_the_tape_runs_either_branch_as_written(cell_type):
    Wx, Wh, x, h0 = _data()
    Wh_t = astgrad.tensor(Wh, requires_grad=True)
    loss(astgrad.tensor(Wx), Wh_t, astgrad.tensor(x), astgrad.tensor(h0), cell_type).backward()
    numeric = gradient(lambda w: loss(Wx, w, x, h0, cell_type), Wh)
    np.testing.assert_allclose(Wh_t.grad.numpy(), numeric, rtol=1e-6, atol=1e-8)
    if cell_type == "rnn":
        np.testing.assert_allclose(Wh_t.grad.numpy(), _hand_bptt(Wx, Wh, x, h0)[1], rtol=1e-10)


def lstm_fixed(x, h0, Wx, Wh):
    return rnn_forward(x, h0, Wx, Wh)


def test_a_deferred_refusal_goes_stale_with_the_callee(monkeypatch):
    Wx, Wh, x, h0 = _data()
    g = astgrad.grad(loss)
    with pytest.raises(UnsupportedSyntaxError):
        g(Wx, Wh, x, h0, "lstm")
    monkeypatch.setattr(lstm_forward, "__code__", lstm_fixed.__code__)  # the user fixed the callee
    np.testing.assert_allclose(g(Wx, Wh, x, h0, "lstm"), _hand_bptt(Wx, Wh, x, h0)[0], rtol=1e-10)
