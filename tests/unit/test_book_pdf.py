"""`make pdf` (tests/tools/book_pdf.py): pages printed by Chromium and
joined in order, with the site's navigation dropped by the book's print
style sheet, dropdowns opened, the code a page hides left out, and a
figure and a code cell's output on paper. Two small pages served from a
temporary folder, printed as the real ones are."""

import base64
import shutil
import sys

import pytest
from pypdf import PdfReader

from chapter import ROOT

sys.path.insert(0, str(ROOT / "tests" / "tools"))
import book_pdf  # noqa: E402

# A 1x1 PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAE"
    "hQGAhKmMIQAAAABJRU5ErkJggg=="
)
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8">
<title>{title} — Book</title>
<link rel="stylesheet" href="{up}_static/print.css"></head><body>
<nav class="bd-sidebar-primary">SIDEBARNAVIGATION</nav>
<main><h1>{title}</h1><p>{text}</p>
<figure><img src="{up}_static/pixel.png" alt="a pixel" width="40">
<figcaption>FIGURECAPTION</figcaption></figure>
<div class="cell_output"><pre>CELLOUTPUT 64</pre></div>
<details class="dropdown admonition"><summary>Answer</summary>
<p>DROPDOWNANSWER</p></details>
<details class="admonition hide above-input"><summary>Show code</summary>
<pre>HIDDENBOOKKEEPING</pre></details>
<div class="mha-explorer-root">EXPLORERVIEW</div>
</main></body></html>"""


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    if shutil.which("chromium") is None:
        pytest.fail("Chromium is missing: apt-get install -y chromium")
    html = tmp_path_factory.mktemp("html")
    (html / "_static").mkdir()
    shutil.copy(book_pdf.PRINT_CSS, html / "_static" / "print.css")
    (html / "_static" / "pixel.png").write_bytes(PIXEL)
    (html / "part").mkdir()
    (html / "index.html").write_text(
        PAGE.format(title="Start", text="FIRSTPAGE", up="")
    )
    (html / "part" / "next.html").write_text(
        PAGE.format(title="Next", text="SECONDPAGE " * 900, up="../")
    )
    out = html.parent / "book.pdf"
    pages = book_pdf.print_pages(html, ["index", "part/next"], out)
    return pages, PdfReader(out)


def text_of(reader):
    return [page.extract_text() for page in reader.pages]


def test_pages_in_order(pdf):
    pages, reader = pdf
    assert pages == len(reader.pages) >= 3, "one page, then a long one"
    texts = text_of(reader)
    assert "FIRSTPAGE" in texts[0] and "SECONDPAGE" not in texts[0]
    assert "SECONDPAGE" in texts[1]
    titles = [item.title for item in reader.outline]
    assert titles == ["Start", "Next"], titles


def test_what_goes_on_paper(pdf):
    text = " ".join(text_of(pdf[1]))
    for kept in ("FIGURECAPTION", "CELLOUTPUT 64", "DROPDOWNANSWER"):
        assert kept in text, f"{kept} should be printed"
    assert "EXPLORERVIEW" in text and "Interactive on the web page" in text
    for dropped in ("SIDEBARNAVIGATION", "HIDDENBOOKKEEPING"):
        assert dropped not in text, f"{dropped} should not be printed"


def test_figure_is_printed(pdf):
    first = pdf[1].pages[0]
    assert list(first.images), "the figure should be in the PDF"


def test_missing_pages_are_named(tmp_path):
    with pytest.raises(ValueError, match="make book"):
        book_pdf.print_pages(tmp_path, ["part/absent"], tmp_path / "x.pdf")
