"""``torch.cuda``: there is no CUDA device here, as in PyTorch's CPU-only build.

Tutorials ask first (``device = "cuda" if torch.cuda.is_available() else
"cpu"``) and then take the CPU; asking for a CUDA tensor raises PyTorch's
CPU-build error.
"""

from ..tape import CUDA_MISSING


def is_available() -> bool:
    return False


def device_count() -> int:
    return 0


def is_initialized() -> bool:
    return False


def manual_seed(seed) -> None:
    """Seeds nothing: there is no CUDA generator (PyTorch also accepts this silently without CUDA)."""


def manual_seed_all(seed) -> None:
    """Seeds nothing, as ``manual_seed``."""


def synchronize(device=None) -> None:
    raise AssertionError(CUDA_MISSING)


def current_device() -> int:
    raise AssertionError(CUDA_MISSING)


def get_device_name(device=None) -> str:
    raise AssertionError(CUDA_MISSING)
