"""Module.load_state_dict and torch.save/torch.load where a wrong tensor could slip through: stale graphs,
aliasing, dtypes, files that are not ours, and pickles that would run code.

PyTorch's keys and messages are pinned by transcripts/state_dicts_and_files.py.
"""

import io
import pathlib
import pickle
import zipfile

import numpy as np
import pytest

import astgrad.torch as torch

nn = torch.nn
CALLED = []


def record_call(*args):
    CALLED.append(args)


class Trap:
    def __reduce__(self):
        return record_call, ("ran",)


def test_loading_a_state_dict_moves_the_version_so_an_older_graph_refuses_backward():
    model = nn.Linear(2, 1)
    loss = (model(torch.ones(1, 2)) ** 2).sum()
    model.load_state_dict({"weight": torch.zeros(1, 2), "bias": torch.zeros(1)})
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_loading_copies_values_and_keeps_the_parameters():
    model = nn.Linear(2, 1)
    weight = model.weight
    state = {"weight": torch.tensor([[1.0, 2.0]], dtype=torch.float64), "bias": torch.tensor([0.5])}
    model.load_state_dict(state)
    state["weight"].mul_(10)
    assert model.weight is weight and model.weight.dtype == torch.float32
    assert model.weight.tolist() == [[1.0, 2.0]] and model.weight.requires_grad


def test_a_state_dict_shares_storage_with_the_parameters():
    model = nn.Linear(2, 1)
    state = model.state_dict()
    with torch.no_grad():
        model.weight.fill_(3.0)
    assert state["weight"].tolist() == [[3.0, 3.0]] and not state["weight"].requires_grad


def test_saved_tensors_load_as_astgrad_tensors_with_their_own_memory(tmp_path):
    original = {"w": torch.tensor([1.0, 2.0], dtype=torch.float64), "n": torch.arange(3, dtype=torch.int32)}
    path = tmp_path / "state.pt"
    torch.save(original, path)
    loaded = torch.load(str(path))
    assert all(type(v) is torch.Tensor for v in loaded.values())
    assert loaded["w"].dtype == torch.float64 and loaded["n"].dtype == torch.int32
    original["w"].mul_(2)
    assert loaded["w"].tolist() == [1.0, 2.0]
    assert pathlib.Path(path).read_bytes().startswith(b"astgrad.torch.save")


def test_a_file_pytorch_wrote_is_refused_with_advice(tmp_path):
    path = tmp_path / "from_pytorch.pt"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("archive/data.pkl", b"not ours")
    with pytest.raises(RuntimeError, match="written by PyTorch.s torch.save .*np.savez"):
        torch.load(path)
    with pytest.raises(RuntimeError, match="was not written by astgrad.torch.save"):
        torch.load(io.BytesIO(pickle.dumps({"a": 1})))


def test_weights_only_refuses_a_pickle_that_would_run_code():
    file = io.BytesIO()
    torch.save({"weight": torch.ones(1), "trap": Trap()}, file)
    file.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="^Weights only load failed.*record_call"):
        torch.load(file)
    assert CALLED == []
    file.seek(0)
    assert torch.load(file, weights_only=False)["trap"] is None and CALLED == [("ran",)]


def test_weights_only_loads_what_checkpoints_hold():
    checkpoint = {"epoch": 2, "loss": np.float64(0.5), "shape": torch.Size([2, 3]), "dtype": torch.float64,
                  "steps": {1, 2}, "pair": (1 + 2j, None, b"x"), "state": nn.Linear(1, 1).state_dict(),
                  "parameter": nn.Parameter(torch.ones(2))}
    for protocol in (2, pickle.HIGHEST_PROTOCOL):
        file = io.BytesIO()
        torch.save(checkpoint, file, pickle_protocol=protocol)
        file.seek(0)
        loaded = torch.load(file)
        assert loaded["shape"] == torch.Size([2, 3]) and loaded["dtype"] is torch.float64
        assert loaded["steps"] == {1, 2} and loaded["pair"] == (1 + 2j, None, b"x") and loaded["loss"] == 0.5
        assert type(loaded["parameter"]) is nn.Parameter and loaded["parameter"].requires_grad


def test_locations_other_than_the_cpu_are_refused():
    file = io.BytesIO()
    torch.save(torch.ones(1), file)
    for location in ["cpu", torch.device("cpu"), {"cuda:0": "cpu"}, lambda storage, loc: storage]:
        file.seek(0)
        assert torch.load(file, map_location=location).tolist() == [1.0]
    file.seek(0)
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.load(file, map_location="cuda")
    with pytest.raises(ValueError, match="mmap=True is not supported"):
        torch.load(file, mmap=True)
