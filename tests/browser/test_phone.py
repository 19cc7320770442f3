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


def test_wide_display_math_scrolls_with_a_cue(on_phone):
    """A display formula wider than the phone scrolls inside its own box,
    which shows a shadow at the edge hiding more (never cut off): no box
    inside a formula clips it but the one with the cue. (KaTeX's MathML,
    for screen readers, is drawn nowhere: left out.)"""
    clipped = []
    wide = 0
    for name in toc_files():
        page, _ = on_phone(f"{name}.html")
        found = page.evaluate(
            """(name) => {
              const boxes = [...document.querySelectorAll(
                  '.bd-article div.math, .bd-article div.math *')]
                .filter((el) => !el.closest('.katex-mathml'))
                .filter((el) => el.scrollWidth > el.clientWidth + 1
                    && getComputedStyle(el).overflowX !== 'visible');
              const cued = (el) => el.matches('.katex-display')
                  && getComputedStyle(el).overflowX === 'auto'
                  && getComputedStyle(el).backgroundImage
                      .includes('gradient');
              return [boxes.filter((el) => !cued(el)).map((el) => name
                  + ': ' + el.className + ' ' + el.textContent.slice(0, 40)),
                  boxes.filter(cued).length];
            }""",
            name,
        )
        clipped += found[0]
        wide += found[1]
    assert clipped == []
    assert wide > 0, "no formula is wider than a phone: is this test stale?"


def test_the_explorers_head_buttons_all_show_on_a_phone(on_phone):
    """The head buttons wrap: none is hidden off the side."""
    page, _ = on_phone("book/labs.html")
    hidden = []
    for root in page.locator(".mha-explorer").all():
        if root.is_visible():
            hidden += [
                button.text_content()
                for button in root.locator(".mha-heads button").all()
                if not in_view(page, button)
            ]
    assert hidden == []


def test_printed_output_wraps_on_a_phone(on_phone):
    wide = []
    for name in toc_files():
        page, _ = on_phone(f"{name}.html")
        wide += page.evaluate(
            """(name) => [...document.querySelectorAll(
                '.bd-article div.cell_output pre')]
              .filter((el) => el.scrollWidth > el.clientWidth + 1)
              .map((el) => name + ': ' + el.textContent.slice(0, 40))""",
            name,
        )
    assert wide == []


def test_the_notation_keeps_each_name_in_the_code_whole(on_phone):
    """On a phone the notation table is one block per symbol: no column
    too narrow for an identifier, which would break it into pieces."""
    page, _ = on_phone("book/notation.html")
    broken = page.evaluate(
        """() => [...document.querySelectorAll(
            'table.mha-notation code')]
          .filter((code) => code.getClientRects().length > 1)
          .map((code) => code.textContent)"""
    )
    assert broken == []
    label = page.evaluate(
        """() => getComputedStyle(document.querySelector(
            'table.mha-notation td:nth-child(3)'), '::before').content"""
    )
    assert "In the code" in label


def test_a_tapped_glossary_term_shows_its_definition_in_place(browser, site):
    """On a touch screen the first tap shows the definition (the page does
    not leave), a second follows the link; no definition widens the page."""
    base, _ = site
    context = browser.new_context(viewport=PHONE, has_touch=True)
    page, problems = open_in(context, base, "book/one_head.html")
    term = page.locator("a[data-definition]").first
    url = page.url
    term.tap()
    assert page.url == url
    tip = term.evaluate("(el) => getComputedStyle(el, '::after').content")
    assert tip not in ("none", "normal", "")
    overflow = page.evaluate(
        "() => document.documentElement.scrollWidth - window.innerWidth"
    )
    assert overflow <= 0
    term.tap()
    page.wait_for_url("**/glossary.html*")
    assert problems["errors"] == []
    context.close()


def test_every_figure_shows_at_three_quarters_or_more_on_a_phone(on_phone):
    """Figures are drawn at most 480 px wide with no text under 12.5 px
    (test_notebooks.py, test_hygiene.py): at a scale of 0.72 or more, the
    smallest text stays at 9 px on the phone. Each holds twice the pixels
    it is shown at, so that a high-density screen shows it sharp."""
    wrong = []
    for name in toc_files():
        page, _ = on_phone(f"{name}.html")
        wrong += page.evaluate(
            """(name) => [...document.querySelectorAll(
                '.bd-article .cell_output img')]
              .filter((img) => img.naturalWidth > 0)
              .map((img) => [img.getBoundingClientRect().width,
                  parseFloat(img.style.width), img.naturalWidth,
                  img.alt.slice(0, 40)])
              .filter(([shown, size, pixels]) =>
                  !(shown / size >= 0.72 && pixels >= 2 * size))
              .map(([shown, size, pixels, alt]) => name + ': shown '
                  + shown + ' px of ' + size + ', ' + pixels
                  + ' px drawn: ' + alt)""",
            name,
        )
    assert wrong == []
