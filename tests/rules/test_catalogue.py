"""docs/supported-numpy.md is the table's own listing, kept in step by this test."""

import pathlib
import re

import numpy as np
import pytest

from astgrad.rules.catalogue import catalogue

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "supported-numpy.md"


def _absent_here(line: str) -> bool:
    """A page line naming a numpy callable this numpy no longer has (``numpy.row_stack``, gone in numpy 2.5)."""
    match = re.fullmatch(r"- `numpy\.(\w+)`", line)
    return match is not None and not hasattr(np, match.group(1))


def test_documentation_page_lists_exactly_the_table():
    """The page is generated with the numpy CI's default Python has; under a numpy that has dropped a callable,
    the table has no entry for it, so those lines (and the count) are all that may differ."""
    pytest.importorskip("scipy")  # the page lists scipy's entries too
    page, table = PAGE.read_text().splitlines(), catalogue().splitlines()
    absent = [line for line in page if _absent_here(line)]
    page = [line for line in page if not _absent_here(line)]
    if absent:
        page = [re.sub(r"^(\d+) callables", lambda m: f"{int(m.group(1)) - len(absent)} callables", line) for line in page]
        page = [re.sub(r"^(\d+) of the (\d+) entries", lambda m: f"{int(m.group(1)) - len(absent)} of the "
                       f"{int(m.group(2)) - len(absent)} entries", line) for line in page]  # each has a batching rule
    assert page == table, (
        "docs/supported-numpy.md is out of date: regenerate it with "
        "`python -m astgrad.rules.catalogue > docs/supported-numpy.md`"
    )


def test_catalogue_names_what_users_call():
    text = catalogue()
    for name in ("`numpy.sin`", "`numpy.linalg.solve`", "`numpy.einsum`", "`math.exp`", "`numpy.argmax`"):
        assert name in text


def test_catalogue_lists_scipy_beside_numpy():
    pytest.importorskip("scipy")
    text = catalogue()
    for name in ("`scipy.special.gammaln`", "`scipy.linalg.cho_solve`", "`scipy.stats.norm.cdf`",
                 "`scipy.special.logsumexp`"):
        assert name in text
