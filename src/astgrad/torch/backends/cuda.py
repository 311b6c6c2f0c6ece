"""``torch.backends.cuda``: CUDA is not built in."""


def is_built() -> bool:
    return False
