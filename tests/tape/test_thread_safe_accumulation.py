"""Gradient accumulation into one shared leaf from many threads loses nothing.

PyTorch's AccumulateGrad holds a lock around the read-modify-write of
``.grad``; without one, two threads that both see ``grad is None`` each store
their own gradient, and two in-place additions can interleave.
"""

import sys
import threading

import numpy as np

from astgrad.tape import tensor

THREADS = 8
ROUNDS = 300
SIZE = 20_000


def test_eight_threads_backward_into_one_leaf_lose_nothing():
    leaf = tensor(np.zeros(SIZE), requires_grad=True)
    weights = [np.full(SIZE, float(k + 1)) for k in range(THREADS)]
    expected = float(sum(range(1, THREADS + 1)))
    rounds = []  # one entry per finished round: did it lose an update?

    def between_rounds():  # run by one thread while all eight wait at the barrier
        if leaf.grad is not None:
            rounds.append(not np.all(leaf.grad.numpy() == expected))
        leaf.grad = None

    barrier = threading.Barrier(THREADS, action=between_rounds)
    errors = []

    def work(k):
        try:
            for _ in range(ROUNDS):
                barrier.wait()
                (leaf * weights[k]).sum().backward()
            barrier.wait()
        except Exception as error:  # reported below, not lost in the thread
            errors.append(error)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # quick hand-overs: the rounds run fast and interleave more
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert not errors
    assert len(rounds) == ROUNDS
    assert sum(rounds) == 0, f"{sum(rounds)} of {ROUNDS} rounds lost a gradient"


def test_accumulation_keeps_adding_in_place_on_one_thread():
    leaf = tensor(np.zeros(3), requires_grad=True)
    (leaf * 2.0).sum().backward()
    first = leaf.grad
    (leaf * 3.0).sum().backward()
    assert leaf.grad is first
    np.testing.assert_array_equal(leaf.grad.numpy(), [5.0, 5.0, 5.0])
