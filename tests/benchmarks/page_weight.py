"""Print what each page of a built book fetches, by kind, against its budget.

Run with `make bench-pages` (it builds the book first), or
`python tests/benchmarks/page_weight.py _build/html`. Each page is opened
in Debian's Chromium with an empty cache and weighed once it is idle and
its math typeset:
response bodies, uncompressed, as the tests count them. Prints a Markdown
table for the README.
"""

import gzip
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from record import recorded  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from browsing import (  # noqa: E402
    KINDS,
    budget,
    launch,
    open_page,
    serve,
    weigh,
)
from chapter import toc_files  # noqa: E402

COLUMNS = list(dict.fromkeys(kind for _, kind in KINDS)) + ["page"]


def kib(size):
    return f"{size / 1024:,.0f}"


def gzipped(requests):
    """Bytes the page's responses take gzipped (level 6), as a server that
    compresses would send them."""
    total = 0
    for request in requests:
        response = request.response()
        if response is not None:
            total += len(gzip.compress(response.body(), compresslevel=6))
    return total


def main(html):
    rows = []
    with serve(html) as base, sync_playwright() as playwright:
        browser = launch(playwright)
        for name in toc_files():
            page, _ = open_page(browser, base, f"{name}.html")
            page.wait_for_timeout(300)
            by_kind = weigh(page.fetched, base)
            packed = gzipped(page.fetched)
            page.context.close()
            limit, _ = budget(name)
            rows.append((name, by_kind, sum(by_kind.values()), packed, limit))
        browser.close()
    print("| page | " + " | ".join(COLUMNS) + " | total | gzipped | budget |")
    print("| --- |" + " ---: |" * (len(COLUMNS) + 3))
    for name, by_kind, total, packed, limit in rows:
        cells = [kib(by_kind.get(kind, 0)) for kind in COLUMNS]
        print(
            f"| {name.removeprefix('book/')} | "
            + " | ".join(cells)
            + f" | {kib(total)} | {kib(packed)} | {kib(limit)} |"
        )
    print(
        "\nKiB of response bodies with an empty cache: uncompressed (what the"
        " budget counts), and gzipped at level 6. For comparison, the last"
        " run before formulas were typeset at build time (2026-11-29, then"
        " kept in the README) measured 2,470 to 3,857 KiB a page, 2,428 to"
        " 2,437 of it the theme's (Font Awesome's script 1,454), and MathJax"
        " 1,187 to 1,198 on pages with math."
    )


if __name__ == "__main__":
    with recorded(
        "What each page fetches (`make bench-pages`)", markdown=True
    ):
        main(
            Path(
                sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build" / "html"
            )
        )
