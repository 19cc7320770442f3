"""The whole book builds with warnings as errors, and says what it computed."""

import re

from chapter import toc_files


def test_every_page_is_built(built_book):
    for name in toc_files():
        assert (built_book / "html" / f"{name}.html").exists(), name


def test_glued_numbers_reach_the_pages(built_book):
    page = (built_book / "html" / "book" / "one_head.html").read_text()
    share = re.search(r"on average\s+<span[^>]*>[^<]*?([\d.]+%)", page)
    assert share, "the glued diagonal share is missing from section 1"
    assert "{glue" not in page
