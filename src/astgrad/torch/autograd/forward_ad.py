"""``torch.autograd.forward_ad``: dual tensors, whose tangents every recorded operation carries forward.

``with dual_level(): d = make_dual(x, v); p, t = unpack_dual(f(d))`` gives
``f(x)`` and its directional derivative along ``v``, computed with the
forward rules of the table the generated ``astgrad.jvp`` uses.  One level at
a time, as in PyTorch; what the tape cannot make exact (in-place operations
on dual tensors, backward inside a level) is refused (docs/tape.md).
"""

from __future__ import annotations

from ...tape import UnpackedDualTensor, enter_dual_level, exit_dual_level, make_dual, unpack_dual

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


class dual_level:
    """``with dual_level():`` makes dual tensors possible inside the block and drops their tangents after it."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()
