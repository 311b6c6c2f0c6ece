"""Devices as PyTorch's tutorials use them, on a machine without an accelerator."""
import torch

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")
device = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
print(device, torch.cuda.device_count())
for text in ["cpu", "cpu:0", "cuda", "cuda:1", "mps"]:
    d = torch.device(text)
    print(repr(d), str(d), d.type, d.index)
print(torch.device("cuda", 2), torch.device(torch.device("cpu")))
print(torch.device("cpu") == torch.device("cpu"), torch.device("cpu") == torch.device("cpu:0"), torch.device("cpu") == "cpu")
x = torch.ones(2, 2, device=device, dtype=torch.float64, requires_grad=True)
print(x.device, repr(x.device), x.device == torch.device("cpu"), x.is_cuda)
print(x.to(device), x.to("cpu", torch.float32), x.to(device="cpu", dtype=torch.float32))
print(x.to(torch.zeros(1, dtype=torch.float32)), x.to(torch.float64) is x, x.to(torch.float64, copy=True) is x)
print(x.cpu() is x, torch.get_default_device())
torch.set_default_device("cpu")
print(torch.zeros(2), torch.get_default_device())
model = torch.nn.Linear(2, 2).to(device)
print(model.weight.dtype, model.double().weight.dtype, model.float().bias.dtype, model.to(torch.float64).weight.dtype)
print(model.to(device) is model, model.cpu() is model, model.to(torch.zeros(1)).weight.dtype)
weight = model.weight
model.double()
print(weight is model.weight, weight.dtype)
for attempt in ["torch.zeros(2, device='cuda')", "torch.tensor([1.0], device=torch.device('cuda:0'))", "x.to('cuda')",
                "x.cuda()", "model.cuda()", "model.to('cuda')", "model.to(torch.int64)", "torch.device('gpu')",
                "torch.device('cuda:x')", "torch.device('cuda', -1)", "torch.device('cuda:0', 1)", "torch.device(0)",
                "torch.ones(3, device='cuda:1')", "torch.randn(2, device='cuda')", "torch.zeros_like(x, device='cuda')"]:
    try:
        eval(attempt)
        print(attempt, "ran")
    except Exception as error:
        print(attempt, "->", type(error).__name__, ":", error)
torch.set_default_device("cuda")
try:
    torch.zeros(2)
except AssertionError as error:
    print("after set_default_device('cuda'):", error)
torch.set_default_device(None)
print(torch.zeros(1))
