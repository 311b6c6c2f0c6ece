"""The classic training scripts on synthetic images, on fixed weights: the losses and accuracies PyTorch prints.

A small CNN trained as the "60 minute blitz" CIFAR classifier trains it (a
Dataset, DataLoaders, CrossEntropyLoss, SGD with momentum, and here a StepLR),
its state dict saved, loaded into a new model and evaluated; then the
pytorch/examples MNIST script's loop (log_softmax, nll_loss, Adadelta,
StepLR(gamma=0.7), its test() with reduction='sum' and argmax) and an MLP with
AdamW and CosineAnnealingLR. The loaders do not shuffle and the models have
no dropout: those draws are numpy's here, not PyTorch's.
"""

import os
import tempfile

import numpy as np

import torch

nn = torch.nn
F = nn.functional
data = torch.utils.data


class Shapes(data.Dataset):
    """12x12 one-channel images of three classes: a bright square, a bright bar, or noise alone."""

    def __init__(self, n, seed):
        rng = np.random.default_rng(seed)
        self.images = rng.normal(0, 0.3, size=(n, 1, 12, 12)).astype(np.float32)
        self.labels = [int(k) for k in rng.integers(0, 3, size=n)]
        for image, label, (r, c) in zip(self.images, self.labels, rng.integers(1, 7, size=(n, 2))):
            if label == 0:
                image[0, r:r + 4, c:c + 4] += 1.0
            elif label == 1:
                image[0, r, 1:11] += 1.5

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        return torch.from_numpy(self.images[index]), self.labels[index]


classes = ("square", "bar", "noise")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return self.fc2(x)


def fixed_weights(model, seed):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(rng.uniform(-0.5, 0.5, tuple(p.shape)), dtype=torch.float32))


trainset, testset = Shapes(48, 0), Shapes(24, 1)
trainloader = data.DataLoader(trainset, batch_size=8, shuffle=False)
testloader = data.DataLoader(testset, batch_size=8, shuffle=False)
print(len(trainset), len(trainloader), len(testloader))
images, labels = next(iter(trainloader))
print(images.shape, images.dtype, labels, " ".join(f"{classes[labels[j]]:5s}" for j in range(4)))

net = Net()
fixed_weights(net, 2)
print(net)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
for epoch in range(4):
    running_loss = 0.0
    for i, (inputs, labels) in enumerate(trainloader, 0):
        optimizer.zero_grad()
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        if i % 3 == 2:
            print(f"[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 3:.4f}")
            running_loss = 0.0
    scheduler.step()
    print("lr", scheduler.get_last_lr())
print("Finished Training")

PATH = os.path.join(tempfile.mkdtemp(), "shapes_net.pth")
torch.save(net.state_dict(), PATH)
net = Net()
print(net.load_state_dict(torch.load(PATH, weights_only=True)))
net.eval()
correct = 0
total = 0
correct_pred = {classname: 0 for classname in classes}
total_pred = {classname: 0 for classname in classes}
with torch.no_grad():
    for images, labels in testloader:
        outputs = net(images)
        _, predicted = torch.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
        for label, prediction in zip(labels, predicted):
            if label == prediction:
                correct_pred[classes[label]] += 1
            total_pred[classes[label]] += 1
print(f"Accuracy of the network on the {total} test images: {100 * correct // total} %")
for classname, correct_count in correct_pred.items():
    accuracy = 100 * float(correct_count) / total_pred[classname]
    print(f"Accuracy for class: {classname:5s} is {accuracy:.1f} %")


class MnistNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 4 * 4, 16)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def train(model, device, train_loader, optimizer, epoch):
    model.train()
    for batch_idx, (data_, target) in enumerate(train_loader):
        data_, target = data_.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data_)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 2 == 0:
            print("Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}".format(
                epoch, batch_idx * len(data_), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data_, target in test_loader:
            data_, target = data_.to(device), target.to(device)
            output = model(data_)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    print("\nTest set: Average loss: {:.4f}, Accuracy: {}/{} ({:.0f}%)\n".format(
        test_loss, correct, len(test_loader.dataset),
        100. * correct / len(test_loader.dataset)))


use_accel = torch.accelerator.is_available()
device = torch.accelerator.current_accelerator() if use_accel else torch.device("cpu")
train_kwargs = {"batch_size": 16}
test_kwargs = {"batch_size": 100}
train_loader = data.DataLoader(trainset, **train_kwargs)
test_loader = data.DataLoader(testset, **test_kwargs)
model = MnistNet().to(device)
fixed_weights(model, 3)
optimizer = torch.optim.Adadelta(model.parameters(), lr=1.0)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
for epoch in range(1, 4):
    train(model, device, train_loader, optimizer, epoch)
    test(model, device, test_loader)
    scheduler.step()
print(optimizer)

features = torch.from_numpy(trainset.images.reshape(48, -1))
targets = torch.tensor(trainset.labels)
mlp = nn.Sequential(nn.Linear(144, 32), nn.Tanh(), nn.Linear(32, 3))
fixed_weights(mlp, 4)
optimizer = torch.optim.AdamW(mlp.parameters(), lr=0.01, weight_decay=0.05)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=5)
loader = data.DataLoader(data.TensorDataset(features, targets), batch_size=12, drop_last=True)
for epoch in range(5):
    total = 0.0
    for x, y in loader:
        loss = F.cross_entropy(mlp(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        total += loss.item()
    scheduler.step()
    print(epoch, f"{total / len(loader):.4f}", f"{scheduler.get_last_lr()[0]:.6f}")
with torch.no_grad():
    print((mlp(features).argmax(1) == targets).float().mean().item())
