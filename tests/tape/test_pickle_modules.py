"""astgrad.torch.nn layers pickle without PyTorch, as PyTorch's own modules pickle with it.

The layers print as PyTorch's (their class names a ``torch.nn.modules...``
module), so pickle's default, which imports the class by that name, failed
("import of module 'torch.nn.modules.linear' failed").  The adversarial case:
the loaded model must compute what the original computes, train its own
parameters, and load in an interpreter where ``import torch`` fails or
imports another package.
"""

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


class Net(torch.nn.Module):
    """A user's model: its class pickles by its own module; the layers inside by astgrad's."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
        self.loss = torch.nn.MSELoss()
        self.scale = 2.0

    def forward(self, x):
        return self.body(x) * self.scale


def modules_imported(payload: bytes) -> set:
    return {arg.split(" ")[0] for op, arg, _ in pickletools.genops(payload) if op.name == "GLOBAL"}


@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_a_loaded_model_computes_what_the_original_computes(protocol):
    torch.manual_seed(3)
    net = Net()
    loaded = pickle.loads(pickle.dumps(net, protocol=protocol))
    x = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])
    np.testing.assert_array_equal(loaded(x).detach().numpy(), net(x).detach().numpy())
    assert repr(loaded) == repr(net) and loaded.scale == 2.0 and loaded.training
    assert [n for n, _ in loaded.named_parameters()] == [n for n, _ in net.named_parameters()]
    assert all(type(p) is torch.nn.Parameter and p.requires_grad for p in loaded.parameters())


def test_a_loaded_model_trains_its_own_parameters():
    torch.manual_seed(3)
    net = Net()
    loaded = pickle.loads(pickle.dumps(net))
    x, y = torch.ones(2, 3), torch.zeros(2, 2)
    loaded.loss(loaded(x), y).backward()
    assert all(p.grad is None for p in net.parameters())
    assert all(p.grad is not None for p in loaded.parameters())
    net.loss(net(x), y).backward()
    for mine, theirs in zip(net.parameters(), loaded.parameters()):
        np.testing.assert_allclose(theirs.grad.numpy(), mine.grad.numpy())


def test_the_pickle_names_astgrad_never_torch():
    layers = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.LogSoftmax(dim=1))
    modules = modules_imported(pickle.dumps(layers, protocol=2))
    assert not any(m.split(".")[0] == "torch" for m in modules), modules


def test_a_model_loads_where_torch_is_another_package(monkeypatch):
    payload = pickle.dumps(torch.nn.Linear(2, 1))
    fake = types.ModuleType("torch")
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setitem(sys.modules, "torch.nn", None)
    assert type(pickle.loads(payload)).__name__ == "Linear"


def test_a_model_loads_in_a_fresh_interpreter_without_torch(tmp_path):
    torch.manual_seed(0)
    layer = torch.nn.Linear(2, 1)
    path = tmp_path / "layer.pkl"
    path.write_bytes(pickle.dumps(layer))
    expected = layer(torch.tensor([[1.0, 2.0]])).item()
    code = textwrap.dedent(f"""
        import pickle, sys
        sys.modules["torch"] = None  # importing torch would fail
        layer = pickle.loads(open({str(path)!r}, "rb").read())
        import astgrad.torch as torch
        print(repr(layer(torch.tensor([[1.0, 2.0]])).item()))
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert float(out.stdout.strip()) == expected


def test_only_layers_of_the_package_are_rebuilt_by_name():
    from astgrad.torch.nn.modules import _new_module
    with pytest.raises(TypeError, match="not a layer"):
        _new_module("F")
