"""``torch.utils.checkpoint``: values, gradients, warnings and errors as PyTorch's, intermediates not kept.

Each scenario runs twice, once on real PyTorch and once on ``astgrad.torch``,
and the printed outcome (value, gradients, exception, warnings) must match;
gradients are also checked against the same code without checkpoint and
against central differences.
"""

import gc
import warnings
import weakref

import numpy as np
import pytest

import astgrad.torch as ag
from _taped import check_grad

real = pytest.importorskip("torch")

X = np.array([[0.3, -1.2, 0.7], [1.1, 0.4, -0.5]])
W = np.array([[0.2, -0.4], [0.9, 0.1], [-0.3, 0.6]])


def block(x, w):
    h = (x @ w).tanh()
    return (h * h).sin() + h


def _leaves(lib, dtype=None):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    w = lib.tensor(W, dtype=lib.float64, requires_grad=True)
    return x, w


def _outcome(lib, scenario):
    """What a scenario prints on ``lib``: its result or exception, then every warning raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = scenario(lib)
            shown = repr(np.round(np.asarray(result, dtype=float), 10).tolist()) if result is not None else "None"
        except Exception as error:  # the outcome compared is the exception itself
            shown = f"{type(error).__name__}: {error}"
    messages = [f"{w.category.__name__}: {w.message}" for w in caught if "create_graph" not in str(w.message)]
    return shown, messages


def _grads_of(lib, reentrant, **options):
    x, w = _leaves(lib)
    y = lib.utils.checkpoint.checkpoint(block, x, w, use_reentrant=reentrant, **options)
    (y * y).sum().backward()
    return np.concatenate([y.detach().numpy().ravel(), x.grad.numpy().ravel(), w.grad.numpy().ravel()])


def _closure_weight(lib, reentrant):
    """The weight is read from the enclosing scope, not passed: PyTorch's reentrant variant leaves it without grad."""
    x, w = _leaves(lib)
    y = lib.utils.checkpoint.checkpoint(lambda t: block(t, w), x.detach(), use_reentrant=reentrant)
    y.sum().backward()
    return w.grad.numpy().ravel()


def _twice(lib, reentrant, retain):
    x, w = _leaves(lib)
    y = lib.utils.checkpoint.checkpoint(block, x, w, use_reentrant=reentrant).sum()
    y.backward(retain_graph=retain)
    y.backward()
    return x.grad.numpy().ravel()


def _autograd_grad(lib, reentrant):
    x, w = _leaves(lib)
    y = lib.utils.checkpoint.checkpoint(block, x, w, use_reentrant=reentrant).sum()
    return lib.autograd.grad(y, w)[0].numpy().ravel()


def _backward_inputs(lib, reentrant):
    x, w = _leaves(lib)
    lib.utils.checkpoint.checkpoint(block, x, w, use_reentrant=reentrant).sum().backward(inputs=[w])
    return w.grad.numpy().ravel()


def _tuple_output(lib, reentrant):
    x, w = _leaves(lib)
    a, k, b = lib.utils.checkpoint.checkpoint(lambda s, v: (block(s, v), 5, s * 2), x, w, use_reentrant=reentrant)
    assert k == 5
    (a.sum() + (b * b).sum()).backward()
    return np.concatenate([x.grad.numpy().ravel(), w.grad.numpy().ravel()])


def _keywords(lib, reentrant):
    x, w = _leaves(lib)
    y = lib.utils.checkpoint.checkpoint(lambda s, scale=1.0: block(s, w) * scale, x, use_reentrant=reentrant,
                                        scale=3.0)
    y.sum().backward()
    return np.concatenate([x.grad.numpy().ravel(), w.grad.numpy().ravel()])


def _sequential(lib, reentrant, segments=2):
    lib.manual_seed(0)
    layers = [lambda t: t.tanh(), lambda t: t * 3, lambda t: t.sin(), lambda t: t.exp(), lambda t: t * t]
    x, _ = _leaves(lib)
    y = lib.utils.checkpoint.checkpoint_sequential(layers, segments, x, use_reentrant=reentrant)
    y.sum().backward()
    return x.grad.numpy().ravel()


def _second_derivative(lib, how):
    """A gradient taken with create_graph through the non-reentrant checkpoint, then differentiated again."""
    x, w = _leaves(lib)
    scaled = x * 1.5  # a non-leaf argument: the second pass must reach x through it
    if how == "arguments":
        y = lib.utils.checkpoint.checkpoint(block, scaled, w, use_reentrant=False)
    elif how == "closure weight":
        y = lib.utils.checkpoint.checkpoint(lambda t: block(t, w), scaled, use_reentrant=False)
    else:  # one tensor passed twice: each position's gradient, not their sum twice
        y = lib.utils.checkpoint.checkpoint(lambda a, b: (a @ b.T).sin() @ a, scaled, scaled, use_reentrant=False)
    gx, gw = lib.autograd.grad((y * y).sum(), (x, w), create_graph=True, allow_unused=True)
    gw = lib.zeros_like(w) if gw is None else gw
    ((gx * gx).sum() + (gw ** 3).sum()).backward()
    return np.concatenate([t.detach().numpy().ravel() for t in (gx, gw, x.grad)])


def _no_input_grad(lib, reentrant):
    x = lib.tensor(X)
    y = lib.utils.checkpoint.checkpoint(lambda t: t.sin(), x, use_reentrant=reentrant)
    return [float(y.requires_grad)]


SCENARIOS = {
    "reentrant not given": lambda lib: _grads_of(lib, None),
    "reentrant": lambda lib: _grads_of(lib, True),
    "non-reentrant": lambda lib: _grads_of(lib, False),
    "reentrant without rng state": lambda lib: _grads_of(lib, True, preserve_rng_state=False),
    "closure weight, reentrant": lambda lib: _closure_weight(lib, True),
    "closure weight, non-reentrant": lambda lib: _closure_weight(lib, False),
    "backward twice, reentrant": lambda lib: _twice(lib, True, False),
    "backward twice, non-reentrant": lambda lib: _twice(lib, False, False),
    "retained twice, reentrant": lambda lib: _twice(lib, True, True),
    "retained twice, non-reentrant": lambda lib: _twice(lib, False, True),
    "autograd.grad, reentrant": lambda lib: _autograd_grad(lib, True),
    "autograd.grad, non-reentrant": lambda lib: _autograd_grad(lib, False),
    "backward(inputs=), reentrant": lambda lib: _backward_inputs(lib, True),
    "backward(inputs=), non-reentrant": lambda lib: _backward_inputs(lib, False),
    "tuple with a number, reentrant": lambda lib: _tuple_output(lib, True),
    "tuple with a number, non-reentrant": lambda lib: _tuple_output(lib, False),
    "keywords, reentrant": lambda lib: _keywords(lib, True),
    "keywords, non-reentrant": lambda lib: _keywords(lib, False),
    "context_fn, reentrant": lambda lib: lib.utils.checkpoint.checkpoint(
        block, *_leaves(lib), use_reentrant=True, context_fn=lambda: None),
    "debug, reentrant": lambda lib: lib.utils.checkpoint.checkpoint(block, *_leaves(lib), use_reentrant=True,
                                                                     debug=True),
    "no input requires grad, reentrant": lambda lib: _no_input_grad(lib, True),
    "no input requires grad, non-reentrant": lambda lib: _no_input_grad(lib, False),
    "second derivative, non-reentrant": lambda lib: _second_derivative(lib, "arguments"),
    "second derivative, closure weight, non-reentrant": lambda lib: _second_derivative(lib, "closure weight"),
    "second derivative, one tensor twice, non-reentrant": lambda lib: _second_derivative(lib, "twice"),
    "sequential, reentrant not given": lambda lib: _sequential(lib, None),
    "sequential, non-reentrant": lambda lib: _sequential(lib, False, 3),
    "sequential, unknown keyword": lambda lib: lib.utils.checkpoint.checkpoint_sequential(
        [], 1, lib.ones(1), use_reentrant=False, foo=1),
    "sequential, no segment": lambda lib: _sequential(lib, False, 0),
    "sequential, more segments than functions": lambda lib: _sequential(lib, False, 9),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario_prints_what_pytorch_prints(name):
    assert _outcome(ag, SCENARIOS[name]) == _outcome(real, SCENARIOS[name])


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")  # the differences run under no_grad
@pytest.mark.parametrize("reentrant", [True, False])
def test_gradients_equal_the_unchecked_tape_and_finite_differences(reentrant):
    x, w = _leaves(ag)
    y = ag.utils.checkpoint.checkpoint(block, x, w, use_reentrant=reentrant)
    weight = np.linspace(-1, 1, 4).reshape(2, 2)
    (y * ag.tensor(weight)).sum().backward()
    x0, w0 = _leaves(ag)
    (block(x0, w0) * ag.tensor(weight)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), x0.grad.numpy(), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(w.grad.numpy(), w0.grad.numpy(), rtol=1e-13, atol=1e-15)
    check_grad(lambda a, b: ag.utils.checkpoint.checkpoint(block, a, b, use_reentrant=reentrant), X, W)


@pytest.mark.parametrize("reentrant", [True, False])
def test_a_modules_weights_get_the_unchecked_grad(reentrant):
    ag.manual_seed(3)
    layer = ag.nn.Linear(3, 2).double()
    x = ag.tensor(X, requires_grad=True)
    y = ag.utils.checkpoint.checkpoint(lambda t: layer(t).tanh(), x, use_reentrant=reentrant)
    (y * y).sum().backward()
    checked = [p.grad.numpy().copy() for p in layer.parameters()]
    layer.zero_grad()
    (layer(x).tanh() ** 2).sum().backward()
    for got, want in zip(checked, [p.grad.numpy() for p in layer.parameters()]):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("reentrant", [True, False])
@pytest.mark.parametrize("preserve", [True, False])
def test_random_draws_repeat_in_the_rerun_only_when_the_state_is_preserved(reentrant, preserve):
    x = ag.ones(3, dtype=ag.float64, requires_grad=True)
    ag.manual_seed(7)
    y = ag.utils.checkpoint.checkpoint(lambda t: t * ag.rand(3, dtype=ag.float64), x, use_reentrant=reentrant,
                                       preserve_rng_state=preserve)
    y.sum().backward()
    after = ag.rand(1).item()
    ag.manual_seed(7)
    draws = ag.rand(3, dtype=ag.float64).numpy()
    np.testing.assert_array_equal(y.detach().numpy(), draws)
    assert np.array_equal(x.grad.numpy(), draws) == preserve
    # preserved, the rerun leaves the generator where the forward left it: the next draw is the 4th
    assert (after == ag.rand(1).item()) == preserve


@pytest.mark.parametrize("reentrant", [True, False])
def test_intermediates_are_not_kept_after_the_call(reentrant, frozen_heap):
    kept = []

    def f(t):
        h = t.sin()
        kept.append(weakref.ref(h))
        return h * h

    x = ag.tensor(X, requires_grad=True)
    y = f(x)
    gc.collect()
    assert kept[-1]() is not None  # without checkpoint the product's node holds h
    y = ag.utils.checkpoint.checkpoint(f, x, use_reentrant=reentrant)
    gc.collect()
    assert kept[-1]() is None
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.sin(X) * np.cos(X), rtol=1e-14)


@pytest.mark.parametrize("reentrant", [True, False])
def test_an_input_written_before_backward_is_an_error_not_a_new_gradient(reentrant):
    x, w = _leaves(ag)
    a = x * 1.0
    y = ag.utils.checkpoint.checkpoint(block, a, w, use_reentrant=reentrant)
    with ag.no_grad():
        a.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_non_reentrant_refuses_a_non_leaf_it_reads_without_taking_it_as_argument():
    x, w = _leaves(ag)
    scale = w.sum()
    with pytest.raises(RuntimeError, match=r"checkpoint\(use_reentrant=False\): <lambda> reads a tensor .*SumBackward0"):
        ag.utils.checkpoint.checkpoint(lambda t: t * scale, x, use_reentrant=False)
    y = ag.utils.checkpoint.checkpoint(lambda t, s: t * s, x, scale, use_reentrant=False)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full(W.shape, X.sum()), rtol=1e-14)


@pytest.mark.parametrize("how", ["arguments", "closure weight", "twice"])
def test_second_derivative_equals_the_unchecked_tape(how):
    """The same second derivatives without checkpoint: the checkpoint changes what is kept, never a number."""

    def unchecked(lib):
        original = lib.utils.checkpoint.checkpoint
        lib.utils.checkpoint.checkpoint = lambda f, *args, use_reentrant: f(*args)
        try:
            return _second_derivative(lib, how)
        finally:
            lib.utils.checkpoint.checkpoint = original

    np.testing.assert_allclose(_second_derivative(ag, how), unchecked(ag), rtol=1e-12, atol=1e-14)


def test_rerun_that_changes_shape_is_an_error():
    calls = []

    def f(t):
        calls.append(1)
        return t[: len(calls)] * 2

    x = ag.ones(3, requires_grad=True)
    y = ag.utils.checkpoint.checkpoint(f, x, use_reentrant=False)
    with pytest.raises(ag.utils.checkpoint.CheckpointError, match="different metadata"):
        y.sum().backward()
