"""Take screenshots of a built book: every page, full length, at 1280 px
in light and dark colours and at 390 px (a phone), and the three pictures
the README shows.

Run with `make screenshots` (it builds the book first and copies the
README's pictures into book/images/), or
`python tests/tools/screenshots.py _build/html`. The pictures go to
_build/screenshots/ (dark ones in dark/, the phone's in 390px/), to look
at after a change. `--pages=one_head,labs` takes only those pages.
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "harness"))

from browsing import PHONE, SCREENSHOTS, launch, open_page, serve  # noqa: E402
from chapter import toc_files  # noqa: E402

README = {  # name: (page, the element shown)
    "one-head": ("book/one_head.html", "#scaled-dot-product-attention"),
    "explorer": ("book/labs.html", ".mha-explorer"),
    "head-view": ("book/real_heads.html", "[id^=bertviz]"),
}


def main(html, only=None):
    names = [n for n in toc_files() if not only or n.split("/")[-1] in only]
    with serve(html) as base, sync_playwright() as playwright:
        browser = launch(playwright)
        for name in names:
            for viewport, dark, folder in (
                (None, False, SCREENSHOTS),
                (None, True, SCREENSHOTS / "dark"),
                (PHONE, False, SCREENSHOTS / "390px"),
            ):
                page, _ = open_page(
                    browser, base, f"{name}.html", viewport, dark
                )
                page.wait_for_timeout(300)
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{name.replace('/', '_')}.png"
                page.screenshot(path=path, full_page=True)
                page.context.close()
        for name, (path, selector) in README.items() if not only else ():
            page, _ = open_page(
                browser, base, path, {"width": 1000, "height": 900}
            )
            page.locator(selector).first.screenshot(
                path=SCREENSHOTS / f"readme-{name}.png"
            )
            page.context.close()
        browser.close()
    print(f"screenshots of {len(names)} pages in {SCREENSHOTS}")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--pages=")]
    pages = [
        a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--pages=")
    ]
    main(
        args[0] if args else ROOT / "_build" / "html",
        pages[0].split(",") if pages else None,
    )
