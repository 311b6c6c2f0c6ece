"""``torch.autograd.forward_ad`` on the tape: a dual tensor's tangent is the generated ``jvp`` and central differences.

Each function is plain numpy code: run on a dual tensor it goes through the
tape (numpy's protocols), transformed by ``astgrad.jvp`` it goes through
generated code, and both must agree with central differences of the
function on arrays.  The refusals pin what forward mode cannot make exact.
"""

import numpy as np
import pytest

import astgrad
import astgrad.torch as torch

fwAD = torch.autograd.forward_ad

RNG = np.random.default_rng(7)
W1 = RNG.normal(size=(4, 5))
B1 = RNG.normal(size=5)
W2 = RNG.normal(size=(5, 2))


def elementwise(x):
    return np.sin(x) * np.exp(x) + np.tanh(x) / (1.0 + x ** 2)


def total(x):
    return np.sum(x ** 3)


def mean_axis(x):
    return np.mean(np.log1p(x * x), axis=0)


def matmul(x):
    return x @ W1


def gram(x):
    return (x.T @ x).reshape(-1)


def slicing(x):
    return x[1:, ::2] * x[0, 0]


def fancy(x):
    return x[[0, 2, 2]] * 2.0


def softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


def mlp(x):
    return np.tanh(x @ W1 + B1) @ W2


def joined(x):
    return np.concatenate([x, x ** 2], axis=0)


def leaky(x):
    return np.where(x > 0, x, 0.1 * x)


def norm(x):
    return np.sqrt(np.sum(x * x))


def row_max(x):
    return np.max(x, axis=1)


FUNCTIONS = [elementwise, total, mean_axis, matmul, gram, slicing, fancy, softmax, mlp, joined, leaky, norm, row_max]


def central(f, x, v, eps=1e-6):
    """d/ds f(x + s v) at s = 0, element by element, by one central difference."""
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


def dual_tangent(f, x, v):
    with fwAD.dual_level():
        out = f(fwAD.make_dual(torch.tensor(x), torch.tensor(v)))
        primal, tangent = fwAD.unpack_dual(out)
        return primal.numpy(), tangent.numpy()


@pytest.mark.parametrize("f", FUNCTIONS, ids=[f.__name__ for f in FUNCTIONS])
def test_tangent_is_the_generated_jvp_and_central_differences(f):
    x = RNG.normal(size=(3, 4))
    v = RNG.normal(size=(3, 4))
    primal, tangent = dual_tangent(f, x, v)
    value, expected = astgrad.jvp(f)(x, v)
    np.testing.assert_allclose(primal, f(x), rtol=1e-12)
    np.testing.assert_allclose(tangent, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tangent, central(f, x, v), rtol=1e-6, atol=1e-7)


def two_inputs(x, y):
    return np.sum(np.sin(x) * y, axis=1) + x[:, 0] / (1.0 + y[:, 1] ** 2)


def test_two_dual_inputs_sum_their_tangents():
    x, y, u, v = (RNG.normal(size=(3, 4)) for _ in range(4))
    with fwAD.dual_level():
        out = two_inputs(fwAD.make_dual(torch.tensor(x), torch.tensor(u)),
                         fwAD.make_dual(torch.tensor(y), torch.tensor(v)))
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    _, expected = astgrad.jvp(two_inputs, wrt=(0, 1))(x, y, (u, v))
    np.testing.assert_allclose(tangent, expected, rtol=1e-10)
    moved = (two_inputs(x + 1e-6 * u, y + 1e-6 * v) - two_inputs(x - 1e-6 * u, y - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose(tangent, moved, rtol=1e-6, atol=1e-7)


def test_one_dual_input_beside_a_constant_tensor():
    x, y, u = (RNG.normal(size=(3, 4)) for _ in range(3))
    with fwAD.dual_level():
        out = two_inputs(fwAD.make_dual(torch.tensor(x), torch.tensor(u)), torch.tensor(y))
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(tangent, central(lambda a: two_inputs(a, y), x, u), rtol=1e-6, atol=1e-7)


def test_a_module_whose_parameters_require_grad():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    weights = [p.detach().numpy().astype(np.float64) for p in model.parameters()]

    def f(x):
        return np.tanh(x @ weights[0].T + weights[1]) @ weights[2].T + weights[3]

    x, v = RNG.normal(size=(3, 4)).astype(np.float32), RNG.normal(size=(3, 4)).astype(np.float32)
    with fwAD.dual_level():
        out = model(fwAD.make_dual(torch.tensor(x), torch.tensor(v)))
        primal, tangent = fwAD.unpack_dual(out)
    assert tangent.dtype == torch.float32 and primal.grad_fn is not None
    np.testing.assert_allclose(tangent.numpy(), central(f, x.astype(np.float64), v.astype(np.float64)),
                               rtol=1e-4, atol=1e-5)


def test_float32_tangents_stay_float32():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(3), torch.ones(3))
        assert fwAD.unpack_dual(d * 2.0 + np.float64(1.0)).tangent.dtype == torch.float32


def test_integer_and_bool_results_carry_no_tangent_and_rounding_a_zero_one():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.tensor([0.5, 2.5]), torch.ones(2))
        assert fwAD.unpack_dual(d.argmax()).tangent is None
        assert fwAD.unpack_dual(d > 1).tangent is None
        assert fwAD.unpack_dual(d.long()).tangent is None
        np.testing.assert_array_equal(fwAD.unpack_dual(torch.floor(d)).tangent.numpy(), [0.0, 0.0])


def test_tangents_are_dropped_when_the_level_ends():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(2), torch.ones(2))
        y = d * 3
    assert fwAD.unpack_dual(y).tangent is None and fwAD.unpack_dual(d).tangent is None
    with fwAD.dual_level():
        assert fwAD.unpack_dual(y).tangent is None  # a new level does not revive the old tangents


def test_tangent_is_the_given_tensor_and_primal_shares_storage():
    x, v = torch.ones(2), torch.tensor([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        primal, tangent = fwAD.unpack_dual(d)
        assert tangent is v and d is not x
        x[0] = 5.0
        assert primal[0].item() == 5.0 and d[0].item() == 5.0


def test_in_place_operations_with_tangents_are_refused():
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(3), torch.ones(3))
        for write in (lambda: d.mul_(2), lambda: d[0].add_(1), lambda: d.__setitem__(0, 1.0),
                      lambda: torch.zeros(3).add_(d), lambda: torch.zeros(3).__setitem__(slice(0, 3), d),
                      lambda: torch.zeros(3).fill_(d.sum())):
            with pytest.raises(RuntimeError, match="in-place operations on dual tensors"):
                write()
        np.testing.assert_array_equal(d.numpy(), [1.0, 1.0, 1.0])  # refused before writing
        plain = torch.zeros(3)
        plain.add_(1.0)  # in-place without tangents still works
        assert plain[0].item() == 1.0


def test_backward_inside_a_level_is_refused():
    w = torch.ones(2, requires_grad=True)
    with fwAD.dual_level():
        d = fwAD.make_dual(torch.ones(2), torch.ones(2))
        loss = (w * d).sum()
        with pytest.raises(RuntimeError, match="forward-over-reverse"):
            loss.backward()
        with pytest.raises(RuntimeError, match="forward-over-reverse"):
            torch.autograd.grad(loss, w)
    (w * 2).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_refusals_of_make_dual():
    with pytest.raises(RuntimeError, match="no level exists"):
        fwAD.make_dual(torch.ones(2), torch.ones(2))
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD"):
            with fwAD.dual_level():
                pass
        with pytest.raises(TypeError, match="tangent's dtype"):
            fwAD.make_dual(torch.ones(2), torch.ones(2, dtype=torch.float64))
        with pytest.raises(RuntimeError, match="requires grad"):
            fwAD.make_dual(torch.ones(2, requires_grad=True), torch.ones(2))
        d = fwAD.make_dual(torch.ones(2), torch.ones(2))
        with pytest.raises(RuntimeError, match="forward-over-forward"):
            fwAD.make_dual(torch.ones(2), d)


def test_a_custom_function_without_jvp_is_refused():
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level():
        with pytest.raises(NotImplementedError, match="implement the jvp function"):
            Double.apply(fwAD.make_dual(torch.ones(2), torch.ones(2)))
        assert Double.apply(torch.ones(2)).tolist() == [2.0, 2.0]


def test_a_loss_weight_with_a_tangent_is_refused():
    logits, target = torch.tensor([[0.2, -0.4], [1.0, 0.3]]), torch.tensor([1.0, 0.0]).reshape(2, 1).expand(2, 2)
    with fwAD.dual_level():
        weight = fwAD.make_dual(torch.ones(2), torch.ones(2))
        with pytest.raises(RuntimeError, match="weight= carries a tangent"):
            torch.nn.functional.binary_cross_entropy_with_logits(logits, target, weight=weight)
        with pytest.raises(RuntimeError, match="weight= carries a tangent"):
            torch.nn.functional.cross_entropy(logits, torch.tensor([1, 0]), weight=weight)
        loss = torch.nn.functional.cross_entropy(fwAD.make_dual(logits, torch.ones(2, 2)), torch.tensor([1, 0]))
        assert fwAD.unpack_dual(loss).tangent is not None


def test_threads_inside_one_level_keep_their_tangents():
    import threading

    x, v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    expected = central(mlp, x, v)
    results = []

    def work():
        for _ in range(20):
            out = mlp(fwAD.make_dual(torch.tensor(x), torch.tensor(v)))
            results.append(fwAD.unpack_dual(out).tangent)

    with fwAD.dual_level():
        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 80
    for tangent in results:
        assert tangent is not None
        np.testing.assert_allclose(tangent.numpy(), expected, rtol=1e-6, atol=1e-7)


def test_a_custom_function_with_jvp_gives_its_tangent():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return x ** 3

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return 3 * x ** 2 * t

        @staticmethod
        def backward(ctx, g):
            raise AssertionError("not called in forward mode")

    x, v = RNG.normal(size=4), RNG.normal(size=4)
    with fwAD.dual_level():
        out = Cube.apply(fwAD.make_dual(torch.tensor(x), torch.tensor(v))).sin()
        tangent = fwAD.unpack_dual(out).tangent.numpy()
    np.testing.assert_allclose(tangent, central(lambda a: np.sin(a ** 3), x, v), rtol=1e-6, atol=1e-7)

    class WrongShape(Cube):
        @staticmethod
        def jvp(ctx, t):
            return t.sum()

    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="tangent of output 0 has shape"):
            WrongShape.apply(fwAD.make_dual(torch.tensor(x), torch.tensor(v)))
