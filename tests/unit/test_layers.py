"""The loop layers of sections 1-2, on small random configurations."""

import math
from types import SimpleNamespace

import pytest
import torch

from mhabook import (
    AttentionHead,
    MultiHeadAttention,
    head_dim_for,
    scaled_dot_product_attention,
)


def config(hidden_size=8, num_attention_heads=2):
    return SimpleNamespace(
        hidden_size=hidden_size, num_attention_heads=num_attention_heads
    )


def test_attention_matches_the_formula():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 6).unbind(0)
    output, weights = scaled_dot_product_attention(q, k, v)
    expected = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(6), dim=-1)
    torch.testing.assert_close(weights, expected)
    torch.testing.assert_close(output, expected @ v)


def test_attention_matches_pytorch():
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 3, 5, 8).unbind(0)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    output, _ = scaled_dot_product_attention(q, k, v, mask)
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask
    )
    torch.testing.assert_close(output, expected)


def test_masked_weights_are_zero_and_rows_sum_to_one():
    torch.manual_seed(0)
    x = torch.randn(1, 4, 6)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    _, weights = scaled_dot_product_attention(x, x, x, mask)
    assert torch.all(weights[0][~mask] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(1, 4))


def test_a_row_with_nothing_to_attend_to_is_zero_not_nan():
    x = torch.randn(1, 3, 4)
    mask = torch.tensor([[True, False, False]] * 2 + [[False] * 3])
    output, weights = scaled_dot_product_attention(x, x, x, mask)
    assert not output.isnan().any()
    assert torch.all(weights[0, 2] == 0) and torch.all(output[0, 2] == 0)


def test_attention_head_shapes():
    head = AttentionHead(8, 4)
    output, weights = head(torch.randn(2, 5, 8))
    assert output.shape == (2, 5, 4) and weights.shape == (2, 5, 5)


@pytest.mark.parametrize("hidden, heads", [(8, 2), (8, 1), (12, 3)])
def test_multihead_round_trips_the_shape(hidden, heads):
    layer = MultiHeadAttention(config(hidden, heads))
    output, weights = layer(torch.randn(2, 5, hidden))
    assert len(layer.heads) == heads
    assert output.shape == (2, 5, hidden)
    assert weights.shape == (2, heads, 5, 5)


def test_multihead_concatenates_heads_in_order():
    torch.manual_seed(0)
    layer = MultiHeadAttention(config(8, 2))
    x = torch.randn(1, 3, 8)
    with torch.no_grad():
        layer.output_linear.weight.copy_(torch.eye(8))
        layer.output_linear.bias.zero_()
        output, _ = layer(x)
    torch.testing.assert_close(output[..., 4:], layer.heads[1](x)[0])


@pytest.mark.parametrize(
    "hidden, heads, nearest",
    [
        (768, 5, "4 or 6"),
        (10, 3, "2 or 5"),
        (8, 0, "each is at least 1"),
    ],
)
def test_heads_that_do_not_divide_fail_with_the_fix(hidden, heads, nearest):
    with pytest.raises(ValueError, match=f"{hidden}.*{heads}.*{nearest}"):
        MultiHeadAttention(config(hidden, heads))


def test_head_dim():
    assert head_dim_for(768, 12) == 64


# What a reader may pass instead (issue 32): each refusal names the fix.


@pytest.mark.parametrize(
    "args, fix",
    [
        ((768, 12), r"BertConfig\(hidden_size=768, num_attention_heads=12\)"),
        (({"hidden_size": 8, "num_attention_heads": 2},), r"BertConfig\(\*\*"),
        ((config(8.0, 2),), "whole-number"),
        ((SimpleNamespace(hidden_size=8),), "num_attention_heads"),
    ],
)
def test_a_config_of_another_kind_is_named(args, fix):
    with pytest.raises(TypeError, match=f"MultiHeadAttention takes.*{fix}"):
        MultiHeadAttention(*args)


def test_a_config_with_the_two_sizes_is_enough():
    layer = MultiHeadAttention(config(8, 2))
    assert layer(torch.randn(1, 3, 8))[1].shape == (1, 2, 3, 3)


@pytest.mark.parametrize(
    "mask, fix",
    [
        (torch.ones(3, 3), r"mask.bool\(\)"),
        (torch.ones(3, 3, dtype=torch.int64), r"mask.bool\(\)"),
        ([[True] * 3] * 3, "pass a bool tensor"),
        (torch.ones(4, 4, dtype=torch.bool), r"\(T_q, T_k\) = \(3, 3\)"),
    ],
)
def test_a_mask_that_is_not_bool_or_does_not_fit_is_explained(mask, fix):
    q = torch.randn(2, 3, 4)
    with pytest.raises(ValueError, match=fix):
        scaled_dot_product_attention(q, q, q, mask)
    with pytest.raises(ValueError, match=fix):
        MultiHeadAttention(config(8, 2))(torch.randn(2, 3, 8), mask)


def test_a_mask_with_the_batch_axis_fits():
    mask = torch.ones(2, 3, 3, dtype=torch.bool).tril()
    q = torch.randn(2, 3, 4)
    _, weights = scaled_dot_product_attention(q, q, q, mask)
    assert (weights[~mask] == 0).all()


def test_sizes_that_are_not_whole_numbers_are_refused():
    with pytest.raises(TypeError, match="whole numbers"):
        head_dim_for(768.0, 12)


def test_a_pointer_target_must_be_a_whole_position():
    from mhabook import pointer_head

    assert pointer_head([torch.tensor(1), 0]).argmax(-1).tolist() == [1, 0]
    for wrong in (1.5, 2, -1):
        with pytest.raises(ValueError, match="use 0 to 1"):
            pointer_head([wrong, None])
