"""``python -m astgrad``: see ``python -m astgrad --help``."""

from ._cli import _entry

if __name__ == "__main__":
    _entry()
