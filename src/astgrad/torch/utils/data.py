"""``torch.utils.data``: datasets, samplers and the ``DataLoader`` of PyTorch's training loops.

A ``DataLoader`` draws indices from a sampler, groups them into batches
(``batch_size``, ``drop_last``), fetches ``dataset[i]`` for each and
collates the samples as PyTorch's ``default_collate`` does: tensors are
stacked, numpy arrays and numbers become tensors (Python floats float64,
ints int64), strings stay lists, and dicts, tuples and lists are collated
field by field (a tuple of fields comes back as a list, as in PyTorch).
Batches come in PyTorch's order for the same indices; ``shuffle=True``
and ``random_split`` draw their permutations from the tape's generator
(``torch.manual_seed`` or ``generator=``), so they repeat under a seed but
are not PyTorch's permutations.  Every batch is loaded in the calling
process: ``num_workers`` changes nothing but is checked as PyTorch checks it.
"""

from __future__ import annotations

import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings
from typing import Any

import numpy as np

from ...tape import Tensor, as_tensor, is_tensor, rand, randperm, stack, tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "BatchSampler", "DataLoader",
           "default_collate", "default_convert", "get_worker_info"]

COLLATE_REFUSED = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
STRINGS_OR_OBJECTS = re.compile("[SaUO]")


# ---------------------------------------------------------------- datasets

class Dataset:
    """A map-style dataset: ``dataset[i]`` is sample ``i``; ``len(dataset)`` how many (subclasses define both)."""

    def __class_getitem__(cls, item):
        """``Dataset[tuple[Tensor, int]]`` in a class statement or annotation, as PyTorch's generic class allows."""
        return cls

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other) -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read by iterating it (``__iter__``), for streams without indices."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")


class TensorDataset(Dataset):
    """Sample ``i`` is ``(t[i] for t in tensors)``: the tensors' first dimensions are the samples."""

    def __init__(self, *tensors: Tensor) -> None:
        if not all(tensors[0].size(0) == t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class ConcatDataset(Dataset):
    """The samples of several datasets one after another."""

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            index = len(self) + index
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset, lengths, generator=None) -> list:
    """Non-overlapping ``Subset``s of the given lengths (or fractions summing to 1), over a random permutation.

    The permutation is the tape's (``generator``'s, or the default one), not
    PyTorch's: a seed repeats a split here, not PyTorch's split.
    """
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = [int(math.floor(len(dataset) * fraction)) for fraction in lengths]
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = sizes
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]


# ---------------------------------------------------------------- samplers

class Sampler:
    """An iterable of dataset indices (or of lists of them, for a batch sampler)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __class_getitem__(cls, item):
        return cls

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A new permutation of the indices each pass (``num_samples`` draws with ``replacement``)."""

    def __init__(self, data_source, replacement: bool = False, num_samples=None, generator=None) -> None:
        self.data_source, self.replacement, self._num_samples, self.generator = (data_source, replacement,
                                                                                 num_samples, generator)
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:  # uniform integers in [0, n) from uniform floats in [0, 1)
            draws = rand(self.num_samples, dtype=np.float64, generator=self.generator) * n
            return iter(draws.floor().long().tolist())
        whole, rest = divmod(self.num_samples, n)
        order = [i for _ in range(whole) for i in randperm(n, generator=self.generator).tolist()]
        return iter(order + randperm(n, generator=self.generator).tolist()[:rest])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a new random order each pass."""

    def __init__(self, indices, generator=None) -> None:
        self.indices, self.generator = indices, generator

    def __iter__(self):
        return iter([self.indices[i] for i in randperm(len(self.indices), generator=self.generator).tolist()])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of ``batch_size`` indices from ``sampler``; the last one shorter unless ``drop_last``."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# ---------------------------------------------------------------- collating

def default_collate(batch):
    """One batch from a list of samples, as PyTorch's ``default_collate`` makes it (see the module's text)."""
    elem = batch[0]
    if is_tensor(elem):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if STRINGS_OR_OBJECTS.search(elem.dtype.str) is not None:
            raise TypeError(COLLATE_REFUSED.format(elem.dtype))
        return default_collate([as_tensor(b) for b in batch])
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        return as_tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=np.float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(collated)
            return clone
        mapping_type: Any = type(elem)
        try:
            return mapping_type(collated)
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(list(samples)) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(list(samples)) for samples in zip(*batch)]
        if isinstance(elem, tuple):
            return fields  # PyTorch's choice, kept for compatibility: a tuple of fields collates to a list
        if isinstance(elem, collections.abc.MutableSequence):
            copied = copy.copy(elem)
            copied[:] = fields
            return copied
        sequence_type: Any = type(elem)
        try:
            return sequence_type(fields)
        except TypeError:
            return fields
    raise TypeError(COLLATE_REFUSED.format(type(elem)))


def default_convert(data):
    """A sample without batching (``batch_size=None``): numpy arrays become tensors, containers are walked."""
    if is_tensor(data):
        return data
    if isinstance(data, np.ndarray):
        return data if STRINGS_OR_OBJECTS.search(data.dtype.str) is not None else as_tensor(data)
    if isinstance(data, (np.bool_, np.number)):
        return as_tensor(np.asarray(data))
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(value) for key, value in data.items()}
        if isinstance(data, collections.abc.MutableMapping):
            clone = copy.copy(data)
            clone.update(converted)
            return clone
        return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, collections.abc.Sequence):
        return [default_convert(d) for d in data]
    return data


def get_worker_info():
    """``None``: every batch is loaded in the calling process, as with PyTorch's ``num_workers=0``."""
    return None


# ---------------------------------------------------------------- the loader

class DataLoader:
    """Batches of a dataset: ``for inputs, labels in DataLoader(dataset, batch_size=4, shuffle=True): ...``.

    ``len(loader)`` is the number of batches.  ``num_workers`` is accepted
    and checked, but the batches are loaded here, in the calling process
    (the same batches in the same order); a ``worker_init_fn`` would never
    run, so it is refused with workers.  ``pin_memory`` warns as PyTorch
    does on a machine without an accelerator.
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if num_workers > 0 and worker_init_fn is not None:
            raise ValueError("astgrad.torch.utils.data: batches are loaded in the calling process, so worker_init_fn "
                             "would never run; drop it (or num_workers) and seed in the calling process")
        self.dataset, self.num_workers, self.prefetch_factor = dataset, num_workers, prefetch_factor
        self.pin_memory, self.pin_memory_device, self.timeout = pin_memory, pin_memory_device, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.persistent_workers, self.in_order, self.generator = persistent_workers, in_order, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size, self.drop_last, self.sampler, self.batch_sampler = batch_size, drop_last, sampler, batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None or self._iterable and self.batch_size is not None

    def __iter__(self):
        if self.pin_memory:
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=2)
        return self._batches()

    def _batches(self):
        fetch = getattr(self.dataset, "__getitems__", None)
        if self._iterable:
            samples = iter(self.dataset)
            if self.batch_size is None:
                yield from (self.collate_fn(sample) for sample in samples)
                return
            while batch := list(itertools.islice(samples, self.batch_size)):
                if len(batch) < self.batch_size and self.drop_last:
                    return
                yield self.collate_fn(batch)
        elif self._auto_collation:
            for indices in self.batch_sampler:
                yield self.collate_fn(fetch(indices) if fetch else [self.dataset[i] for i in indices])
        else:
            for index in self.sampler:
                yield self.collate_fn(self.dataset[index])

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                rounding = math.floor if self.drop_last else math.ceil
                length = rounding(length / self.batch_size)
            return length
        return len(self.batch_sampler if self._auto_collation else self.sampler)
