"""The built book in a real browser (Debian's Chromium via Playwright).

The site is served on 127.0.0.1 and every request to any other host is
aborted and counted as a failure. Every page is also weighed against its
budget (tests/page_budgets.json), audited with axe-core and opened at a
phone's width. Screenshots of each page, at 1280 px and at 390 px, are
saved in _build/screenshots/ for review.
"""

import pytest

from browsing import (
    audit,
    budget,
    harness_page,
    record_fetches,
    settle,
    weigh,
)
from chapter import ROOT, toc_files
from mhabook import head_explorer
from mhabook.bertviz_view import head_view_html

SCREENSHOTS = ROOT / "_build" / "screenshots"
EVIL = "</script><img src=x onerror=alert(1)>\"'&amp;"
PHONE = {"width": 390, "height": 844}
# Theme problems axe reports that we do not fix, as (axe rule id, CSS
# selector of the theme's element): excluded only on that element.
THEME_EXCEPTIONS = [
    # pydata-sphinx-theme 0.17.1's colour-mode button is named "Color mode"
    # while its icon's title reads "Light", "Dark" or "System Settings";
    # the theme's script switches the icons, so no static name fits all.
    ("label-content-name-mismatch", "button.theme-switch-button"),
]


def open_page(browser, base, path, viewport=None):
    """Open a page of the site in a fresh context (an empty cache);
    returns (page, problems). `viewport` defaults to a desktop's."""
    context = browser.new_context(
        viewport=viewport or {"width": 1280, "height": 900}
    )
    problems = {"external": [], "failed": [], "errors": [], "dialogs": []}

    def route(route):
        if route.request.url.startswith(base + "/"):
            route.continue_()
        else:
            problems["external"].append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.fetched = record_fetches(page)
    page.on(
        "console",
        lambda m: m.type == "error" and problems["errors"].append(m.text),
    )
    page.on("pageerror", lambda e: problems["errors"].append(str(e)))
    page.on("requestfailed", lambda r: problems["failed"].append(r.url))
    page.on(
        "response",
        lambda r: (
            r.status >= 400
            and problems["failed"].append(f"{r.status} {r.url}")
        ),
    )
    page.on(
        "dialog",
        lambda d: (problems["dialogs"].append(d.message), d.dismiss()),
    )
    page.goto(f"{base}/{path}", wait_until="networkidle")
    settle(page)
    return page, problems


@pytest.fixture
def visit(browser, site):
    """Open a page for one test: visit(path, viewport=None)."""
    base, _ = site
    pages = []

    def visit_and_track(path, viewport=None):
        page, problems = open_page(browser, base, path, viewport)
        pages.append(page)
        return page, problems

    yield visit_and_track
    for page in pages:
        page.context.close()


@pytest.fixture(scope="module")
def loaded(browser, site):
    """Each page of the book opened once at 1280 px, left as it loaded,
    for the checks that only read it: loaded(name) -> (page, problems)."""
    base, _ = site
    opened = {}

    def load(name):
        if name not in opened:
            opened[name] = open_page(browser, base, f"{name}.html")
            opened[name][0].wait_for_timeout(300)
        return opened[name]

    yield load
    for page, _ in opened.values():
        page.context.close()


def screenshot(page, *parts):
    path = SCREENSHOTS.joinpath(*parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=path, full_page=True)


@pytest.mark.parametrize("name", toc_files())
def test_page_is_self_contained_and_clean(loaded, name):
    page, problems = loaded(name)
    untypeset = page.evaluate(
        "() => [...document.querySelectorAll('.math')]"
        ".filter(m => !m.querySelector('mjx-container')).length"
    )
    screenshot(page, f"{name.replace('/', '_')}.png")
    assert problems == {
        "external": [],
        "failed": [],
        "errors": [],
        "dialogs": [],
    }
    assert untypeset == 0, f"{untypeset} formulas left untypeset"


def test_head_view_shows_the_pair_and_switches_heads(visit):
    page, problems = visit("book/real_heads.html")
    svg = page.locator("[id^=bertviz] svg").first
    svg.wait_for()
    labels = svg.locator("text").all_text_contents()
    assert len(labels) == 26  # 13 tokens on each side
    assert labels[:13] == labels[13:]
    assert labels.count("flies") == 4

    def lines():
        """Opacity of every line: BertViz hides a head's lines with 0."""
        return page.evaluate(
            "() => [...document.querySelectorAll('[id^=bertviz] #attention"
            " line')].map(l => l.getAttribute('stroke-opacity'))"
        )

    before = lines()
    assert any(float(o) > 0 for o in before)
    # BertViz draws one square per head, in the svg's last group
    boxes = svg.locator(":scope > g").last.locator(":scope > rect")
    assert boxes.count() == 12
    # The view opens on one head; of heads 0 and 1 at least one is off, so
    # two clicks always change which heads are drawn.
    boxes.nth(0).click()
    boxes.nth(1).click()
    page.wait_for_timeout(200)
    assert lines() != before
    assert problems["errors"] == [] and problems["external"] == []


def explorer_state(page, root):
    return page.evaluate(
        """(root) => {
            const arcs = [...root.querySelectorAll('path.mha-arc')];
            return {
                query: root.querySelector('.mha-token[aria-pressed=true]')
                    .textContent,
                focused: document.activeElement.textContent,
                heads: [...new Set(arcs.map(a => a.dataset.head))],
                arcs: arcs.map(a => [a.dataset.head, a.dataset.key,
                                     parseFloat(a.dataset.weight)]),
                caption: root.querySelector('.mha-caption').textContent,
            };
        }""",
        root,
    )


@pytest.fixture
def lab(visit):
    page, problems = visit("book/labs.html")
    root = page.locator(".mha-explorer").first
    root.wait_for()
    yield page, root
    assert problems["errors"] == [] and problems["dialogs"] == []


def test_clicking_it_shows_the_coreference_arc_to_cat(lab):
    page, root = lab
    root.get_by_role("button", name="the", exact=True).first.click()
    root.get_by_role("button", name="it", exact=True).click()
    state = explorer_state(page, root.element_handle())
    assert state["query"] == "it"
    coreference, cat = "3", "1"
    weights = {(h, k): w for h, k, w in state["arcs"]}
    assert weights[coreference, cat] > 0.5
    assert "coreference \u2192 \u201ccat\u201d" in state["caption"]


def test_isolate_leaves_one_heads_arcs(lab):
    page, root = lab
    root.get_by_role("button", name="isolate verb head").click()
    assert explorer_state(page, root.element_handle())["heads"] == ["2"]
    root.get_by_role("button", name="show all heads").click()
    assert explorer_state(page, root.element_handle())["heads"] == [
        "0",
        "1",
        "2",
        "3",
    ]


def test_the_keyboard_path_works(lab):
    page, root = lab
    first = root.locator(".mha-token").first
    first.focus()
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowRight")
    state = explorer_state(page, root.element_handle())
    assert state["query"] == state["focused"] == "cat"
    page.keyboard.press("End")
    assert explorer_state(page, root.element_handle())["query"] == "tired"
    toggle = root.get_by_role("button", name="subject head", exact=True)
    toggle.focus()
    page.keyboard.press("Enter")
    assert toggle.get_attribute("aria-pressed") == "false"
    assert "1" not in explorer_state(page, root.element_handle())["heads"]
    page.keyboard.press("Space")
    assert toggle.get_attribute("aria-pressed") == "true"


@pytest.fixture
def escaping_page(site):
    """A page with our explorer and our BertViz wrapper fed a hostile token,
    with BertViz's CDN addresses rewritten as the book build does."""
    import torch

    _, html_dir = site
    tokens = ["[CLS]", "fish", EVIL, "[SEP]", "chips", "[SEP]"]
    weights = torch.softmax(torch.randn(2, 6, 6), -1)
    explorer = head_explorer(
        tokens, weights, ["a", EVIL], query=2, html_action="return"
    ).data
    view = head_view_html(weights[None], tokens, 4, layer=0, heads=[0]).data
    return harness_page(html_dir, "escaping", explorer + view)


def test_hostile_text_renders_as_text(visit, escaping_page):
    page, problems = visit(escaping_page)
    page.locator("[id^=bertviz] svg text").first.wait_for()
    page.wait_for_timeout(300)
    assert problems["dialogs"] == []
    assert page.locator("img").count() == 0
    token = page.locator(".mha-token").nth(2)
    assert token.text_content() == EVIL
    assert EVIL in page.locator("[id^=bertviz] svg").text_content()
    assert problems["errors"] == [] and problems["external"] == []


def test_hovering_a_term_shows_its_definition(visit):
    page, problems = visit("book/one_head.html")
    link = page.locator("a[data-definition]", has_text="query").first
    tip = "(el) => getComputedStyle(el, '::after').content"
    assert link.evaluate(tip) == "none"
    link.hover()
    shown = link.evaluate(tip)
    assert "look for other tokens" in shown
    assert problems["errors"] == []


def test_readme_screenshots_come_from_the_built_book(visit):
    """The README shows these. They are taken under _build/screenshots/;
    `make screenshots` copies them to book/images/."""
    shots = {
        "one-head": ("book/one_head.html", "#scaled-dot-product-attention"),
        "explorer": ("book/labs.html", ".mha-explorer"),
        "head-view": ("book/real_heads.html", "[id^=bertviz]"),
    }
    for name, (path, selector) in shots.items():
        page, _ = visit(path, {"width": 1000, "height": 900})
        page.locator(selector).first.screenshot(
            path=SCREENSHOTS / f"readme-{name}.png"
        )
        assert (SCREENSHOTS / f"readme-{name}.png").stat().st_size > 5000


@pytest.mark.parametrize("name", toc_files())
def test_page_stays_within_its_weight_budget(loaded, site, name):
    base, _ = site
    page, _ = loaded(name)
    fetched = weigh(page.fetched, base)
    limit, parts = budget(name)
    total = sum(fetched.values())
    assert total <= limit, (
        f"{name} fetched {total / 1024:.0f} KiB {fetched}; its budget "
        f"(tests/page_budgets.json) is {limit / 1024:.0f} KiB = {parts}"
    )


def serious(violations):
    """Critical and serious violations: (rule id, help, elements)."""
    return [
        (v["id"], v["help"], v["targets"])
        for v in violations
        if v["impact"] in ("critical", "serious")
    ]


@pytest.mark.parametrize("name", toc_files())
def test_page_passes_the_accessibility_audit(loaded, name):
    page, _ = loaded(name)
    assert serious(audit(page, THEME_EXCEPTIONS)) == []


@pytest.mark.parametrize("name", toc_files())
def test_page_fits_a_phone_screen(visit, name):
    page, problems = visit(f"{name}.html", PHONE)
    page.wait_for_timeout(300)
    screenshot(page, "390px", f"{name.replace('/', '_')}.png")
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


def test_the_query_token_stays_in_view_on_a_phone(visit):
    page, problems = visit("book/labs.html", PHONE)
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


def test_the_head_view_scrolls_inside_its_box_on_a_phone(visit):
    page, _ = visit("book/real_heads.html", PHONE)
    view = page.locator("[id^=bertviz]").first
    view.locator("svg text").first.wait_for()
    box = view.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
    assert view.evaluate(
        "(el) => el.scrollWidth <= el.clientWidth"
        " || getComputedStyle(el).overflowX === 'auto'"
    )


def test_explorer_focus_is_visible_and_hidden_heads_keep_contrast(lab):
    page, root = lab
    page.keyboard.press("Tab")  # start keyboard navigation
    for control in (".mha-token", ".mha-toggle", ".mha-isolate"):
        root.locator(control).first.focus()
        outline = root.locator(control).first.evaluate(
            "(el) => { const s = getComputedStyle(el);"
            " return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"
        )
        assert outline[0] != "none" and outline[1] >= 2, (control, outline)
    root.locator(".mha-toggle").first.click()  # hide a head
    assert (
        root.locator(".mha-toggle").first.get_attribute("aria-pressed")
        == "false"
    )
    assert serious(audit(page, THEME_EXCEPTIONS)) == []
