"""``torch.backends``: the accelerators tutorials probe (``torch.backends.mps.is_available()``) are absent."""

from . import cuda, mps
