"""``torch.func`` on the tape against astgrad's generated transformations and central differences.

The same numpy function runs three ways: through the tape's ``torch.func``
(numpy's functions dispatch to the tape on Tensors), through the generated
``astgrad.grad``/``jacobian``/``jacfwd``/``hessian``/``jvp``/``vjp``/``hvp``,
and through central differences.  Then what the tape's ``vmap`` loops
cannot reproduce is refused, per-example gradients match a Python loop,
nested levels keep their inputs apart, and ``functional_call`` puts the
parameters back.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch
from _numeric import directional, gradient, numeric_grad

F = torch.func
X = np.array([0.3, -0.7, 1.2])
Y = np.array([1.1, 0.4, -0.5])
V = np.array([0.5, -1.0, 2.0])


def scalar_fn(x, y):
    return np.sum(np.sin(x) * y + np.exp(x * y) / (1.0 + x ** 2))


def vector_fn(x):
    return np.tanh(np.dot(np.outer(x, x), x)) * x


def pair_fn(x, y):
    return np.sin(x) * np.cos(y) + x * y ** 2


def _t(a):
    return torch.tensor(a)


def _close(taped, expected, rtol=1e-7, atol=1e-9):
    np.testing.assert_allclose(taped.numpy(), expected, rtol=rtol, atol=atol)


def _numeric_jacobian(f, x):
    """Row k: the central-difference gradient of output element k."""
    out = np.asarray(f(x))
    rows = [gradient(lambda z, k=k: np.asarray(f(z)).reshape(-1)[k], x) for k in range(out.size)]
    return np.array(rows).reshape(out.shape + np.shape(x))


# --------------------------------------------------- the tape against the generated engine


def test_grad_matches_the_generated_gradient_and_differences():
    taped = F.grad(scalar_fn, argnums=(0, 1))(_t(X), _t(Y))
    generated = astgrad.grad(scalar_fn, wrt=(0, 1))(X, Y)
    for i, (t, g) in enumerate(zip(taped, generated)):
        _close(t, g)
        np.testing.assert_allclose(g, numeric_grad(scalar_fn, (X, Y), i), rtol=1e-6, atol=1e-8)


def test_grad_and_value_gives_the_value_the_function_gives():
    gradient_value, value = F.grad_and_value(scalar_fn)(_t(X), _t(Y))
    _close(gradient_value, astgrad.grad(scalar_fn)(X, Y))
    assert value.item() == pytest.approx(scalar_fn(X, Y), rel=1e-12)


@pytest.mark.parametrize("taped", [F.jacrev, F.jacfwd])
@pytest.mark.parametrize("generated", [astgrad.jacobian, astgrad.jacfwd])
def test_jacobians_match_the_generated_jacobians_and_differences(taped, generated):
    jac = taped(vector_fn)(_t(X))
    expected = generated(vector_fn)(X)
    assert jac.shape == expected.shape == (3, 3)
    _close(jac, expected)
    np.testing.assert_allclose(expected, _numeric_jacobian(vector_fn, X), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("taped", [F.jacrev, F.jacfwd])
def test_jacobian_blocks_of_two_arguments(taped):
    blocks = taped(pair_fn, argnums=(0, 1))(_t(X), _t(Y))
    generated = astgrad.jacobian(pair_fn, wrt=(0, 1))(X, Y)
    assert isinstance(blocks, tuple) and len(blocks) == 2
    for t, g in zip(blocks, generated):
        _close(t, g)
    np.testing.assert_allclose(generated[1], _numeric_jacobian(lambda y: pair_fn(X, y), Y), rtol=1e-6, atol=1e-8)


def test_hessian_matches_the_generated_hessian_and_differences_of_the_gradient():
    taped = F.hessian(scalar_fn)(_t(X), _t(Y))
    generated = astgrad.hessian(scalar_fn)(X, Y)
    _close(taped, generated)
    numeric = _numeric_jacobian(lambda x: astgrad.grad(scalar_fn)(x, Y), X)
    np.testing.assert_allclose(generated, numeric, rtol=1e-6, atol=1e-8)


def test_hessian_blocks_of_two_arguments():
    taped = F.hessian(scalar_fn, argnums=(0, 1))(_t(X), _t(Y))
    generated = astgrad.hessian(scalar_fn, wrt=(0, 1))(X, Y)
    for i in range(2):
        for j in range(2):
            _close(taped[i][j], generated[i][j])


def test_jvp_matches_the_generated_jvp_and_a_directional_difference():
    value, tangent = F.jvp(vector_fn, (_t(X),), (_t(V),))
    generated_value, generated_tangent = astgrad.jvp(vector_fn)(X, V)
    _close(value, generated_value)
    _close(tangent, generated_tangent)
    for k in range(3):
        numeric = directional(lambda x, k=k: vector_fn(x)[k], X, V)
        assert generated_tangent[k] == pytest.approx(numeric, rel=1e-6, abs=1e-8)


def test_vjp_matches_the_generated_vjp():
    value, vjp_fn = F.vjp(pair_fn, _t(X), _t(Y))
    grads = vjp_fn(_t(V))
    generated = astgrad.vjp(pair_fn, wrt=(0, 1))(X, Y, V)
    _close(value, pair_fn(X, Y))
    for t, g in zip(grads, generated):
        _close(t, g)
    np.testing.assert_allclose(generated[0], numeric_grad(lambda x, y: pair_fn(x, y) * V, (X, Y), 0), rtol=1e-6)


def test_a_tangent_of_another_dtype_is_refused_not_computed_in_the_primals():
    with pytest.raises(TypeError, match="tangent.to"):
        F.jvp(torch.sin, (torch.ones(3),), (torch.ones(3, dtype=torch.float64),))


def test_jvp_of_grad_is_the_generated_hessian_vector_product():
    _, hv = F.jvp(F.grad(scalar_fn), (_t(X), _t(Y)), (_t(V), torch.zeros(3, dtype=torch.float64)))
    _close(hv, astgrad.hvp(scalar_fn)(X, Y, V))


# ----------------------------------------------------------------------- levels


def test_a_nested_gradient_does_not_confuse_the_levels():
    # d/dx [x * d/dy (x * y)] = d/dx x**2 = 2x: the inner level's y is not the outer x
    def outer(x):
        return x * F.grad(lambda y: x * y)(torch.tensor(1.5, dtype=torch.float64))

    assert F.grad(outer)(torch.tensor(0.8, dtype=torch.float64)).item() == pytest.approx(1.6, rel=1e-12)


def test_one_tensor_given_twice_is_two_inputs_and_a_captured_one_is_a_constant():
    x = _t(X)
    d_a, d_b = F.grad(lambda a, b: (a ** 2 * b).sum(), argnums=(0, 1))(x, x)
    _close(d_a, 2 * X * X)
    _close(d_b, X ** 2)
    _close(F.grad(lambda a: (a * x).sum())(x), X)  # the captured x does not move with the argument
    _, tangent = F.jvp(lambda a, b: a * b, (x, x), (_t(V), _t(Y)))
    _close(tangent, V * X + X * Y)
    _, vjp_fn = F.vjp(lambda d: d["p"] * d["q"] ** 2, {"p": x, "q": x})
    (grads,) = vjp_fn(_t(V))
    _close(grads["p"], V * X ** 2)
    _close(grads["q"], 2 * V * X * X)


def test_a_gradient_stays_differentiable_with_respect_to_a_captured_tensor():
    w = _t(Y).requires_grad_()
    g = F.grad(lambda x: scalar_fn(x, w))(_t(X))
    (d_w,) = torch.autograd.grad(g.sum(), w)
    numeric = gradient(lambda y: np.sum(astgrad.grad(scalar_fn)(X, y)), Y)
    np.testing.assert_allclose(d_w.numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_third_derivative_through_grad_of_hessian():
    third = F.grad(lambda x: F.hessian(lambda z: (z ** 4).sum())(x).sum())(_t(X))
    _close(third, 24 * X)


def test_a_backward_that_leaves_the_tape_is_refused_by_forward_products():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return torch.tensor(g.detach().numpy() * 3 * x.detach().numpy() ** 2)

    _close(F.jacrev(Cube.apply)(_t(X)), np.diag(3 * X ** 2))  # reverse mode needs no derivative of the backward
    for forward in (lambda: F.jvp(Cube.apply, (_t(X),), (_t(V),)), lambda: F.jacfwd(Cube.apply)(_t(X)),
                    lambda: torch.autograd.functional.jvp(Cube.apply, _t(X), _t(V))):
        with pytest.raises(RuntimeError, match="without a history"):
            forward()


def test_a_once_differentiable_backward_gives_first_derivatives_and_refuses_second_ones():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return torch.tensor(g.numpy() * 3 * x.numpy() ** 2)

    def f(x):
        return Cube.apply(x).sum()

    _close(F.grad(f)(_t(X)), 3 * X ** 2)  # nothing outside needs a graph: none is asked of the backward
    _close(F.vjp(Cube.apply, _t(X))[1](_t(V))[0], 3 * X ** 2 * V)
    _close(F.jacrev(Cube.apply)(_t(X)), np.diag(3 * X ** 2))
    with pytest.raises(RuntimeError, match="once_differentiable"):
        F.hessian(f)(_t(X))
    with pytest.raises(RuntimeError, match="once_differentiable"):
        F.grad(F.grad(lambda x: Cube.apply(x)))(torch.tensor(0.5, dtype=torch.float64))


# ------------------------------------------------------------------------ vmap


def _mlp_and_weights():
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 1)).double()
    return model, {k: p.detach() for k, p in model.named_parameters()}


def _loss(model):
    def loss(weights, x, y):
        out = F.functional_call(model, weights, (x.unsqueeze(0),))
        return ((out.squeeze() - y) ** 2)
    return loss


def test_per_example_gradients_match_a_loop_and_differences():
    model, weights = _mlp_and_weights()
    rng = np.random.default_rng(0)
    xs, ys = _t(rng.normal(size=(4, 3))), _t(rng.normal(size=4))
    loss = _loss(model)
    batched = F.vmap(F.grad(loss), in_dims=(None, 0, 0))(weights, xs, ys)
    for name, w in weights.items():
        assert batched[name].shape == (4,) + w.shape
    for i in range(4):
        one = F.grad(loss)(weights, xs[i], ys[i])
        for name in weights:
            _close(batched[name][i], one[name].numpy(), rtol=0, atol=0)
    numeric = gradient(lambda b: loss(dict(weights, **{"2.bias": _t(b)}), xs[2], ys[2]).item(),
                       weights["2.bias"].numpy())
    np.testing.assert_allclose(batched["2.bias"][2].numpy(), numeric, rtol=1e-6, atol=1e-8)


def test_vmap_over_a_gradient_matches_the_generated_gradient_per_row():
    rows = np.stack([X, Y, V])
    taped = F.vmap(F.grad(scalar_fn), in_dims=(0, None))(_t(rows), _t(Y))
    for k in range(3):
        _close(taped[k], astgrad.grad(scalar_fn)(rows[k], Y))


def test_a_write_into_a_captured_tensor_is_refused_and_leaves_it_unchanged():
    counter = torch.zeros(3)

    def count(a):
        counter.add_(1.0)  # PyTorch adds once; a loop would add once per example
        return a

    with pytest.raises(RuntimeError, match="once per example"):
        F.vmap(count)(torch.ones(4, 3))
    assert counter.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("write", [lambda a, c: c.__setitem__(0, a[0]), lambda a, c: c.mul_(2),
                                   lambda a, c: a.add_(1), lambda a, c: a[1:].zero_(),
                                   lambda a, c: setattr(c, "data", a), lambda a, c: c.masked_fill_(a > 0, 2.0)])
def test_writes_into_captured_tensors_or_the_mapped_input_are_refused(write):
    captured = torch.ones(3)
    with pytest.raises(RuntimeError, match="once per example"):
        F.vmap(lambda a: write(a, captured) and a)(torch.ones(2, 3))


def test_writes_into_tensors_the_example_makes_are_allowed():
    def f(a):
        out = torch.zeros(3)
        out[0] = a[1]
        h = a * 2
        h.add_(1)
        return out + h

    rows = torch.tensor([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])
    expected = np.stack([np.array([r[1], 0, 0]) + 2 * r + 1 for r in rows.numpy()])
    _close(F.vmap(f)(rows), expected)


def test_randomness_same_gives_every_example_the_same_draws_and_different_does_not():
    torch.manual_seed(0)
    same = F.vmap(lambda a: a + torch.rand(3), randomness="same")(torch.zeros(4, 3))
    assert all(np.array_equal(same[0].numpy(), same[k].numpy()) for k in range(4))
    different = F.vmap(lambda a: a + torch.rand(3), randomness="different")(torch.zeros(4, 3))
    assert not np.array_equal(different[0].numpy(), different[1].numpy())
    with pytest.raises(RuntimeError, match="randomness error mode"):
        F.vmap(lambda a: a * torch.nn.functional.dropout(a, 0.5))(torch.ones(2, 3))
    with pytest.raises(NotImplementedError, match="randomness='different'"):
        F.jacfwd(torch.sin, randomness="different")


def test_item_and_control_flow_on_an_example_work_in_the_loop():
    def f(a):
        return a * 2 if a.sum().item() > 0 else -a

    _close(F.vmap(f)(torch.tensor([[1.0, 2.0], [-1.0, -2.0]])), np.array([[2.0, 4.0], [1.0, 2.0]]))


def test_vmap_of_an_empty_batch_is_refused():
    with pytest.raises(ValueError, match="batch of size 0"):
        F.vmap(torch.sin)(torch.ones(0, 3))


# -------------------------------------------------------------- functional_call


def test_functional_call_puts_the_parameters_back_even_when_the_call_raises():
    model = torch.nn.Linear(3, 2)
    before = dict(model.named_parameters())

    class Boom(Exception):
        pass

    def forward(input):
        raise Boom

    model.forward = forward
    with pytest.raises(Boom):
        F.functional_call(model, {"weight": torch.ones(2, 3), "bias": torch.zeros(2)}, (torch.ones(3),))
    assert all(p is before[k] for k, p in model.named_parameters())


def test_gradient_with_respect_to_swapped_parameters_matches_differences():
    model, weights = _mlp_and_weights()
    x, y = _t(X), torch.tensor(0.3, dtype=torch.float64)
    grads = F.grad(_loss(model))(weights, x, y)
    for name in ("0.weight", "2.bias"):
        numeric = gradient(lambda w, name=name: _loss(model)(dict(weights, **{name: _t(w)}), x, y).item(),
                           weights[name].numpy())
        np.testing.assert_allclose(grads[name].numpy(), numeric, rtol=1e-6, atol=1e-8)
    assert all(p.grad is None for p in model.parameters())  # the module's own parameters took no part
