"""``out, vjp_fn = astgrad.vjp(f, *primals)``: the pullback at one point, reused for many cotangents.

Each ``vjp_fn(ct)`` must be ``ct`` times f's Jacobian at the primals vjp was
given: against central finite differences of ``sum(f * ct)``, against the
generated ``vjp(f, wrt=...)`` that reruns f, and against JAX where the venv
has it.  The adversarial cases first: a second call, cotangents of other
shapes, writes into the primals, into ``out``, into the cotangent and into a
global the function reads, all after ``vjp`` returned.
"""

import numpy as np
import pytest

import astgrad
from _numeric import numeric_grad, tree_gradient

X = np.array([0.3, -0.2, 0.5])
W = np.array([[0.4, -1.1, 0.7], [0.2, 0.9, -0.3]])
GLOBAL_SCALE = np.array([1.5, -0.5])


def layer(x, w):
    return np.tanh(w @ x)


def looped(x, w):
    y = layer(x, w)
    s = 0.0
    for i in range(3):
        s = s + y * x[i]
    return np.sin(s) * 2


def writes_its_copy(x):
    y = x * 2
    y[0] = 5.0
    return y * x


def returns_its_argument(x):
    return x


def scaled_by_global(x, w):
    return GLOBAL_SCALE * (w @ x)


def pair(x, y):
    return x * y, np.sin(x)


def with_aux(x):
    return np.sin(x) * 3, {"norm": float(np.sum(x * x))}


def of_a_dict(params, x):
    return np.tanh(params["w"] @ x + params["b"])


def grows_a_list(x):
    ys = []
    for i in range(3):
        ys.append(np.sin(x) * i)
    total = ys[0]
    for y in ys:
        total = total + y * x
    return total


def expected_vjp(f, args, cotangent):
    """Central differences of ``sum(f(*args) * cotangent)`` with respect to each argument."""
    return tuple(numeric_grad(lambda *a: np.sum(f(*a) * cotangent), args, i) for i in range(len(args)))


def assert_cotangents(got, expected, rtol=1e-6, atol=1e-8):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert np.shape(g) == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def test_the_second_call_gives_the_second_cotangents_product():
    out, vjp_fn = astgrad.vjp(looped, X, W)
    np.testing.assert_allclose(out, looped(X, W))
    for ct in (np.array([1.0, 0.0]), np.array([0.3, -2.0]), np.array([1.0, 0.0])):
        assert_cotangents(vjp_fn(ct), expected_vjp(looped, (X, W), ct))


def test_a_list_the_backward_half_pops_from_is_whole_again_at_the_next_call():
    _, vjp_fn = astgrad.vjp(grows_a_list, X)
    for ct in (np.array([1.0, 2.0, 0.5]), np.array([-1.0, 0.0, 3.0]), np.array([1.0, 2.0, 0.5])):
        assert_cotangents(vjp_fn(ct), expected_vjp(grows_a_list, (X,), ct))


def test_it_agrees_with_the_generated_vjp_that_reruns_f():
    _, vjp_fn = astgrad.vjp(looped, X, W)
    rerun = astgrad.vjp(looped, wrt=(0, 1))
    for seed in range(4):
        ct = np.random.default_rng(seed).normal(size=2)
        for a, b in zip(vjp_fn(ct), rerun(X, W, ct)):
            np.testing.assert_allclose(a, b, rtol=1e-12)


def test_a_cotangent_of_another_shape_is_refused_not_broadcast():
    _, vjp_fn = astgrad.vjp(looped, X, W)
    for ct in (np.ones(1), np.ones((2, 2)), 1.0, np.ones(3)):
        with pytest.raises(ValueError, match="cotangent has shape"):
            vjp_fn(ct)
    assert_cotangents(vjp_fn(np.ones(2)), expected_vjp(looped, (X, W), np.ones(2)))  # still the pullback


def test_writes_into_the_primals_after_vjp_change_nothing():
    x, w = X.copy(), W.copy()
    _, vjp_fn = astgrad.vjp(looped, x, w)
    x[:] = 7.0
    w *= -3.0
    assert_cotangents(vjp_fn(np.array([0.5, 1.0])), expected_vjp(looped, (X, W), np.array([0.5, 1.0])))


def test_writes_into_out_change_nothing():
    x = X.copy()
    out, vjp_fn = astgrad.vjp(returns_its_argument, x)
    out[:] = 100.0
    x[:] = -1.0
    assert_cotangents(vjp_fn(np.array([1.0, 2.0, 3.0])), (np.array([1.0, 2.0, 3.0]),))
    out, vjp_fn = astgrad.vjp(writes_its_copy, X)
    out[:] = 0.0
    ct = np.array([1.0, -1.0, 2.0])
    assert_cotangents(vjp_fn(ct), expected_vjp(writes_its_copy, (X,), ct))


def test_the_cotangent_given_is_not_written_into():
    _, vjp_fn = astgrad.vjp(writes_its_copy, X)
    ct = np.array([1.0, -1.0, 2.0])
    first = vjp_fn(ct)
    np.testing.assert_array_equal(ct, [1.0, -1.0, 2.0])
    assert_cotangents(vjp_fn(ct), first, rtol=0, atol=0)


def test_a_global_changed_after_vjp_is_refused():
    global GLOBAL_SCALE
    saved = GLOBAL_SCALE
    _, vjp_fn = astgrad.vjp(scaled_by_global, X, W)
    ct = np.array([1.0, 2.0])
    assert_cotangents(vjp_fn(ct), expected_vjp(scaled_by_global, (X, W), ct))
    try:
        GLOBAL_SCALE[0] = 9.0  # written in place
        with pytest.raises(RuntimeError, match="changed since vjp ran it"):
            vjp_fn(ct)
        GLOBAL_SCALE[0] = 1.5
        assert_cotangents(vjp_fn(ct), expected_vjp(scaled_by_global, (X, W), ct))
        GLOBAL_SCALE = np.array([1.5, -0.5])  # rebound, equal values: not the array vjp read
        with pytest.raises(RuntimeError, match="changed since vjp ran it"):
            vjp_fn(ct)
    finally:
        GLOBAL_SCALE = saved


def test_tuple_outputs_take_a_tuple_cotangent():
    y = X + 1.0
    out, vjp_fn = astgrad.vjp(pair, X, y)
    np.testing.assert_allclose(out[0], X * y)
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 0.0])
    expected = tuple(numeric_grad(lambda x_, y_: np.sum(pair(x_, y_)[0] * a) + np.sum(pair(x_, y_)[1] * b),
                                  (X, y), i) for i in range(2))
    assert_cotangents(vjp_fn((a, b)), expected)
    with pytest.raises(ValueError, match="structure"):
        vjp_fn(a)


def test_has_aux_returns_the_aux_and_differentiates_the_output_only():
    out, vjp_fn, aux = astgrad.vjp(with_aux, X, has_aux=True)
    np.testing.assert_allclose(out, 3 * np.sin(X))
    assert aux == {"norm": pytest.approx(float(np.sum(X * X)))}
    ct = np.array([0.2, 1.0, -1.0])
    assert_cotangents(vjp_fn(ct), expected_vjp(lambda x: with_aux(x)[0], (X,), ct))


def test_pytree_primals_get_cotangents_of_their_structure():
    params = {"w": W.copy(), "b": np.array([0.1, -0.2])}
    _, vjp_fn = astgrad.vjp(of_a_dict, params, X)
    ct = np.array([1.0, -2.0])
    got_params, got_x = vjp_fn(ct)
    expected = tree_gradient(lambda p: float(np.sum(of_a_dict(p, X) * ct)), params)
    assert set(got_params) == {"w", "b"}
    for key in params:
        np.testing.assert_allclose(got_params[key], expected[key], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(got_x, numeric_grad(lambda x: np.sum(of_a_dict(params, x) * ct), (X,), 0),
                               rtol=1e-6, atol=1e-8)
    params["w"][:] = 0.0  # written after vjp: the pullback stays at the point given
    np.testing.assert_allclose(vjp_fn(ct)[0]["w"], expected["w"], rtol=1e-6, atol=1e-8)


def test_a_number_primal_gets_a_number_back():
    out, vjp_fn = astgrad.vjp(lambda t: np.sin(t) * t, 0.7)
    (g,) = vjp_fn(2.0)
    assert type(g) is float
    assert g == pytest.approx(2.0 * (np.cos(0.7) * 0.7 + np.sin(0.7)))


def test_a_generated_gradient_gets_a_pullback_that_reruns_it():
    def loss(x):
        return np.sum(np.sin(x) ** 2)

    _, vjp_fn = astgrad.vjp(astgrad.grad(loss), X)
    ct = np.array([1.0, 0.0, -1.0])
    assert_cotangents(vjp_fn(ct), expected_vjp(astgrad.grad(loss), (X,), ct), rtol=1e-5)


def sin_times_square(x):
    return np.sin(x) * x ** 2


def recurrence(x, a):
    for _ in range(6):
        x = np.sin(x) * a + x * 0.5
    return x


def recursive(x, n):
    if n == 0:
        return W @ x
    return recursive(np.sin(x) * 2.0, n - 1) * 1.5


def recursive_without_a_gradient_inside(x, n):
    if n == 0:
        return W @ x
    y = recursive_without_a_gradient_inside(x * 2.0, n - 1)  # its callers' seed for it is 0.0
    return (W @ np.sin(x)) * np.sign(y)


def mean_scaled(x):
    return np.mean(np.sin(x)) * x


def aux_of_the_output(x):
    y = np.sin(x)
    return y * 2, [y, 3]


def test_each_pullback_serves_the_ranks_and_dtypes_it_was_made_for():
    # the pullback is specialised for its primals (ranks, real floats): one made for other primals must
    # never serve these, in any order of calls
    for x in (np.array([1.0, 2.0, 3.0]), 0.7, np.array([1, 2, 3]), np.array([[1.0, -2.0]]), np.float32(0.7),
              0.7, np.array([1.0, 2.0, 3.0])):
        out, vjp_fn = astgrad.vjp(sin_times_square, x)
        ct = np.full(np.shape(out), 2.0)
        (g,) = vjp_fn(ct)
        x64 = np.asarray(x, dtype=np.float64)
        np.testing.assert_allclose(g, ct * (np.cos(x64) * x64 ** 2 + 2 * x64 * np.sin(x64)), rtol=1e-6)
        assert np.shape(g) == np.shape(x)
    for x in (X, np.array([[0.3, 1.0], [-0.2, 2.0], [0.5, 0.1]]), X):  # the matrix rule's form is the ranks'
        _, vjp_fn = astgrad.vjp(layer, x, W)
        ct = np.ones(np.shape(layer(x, W)))
        assert_cotangents(vjp_fn(ct), expected_vjp(layer, (x, W), ct))


def test_past_the_limit_of_variants_one_pullback_serves_any_ranks(monkeypatch):
    from astgrad.api import gradient

    monkeypatch.setattr(gradient, "_MAX_SIGNATURES", 1)

    def f(x):
        return np.cos(x) * x

    for x in (np.array([0.5, 1.0]), 0.5, np.array([[0.5], [1.0]]), 0.25):
        out, vjp_fn = astgrad.vjp(f, x)
        ct = np.ones(np.shape(out)) * 3.0
        np.testing.assert_allclose(vjp_fn(ct)[0], ct * (np.cos(x) - x * np.sin(x)), rtol=1e-12)
    assert "for a" not in vjp_fn.source  # the general pullback


def test_a_recursive_function_gets_a_callee_pair_of_its_own_for_the_inner_calls():
    out, vjp_fn = astgrad.vjp(recursive, X, 3)
    np.testing.assert_allclose(out, recursive(X, 3))
    for ct in (np.array([1.0, 2.0]), np.array([0.0, -1.0])):
        (gx, gn) = vjp_fn(ct)
        np.testing.assert_allclose(gx, numeric_grad(lambda x: np.sum(recursive(x, 3) * ct), (X,), 0), rtol=1e-6)
        assert gn == 0.0
    f = recursive_without_a_gradient_inside
    _, vjp_fn = astgrad.vjp(f, X, 2)
    ct = np.array([1.0, 2.0])
    np.testing.assert_allclose(vjp_fn(ct)[0], numeric_grad(lambda x: np.sum(f(x, 2) * ct), (X,), 0), rtol=1e-6)


def test_zero_cotangents_give_zero_cotangents_of_the_primals_shapes():
    # a callee's backward half takes 0.0 for zeros of any shape; the pullback's seed is the user's cotangent,
    # of the output's shape (a 0.0 only for a number)
    _, vjp_fn = astgrad.vjp(lambda x, w: np.sum(np.tanh(w @ x)), X, W)
    for zero in (0.0, 0, np.float64(0.0)):
        gx, gw = vjp_fn(zero)
        np.testing.assert_array_equal(gx, np.zeros(3))
        np.testing.assert_array_equal(gw, np.zeros((2, 3)))
    _, vjp_fn = astgrad.vjp(looped, X, W)
    gx, gw = vjp_fn(np.zeros(2))
    np.testing.assert_array_equal(gx, np.zeros(3))
    np.testing.assert_array_equal(gw, np.zeros((2, 3)))


def test_a_mean_seeds_a_number_that_the_backward_half_spreads():
    _, vjp_fn = astgrad.vjp(mean_scaled, X)
    for ct in (np.array([1.0, -2.0, 0.5]), np.ones(3)):
        assert_cotangents(vjp_fn(ct), expected_vjp(mean_scaled, (X,), ct))


def test_has_aux_gives_no_cotangent_to_an_aux_computed_from_the_output():
    out, vjp_fn, aux = astgrad.vjp(aux_of_the_output, X, has_aux=True)
    np.testing.assert_allclose(aux[0], np.sin(X))
    ct = np.array([1.0, 0.5, -2.0])
    assert_cotangents(vjp_fn(ct), expected_vjp(lambda x: aux_of_the_output(x)[0], (X,), ct))
    with pytest.raises(TypeError, match="return a pair"):
        astgrad.vjp(sin_times_square, X, has_aux=True)


def test_the_backward_half_is_the_entry_vjps_adjoint():
    # the same passes as the entry's: no guard for a zero seed, no shape saved per trip, the loop fused
    x = np.linspace(-1.0, 1.0, 5)
    out, vjp_fn = astgrad.vjp(recurrence, x, 0.9)
    rerun = astgrad.vjp(recurrence, wrt=(0, 1))
    rerun(x, 0.9, out)
    backward = vjp_fn.source[vjp_fn.source.index("def backward_recurrence"):]
    entry = rerun.source[rerun.source.index("for _ in reversed"):]
    assert backward[backward.index("for _ in reversed"):].strip() == entry.strip()
    assert "only_shape" not in vjp_fn.source
    for seed in range(2):
        ct = np.random.default_rng(seed).normal(size=5)
        assert_cotangents(vjp_fn(ct), expected_vjp(recurrence, (x, 0.9), ct))


def test_ambiguous_and_mixed_calls_are_refused():
    for looks_like_wrt in (0, "x", (0, 1), [0]):
        with pytest.raises(TypeError, match="ambiguous"):
            astgrad.vjp(looped, looks_like_wrt)
    with pytest.raises(TypeError, match="not both"):
        astgrad.vjp(looped, X, W, wrt=0)
    with pytest.raises(TypeError, match="primals form"):
        astgrad.vjp(looped, wrt=0, has_aux=True)


def test_the_generated_function_form_still_works():
    seed = np.array([1.0, -1.0])
    gx, gw = astgrad.vjp(looped, wrt=(0, 1))(X, W, seed)
    assert_cotangents((gx, gw), expected_vjp(looped, (X, W), seed))
    assert_cotangents((astgrad.vjp(looped)(X, W, seed),), expected_vjp(looped, (X, W), seed)[:1])


def test_source_shows_the_forward_and_backward_halves():
    _, vjp_fn = astgrad.vjp(looped, X, W)
    assert "def forward_looped(" in vjp_fn.source and "def backward_looped(" in vjp_fn.source


def test_it_agrees_with_jax():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    def looped_jax(x, w):
        y = jnp.tanh(w @ x)
        s = 0.0
        for i in range(3):
            s = s + y * x[i]
        return jnp.sin(s) * 2

    out, ours = astgrad.vjp(looped, X, W)
    jax_out, theirs = jax.vjp(looped_jax, X, W)
    np.testing.assert_allclose(out, np.asarray(jax_out), rtol=1e-12)
    for ct in (np.array([1.0, 0.0]), np.array([0.3, -2.0])):
        for a, b in zip(ours(ct), theirs(ct)):
            np.testing.assert_allclose(a, np.asarray(b), rtol=1e-10)


def test_linearize_is_the_tangent_map_at_the_point():
    x, w = X.copy(), W.copy()
    out, jvp_fn = astgrad.linearize(looped, x, w)
    x[:] = 0.0  # written after linearize: the map stays at the point given
    np.testing.assert_allclose(out, looped(X, W))
    rng = np.random.default_rng(0)
    for _ in range(2):
        u, v = rng.normal(size=3), rng.normal(size=(2, 3))
        for k in range(2):  # <e_k, J (u, v)> by differences
            expected = numeric_grad(lambda t: looped(X + t * u, W + t * v)[k], (0.0,), 0)
            assert jvp_fn(u, v)[k] == pytest.approx(expected, rel=1e-6, abs=1e-8)
    with pytest.raises(TypeError, match="one tangent per primal"):
        jvp_fn(u)


def test_linearize_with_aux():
    out, jvp_fn, aux = astgrad.linearize(with_aux, X, has_aux=True)
    assert aux["norm"] == pytest.approx(float(np.sum(X * X)))
    u = np.array([1.0, 2.0, -1.0])
    np.testing.assert_allclose(jvp_fn(u), 3 * np.cos(X) * u, rtol=1e-12)


def test_writing_into_the_aux_changes_no_later_cotangent():
    def squared_with_aux(x):
        y = np.sin(x)
        return y * y, y  # the backward half reads y, which the aux is

    out, vjp_fn, aux = astgrad.vjp(squared_with_aux, X, has_aux=True)
    ct = np.array([1.0, -2.0, 0.5])
    expected = vjp_fn(ct)
    aux[:] = 0.0
    assert_cotangents(vjp_fn(ct), expected, rtol=0, atol=0)
