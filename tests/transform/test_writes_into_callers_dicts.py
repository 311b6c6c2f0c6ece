"""``bn_param["running_mean"] = v`` in the differentiated function: the caller's dict holds what numpy leaves.

After ``grad(f)(x, state)`` (``value_and_grad``, ``jvp``, every optimize
level) the caller's dict holds exactly what running ``f`` as plain Python
leaves there, written once a call; a read of the key after the write sees
the new value and carries its derivative, a read before sees the old one.
Everything the generated code cannot make exactly right is refused, at the
user's line: the dict reached by a second route (another argument, a
global, itself), differentiated, rebound, named or passed as a whole,
written through an item or with ``op=``, written into after an array it
holds was stored, or not a dict.  (A write in a function the differentiated
one calls: test_callee_writes_into_callers_dicts.py.)  Values are compared with plain Python's run on a deep copy,
gradients with central finite differences (each evaluation on a fresh copy
of the state, as the function writes into it).
"""

import copy

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad

LEVELS = (0, 1, 2)


def _plain(f, args, state_at):
    """What plain Python returns and leaves in the state argument (at ``state_at``), run on deep copies."""
    args = copy.deepcopy(list(args))
    value = f(*args)
    return value, args[state_at]


def _same_state(got, want):
    assert got.keys() == want.keys()
    assert list(got) == list(want)  # the keys in Python's order: a new key goes last
    for key in want:
        assert type(got[key]) is type(want[key]), key
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def _numeric(f, args, wrt, state_at):
    """d f / d args[wrt] by central differences, each evaluation given a fresh copy of the state."""
    state = args[state_at]

    def fresh(*trial):
        trial = list(trial)
        trial[state_at] = copy.deepcopy(state)
        return f(*trial)

    return numeric_grad(fresh, args, wrt)


def _check(f, args, state_at=1, wrt=0, level=1):
    want_value, want_state = _plain(f, args, state_at)
    state = copy.deepcopy(args[state_at])
    given = list(args)
    given[state_at] = state
    got = astgrad.grad(f, wrt=wrt, optimize=level)(*given)
    _same_state(state, want_state)
    np.testing.assert_allclose(got, _numeric(f, args, wrt, state_at), rtol=1e-6, atol=1e-8)
    return got, state


# -- what runs: values and gradients ---------------------------------------------------------------

def read_back(x, p):
    before = p["h"]
    p["h"] = x * 3.0
    return np.sum(before * p["h"]) + np.sum(p["h"] ** 2)


def written_in_a_loop(x, p, n):
    for i in range(n):
        p["acc"] = p["acc"] + x * i
        p["count"] = p["count"] + 1
    return np.sum(p["acc"] * x)


def written_in_a_branch(x, p, flag):
    if flag:
        p["m"] = np.mean(x)
    else:
        p["s"] = np.sum(np.sin(x))
    return np.sum(x ** 2) + p.get("m", 0.0) * 2.0 + p.get("s", 1.0) * x[0]


def cache_of_the_input(x, cache):
    y = np.tanh(x)
    cache["x"] = x
    cache["y"] = y
    return np.sum(y * cache["y"])


def written_twice(x, p):
    p["h"] = x * 2.0
    first = p["h"]
    p["h"] = np.exp(x)
    return np.sum(first * p["h"])


@pytest.mark.parametrize("level", LEVELS)
def test_a_read_after_the_write_sees_the_new_value_and_its_derivative(level):
    x = np.array([0.5, -1.0, 2.0])
    got, state = _check(read_back, (x, {"h": np.array([1.0, 2.0, 3.0])}), level=level)
    np.testing.assert_allclose(got, 3.0 * np.array([1.0, 2.0, 3.0]) + 18.0 * x)  # d/dx of sum(h0 3x) + sum(9x^2)
    assert type(state["h"]) is np.ndarray


@pytest.mark.parametrize("level", LEVELS)
def test_writes_in_a_loop_leave_the_last_value_and_count_once_a_call(level):
    x = np.array([0.3, 1.5, -0.7])
    got, state = _check(written_in_a_loop, (x, {"acc": np.zeros(3), "count": 0}, 4), level=level)
    assert state["count"] == 4  # four trips of one call: the adjoint ran none of them again
    np.testing.assert_allclose(got, 12.0 * x)  # acc = 6x, d sum(6x * x) = 12x


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize("level", LEVELS)
def test_a_write_in_a_branch_happens_only_when_it_runs(flag, level):
    x = np.array([0.3, 1.5, -0.7])
    _, state = _check(written_in_a_branch, (x, {}, flag), level=level)
    assert set(state) == ({"m"} if flag else {"s"})


@pytest.mark.parametrize("level", LEVELS)
def test_a_cache_of_the_input_holds_the_input_and_the_values_computed(level):
    x = np.array([0.3, 1.5, -0.7])
    _, cache = _check(cache_of_the_input, (x, {}), level=level)
    np.testing.assert_array_equal(cache["y"], np.tanh(x))


@pytest.mark.parametrize("level", LEVELS)
def test_a_key_written_twice_gives_each_read_its_own_value(level):
    _check(written_twice, (np.array([0.3, 1.5, -0.7]), {"h": None}), level=level)


def test_value_and_grad_and_jvp_leave_the_same_state():
    x = np.array([0.5, -1.0, 2.0])
    start = {"h": np.array([1.0, 2.0, 3.0])}
    want_value, want_state = _plain(read_back, (x, start), 1)
    state = copy.deepcopy(start)
    value, g = astgrad.value_and_grad(read_back)(x, state)
    _same_state(state, want_state)
    assert value == pytest.approx(want_value, rel=1e-12)
    state = copy.deepcopy(start)
    u = np.array([0.2, -0.4, 1.0])
    value, tangent = astgrad.jvp(read_back)(x, state, u)
    _same_state(state, want_state)
    assert value == pytest.approx(want_value, rel=1e-12)
    assert tangent == pytest.approx(float(g @ u), rel=1e-10)


def counted(x, p):
    p["count"] = p["count"] + 1
    p["h"] = x * 2.0
    return x * p["h"]


def test_vjp_writes_once_a_call():
    x = np.array([0.5, -1.0, 2.0])
    seed = np.array([1.0, 2.0, -1.0])
    state = {"count": 0}
    got = astgrad.vjp(counted)(x, state, seed)
    assert state["count"] == 1
    np.testing.assert_array_equal(state["h"], x * 2.0)
    np.testing.assert_allclose(got, 4.0 * x * seed)


@pytest.mark.parametrize("transformation", ["jacobian", "jacfwd", "elementwise_grad"])
def test_transformations_that_run_the_function_per_row_refuse_the_write(transformation):
    state = {"count": 0}
    with pytest.raises(TypeError, match=f"astgrad.{transformation} runs the function once per row"):
        getattr(astgrad, transformation)(counted)(np.array([0.5, -1.0, 2.0]), state)
    assert state["count"] <= 1  # at most the plain call some make for the output's shape; no generated write


def test_a_second_call_starts_from_the_state_the_first_left():
    state = {"acc": np.zeros(3), "count": 0}
    plain = copy.deepcopy(state)
    g = astgrad.grad(written_in_a_loop)
    for step in range(3):
        x = np.array([0.3, 1.5, -0.7]) * (step + 1)
        g(x, state, 2)
        written_in_a_loop(x, plain, 2)
    _same_state(state, plain)
    assert state["count"] == 6


# -- refused: where the generated code could differ from numpy ---------------------------------

G = {"h": np.ones(3)}


def through_a_global_too(x, p):
    p["h"] = x * 2.0
    return np.sum(G["h"] * x)


def through_two_arguments(x, p, q):
    p["h"] = x * 2.0
    return np.sum(q["h"] * x)


def _refused_when_run(f, args, match):
    before = copy.deepcopy(args)
    with pytest.raises(TypeError, match=match) as info:
        astgrad.grad(f)(*args)
    notes = "".join(getattr(info.value, "__notes__", []))
    assert "test_writes_into_callers_dicts.py" in notes and 'p["h"] = x * 2.0' in notes  # the user's line
    _same_state(args[1], before[1])  # refused before anything was written
    return str(info.value)


def test_the_same_dict_as_a_global_is_refused_when_it_runs():
    message = _refused_when_run(through_a_global_too, (np.ones(3), G), "also reaches through the global")
    assert '`p["h"] = x * 2.0`' in message


def test_the_same_dict_as_two_arguments_or_inside_another_is_refused():
    p = {"h": np.ones(3)}
    _refused_when_run(through_two_arguments, (np.ones(3), p, p), "reaches through the argument q")
    _refused_when_run(through_two_arguments, (np.ones(3), p, {"h": np.ones(3), "inner": [p]}),
                      "reaches through the argument q")


def test_a_dict_holding_itself_is_refused():
    p = {"h": np.ones(3)}
    p["self"] = p
    with pytest.raises((TypeError, RecursionError)):  # astgrad's walk of the arguments meets the cycle first
        astgrad.grad(read_back)(np.ones(3), p)
    np.testing.assert_array_equal(p["h"], np.ones(3))


def test_an_object_other_than_a_dict_is_refused():
    record = np.zeros(3, dtype=[("h", float)])
    with pytest.raises(TypeError, match="writes into the 'ndarray' given as p"):
        astgrad.grad(read_back)(np.ones(3), record)


def test_only_a_write_that_runs_asks_for_a_dict():
    # written_in_a_branch given None where it writes nothing: runs as Python runs it
    x = np.array([0.3, 1.5, -0.7])

    def maybe(x, p, flag):
        if flag:
            p["m"] = np.mean(x)
        return np.sum(x ** 2)

    np.testing.assert_allclose(astgrad.grad(maybe)(x, None, False), 2 * x)
    with pytest.raises(TypeError, match="writes into the 'NoneType' given as p"):
        astgrad.grad(maybe)(x, None, True)


def rebound_in_a_branch(x, p, fresh):
    if fresh:
        p = {}
    p["h"] = x
    return np.sum(x)


def augmented_item(x, p):
    p["h"] += x
    return np.sum(x)


def written_through_an_item(x, p):
    p["inner"]["h"] = x
    return np.sum(x)


def named_as_a_whole(x, p):
    q = p
    p["h"] = x * 2.0
    return np.sum(q["h"])


def _reads(p):
    return p["h"]


def passed_as_a_whole(x, p):
    p["h"] = x * 2.0
    return np.sum(_reads(p))


def looped_over(x, p):
    p["h"] = x * 2.0
    total = 0.0
    for _, v in p.items():
        total = total + np.sum(v)
    return total


def stored_then_changed(x, p):
    y = x * 2.0
    p["h"] = y
    y += 1.0
    return np.sum(y * x)


def view_stored_then_changed(x, p):
    y = x * 2.0
    p["h"] = y[1:]
    y[1] = 7.0
    return np.sum(y * x)


def differentiated_dict(params):
    params["W"] = params["W"] * 2.0
    return np.sum(params["W"])


def _writes_state(x, p):
    p["m"] = np.mean(x)
    return x


def written_in_a_callee(x, p):
    return np.sum(_writes_state(x * 2.0, p))


@pytest.mark.parametrize("f, args, match, line", [
    (rebound_in_a_branch, (np.ones(3), {}, True), "p may name another object", 'p["h"] = x'),
    (augmented_item, (np.ones(3), {"h": np.ones(3)}), "op= v would change the array held there", 'p["h"] += x'),
    (written_through_an_item, (np.ones(3), {"inner": {}}), "it writes into an item of p", 'p["inner"]["h"] = x'),
    (named_as_a_whole, (np.ones(3), {}), "used here as a whole", "q = p"),
    (passed_as_a_whole, (np.ones(3), {}), "used here as a whole", "_reads(p)"),
    (looped_over, (np.ones(3), {}), "used here as a whole", "p.items()"),
    (stored_then_changed, (np.ones(3), {}), "makes a name that shares memory with y", 'p["h"] = y'),
    (view_stored_then_changed, (np.ones(3), {}), "makes a name that shares memory with y", 'p["h"] = y[1:]'),
    (differentiated_dict, ({"W": np.ones(3)},), "params is differentiated", 'params["W"] = params["W"] * 2.0'),
])
def test_what_cannot_be_made_exact_is_refused_at_its_line(f, args, match, line):
    before = copy.deepcopy(args)
    with pytest.raises(astgrad.TransformError, match=match) as info:
        astgrad.grad(f)(*args)
    assert line in str(info.value) and "test_writes_into_callers_dicts.py" in str(info.value)
    for got, want in zip(args, before):
        if isinstance(want, dict):
            assert got.keys() == want.keys()


@pytest.mark.parametrize("level", LEVELS)
def test_a_write_in_a_function_given_the_dict_runs_as_well(level):
    # the callee's side: tests/transform/test_callee_writes_into_callers_dicts.py
    _, state = _check(written_in_a_callee, (np.array([0.3, 1.5, -0.7]), {}), level=level)
    assert state["m"] == pytest.approx(np.mean([0.6, 3.0, -1.4]), rel=1e-15)


def test_numpy_leaves_what_the_refused_programs_would_have_differed_in():
    # the reason for two refusals above, in plain numpy: the dict sees a later write into the stored array
    p = {}
    stored_then_changed(np.ones(3), p)
    np.testing.assert_array_equal(p["h"], [3.0, 3.0, 3.0])
    p = {}
    view_stored_then_changed(np.ones(3), p)
    np.testing.assert_array_equal(p["h"], [7.0, 2.0])


def test_attribute_writes_on_an_object_run_as_well():
    # the object's side: tests/transform/test_writes_into_callers_objects.py
    class Layer:
        def __init__(self):
            self.running_mean = np.zeros(3)

    def update(x, layer):
        layer.running_mean = 0.9 * layer.running_mean + 0.1 * np.mean(x, axis=0)
        return np.sum(x ** 2)

    layer, x = Layer(), np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(astgrad.grad(update)(x, layer), 2 * x)
    np.testing.assert_array_equal(layer.running_mean, 0.1 * np.mean(x, axis=0))


def test_a_hessian_through_the_write_is_refused_before_anything_is_written():
    p = {"h": np.ones(3)}
    with pytest.raises(astgrad.TransformError, match="has no derivative rule"):
        astgrad.hessian(read_back)(np.ones(3), p)
    _same_state(p, {"h": np.ones(3)})


def test_the_numba_backend_refuses_the_write_at_its_line():
    pytest.importorskip("numba")
    p = {"h": np.ones(3)}
    with pytest.raises(astgrad.TransformError, match="backend='numba'") as info:
        astgrad.grad(read_back, backend="numba")(np.ones(3), p)
    assert "read_back" in str(info.value) or "test_writes_into_callers_dicts.py" in str(info.value)
    _same_state(p, {"h": np.ones(3)})


# -- a batch-norm layer in training mode, as course assignments write it ---------------------------

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
    out = batchnorm_train(x, gamma, beta, bn_param)  # the layer is a callee
    return np.sum(out * dout)


def bn_step_loss(x, gamma, beta, bn_param, dout):
    """The layer written inline in the function grad is given."""
    eps = bn_param.get("eps", 1e-5)
    momentum = bn_param.get("momentum", 0.9)
    N, D = x.shape
    running_mean = bn_param.get("running_mean", np.zeros(D, dtype=x.dtype))
    running_var = bn_param.get("running_var", np.zeros(D, dtype=x.dtype))
    sample_mean = np.mean(x, axis=0)
    sample_var = np.var(x, axis=0)
    x_hat = (x - sample_mean) / np.sqrt(sample_var + eps)
    out = gamma * x_hat + beta
    running_mean = momentum * running_mean + (1 - momentum) * sample_mean
    running_var = momentum * running_var + (1 - momentum) * sample_var
    bn_param["running_mean"] = running_mean
    bn_param["running_var"] = running_var
    return np.sum(out * dout)


def batchnorm_backward(dout, x, gamma, eps):
    """The gradient as the assignments derive it by hand."""
    N = x.shape[0]
    var = np.var(x, axis=0)
    x_hat = (x - np.mean(x, axis=0)) / np.sqrt(var + eps)
    dx_hat = dout * gamma
    dx = (N * dx_hat - np.sum(dx_hat, axis=0) - x_hat * np.sum(dx_hat * x_hat, axis=0)) / (N * np.sqrt(var + eps))
    return dx, np.sum(dout * x_hat, axis=0), np.sum(dout, axis=0)


@pytest.mark.parametrize("level", LEVELS)
def test_batchnorm_training_steps_update_running_statistics_as_numpy_does(level):
    rng = np.random.default_rng(5)
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    bn_param = {"mode": "train", "momentum": 0.8}
    plain = copy.deepcopy(bn_param)
    g = astgrad.grad(bn_step_loss, wrt=(0, 1, 2), optimize=level)
    for step in range(5):
        x = rng.standard_normal((6, 3)) * 2.0 + step
        dout = rng.standard_normal((6, 3))
        before = copy.deepcopy(bn_param)
        got = g(x, gamma, beta, bn_param, dout)
        bn_step_loss(x, gamma, beta, plain, dout)
        _same_state(bn_param, plain)
        for a, b in zip(got, batchnorm_backward(dout, x, gamma, 1e-5)):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
        args = (x, gamma, beta, before, dout)
        for i in range(3):
            np.testing.assert_allclose(got[i], _numeric(bn_step_loss, args, i, 3), rtol=1e-6, atol=1e-8)
    # five steps of the exponential average, computed here without the layer
    assert list(bn_param) == ["mode", "momentum", "running_mean", "running_var"]


def test_batchnorm_as_a_called_layer_gives_what_the_layer_written_inline_gives():
    rng = np.random.default_rng(6)
    x, dout = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    gamma, beta = rng.standard_normal(3), rng.standard_normal(3)
    called, inline = {"mode": "train"}, {"mode": "train"}
    got = astgrad.grad(bn_loss, wrt=(0, 1, 2))(x, gamma, beta, called, dout)
    want = astgrad.grad(bn_step_loss, wrt=(0, 1, 2))(x, gamma, beta, inline, dout)
    _same_state(called, inline)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def first_call_sets_up(x, p):
    if "velocity" not in p:
        p["velocity"] = np.zeros_like(x)
    p["velocity"] = 0.9 * p["velocity"] + x ** 2
    return np.sum(p["velocity"] * x)


@pytest.mark.parametrize("level", LEVELS)
def test_asking_for_a_key_sees_the_dict_as_it_is_then(level):
    x = np.array([0.3, 1.5, -0.7])
    _check(first_call_sets_up, (x, {}), level=level)
    _check(first_call_sets_up, (x, {"velocity": np.array([1.0, -2.0, 0.5])}), level=level)


# -- values the optimisations could reuse as buffers ------------------------------------------

def stored_then_used(x, p):
    h = np.tanh(x)
    p["h"] = h
    return np.sum(h * 3.0)


def stored_then_scaled(x, p):
    h = x * x
    p["h"] = h
    z = h * 2.0
    return np.sum(z * x)


def stored_sum(x, p):
    a = np.exp(x)
    b = a + 1.0
    p["b"] = b
    return np.sum(b * a)


def stored_number(x, p):
    s = np.sum(x ** 2)
    p["s"] = s
    return s * 2.0


@pytest.mark.parametrize("f", [stored_then_used, stored_then_scaled, stored_sum, stored_number])
@pytest.mark.parametrize("level", LEVELS)
def test_a_stored_array_is_never_a_buffer_the_gradient_writes_into(f, level):
    # 300 elements: above the size where optimize=2 computes results into a dead operand's memory
    x = np.random.default_rng(3).standard_normal(300) * 0.5
    _check(f, (x, {}), level=level)


# -- the tape: plain Python, as PyTorch ------------------------------------------------------------

def test_the_tape_writes_what_the_code_computes_and_agrees_with_the_generated_code():
    torch = pytest.importorskip("astgrad.torch")
    rng = np.random.default_rng(8)
    x, gamma, beta, dout = rng.standard_normal((6, 3)), rng.standard_normal(3), rng.standard_normal(3), \
        rng.standard_normal((6, 3))
    state = {"momentum": 0.8}
    dx = astgrad.grad(bn_step_loss)(x, gamma, beta, state, dout)

    taped = {"momentum": 0.8}
    xt = torch.tensor(x, requires_grad=True)
    momentum = taped.get("momentum", 0.9)
    mean = xt.mean(0)
    var = ((xt - mean) ** 2).mean(0)
    out = torch.tensor(gamma) * (xt - mean) / (var + 1e-5).sqrt() + torch.tensor(beta)
    with torch.no_grad():  # as PyTorch's BatchNorm updates its running statistics
        taped["running_mean"] = momentum * taped.get("running_mean", torch.zeros(3)) + (1 - momentum) * mean
        taped["running_var"] = momentum * taped.get("running_var", torch.zeros(3)) + (1 - momentum) * var
    (out * torch.tensor(dout)).sum().backward()
    assert not taped["running_mean"].requires_grad
    np.testing.assert_allclose(xt.grad.numpy(), dx, rtol=1e-10, atol=1e-12)
    for key in ("running_mean", "running_var"):
        np.testing.assert_allclose(taped[key].numpy(), state[key], rtol=1e-12, atol=1e-14)


def test_a_dict_holding_tensors_is_refused_before_anything_runs():
    # astgrad hands the generated code a new dict of the Tensors' arrays: a write would land there, not in yours
    torch = pytest.importorskip("astgrad.torch")
    state = {"h": torch.tensor([1.0, 2.0, 3.0])}
    with pytest.raises(TypeError, match="writes into the dict p, which holds Tensors"):
        astgrad.grad(read_back)(np.array([0.5, -1.0, 2.0]), state)
    assert list(state) == ["h"] and isinstance(state["h"], torch.Tensor)


@pytest.mark.parametrize("x", [np.arange(3), 2, 2.5, [1.0, 2.0], np.float32([1.0, 2.0])],
                         ids=["int array", "int", "float", "list", "float32"])
def test_what_is_stored_is_what_python_stores_whatever_the_argument(x):
    cache, plain = {}, {}
    stored(x, plain)
    astgrad.grad(stored)(x, cache)
    assert cache["x"] is x
    assert type(cache["y"]) is type(plain["y"]) and np.asarray(cache["y"]).dtype == np.asarray(plain["y"]).dtype
    np.testing.assert_array_equal(cache["y"], plain["y"])


def stored(x, cache):
    cache["x"] = x
    cache["y"] = x * 2
    return np.sum(np.sin(x))


def keyed_by_a_loop_variable(x, cache):
    for name in ("a", "b"):
        cache[name] = x * 2.0
    return np.sum(x)


def keyed_by_an_argument(x, cache, name):
    cache[name] = x * 2.0
    return np.sum(cache["a"] * x)


@pytest.mark.parametrize("f, args", [(keyed_by_a_loop_variable, (np.ones(3), {})),
                                     (keyed_by_an_argument, (np.ones(3), {"a": np.ones(3)}, "a"))])
def test_a_key_held_in_a_variable_is_refused_with_the_reason(f, args):
    # with name == "a" the read cache["a"] sees the written value: a key astgrad cannot tell from another
    before = copy.deepcopy(args[1])
    with pytest.raises(astgrad.TransformError, match=r"a key held in a variable \(name\) may be any key") as info:
        astgrad.grad(f)(*args)
    assert "cache[name] = x * 2.0" in str(info.value) and "write each key as a constant" in str(info.value)
    assert list(args[1]) == list(before)
