"""Every page of the built book in Chromium, at a desktop's width:
self-contained (every request to a host other than the local server is
aborted and counted as a failure), free of console errors, with all its
math typeset when the book was built (KaTeX's HTML, with MathML for
screen readers; no math engine loaded), within its weight budget
(tests/harness/page_budgets.json) and without critical or serious axe-core
violations, in light and in dark colours. test_phone.py opens them at a
phone's width. `make screenshots` saves what these pages look like.
"""

import contextlib

import pytest

from browsing import (
    THEME_EXCEPTIONS,
    audit,
    budget,
    once_each,
    open_page,
    serious,
    weigh,
)
from chapter import toc_files


@pytest.fixture(scope="module")
def loaded(browser, site):
    """Each page of the book opened once at 1280 px, left as it loaded,
    for the checks that only read it: loaded(name) -> (page, problems)."""
    base, _ = site
    load = once_each(lambda name: open_page(browser, base, f"{name}.html"))
    yield load
    for page, _ in load.opened.values():
        page.context.close()


@pytest.mark.parametrize("name", toc_files())
def test_page_is_self_contained_and_clean(loaded, name):
    page, problems = loaded(name)
    untypeset = page.evaluate(
        "() => [...document.querySelectorAll('.math')]"
        ".filter(m => !m.querySelector('.katex math')).length"
    )
    assert problems == {
        "external": [],
        "failed": [],
        "errors": [],
        "dialogs": [],
    }
    assert untypeset == 0, f"{untypeset} formulas left untypeset"
    engines = [
        r.url
        for r in page.fetched
        if r.url.split("?")[0].endswith(
            ("fontawesome.js", "tex-chtml.js", "katex.min.js")
        )
    ]
    assert engines == [], "a page loads a math engine or the icon script"


@pytest.mark.parametrize("name", toc_files())
def test_page_stays_within_its_weight_budget(loaded, site, name):
    base, _ = site
    page, _ = loaded(name)
    fetched = weigh(page.fetched, base)
    limit, parts = budget(name)
    total = sum(fetched.values())
    assert total <= limit, (
        f"{name} fetched {total / 1024:.0f} KiB {fetched}; its budget "
        f"(tests/harness/page_budgets.json) is {limit / 1024:.0f} KiB = "
        f"{parts}"
    )


@pytest.mark.parametrize("name", toc_files())
def test_page_passes_the_accessibility_audit(loaded, name):
    page, _ = loaded(name)
    assert serious(audit(page, THEME_EXCEPTIONS)) == []


@contextlib.contextmanager
def in_dark_colours(page):
    """The page, as its reader's system switches to dark colours (the
    theme follows the setting as it changes, and so must every view);
    switched back to light after. CSS transitions are turned off while it
    lasts: the theme eases its colours over a moment, and an audit made
    mid-way would measure colours that no reader sees for long."""
    still = page.add_style_tag(
        content="*, *::before, *::after { transition: none !important; }"
    )
    page.emulate_media(color_scheme="dark")
    try:
        page.wait_for_function(
            "() => document.documentElement.dataset.theme === 'dark'"
        )
        yield page
    finally:
        page.emulate_media(color_scheme="light")
        page.wait_for_function(
            "() => document.documentElement.dataset.theme === 'light'"
        )
        still.evaluate("style => style.remove()")


@pytest.mark.parametrize("name", toc_files())
def test_page_passes_the_accessibility_audit_in_dark_mode(loaded, name):
    """Colour contrast included: every view and caption uses the theme's
    colours on the page's own background. (The page loaded in light
    colours, switched: a view that kept colours chosen at load would
    fail; that a page opened in dark colours starts dark is checked
    below.)"""
    page, problems = loaded(name)
    with in_dark_colours(page):
        assert serious(audit(page, THEME_EXCEPTIONS)) == []
    assert problems["errors"] == []


def test_a_reader_who_prefers_dark_colours_gets_them_at_load(browser, site):
    base, _ = site
    page, problems = open_page(browser, base, "book/index.html", dark=True)
    try:
        theme = page.evaluate("() => document.documentElement.dataset.theme")
        assert theme == "dark"
        assert serious(audit(page, THEME_EXCEPTIONS)) == []
        assert problems["errors"] == []
    finally:
        page.context.close()


# (parametrized, for `make test` to run it with the page's other tests)
@pytest.mark.parametrize("name", ["book/labs"])
def test_the_views_sit_on_the_pages_own_background_in_dark_mode(loaded, name):
    page, _ = loaded(name)
    with in_dark_colours(page):
        backgrounds = page.evaluate(
            """() => [...document.querySelectorAll('.mha-explorer-root')]
            .map((el) => getComputedStyle(el.closest('.output'))
                .backgroundColor)"""
        )
    assert backgrounds and set(backgrounds) == {"rgba(0, 0, 0, 0)"}


@pytest.mark.parametrize("name", toc_files())
def test_visible_code_fits_its_box(loaded, name):
    """At 1280 px no line of code (at most 79 characters) is cut off."""
    page, _ = loaded(name)
    cut = page.evaluate(
        """() => [...document.querySelectorAll(
            '.bd-article div.cell_input pre')]
          .filter((e) => e.offsetParent !== null)
          .filter((e) => e.scrollWidth > e.clientWidth + 1)
          .map((e) => e.textContent.split('\\n')[0].slice(0, 50))"""
    )
    assert cut == []


def figures_where(page, condition):
    """The alt text of each figure on the page for which the JavaScript
    function `condition(img)` is true."""
    return page.evaluate(
        f"""() => [...document.querySelectorAll(
            '.bd-article .cell_output img')]
          .filter((img) => img.naturalWidth > 0)
          .filter({condition})
          .map((img) => img.alt.slice(0, 40))"""
    )


@pytest.mark.parametrize("name", toc_files())
def test_figures_show_at_their_full_size_on_a_desktop(loaded, name):
    """At 1280 px each figure fits the column at the size it was drawn for,
    so its smallest text (9 pt at 100 dpi) is 12.5 px, over issue 25's 11."""
    shrunk = figures_where(
        loaded(name)[0],
        """(img) => Math.abs(img.getBoundingClientRect().width
            - parseFloat(img.style.width)) > 1 || !img.style.width""",
    )
    assert shrunk == []


@pytest.mark.parametrize("name", toc_files())
def test_every_figure_opens_full_size_on_a_click(loaded, name):
    """Each figure is the one content of a link to its own file."""
    unlinked = figures_where(
        loaded(name)[0],
        """(img) => !(img.parentElement.tagName === 'A'
            && img.parentElement.href === img.src
            && img.parentElement.children.length === 1
            && !img.parentElement.parentElement.closest('a'))""",
    )
    assert unlinked == []
