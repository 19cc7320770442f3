"""The head explorer's Python side: validation, ids and safe embedding.
(tests/browser/test_browser.py drives the view itself in Chromium.)"""

import json
import re
from types import SimpleNamespace

import pytest
import torch

from mhabook import head_explorer, pronoun_heads
from mhabook.views.explorer import HEAD_COLOURS, layer_explorer, safe_json

TOKENS = "the cat sat on the mat because it was tired".split()


def params(view):
    script = view.data.split("<script>")[1]
    found = re.search(r"const params = (\{.*?\});", script, re.DOTALL)
    return json.loads(
        found.group(1).replace("<\\/", "</").replace("<\\!--", "<!--")
    )


def test_return_mode_gives_the_html_with_the_data():
    names, weights = pronoun_heads(TOKENS, "cat", "it", ("sat", "was"))
    view = head_explorer(TOKENS, weights, names, query=7, html_action="return")
    data = params(view)
    assert data["tokens"] == TOKENS and data["query"] == 7
    assert [h["name"] for h in data["heads"]] == names
    assert data["heads"][3]["weights"][7][1] == round(
        weights[3, 7, 1].item(), 3
    )
    assert f'id="{data["id"]}"' in view.data


def test_every_view_gets_its_own_element_id():
    weights = torch.full((1, 2, 2), 0.5)
    first = head_explorer(["a", "b"], weights, ["h"], html_action="return")
    second = head_explorer(["a", "b"], weights, ["h"], html_action="return")
    assert params(first)["id"] != params(second)["id"]


def test_view_mode_displays_and_returns_nothing(capsys):
    weights = torch.full((1, 2, 2), 0.5)
    assert head_explorer(["a", "b"], weights, ["h"]) is None
    assert "IPython.core.display.HTML" in capsys.readouterr().out


def test_text_cannot_leave_the_script():
    evil = "</script><img src=x onerror=alert(1)><!--"
    view = head_explorer(
        [evil, "b"], torch.full((1, 2, 2), 0.5), [evil], html_action="return"
    )
    script = view.data.split("<script>", 1)[1].rsplit("</script>", 1)[0]
    assert "</" not in script and "<!--" not in script
    assert params(view)["tokens"][0] == evil


def test_safe_json_round_trips():
    value = {"a": '</b> <!-- \u2028 & "q"'}
    assert (
        json.loads(
            safe_json(value).replace("<\\/", "</").replace("<\\!--", "<!--")
        )
        == value
    )


@pytest.mark.parametrize(
    "shape, message",
    [
        ((2, 3, 3), r"\(h, 2, 2\)"),
        ((2, 2), r"\(h, 2, 2\)"),
    ],
)
def test_weights_of_the_wrong_shape_are_refused(shape, message):
    with pytest.raises(ValueError, match=message):
        head_explorer(["a", "b"], torch.zeros(shape), ["h", "i"])


def test_other_mistakes_are_refused():
    weights = torch.full((2, 2, 2), 0.5)
    with pytest.raises(
        ValueError,
        match="1 head names for 2 heads: pass one name per head, 2 names",
    ):
        head_explorer(["a", "b"], weights, ["h"])
    with pytest.raises(
        ValueError,
        match="query 5 is not in 0..1: pick a query token from 0 to 1",
    ):
        head_explorer(["a", "b"], weights, ["h", "i"], query=5)
    with pytest.raises(ValueError, match="html_action"):
        head_explorer(["a", "b"], weights, ["h", "i"], html_action="show")
    many = torch.full((len(HEAD_COLOURS) + 1, 2, 2), 0.5)
    with pytest.raises(ValueError, match="at most 12 heads"):
        head_explorer(["a", "b"], many, list("abcdefghijklm"))


def test_a_layer_with_more_heads_than_colours_keeps_the_chosen_head():
    many = torch.full((len(HEAD_COLOURS) + 4, 2, 2), 0.5)
    view = layer_explorer(["a", "b"], many, keep=14, html_action="return")
    names = [h["name"] for h in params(view)["heads"]]
    assert len(names) == len(HEAD_COLOURS)
    assert names[:2] == ["head 0", "head 1"] and names[-1] == "head 14"
    few = layer_explorer(["a", "b"], many[:3], html_action="return")
    assert [h["name"] for h in params(few)["heads"]] == [
        "head 0",
        "head 1",
        "head 2",
    ]


# The page's backgrounds: white in light mode; in dark mode the book
# theme's #121212 and pydata-sphinx-theme's #14181e.
BACKGROUNDS = ["#FFFFFF", "#121212", "#14181E"]


def contrast(a, b):
    """WCAG 2's contrast ratio of two colours '#rrggbb'."""

    def luminance(colour):
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        r, g, b = [
            c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
            for c in channels
        ]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    dark, light = sorted([luminance(a), luminance(b)])
    return (light + 0.05) / (dark + 0.05)


def test_contrast_is_wcag_s():
    assert contrast("#000000", "#FFFFFF") == pytest.approx(21)
    assert contrast("#767676", "#FFFFFF") == pytest.approx(4.54, abs=0.01)
    assert contrast("#F0E442", "#FFFFFF") < 1.4  # Okabe & Ito's yellow


@pytest.mark.parametrize("background", BACKGROUNDS)
def test_every_head_colour_stands_out_on_the_page(background):
    """WCAG 1.4.11: an arc or a swatch needs 3:1 against what is around
    it, in light mode and in dark mode."""
    faint = {
        colour: round(contrast(colour, background), 2)
        for colour in HEAD_COLOURS
        if contrast(colour, background) < 3
    }
    assert faint == {}, f"under 3:1 on {background}: {faint}"


def test_twelve_heads_take_six_colours_twice():
    """The second six are marked in the page (explorer.js dashes a head
    whose colour an earlier head has; tests/browser/test_browser.py)."""
    distinct = list(dict.fromkeys(HEAD_COLOURS))
    assert len(distinct) == 6 and HEAD_COLOURS == distinct * 2
    names = [f"head {h}" for h in range(12)]
    view = head_explorer(
        ["a", "b"], torch.full((12, 2, 2), 0.5), names, html_action="return"
    )
    assert [h["colour"] for h in params(view)["heads"]] == HEAD_COLOURS


@pytest.mark.parametrize("layer", [-1, 3, 1.5, True])
def test_the_panel_refuses_a_layer_the_model_does_not_have(layer):
    from transformers import BertConfig

    from mhabook.views.explorer import heads_panel

    model = SimpleNamespace(config=BertConfig(num_hidden_layers=3))
    with pytest.raises(ValueError, match=r"layers are 0 to 2.*layer=2"):
        heads_panel(None, model, "time flies", layer=layer)


def test_the_panel_opens_on_a_layer_in_range():
    from transformers import BertConfig

    from mhabook.views.explorer import heads_panel

    model = SimpleNamespace(config=BertConfig(num_hidden_layers=3))
    panel = heads_panel(None, model, "time flies", layer=2)
    assert panel.children[1].value == 2 and panel.children[1].max == 2


def test_pronoun_heads_refuses_the_sentence_as_a_string():
    sentence = " ".join(TOKENS)
    with pytest.raises(TypeError, match=r"\.split\(\)"):
        pronoun_heads(sentence, "cat", "it", ("sat", "was"))


def test_the_query_may_be_a_token_or_its_position():
    names, weights = pronoun_heads(TOKENS, "cat", "it", ("sat", "was"))
    view = head_explorer(
        TOKENS, weights, names, query="it", html_action="return"
    )
    assert params(view)["query"] == TOKENS.index("it")
    with pytest.raises(ValueError, match="'dog' is not one of the tokens"):
        head_explorer(TOKENS, weights, names, query="dog")


def test_a_verb_named_twice_is_refused():
    with pytest.raises(ValueError, match="names a verb twice"):
        pronoun_heads(TOKENS, "cat", "it", ("sat", "sat"))
