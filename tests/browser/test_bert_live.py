"""The live lab in Chromium: the page's tokenizer and model against Python's
tokenizer and PyTorch, its messages, and what it downloads (nothing off
localhost; nothing of the model before the button).

The browser and the served site are conftest.py's, shared with the other
browser tests.
"""

import random

import pytest
import torch

from browsing import open_page
from chapter import BOOK
from mhabook.experiments.checkpoint import bundled_path
from mhabook.views import live

LAB = "book/labs.html"
BUTTON = "Download the model"
HEAVY = ("bert.onnx", ".wasm", ".mjs", "vocab.txt", "head_view.js")
EVIL = "</script><img src=x onerror=alert(1)>\"'&amp;"


@pytest.fixture(scope="module")
def bert():
    """The bundled model and its tokenizer, as the live lab runs them."""
    return live.load_bert(bundled_path())


def pytorch(bert, a, b):
    tokenizer, model = bert
    inputs = tokenizer(a, b or None, return_tensors="pt")
    with torch.no_grad():
        attention = model(**inputs, output_attentions=True).attentions
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    return tokens, torch.stack(attention)[:, 0]  # (L, h, T, T)


def fetched(page):
    """Every address the page has fetched since it opened."""
    return page.evaluate(
        "() => performance.getEntriesByType('resource').map(e => e.name)"
    )


def status(page):
    return page.locator(".mha-live-status").text_content()


@pytest.fixture(scope="module")
def loaded_lab(browser, site):
    """The labs page with the live model loaded, once for the tests that
    type into it (each types what it needs): (page, problems)."""
    base, _ = site
    page, problems = open_page(browser, base, LAB)
    page.wait_for_timeout(300)
    before = fetched(page)
    assert 0 < len(before) < 250  # the browser's default timing buffer
    assert not [u for u in before if u.endswith(HEAVY)]
    page.get_by_role("button", name=BUTTON).click()
    page.wait_for_function(
        "() => window.mhaLive && window.mhaLive.shown", timeout=60_000
    )
    yield page, problems
    page.context.close()


@pytest.fixture
def lab(loaded_lab):
    """The loaded lab, with the problems seen during one test only."""
    page, problems = loaded_lab
    for seen in problems.values():
        seen.clear()
    yield page, problems
    assert problems["external"] == [] and problems["dialogs"] == []


def shown_after(page, a, b, expected_tokens):
    """Type a pair as a reader would; wait for the page to show its run."""
    page.get_by_label("Sentence A").fill(a)
    page.get_by_label("Sentence B (optional)").fill(b)
    page.wait_for_function(
        "(tokens) => JSON.stringify(window.mhaLive.shown.tokens)"
        " === JSON.stringify(tokens)",
        arg=expected_tokens,
        timeout=20_000,
    )
    # the weights are read through getters: a result handed back whole
    # carries its small fields alone
    return page.evaluate(
        "() => { const s = window.mhaLive.shown;"
        " return {tokens: s.tokens, attention: s.attention}; }"
    )


@pytest.mark.parametrize(
    "a, b",
    [
        ("the cat sat on the mat because it was tired", "it fell asleep"),
        ("Fruit flies like a banana; time flies like an arrow!", ""),
        ("Ünïcödé wörds, 東京 and emoji 🙂 in one line", "Second, (short)."),
    ],
)
def test_typed_pairs_match_python_and_pytorch(lab, bert, a, b):
    page, problems = lab
    tokens, expected = pytorch(bert, a, b)
    shown = shown_after(page, a, b, tokens)
    attention = torch.tensor(shown["attention"])
    assert attention.shape == expected.shape  # (L, h, T, T)
    assert (attention - expected).abs().max() < live.TOLERANCE
    assert problems["errors"] == []
    assert "Ran " in status(page)


def test_every_layer_is_in_the_explorer_and_in_bertviz(lab, bert):
    page, problems = lab
    num_layers = bert[1].config.num_hidden_layers
    page.locator(".mha-live-bertviz").scroll_into_view_if_needed()
    bertviz = page.locator(".mha-live-bertviz [id^=mha-live-bertviz]")
    bertviz.locator("svg").wait_for()
    # The lab may draw BertViz again once the similarities arrive: wait
    # for the view that is drawn last, with its menu filled.
    page.wait_for_function(
        "(n) => document.querySelectorAll('.mha-live-bertviz"
        " [id^=mha-live-bertviz] #layer option').length === n",
        arg=num_layers,
        timeout=30_000,
    )
    layer_menu = bertviz.locator("#layer")
    assert layer_menu.locator("option").count() == num_layers
    before = bertviz.locator("svg").inner_html()
    other = "0" if layer_menu.input_value() != "0" else "1"
    layer_menu.select_option(other)
    page.wait_for_timeout(200)
    assert bertviz.locator("svg").inner_html() != before
    explorer = page.locator(".mha-live-explorer .mha-explorer")
    page.get_by_label("Head explorer of layer").select_option("2")
    assert "Layer 2 of" in explorer.get_attribute("aria-label")
    table = page.locator(".mha-live-table")
    assert table.locator("tr").count() == num_layers + 1
    assert problems["errors"] == []


def bertviz_tokens(page):
    return page.locator(".mha-live-bertviz #left text").all_text_contents()


def test_bertviz_is_drawn_on_screen_and_catches_up(lab):
    """BertViz draws 12 x T x T lines: only while on screen. An edit made
    with it off screen shows there once it scrolls into view."""
    page, problems = lab
    page.locator(".mha-live-bertviz").scroll_into_view_if_needed()
    page.wait_for_function(
        "() => document.querySelectorAll('.mha-live-bertviz #left text')"
        ".length === window.mhaLive.shown.tokens.length"
    )
    before = bertviz_tokens(page)
    assert before == page.evaluate("() => window.mhaLive.shown.tokens")
    # Scrolled away; the visibility observer reports at the next frames.
    page.evaluate(
        "() => { window.scrollTo(0, 0); return new Promise((r) =>"
        " requestAnimationFrame(() => requestAnimationFrame(r))); }"
    )
    tokens = page.evaluate(
        "() => mhaLive.run('a dog barked', '').then((r) => r.tokens)"
    )
    page.wait_for_timeout(300)
    assert bertviz_tokens(page) == before  # off screen: not redrawn
    page.locator(".mha-live-bertviz").scroll_into_view_if_needed()
    page.wait_for_function(
        "(n) => document.querySelectorAll('.mha-live-bertviz #left text')"
        ".length === n",
        arg=len(tokens),
    )
    assert bertviz_tokens(page) == tokens
    assert problems["errors"] == []


def test_bad_input_shows_a_message(lab):
    page, problems = lab
    page.get_by_label("Sentence B (optional)").fill("")
    page.get_by_label("Sentence A").fill("   ")
    page.wait_for_function(
        "() => document.querySelector('.mha-live-status')"
        ".textContent.includes('empty')"
    )
    page.get_by_label("Sentence A").fill("word " * 600)
    page.wait_for_function(
        "() => document.querySelector('.mha-live-status')"
        ".textContent.includes('602 tokens long')"
    )
    assert "at most 512" in status(page)
    page.get_by_label("Sentence A").fill(EVIL)
    page.wait_for_function(
        "() => window.mhaLive.shown.tokens.includes('alert')"
    )
    page.wait_for_timeout(300)
    explorer = page.locator(".mha-live-explorer .mha-token")
    assert "script" in explorer.all_text_contents()
    assert page.locator(".mha-live img").count() == 0
    assert problems["dialogs"] == []
    rejected = page.evaluate(
        "() => window.mhaLive.run('').then(() => '', e => e.message)"
    )
    assert "Sentence A is empty" in rejected


def test_a_failed_download_says_how_to_serve_the_site(visit):
    page, problems = visit(LAB)
    page.route("**/bert.onnx", lambda route: route.abort())
    page.get_by_role("button", name=BUTTON).click()
    page.wait_for_function(
        "() => document.querySelector('.mha-live-status')"
        ".dataset.state === 'error'"
    )
    message = status(page)
    assert "bert.onnx" in message and "python -m http.server" in message
    assert page.get_by_role("button", name=BUTTON).is_enabled()


def test_no_webassembly_is_told_so(visit):
    page, _ = visit(LAB)
    page.evaluate("() => { delete window.WebAssembly; }")
    page.get_by_role("button", name=BUTTON).click()
    page.wait_for_function(
        "() => document.querySelector('.mha-live-status')"
        ".dataset.state === 'error'"
    )
    assert "cannot run WebAssembly" in status(page)


def test_a_page_opened_as_a_file_says_to_serve_it(browser, site):
    _, html = site
    page = browser.new_page()
    page.goto((html / LAB).as_uri())
    page.get_by_role("button", name=BUTTON).click()
    page.wait_for_function(
        "() => document.querySelector('.mha-live-status')"
        ".dataset.state === 'error'"
    )
    assert "python -m http.server" in status(page)
    page.close()


# Tokenizer parity: the page's tokenizer against Python's, without the book.
# fmt: off
PIECES = [
    "", " ", "   ", "\t\n\r", "\u3000", "\u00a0", "\u2028", "\u200b",
    "\ufeff", "\x00", "\x07", "\ufffd", "a\u0301", "Café", "naïve",
    "Ångström", "ÉCOLE", "crème brûlée", "Straße", "İstanbul", "ΣΊΣΥΦΟΣ",
    "ﬁne", "ＡＢＣ１２３", "我爱北京天安门", "日本語のテキスト", "한국어 문장",
    "𠀀𪜀", "Привет, мир!", "مرحبا بالعالم", "नमस्ते दुनिया", "👍🏽", "👨‍👩‍👧",
    "🙂🙃", "!!!???", "...", "—–-", "(a)[b]{c}", "$100", "50%", "a+b=c",
    "x^2", "~/path/to/file.txt", "https://example.org/a?b=c&d=e",
    "e-mail@example.com", "don't", "rock'n'roll", "“quoted”", "«guillemets»",
    "supercalifragilisticexpialidocious", "a" * 100, "b" * 101,
    "antidisestablishmentarianism" * 5, "[SEP]", "[MASK]", "[mask]",
    "[CLS]x[UNK]", "[PAD", EVIL, "<b>bold</b>", "3.14159", "1,000,000",
    "ǅemal", "ﬀ", "℡", "Ⅻ", "½", "∑x²", "‰", "§", "¿Qué?", "¡Hola!",
    "the cat sat on the mat", "The Cat SAT", "time flies like an arrow",
    "unaffable", "playing", "tokenization", "hello\tworld", "line\nbreak",
]
# fmt: on


def corpus(size=320):
    """PIECES and random mixes of them: at least `size` strings."""
    chooser = random.Random(0)
    texts = list(PIECES)
    while len(texts) < size:
        parts = chooser.sample(PIECES, chooser.randint(2, 5))
        texts.append(chooser.choice(["", " ", "  "]).join(parts))
    return texts


@pytest.fixture(scope="module")
def tokenizer_page(browser):
    from mhabook import load_tokenizer

    tokenizer = load_tokenizer(bundled_path())
    vocab = tokenizer.get_vocab()
    page = browser.new_page()
    page.route("**/*", lambda route: route.abort())  # no network at all
    page.set_content("<!DOCTYPE html><meta charset='utf-8'>")
    page.add_script_tag(path=BOOK / "mhabook" / "views" / "wordpiece.js")
    page.evaluate(
        "(text) => { window.wp = MhaWordPiece.fromVocab(text); }",
        "\n".join(sorted(vocab, key=vocab.get)),
    )
    yield page, tokenizer
    page.close()


def test_the_page_tokenizes_single_sentences_as_python(tokenizer_page):
    page, tokenizer = tokenizer_page
    texts = corpus()
    assert len(texts) >= 300
    got = page.evaluate("(texts) => texts.map((t) => wp.encode(t))", texts)
    for text, encoded in zip(texts, got):
        expected = tokenizer(text)
        assert encoded["input_ids"] == expected["input_ids"], repr(text)
        assert encoded["token_type_ids"] == expected["token_type_ids"]


def test_the_page_tokenizes_pairs_as_python(tokenizer_page):
    page, tokenizer = tokenizer_page
    texts = [t for t in corpus() if t.strip()]
    pairs = list(zip(texts[::2], texts[1::2]))
    got = page.evaluate(
        "(pairs) => pairs.map(([a, b]) => wp.encode(a, b))", pairs
    )
    for (a, b), encoded in zip(pairs, got):
        expected = tokenizer(a, b)
        assert encoded["input_ids"] == expected["input_ids"], repr((a, b))
        assert encoded["token_type_ids"] == expected["token_type_ids"]
        tokens = tokenizer.convert_ids_to_tokens(expected["input_ids"])
        assert encoded["tokens"] == tokens


@pytest.fixture
def all_layers_page(site):
    """A page with BertViz's head view of every layer of a random pair,
    its CDN addresses rewritten as the book build does."""
    from browsing import harness_page
    from mhabook.views.bertviz_view import head_view_html

    _, html_dir = site
    tokens = ["[CLS]", "time", "flies", "[SEP]", "fruit", "[SEP]"]
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(3, 2, 6, 6), -1)
    view = head_view_html(
        weights, tokens, 4, layer=1, heads=[0], all_layers=True
    ).data
    return harness_page(html_dir, "all-layers", view)


def test_the_head_view_of_every_layer_has_working_menus(
    visit,
    all_layers_page,
):
    page, problems = visit(all_layers_page)
    svg = page.locator("[id^=bertviz] svg")
    svg.locator("text").first.wait_for()
    menu = page.locator("[id^=bertviz] #layer")
    assert menu.locator("option").all_text_contents() == ["0", "1", "2"]
    assert menu.input_value() == "1"
    before = svg.inner_html()
    menu.select_option("2")
    page.wait_for_timeout(200)
    assert svg.inner_html() != before
    page.locator("[id^=bertviz] #filter").select_option(
        label="Sentence A -> Sentence B"
    )
    page.wait_for_timeout(200)
    labels = svg.locator("#left text, #right text").all_text_contents()
    assert labels == ["[CLS]", "time", "flies", "[SEP]", "fruit", "[SEP]"]
    assert problems["errors"] == [] and problems["external"] == []


BERTVIZ_LINES = 2500  # live-bertviz.js
DESKTOP = {"width": 1280, "height": 900}
TALL = {"width": 1280, "height": 3000}  # the whole lab at once


def test_long_input_keeps_every_view_bounded(lab):
    """With every view on screen, the page's work per edit is bounded at
    any length: the model runs in a worker, the explorer draws at most 24
    arcs a head, and BertViz draws only what fits its line budget (at 128
    and 512 tokens, a note instead). How long the page's longest task
    takes is `make bench-live`'s to measure (a time limit here would fail
    on a busy machine, not on a slow page)."""
    page, problems = lab
    page.set_viewport_size(TALL)  # every view on screen
    page.locator(".mha-live").scroll_into_view_if_needed()
    for n in (32, 128, 512):
        page.get_by_label("Sentence B (optional)").fill("")
        page.get_by_label("Sentence A").fill(" ".join(["word"] * (n - 2)))
        page.wait_for_function(
            "(n) => document.querySelector('.mha-live-status')"
            ".textContent.includes(' on ' + n + ' tokens: ')",
            arg=n,
            timeout=90_000,
        )
        lines = page.locator(".mha-live-bertviz line").count()
        arcs = page.locator(".mha-live-explorer .mha-arc").count()
        assert lines <= BERTVIZ_LINES
        assert arcs <= 12 * 24
        if n >= 128:
            note = page.locator(".mha-live-bertviz .mha-live-note")
            assert f"At {n} tokens" in note.text_content()
        else:
            assert lines > 0
        assert "from your last edit to the last view drawn" in status(page)
    page.set_viewport_size(DESKTOP)
    assert problems["errors"] == []


def test_views_that_no_longer_match_the_text_say_so(lab):
    page, _ = lab
    page.get_by_label("Sentence A").fill("a dog barked")
    page.wait_for_function("() => window.mhaLive.shown.tokens.includes('dog')")
    views = page.locator(".mha-live-views")
    assert "mha-stale" not in (views.get_attribute("class") or "")
    page.get_by_label("Sentence B (optional)").fill("")
    page.get_by_label("Sentence A").fill("  ")
    page.wait_for_function(
        "() => document.querySelector('.mha-live-views')"
        ".classList.contains('mha-stale')"
    )
    assert page.locator(".mha-live-stale-note").is_visible()
    page.get_by_label("Sentence A").fill("a cat")
    page.wait_for_function(
        "() => !document.querySelector('.mha-live-views')"
        ".classList.contains('mha-stale')"
    )
    assert not page.locator(".mha-live-stale-note").is_visible()


def test_sentence_b_can_be_cleared_and_the_status_says_what_ran(lab):
    """Sentence B is read after A: what ran is said, and one click
    clears B."""
    page, problems = lab
    page.get_by_label("Sentence A").fill("the cat sat because it was tired")
    page.get_by_label("Sentence B (optional)").fill("it slept")
    page.wait_for_function(
        "() => /tokens: sentence A, then sentence B\\./"
        ".test(document.querySelector('.mha-live-status').textContent)"
    )
    clear = page.get_by_role("button", name="Clear sentence B")
    clear.click()
    assert page.get_by_label("Sentence B (optional)").input_value() == ""
    assert clear.is_disabled()
    page.wait_for_function(
        "() => /tokens: sentence A alone\\./"
        ".test(document.querySelector('.mha-live-status').textContent)"
    )
    assert "slept" not in page.evaluate("() => window.mhaLive.shown.tokens")
    assert problems["errors"] == []


def test_the_table_caption_stays_in_view_on_a_phone(lab):
    """On a phone the table of shares scrolls sideways; its caption and
    its layer column stay where they are."""
    from browsing import PHONE

    page, problems = lab
    page.set_viewport_size(PHONE)
    try:
        summary = page.locator(".mha-live-summary")
        summary.scroll_into_view_if_needed()
        assert summary.evaluate("(el) => el.scrollWidth > el.clientWidth")
        summary.evaluate("(el) => { el.scrollLeft = el.scrollWidth; }")
        page.wait_for_timeout(100)
        box = summary.bounding_box()
        for part in ("caption", "tr:nth-child(2) > th"):
            inner = summary.locator(part).first.bounding_box()
            assert inner["x"] >= box["x"] - 1, part
            assert inner["x"] + inner["width"] <= box["x"] + box["width"] + 1
    finally:
        page.set_viewport_size(DESKTOP)
    assert problems["errors"] == []


@pytest.fixture
def lab_on_a_word(site):
    """The live lab of the built page, asked to open on "it"."""
    import html
    import json
    import re

    from browsing import harness_page

    _, html_dir = site
    built = (html_dir / LAB).read_text()
    found = re.search(r'<div class="mha-live" data-params="([^"]*)"', built)
    params = json.loads(html.unescape(found.group(1)))
    params.update(
        text_a="the cat sat on the mat because it was tired",
        text_b="",
        query="it",
    )
    found = re.findall(r"<template .*?</template>", built, re.DOTALL)
    templates = "".join(found)
    scripts = "".join(
        f'<script src="../_static/live/{name}"></script>'
        for name in live.PAGE_JS
    )
    return harness_page(
        html_dir,
        "live-query",
        f'<div class="mha-live" data-params="'
        f'{html.escape(json.dumps(params))}">{templates}</div>{scripts}',
    )


def test_the_lab_opens_on_the_word_the_page_asks_for(visit, lab_on_a_word):
    page, problems = visit(lab_on_a_word)
    page.get_by_role("button", name=BUTTON).click()
    page.wait_for_function(
        "() => window.mhaLive && window.mhaLive.shown", timeout=60_000
    )
    query = page.locator(".mha-live-explorer .mha-token[aria-pressed=true]")
    assert query.text_content() == "it"
    assert query.get_attribute("data-index") == "8"  # [CLS] the cat ... it
    assert problems["errors"] == [] and problems["external"] == []


def test_the_note_for_pages_opened_from_disk_shows_only_there(
    browser, site, visit
):
    """labs.ipynb's note on file:// pages carries `:class: mha-file-only`:
    hidden over http, shown from disk (book/_ext/page_scripts.py)."""
    page, _ = visit(LAB)
    note = page.locator(".mha-file-only")
    assert note.count() == 1 and not note.is_visible()
    _, html = site
    opened = browser.new_page()
    opened.goto((html / LAB).as_uri())
    assert opened.locator(".mha-file-only").is_visible()
    opened.close()


# Lab 3's head mask: the page against mhabook.experiments.ablation.
PAIR = ("the cat sat on the mat because it was tired", "it fell asleep")
RUN_MASKED = """([a, b, mask]) => mhaLive.run(a, b, {headMask: mask})
  .then((r) => ({tokens: r.tokens, attention: r.attention,
    valueNorms: r.valueNorms, similarity: r.similarity,
    similarityAll: r.similarityAll}))"""


def head_mask(name, L=6, h=12):
    mask = torch.ones(L, h)
    if name == "one head":
        mask[2, 5] = 0
    elif name == "one layer":
        mask[3] = 0
    elif name == "random half":
        order = torch.randperm(
            L * h, generator=torch.Generator().manual_seed(0)
        )
        mask.view(-1)[order[: L * h // 2]] = 0
    elif name == "every head":
        mask[:] = 0
    return mask


@pytest.mark.parametrize(
    "name", ["none", "one head", "one layer", "random half", "every head"]
)
def test_heads_switched_off_match_pytorch(lab, bert, name):
    from mhabook.experiments import ablation

    page, problems = lab
    tokenizer, model = bert
    config = model.config
    mask = head_mask(
        name, config.num_hidden_layers, config.num_attention_heads
    )
    got = page.evaluate(RUN_MASKED, [*PAIR, mask.int().tolist()])
    inputs = tokenizer(*PAIR, return_tensors="pt")
    attention, norms, _ = ablation.masked_run(model, inputs, mask)
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    assert got["tokens"] == tokens
    attention_gap = (torch.tensor(got["attention"]) - attention[0]).abs().max()
    norm_gap = ((torch.tensor(got["valueNorms"]) - norms[0]) / norms[0]).abs()
    expected = ablation.similarity(model, tokenizer, *PAIR, mask)
    similarity_gap = abs(got["similarity"] - expected)
    print(
        f"{name}: attention {attention_gap:.1e}, value norms "
        f"{norm_gap.max():.1e} relative, similarity {similarity_gap:.1e}"
    )
    assert attention_gap < live.TOLERANCE
    assert norm_gap.max() < live.NORM_TOLERANCE
    assert similarity_gap < live.SIMILARITY_TOLERANCE
    everything = ablation.similarity(model, tokenizer, *PAIR)
    assert abs(got["similarityAll"] - everything) < live.SIMILARITY_TOLERANCE
    line = page.locator(".mha-live-similarity").text_content()
    if name == "every head":
        assert "Every head is off" in line
    assert f"{got['similarity']:.3f} now" in line
    assert problems["errors"] == []


def test_a_bad_head_mask_names_the_shape_expected(lab):
    page, _ = lab
    for mask in ([[1] * 12] * 5, [[0.5] * 12] * 6, "all"):
        message = page.evaluate(
            "(m) => mhaLive.run('a cat', '', {headMask: m})"
            ".then(() => '', (e) => e.message)",
            mask,
        )
        assert "(6, 12)" in message, mask
    result = page.evaluate(
        "() => mhaLive.run('a cat', '').then((r) => r.similarity)"
    )
    assert result is None  # no sentence B, no similarity


def test_the_head_grid_works_from_the_keyboard(lab):
    """A head switched off with the keyboard: the grid marks it with a
    cross, the explorer names it off in grey; the preset turns all on."""
    page, problems = lab
    page.evaluate("() => mhaLive.run('a dog barked', 'a cat slept')")
    page.get_by_label("Head explorer of layer").select_option("1")
    button = page.get_by_role("button", name="Layer 1, head 3", exact=True)
    assert button.get_attribute("aria-pressed") == "true"
    button.focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        "() => window.mhaLive.shown.headMask[1][3] === 0", timeout=20_000
    )
    assert button.get_attribute("aria-pressed") == "false"
    assert button.text_content() == "\u00d7"
    explorer = page.locator(".mha-live-explorer")
    assert "head 3 (off)" in explorer.text_content()
    page.get_by_role("button", name="All heads on").click()
    page.wait_for_function(
        "() => window.mhaLive.shown.headMask.flat().every((v) => v === 1)",
        timeout=20_000,
    )
    assert button.get_attribute("aria-pressed") == "true"
    assert problems["errors"] == []


# Lab 3's three readings of the weights and its presets.
READINGS = """([a, b, mask]) => mhaLive.run(a, b, {headMask: mask})
  .then((r) => ({weighted: r.valueWeighted(), rollout: r.rollout()}))"""


@pytest.mark.parametrize("name", ["none", "one layer", "random half"])
def test_the_three_readings_match_pytorch(lab, bert, name):
    """The page's value-weighted weights and rollout against
    mhabook.experiments.ablation's, under a head mask."""
    from mhabook.experiments import ablation

    page, problems = lab
    tokenizer, model = bert
    config = model.config
    mask = head_mask(
        name, config.num_hidden_layers, config.num_attention_heads
    )
    got = page.evaluate(READINGS, [*PAIR, mask.int().tolist()])
    inputs = tokenizer(*PAIR, return_tensors="pt")
    attention, norms, _ = ablation.masked_run(model, inputs, mask)
    weighted = ablation.value_weighted(attention[0], norms[0])
    rolled = ablation.rollout(attention[0], mask)
    # each weight within the attention's tolerance, times its key's norm,
    # plus the norm's own share
    room = live.TOLERANCE * norms[0][..., None, :] + (
        live.NORM_TOLERANCE * weighted
    )
    weighted_gap = (torch.tensor(got["weighted"]) - weighted).abs()
    rollout_gap = (torch.tensor(got["rollout"]) - rolled).abs().max()
    print(
        f"{name}: value-weighted {(weighted_gap / room).max():.2f} of its "
        f"room, rollout {rollout_gap:.1e}"
    )
    assert (weighted_gap <= room).all()
    assert rollout_gap < live.TOLERANCE
    assert problems["errors"] == []


def arcs_of(page, head=None):
    """{key: weight} of the explorer's arcs from the query (of one head)."""
    selector = ".mha-live-explorer path.mha-arc"
    if head is not None:
        selector += f"[data-head='{head}']"
    return {
        int(arc.get_attribute("data-key")): float(
            arc.get_attribute("data-weight")
        )
        for arc in page.locator(selector).all()
    }


def test_the_explorer_draws_each_reading(lab, bert):
    """The reading switch redraws the explorer: its arcs carry the
    reference's weights, the caption says what the reading assumes."""
    from mhabook.experiments import ablation

    page, problems = lab
    tokenizer, model = bert
    page.evaluate("([a, b]) => mhaLive.run(a, b)", list(PAIR))
    page.get_by_label("Head explorer of layer").select_option("2")
    inputs = tokenizer(*PAIR, return_tensors="pt")
    attention, norms, _ = ablation.masked_run(model, inputs)
    query = int(
        page.locator(
            ".mha-live-explorer .mha-token[aria-pressed=true]"
        ).get_attribute("data-index")
    )
    caption = page.locator(".mha-live-reading-caption")
    # 1. raw weights (rounded to 3 decimals on the arcs)
    raw = arcs_of(page, head=4)
    for key, weight in raw.items():
        assert abs(weight - attention[0, 2, 4, query, key]) < 3e-3
    assert "softmax weights" in caption.text_content()
    # 2. weighted by value norms, each row scaled to sum to 1
    page.get_by_role("radio", name="weighted by value norms").check()
    page.wait_for_function(
        "() => document.querySelector('.mha-live-explorer .mha-explorer')"
        ".getAttribute('aria-label').includes('value norms')"
    )
    weighted = ablation.value_weighted(attention[0], norms[0])[2, 4, query]
    shares = weighted / weighted.sum()
    drawn = arcs_of(page, head=4)
    assert drawn.keys() == raw.keys()
    for key, weight in drawn.items():
        assert abs(weight - shares[key]) < 5e-3
    assert "Kobayashi" in caption.text_content()
    # 3. rolled out: one map, layers 0 to 2
    page.get_by_role("radio", name="rolled out across layers").check()
    page.wait_for_function(
        "() => document.querySelectorAll('.mha-live-explorer .mha-toggle')"
        ".length === 1"
    )
    rolled = ablation.rollout(attention[0])[2, query]
    for key, weight in arcs_of(page).items():
        assert abs(weight - rolled[key]) < 3e-3
    toggle = page.locator(".mha-live-explorer .mha-toggle")
    assert "layers 0\u20132 rolled out" in toggle.text_content()
    assert "Abnar" in caption.text_content()
    page.get_by_role("radio", name="attention weights").check()
    page.wait_for_function(
        "() => document.querySelectorAll('.mha-live-explorer .mha-toggle')"
        ".length > 1"
    )
    assert problems["errors"] == []


def lab_params(page):
    return page.evaluate(
        "() => JSON.parse(document.querySelector('.mha-live').dataset.params)"
    )


def mask_after(page, press):
    """Press a preset; the head mask of the run it shows."""
    runs = page.evaluate("() => mhaLive.runs")
    press()
    page.wait_for_function("(n) => mhaLive.runs > n", arg=runs, timeout=20_000)
    return torch.tensor(page.evaluate("() => mhaLive.shown.headMask"))


def test_the_presets_switch_off_what_they_say(lab, bert):
    page, problems = lab
    tokenizer, model = bert
    L, h = model.config.num_hidden_layers, model.config.num_attention_heads
    params = lab_params(page)
    # the ranking "Are all heads needed?" gives, as the build cached it
    ranking = live.ranking(model, tokenizer)
    assert [tuple(p) for p in params["ranking"]] == ranking
    page.evaluate("([a, b]) => mhaLive.run(a, b)", list(PAIR))

    def press(name):
        button = page.get_by_role("button", name=name, exact=True)
        return lambda: button.click()

    for name, off in (
        (f"The {h} least important off", ranking[:h]),
        (f"The {h} most important off", ranking[-h:]),
    ):
        mask = mask_after(page, press(name))
        expected = torch.ones(L, h)
        for layer, head in off:
            expected[layer, head] = 0
        assert torch.equal(mask, expected), name
        button = page.get_by_role("button", name=name, exact=True)
        assert button.get_attribute("aria-pressed") == "true"
    menu = page.get_by_label("One layer off (the others on)")
    mask = mask_after(page, lambda: menu.select_option("3"))
    assert mask[3].sum() == 0 and mask.sum() == (L - 1) * h
    mask = mask_after(page, press("All heads off"))
    assert mask.sum() == 0
    line = page.locator(".mha-live-similarity").text_content()
    assert "Every head is off" in line and "still defined" in line
    mask = mask_after(page, press("All heads on"))
    assert mask.sum() == L * h
    assert menu.input_value() == ""  # the layer preset no longer holds
    assert problems["errors"] == []


def test_a_head_switched_off_is_drawn_apart_from_the_palettes_grey(lab):
    """Head 5's colour is the palette's grey: switched off, its arcs are
    dotted and of another tone, its swatch hatched."""
    page, problems = lab
    mask = head_mask("none").int()
    mask[2, 4] = 0
    page.evaluate(
        "([a, b, m]) => mhaLive.run(a, b, {headMask: m})",
        [*PAIR, mask.tolist()],
    )
    page.get_by_role("radio", name="attention weights").check()
    page.get_by_label("Head explorer of layer").select_option("2")
    page.wait_for_function(
        "() => document.querySelector('.mha-live-explorer .mha-explorer')"
        ".getAttribute('aria-label').startsWith('Layer 2 ')"
    )
    style = """(arc) => { const s = getComputedStyle(arc);
      return [s.stroke, s.strokeDasharray]; }"""
    grey = page.locator(
        ".mha-live-explorer path.mha-arc[data-head='5']"
    ).first.evaluate(style)
    off = page.locator(
        ".mha-live-explorer path.mha-arc[data-head='4']"
    ).first.evaluate(style)
    assert grey == ["rgb(128, 128, 128)", "none"]
    assert off[0] != grey[0] and off[1] != "none"
    toggle = page.locator(".mha-live-explorer .mha-toggle[data-head='4']")
    assert "(off)" in toggle.text_content()
    assert "mha-live-off" in toggle.get_attribute("class")
    assert problems["errors"] == []
