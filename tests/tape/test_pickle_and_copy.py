"""Tensors pickle, copy and deepcopy with their data, dtype and requires_grad, as PyTorch's leaves do.

The adversarial cases: a copy of a leaf already in a graph must collect its
own gradients (not the original's), and an in-place write through a copy
that shares the data must never let a backward read the new values silently.
"""

import copy
import os
import pickle
import pickletools
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

import astgrad.torch as torch
from astgrad.tape import Tensor

DEEPCOPY_NON_LEAF = (
    "Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol at the moment.  "
    "If you were attempting to deepcopy a module, this may be because of a torch.nn.utils.weight_norm usage, "
    "see https://github.com/pytorch/pytorch/pull/103001"
)

SAMPLES = [
    (np.array([[1.5, -2.0], [0.25, 3.0]], dtype=np.float32), True),
    (np.array([1.0, 2.0, 3.0]), True),
    (np.array(2.5), True),
    (np.zeros((0, 3), dtype=np.float32), False),
    (np.array([1 + 2j, -0.5j], dtype=np.complex64), True),
    (np.array([3, -4], dtype=np.int64), False),
    (np.array([True, False]), False),
]


def _globals_named(payload: bytes) -> set:
    """The modules a protocol-2 pickle imports when it loads (GLOBAL opcodes)."""
    return {arg.split(" ")[0] for op, arg, _ in pickletools.genops(payload) if op.name == "GLOBAL"}


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
@pytest.mark.parametrize("array, requires_grad", SAMPLES)
def test_a_pickle_round_trip_keeps_data_dtype_and_requires_grad(array, requires_grad, protocol):
    t = torch.tensor(array, requires_grad=requires_grad)
    loaded = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert type(loaded) is Tensor and loaded is not t
    assert loaded.dtype == t.dtype and loaded.shape == t.shape
    np.testing.assert_array_equal(loaded.detach().numpy(), array)
    assert loaded.requires_grad is requires_grad and loaded.is_leaf and loaded.grad is None
    assert repr(loaded) == repr(t)


def test_a_pickle_names_astgrad_never_torch():
    modules = _globals_named(pickle.dumps(torch.tensor([1.0], requires_grad=True), protocol=2))
    assert "astgrad.tape._copying" in modules and not any(m.split(".")[0] == "torch" for m in modules), modules


def test_pickle_works_while_another_module_is_called_torch(monkeypatch):
    """With PyTorch installed, pickling by class name said 'not the same object as torch.Tensor'."""
    fake = types.ModuleType("torch")
    fake.Tensor = type("Tensor", (), {})
    monkeypatch.setitem(sys.modules, "torch", fake)
    loaded = pickle.loads(pickle.dumps(torch.tensor([1.0, 2.0], dtype=torch.float64)))
    assert loaded.dtype == torch.float64 and loaded.tolist() == [1.0, 2.0]


def test_a_pickle_loads_in_a_fresh_interpreter_without_torch(tmp_path):
    path = tmp_path / "t.pkl"
    path.write_bytes(pickle.dumps(torch.tensor([[0.5, 1.5]], dtype=torch.float64, requires_grad=True)))
    code = textwrap.dedent(f"""
        import pickle, sys
        sys.modules["torch"] = None  # importing torch would fail
        t = pickle.loads(open({str(path)!r}, "rb").read())
        (t * t).sum().backward()
        print(t.dtype, t.requires_grad, t.tolist(), t.grad.tolist())
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split("\n")[0] == "torch.float64 True [[0.5, 1.5]] [[1.0, 3.0]]"


def test_a_non_leaf_pickles_as_a_leaf_that_requires_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    loaded = pickle.loads(pickle.dumps(y))
    assert loaded.is_leaf and loaded.requires_grad and loaded.tolist() == [3.0, 6.0]
    (loaded * loaded).sum().backward()
    assert loaded.grad.tolist() == [6.0, 12.0] and x.grad is None


def test_the_grad_is_not_pickled():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert pickle.loads(pickle.dumps(x)).grad is None


@pytest.mark.parametrize("copier", [copy.copy, copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t))])
def test_a_copy_of_a_leaf_in_a_graph_collects_its_own_gradients(copier):
    x = torch.tensor([1.0, -2.0, 0.5], requires_grad=True)
    y = (x * x).sum()  # x now has an AccumulateGrad node in a live graph
    c = copier(x)
    assert c.requires_grad and c.is_leaf and c.grad is None
    (c * c * c).sum().backward()
    np.testing.assert_allclose(c.grad.numpy(), 3 * np.array([1.0, -2.0, 0.5]) ** 2)
    assert x.grad is None
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, -4.0, 1.0])
    np.testing.assert_allclose(c.grad.numpy(), 3 * np.array([1.0, -2.0, 0.5]) ** 2)


def test_copy_shares_the_data_and_the_version_counter():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    c = copy.copy(x)
    with torch.no_grad():
        c.add_(1.0)
    assert x.tolist() == [2.0, 3.0]  # one storage, as in PyTorch
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()  # the saved x changed: refused, not a gradient of the new values


def test_copy_of_a_non_leaf_is_a_leaf_over_the_same_values():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    c = copy.copy(x * 2)
    assert c.is_leaf and c.requires_grad and c.tolist() == [2.0, 4.0] and c.grad is None


def test_deepcopy_owns_its_data_and_a_copy_of_grad():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    d = copy.deepcopy(x)
    assert d.grad is not x.grad and d.grad.tolist() == [2.0, 4.0] and d._version == 0
    with torch.no_grad():
        d.mul_(10.0)
        d.grad.zero_()
    assert x.tolist() == [1.0, 2.0] and x.grad.tolist() == [2.0, 4.0]


def test_deepcopy_of_a_non_leaf_raises_pytorchs_error():
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError) as caught:
        copy.deepcopy([x, x.exp()])
    assert str(caught.value) == DEEPCOPY_NON_LEAF


def test_deepcopy_keeps_sharing_within_what_it_copies():
    x = torch.tensor([1.0, 2.0])
    same, again, detached = copy.deepcopy([x, x, x.detach()])
    assert same is again and same is not x
    with torch.no_grad():
        same.add_(1.0)
    assert detached.tolist() == [2.0, 3.0] and detached._version == same._version == 1
    assert x.tolist() == [1.0, 2.0]


def test_a_parameter_stays_a_parameter():
    p = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    for copied in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert type(copied) is torch.nn.Parameter and copied.requires_grad and copied.tolist() == [1.0, 2.0]
        assert copied.grad is None  # PyTorch's Parameter deepcopy leaves .grad behind too
        assert repr(copied).startswith("Parameter containing:")


def test_deepcopy_of_a_module_trains_its_own_parameters():
    torch.manual_seed(0)
    layer = torch.nn.Linear(3, 2)
    twin = copy.deepcopy(layer)
    assert twin.weight is not layer.weight and twin.weight.tolist() == layer.weight.tolist()
    x = torch.tensor([[1.0, -1.0, 2.0]])
    twin(x).sum().backward()
    assert layer.weight.grad is None
    np.testing.assert_allclose(twin.weight.grad.numpy(), np.tile(x.numpy(), (2, 1)))
