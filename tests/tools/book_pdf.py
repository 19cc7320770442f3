"""The whole book as one PDF: each built page printed by Chromium, in the
table of contents' order, joined into one file with a bookmark per page.

Run with `make pdf` (it builds the book first), or
`python tests/tools/book_pdf.py _build/html [OUT.pdf]`; the PDF goes to
_build/pdf/multi-head-attention.pdf. Nothing is downloaded: the pages are
served from the folder on 127.0.0.1 and printed by Debian's Chromium
through Playwright. The print style sheet (book/_static/print.css) drops
the site's navigation; this script opens every dropdown (the code the
page hides stays hidden), and the views that respond to clicks print as
they stand, marked as interactive on the web page.
"""

import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright
from pypdf import PdfReader, PdfWriter

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from browsing import launch, open_page, serve  # noqa: E402
from chapter import toc_files  # noqa: E402

OUT = ROOT / "_build" / "pdf" / "multi-head-attention.pdf"
PRINT_CSS = ROOT / "book" / "_static" / "print.css"
# Open the dropdowns (sphinx-togglebutton's and sphinx-design's), not the
# code cells the page hides; wait for every figure.
PREPARE = """async () => {
  document.querySelectorAll("details:not(.above-input)")
    .forEach((d) => { d.open = true; });
  document.querySelectorAll(".toggle-hidden")
    .forEach((e) => e.classList.remove("toggle-hidden"));
  document.querySelectorAll("img")
    .forEach((img) => { img.loading = "eager"; });
  await Promise.all([...document.images].map((img) => img.decode()
    .catch(() => null)));
  await document.fonts.ready;
  return true;
}"""
PAPER = {
    "format": "A4",
    "print_background": True,
    "margin": {
        "top": "18mm",
        "bottom": "18mm",
        "left": "16mm",
        "right": "16mm",
    },
}


def print_pages(html, names, out):
    """Print `names` (paths under `html` without .html) into one PDF at
    `out`; returns its number of pages."""
    html = Path(html)
    missing = [n for n in names if not (html / f"{n}.html").exists()]
    if missing:
        raise ValueError(
            f"{html} lacks {missing}: build the book first (make book)"
        )
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    writer = PdfWriter()
    with (
        tempfile.TemporaryDirectory() as tmp,
        serve(html) as base,
        sync_playwright() as playwright,
    ):
        browser = launch(playwright)
        for number, name in enumerate(names):
            page, _ = open_page(browser, base, f"{name}.html")
            if not page.locator('link[href$="print.css"]').count():
                page.add_style_tag(path=str(PRINT_CSS))  # an older build
            page.evaluate(PREPARE)
            title = page.title().split(" — ")[0].strip() or name
            part = Path(tmp, f"{number:03d}.pdf")
            page.pdf(path=part, **PAPER)
            page.context.close()
            writer.append(str(part), outline_item=title)
        browser.close()
        writer.write(out)
    return len(PdfReader(out).pages)


def main(html, out=OUT):
    start = time.perf_counter()
    pages = print_pages(html, toc_files(), out)
    seconds = time.perf_counter() - start
    print(f"{out}: {pages} pages in {seconds:.0f} s")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:])
