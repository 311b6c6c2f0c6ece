"""``bn_param["running_mean"] = v`` in a function the differentiated one calls, given the caller's dict.

A batch-norm layer ``batchnorm_train(x, gamma, beta, bn_param)`` called
from the loss writes its running statistics into the dict the loss was
given: after ``grad(loss)(...)`` that dict holds what plain Python leaves
there, written once a call, and the gradient is the plain function's
(a value the layer writes and reads back carries its derivative).  The
dict must come down from the differentiated function's own argument, one
call at each level, outside loops, and the caller may read its items only
before the call: anything else (a dict reached a second way, passed twice,
read back by the caller, a call in a loop, a dict the caller built) is
refused, never silently wrong.  Values are compared with plain Python run
on deep copies, gradients with central differences (each evaluation on a
fresh copy of the state).
"""

import copy

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def _same_state(got, want):
    assert list(got) == list(want)
    for key in want:
        assert type(got[key]) is type(want[key]), key
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def _numeric(f, args, wrt, state_at):
    """d f / d args[wrt] by central differences, each evaluation given fresh copies of the states."""
    def fresh(*trial):
        trial = list(trial)
        for i in state_at:
            trial[i] = copy.deepcopy(args[i])
        return f(*trial)

    return numeric_grad(fresh, args, wrt)


def _check(f, args, state_at=(1,), wrt=0, level=1, how="grad"):
    """The gradient of ``f`` and the states it leaves, against plain Python and central differences."""
    plain = copy.deepcopy(list(args))
    want_value = f(*plain)
    given = list(args)
    for i in state_at:
        given[i] = copy.deepcopy(args[i])
    if how == "grad":
        got = astgrad.grad(f, wrt=wrt, optimize=level)(*given)
    else:
        value, got = astgrad.value_and_grad(f, wrt=wrt, optimize=level)(*given)
        assert value == pytest.approx(want_value, rel=1e-12)
    for i in state_at:
        _same_state(given[i], plain[i])
    wrts = wrt if isinstance(wrt, tuple) else (wrt,)
    gots = got if isinstance(wrt, tuple) else (got,)
    for i, g in zip(wrts, gots):
        np.testing.assert_allclose(g, _numeric(f, args, i, state_at), rtol=1e-6, atol=1e-8)
    return got, [given[i] for i in state_at]


# -- a batch-norm layer called from the loss, as course assignments write it ------------------------

def batchnorm_train(x, gamma, beta, bn_param):
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    sample_mean = np.mean(x, axis=0)
    sample_var = np.var(x, axis=0)
    x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
    out = gamma * x_hat + beta
    bn_param["running_mean"] = momentum * running_mean + (1 - momentum) * sample_mean
    bn_param["running_var"] = momentum * running_var + (1 - momentum) * sample_var
    return out


def bn_loss(x, gamma, beta, bn_param, dout):
    mode = bn_param["mode"]  # a read before the call sees the caller's value
    out = batchnorm_train(x, gamma, beta, bn_param)
    return np.sum(out * dout) * (1.0 if mode == "train" else 2.0)


def batchnorm_backward(dout, x, gamma, eps):
    """The gradient as the assignments derive it by hand."""
    N = x.shape[0]
    var = np.var(x, axis=0)
    x_hat = (x - np.mean(x, axis=0)) / np.sqrt(var + eps)
    dx_hat = dout * gamma
    dx = (N * dx_hat - np.sum(dx_hat, axis=0) - x_hat * np.sum(dx_hat * x_hat, axis=0)) / (N * np.sqrt(var + eps))
    return dx, np.sum(dout * x_hat, axis=0), np.sum(dout, axis=0)


@pytest.mark.parametrize("level", LEVELS)
def test_a_called_batchnorm_layer_updates_the_callers_running_statistics_as_numpy_does(level):
    rng = np.random.default_rng(5)
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    bn_param = {"mode": "train", "momentum": 0.8}
    plain = copy.deepcopy(bn_param)
    g = astgrad.grad(bn_loss, wrt=(0, 1, 2), optimize=level)
    for step in range(4):
        x = rng.standard_normal((6, 3)) * 2.0 + step
        dout = rng.standard_normal((6, 3))
        before = copy.deepcopy(bn_param)
        got = g(x, gamma, beta, bn_param, dout)
        bn_loss(x, gamma, beta, plain, dout)
        _same_state(bn_param, plain)  # written once a call: four exponential-average steps, as numpy's
        for a, b in zip(got, batchnorm_backward(dout, x, gamma, 1e-5)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        args = (x, gamma, beta, before, dout)
        for i in range(3):
            np.testing.assert_allclose(got[i], _numeric(bn_loss, args, i, (3,)), rtol=1e-6, atol=1e-8)
    assert list(bn_param) == ["mode", "momentum", "running_mean", "running_var"]


def two_layers(x, gamma, beta, p1, p2, dout):
    h = np.tanh(batchnorm_train(x, gamma, beta, p1))
    return np.sum(batchnorm_train(h * 2.0, gamma, beta, p2) * dout)


def block(x, gamma, beta, p):
    """A level between the loss and the layer that passes the dict on."""
    return np.tanh(batchnorm_train(x * 1.5, gamma, beta, p))


def deep_loss(x, gamma, beta, p, dout):
    return np.sum(block(x, gamma, beta, p) * dout)


@pytest.mark.parametrize("level", LEVELS)
def test_two_layers_each_with_its_own_dict(level):
    rng = np.random.default_rng(6)
    args = (rng.standard_normal((5, 3)), rng.standard_normal(3), rng.standard_normal(3),
            {"momentum": 0.7}, {"running_mean": np.ones(3), "running_var": np.ones(3)}, rng.standard_normal((5, 3)))
    _check(two_layers, args, state_at=(3, 4), wrt=(0, 1, 2), level=level)


@pytest.mark.parametrize("level", LEVELS)
def test_a_dict_passed_down_through_a_function_between(level):
    rng = np.random.default_rng(7)
    args = (rng.standard_normal((5, 3)), rng.standard_normal(3), rng.standard_normal(3), {},
            rng.standard_normal((5, 3)))
    _check(deep_loss, args, state_at=(3,), wrt=(0, 1), level=level, how="value_and_grad")


# -- the callee reads back what it wrote: the gradient flows through the write --------------------

def _step(x, p):
    before = p["h"]
    p["h"] = x * 3.0
    p["count"] = p["count"] + 1
    return np.sum(before * p["h"]) + np.sum(p["h"] ** 2)


def read_back_in_the_callee(x, p):
    return _step(np.sin(x), p) * 2.0


@pytest.mark.parametrize("level", LEVELS)
def test_a_read_back_in_the_callee_carries_the_written_values_derivative(level):
    x = np.array([0.5, -1.0, 2.0])
    h0 = np.array([1.0, 2.0, 3.0])
    got, (state,) = _check(read_back_in_the_callee, (x, {"h": h0, "count": 0}), level=level)
    s = np.sin(x)
    np.testing.assert_allclose(got, 2.0 * np.cos(x) * (3.0 * h0 + 18.0 * s), rtol=1e-12)
    assert state["count"] == 1


def test_vjp_jvp_and_repeated_calls_write_once_each():
    x = np.array([0.5, -1.0, 2.0])
    state = {"h": np.ones(3), "count": 0}
    plain = copy.deepcopy(state)
    g = astgrad.grad(read_back_in_the_callee)
    for step in range(3):
        g(x * (step + 1), state)
        read_back_in_the_callee(x * (step + 1), plain)
    _same_state(state, plain)
    assert state["count"] == 3
    u = np.array([0.2, -0.4, 1.0])
    start = copy.deepcopy(state)
    value, tangent = astgrad.jvp(read_back_in_the_callee)(x, state, u)
    want = read_back_in_the_callee(x, plain)
    _same_state(state, plain)
    assert value == pytest.approx(want, rel=1e-12)
    assert tangent == pytest.approx(float(_numeric(read_back_in_the_callee, (x, start), 0, (1,)) @ u), rel=1e-6)
    seed = 1.5
    dx = astgrad.vjp(read_back_in_the_callee)(x, state, seed)
    read_back_in_the_callee(x, plain)
    _same_state(state, plain)
    assert state["count"] == 5


@pytest.mark.parametrize("transformation", ["jacobian", "jacfwd"])
def test_transformations_that_run_the_function_per_row_refuse_the_callees_write(transformation):
    state = {"h": np.ones(3), "count": 0}
    with pytest.raises(TypeError, match=f"astgrad.{transformation} runs the function once per row"):
        getattr(astgrad, transformation)(read_back_in_the_callee)(np.array([0.5, -1.0, 2.0]), state)
    assert state["count"] <= 1  # at most the plain call some make for the output's shape


def test_a_hessian_through_the_callees_write_is_refused_before_anything_is_written():
    state = {"h": np.ones(3), "count": 0}
    with pytest.raises(astgrad.TransformError):
        astgrad.hessian(read_back_in_the_callee)(np.ones(3), state)
    assert state["count"] == 0


# -- refused: where the generated code could differ from numpy ---------------------------------

G = {"h": np.ones(3), "count": 0}


def _reads_global(x, p):
    p["h"] = x * 2.0
    return np.sum(G["h"] * x)


def global_too(x, p):
    return _reads_global(x, p)


def _two(x, p, q):
    p["h"] = x * 2.0
    return np.sum(q["h"] * x)


def two_arguments(x, p, q):
    return _two(x, p, q)


def _closure_reader(state):
    def inner(x, p):
        p["h"] = x * 2.0
        return np.sum(state["h"] * x)
    return inner


def _refused_when_run(f, args, match):
    before = copy.deepcopy(args)
    with pytest.raises(TypeError, match=match) as info:
        astgrad.grad(f)(*args)
    assert "test_callee_writes_into_callers_dicts.py" in "".join(getattr(info.value, "__notes__", []))
    for got, want in zip(args, before):
        if isinstance(want, dict):  # refused before anything was written
            assert list(got) == list(want)
            np.testing.assert_array_equal(got["h"], want["h"])


def test_the_same_dict_as_a_global_of_the_callee_is_refused_when_it_runs():
    _refused_when_run(global_too, (np.ones(3), G), "also reaches through the global")


def test_the_same_dict_as_two_arguments_is_refused_when_it_runs():
    p = {"h": np.ones(3)}
    _refused_when_run(two_arguments, (np.ones(3), p, p), "also reaches through the argument")
    _refused_when_run(two_arguments, (np.ones(3), p, {"h": np.ones(3), "inner": [p]}),
                      "also reaches through the argument")


def reads_the_other_after_the_call(x, p, q):
    y = _reads_global(x, p)
    return y * q["h"][0]


def reads_the_global_after_the_call(x, p):
    y = _reads_global(x, p)
    return y * G["h"][0]


def test_a_second_route_the_caller_reads_after_the_call_is_refused_when_it_runs():
    # the callee cannot see it: only the caller's check, where it makes the call, knows q and its globals
    p = {"h": np.ones(3)}
    _refused_when_run(reads_the_other_after_the_call, (np.ones(3), p, p), "also reaches through the argument q")
    _refused_when_run(reads_the_global_after_the_call, (np.ones(3), G), "also reaches through the global")
    q = {"h": np.ones(3)}  # two dicts: runs as numpy does
    _check(reads_the_other_after_the_call, (np.array([0.5, 1.0, 2.0]), {"h": np.ones(3)}, q), state_at=(1, 2))


def test_a_dict_of_tensors_passed_down_is_refused_before_anything_runs():
    torch = pytest.importorskip("astgrad.torch")
    state = {"h": torch.tensor([1.0, 2.0, 3.0]), "count": 0}
    with pytest.raises(TypeError, match="writes into the dict p, which holds Tensors"):
        astgrad.grad(read_back_in_the_callee)(np.array([0.5, -1.0, 2.0]), state)
    assert state["count"] == 0


def test_the_same_dict_in_a_closure_of_the_callee_is_refused_when_it_runs():
    p = {"h": np.ones(3)}
    inner = _closure_reader(p)

    def through_closure(x, p):
        return inner(x, p)

    _refused_when_run(through_closure, (np.ones(3), p), "also reaches through the global or closure variable")


def _writes(x, p):
    p["m"] = np.mean(x)
    return x * 2.0


def read_back_by_the_caller(x, p):
    y = _writes(x, p)
    return np.sum(y) * p["m"]


def passed_twice(x, p):
    y = _writes(x, p)
    return np.sum(_writes(y, p))


def in_a_loop(x, p):
    for _ in range(2):
        x = _writes(x, p)
    return np.sum(x)


def built_by_the_caller(x):
    p = {}
    y = _writes(x, p)
    return np.sum(y)


def written_and_passed(x, p):
    p["a"] = x
    return np.sum(_writes(x, p))


def differentiated(x, p):
    return np.sum(_writes(x, p))


def passed_an_item(x, p):
    return np.sum(_writes(x, p["inner"]))


def in_a_callee_loop(x, p):
    return np.sum(_looping(x, p))


def _looping(x, p):
    for _ in range(2):
        x = _writes(x, p)
    return x


@pytest.mark.parametrize("f, args, match", [
    (read_back_by_the_caller, (np.ones(3), {}), "read_back_by_the_caller reads p after the call"),
    (passed_twice, (np.ones(3), {}), "passed_twice uses p elsewhere too"),
    (in_a_loop, (np.ones(3), {}), "the call is in a loop"),
    (in_a_callee_loop, (np.ones(3), {}), "the call is in a loop"),
    (built_by_the_caller, (np.ones(3),), "p is not a parameter of built_by_the_caller"),
    (written_and_passed, (np.ones(3), {}), "used here as a whole"),
    (passed_an_item, (np.ones(3), {"inner": {}}), "what it passes there is not a parameter of passed_an_item"),
])
def test_what_cannot_be_made_exact_is_refused_at_the_callees_write(f, args, match):
    before = copy.deepcopy(args)
    with pytest.raises(astgrad.TransformError, match=match) as info:
        astgrad.grad(f)(*args)
    assert "test_callee_writes_into_callers_dicts.py" in str(info.value)
    for got, want in zip(args, before):
        if isinstance(want, dict):
            assert got.keys() == want.keys()


def test_numpy_reads_back_what_the_callee_wrote():
    # the reason for the first refusal above: the caller's read sees a value that depends on x
    p = {}
    assert read_back_by_the_caller(np.array([1.0, 2.0, 3.0]), p) == pytest.approx(12.0 * 2.0)
    assert p["m"] == 2.0


def test_a_differentiated_dict_is_refused_as_before():
    with pytest.raises(astgrad.TransformError, match="differentiated"):
        astgrad.grad(differentiated, wrt=(1,))(np.ones(3), {"h": np.ones(3)})


# -- an array the callee stores and returns: the caller never writes into it ------------------------

def _stores_and_returns(x, p):
    h = np.tanh(x)
    p["h"] = h
    return h


def scaled_after(x, p):
    y = _stores_and_returns(x, p)
    z = y * 3.0
    w = z + 1.0
    return np.sum(w * x)


@pytest.mark.parametrize("level", LEVELS)
def test_an_array_the_callee_stores_and_returns_is_never_a_buffer_the_caller_writes_into(level):
    # 300 elements: above the size where optimize=2 computes results into a dead operand's memory
    x = np.random.default_rng(3).standard_normal(300) * 0.5
    _, (state,) = _check(scaled_after, (x, {}), level=level)
    np.testing.assert_array_equal(state["h"], np.tanh(x))
