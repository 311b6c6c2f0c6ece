"""Module.state_dict()/load_state_dict() and torch.save/torch.load of state dicts, checkpoints, tensors and models.

The files are astgrad's own, so the program reads only what it wrote itself.
"""

import copy
import io
import os
import pickle
import tempfile

import torch

nn = torch.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 2)
        self.seq = nn.Sequential(nn.ReLU(), nn.Linear(2, 1, bias=False))

    def forward(self, x):
        return self.seq(self.fc1(x))


net = Net()
sd = net.state_dict()
print(type(sd).__name__, list(sd), [type(v).__name__ for v in sd.values()], [v.requires_grad for v in sd.values()])
for key in sd:
    print(key, "\t", sd[key].size())
print(net.load_state_dict(sd))
bad = dict(sd)
bad.pop("fc1.bias")
bad.update({"fc1.extra": torch.zeros(1), "other.weight": torch.zeros(1), "seq.1.weight": torch.zeros(2, 2)})
for strict in (True, False):
    try:
        print(net.load_state_dict(bad, strict=strict))
    except Exception as error:
        print(type(error).__name__, error)
for given in [dict(sd, **{"fc1.bias": [1.0, 2.0]}), [1]]:
    try:
        net.load_state_dict(given)
    except Exception as error:
        print(type(error).__name__, error)
print(net.load_state_dict(dict(sd, **{"fc1.bias": torch.tensor([1.0, 2.0], dtype=torch.float64)})), net.fc1.bias)
result = net.load_state_dict({k: v for k, v in sd.items() if k != "seq.1.weight"}, strict=False)
print(result, result.missing_keys, result.unexpected_keys)
weight = net.fc1.weight
print(net.load_state_dict({k: torch.ones_like(v) for k, v in sd.items()}, assign=True), net.fc1.weight is weight,
      net.fc1.weight, type(net.fc1.weight).__name__)
print(nn.LSTM(2, 3, num_layers=2).state_dict().keys())
print(nn.Conv2d(1, 2, 3).state_dict().keys())

tied = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2))
tied[1].weight = tied[0].weight
print(list(tied.state_dict()))
snapshot = copy.deepcopy(tied.state_dict())
with torch.no_grad():
    tied[0].weight.mul_(2)
print(torch.equal(tied.state_dict()["0.weight"], snapshot["0.weight"] * 2), tied.load_state_dict(snapshot))
print(torch.equal(tied[0].weight, snapshot["0.weight"]), tied[1].weight is tied[0].weight)
print(list(net.state_dict(keep_vars=True).values())[0].requires_grad, list(net.state_dict(prefix="net.")))

model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_(torch.linspace(-1, 1, p.numel()).view(p.shape) * (i + 1))
path = os.path.join(tempfile.mkdtemp(), "model.pth")
torch.save(model.state_dict(), path)
loaded = torch.load(path)
print(type(loaded).__name__, list(loaded), type(loaded["0.weight"]).__name__, loaded["2.bias"])
other = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
print(other.load_state_dict(torch.load(path, weights_only=True)))
x = torch.tensor([[0.5, 1.0, 2.0]])
print(torch.equal(other(x), model(x)), other(x))

optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
model(x).sum().backward()
optimizer.step()
checkpoint = {"epoch": 3, "model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
              "loss": 0.25, "betas": (0.9, 0.99), "names": ["a", "b"], "seen": {1, 2}}
buffer = io.BytesIO()
torch.save(checkpoint, buffer)
buffer.seek(0)
back = torch.load(buffer, map_location="cpu")
print(back["epoch"], back["loss"], back["betas"], back["names"], back["seen"])
print(back["optimizer_state_dict"])
resumed = torch.optim.SGD(other.parameters(), lr=0.5)
resumed.load_state_dict(back["optimizer_state_dict"])
print(resumed)
print(resumed.state_dict()["state"])

t = torch.tensor([1.5, 2.5], dtype=torch.float64, requires_grad=True)
torch.save(t, path)
u = torch.load(path, map_location=torch.device("cpu"))
print(u, u.requires_grad, u.is_leaf, u.grad)
torch.save([torch.arange(3), torch.ones(2, dtype=torch.bool)], path)
print(torch.load(path, map_location=lambda storage, loc: storage))
torch.save(model, path)
try:
    torch.load(path)
except pickle.UnpicklingError as error:
    print("UnpicklingError", str(error).startswith("Weights only load failed."))
whole = torch.load(path, weights_only=False)
whole.eval()
print(whole, torch.equal(whole(x), model(x)))

registered = nn.Linear(2, 1)
registered.register_parameter("scale", nn.Parameter(torch.ones(1)))
registered.register_parameter("unused", None)
registered.add_module("act", nn.ReLU())
registered.register_module("extra", None)
print(registered, list(registered.state_dict()), [n for n, _ in registered.named_parameters()])
for call in ['registered.register_parameter("x.y", None)', 'registered.register_parameter("", None)',
             'registered.register_parameter("w2", torch.ones(1))', 'registered.add_module("a.b", nn.ReLU())',
             'registered.add_module("r", 3)', 'registered.register_parameter(1, None)',
             'registered.add_module("weight", nn.ReLU())', 'registered.register_parameter("in_features", None)',
             'registered.add_module("", nn.ReLU())',
             'registered.register_parameter("w3", nn.Parameter(torch.ones(1)) * 2)']:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, error)


def init_weights(m):
    print("visit", type(m).__name__)
    if type(m) is nn.Linear:
        with torch.no_grad():
            m.weight.fill_(0.25)
            m.bias.zero_()


tree = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
print(tree.apply(init_weights) is tree, list(tree.state_dict().items()))  # an OrderedDict prints differently from Python 3.12 on


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=6):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-9.2103 / d_model))
        pe = torch.zeros(max_len, 1, d_model)
        pe[:, 0, 0::2] = torch.sin(position * div_term)
        pe[:, 0, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)
        self.register_buffer("steps", torch.tensor(0))
        self.register_buffer("scratch", torch.ones(2), persistent=False)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        self.steps += 1
        return self.proj(x + self.pe[:x.size(0)])


encoder = PositionalEncoding(4)
print(list(encoder.state_dict()), [n for n, _ in encoder.named_buffers()], [n for n, _ in encoder.named_parameters()])
print(encoder.pe[:2], encoder.steps, len(list(encoder.buffers())), encoder)
x = torch.ones(3, 1, 4)
out = encoder(x)
print(encoder.steps, encoder.state_dict()["steps"], out.shape)
fresh = PositionalEncoding(4)
print(fresh.load_state_dict(encoder.state_dict()), fresh.steps, torch.equal(fresh(x), encoder(x)))
print(fresh.load_state_dict({k: v for k, v in encoder.state_dict().items() if k != "pe"}, strict=False))
encoder.double()
print(encoder.pe.dtype, encoder.steps.dtype, encoder.scratch.dtype, encoder.proj.weight.dtype)
encoder.pe = None
print(list(encoder.state_dict()), encoder.pe)
encoder.pe = torch.zeros(1)
print(list(encoder.state_dict()))
del encoder.scratch
print([n for n, _ in encoder.named_buffers()])
for call in ['encoder.register_buffer("b.c", None)', 'encoder.register_buffer("", None)',
             'encoder.register_buffer("x", 3)', 'encoder.register_buffer(1, None)',
             'encoder.register_buffer("proj", torch.ones(1))', 'setattr(encoder, "steps", 3)',
             'setattr(encoder.proj, "weight", torch.ones(4, 4))', 'setattr(encoder, "proj", 3)']:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, error)
named = {k: torch.zeros_like(v) for k, v in fresh.named_buffers()}
print(torch.func.functional_call(fresh, named, (x,)).shape, fresh.steps, named["steps"], fresh.pe.abs().sum() > 0)
