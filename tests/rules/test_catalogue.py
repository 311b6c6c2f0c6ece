"""docs/supported-numpy.md is the table's own listing, kept in step by this test."""

import pathlib

from astgrad.rules.catalogue import catalogue

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "supported-numpy.md"


def test_documentation_page_lists_exactly_the_table():
    assert PAGE.read_text() == catalogue(), (
        "docs/supported-numpy.md is out of date: regenerate it with "
        "`python -m astgrad.rules.catalogue > docs/supported-numpy.md`"
    )


def test_catalogue_names_what_users_call():
    text = catalogue()
    for name in ("`numpy.sin`", "`numpy.linalg.solve`", "`numpy.einsum`", "`math.exp`", "`numpy.argmax`"):
        assert name in text
