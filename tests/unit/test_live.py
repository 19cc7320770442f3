"""The live lab's Python side: the ONNX export, its cache, the lab's HTML,
and BertViz's view of every layer. On a tiny random BERT, offline."""

import dataclasses
import json
import re

import numpy as np
import pytest
import torch

from mhabook.views import live
from mhabook.views.bertviz_view import head_view_html
from tiny import WORDS, tiny_bert

# The exporter (torch.onnx) warns about its own internals.
pytestmark = pytest.mark.filterwarnings(
    "ignore::DeprecationWarning", "ignore::FutureWarning"
)


# Tokens no text can give: brackets split [unused0], punctuation is a word
# of its own, upper case is lowered, accents are stripped, CJK stands apart.
NEVER = ["[unused0]", "##!", "Time", "é", "##中"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny BERT saved as a checkpoint folder, with its vocabulary: the
    tiny one's words, then tokens no text gives (NEVER) and two that
    text does."""
    from transformers import BertTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-bert")
    words = WORDS + NEVER + ["中", "##s"]
    tokenizer = BertTokenizerFast(
        vocab={w: i for i, w in enumerate(words)}, do_lower_case=True
    )
    tiny_bert(
        vocab_size=len(words), max_position_embeddings=32
    ).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def exported(checkpoint, tmp_path_factory):
    return live.exported(tmp_path_factory.mktemp("cache"), checkpoint)


def encode(tokenizer, a, b=None):
    inputs = tokenizer(a, b, return_tensors="pt")
    return {k: v for k, v in inputs.items()}


@pytest.mark.parametrize(
    "a, b", [("time flies", None), ("time flies fruit flies", "arrow " * 9)]
)
def test_the_export_matches_pytorch_at_any_length(exported, checkpoint, a, b):
    tokenizer, model = live.load_bert(checkpoint)
    inputs = encode(tokenizer, a, b)
    with torch.no_grad():
        outputs = model(**inputs, output_attentions=True)
    expected = torch.stack(outputs.attentions)  # (L, 1, h, T, T)
    got = live.onnx_attention(exported, inputs)
    assert got.shape == expected[:, 0].shape  # (L, h, T, T)
    assert (got - expected[:, 0]).abs().max() < live.TOLERANCE


def test_the_export_keeps_a_batch(exported, checkpoint):
    import onnxruntime

    tokenizer, model = live.load_bert(checkpoint)
    inputs = tokenizer(["time flies", "fruit"], padding=True)
    session = onnxruntime.InferenceSession(str(exported.model))
    feed = {k: np.array(v, dtype=np.int64) for k, v in inputs.items()}
    feed["head_mask"] = np.ones((2, 2), dtype=np.float32)
    attentions, norms, hidden = session.run(live.OUTPUTS, feed)
    assert attentions.shape == (2, 2, 2, 4, 4)  # (B, L, h, T, T)
    assert norms.shape == (2, 2, 2, 4)  # (B, L, h, T)
    assert hidden.shape == (2, 4, 8)  # (B, T, C)


@pytest.mark.parametrize("off", [[], [(0, 1)], [(1, 0), (1, 1)], "all"])
def test_the_export_switches_heads_off_as_the_reference(
    exported, checkpoint, off
):
    from mhabook.experiments import ablation

    tokenizer, model = live.load_bert(checkpoint)
    inputs = tokenizer(
        ["time flies fruit flies", "arrow"], padding=True, return_tensors="pt"
    )
    mask = torch.zeros(2, 2) if off == "all" else torch.ones(2, 2)
    for layer, head in off if off != "all" else []:
        mask[layer, head] = 0
    expected = ablation.masked_run(model, inputs, mask)
    got = live.onnx_outputs(exported, inputs, mask)
    attention, norms, hidden = (x.float() for x in got)
    assert (attention - expected[0]).abs().max() < live.TOLERANCE
    assert ((norms - expected[1]).abs() / expected[1]).max() < (
        live.NORM_TOLERANCE
    )
    assert (hidden - expected[2]).abs().max() < 1e-2
    if off:  # the mask changes what the model computes
        plain = ablation.masked_run(model, inputs)[2]
        assert not torch.allclose(expected[2], plain, atol=1e-5)


def test_a_bad_mask_names_the_shape_expected(exported, checkpoint):
    tokenizer, _ = live.load_bert(checkpoint)
    inputs = tokenizer("time flies", return_tensors="pt")
    with pytest.raises(ValueError, match=r"shape \(2, 2\)"):
        live.onnx_outputs(exported, inputs, torch.ones(3, 2))


def test_big_weights_are_stored_in_half_and_small_ones_not(
    exported, checkpoint, tmp_path
):
    import onnx

    proto = onnx.load(str(exported.model))
    halved = live.store_weights_in_half(proto, min_elements=64)
    types = {w.name: w.data_type for w in proto.graph.initializer}
    half = [n for n, t in types.items() if t == onnx.TensorProto.FLOAT16]
    assert len(half) == halved > 0
    assert any("word_embeddings" in n for n in half)  # 9 x 8
    assert onnx.TensorProto.FLOAT in types.values()  # biases, norms
    casts = [n for n in proto.graph.node if n.op_type == "Cast"]
    assert {n.input[0] for n in casts} >= set(half)
    onnx.checker.check_model(proto)
    onnx.save_model(proto, str(tmp_path / "half.onnx"))
    tokenizer, model = live.load_bert(checkpoint)
    inputs = encode(tokenizer, "time flies", "fruit flies")
    with torch.no_grad():
        outputs = model(**inputs, output_attentions=True)
    expected = torch.stack(outputs.attentions)[:, 0]  # (L, h, T, T)
    in_half = live.LiveModel(
        **{**vars(exported), "model": tmp_path / "half.onnx"}
    )
    distance = (live.onnx_attention(in_half, inputs) - expected).abs().max()
    assert 0 < distance < live.TOLERANCE


def test_the_export_is_cached_per_checkpoint(checkpoint, exported, tmp_path):
    again = live.exported(exported.model.parent.parent, checkpoint)
    assert again == exported
    assert exported.model.stat().st_mtime == again.model.stat().st_mtime
    assert exported.vocab.read_text().split("\n")[: len(WORDS)] == WORDS
    assert (exported.num_layers, exported.num_heads) == (2, 2)
    assert exported.max_tokens == 32
    copy = tmp_path / "changed"
    copy.mkdir()
    for file in checkpoint.iterdir():
        (copy / file.name).write_bytes(file.read_bytes())
    config = json.loads((copy / "config.json").read_text())
    config["layer_norm_eps"] = 1e-6
    (copy / "config.json").write_text(json.dumps(config))
    assert live.checkpoint_key(copy) != live.checkpoint_key(checkpoint)


def test_missing_runtime_files_name_the_fix(exported, monkeypatch, tmp_path):
    monkeypatch.setattr(live, "ORT_DIST", tmp_path)
    with pytest.raises(FileNotFoundError, match="make book"):
        live.site_files(exported)


EVIL = "</script><img src=x onerror=alert(1)>\"'&"


def test_the_lab_page_carries_no_model_and_cannot_be_broken(exported):
    from html.parser import HTMLParser

    ranking = [(1, 0), (0, 1), (1, 1), (0, 0)]
    html = live.live_lab(exported, EVIL, "fruit", ranking=ranking).data
    found = {"templates": []}

    class Lab(HTMLParser):
        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if "data-params" in attrs:
                found["params"] = json.loads(attrs["data-params"])
            if tag in ("img", "script"):
                found.setdefault(tag, []).append(attrs.get("src"))
            if tag == "template":
                found["templates"].append(attrs["data-filters"])

    Lab().feed(html)
    assert found["params"]["text_a"] == EVIL
    assert found["params"]["ranking"] == [list(p) for p in ranking]
    assert "img" not in found
    assert found["script"] == [
        f"../_static/live/{name}" for name in live.PAGE_JS
    ]
    assert found["script"][-1].endswith("/live.js")
    assert sorted(found["templates"]) == ["pair", "single"]
    assert found["params"]["download_bytes"] > exported.model.stat().st_size
    assert len(html.encode()) < 5_000


def test_bertviz_markup_is_bertviz_own_with_named_menus():
    markup = live.headview_markup()
    assert 'id="bertviz' not in markup["pair"]  # the page sets the id
    for view in markup.values():
        assert '<select id="layer" aria-label="Layer">' in view
        assert "<div id='vis'></div>" in view
    assert '<select id="filter" aria-label="Attention">' in markup["pair"]
    assert 'id="filter"' not in markup["single"]


@pytest.mark.parametrize(
    "ranking, words",
    [
        ([(0, 0)], "at least 2"),
        ([(0, 0), (2, 1)], "layers 0..1"),
        ([(0, 0), (0, 1, 1)], "(layer, head) pairs"),
    ],
)
def test_a_bad_ranking_says_what_is_expected(exported, ranking, words):
    with pytest.raises(ValueError, match="least important first") as error:
        live.live_lab(exported, "time", ranking=ranking)
    assert words in str(error.value)


def test_the_ranking_is_cached_per_checkpoint(checkpoint, tmp_path):
    tokenizer, model = live.load_bert(checkpoint)
    order = live.ranking(model, tokenizer, checkpoint, tmp_path)
    assert sorted(order) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    (cached,) = tmp_path.glob("*/ranking-*.json")
    assert cached.parent.name == live.checkpoint_key(checkpoint)
    cached.write_text("[[1, 1], [1, 0], [0, 1], [0, 0]]")  # a planted order
    again = live.ranking(model, tokenizer, checkpoint, tmp_path)
    assert again == [(1, 1), (1, 0), (0, 1), (0, 0)]  # read, not rerun


def test_the_export_without_a_head_mask_returns_attention_alone(
    checkpoint, tmp_path
):
    import onnx

    _, model = live.load_bert(checkpoint)
    live.export_onnx(model, tmp_path / "plain.onnx", head_mask=False)
    graph = onnx.load(str(tmp_path / "plain.onnx")).graph
    assert [i.name for i in graph.input] == live.INPUTS[:3]
    assert [o.name for o in graph.output] == ["attentions"]


def test_bertviz_can_carry_every_layer():
    torch.manual_seed(0)
    attention = torch.softmax(torch.randn(3, 2, 6, 6), -1)
    tokens = ["[CLS]", "time", "flies", "[SEP]", "fruit", "[SEP]"]
    html = head_view_html(
        attention, tokens, 4, layer=1, heads=[0], all_layers=True
    ).data
    found = re.search(r"mhaCutFilters\((\{.*?\}), 4\); //", html, re.DOTALL)
    data = json.loads(found.group(1).replace("<\\/", "</"))
    assert data["include_layers"] == [0, 1, 2] and data["layer"] == 1
    weights = data["attention"][0]["attn"]
    assert len(weights) == 3
    assert all(len(str(w)) <= 5 for layer in weights for w in layer[0][0])


def test_every_layer_keeps_the_sentence_filters_in_half_the_bytes():
    torch.manual_seed(0)
    attention = torch.softmax(torch.randn(3, 2, 6, 6), -1)
    tokens = ["[CLS]", "time", "flies", "[SEP]", "fruit", "[SEP]"]
    one = head_view_html(attention, tokens, 4, layer=1, heads=[0]).data
    every = head_view_html(
        attention, tokens, 4, layer=1, heads=[0], all_layers=True
    ).data
    assert one.count("<option value=") == every.count("<option value=") == 5
    assert "mhaCutFilters({" in every
    assert len(every) < 3 * len(one)


def test_the_tokens_no_text_gives_are_found(checkpoint):
    tokenizer, _ = live.load_bert(checkpoint)
    vocab = tokenizer.get_vocab()
    kept = live.emitted_ids(tokenizer)
    assert sorted(vocab[t] for t in NEVER) == sorted(
        set(vocab.values()) - set(kept)
    )
    texts = ["Time flies, fruit flies!", "[UNK] arrow 中s é TIME", "[MASK]"]
    for text in texts:  # what the tokenizer gives is always kept
        assert set(tokenizer(text)["input_ids"]) <= set(kept), text


def test_the_export_leaves_out_rows_no_text_reaches(exported, checkpoint):
    import onnx
    from onnx import numpy_helper

    tokenizer, model = live.load_bert(checkpoint)
    trimmed = exported
    graph = onnx.load(str(trimmed.model)).graph
    weights = {w.name: numpy_helper.to_array(w) for w in graph.initializer}
    table = weights["model.embeddings.word_embeddings.weight"]
    assert len(table) == tokenizer.vocab_size - len(NEVER)
    assert not any(node.metadata_props for node in graph.node)
    # same outputs as PyTorch on any text; an id never given reads [UNK]
    inputs = tokenizer("中s time flies", "arrow", return_tensors="pt")
    expected = ablation_run(model, inputs)
    got = live.onnx_outputs(trimmed, inputs)
    assert (got[0] - expected[0]).abs().max() < live.TOLERANCE
    assert (got[2] - expected[2]).abs().max() < live.HIDDEN_TOLERANCE
    ids = inputs["input_ids"].clone()
    unknown = ids.clone()
    ids[0, 1] = tokenizer.convert_tokens_to_ids("[unused0]")
    unknown[0, 1] = tokenizer.unk_token_id
    never = live.onnx_outputs(trimmed, {**inputs, "input_ids": ids})
    unk = live.onnx_outputs(trimmed, {**inputs, "input_ids": unknown})
    assert torch.equal(never[2], unk[2])


def ablation_run(model, inputs):
    from mhabook.experiments import ablation

    return ablation.masked_run(model, inputs)


def test_the_lab_opens_where_the_pronoun_links_most_and_checks_onnx(
    exported, checkpoint, tmp_path
):
    a, b = "time flies fruit flies", "arrow flies"
    opening = live.lab_opening(
        exported, a, b, "fruit", "time", path=checkpoint, cache=tmp_path
    )
    tokenizer, model = live.load_bert(checkpoint)
    with torch.no_grad():
        attention = model(**encode(tokenizer, a, b), output_attentions=True)
    links = torch.stack(attention.attentions)[:, 0, :, 3, 1]  # (L, h)
    assert opening.layer == int(links.max(-1).values.argmax())
    assert opening.off == f"layer {opening.layer} off"
    assert opening.head_mask[opening.layer].sum() == 0
    assert opening.distance < live.TOLERANCE
    # the switch is checked where it acts: the last layer's heads off
    # change no attention weight, but they move the last hidden states
    assert opening.mask_distance < live.HIDDEN_TOLERANCE
    assert opening.mask_moves > 10 * opening.mask_distance
    numbers = opening.numbers(exported)
    assert numbers["live_tokens"] == len(opening.tokens) == 9
    assert numbers["live_pronoun"] == "fruit"
    one_head = torch.ones(2, 2)
    one_head[1, 0] = 0
    again = live.lab_opening(
        exported, a, b, "fruit", "time", one_head, checkpoint, tmp_path
    )
    assert again.off == "1 head off" and again.similarity_off is not None
    with pytest.raises(ValueError, match="referent"):
        live.lab_opening(exported, a, b, "fruit", "banana", path=checkpoint)
    # the ONNX file of one model against another checkpoint: named
    other = dataclasses.replace(exported, num_layers=3)
    with pytest.raises(ValueError, match="pass lab_opening the path= you"):
        live.lab_opening(other, a, b, "fruit", "time", path=checkpoint)
