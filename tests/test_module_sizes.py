"""The size limits the layout promises: no module under src/ past 600 lines, and
the reverse sweep (the core a newcomer reads first) under 400."""

import pathlib

SRC = pathlib.Path(__file__).resolve().parent.parent / "src" / "astgrad"


def _lines(path):
    return len(path.read_text(encoding="utf-8").splitlines())


def test_no_module_past_600_lines():
    big = {str(p.relative_to(SRC)): _lines(p) for p in SRC.rglob("*.py") if _lines(p) > 600}
    assert big == {}


def test_reverse_sweep_under_400_lines():
    assert _lines(SRC / "transform" / "reverse.py") < 400
