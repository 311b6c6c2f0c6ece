"""torch.utils.data where a transcript cannot compare with PyTorch: shuffled orders and random splits (numpy's
permutations), repeatability under seeds and generators, workers, pinned memory and iterable datasets.

PyTorch's batches, lengths and messages are pinned by transcripts/data_loading.py.
"""

import warnings

import numpy as np
import pytest

import astgrad.torch as torch

data = torch.utils.data


def labels_of(loader):
    return [y for _, ys in loader for y in ys.tolist()]


def test_each_shuffled_epoch_is_a_new_permutation_repeatable_under_a_seed():
    dataset = data.TensorDataset(torch.zeros(50, 1), torch.arange(50))
    loader = data.DataLoader(dataset, batch_size=7, shuffle=True)
    torch.manual_seed(3)
    first, second = labels_of(loader), labels_of(loader)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != second and first != list(range(50))
    torch.manual_seed(3)
    assert labels_of(loader) == first


def test_a_generator_fixes_the_shuffle_apart_from_the_global_seed():
    dataset = data.TensorDataset(torch.arange(20))
    orders = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        loader = data.DataLoader(dataset, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(7))
        orders.append([x for (xs,) in loader for x in xs.tolist()])
    assert orders[0] == orders[1] and sorted(orders[0]) == list(range(20))


def test_random_split_is_disjoint_complete_and_repeatable_with_a_generator():
    dataset = data.TensorDataset(torch.arange(30))
    splits = [data.random_split(dataset, [0.5, 0.3, 0.2], generator=torch.Generator().manual_seed(42))
              for _ in range(2)]
    assert [s.indices for s in splits[0]] == [s.indices for s in splits[1]]
    assert [len(s) for s in splits[0]] == [15, 9, 6]
    assert sorted(i for s in splits[0] for i in s.indices) == list(range(30))
    assert [int(s[0][0]) for s in splits[0]] == [s.indices[0] for s in splits[0]]
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        data.random_split(range(3), [0.9, 0.1])


def test_workers_load_the_same_batches_in_this_process():
    dataset = data.TensorDataset(torch.arange(10.0).view(5, 2), torch.arange(5))
    plain = [[t.tolist() for t in batch] for batch in data.DataLoader(dataset, batch_size=2)]
    workers = data.DataLoader(dataset, batch_size=2, num_workers=2, persistent_workers=True, prefetch_factor=4)
    assert [[t.tolist() for t in batch] for batch in workers] == plain
    with pytest.raises(ValueError, match="worker_init_fn would never run"):
        data.DataLoader(dataset, num_workers=2, worker_init_fn=lambda worker_id: None)
    assert data.get_worker_info() is None


def test_pinned_memory_warns_as_without_an_accelerator():
    loader = data.DataLoader(data.TensorDataset(torch.ones(2)), pin_memory=True)
    with pytest.warns(UserWarning, match="'pin_memory' argument is set as true but no accelerator is found"):
        assert len(list(loader)) == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(data.DataLoader(data.TensorDataset(torch.ones(2))))


class Counting(data.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_an_iterable_dataset_is_batched_in_its_own_order():
    assert [b.tolist() for b in data.DataLoader(Counting(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in data.DataLoader(Counting(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(data.DataLoader(Counting(7), batch_size=3)) == 3
    assert len(data.DataLoader(Counting(7), batch_size=3, drop_last=True)) == 2
    assert list(data.DataLoader(Counting(2), batch_size=None)) == [0, 1]
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        data.DataLoader(Counting(3), shuffle=True)


def test_a_batch_of_samples_that_require_grad_keeps_their_history():
    w = torch.tensor([1.0, 2.0], requires_grad=True)

    class Scaled(data.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return w * (i + 1)

    (batch,) = list(data.DataLoader(Scaled(), batch_size=3))
    batch.sum().backward()
    assert w.grad.tolist() == [6.0, 6.0]


def test_collated_numbers_take_pytorchs_dtypes_not_the_default_dtype():
    torch.set_default_dtype(torch.float64)
    try:
        assert data.default_collate([1.5, 2.5]).dtype == torch.float64
        assert data.default_collate([np.float32(1.5)]).dtype == torch.float32
    finally:
        torch.set_default_dtype(torch.float32)
    assert data.default_collate([1.5, 2.5]).dtype == torch.float64
    assert data.default_collate([1, 2]).dtype == torch.int64


def test_datasets_and_samplers_subscript_as_generic_classes():
    class Squares(data.Dataset[int]):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return i * i

    assert [b.tolist() for b in data.DataLoader(Squares(), batch_size=2)] == [[0, 1], [4]]
    assert data.Sampler[int] is data.Sampler
