"""Our wrapper around BertViz: light, and safe for any token text."""

import json
import re

import pytest
import torch

from mhabook.views.bertviz_view import escape_script, head_view_html

TOKENS = ["[CLS]", "time", "flies", "[SEP]", "fruit", "[SEP]"]
EVIL = "</script><img src=x onerror=alert(1)>\"&'"


def attention(layers=3, heads=2, tokens=6):
    torch.manual_seed(0)
    return torch.softmax(torch.randn(layers, heads, tokens, tokens), -1)


def params(html):
    """The JSON BertViz embeds in its script, decoded as JS would."""
    found = re.search(r"const params = (\{.*?\}); //", html, re.DOTALL)
    return json.loads(found.group(1).replace("<\\/", "</"))


def test_only_the_shown_layer_is_serialised_and_rounded():
    html = head_view_html(attention(), TOKENS, 4, layer=1, heads=[0]).data
    data = params(html)
    assert data["include_layers"] == [1] and data["layer"] == 1
    weights = data["attention"][0]["attn"]
    assert len(weights) == 1
    assert all(len(str(w)) <= 5 for w in weights[0][0][0])


def test_a_token_cannot_close_the_script():
    tokens = list(TOKENS)
    tokens[1] = EVIL
    html = head_view_html(attention(), tokens, 4, layer=0, heads=[0]).data
    assert html.count("</script>") == 2  # require.js tag and our script
    script = html.split('<script type="text/javascript">')[1]
    assert "</" not in script[: script.rindex("</script>")]
    assert params(html)["attention"][0]["left_text"][1] == EVIL


def test_escape_script():
    assert escape_script("a</b<!--c") == "a<\\/b<\\!--c"


def test_no_attention_is_a_clear_error():
    with pytest.raises(ValueError, match="attn_implementation='eager'"):
        head_view_html(torch.zeros(0), TOKENS, 4, layer=0, heads=[0])


def test_a_layer_out_of_range_is_refused():
    with pytest.raises(
        ValueError, match="layer 3 is not in 0..2: use a layer from 0 to 2"
    ):
        head_view_html(attention(), TOKENS, 4, layer=3, heads=[0])


def test_tokens_that_do_not_fit_the_weights_name_the_fix():
    with pytest.raises(ValueError, match="pass one token per position"):
        head_view_html(attention(), TOKENS[:-1], 4, layer=0, heads=[0])


def test_a_head_out_of_range_is_refused():
    with pytest.raises(ValueError, match=r"heads \[2\] do not exist"):
        head_view_html(attention(), TOKENS, 4, layer=0, heads=[2])
    with pytest.raises(ValueError, match=r"heads=\[\] would show no head"):
        head_view_html(attention(), TOKENS, 4, layer=0, heads=[])


def test_presets_are_buttons_with_escaped_labels():
    presets = [("<b>[SEP]</b>", 2, 1), ("previous word", 0, 0)]
    html = head_view_html(
        attention(),
        TOKENS,
        4,
        layer=0,
        heads=[0],
        all_layers=True,
        presets=presets,
    ).data
    buttons = re.findall(
        r'<button[^>]*data-layer="(\d)" data-head="(\d)"', html
    )
    assert buttons == [("2", "1"), ("0", "0")]
    view = head_view_html(attention(), TOKENS, 4, layer=1, heads=None)
    assert (view.layer, view.heads) == (1, None)  # what the text reads
    assert "&lt;b&gt;[SEP]&lt;/b&gt;" in html and "<b>[SEP]" not in html
    root = re.search(r'id="(bertviz-[0-9a-f]+)"', html).group(1)
    assert f'getElementById("{root}")' in html


def test_jobs_as_presets_are_labelled_by_name_and_open_every_layer():
    from mhabook.experiments.jobs import Job

    job = Job("next word", 1, 0, 0.9, 0.8, 1.0, 0.1, 0.1, 10)
    below = Job("[SEP]", 1, 1, 0.3, 0.2, 0.4, 0.1, 0.1, 10)  # under its bar
    html = head_view_html(
        attention(), TOKENS, 4, layer=0, heads=[0], presets=[job, below]
    ).data
    assert ">next word: layer 1, head 0</button>" in html
    assert ">[SEP] (not clearly done): layer 1, head 1</button>" in html
    one_layer = head_view_html(attention(), TOKENS, 4, layer=0, heads=[0])
    assert len(html) > len(one_layer.data)  # the other layers' weights


def test_a_preset_out_of_range_is_refused():
    with pytest.raises(ValueError, match="layer 0, head 5"):
        head_view_html(
            attention(),
            TOKENS,
            4,
            layer=0,
            heads=[0],
            all_layers=True,
            presets=[("x", 0, 5)],
        )


def test_the_view_takes_the_explorers_colours_and_keys():
    """d3's ten colours would repeat at head 10 and differ from the
    explorer's: the view gets our palette, and the script that makes its
    squares and tokens keyboard buttons, numbers the squares and dashes
    the heads whose colour repeats."""
    from mhabook.views.explorer import HEAD_COLOURS

    html = head_view_html(attention(), TOKENS, 4, layer=0, heads=[0]).data
    assert "schemeCategory10" not in html
    assert json.dumps(HEAD_COLOURS) in html
    root = re.search(r'id="(bertviz-[0-9a-f]+)"', html).group(1)
    assert f'mhaBertvizAccess(document.getElementById("{root}")' in html
    # all of it inside BertViz's own script, which nothing can close
    script = html.split('<script type="text/javascript">')[1]
    assert "mhaBertvizAccess" in script[: script.rindex("</script>")]


def test_a_changed_bertviz_is_a_clear_error():
    from mhabook.views.bertviz_view import use_our_colours

    with pytest.raises(ValueError, match="BERTVIZ_COLOURS"):
        use_our_colours("headColors = d3.scaleOrdinal(d3.schemeTableau10);")
