"""Convolution and pooling: printed modules, node names, values, gradients (ties and NaNs) and errors."""

import numpy as np

import torch

nn = torch.nn
F = nn.functional
print(nn.Conv2d(1, 6, 5), nn.Conv2d(3, 8, (3, 5), stride=2, padding=1, dilation=2, bias=False))
print(nn.Conv2d(4, 4, 3, padding="same", groups=2), nn.Conv1d(2, 4, 3), nn.Conv1d(2, 4, 3, stride=2, padding="valid"))
print(nn.MaxPool2d(2), nn.MaxPool2d((2, 3), stride=1, padding=1, dilation=2, ceil_mode=True), nn.MaxPool1d(3))
print(nn.AvgPool2d(2), nn.AvgPool2d((2, 3), stride=(1, 2), padding=1), nn.AvgPool1d(3), nn.AdaptiveAvgPool2d(5))
conv = nn.Conv2d(3, 4, 3, groups=1)
print(conv.weight.shape, conv.bias.shape, conv.stride, conv.padding, conv.dilation, conv.kernel_size, conv.groups)
print(nn.Conv1d(4, 6, 2, groups=2).weight.shape, [name for name, _ in conv.named_parameters()])

rng = np.random.default_rng(0)
x = torch.tensor(rng.standard_normal((2, 4, 7, 6)), requires_grad=True)
w = torch.tensor(rng.standard_normal((6, 2, 3, 2)), requires_grad=True)
b = torch.tensor(rng.standard_normal(6), requires_grad=True)
y = F.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)
print(y.shape, y.grad_fn.name(), np.round(y.detach().numpy()[1, 4], 4))
pooled = F.max_pool2d(y, 2, ceil_mode=True)
print(pooled.shape, pooled.grad_fn.name())
(pooled * torch.tensor(rng.standard_normal(pooled.shape))).sum().backward()
print(np.round(x.grad.numpy()[0, 1], 4))
print(np.round(w.grad.numpy()[5], 4), np.round(b.grad.numpy(), 4))

signal = torch.tensor(rng.standard_normal((2, 9)), requires_grad=True)
kernel = torch.tensor(rng.standard_normal((3, 2, 3)), requires_grad=True)
same = F.conv1d(signal, kernel, padding="same", dilation=2)
print(same.shape, same.grad_fn.name(), np.round(same.detach().numpy(), 4))
F.avg_pool1d(same, 3, stride=2, padding=1, count_include_pad=False).sum().backward()
print(np.round(signal.grad.numpy(), 4), np.round(kernel.grad.numpy()[0], 4))

ties = torch.tensor([[[[1.0, 1.0, 2.0, 2.0], [1.0, 1.0, 2.0, 2.0], [0.0, 0.0, 3.0, 3.0], [3.0, 3.0, 3.0, 3.0]]]],
                    requires_grad=True)
F.max_pool2d(ties, 2).sum().backward()
print(ties.grad)
ties.grad = None
F.max_pool2d(ties, 3, stride=1).sum().backward()
print(ties.grad)
nan = float("nan")
with_nans = torch.tensor([[[1.0, nan, 2.0, nan], [nan, 1.0, 2.0, 2.0]]], requires_grad=True)
out, indices = F.max_pool2d(with_nans, 2, return_indices=True)
out.sum().backward()
print(out, indices, with_nans.grad)
flat = torch.tensor([[3.0, 1.0, 3.0, 5.0, 5.0]], requires_grad=True)
out, indices = F.max_pool1d(flat, 2, stride=1, return_indices=True)
print(out, indices)

planes = torch.tensor(np.arange(50.0).reshape(2, 5, 5), requires_grad=True)
averaged = F.avg_pool2d(planes, 2, padding=1, ceil_mode=True)
print(averaged[0], averaged.grad_fn.name())
averaged.sum().backward()
print(planes.grad[0])
print(F.avg_pool2d(planes, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)[1])
print(F.avg_pool2d(planes, 2, divisor_override=3)[0])
grid = torch.tensor(np.arange(32.0).reshape(1, 2, 4, 4), requires_grad=True)
print(F.adaptive_avg_pool2d(grid, (2, 1)), F.adaptive_avg_pool2d(grid, 1).grad_fn.name())
print(F.conv2d(x[0], w, groups=2).grad_fn.name(), F.max_pool1d(same, 2).grad_fn.name())
counts = torch.tensor(np.arange(-12, 13).reshape(1, 5, 5) * 7)
print(F.avg_pool2d(counts, 2, padding=1, ceil_mode=True), F.max_pool2d(counts, 2, padding=1))

for call in ["F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 3, 2, 2))",
             "F.conv2d(torch.ones(1, 4, 4, 4), torch.ones(3, 2, 2, 2), groups=2)",
             "F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 5, 5))",
             "F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 2, 2), stride=2, padding='same')",
             "F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 2, 2), padding='full')",
             "F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 2, 2), stride=(1, 1, 1))",
             "F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 2, 2), padding=-1)",
             "F.conv2d(torch.ones(1, 2, 4, 4), torch.ones(3, 2, 2, 2), bias=torch.ones(2))",
             "F.conv2d(torch.ones(1, 2, 4, 4).double(), torch.ones(3, 2, 2, 2))",
             "F.conv2d(torch.ones(1, 2, 4, 4, 4), torch.ones(3, 2, 2, 2))",
             "F.max_pool2d(torch.ones(1, 4, 4), 2, padding=2)",
             "F.max_pool2d(torch.ones(1, 1, 1, 1), 2)",
             "F.max_pool2d(torch.ones(4, 4), 2)",
             "F.max_pool1d(torch.ones(4), 2)",
             "F.avg_pool2d(torch.ones(1, 4, 4), 2, divisor_override=0)",
             "nn.Conv2d(4, 3, 3, groups=2)",
             "nn.Conv2d(3, 4, 3, stride=2, padding='same')"]:  # padding='full' names a set: its order varies
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)


class LeNet(nn.Module):
    """The CIFAR tutorial's network, for 1 x 28 x 28 digits."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


net = LeNet().double()
print(net)
with torch.no_grad():
    for name, parameter in net.named_parameters():  # the same weights under both libraries
        parameter.copy_(torch.tensor(rng.uniform(-0.1, 0.1, tuple(parameter.shape))))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
images = torch.tensor(rng.standard_normal((8, 1, 28, 28)))
labels = torch.tensor(rng.integers(0, 10, 8))
for step in range(3):
    optimizer.zero_grad()
    outputs = net(images)
    loss = criterion(outputs, labels)
    loss.backward()
    if step == 0:
        print(outputs.grad_fn.name(), loss.grad_fn.name(), np.round(outputs.detach().numpy()[0], 5))
        print(np.round(net.conv1.weight.grad.numpy()[0, 0], 5), np.round(net.conv2.bias.grad.numpy(), 5))
    optimizer.step()
    print(step, round(loss.item(), 6))
print(np.round(net.conv1.bias.detach().numpy(), 5), np.round(float(net.conv2.weight.detach().sum()), 5))
with torch.no_grad():
    print(net(images).argmax(1))

single = LeNet()  # float32, as the tutorial runs it
with torch.no_grad():
    for mine, theirs in zip(single.parameters(), net.parameters()):
        mine.copy_(theirs.float())
loss = criterion(single(images.float()), labels)
loss.backward()
print(loss.dtype, single.conv1.weight.grad.dtype, round(loss.item(), 3), single(images.float()).argmax(1))
