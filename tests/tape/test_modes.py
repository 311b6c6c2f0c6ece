"""Grad modes (TORCH_SEMANTICS.md section 9)."""

import threading

import pytest

import astgrad.torch as torch


def test_default_and_nesting():
    x = torch.ones(2, requires_grad=True)
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        y = x * 2
        assert repr(y) == "tensor([2., 2.])" and y.requires_grad is False and y.is_leaf and y.grad_fn is None
        with torch.no_grad():
            assert not torch.is_grad_enabled()
        assert not torch.is_grad_enabled()
        with torch.enable_grad():
            assert torch.is_grad_enabled()
            z = x * 2
            assert repr(z) == "tensor([2., 2.], grad_fn=<MulBackward0>)"
        assert not torch.is_grad_enabled()
        assert (x * 2).requires_grad is False
    assert torch.is_grad_enabled()
    assert (x ** 2).requires_grad and x.requires_grad


def test_restored_when_the_block_raises():
    with pytest.raises(ValueError):
        with torch.no_grad():
            with torch.enable_grad():
                raise ValueError("boom")
    assert torch.is_grad_enabled()
    with pytest.raises(KeyError):
        with torch.set_grad_enabled(False):
            raise KeyError
    assert torch.is_grad_enabled()


def test_set_grad_enabled_as_call_and_context():
    x = torch.ones(2, requires_grad=True)
    torch.set_grad_enabled(False)
    try:
        assert not torch.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()
    for is_train in (True, False):
        with torch.set_grad_enabled(is_train):
            assert torch.is_grad_enabled() is is_train
            assert (x * 2).requires_grad is is_train
        assert torch.is_grad_enabled()


def test_decorators_bare_and_called():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad()
    def called(t):
        return t * 2

    @torch.no_grad
    def bare(t):
        return t * 2

    @torch.enable_grad()
    def enabled(t):
        return t * 2

    assert called.__name__ == "called" and bare.__name__ == "bare"
    assert not called(x).requires_grad and not bare(x).requires_grad
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert enabled(x).requires_grad
        assert not torch.is_grad_enabled()

    @torch.set_grad_enabled(False)
    def switched(t):
        return t * 2

    assert torch.is_grad_enabled() and not switched(x).requires_grad and torch.is_grad_enabled()


def test_decorated_function_restores_mode_when_it_raises():
    @torch.no_grad()
    def fails():
        raise RuntimeError("inside")

    with pytest.raises(RuntimeError, match="inside"):
        fails()
    assert torch.is_grad_enabled()


def test_mode_is_per_thread():
    seen = {}
    entered, release = threading.Event(), threading.Event()

    def worker():
        seen["worker_start"] = torch.is_grad_enabled()
        with torch.no_grad():
            entered.set()
            release.wait(5)
            seen["worker_inside"] = torch.is_grad_enabled()

    thread = threading.Thread(target=worker)
    thread.start()
    entered.wait(5)
    seen["main_while_worker_in_no_grad"] = torch.is_grad_enabled()
    x = torch.ones(2, requires_grad=True)
    seen["main_records"] = (x * 2).requires_grad
    release.set()
    thread.join(5)
    assert seen == {"worker_start": True, "worker_inside": False,
                    "main_while_worker_in_no_grad": True, "main_records": True}


def test_factories_and_requires_grad_under_no_grad():
    with torch.no_grad():
        t = torch.ones(2, requires_grad=True)
        u = torch.zeros(2).requires_grad_()
    assert repr(t) == "tensor([1., 1.], requires_grad=True)" and t.is_leaf
    assert u.requires_grad and u.is_leaf


def test_inference_mode_behaves_like_no_grad():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
    assert y.requires_grad is False and repr(y) == "tensor([2., 2.])"


def test_backward_of_a_graph_built_before_no_grad_still_works():
    x = torch.ones(2, requires_grad=True)
    y = (x * 3).sum()
    with torch.no_grad():
        y.backward()
    assert repr(x.grad) == "tensor([3., 3.])"


def test_is_grad_enabled_nesting_and_restoring():
    x = torch.ones(2, requires_grad=True)
    assert torch.is_grad_enabled()
    with torch.no_grad():
        assert not torch.is_grad_enabled()
        assert repr(x * 2) == "tensor([2., 2.])"
        with torch.no_grad():
            assert not torch.is_grad_enabled()
        with torch.enable_grad():
            assert torch.is_grad_enabled()
            assert repr(x * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    with pytest.raises(KeyError):
        with torch.no_grad():
            raise KeyError
    assert torch.is_grad_enabled()


def test_inference_mode_behaves_like_no_grad_for_every_mode_query():
    x = torch.ones(2, requires_grad=True)
    with torch.inference_mode():
        y = x * 2
        assert not torch.is_grad_enabled()
    assert not y.requires_grad and repr(y) == "tensor([2., 2.])"
    assert x.requires_grad and torch.is_grad_enabled()
    with torch.inference_mode(False):
        assert (x * 2).requires_grad

    @torch.inference_mode()
    def double(t):
        return t * 2

    assert not double(x).requires_grad and double.__name__ == "double"


def test_set_grad_enabled_as_call_and_context_restores_on_exit():
    x = torch.ones(2, requires_grad=True)
    with torch.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert torch.is_grad_enabled()
    mode = torch.set_grad_enabled(False)
    try:
        assert not torch.is_grad_enabled()
        assert repr(mode) == "torch.autograd.grad_mode.set_grad_enabled(mode=False)"
    finally:
        torch.set_grad_enabled(True)
    assert torch.is_grad_enabled()


def test_decorators_bare_and_called_keep_the_name():
    x = torch.ones(2, requires_grad=True)

    @torch.no_grad
    def bare(t):
        return t * 2

    @torch.no_grad()
    def called(t):
        return t * 2

    @torch.enable_grad()
    def recorded(t):
        return t * 2

    assert not bare(x).requires_grad and not called(x).requires_grad
    assert (bare.__name__, called.__name__) == ("bare", "called")
    with torch.no_grad():
        assert recorded(x).requires_grad


def test_requires_grad_propagation():
    a, b = torch.ones(2, requires_grad=True), torch.ones(2)
    assert (a + b).requires_grad and not (b + b).requires_grad and (a * 0).requires_grad
    assert torch.cat([a, b]).requires_grad and (a @ a).requires_grad and a.clone().requires_grad
    assert not (a > 0).requires_grad and not a.argmax().requires_grad and not a.long().requires_grad
    assert not torch.where(a > 0, b, b).requires_grad and not torch.zeros_like(a).requires_grad
