"""torch.get_default_dtype/set_default_dtype, the bfloat16 name, and is_inference_mode_enabled.

The default dtype decides what Python floats (and complex numbers) become in
new tensors and in promotion, and which dtype a repr leaves unsaid.
"""

import pickle

import pytest

import astgrad.torch as torch


@pytest.fixture
def float64_default():
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(torch.float32)


def test_the_default_is_float32():
    assert torch.get_default_dtype() is torch.float32
    assert torch.tensor([1.5]).dtype == torch.float32
    assert torch.tensor([1 + 2j]).dtype == torch.complex64
    assert repr(torch.tensor([1 + 2j])) == "tensor([1.+2.j])"


def test_a_float64_default_changes_factories_promotion_and_printing(float64_default):
    assert torch.get_default_dtype() is torch.float64
    for made in (torch.tensor([1.5]), torch.ones(2), torch.zeros(1), torch.randn(2), torch.arange(2.0),
                 torch.Tensor([1, 2]), torch.tensor([1, 2]) * 1.5, torch.tensor([1, 2]) / 2):
        assert made.dtype == torch.float64, made
    assert torch.tensor([1 + 2j]).dtype == torch.complex128
    assert repr(torch.tensor([1.5])) == "tensor([1.5000])"
    assert repr(torch.tensor([1.5], dtype=torch.float32)) == "tensor([1.5000], dtype=torch.float32)"
    assert repr(torch.tensor([], dtype=torch.float32)) == "tensor([], dtype=torch.float32)"
    assert repr(torch.tensor([1 + 1j])) == "tensor([1.+1.j])"
    assert torch.tensor([1.0]).float().dtype == torch.float32  # .float() is always float32
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    assert repr(x.grad) == "tensor([2., 4.])"


def test_only_floating_point_defaults():
    for bad in (torch.int64, torch.bool, torch.complex64):
        with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
            torch.set_default_dtype(bad)
    assert torch.get_default_dtype() is torch.float32


def test_bfloat16_is_a_name_that_refuses_to_make_tensors():
    assert repr(torch.bfloat16) == "torch.bfloat16"
    assert torch.bfloat16.is_floating_point and torch.bfloat16.itemsize == 2
    assert torch.bfloat16 != torch.float16 and torch.bfloat16 != torch.float32
    assert pickle.loads(pickle.dumps(torch.bfloat16)) is torch.bfloat16
    message = "^astgrad tensors cannot hold torch.bfloat16: numpy has no bfloat16 type"
    for make in (lambda: torch.zeros(2, dtype=torch.bfloat16), lambda: torch.tensor([1.0], dtype=torch.bfloat16),
                 lambda: torch.ones(2).to(torch.bfloat16), lambda: torch.set_default_dtype(torch.bfloat16)):
        with pytest.raises(TypeError, match=message):
            make()


def test_is_inference_mode_enabled_follows_the_blocks():
    assert torch.is_inference_mode_enabled() is False
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled() is True and torch.is_grad_enabled() is False
        with torch.inference_mode(False):
            assert torch.is_inference_mode_enabled() is False
        assert torch.is_inference_mode_enabled() is True
    assert torch.is_inference_mode_enabled() is False
    with torch.no_grad():
        assert torch.is_inference_mode_enabled() is False

    @torch.inference_mode()
    def inside():
        return torch.is_inference_mode_enabled()

    assert inside() is True and torch.is_inference_mode_enabled() is False
    with pytest.raises(ValueError):
        with torch.inference_mode():
            raise ValueError
    assert torch.is_inference_mode_enabled() is False


def test_promotion_follows_the_default_dtype_each_time():
    """Promotion results are cached: switching the default and back must not keep the other default's dtype."""
    assert (torch.tensor([1, 2]) * 1.5).dtype == torch.float32
    torch.set_default_dtype(torch.float64)
    try:
        assert (torch.tensor([1, 2]) * 1.5).dtype == torch.float64
        assert (torch.tensor([1, 2]) / 2).dtype == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert (torch.tensor([1, 2]) * 1.5).dtype == torch.float32
    assert (torch.tensor([1, 2]) / 2).dtype == torch.float32
