"""docs/supported-numpy.md is the table's own listing, kept in step by this test."""

import pathlib

import pytest

from astgrad.rules.catalogue import catalogue

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "supported-numpy.md"


def test_documentation_page_lists_exactly_the_table():
    pytest.importorskip("scipy")  # the page lists scipy's entries too
    assert PAGE.read_text() == catalogue(), (
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
