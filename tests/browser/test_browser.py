"""The book's views in a real browser (Debian's Chromium via Playwright):
BertViz's head view and the head explorer answer clicks and keys, and show
hostile text as text. The pages themselves are checked in test_pages.py,
and at a phone's width in test_phone.py."""

import pytest

from browsing import THEME_EXCEPTIONS, audit, harness_page, serious
from mhabook import head_explorer
from mhabook.views.bertviz_view import head_view_html

EVIL = "</script><img src=x onerror=alert(1)>\"'&amp;"


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


def test_two_heads_sending_it_to_cat_are_both_visible(lab):
    """Lab 1: the subject and coreference heads both send "it" to "cat";
    their arcs must not lie one under the other."""
    page, root = lab
    root.get_by_role("button", name="it", exact=True).click()
    arcs = root.evaluate(
        """(el) => {
            const tokens = [...el.querySelectorAll('.mha-token')]
                .map((b) => b.textContent);
            const cat = String(tokens.indexOf('cat'));
            return [...el.querySelectorAll('.mha-arc')]
                .filter((p) => p.dataset.key === cat)
                .filter((p) => ['1', '3'].includes(p.dataset.head))
                .map((p) => { const b = p.getBBox();
                    return [p.dataset.head, b.x, b.y, b.width]; });
        }"""
    )
    (_, x1, y1, _), (_, x2, y2, _) = sorted(arcs)
    assert abs(y1 - y2) >= 8 or abs(x1 - x2) >= 8, arcs
