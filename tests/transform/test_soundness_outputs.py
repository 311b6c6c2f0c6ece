"""grad needs a scalar output; has_aux returns auxiliary data beside it.

The seed of ``grad`` is the number 1.0: on a vector output it broadcasts
(the gradient of the sum, silently), on a tuple, list or string it reaches
nothing (a zero gradient, silently).  Each such output must raise, whichever
way the check is made (statically skipped, a parameter's shape on entry, the
output's shape, the output's value), and has_aux must differentiate the loss
alone, against finite differences.
"""

import numpy as np
import pytest

import astgrad

from _numeric import numeric_grad

V = np.array([0.3, -1.2, 0.8])


def vector_out(x):
    return np.sin(x)                       # shape of the parameter x: checked on entry


def vector_from_reduction(x):
    return np.sum(x[None, :] * x[:, None], axis=0)  # an array made in the body: its shape is checked


def pair_out(x):
    return np.sum(x), 3                    # used to give a zero gradient


def list_out(x):
    return [np.sum(x * x)]


def string_out(x):
    return "loss"


def bool_out(x):
    return np.sum(x) > 0


def branchy(x, flag):
    if flag:
        y = np.sum(x)
    else:
        y = x * 2.0                        # a vector on this branch only
    return y


def one_element(x):
    return x[:1] * 3.0


def none_out(x):
    y = np.sum(x)
    return None


def none_through_a_copy(x):
    y = None
    z = y                                  # np.shape(None) is (): the value itself must be checked
    return z


@pytest.mark.parametrize("f, args, said", [
    (vector_out, (V,), "parameter x, which is (3,)"),
    (vector_from_reduction, (V,), "array of shape (3,)"),
    (pair_out, (V,), "a tuple of 2 items"),
    (list_out, (V,), "a list of 1 items"),
    (string_out, (V,), "a str"),
    (bool_out, (V,), "numpy.bool"),
    (branchy, (V, False), "array of shape (3,)"),
    (one_element, (V,), "(1,)"),
    (none_out, (V,), "NoneType"),
    (none_through_a_copy, (V,), "NoneType"),
])
@pytest.mark.parametrize("api", ["grad", "value_and_grad", "grad-preserve", "grad-keyword"])
def test_a_non_scalar_output_is_refused(f, args, said, api):
    if api == "grad":
        call = lambda: astgrad.grad(f)(*args)
    elif api == "value_and_grad":
        call = lambda: astgrad.value_and_grad(f)(*args)
    elif api == "grad-preserve":
        call = lambda: astgrad.grad(f, preserve_result=True)(*args)
    else:  # the general (not compiled) entry
        call = lambda: astgrad.grad(f)(*args[:-1], x=args[-1]) if len(args) == 1 else \
            astgrad.grad(f)(x=args[0], flag=args[1])
    with pytest.raises(TypeError, match="scalar output") as info:
        call()
    message = str(info.value)
    assert said in message and f.__name__ in message and "test_soundness_outputs.py" in message


def test_the_message_says_what_to_do():
    with pytest.raises(TypeError, match=r"use vjp, or reduce it, e\.g\. np\.sum"):
        astgrad.grad(vector_out)(V)
    with pytest.raises(TypeError, match="has_aux=True"):
        astgrad.grad(pair_out)(V)


def test_the_same_function_with_a_scalar_argument_is_fine():
    assert astgrad.grad(vector_out)(0.4) == pytest.approx(np.cos(0.4), rel=1e-12)
    assert astgrad.grad(branchy)(V, True) == pytest.approx(np.ones(3))
    assert astgrad.grad(branchy)(0.5, False) == pytest.approx(2.0)


@pytest.mark.parametrize("value", [2.0, 2, np.float32(2.0), np.array(2.0), np.float64(2.0)])
def test_scalar_kinds_are_accepted(value):
    def quartic(x):
        return x ** 4
    assert float(astgrad.grad(quartic)(value)) == pytest.approx(32.0)


def test_vjp_keeps_non_scalar_outputs():
    seed = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(astgrad.vjp(vector_out)(V, seed), seed * np.cos(V), rtol=1e-12)


def test_a_surely_scalar_output_costs_no_check():
    def loss(x):
        y = np.sin(x) * 2.0
        return np.mean(y * y) + 0.5 * float(np.sum(x))
    g = astgrad.grad(loss)
    assert "scalar_output(" not in g.source and "scalar_shape(" not in g.source
    np.testing.assert_allclose(g(V), numeric_grad(loss, [V], 0), rtol=1e-6)


def test_a_running_total_is_checked_by_its_parameter_shape_without_computing_it():
    def total(x, n):
        t = 0.0
        for _ in range(n):
            t = t + x * x
        return t
    g = astgrad.grad(total)
    assert g(0.5, 3) == pytest.approx(3.0)
    with pytest.raises(TypeError, match="parameter x"):
        g(V, 3)
    primal = g.source.split("grad of line")[0]
    assert "t = t + " not in primal


# -- has_aux ---------------------------------------------------------------

def model(w, x):
    pred = np.tanh(x * w)
    loss = np.sum((pred - 0.5) ** 2)
    return loss, (pred, w)


def model_loss(w, x):
    return model(w, x)[0]


def test_has_aux_differentiates_the_loss_alone():
    w, x = 0.7, V
    g, aux = astgrad.grad(model, has_aux=True)(w, x)
    assert g == pytest.approx(numeric_grad(model_loss, [w, x], 0), rel=1e-6)
    np.testing.assert_allclose(aux[0], np.tanh(x * w))
    assert aux[1] == w


def test_value_and_grad_with_has_aux_returns_the_pair_then_the_gradients():
    w, x = 0.7, V
    (loss, aux), (gw, gx) = astgrad.value_and_grad(model, wrt=(0, 1), has_aux=True)(w, x)
    assert loss == pytest.approx(model_loss(w, x), rel=1e-12)
    np.testing.assert_allclose(aux[0], np.tanh(x * w))
    assert gw == pytest.approx(numeric_grad(model_loss, [w, x], 0), rel=1e-6)
    np.testing.assert_allclose(gx, numeric_grad(model_loss, [w, x], 1), rtol=1e-6)


def test_has_aux_through_the_general_entry():
    (loss, aux), gw = astgrad.value_and_grad(model, has_aux=True)(w=0.7, x=V)
    assert gw == pytest.approx(numeric_grad(model_loss, [0.7, V], 0), rel=1e-6)


def aux_depends_on_x(x):
    return np.sum(x * x), x * 100.0       # aux must not add to the gradient


def test_aux_is_not_differentiated():
    g, aux = astgrad.grad(aux_depends_on_x, has_aux=True)(V)
    np.testing.assert_allclose(g, 2 * V, rtol=1e-12)
    np.testing.assert_allclose(aux, V * 100.0)


def pair_in_a_name(x):
    out = (np.sum(np.exp(x)), "tag")
    return out


def test_has_aux_with_the_pair_built_earlier():
    g, aux = astgrad.grad(pair_in_a_name, has_aux=True)(V)
    np.testing.assert_allclose(g, np.exp(V), rtol=1e-12)
    assert aux == "tag"


def test_has_aux_needs_a_pair():
    with pytest.raises(TypeError, match=r"pair \(loss, aux\).*numpy.float64"):
        astgrad.grad(model_loss, has_aux=True)(0.7, V)
    with pytest.raises(TypeError, match=r"pair \(loss, aux\).*tuple of 3"):
        astgrad.grad(lambda x: (np.sum(x), 1, 2), has_aux=True)(V)


def test_has_aux_needs_a_scalar_loss():
    with pytest.raises(TypeError, match="scalar output"):
        astgrad.grad(lambda x: (x * 2.0, 1), has_aux=True)(V)


def test_has_aux_with_preserve_result_is_refused():
    with pytest.raises(ValueError, match="value_and_grad"):
        astgrad.grad(model, has_aux=True, preserve_result=True)


def test_has_aux_as_a_decorator():
    @astgrad.grad(has_aux=True)
    def f(x):
        return x ** 3, "aux"
    assert f(2.0) == (pytest.approx(12.0), "aux")


def aux_per_branch(x, flag):
    if flag:
        return np.sum(x), "sum"
    return np.sum(x * x), "squares"


def test_has_aux_with_a_return_per_branch():
    x = np.array([1.0, -2.0])
    assert astgrad.grad(aux_per_branch, has_aux=True)(x, True)[1] == "sum"
    g, aux = astgrad.grad(aux_per_branch, has_aux=True)(x, False)
    np.testing.assert_allclose(g, 2 * x, rtol=1e-12)
    assert aux == "squares"
