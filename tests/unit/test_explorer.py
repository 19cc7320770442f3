"""The head explorer's Python side: validation, ids and safe embedding.
(tests/browser/test_browser.py drives the view itself in Chromium.)"""

import json
import re

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
    with pytest.raises(ValueError, match="1 head names for 2 heads"):
        head_explorer(["a", "b"], weights, ["h"])
    with pytest.raises(ValueError, match="query 5 is not in 0..1"):
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
