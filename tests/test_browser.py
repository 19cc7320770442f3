"""The built book in a real browser (Debian's Chromium via Playwright).

The site is served on 127.0.0.1 and every request to any other host is
aborted and counted as a failure. A screenshot of each page is saved in
_build/screenshots/ for review.
"""

import functools
import http.server
import shutil
import sys
import threading

import pytest
from playwright.sync_api import sync_playwright

from chapter import ROOT, toc_files
from mhabook import head_explorer
from mhabook.bertviz_view import head_view_html

CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENSHOTS = ROOT / "_build" / "screenshots"
EVIL = "</script><img src=x onerror=alert(1)>\"'&amp;"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def site(built_book):
    html = built_book / "html"
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=html)
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", html
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Chromium is missing: apt-get install -y chromium")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def visit(browser, site):
    """Open a page of the site; returns (page, problems)."""
    base, _ = site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    problems = {"external": [], "failed": [], "errors": [], "dialogs": []}

    def route(route):
        if route.request.url.startswith(base + "/"):
            route.continue_()
        else:
            problems["external"].append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
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

    def open_page(path):
        page.goto(f"{base}/{path}", wait_until="networkidle")
        page.evaluate(  # wait for MathJax's first typesetting, if any
            "() => window.MathJax && MathJax.startup"
            " ? MathJax.startup.promise.then(() => true) : true"
        )
        return page, problems

    yield open_page
    context.close()


@pytest.mark.parametrize("name", toc_files())
def test_page_is_self_contained_and_clean(visit, name):
    page, problems = visit(f"{name}.html")
    page.wait_for_timeout(300)
    untypeset = page.evaluate(
        "() => [...document.querySelectorAll('.math')]"
        ".filter(m => !m.querySelector('mjx-container')).length"
    )
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=SCREENSHOTS / f"{name.replace('/', '_')}.png", full_page=True
    )
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
    root.get_by_role("button", name="Show only head verb").click()
    assert explorer_state(page, root.element_handle())["heads"] == ["2"]
    root.get_by_role("button", name="Show all heads").click()
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
    toggle = root.get_by_role("button", name="Show head subject")
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

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    from page_assets import CDN_REWRITES

    _, html_dir = site
    tokens = ["[CLS]", "fish", EVIL, "[SEP]", "chips", "[SEP]"]
    weights = torch.softmax(torch.randn(2, 6, 6), -1)
    explorer = head_explorer(
        tokens, weights, ["a", EVIL], query=2, html_action="return"
    ).data
    view = head_view_html(weights[None], tokens, 4, layer=0, heads=[0]).data
    for url, local in CDN_REWRITES.items():
        view = view.replace(url, f"../_static/bundled/{local}")
    folder = html_dir / "escaping"
    folder.mkdir(exist_ok=True)
    (folder / "index.html").write_text(
        f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>"
        f"{explorer}{view}</body></html>"
    )
    return "escaping/index.html"


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


README_IMAGES = ROOT / "book" / "images"


def test_readme_screenshots_come_from_the_built_book(visit):
    """The README shows these; taking them here keeps them current."""
    page, _ = visit("book/one_head.html")
    page.set_viewport_size({"width": 1000, "height": 900})
    page.locator("#scaled-dot-product-attention").screenshot(
        path=README_IMAGES / "readme-one-head.png"
    )
    page, _ = visit("book/labs.html")
    page.set_viewport_size({"width": 1000, "height": 900})
    page.locator(".mha-explorer").first.screenshot(
        path=README_IMAGES / "readme-explorer.png"
    )
    page, _ = visit("book/real_heads.html")
    page.locator("[id^=bertviz]").first.screenshot(
        path=README_IMAGES / "readme-head-view.png"
    )
    for name in ("one-head", "explorer", "head-view"):
        assert (README_IMAGES / f"readme-{name}.png").stat().st_size > 5000
