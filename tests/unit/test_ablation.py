"""mhabook.experiments.ablation, the reference Lab 3's live model is checked
against: the head mask, the value norms, the pooled similarity and the
rollout, on a tiny random BERT with planted answers."""

import pytest
import torch

from mhabook.experiments import ablation
from mhabook.layers.heads_needed import heads_removed
from tiny import tiny_bert, tiny_tokenizer


@pytest.fixture(scope="module")
def bert():
    return tiny_bert(num_hidden_layers=3, num_attention_heads=2)


def batch(texts=("time flies fruit", "arrow")):
    return tiny_tokenizer()(list(texts), padding=True, return_tensors="pt")


def test_all_heads_on_is_the_model_itself(bert):
    inputs = batch()
    with torch.no_grad():
        plain = bert(**inputs, output_attentions=True)
    attention, norms, hidden = ablation.masked_run(bert, inputs)
    assert attention.shape == (2, 3, 2, 5, 5)  # (B, L, h, T, T)
    assert norms.shape == (2, 3, 2, 5)  # (B, L, h, T)
    assert torch.equal(attention, torch.stack(plain.attentions, dim=1))
    assert torch.equal(hidden, plain.last_hidden_state)


def test_a_head_off_is_the_head_removed_and_its_weights_still_shown(bert):
    inputs = batch()
    mask = torch.ones(3, 2)
    mask[1, 0] = 0
    attention, _, hidden = ablation.masked_run(bert, inputs, mask)
    full, _, full_hidden = ablation.masked_run(bert, inputs)
    with heads_removed(bert, [(1, 0)]), torch.no_grad():
        expected = bert(**inputs).last_hidden_state
    assert torch.allclose(hidden, expected, atol=1e-6)
    assert not torch.allclose(hidden, full_hidden, atol=1e-3)
    # layers 0 and 1 see the same input: their weights are unchanged,
    # the switched-off head's included; layer 2's change
    assert torch.equal(attention[:, :2], full[:, :2])
    assert not torch.equal(attention[:, 2], full[:, 2])


def test_value_norms_are_each_heads_values_through_its_slice_of_WO(bert):
    inputs = batch(["time flies"])
    layers = bert.encoder.layer
    recorded = []
    handle = layers[0].attention.self.value.register_forward_hook(
        lambda m, a, out: recorded.append(out)
    )
    with torch.no_grad():
        bert(**inputs)
    handle.remove()
    _, norms, _ = ablation.masked_run(bert, inputs)
    v = recorded[0][0]  # (T, C), with the bias b_V
    W_O = layers[0].attention.output.dense.weight
    d_k = 4
    for k in range(2):
        cols = slice(k * d_k, (k + 1) * d_k)
        expected = (v[:, cols] @ W_O[:, cols].T).norm(dim=-1)
        assert torch.allclose(norms[0, 0, k], expected, atol=1e-6)
    # planted: with W^O the identity, the norm is the value slice's own
    eye = ablation.value_norms(v[None], torch.eye(8), 2)[0]
    assert torch.allclose(eye[1], v[:, 4:].norm(dim=-1))


def test_similarity_pools_each_sentence_alone(bert):
    tokenizer = tiny_tokenizer()
    assert ablation.similarity(bert, tokenizer, "time flies", " ") is None
    got = ablation.similarity(bert, tokenizer, "time flies", "arrow")
    with torch.no_grad():
        a = bert(**tokenizer("time flies", return_tensors="pt"))
        b = bert(**tokenizer("arrow", return_tensors="pt"))
    mean_a = a.last_hidden_state[0].mean(0)
    mean_b = b.last_hidden_state[0].mean(0)
    expected = torch.cosine_similarity(mean_a, mean_b, dim=0)
    assert got == pytest.approx(float(expected), abs=1e-6)
    off = ablation.similarity(
        bert, tokenizer, "time flies", "arrow", torch.zeros(3, 2)
    )
    assert -1 <= off <= 1 and off != pytest.approx(got, abs=1e-4)


@pytest.mark.parametrize(
    "mask, words",
    [
        (torch.ones(2, 3), "shape (3, 2)"),
        ([[1, 1], [1]], "3 lists"),
        (torch.full((3, 2), 0.5), "only 1 (keep) and 0"),
    ],
)
def test_bad_masks_name_the_shape_expected(mask, words):
    with pytest.raises(ValueError, match=r"\(3, 2\)|3 lists") as error:
        ablation.check_head_mask(mask, 3, 2)
    assert words in str(error.value)


def test_value_weighting_scales_each_key_column():
    attention = torch.full((1, 1, 3, 3), 1 / 3)
    norms = torch.tensor([[[1.0, 2.0, 0.0]]])
    scaled = ablation.value_weighted(attention, norms)
    assert torch.allclose(scaled[0, 0, 2], torch.tensor([1 / 3, 2 / 3, 0]))


def test_rollout_mixes_the_identity_and_multiplies_from_layer_0_up():
    T = 3
    identity = torch.eye(T).expand(2, 4, T, T)
    assert torch.allclose(ablation.rollout(identity), torch.eye(T))
    first = torch.zeros(T, T)
    first[:, 0] = 1  # every token reads token 0
    second = torch.zeros(T, T)
    second[:, 2] = 1  # every token reads token 2
    attention = torch.stack([first, second])[:, None]  # (L=2, h=1, T, T)
    rolled = ablation.rollout(attention)
    a0 = 0.5 * first + 0.5 * torch.eye(T)
    a1 = 0.5 * second + 0.5 * torch.eye(T)
    assert torch.allclose(rolled[0], a0)
    assert torch.allclose(rolled[1], a1 @ a0)  # not a0 @ a1
    assert not torch.allclose(a1 @ a0, a0 @ a1)
    assert torch.allclose(rolled.sum(-1), torch.ones(2, T))


def test_rollout_averages_only_the_heads_that_are_on():
    T = 3
    to_first = torch.zeros(T, T)
    to_first[:, 0] = 1  # head 0: every token reads token 0
    to_last = torch.zeros(T, T)
    to_last[:, 2] = 1  # head 1: every token reads token 2
    attention = torch.stack([to_first, to_last])[None]  # (L=1, h=2, T, T)
    eye = torch.eye(T)
    both = ablation.rollout(attention)[0]
    expected = 0.5 * (to_first + to_last) / 2 + 0.5 * eye
    assert torch.allclose(both, expected)
    first_only = ablation.rollout(attention, torch.tensor([[1.0, 0.0]]))[0]
    assert torch.allclose(first_only, 0.5 * to_first + 0.5 * eye)
    # every head off: the layer passes its tokens through
    none = ablation.rollout(attention, torch.zeros(1, 2))
    assert torch.allclose(none[0], eye)
    with pytest.raises(ValueError, match=r"shape \(1, 2\)"):
        ablation.rollout(attention, torch.ones(2, 2))


def planted_bert():
    """A tiny BERT whose heads matter, with head (1, 0) silent (its columns
    of W^O zero) and head (0, 1) a hundred times louder than the rest, as
    tests/unit/test_pruning.py plants them."""
    model = tiny_bert(num_attention_heads=2, hidden_size=8)
    d_k = 4
    with torch.no_grad():
        for layer in model.encoder.layer:
            layer.attention.self.value.weight *= 10
            layer.attention.output.dense.weight *= 10
        silent = model.encoder.layer[1].attention.output.dense
        silent.weight[:, 0:d_k] = 0.0
        loud = model.encoder.layer[0].attention
        loud.self.value.weight[d_k:] *= 10
        loud.output.dense.weight[:, d_k:] *= 10
    return model


def test_the_ranking_puts_a_silent_head_first_and_a_loud_one_last():
    sentences = ["time flies", "fruit flies", "arrow time", "flies arrow"]
    order = ablation.head_ranking(
        planted_bert(), tiny_tokenizer(), sentences, every=1
    )
    assert sorted(order) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert order[0] == (1, 0) and order[-1] == (0, 1)
    with pytest.raises(ValueError, match="more sentences"):
        ablation.head_ranking(planted_bert(), tiny_tokenizer(), [], every=8)


def test_the_mask_is_named_as_a_layer_only_when_it_is_one_whole_layer():
    mask = torch.ones(6, 12)
    assert ablation.mask_phrase(mask) == "no head off"
    mask[5] = 0
    assert ablation.mask_phrase(mask) == "layer 5 off"
    mask[5, 3] = 1  # one head of layer 5 back on
    assert ablation.mask_phrase(mask) == "11 heads off"
    mask[5] = 1
    mask[0, 2] = 0
    assert ablation.mask_phrase(mask) == "1 head off"
    mask[1] = 0  # layer 1 and one head of layer 0
    assert ablation.mask_phrase(mask) == "13 heads off"


def test_heads_removed_names_the_model_it_takes():
    from transformers import BertConfig

    from mhabook import MultiHeadAttention
    from mhabook.layers.heads_needed import heads_removed

    layer = MultiHeadAttention(
        BertConfig(hidden_size=64, num_attention_heads=4)
    )
    with pytest.raises(
        TypeError, match="not a MultiHeadAttention.*zero_heads"
    ):
        with heads_removed(layer, [(0, 0)]):
            pass
