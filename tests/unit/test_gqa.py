"""Grouped-query attention: equal to multi-head attention when g = h, to
PyTorch's fused kernel and to Llama's attention for every g, and decoded
token by token with a KV cache to the same numbers as the full forward."""

from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaAttention

from mhabook.experiments.embedding import sentence_embeddings
from mhabook.experiments.grouped_bert import (
    attention_shift,
    check_like_package,
    conversion,
    even_spread,
    grouped_attention_maps,
    with_grouped_kv,
)
from mhabook.experiments.sharing import (
    grouped_from_batched,
    grouped_from_llama,
)
from mhabook.layers.all_heads import (
    AttentionConfig,
    BatchedMultiHeadAttention,
    batched_from_bert,
    causal_mask,
    padding_mask,
)
from mhabook.layers.sharing_kv import (
    GroupedAttentionConfig,
    GroupedQueryAttention,
    KVCache,
    group_size_for,
    grouped_from_bert,
)
from tiny import tiny_bert, tiny_tokenizer

PAIRS = [(8, 8), (8, 4), (8, 2), (8, 1), (12, 3), (6, 2)]
TIGHT = dict(rtol=1e-5, atol=1e-5)
D_K = 8


def grouped(h, g, bias=True, seed=0):
    torch.manual_seed(seed)
    config = GroupedAttentionConfig(D_K * h, h, g, attention_bias=bias)
    return GroupedQueryAttention(config)


def fused(layer, x, is_causal):
    """The same projections, step 2 by F.scaled_dot_product_attention."""
    B, T, C = x.shape
    h, g, d_k = layer.num_heads, layer.num_kv_heads, layer.head_dim
    Q = layer.q(x).view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k)
    K, V = layer.kv(x).view(B, T, 2, g, d_k).permute(2, 0, 3, 1, 4)
    context = F.scaled_dot_product_attention(
        Q, K, V, is_causal=is_causal, enable_gqa=True
    )  # (B, h, T, d_k)
    return layer.output_linear(context.transpose(1, 2).reshape(B, T, C))


def run_llama(llama, x, is_causal):
    """LlamaAttention with rotary embeddings neutralised (cos 1, sin 0)."""
    B, T, _ = x.shape
    cos, sin = (
        torch.ones(B, T, llama.head_dim),
        torch.zeros(B, T, llama.head_dim),
    )
    mask = None
    if is_causal:
        mask = torch.zeros(T, T).masked_fill(~causal_mask(T), float("-inf"))
        mask = mask.expand(B, 1, T, T)
    return llama(x, position_embeddings=(cos, sin), attention_mask=mask)


# Construction


@pytest.mark.parametrize("g", [5, 0, -2, 24])
def test_a_group_count_that_does_not_divide_names_the_ones_that_do(g):
    with pytest.raises(ValueError, match=r"Use one of \[1, 2, 3, 4, 6, 12\]"):
        GroupedQueryAttention(GroupedAttentionConfig(768, 12, g))


def test_h_8_and_g_3_is_refused_with_what_to_change():
    with pytest.raises(
        ValueError, match=r"g = num_key_value_heads must divide"
    ):
        group_size_for(8, 3)
    with pytest.raises(ValueError, match=r"use int\(\.\.\.\)"):
        group_size_for(8, 2.0)
    with pytest.raises(ValueError, match=r"Use one of \[1, 2, 4, 8\]"):
        group_size_for(8, -2)  # a negative g, refused before any arange


def test_group_size_is_h_over_g():
    assert [group_size_for(12, g) for g in (12, 6, 4, 3, 2, 1)] == [
        1,
        2,
        3,
        4,
        6,
        12,
    ]


@pytest.mark.parametrize("h, g", PAIRS)
def test_parameters_shrink_with_the_key_value_heads(h, g):
    layer = grouped(h, g)
    C = D_K * h
    expected = 2 * (C * C + C) + 2 * g * D_K * (C + 1)
    assert sum(p.numel() for p in layer.parameters()) == expected


# Proofs


@pytest.mark.parametrize("h", [1, 4, 12])
@pytest.mark.parametrize("mask", [None, "causal", "padding"])
def test_g_equal_h_is_the_batched_layer(h, mask):
    torch.manual_seed(h)
    batched = BatchedMultiHeadAttention(AttentionConfig(D_K * h, h))
    layer = grouped_from_batched(batched)
    x = torch.randn(2, 6, D_K * h)
    mask = {
        None: None,
        "causal": causal_mask(6),
        "padding": padding_mask([6, 3], 6),
    }[mask]
    (out, weights), (ref, ref_weights) = layer(x, mask), batched(x, mask)
    torch.testing.assert_close(out, ref, **TIGHT)
    torch.testing.assert_close(weights, ref_weights, **TIGHT)


@pytest.mark.parametrize("h, g", PAIRS)
@pytest.mark.parametrize("is_causal", [False, True])
def test_equals_fused_attention_with_enable_gqa(h, g, is_causal):
    layer = grouped(h, g)
    x = torch.randn(2, 7, D_K * h)
    mask = causal_mask(7) if is_causal else None
    out, weights = layer(x, mask)
    assert weights.shape == (2, h, 7, 7)
    torch.testing.assert_close(out, fused(layer, x, is_causal), **TIGHT)


@pytest.mark.parametrize("h, g", PAIRS)
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_equals_llama_attention(h, g, is_causal, bias):
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=D_K * h,
        num_attention_heads=h,
        num_key_value_heads=g,
        attention_bias=bias,
        attn_implementation="eager",
    )
    llama = LlamaAttention(config, layer_idx=0).eval()
    layer = grouped_from_llama(llama)
    x = torch.randn(2, 7, D_K * h)
    with torch.no_grad():
        ref, ref_weights = run_llama(llama, x, is_causal)
        out, weights = layer(x, causal_mask(7) if is_causal else None)
    torch.testing.assert_close(out, ref, **TIGHT)
    torch.testing.assert_close(weights, ref_weights, **TIGHT)


def test_sharing_is_real_each_group_sees_one_key_head():
    layer = grouped(8, 2)
    x = torch.randn(1, 5, 64)
    with torch.no_grad():  # every query head a copy of head 0
        layer.q.weight.view(8, D_K, 64)[:] = layer.q.weight[:D_K]
        layer.q.bias.view(8, D_K)[:] = layer.q.bias[:D_K]
    weights = layer(x)[1][0]  # (h, T, T)
    for group in weights.split(4):  # heads 0-3 share key head 0, 4-7 head 1
        assert all(torch.allclose(group[0], head) for head in group)
    assert not torch.allclose(weights[0], weights[4])


def test_from_llama_checks_what_it_copies():
    config = LlamaConfig(
        hidden_size=32, num_attention_heads=4, num_key_value_heads=2
    )
    llama = LlamaAttention(config, layer_idx=0)
    llama.extra = torch.nn.Linear(2, 2)
    with pytest.raises(ValueError, match="not a LlamaAttention block"):
        grouped_from_llama(llama)
    odd = LlamaConfig(
        hidden_size=32,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
    )
    with pytest.raises(ValueError, match="head_dim 16"):
        grouped_from_llama(LlamaAttention(odd, layer_idx=0))


# KV cache


@pytest.mark.parametrize("h, g", [(8, 8), (8, 2), (8, 1), (6, 3)])
@pytest.mark.parametrize("prompt", [0, 1, 4])
def test_decoding_with_a_cache_equals_the_causal_forward(h, g, prompt):
    layer = grouped(h, g)
    x = torch.randn(2, 9, D_K * h)
    full, full_weights = layer(x, causal_mask(9))
    cache = KVCache(2, g, 9, D_K)
    outputs = []
    if prompt:  # the prompt in one call, under a causal mask
        outputs.append(layer(x[:, :prompt], causal_mask(prompt), cache)[0])
    for t in range(prompt, 9):
        out, weights = layer(x[:, t : t + 1], cache=cache)
        assert weights.shape == (2, h, 1, t + 1)
        torch.testing.assert_close(
            weights[..., 0, :], full_weights[..., t, : t + 1], **TIGHT
        )
        outputs.append(out)
    torch.testing.assert_close(torch.cat(outputs, dim=1), full, **TIGHT)
    assert cache.length == 9


def test_a_chunk_under_a_causal_mask_sees_the_whole_cache():
    layer = grouped(4, 2)
    x = torch.randn(1, 8, 32)
    cache = KVCache(1, 2, 8, D_K)
    layer(x[:, :5], causal_mask(5), cache)
    chunk = layer(x[:, 5:], causal_mask(3), cache)[0]
    torch.testing.assert_close(
        chunk, layer(x, causal_mask(8))[0][:, 5:], **TIGHT
    )


def test_the_cache_holds_2_g_dk_values_per_token():
    cache = KVCache(batch=3, num_kv_heads=2, max_tokens=10, head_dim=16)
    assert cache.keys.nbytes + cache.values.nbytes == 2 * 3 * 2 * 16 * 10 * 4


def test_a_full_cache_says_how_much_room_is_needed():
    layer = grouped(4, 2)
    cache = KVCache(1, 2, 3, D_K)
    layer(torch.randn(1, 3, 32), cache=cache)
    with pytest.raises(ValueError, match="here at least 4"):
        layer(torch.randn(1, 1, 32), cache=cache)


def test_a_cache_of_the_wrong_shape_is_refused_not_broadcast():
    layer = grouped(4, 2)
    cache = KVCache(2, 2, 5, D_K)
    with pytest.raises(ValueError, match=r"\(B, g, max_tokens, d_k\)"):
        layer(torch.randn(1, 1, 32), cache=cache)  # batch 1 into 2
    with pytest.raises(
        ValueError, match=r"keys \(2, 4, 1, 8\).*\(2, 2, 5, 8\)"
    ):
        grouped(4, 4)(torch.randn(2, 1, 32), cache=cache)  # 4 heads, not 2
    with pytest.raises(
        ValueError, match=r"make it KVCache\(2, 4, max_tokens, 8\)"
    ):
        grouped(4, 4)(torch.randn(2, 1, 32), cache=cache)


def test_check_fits_refuses_values_unlike_keys_and_passes_what_fits():
    from mhabook import deeper_checks
    from mhabook.layers import sharing_kv

    assert sharing_kv.check_fits is deeper_checks.check_fits  # one source
    assert sharing_kv.GroupedAttentionConfig is (
        deeper_checks.GroupedAttentionConfig
    )
    K, cache = torch.zeros(1, 2, 3, D_K), torch.zeros(1, 2, 5, D_K)
    deeper_checks.check_fits(cache, 2, K, K)  # 2 + 3 fit in 5
    with pytest.raises(ValueError, match="here at least 6"):
        deeper_checks.check_fits(cache, 3, K, K)
    with pytest.raises(ValueError, match="append one value per key"):
        deeper_checks.check_fits(cache, 0, K, K[:, :, :2])
    with pytest.raises(TypeError, match=r"KVCache\(..., dtype=torch.float64"):
        deeper_checks.check_fits(cache, 0, K.double(), K.double())


def test_a_cache_in_the_layers_dtype_decodes_in_it():
    layer = grouped(4, 2).double()
    x = torch.randn(1, 3, 32, dtype=torch.float64)
    cache = KVCache(1, 2, 3, D_K, dtype=torch.float64)
    assert layer(x, cache=cache)[0].dtype == torch.float64


def test_an_input_that_is_not_batch_tokens_width_names_the_fix():
    layer = grouped(4, 2)
    with pytest.raises(
        ValueError, match=r"hidden_state\[None\] for a batch of one"
    ):
        layer(torch.randn(3, 32))
    with pytest.raises(ValueError, match=r"hidden_state\.float\(\)"):
        layer(torch.randn(1, 3, 32, dtype=torch.float64))
    assert layer(torch.randn(3, 32)[None])[0].shape == (1, 3, 32)


# Mean-pooling a real model's heads (here a tiny random BERT)


def test_grouped_from_bert_at_g_equal_h_is_the_batched_copy():
    model = tiny_bert(
        hidden_size=16, num_attention_heads=4, intermediate_size=32
    )
    block = model.encoder.layer[0].attention
    x = torch.randn(2, 5, 16)
    ours = grouped_from_bert(block, 4)(x, padding_mask([5, 2], 5))
    ref = batched_from_bert(block)(x, padding_mask([5, 2], 5))
    torch.testing.assert_close(ours, ref, **TIGHT)


def test_pooled_key_and_value_heads_are_the_means_of_their_groups():
    model = tiny_bert(
        hidden_size=24, num_attention_heads=6, intermediate_size=32
    )
    attn = model.encoder.layer[0].attention.self
    layer = grouped_from_bert(model.encoder.layer[0].attention, 2)
    d_k = 4
    keys = attn.key.weight.view(6, d_k, 24)  # (h, d_k, C)
    values = attn.value.bias.view(6, d_k)  # (h, d_k)
    kv_weight = layer.kv.weight.view(2, 2, d_k, 24)  # (k/v, g, d_k, C)
    kv_bias = layer.kv.bias.view(2, 2, d_k)
    torch.testing.assert_close(kv_weight[0, 1], keys[3:].mean(0))
    torch.testing.assert_close(kv_bias[1, 0], values[:3].mean(0))
    torch.testing.assert_close(layer.q.weight, attn.query.weight)


def test_a_grouped_model_at_g_equal_h_is_the_model():
    tokenizer, model = tiny_tokenizer(), tiny_bert(num_attention_heads=4)
    sentences = ["time flies", "fruit flies like an arrow", "arrow"]
    same = with_grouped_kv(model, 4)
    torch.testing.assert_close(
        sentence_embeddings(same, tokenizer, sentences),
        sentence_embeddings(model, tokenizer, sentences),
        **TIGHT,
    )
    inputs = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = torch.stack(model(**inputs, output_attentions=True).attentions)
    maps = grouped_attention_maps(same, inputs)
    torch.testing.assert_close(maps, ref, **TIGHT)
    shift = attention_shift(ref, maps, inputs["attention_mask"])
    assert shift.shape == (2,) and shift.abs().max() < 1e-5


def test_fewer_key_value_heads_move_a_model():
    tokenizer = tiny_tokenizer()  # large weights: peaked attention
    model = tiny_bert(num_attention_heads=4, initializer_range=1.0)
    inputs = tokenizer(["time flies like an arrow"], return_tensors="pt")
    with torch.no_grad():
        ref = torch.stack(model(**inputs, output_attentions=True).attentions)
    maps = grouped_attention_maps(with_grouped_kv(model, 1), inputs)
    shift = attention_shift(ref, maps, inputs["attention_mask"])
    assert (shift > 0.05).all() and (shift <= 1).all()
    assert model.encoder.layer[0].attention.self.key.weight.shape == (8, 8)


def test_attention_shift_leaves_padding_rows_out():
    ref = torch.full((1, 1, 1, 3, 3), 1 / 3)
    changed = ref.clone()
    changed[..., 2, :] = torch.tensor([1.0, 0.0, 0.0])  # a padding row
    mask = torch.tensor([[1, 1, 0]])
    assert attention_shift(ref, changed, mask).item() == 0
    mask = torch.tensor([[1, 1, 1]])
    expected = 0.5 * (2 / 3 + 1 / 3 + 1 / 3) / 3
    assert attention_shift(ref, changed, mask).item() == pytest.approx(
        expected
    )


def test_the_cache_widens_a_mask_to_the_cached_tokens():
    cache = KVCache(1, 2, 6, D_K)
    K = torch.randn(1, 2, 4, D_K)
    assert cache.append(K, K)[2] is None
    mask = causal_mask(2).expand(1, 2, 2).unsqueeze(1)  # (B, 1, T, T)
    keys, values, widened = cache.append(K[:, :, :2], K[:, :, :2], mask)
    assert keys.shape == values.shape == (1, 2, 6, D_K)
    assert widened.shape == (1, 1, 2, 6)
    assert widened[..., :4].all()  # every cached token is in the past
    assert torch.equal(widened[..., 4:], mask)


def test_even_spread_rows_cover_the_real_tokens_only():
    maps = torch.rand(2, 2, 3, 4, 4)  # (L, B, h, T, T)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    even = even_spread(maps, mask)
    assert even.shape == maps.shape
    torch.testing.assert_close(even.sum(-1), torch.ones(2, 2, 3, 4))
    assert (even[:, 1, ..., 2:] == 0).all()
    assert (even[:, 1, ..., :2] == 0.5).all()


SENTENCES = [  # ten: the fewest a conversion measures
    "time flies",
    "fruit flies like an arrow",
    "arrow",
    "time",
    "fruit",
    "flies",
    "time fruit",
    "arrow flies",
    "fruit arrow",
    "flies time",
]


def test_a_conversion_of_identical_heads_is_exact():
    """Planted: every head of a layer has the same key and value rows, so
    averaging any group changes nothing, whatever g."""
    model = tiny_bert(num_attention_heads=4, initializer_range=1.0)
    with torch.no_grad():
        for block in model.encoder.layer:
            for part in (block.attention.self.key, block.attention.self.value):
                part.weight.view(4, 2, 8)[:] = part.weight.view(4, 2, 8)[0]
                part.bias.view(4, 2)[:] = part.bias.view(4, 2)[0]
    found = conversion(model, tiny_tokenizer(), SENTENCES, probe_size=2)
    assert found.kv_counts == [2, 1] and found.n_sentences == 10
    for g in found.kv_counts:
        assert found.fidelity(g) == pytest.approx(1, abs=1e-6)
        assert found.share_lost(g) == pytest.approx(0, abs=1e-4)
        assert found.shift[g].abs().max() < 1e-5
    assert found.fidelity_none < 0.999  # the yardstick moved
    assert max(found.fidelity_drops()) < 1e-6  # nothing falls


def test_a_conversion_refuses_too_few_sentences_for_two_halves():
    with pytest.raises(ValueError, match="at least 10"):
        conversion(tiny_bert(), tiny_tokenizer(), SENTENCES[:1])


def test_a_conversion_measures_what_sharing_moves():
    model = tiny_bert(num_attention_heads=4, initializer_range=1.0)
    found = conversion(model, tiny_tokenizer(), SENTENCES, probe_size=2)
    assert found.fidelity(4) == 1.0 and found.fidelity(1) < 0.999
    ks = [4, 2, 1]
    drops = found.fidelity_drops()  # (step, half) in order
    expected = [
        found.fidelity_half(a, s) - found.fidelity_half(b, s)
        for a, b in zip(ks, ks[1:])
        for s in (0, 1)
    ]
    assert drops == expected and len(drops) == 4
    low, high, kept = found.vs_none(1)
    assert low <= high
    lost = 1 - found.fidelity(1)
    assert kept == pytest.approx(1 - lost / (1 - found.fidelity_none))
    assert found.to_even.shape == found.shift[1].shape == (2,)
    assert len(found.shift_growth()) == 2
    assert torch.equal(found.cosines_at(1), found.cosines[1])
    assert found.cosines_at(4).eq(1).all()  # g = h: nothing averaged
    with pytest.raises(ValueError, match="g = 3 was not measured.*\\[1, 2\\]"):
        found.cosines_at(3)
    with pytest.raises(ValueError, match="g = 3 was not measured"):
        found.fidelity(3)  # a reader's g, from another cell


def test_a_page_s_grouped_from_bert_must_build_the_package_s_weights():
    model = tiny_bert(num_attention_heads=4)
    check_like_package(grouped_from_bert, model)  # the same function

    def first_heads(bert_attention, num_kv_heads):  # a reader's change
        layer = grouped_from_bert(bert_attention, num_kv_heads)
        with torch.no_grad():
            layer.kv.weight.mul_(2)
        return layer

    with pytest.raises(ValueError, match="make=grouped_from_bert"):
        check_like_package(first_heads, model)

    def broken(bert_attention, num_kv_heads):  # a shape slip inside
        raise RuntimeError("shape '[8, 16]' is invalid for input of size 4")

    with pytest.raises(ValueError, match=r"broken stopped .* check how"):
        check_like_package(broken, model)


def test_decoding_unlike_the_full_pass_says_what_to_fix():
    from mhabook.deeper_checks import check_decoded

    cache = SimpleNamespace(length=12)  # what check_decoded reads of it
    full = torch.rand(2, 12, 8)
    check_decoded(full + 1e-7, full, cache)  # rounding passes
    with pytest.raises(ValueError, match="12 of the 12 tokens"):
        check_decoded(full + 0.1, full, cache)
    with pytest.raises(ValueError, match="advance its length"):
        check_decoded(full[:, :11], full, cache)  # a step lost
