import pytest
import torch

from mhabook.experiments.properties import layer_properties
from mhabook.layers import AttentionConfig, BatchedMultiHeadAttention


def layer(d=16, h=4):
    torch.manual_seed(0)
    return BatchedMultiHeadAttention(AttentionConfig(d, h))


def test_a_correct_layer_has_all_six():
    found = layer_properties(layer(), torch.randn(2, 5, 16))
    assert len(found) == 6 and all(found.values()), found


def test_a_layer_in_training_mode_with_dropout_is_refused():
    from mhabook.layers import AttentionLayer

    torch.manual_seed(0)
    dropping = AttentionLayer(AttentionConfig(16, 4, 0.5))  # in training
    with pytest.raises(ValueError, match="training mode.*layer.eval"):
        layer_properties(dropping, torch.randn(2, 5, 16))
    assert all(
        layer_properties(dropping.eval(), torch.randn(2, 5, 16)).values()
    )


class MixesHeads(torch.nn.Module):
    """A wrong layer: each head's map is the mean of all heads' maps."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.num_heads, self.head_dim = inner.num_heads, inner.head_dim
        self.qkv, self.output_linear = inner.qkv, inner.output_linear

    def forward(self, x, mask=None):
        out, weights = self.inner(x, mask=mask)
        return out, weights.mean(1, keepdim=True).expand_as(weights)


class SeesTheFuture(MixesHeads):
    """A wrong layer: it ignores the mask."""

    def forward(self, x, mask=None):
        return self.inner(x)


def test_a_layer_that_mixes_heads_fails_property_5_only():
    found = layer_properties(MixesHeads(layer()), torch.randn(1, 4, 16))
    assert [name[0] for name, holds in found.items() if not holds] == ["5"]


def test_a_layer_that_ignores_the_mask_fails_property_4():
    found = layer_properties(SeesTheFuture(layer()), torch.randn(1, 4, 16))
    assert not found["4. no weight on the future"]


def test_a_zero_output_projection_stops_the_gradients():
    zeroed = layer()
    torch.nn.init.zeros_(zeroed.output_linear.weight)
    found = layer_properties(zeroed, torch.randn(1, 3, 16))
    assert not found["6. gradients reach every head"]


def test_one_token_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="give two or more"):
        layer_properties(layer(), torch.randn(1, 1, 16))


def test_a_loop_layer_is_refused_with_the_conversion_to_use():
    from transformers import BertConfig

    from mhabook import MultiHeadAttention

    loop = MultiHeadAttention(
        BertConfig(hidden_size=16, num_attention_heads=4)
    )
    with pytest.raises(TypeError, match=r"pass batched_from_loop\(loop\)"):
        layer_properties(loop, torch.randn(1, 3, 16))
