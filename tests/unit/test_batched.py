"""Section 3's batched layer: equal to the loop, to PyTorch and to BERT,
with masks, across configurations from 768/12 down to one head; and the
whole layer of its last section, with its mask and its dropout."""

import pytest
import torch
import torch.nn.functional as F
from transformers import BertConfig

from mhabook import MultiHeadAttention
from mhabook.layers.all_heads import (
    AttentionConfig,
    AttentionLayer,
    BatchedMultiHeadAttention,
    batched_attention,
    batched_from_bert,
    batched_from_loop,
    causal_mask,
    copy_checked,
    loop_from_batched,
    padding_mask,
    torch_from_batched,
    zero_empty_queries,
)
from tiny import tiny_bert

CONFIGS = [(768, 12), (512, 8), (128, 4), (8, 2), (16, 1)]
TIGHT = dict(rtol=1e-5, atol=1e-6)


@pytest.fixture(params=CONFIGS, ids=lambda c: f"{c[0]}/{c[1]}")
def layers(request):
    torch.manual_seed(0)
    loop = MultiHeadAttention(AttentionConfig(*request.param))
    return loop, batched_from_loop(loop)


def inputs(layer, batch=2, tokens=7):
    return torch.randn(batch, tokens, layer.output_linear.in_features)


def test_batched_equals_the_loop(layers):
    loop, batched = layers
    x = inputs(batched)
    (out, weights), (loop_out, loop_weights) = batched(x), loop(x)
    torch.testing.assert_close(out, loop_out, **TIGHT)
    torch.testing.assert_close(weights, loop_weights, **TIGHT)


def test_batched_equals_the_loop_under_a_mask(layers):
    loop, batched = layers
    x, mask = inputs(batched), causal_mask(7)
    torch.testing.assert_close(batched(x, mask)[1], loop(x, mask)[1], **TIGHT)
    torch.testing.assert_close(batched(x, mask)[0], loop(x, mask)[0], **TIGHT)


def test_batched_equals_torch_multihead_attention(layers):
    _, batched = layers
    x = inputs(batched)
    reference = torch_from_batched(batched)
    ref_out, ref_weights = reference(
        x, x, x, need_weights=True, average_attn_weights=False
    )
    out, weights = batched(x)
    torch.testing.assert_close(out, ref_out, **TIGHT)
    torch.testing.assert_close(weights, ref_weights, **TIGHT)


@pytest.mark.parametrize("mask", [None, "causal", "padding"])
def test_fused_path_equals_explicit_path(layers, mask):
    _, batched = layers
    x = inputs(batched)
    mask = {
        None: None,
        "causal": causal_mask(7),
        "padding": padding_mask([7, 4], 7),
    }[mask]
    fused, none = batched(x, mask, need_weights=False)
    assert none is None
    torch.testing.assert_close(fused, batched(x, mask)[0], **TIGHT)


def test_loop_from_batched_round_trips(layers):
    loop, batched = layers
    x = inputs(batched)
    torch.testing.assert_close(loop_from_batched(batched)(x)[0], loop(x)[0])


# The six properties of a correct layer (section 3 states them).


def test_output_has_the_input_shape(layers):
    _, batched = layers
    x = inputs(batched)
    assert batched(x)[0].shape == x.shape


def test_weights_are_one_map_per_head(layers):
    _, batched = layers
    assert batched(inputs(batched))[1].shape == (2, batched.num_heads, 7, 7)


def test_rows_sum_to_one(layers):
    _, batched = layers
    weights = batched(inputs(batched), causal_mask(7))[1]
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))


def test_future_gets_zero_weight_under_a_causal_mask(layers):
    _, batched = layers
    weights = batched(inputs(batched), causal_mask(7))[1]
    assert torch.all(weights[..., ~causal_mask(7)] == 0)


@pytest.mark.parametrize("part", [0, 1])  # its query rows, its key rows
def test_changing_one_head_changes_no_other_heads_map(layers, part):
    loop, batched = layers
    x = inputs(batched)
    weights = batched(x)[1]
    changed = batched_from_loop(loop)
    C, d_k = batched.output_linear.in_features, batched.head_dim
    head = batched.num_heads - 1  # the last head
    rows = slice(part * C + head * d_k, part * C + (head + 1) * d_k)
    with torch.no_grad():
        changed.qkv.weight[rows] *= 2
    changed_weights = changed(x)[1]
    assert not torch.allclose(changed_weights[:, head], weights[:, head])
    others = [i for i in range(batched.num_heads) if i != head]
    torch.testing.assert_close(
        changed_weights[:, others], weights[:, others], **TIGHT
    )


def test_gradients_reach_every_head_and_the_output(layers):
    _, batched = layers
    batched(inputs(batched))[0].square().sum().backward()
    h, d_k = batched.num_heads, batched.head_dim
    per_head = batched.qkv.weight.grad.view(3, h, d_k, -1)
    assert (per_head.abs().sum(dim=(2, 3)) > 0).all()
    assert batched.output_linear.weight.grad.abs().sum() > 0


# Masks


def test_padding_is_never_attended_and_changes_nothing():
    torch.manual_seed(0)
    batched = BatchedMultiHeadAttention(AttentionConfig(16, 4))
    x = torch.randn(2, 6, 16)
    out, weights = batched(x, padding_mask([6, 2], 6))
    assert torch.all(weights[1, ..., 2:] == 0)
    alone = batched(x[1:, :2])[0]
    torch.testing.assert_close(out[1, :2], alone[0], **TIGHT)


@pytest.mark.parametrize("need_weights", [True, False])
def test_a_query_with_nothing_to_attend_to_gives_zeros(need_weights):
    batched = BatchedMultiHeadAttention(AttentionConfig(8, 2))
    out, weights = batched(
        torch.randn(2, 3, 8), padding_mask([3, 0], 3), need_weights
    )
    assert not out.isnan().any()
    torch.testing.assert_close(
        out[1], batched.output_linear.bias.expand(3, -1)
    )
    if need_weights:
        assert torch.all(weights[1] == 0)


def test_zero_empty_queries_zeroes_only_queries_with_nothing_to_see():
    x = torch.ones(2, 1, 3, 4)
    assert zero_empty_queries(x, None) is x
    mask = padding_mask([3, 0], 3).unsqueeze(1)  # (B, 1, T, T)
    out = zero_empty_queries(x, mask)
    assert torch.all(out[0] == 1) and torch.all(out[1] == 0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_batched_attention_is_softmax_of_scaled_scores(need_weights):
    torch.manual_seed(0)
    Q, K, V = torch.randn(3, 2, 4, 5, 8)  # 3 x (B, h, T, d_k)
    weights = torch.softmax(Q @ K.transpose(-2, -1) / 8**0.5, dim=-1)
    context, got = batched_attention(Q, K, V, need_weights=need_weights)
    torch.testing.assert_close(context, weights @ V, **TIGHT)
    if need_weights:
        torch.testing.assert_close(got, weights, **TIGHT)
    else:
        assert got is None


@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 1, 5, 5), (5,)])
def test_a_mask_of_the_wrong_shape_names_the_expected_one(shape):
    batched = BatchedMultiHeadAttention(AttentionConfig(8, 2))
    with pytest.raises(
        ValueError,
        match=r"expected \(T, T\) = \(5, 5\) or "
        r"\(B, T, T\) = \(2, 5, 5\)",
    ):
        batched(torch.randn(2, 5, 8), torch.ones(shape, dtype=torch.bool))


def test_a_float_mask_is_refused():
    batched = BatchedMultiHeadAttention(AttentionConfig(8, 2))
    with pytest.raises(ValueError, match="mask.bool()"):
        batched(torch.randn(1, 3, 8), torch.ones(3, 3))


def test_heads_that_do_not_divide_fail_at_construction():
    with pytest.raises(ValueError, match="768.*5.*4 or 6"):
        BatchedMultiHeadAttention(AttentionConfig(768, 5))


# Copies


def test_copy_checks_keys_and_shapes_before_copying():
    layer = BatchedMultiHeadAttention(AttentionConfig(8, 2))
    before = {k: v.clone() for k, v in layer.state_dict().items()}
    good = layer.state_dict()
    with pytest.raises(ValueError, match="missing.*output_linear.bias"):
        copy_checked(
            layer, {k: v for k, v in good.items() if k != "output_linear.bias"}
        )
    wrong = dict(good, **{"qkv.weight": torch.zeros(24, 9)})
    with pytest.raises(ValueError, match=r"qkv.weight: shape \(24, 9\)"):
        copy_checked(layer, wrong)
    for key, value in layer.state_dict().items():
        assert torch.equal(value, before[key])


def test_from_bert_reproduces_every_layer_of_a_tiny_bert():
    model = tiny_bert(
        hidden_size=16, num_attention_heads=4, intermediate_size=32
    )
    ids = torch.randint(0, model.config.vocab_size, (1, 6))
    with torch.no_grad():
        result = model(ids, output_attentions=True, output_hidden_states=True)
        for i, block in enumerate(model.encoder.layer):
            ours = batched_from_bert(block.attention)
            hidden = result.hidden_states[i]
            out, weights = ours(hidden)
            torch.testing.assert_close(weights, result.attentions[i], **TIGHT)
            context = block.attention.self(hidden)[0]
            expected = block.attention.output.dense(context)
            torch.testing.assert_close(out, expected, **TIGHT)


# What a reader may pass instead (issue 32): each refusal names the fix.


def test_a_config_of_another_kind_is_named():
    with pytest.raises(TypeError, match=r"BertConfig\(hidden_size=768"):
        BatchedMultiHeadAttention(768, 12)
    with pytest.raises(TypeError, match=r"BertConfig\(\*\*config\)"):
        BatchedMultiHeadAttention({"hidden_size": 8, "num_attention_heads": 2})


@pytest.mark.parametrize(
    "shape, fix",
    [
        ((5, 8), r"hidden_state\[None\]"),
        ((1, 5, 6), "give it 8 features"),
        ((2, 1, 5, 8), r"reshape it to \(batch, tokens, 8\)"),
    ],
)
@pytest.mark.parametrize(
    "layer_class", [MultiHeadAttention, BatchedMultiHeadAttention]
)
def test_an_input_that_is_not_batch_tokens_width_is_refused(
    shape, fix, layer_class
):
    """The loop layer and the batched one share their check."""
    layer = layer_class(AttentionConfig(8, 2))
    with pytest.raises(ValueError, match=rf"\(B, T, d\).*{fix}"):
        layer(torch.randn(shape))


# The whole layer in one place: AttentionLayer, with dropout on the weights


def whole_layer(batched, p):
    config = AttentionConfig(
        batched.output_linear.in_features, batched.num_heads, p
    )
    return copy_checked(AttentionLayer(config), batched.state_dict())


MASKS = {
    None: lambda: None,
    "causal": lambda: causal_mask(7),
    "padding": lambda: padding_mask([7, 3], 7),
    "empty": lambda: padding_mask([7, 0], 7),
}


@pytest.mark.parametrize("mask", list(MASKS))
def test_whole_layer_in_eval_is_the_batched_layer(layers, mask):
    _, batched = layers
    x, mask = inputs(batched), MASKS[mask]()
    layer = whole_layer(batched, 0.5).eval()  # dropout off
    out, weights = layer(x, mask)
    expected, expected_weights = batched(x, mask)
    torch.testing.assert_close(out, expected, **TIGHT)
    torch.testing.assert_close(weights, expected_weights, **TIGHT)


def test_whole_layer_hides_the_future_under_a_causal_mask():
    torch.manual_seed(0)
    layer = AttentionLayer(AttentionConfig(16, 4)).eval()
    x = torch.randn(2, 6, 16)
    later = x.clone()
    later[:, 3:] = torch.randn(2, 3, 16)  # change tokens 3 to 5 only
    out, weights = layer(x, causal_mask(6))
    torch.testing.assert_close(
        layer(later, causal_mask(6))[0][:, :3], out[:, :3]
    )
    assert not torch.allclose(layer(later)[0][:, :3], layer(x)[0][:, :3])
    assert torch.all(weights[..., ~causal_mask(6)] == 0)


def test_whole_layer_ignores_padding():
    torch.manual_seed(0)
    layer = AttentionLayer(AttentionConfig(16, 4)).eval()
    x = torch.randn(2, 6, 16)
    out, weights = layer(x, padding_mask([6, 2], 6))
    assert torch.all(weights[1, ..., 2:] == 0)
    torch.testing.assert_close(out[1, :2], layer(x[1:, :2])[0][0], **TIGHT)


@pytest.mark.parametrize("mask", [None, "causal"])
def test_whole_layer_drops_attention_weights_in_training(mask):
    """Dropout acts on the (B, h, T, T) weights, at the config's rate: the
    layer's output is what the weights, dropped by the same random draw,
    give; the weights it returns are dropped and scaled by 1 / (1 - p)."""
    torch.manual_seed(0)
    p = 0.5
    batched = BatchedMultiHeadAttention(AttentionConfig(16, 4))
    layer = whole_layer(batched, p).train()
    x, mask = torch.randn(2, 7, 16), MASKS[mask]()
    torch.manual_seed(1)
    out, weights = layer(x, mask)
    softmax = batched(x, mask)[1]  # no dropout
    torch.manual_seed(1)
    dropped = F.dropout(softmax, p, training=True)  # the same draw
    torch.testing.assert_close(weights, dropped, **TIGHT)
    V = layer.qkv(x).view(2, 7, 3, 4, 4)[:, :, 2].transpose(1, 2)
    context = (dropped @ V).transpose(1, 2).reshape(2, 7, 16)
    torch.testing.assert_close(out, layer.output_linear(context), **TIGHT)
    kept = weights != 0
    assert 0.3 < 1 - kept[softmax > 0].float().mean() < 0.7  # about p
    torch.testing.assert_close(weights[kept], softmax[kept] / (1 - p))
    assert not torch.equal(layer(x, mask)[0], out)  # another draw


def test_whole_layer_drops_everything_at_rate_one():
    """p = 1 zeroes every weight, so only W^O's bias is left."""
    layer = AttentionLayer(AttentionConfig(8, 2, 1.0)).train()
    out, weights = layer(torch.randn(2, 3, 8))
    assert torch.all(weights == 0)
    torch.testing.assert_close(out, layer.output_linear.bias.expand(2, 3, -1))


def test_whole_layer_reads_the_dropout_rate_of_its_config():
    assert AttentionLayer(AttentionConfig(8, 2)).dropout.p == 0.0
    bert = BertConfig(hidden_size=8, num_attention_heads=2)
    assert AttentionLayer(bert).dropout.p == bert.attention_probs_dropout_prob
    with pytest.raises(ValueError, match="such as 2 or 4"):
        AttentionLayer(AttentionConfig(8, 3))
    with pytest.raises(ValueError, match=r"expected \(T, T\)"):
        AttentionLayer(AttentionConfig(8, 2))(
            torch.randn(1, 3, 8), torch.ones(2, 2, dtype=torch.bool)
        )
