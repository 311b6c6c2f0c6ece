"""np.linspace, np.logspace and np.geomspace with array ends laid along an ``axis``, by jvp and grad.

numpy broadcasts ``start``, ``stop`` (and logspace's ``base``) together
first, then lays the grid along ``axis`` of that shape.  A tangent of one
end alone (a number beside an array, or an array base) must be laid the
same way: the forward rules built each end's tangent grid from that end's
shape only and added grids of different shapes (a broadcast error, or for
equal lengths a grid along the wrong axis).  The references are central
differences of the function itself.
"""

import numpy as np
import pytest

import astgrad

RNG = np.random.default_rng(11)


def lin_0(a, b, c):
    return np.linspace(a, b, 4, axis=0)


def lin_1(a, b, c):
    return np.linspace(a, b, 4, axis=1)


def lin_m1(a, b, c):
    return np.linspace(a, b, 5, endpoint=False, axis=-1)


def log_0(a, b, c):
    return np.logspace(a, b, 4, base=c, axis=0)


def log_1(a, b, c):
    return np.logspace(a, b, 4, base=c, axis=1)


def log_m1(a, b, c):
    return np.logspace(a, b, 5, endpoint=False, base=c, axis=-1)


def geo_0(a, b, c):
    return np.geomspace(a + 2.0, b + 3.0, 4, axis=0)


def geo_1(a, b, c):
    return np.geomspace(a + 2.0, b + 3.0, 4, axis=1)


#: (start, stop, base) shapes; those numpy refuses for an axis (the grid's rank too small) astgrad must refuse
SHAPES = [((2,), (2,), ()), ((2, 3), (2, 3), ()), ((), (2,), ()), ((3,), (), ()), ((2,), (2,), (2,)),
          ((3,), (), (3,)), ((), (), (3,)), ((), (3,), (3,)), ((3,), (3,), (2, 1))]


def _draw(shapes):
    a, b = RNG.uniform(-0.5, 0.5, shapes[0]), RNG.uniform(-0.5, 0.5, shapes[1])
    c = RNG.uniform(1.5, 3.0, shapes[2])
    return (a, b, c), tuple(RNG.normal(size=s) for s in shapes)


def _central(f, args, tangents, eps=1e-6):
    up = f(*[x + eps * t for x, t in zip(args, tangents)])
    down = f(*[x - eps * t for x, t in zip(args, tangents)])
    return (up - down) / (2 * eps)


@pytest.mark.parametrize("shapes", SHAPES, ids=str)
@pytest.mark.parametrize("f", [lin_0, lin_1, lin_m1, log_0, log_1, log_m1, geo_0, geo_1], ids=lambda f: f.__name__)
def test_the_jvp_of_a_grid_along_an_axis_matches_central_differences(f, shapes):
    args, tangents = _draw(shapes)
    try:
        value = f(*args)
    except (ValueError, np.exceptions.AxisError) as refused:  # the grid's rank too small for the axis
        with pytest.raises(type(refused)):  # refused as numpy refuses it, never a number
            astgrad.jvp(f, wrt=(0, 1, 2))(*args, tangents)
        return
    out, tangent = astgrad.jvp(f, wrt=(0, 1, 2))(*args, tangents)
    np.testing.assert_allclose(out, value, rtol=1e-12)
    assert np.shape(tangent) == np.shape(value)
    np.testing.assert_allclose(tangent, _central(f, args, tangents), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("shapes", [s for s in SHAPES if s[2] == ()], ids=str)
@pytest.mark.parametrize("f", [lin_0, lin_1, log_0, log_1, geo_1], ids=lambda f: f.__name__)
def test_the_gradient_of_a_grid_along_an_axis_matches_central_differences(f, shapes):
    args, tangents = _draw(shapes)
    try:
        weights = RNG.normal(size=np.shape(f(*args)))
    except (ValueError, np.exceptions.AxisError) as refused:  # the grid's rank too small for the axis
        with pytest.raises(type(refused)):  # refused as numpy refuses it, never a number
            astgrad.grad(lambda a, b, c: np.sum(f(a, b, c)), wrt=(0, 1, 2))(*args)
        return

    def loss(a, b, c):
        return np.sum(f(a, b, c) * weights)
    grads = astgrad.grad(loss, wrt=(0, 1, 2))(*args)
    along = sum(np.sum(g * t) for g, t in zip(grads, tangents))
    np.testing.assert_allclose(along, _central(loss, args, tangents), rtol=1e-6, atol=1e-8)


def test_the_gradient_of_logspace_in_an_array_base_is_refused_saying_what_to_write():
    args, _ = _draw(((2,), (2,), (2,)))
    with pytest.raises(ValueError, match="no gradient for numpy.logspace with an array base"):
        astgrad.grad(lambda_free_log_1_sum, wrt=(0, 1, 2))(*args)


def lambda_free_log_1_sum(a, b, c):
    return np.sum(log_1(a, b, c))
