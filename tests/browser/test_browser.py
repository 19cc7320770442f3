"""The book's views in a real browser (Debian's Chromium via Playwright):
BertViz's head view and the head explorer answer clicks and keys, and show
hostile text as text. The pages themselves are checked in test_pages.py,
and at a phone's width in test_phone.py."""

import pytest
import torch

from browsing import THEME_EXCEPTIONS, audit, harness_page, open_page, serious
from mhabook import head_explorer
from mhabook.views.bertviz_view import head_view_html
from mhabook.views.explorer import HEAD_COLOURS

EVIL = "</script><img src=x onerror=alert(1)>\"'&amp;"


def test_head_view_shows_the_pair_and_switches_heads(visit):
    page, problems = visit("book/real_heads.html")
    svg = page.locator("[id^=bertviz] svg").first
    svg.wait_for()
    labels = svg.locator("#left text, #right text").all_text_contents()
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


def test_clicking_it_shows_the_coreference_arc_to_mat(lab):
    page, root = lab
    root.get_by_role("button", name="the", exact=True).first.click()
    root.get_by_role("button", name="it", exact=True).click()
    state = explorer_state(page, root.element_handle())
    assert state["query"] == "it"
    coreference, mat = "3", "5"
    weights = {(h, k): w for h, k, w in state["arcs"]}
    assert weights[coreference, mat] > 0.5
    assert "coreference \u2192 \u201cmat\u201d" in state["caption"]


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
    assert explorer_state(page, root.element_handle())["query"] == "soft"
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


def test_two_heads_sending_sat_to_cat_are_both_visible(lab):
    """Lab 1: the previous-token and subject heads both send "sat" to
    "cat"; their arcs must not lie one under the other."""
    page, root = lab
    root.get_by_role("button", name="sat", exact=True).click()
    arcs = root.evaluate(
        """(el) => {
            const tokens = [...el.querySelectorAll('.mha-token')]
                .map((b) => b.textContent);
            const cat = String(tokens.indexOf('cat'));
            return [...el.querySelectorAll('.mha-arc')]
                .filter((p) => p.dataset.key === cat)
                .filter((p) => ['0', '1'].includes(p.dataset.head))
                .map((p) => { const b = p.getBBox();
                    return [p.dataset.head, b.x, b.y, b.width]; });
        }"""
    )
    (_, x1, y1, _), (_, x2, y2, _) = sorted(arcs)
    assert abs(y1 - y2) >= 8 or abs(x1 - x2) >= 8, arcs


# The head view's squares, in the svg's last group (BertViz draws them).
SQUARES = "[id^=bertviz] svg > g:last-of-type > rect"


def pressed(page):
    """The heads the head view shows: its squares' aria-pressed."""
    return page.evaluate(
        f"() => [...document.querySelectorAll('{SQUARES}')]"
        ".map((r) => r.getAttribute('aria-pressed'))"
    )


def test_head_view_squares_and_tokens_take_the_keyboard(visit):
    """Each head square is a toggle button, one Tab stop for the row:
    Enter shows or hides a head, Shift+Enter (or Enter twice) shows it
    alone; a token with the focus shows its attention as under the
    pointer."""
    page, problems = visit("book/real_heads.html")
    squares = page.locator(SQUARES)
    squares.first.wait_for()
    assert squares.count() == 12
    assert squares.nth(3).get_attribute("role") == "button"
    assert squares.nth(3).get_attribute("aria-label") == "head 3"
    assert [squares.nth(i).get_attribute("tabindex") for i in (0, 1)] == [
        "0",
        "-1",
    ]
    # a head the view does not show alone (it opens on one head)
    first = pressed(page).index("false")
    page.keyboard.press("Tab")  # keyboard navigation
    squares.first.focus()
    for _ in range(first):
        page.keyboard.press("ArrowRight")
    label = "() => document.activeElement.getAttribute('aria-label')"
    assert page.evaluate(label) == f"head {first}"
    page.keyboard.press("Shift+Enter")  # that head alone
    assert pressed(page) == [str(i == first).lower() for i in range(12)]
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")  # and the next one
    assert pressed(page)[first : first + 2] == ["true", "true"]
    page.wait_for_timeout(600)  # not a double press
    page.keyboard.press("Enter")
    page.wait_for_timeout(100)
    page.keyboard.press("Enter")  # a double press: the next one alone
    assert pressed(page) == [str(i == first + 1).lower() for i in range(12)]
    ring = squares.nth(first + 1).evaluate(
        "(el) => { const s = getComputedStyle(el);"
        " return [s.outlineStyle, parseFloat(s.outlineWidth)]; }"
    )
    assert ring[0] != "none" and ring[1] >= 2
    # the tokens: the query column is one Tab stop; arrows move along it
    token = page.locator("[id^=bertviz] #left > g:not(.attentionBoxes) > g")
    token.first.focus()
    page.keyboard.press("ArrowDown")
    assert page.evaluate(label) == token.nth(1).text_content() + " (query)"
    shown = (
        token.nth(1)
        .locator("rect.background")
        .evaluate("(el) => getComputedStyle(el).opacity")
    )
    assert shown == "1"
    assert problems["errors"] == []


def test_head_view_colours_are_the_explorers_numbered_and_marked(visit):
    """The explorer's palette, at least 3:1 on the page (test_explorer.py);
    each square has its head's number; heads whose colour an earlier head
    has draw dashed lines."""
    page, problems = visit("book/real_heads.html")
    page.locator(SQUARES).first.wait_for()
    page.locator(SQUARES).first.dblclick()  # head 0 alone
    page.locator(SQUARES).first.dblclick()  # all heads
    fills = page.evaluate(
        f"() => [...document.querySelectorAll('{SQUARES}')]"
        ".map((r) => r.getAttribute('fill'))"
    )
    assert [f.lower() for f in fills] == [c.lower() for c in HEAD_COLOURS]
    numbers = page.locator(
        "[id^=bertviz] svg > g:last-of-type > text"
    ).all_text_contents()
    assert numbers == [str(i) for i in range(12)]
    dashed = page.evaluate(
        "() => [...document.querySelectorAll('[id^=bertviz] #attention"
        " > g.headAttention')].map((g) => g.hasAttribute("
        "'stroke-dasharray'))"
    )
    assert dashed == [i >= 6 for i in range(12)]
    assert problems["errors"] == []


def luminance(rgb):
    """WCAG 2's relative luminance of a CSS 'rgb(r, g, b)'."""
    values = [int(v) / 255 for v in rgb[rgb.index("(") + 1 : -1].split(",")]
    r, g, b = [
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        for c in values[:3]
    ]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def test_the_token_under_the_pointer_stays_legible_in_dark_mode(browser, site):
    base, _ = site
    page, problems = open_page(
        browser, base, "book/real_heads.html", None, True
    )
    token = page.locator("[id^=bertviz] #left > g:not(.attentionBoxes) > g")
    token.first.wait_for()
    token.nth(2).hover()
    text, box = token.nth(2).evaluate(
        "(g) => [getComputedStyle(g.querySelector('text')).fill,"
        " getComputedStyle(g.querySelector('rect.background')).fill]"
    )
    lighter, darker = sorted([luminance(text), luminance(box)], reverse=True)
    assert (lighter + 0.05) / (darker + 0.05) >= 4.5, (text, box)
    page.context.close()
    assert problems["errors"] == []


@pytest.fixture
def ties_page(site):
    """An explorer whose head 0 spreads its weight evenly, head 1 splits
    it between two tokens, and whose heads 6 on repeat the colours."""
    _, html_dir = site
    tokens = ["a", "b", "c", "d"]
    weights = torch.full((7, 4, 4), 0.25)
    weights[1, 0] = torch.tensor([0.1, 0.45, 0.448, 0.002])
    weights[2, 0] = torch.tensor([0.1, 0.7, 0.1, 0.1])
    names = [f"h{i}" for i in range(7)]
    view = head_explorer(tokens, weights, names, html_action="return").data
    return harness_page(html_dir, "ties", view)


def test_the_caption_names_ties_and_an_even_spread(visit, ties_page):
    page, problems = visit(ties_page)
    caption = page.locator(".mha-caption").text_content()
    assert "h0 \u2192 spread evenly (25% each)" in caption
    assert "h1 \u2192 \u201cb\u201d and \u201cc\u201d (45% each)" in caption
    assert "h2 \u2192 \u201cb\u201d (70%)" in caption
    dashed = page.evaluate(
        "() => [...new Set([...document.querySelectorAll('.mha-arc')]"
        ".filter((p) => p.getAttribute('stroke-dasharray'))"
        ".map((p) => p.dataset.head))]"
    )
    assert dashed == ["6"]
    swatch = page.locator(".mha-swatch").nth(6)
    assert "mha-marked" in swatch.get_attribute("class")
    assert problems["errors"] == []


def test_the_header_buttons_show_keyboard_focus(visit):
    page, problems = visit("book/labs.html")
    page.keyboard.press("Tab")  # keyboard navigation
    rings = {}
    for button in page.locator(".bd-header-article .btn").all():
        if button.is_visible():
            button.focus()
            rings[button.get_attribute("aria-label")] = button.evaluate(
                "(el) => { const s = getComputedStyle(el);"
                " return s.outlineStyle !== 'none'"
                " && parseFloat(s.outlineWidth) >= 2; }"
            )
    assert len(rings) >= 4 and all(rings.values()), rings
    assert problems["errors"] == []


def test_live_code_asks_before_it_leaves_the_site(visit):
    """A click on Live Code says what it needs and sends nothing off the
    site; only "Connect" asks Binder, and when Binder cannot be reached
    (here every request off the site is aborted) the page says so and
    how to run the notebooks at home."""
    page, problems = visit("book/one_head.html")
    page.locator(".dropdown-launch-buttons > button").click()
    page.get_by_role("button", name="Live Code").click()
    note = page.locator(".mha-live-code-note")
    note.wait_for(timeout=30_000)
    assert "nothing is sent until you connect" in note.text_content()
    page.wait_for_timeout(500)
    assert problems["external"] == []
    page.get_by_role("button", name="Connect to mybinder.org").click()
    failed = page.locator(".mha-live-code-note[role=alert]")
    failed.wait_for(timeout=30_000)
    assert "needs the network" in failed.text_content()
    assert "make lab" in failed.text_content()
    assert all(
        url.startswith("https://mybinder.org/") for url in problems["external"]
    ), problems["external"]


def test_live_code_says_so_at_once_when_the_browser_is_offline(visit):
    page, problems = visit("book/one_head.html")
    page.context.set_offline(True)
    page.evaluate("() => window.initThebeSBT()")
    page.get_by_role("button", name="Connect to mybinder.org").click()
    assert (
        "needs the network"
        in page.locator(".mha-live-code-note[role=alert]").text_content()
    )
    assert problems["external"] == []
    assert not [u for u in problems["failed"] if "thebe" in u]


def test_search_summaries_show_no_tex(visit):
    """A summary is the text of the page found, less the TeX source of
    its formulas (book/_ext/page_scripts.py)."""
    page, problems = visit("search.html?q=softmax")
    summaries = page.locator("#search-results p.context")
    summaries.first.wait_for(timeout=30_000)
    text = " ".join(summaries.all_text_contents())
    assert "softmax" in text.lower()
    assert not [
        tex
        for tex in ("\\frac", "\\sqrt", "\\operatorname", "^\\top")
        if tex in text
    ], text
    assert problems["errors"] == []


def test_a_desktop_page_shows_one_search_field(visit):
    """At 1280 px the sidebar holds the search field; the parent theme's
    header, which held only a second one, is hidden (book/_static)."""
    page, problems = visit("book/labs.html")
    shown = [
        field.evaluate("(el) => el.closest('.bd-sidebar-primary') !== null")
        for field in page.locator(".search-button-field").all()
        if field.is_visible()
    ]
    assert shown == [True]  # one field, in the sidebar
    assert not page.locator("#pst-header").is_visible()
    assert problems["errors"] == []
