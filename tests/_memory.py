"""The memory a call allocates at its peak, beyond what was allocated before it (tracemalloc)."""

import tracemalloc


def peak(run) -> int:
    """Bytes ``run()`` holds at its peak, above what was held when it started."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        run()
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return top - before
