"""The backward pass runs a node only after every node that feeds it a gradient.

The engine runs the newest node reached so far (every edge points at an
older node) instead of counting each node's consumers first.  A node run
too early would pass on part of its gradient and drop the rest without an
error: graphs where one value is consumed at several depths, by several
roots, or by a root itself are checked against PyTorch's numbers, and an
edge to a newer node (which would break the order) is refused.
"""

import numpy as np
import pytest

import astgrad.torch as tape

torch = pytest.importorskip("torch")

X = np.array([[0.3, -1.2], [2.0, 0.7]])


def _shared_at_several_depths(lib, x):
    a = x * 2
    b = a + 1
    c = a * b
    d = b * c + a  # a reaches d directly, through b and through c
    e = lib.tanh(d) * a
    return (e * c).sum()


def _gradients(lib, build):
    x = lib.tensor(X, dtype=lib.float64, requires_grad=True)
    build(lib, x)
    return x.grad.detach().numpy().copy() if lib is torch else x.grad.numpy()


def test_a_value_consumed_at_several_depths_gets_every_contribution():
    def build(lib, x):
        _shared_at_several_depths(lib, x).backward()
    np.testing.assert_allclose(_gradients(tape, build), _gradients(torch, build), rtol=1e-13, atol=0)


def test_roots_that_feed_each_other():
    def build(lib, x):
        inner = (x * x).sum()
        outer = inner * 3 + (x * 2).sum()  # the first root is also an input of the second
        lib.autograd.backward([inner, outer, outer * 2])
    np.testing.assert_allclose(_gradients(tape, build), _gradients(torch, build), rtol=1e-13, atol=0)


def test_an_edge_to_a_newer_node_is_refused_and_no_grad_changes():
    x = tape.tensor(X, requires_grad=True)
    y = x * 2
    z = x * 3
    y.grad_fn.next_functions = ((z.grad_fn, 0),)  # made by hand: y's node now feeds the newer z's
    with pytest.raises(RuntimeError, match="an edge from MulBackward0 to the newer MulBackward0"):
        y.sum().backward()
    assert x.grad is None
