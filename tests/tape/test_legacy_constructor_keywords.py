"""``torch.Tensor(data, requires_grad=True)``: PyTorch refuses keywords its legacy constructor lacks.

Ignoring ``requires_grad`` would leave a tensor without a tape and a later
``backward()`` failing far from the cause; the messages below were printed
by PyTorch 2.13 for the same calls.
"""

import numpy as np
import pytest

import astgrad.torch as torch

OVERLOADS = [" * (*, torch.device device = None)", " * (torch.Storage storage)", " * (Tensor other)",
             " * (tuple of ints size, *, torch.device device = None)", " * (object data, *, torch.device device = None)"]


def expected(got: str, failed: tuple, keywords: str) -> str:
    lines = [f"new() received an invalid combination of arguments - got ({got}), but expected one of:"]
    for i, overload in enumerate(OVERLOADS):
        lines.append(overload)
        if i in failed:
            lines.append(f"      didn't match because some of the keywords were incorrect: {keywords}")
    return "\n".join(lines) + "\n"


CASES = [
    ((), {"requires_grad": True}, expected("requires_grad=bool, ", (1, 2), "requires_grad")),
    (([1.0, 2.0],), {"requires_grad": True}, expected("list, requires_grad=bool", (0,), "requires_grad")),
    ((3,), {"requires_grad": True}, expected("int, requires_grad=bool", (0,), "requires_grad")),
    ((1.5,), {"requires_grad": True}, expected("float, requires_grad=bool", (0,), "requires_grad")),
    (((2, 3),), {"requires_grad": True}, expected("tuple, requires_grad=bool", (0,), "requires_grad")),
    ((np.ones(2),), {"foo": 1}, expected("numpy.ndarray, foo=int", (0,), "foo")),
    ((2, 3), {"requires_grad": True}, expected("int, int, requires_grad=bool", (3, 4), "requires_grad")),
    (([1.0],), {"requires_grad": True, "dtype": torch.float32},
     expected("list, dtype=torch.dtype, requires_grad=bool", (3, 4), "dtype, requires_grad")),
    (([1.0],), {"device": "cpu", "requires_grad": True},
     expected("list, requires_grad=bool, device=str", (3, 4), "requires_grad, device")),
    ((2, 3), {"requires_grad": True, "dtype": torch.float32},
     expected("int, int, dtype=torch.dtype, requires_grad=bool", (), "")),
]


@pytest.mark.parametrize("args, kwargs, message", CASES)
def test_a_keyword_the_legacy_constructor_lacks_is_refused_with_pytorchs_message(args, kwargs, message):
    with pytest.raises(TypeError) as info:
        torch.Tensor(*args, **kwargs)
    assert str(info.value) == message


def test_a_tensor_given_to_it_with_requires_grad_is_refused_too():
    with pytest.raises(TypeError, match=r"got \(Tensor, requires_grad=bool\)"):
        torch.Tensor(torch.ones(2), requires_grad=False)


def test_device_is_the_one_keyword_it_takes():
    t = torch.Tensor([1.0, 2.0], device="cpu")
    assert t.dtype == torch.float32 and t.tolist() == [1.0, 2.0] and not t.requires_grad
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        torch.Tensor([1.0], device="cuda")  # PyTorch's error on a machine without CUDA
