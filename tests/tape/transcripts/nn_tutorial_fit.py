""""What is torch.nn really?" refactored to its end, on synthetic 8x8 images instead of MNIST: TensorDataset,
DataLoader, a get_data/fit pair with model.train()/model.eval(), a Lambda module, a WrappedDataLoader, a CNN
ending in AdaptiveAvgPool2d, and SGD with momentum; then the validation losses and accuracies PyTorch prints.

The training loader does not shuffle (shuffled orders are numpy's here, not PyTorch's).
"""

import numpy as np

import torch

nn = torch.nn
F = nn.functional
optim = torch.optim
TensorDataset = torch.utils.data.TensorDataset
DataLoader = torch.utils.data.DataLoader

rng = np.random.default_rng(5)
x_all = rng.normal(0, 0.5, size=(96, 64)).astype(np.float32)
y_all = rng.integers(0, 4, size=96)
for row, label in zip(x_all, y_all):
    row.reshape(8, 8)[2 * label:2 * label + 2, :] += 1.0
x_train, y_train, x_valid, y_valid = map(torch.tensor, (x_all[:64], y_all[:64], x_all[64:], y_all[64:]))
n, c = x_train.shape
print(x_train.shape, y_train.min(), y_train.max(), x_train.dtype, y_train.dtype)

bs = 16
lr = 0.1
epochs = 3
loss_func = F.cross_entropy


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(epoch, f"{val_loss:.5f}")


def get_data(train_ds, valid_ds, bs):
    return (DataLoader(train_ds, batch_size=bs, shuffle=False), DataLoader(valid_ds, batch_size=bs * 2))


class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x, y):
    return x.view(-1, 1, 8, 8), y


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield (self.func(*b))


def fixed_weights(model, seed):
    generator = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.tensor(generator.uniform(-0.4, 0.4, tuple(p.shape)), dtype=torch.float32))


train_ds = TensorDataset(x_train, y_train)
valid_ds = TensorDataset(x_valid, y_valid)
train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
print(len(train_dl), len(valid_dl), len(train_dl.dataset))

model = nn.Sequential(nn.Linear(64, 4))
fixed_weights(model, 0)
opt = optim.SGD(model.parameters(), lr=lr)
xb, yb = next(iter(train_dl))
print(f"{loss_func(model(xb), yb).item():.5f}", f"{accuracy(model(xb), yb).item():.4f}")
fit(epochs, model, loss_func, opt, train_dl, valid_dl)
print(f"{loss_func(model(xb), yb).item():.5f}", f"{accuracy(model(xb), yb).item():.4f}")

train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)
model = nn.Sequential(
    nn.Conv2d(1, 4, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(4, 4, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(4, 4, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
fixed_weights(model, 1)
print(model)
opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
fit(epochs, model, loss_func, opt, train_dl, valid_dl)
with torch.no_grad():
    print(np.mean([accuracy(model(xb), yb).item() for xb, yb in valid_dl]))
