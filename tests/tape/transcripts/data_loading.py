"""torch.utils.data as the tutorials use it: datasets, DataLoader batches and lengths, collation, samplers, errors.

Shuffled orders and random splits are not compared (the permutations are
numpy's); what they must keep (every index once per epoch, the split sizes)
is printed instead.
"""

import collections

import numpy as np

import torch

data = torch.utils.data

features = torch.arange(14.0).view(7, 2)
labels = torch.tensor([0, 1, 0, 1, 1, 0, 1])
dataset = data.TensorDataset(features, labels)
print(len(dataset), dataset[2], dataset[-1][1])
for drop_last in (False, True):
    loader = data.DataLoader(dataset, batch_size=3, drop_last=drop_last)
    print(len(loader), loader.batch_size, loader.drop_last, len(loader.dataset))
    for inputs, targets in loader:
        print(inputs.tolist(), targets, inputs.dtype, targets.dtype)
print(len(data.DataLoader(dataset)), next(iter(data.DataLoader(dataset))))
print([len(b[0]) for b in data.DataLoader(dataset, batch_size=4, shuffle=False)])


class Points(data.Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": np.full(2, i, dtype=np.float32), "y": float(i) / 2, "id": i, "name": f"p{i}",
                "pair": (i, np.float64(i) * 3), "flags": [i % 2 == 0, True]}


for batch in data.DataLoader(Points(5), batch_size=2):
    print({k: batch[k] for k in sorted(batch)})
print(data.DataLoader(Points(3), batch_size=None).__iter__().__next__()["x"])

Pair = collections.namedtuple("Pair", ["a", "b"])
print(data.default_collate([Pair(1, 2.0), Pair(3, 4.0)]))
print(data.default_collate([(np.array([1.5]), 2), (np.array([2.5]), 3)]))
print(data.default_collate([np.int32(4), np.int32(5)]), data.default_collate([True, False]))
print(data.default_collate([torch.tensor([1, 2]), torch.tensor([3, 4])]), data.default_collate([b"a", b"b"]))
print(data.default_convert((np.arange(3), 4, "s")), data.default_convert([np.ones((1, 1), dtype=np.float32)]))

subset = data.Subset(dataset, [5, 0, 3])
print(len(subset), subset[0], [y.tolist() for _, y in data.DataLoader(subset, batch_size=2)])
both = dataset + data.TensorDataset(torch.zeros(2, 2), torch.tensor([9, 9]))
print(len(both), both[7], both[-1])
print(list(data.BatchSampler(data.SequentialSampler(range(10)), batch_size=4, drop_last=False)))
print(list(data.BatchSampler(data.SequentialSampler(range(10)), batch_size=4, drop_last=True)))
print(len(data.BatchSampler(range(10), 3, False)), len(data.BatchSampler(range(10), 3, True)))
batches = data.DataLoader(dataset, batch_sampler=[[0, 1], [6], [2, 3, 4]])
print(len(batches), [b[1].tolist() for b in batches])

torch.manual_seed(0)
shuffled = data.DataLoader(dataset, batch_size=3, shuffle=True)
for epoch in range(2):
    seen = [y for _, targets in shuffled for y in targets.tolist()]
    print(epoch, len(shuffled), sorted(seen))
print(sorted(x for batch in data.DataLoader(range(10), batch_size=4, shuffle=True) for x in batch.tolist()))
sampler = data.RandomSampler(range(6), replacement=True, num_samples=9)
drawn = list(sampler)
print(len(sampler), len(drawn), all(0 <= i < 6 for i in drawn))
print(sorted(data.SubsetRandomSampler([3, 1, 4])))

generator = torch.Generator().manual_seed(42)
train, test = data.random_split(dataset, [5, 2], generator=generator)
print(type(train).__name__, len(train), len(test), sorted(train.indices + test.indices))
print([len(s) for s in data.random_split(range(10), [0.3, 0.3, 0.4])])
print([len(s) for s in data.random_split(range(11), [0.5, 0.5])])

for call in ["data.TensorDataset(torch.zeros(3), torch.zeros(4))",
             "data.DataLoader(dataset, sampler=data.SequentialSampler(dataset), shuffle=True)",
             "data.DataLoader(dataset, batch_sampler=[[0]], batch_size=2)",
             "data.DataLoader(dataset, batch_size=None, drop_last=True)",
             "data.DataLoader(dataset, num_workers=-1)",
             "data.DataLoader(dataset, prefetch_factor=2)",
             "data.DataLoader(dataset, persistent_workers=True)",
             "data.BatchSampler(range(3), 0, False)",
             "data.default_collate([[1, 2], [3]])",
             "data.default_collate([object(), object()])",
             "data.default_collate([np.array(['a']), np.array(['b'])])",
             "data.random_split(range(5), [2, 2])",
             "data.Dataset()[0]"]:
    try:
        eval(call)
    except Exception as error:
        print(type(error).__name__, ":", error)
