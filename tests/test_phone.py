"""The book at a phone's width (390 x 844 px): no page scrolls sideways,
the head explorer keeps its query token in view, and BertViz's head view
scrolls inside its own box."""

import pytest

from browsing import PHONE, once_each, open_in
from chapter import toc_files


@pytest.fixture(scope="module")
def on_phone(browser, site):
    """Each page opened once at the phone's size, all in one browser
    context (they share its cache: test_pages.py weighs what each page
    fetches from an empty one): on_phone(path) -> (page, problems)."""
    base, _ = site
    context = browser.new_context(viewport=PHONE)
    yield once_each(lambda path: open_in(context, base, path))
    context.close()


@pytest.mark.parametrize("name", toc_files())
def test_page_fits_a_phone_screen(on_phone, name):
    page, problems = on_phone(f"{name}.html")
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - window.innerWidth"
    )
    assert overflow <= 0, f"the page scrolls sideways by {overflow} px"
    assert problems["errors"] == []


def in_view(page, locator):
    """Is the element wholly inside the viewport and every box that
    clips it?"""
    return locator.evaluate(
        """(el) => {
            const r = el.getBoundingClientRect();
            const inside = (box) => r.left >= box.left - 1
                && r.right <= box.right + 1;
            let box = {left: 0, right: window.innerWidth};
            if (!inside(box)) return false;
            for (let p = el.parentElement; p; p = p.parentElement) {
                if (getComputedStyle(p).overflowX !== "visible"
                        && !inside(p.getBoundingClientRect())) {
                    return false;
                }
            }
            return true;
        }"""
    )


def test_the_query_token_stays_in_view_on_a_phone(on_phone):
    page, problems = on_phone("book/labs.html")
    for root in page.locator(".mha-explorer").all():
        if not root.is_visible():  # e.g. inside a collapsed solution
            continue
        query = root.locator(".mha-token[aria-pressed=true]")
        assert in_view(page, query), query.text_content()
        root.locator(".mha-token").first.focus()
        page.keyboard.press("End")
        last = root.locator(".mha-token").last.text_content()
        assert query.text_content() == last
        assert in_view(page, query)
        page.keyboard.press("Home")
        assert in_view(page, query)
    assert problems["errors"] == []


def test_the_head_view_scrolls_inside_its_box_on_a_phone(on_phone):
    page, _ = on_phone("book/real_heads.html")
    view = page.locator("[id^=bertviz]").first
    view.locator("svg text").first.wait_for()
    box = view.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    assert view.evaluate(
        "(el) => el.scrollWidth <= el.clientWidth"
        " || getComputedStyle(el).overflowX === 'auto'"
    )
