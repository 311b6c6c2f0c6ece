"""Complex tensors print as PyTorch prints them: real and imaginary parts each with their own float format.

PyTorch formats the real parts and the imaginary parts as two float tensors
(int, fixed or sci mode and width chosen from each part alone), pads the
imaginary part, appends ``j``, strips the padding and joins it with its sign.
A row holds as many elements as fit when each takes both widths plus ``j``.
"""

import numpy as np
import pytest

from astgrad.tape._format import format_tensor


@pytest.mark.parametrize("values, dtype, expected", [
    ([1 + 2j, 3.5 - 1j], np.complex64, "tensor([1.0000+2.j, 3.5000-1.j])"),
    (1 + 2j, np.complex64, "tensor(1.+2.j)"),
    ([1 + 2j, 3 - 4j], np.complex128, "tensor([1.+2.j, 3.-4.j], dtype=torch.complex128)"),
    ([0j, -0.5 + 0.25j], np.complex64, "tensor([ 0.0000+0.0000j, -0.5000+0.2500j])"),
    ([1e-5 + 1j], np.complex64, "tensor([1.0000e-05+1.j])"),
    ([complex(np.nan, 1), 1 + 1j], np.complex64, "tensor([nan+1.j, 1.+1.j])"),
    ([[1 + 1j, 2 - 2j], [-3 + 0j, 4j]], np.complex64, "tensor([[ 1.+1.j,  2.-2.j],\n        [-3.+0.j,  0.+4.j]])"),
])
def test_complex_elements(values, dtype, expected):
    assert format_tensor(np.array(values, dtype=dtype)) == expected


def test_complex_rows_wrap_by_the_width_of_both_parts():
    text = format_tensor(np.arange(10) * (1 + 1j), "requires_grad=True")
    # each element takes 2 + 1 + 2 + 2 characters: (80 - 7) // 7 = 10 per line
    assert text == ("tensor([0.+0.j, 1.+1.j, 2.+2.j, 3.+3.j, 4.+4.j, 5.+5.j, 6.+6.j, 7.+7.j, 8.+8.j, 9.+9.j],\n"
                    "       dtype=torch.complex128, requires_grad=True)")


def test_complex_tensors_print_through_the_facade():
    import astgrad.torch as torch

    z = torch.tensor(np.array([1 + 2j, -1j], dtype=np.complex64), requires_grad=True)
    assert repr(z * 2) == "tensor([2.+4.j, 0.-2.j], grad_fn=<MulBackward0>)"
