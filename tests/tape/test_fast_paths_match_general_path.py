"""The recording door's fast paths give what its general path gives.

``apply_op`` takes short paths for two operands (the operators, ``t[i]``)
and for one tensor (``t.exp()``, ``t.sum(dim=1)``); explicit slots in a list
send the same call down the general path.  Generated over operations x
shapes x dtypes x which operands are tensors requiring grad, both must give
the same values, dtype, node name, edges, gradients and errors: also the
error of a backward after an input was written in place, and the second
backward's.  A fast path that drifted from the general one would change a
gradient without an error.
"""

import itertools

import numpy as np
import pytest

import astgrad
from astgrad import rules
from astgrad.tape import _kernels
from astgrad.tape._record import _plain, apply_op
from astgrad.tape._shaping import _shares
from astgrad.tape._tensor import Tensor
from tests._numeric import gradient as numeric


SHAPES = [(), (3,), (2, 3)]
PAIRS = [((), ()), ((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 3)), ((2, 3), (4,)), ((3,), ())]
DTYPES = [np.float32, np.float64, np.int64, np.bool_, np.complex128]
DTYPE_PAIRS = [(np.float32, np.float32), (np.float64, np.float64), (np.float32, np.float64), (np.float64, np.int64),
               (np.int64, np.float32), (np.bool_, np.float64), (np.int64, np.int64), (np.complex128, np.float64),
               (np.float32, np.bool_), (np.float64, np.complex128)]
BINARY = [("AddBackward0", np.add, True), ("MulBackward0", np.multiply, True),
          ("SubBackward0", np.subtract, True), ("DivBackward0", np.divide, True),
          ("PowBackward1", np.power, True), ("MaximumBackward0", np.maximum, True),
          ("Lt", np.less, False), ("UnsafeViewBackward0", np.matmul, True)]
UNARY = [("ExpBackward0", np.exp, None, {}), ("TanhBackward0", np.tanh, None, {}),
         ("NegBackward0", np.negative, None, {}), ("SigmoidBackward0", rules.sigmoid, None, {}),
         ("ReluBackward0", rules.relu, None, {}),
         ("SumBackward0", np.sum, _kernels.sum, {"axis": None, "keepdims": False}),
         ("SumBackward1", np.sum, _kernels.sum, {"axis": 0, "keepdims": True}),
         ("SumBackward1", np.sum, _kernels.sum, {"axis": (0, -1), "keepdims": False}),
         ("SumBackward1", np.sum, _kernels.sum, {"axis": 5, "keepdims": False}),
         ("MeanBackward0", np.mean, _kernels.mean, {"axis": None, "keepdims": False})]


def _value(shape, dtype, seed):
    values = np.random.default_rng(seed).uniform(0.5, 2.0, size=shape)
    return np.asarray(values > 1.2 if dtype is np.bool_ else values * (1 + 1j) if dtype is np.complex128
                      else values * 3, dtype=dtype)


def _operand(kind, shape, dtype, seed):
    """A fresh operand: a tensor requiring grad (a non-leaf, so it can be written in place), a plain
    tensor, an array, or a number."""
    array = _value(shape, dtype, seed)
    if kind == "number":
        return array.reshape(-1)[0].item() if array.size else 1.5
    if kind == "array":
        return array
    if kind == "grad" and dtype in (np.float32, np.float64, np.complex128):
        leaf = astgrad.tensor(array, requires_grad=True)
        return leaf * 1
    return astgrad.tensor(array)


def _default_slots(args):
    """The slots ``apply_op`` gives by default, as a list (which no fast path takes)."""
    return [(i,) for i, a in enumerate(args)
            if isinstance(a, (Tensor, np.ndarray, int, float, np.number)) and not isinstance(a, bool)]  # not complex


def _outcome(record, inputs, write):
    """What one recording gives: its result's facts, the gradients of the inputs, and each error met."""
    try:
        out = record()
    except Exception as error:  # noqa: BLE001  # the error is the outcome compared
        return ("error", type(error), str(error))
    facts = [out._data.dtype, out._data.shape, out._data.tobytes(), out.requires_grad,
             type(out.grad_fn).__name__ if out.grad_fn is not None else None]
    if out.grad_fn is not None:
        facts.append([(type(n).__name__ if n is not None else None, nr) for n, nr in out.grad_fn.next_functions])
        tensors = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
        if write:
            for t in tensors:
                t.mul_(1)
        seed = astgrad.tensor(np.ones(out._data.shape, dtype=out._data.dtype))
        for attempt in range(2):  # the second backward meets the freed graph (or runs again)
            try:
                grads = astgrad.autograd.grad(out, tensors, seed, allow_unused=True)
                facts.append([None if g is None else (g._data.dtype, g._data.tobytes()) for g in grads])
            except Exception as error:  # noqa: BLE001
                facts.append(("error", type(error), str(error)))
    return facts


def _compare(name, fn, make_args, kwargs=None, impl=None, promote=True):
    for write in (False, True):
        fast = _outcome(lambda: apply_op(name, fn, args, kwargs, promote=promote, impl=impl),
                        (args := make_args()), write)
        general = _outcome(lambda: apply_op(name, fn, args, kwargs, slots=_default_slots(args),
                                            promote=promote, impl=impl),
                           (args := make_args()), write)
        assert fast == general


KINDS = ["grad", "plain", "array", "number"]


@pytest.mark.parametrize("name, fn, promote", BINARY, ids=[b[0] + "-" + b[1].__name__ for b in BINARY])
def test_two_operands(name, fn, promote):
    for (shape_a, shape_b), (dtype_a, dtype_b), kind_a, kind_b in itertools.product(
            PAIRS, DTYPE_PAIRS, KINDS, KINDS):
        if "number" in (kind_a, kind_b) and (kind_a == kind_b or "array" in (kind_a, kind_b)):
            continue  # no tensor: the operators never record these
        if kind_a in ("array", "number") and kind_b in ("array", "number"):
            continue

        def make_args():
            return (_operand(kind_a, shape_a, dtype_a, 1), _operand(kind_b, shape_b, dtype_b, 2))

        _compare(name, fn, make_args, promote=promote)


@pytest.mark.parametrize("index", [0, -1, 1, 5, np.int64(1), 1.5])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_an_integer_index(index, shape, dtype):
    for kind in ("grad", "plain"):
        _compare("SelectBackward0", rules.getitem, lambda: (_operand(kind, shape, dtype, 3), index),
                 promote=False)


@pytest.mark.parametrize("name, fn, impl, kwargs", UNARY, ids=[f"{u[0]}-{u[3]}" for u in UNARY])
def test_one_tensor(name, fn, impl, kwargs):
    for shape, dtype, kind in itertools.product(SHAPES, DTYPES, ("grad", "plain")):
        _compare(name, fn, lambda: (_operand(kind, shape, dtype, 4),), kwargs=dict(kwargs) or None, impl=impl,
                 promote=not kwargs)


def test_keywords_a_fast_path_takes_are_those_unwrap_gives_back():
    """A tensor, a list or a tuple holding either in a keyword sends the call down the general path."""
    t = astgrad.tensor(np.array([1.0]))
    assert _plain({"axis": None, "keepdims": True, "dtype": np.float32})
    assert _plain({"axis": (0, -1)})
    assert not _plain({"axis": [0]})
    assert not _plain({"where": t})
    assert not _plain({"axis": (0, t)})
    assert not _plain({"axis": ((0,),)})


@pytest.mark.parametrize("dim, keepdim", [(None, False), (0, False), (1, True), ((0, 1), True), (-1, False)])
def test_sum_over_dims_against_finite_differences(dim, keepdim):
    data = np.random.default_rng(5).standard_normal((3, 4))
    weights = np.random.default_rng(6).standard_normal(np.sum(data, axis=dim, keepdims=keepdim).shape)
    x = astgrad.tensor(data, requires_grad=True)
    out = x.sum() if dim is None else x.sum(dim=dim, keepdim=keepdim)
    np.testing.assert_allclose(out.detach().numpy(), np.sum(data, axis=dim, keepdims=keepdim), rtol=1e-15)
    (out * astgrad.tensor(weights)).sum().backward()
    expected = numeric(lambda d: np.sum(np.sum(d, axis=dim, keepdims=keepdim) * weights), data)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-6, atol=1e-8)


def _sources():
    """Arrays a tensor may hold: owning, views of views, non-contiguous, empty, read-only, over a buffer."""
    owner = np.arange(24.0).reshape(2, 3, 4)
    yield owner
    yield owner[1]
    yield owner[:, ::2]
    yield owner.transpose(2, 0, 1)
    yield np.zeros((3, 0))
    yield np.arange(5.0)
    yield np.broadcast_to(np.arange(3.0), (2, 3))
    yield np.frombuffer(np.arange(6.0).tobytes(), dtype=np.float64).reshape(2, 3)


INDEXES = [0, -1, (0, 0), (slice(None), 0), slice(1, 1), (Ellipsis, None), (), slice(None, None, -1)]
VIEWS = [np.transpose, lambda a: np.swapaxes(a, -2, -1) if a.ndim > 1 else a.T, lambda a: np.expand_dims(a, 0),
         np.diagonal, lambda a: np.reshape(a, -1), lambda a: np.broadcast_to(a, (2, *a.shape)), np.squeeze]


def test_the_view_check_is_numpys_shares_memory():
    """``_shares`` answers as ``np.shares_memory`` for indexes and view operations of every kind of array."""
    for data in _sources():
        for make in [lambda a, i=i: a[i] for i in INDEXES] + VIEWS:
            try:
                out = np.asarray(make(data))
            except (IndexError, ValueError):
                continue
            assert _shares(out, data) == np.shares_memory(out, data)


@pytest.mark.parametrize("name, fn, test", [
    ("Lt", np.less, "__lt__"), ("Le", np.less_equal, "__le__"), ("Gt", np.greater, "__gt__"),
    ("Ge", np.greater_equal, "__ge__"), ("Eq", np.equal, "__eq__"), ("Ne", np.not_equal, "__ne__")])
def test_comparing_a_number_tensor_with_a_number_is_the_ufuncs_comparison(name, fn, test):
    """``norm(y) < 1000`` compares two Python floats where the tensor is a 0-d float64 (``compare``): the
    same bool as numpy's ufunc through ``apply_op``, also at NaN, infinities, signed zeros and the ints
    float64 holds exactly or not, and for the tensors it leaves to ``apply_op``."""
    big = 2 ** 53
    values = [3.5, -0.0, 0.0, np.nan, np.inf, -np.inf, 1000.0, float(big), float(big + 2), 1e308]
    others = [1000, 1000.0, 3.5, -0.0, 0, np.nan, np.inf, big, big + 1, -big, big * 4 + 1, 1e308, True]
    for value, other, dtype, grad in itertools.product(values, others, (np.float64, np.float32), (True, False)):
        t = astgrad.tensor(np.array(value, dtype=dtype), requires_grad=grad and dtype == np.float64)
        got = getattr(t, test)(other)
        want = apply_op(name, fn, (t, other))
        assert got.dtype == want.dtype and got.shape == want.shape and not got.requires_grad, (value, other)
        assert bool(got) == bool(want), (value, other, dtype)
    t = astgrad.tensor(np.array([1.0, 2000.0]), requires_grad=True)
    np.testing.assert_array_equal(getattr(t, test)(1000).numpy(), fn(np.array([1.0, 2000.0]), 1000))
