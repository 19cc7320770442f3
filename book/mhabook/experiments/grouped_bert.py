"""Run a loaded BERT with grouped key/value heads, and measure how far that
moves it ("Sharing keys and values", on the real checkpoint).

`with_grouped_kv` swaps each layer's self-attention for the chapter's
GroupedQueryAttention made by `grouped_from_bert` (keys and values of each
group mean-pooled); the rest of the model is unchanged. Nothing is trained.
"""

import copy

import torch
from torch import nn

from ..layers.sharing_kv import grouped_from_bert


class GroupedSelfAttention(nn.Module):
    """Stands where BertSelfAttention stood; the block's output dense layer
    becomes an identity, since the grouped layer applies W^O itself."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        return self.layer(hidden_states, bool_mask(attention_mask))


def bool_mask(attention_mask):
    """Hugging Face's (B, 1, T, T) mask, additive or boolean, as the
    chapter's (B, T, T) boolean one (True where a query may attend)."""
    if attention_mask is None:
        return None
    if attention_mask.dtype != torch.bool:
        attention_mask = attention_mask == 0  # 0 kept, a large negative not
    return attention_mask[:, 0]  # (B, T, T)


def with_grouped_kv(model, num_kv_heads):
    """A copy of a BERT model whose every layer shares its keys and values
    in num_kv_heads groups (num_kv_heads = h changes nothing)."""
    changed = copy.deepcopy(model)
    for block in changed.encoder.layer:
        layer = grouped_from_bert(block.attention, num_kv_heads)
        block.attention.self = GroupedSelfAttention(layer)
        block.attention.output.dense = nn.Identity()
    return changed.eval()


def grouped_attention_maps(model, inputs):
    """Every layer's attention weights of a `with_grouped_kv` model,
    (L, B, h, T, T), from the hidden states that enter each layer."""
    with torch.inference_mode():
        hidden = model(**inputs, output_hidden_states=True).hidden_states
        mask = inputs["attention_mask"].bool()  # (B, T)
        mask = mask[:, None, :].expand(-1, mask.shape[1], -1)  # (B, T, T)
        maps = [
            block.attention.self.layer(hidden[i], mask)[1]
            for i, block in enumerate(model.encoder.layer)
        ]
    return torch.stack(maps)  # (L, B, h, T, T)


def attention_shift(reference, changed, attention_mask):
    """Per layer, the mean total variation distance between the two models'
    attention rows: half the L1 distance, 0 = same, 1 = disjoint. Rows of
    padding tokens are left out. reference, changed: (L, B, h, T, T)."""
    distance = 0.5 * (reference - changed).abs().sum(-1)  # (L, B, h, T)
    real = attention_mask.bool()[None, :, None, :]  # (1, B, 1, T)
    real = real.expand_as(distance)  # (L, B, h, T)
    per_layer = (distance * real).sum((1, 2, 3)) / real.sum((1, 2, 3))
    return per_layer  # (L,)
