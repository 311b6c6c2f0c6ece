"""``torch.accelerator``: no accelerator is available; tutorials then pick the CPU."""


def is_available() -> bool:
    return False


def current_accelerator(check_available: bool = False):
    """None: there is no accelerator (PyTorch's answer on a machine without one)."""
    return None


def device_count() -> int:
    return 0
