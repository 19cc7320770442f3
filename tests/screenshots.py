"""Take screenshots of a built book: every page, full length, at 1280 px
and at 390 px (a phone), and the three pictures the README shows.

Run with `make screenshots` (it builds the book first and copies the
README's pictures into book/images/), or
`python tests/screenshots.py _build/html`. The pictures go to
_build/screenshots/ (the phone's in 390px/), to look at after a change.
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from browsing import PHONE, SCREENSHOTS, launch, open_page, serve  # noqa: E402
from chapter import toc_files  # noqa: E402

README = {  # name: (page, the element shown)
    "one-head": ("book/one_head.html", "#scaled-dot-product-attention"),
    "explorer": ("book/labs.html", ".mha-explorer"),
    "head-view": ("book/real_heads.html", "[id^=bertviz]"),
}


def main(html):
    with serve(html) as base, sync_playwright() as playwright:
        browser = launch(playwright)
        for name in toc_files():
            for viewport, folder in (
                (None, SCREENSHOTS),
                (PHONE, SCREENSHOTS / "390px"),
            ):
                page, _ = open_page(browser, base, f"{name}.html", viewport)
                page.wait_for_timeout(300)
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"{name.replace('/', '_')}.png"
                page.screenshot(path=path, full_page=True)
                page.context.close()
        for name, (path, selector) in README.items():
            page, _ = open_page(
                browser, base, path, {"width": 1000, "height": 900}
            )
            page.locator(selector).first.screenshot(
                path=SCREENSHOTS / f"readme-{name}.png"
            )
            page.context.close()
        browser.close()
    print(f"screenshots of {len(toc_files())} pages in {SCREENSHOTS}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ROOT / "_build" / "html")
