"""``torch.utils``: ``torch.utils.data`` (datasets, samplers, ``DataLoader``) and ``torch.utils.checkpoint``."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
