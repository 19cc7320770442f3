"""Sharing keys and values: grouped-query attention, the KV cache.

Generated from book/sharing_kv.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

import torch
from torch import nn

from mhabook.checks import check_input, explains_slips  # errors with a fix
from mhabook.deeper_checks import (  # h and g, h // g, a cache that fits
    GroupedAttentionConfig,
    check_fits,
    group_size_for,
)

from .all_heads import check_mask, copy_checked
from .many_heads import head_dim_for
from .one_head import scaled_dot_product_attention


class GroupedQueryAttention(nn.Module):
    """h query heads in g groups; each group shares one key/value head."""

    def __init__(self, config):
        super().__init__()
        self.num_heads = h = config.num_attention_heads
        self.num_kv_heads = g = config.num_key_value_heads
        self.group_size = group_size_for(h, g)
        d, bias = config.hidden_size, config.attention_bias
        self.head_dim = d_k = head_dim_for(d, h)
        self.q = nn.Linear(d, d, bias=bias)
        self.kv = nn.Linear(d, 2 * g * d_k, bias=bias)  # g keys, g values
        self.output_linear = nn.Linear(d, d, bias=bias)

    def forward(self, hidden_state, mask=None, cache=None):
        check_input(hidden_state, self.q.in_features, self.q.weight.dtype)
        B, T, d = hidden_state.shape
        h, g, d_k = self.num_heads, self.num_kv_heads, self.head_dim
        mask = check_mask(mask, B, T)  # None or (B, 1, T, T)
        # 1. project: h heads of queries, Q (B, h, T, d_k); g of keys, values
        Q = self.q(hidden_state).view(B, T, h, d_k).transpose(1, 2)
        kv = self.kv(hidden_state).view(B, T, 2, g, d_k)  # (B, T, 2, g, d_k)
        K, V = kv.permute(2, 0, 3, 1, 4)  # 2 x (B, g, T, d_k)
        if cache is not None:  # S = cached + T keys, mask (B, 1, T, S)
            K, V, mask = cache.append(K, V, mask)
        K = K.repeat_interleave(h // g, dim=1)  # 2. share: (B, h, S, d_k)
        V = V.repeat_interleave(h // g, dim=1)  # (B, h, S, d_k)
        # 3. attend: weights (B, h, T, S), context (B, h, T, d_k)
        context, weights = scaled_dot_product_attention(Q, K, V, mask)
        # 4. concat the heads and mix them with W^O
        context = context.transpose(1, 2).reshape(B, T, d)  # (B, T, d)
        return self.output_linear(context), weights


GroupedQueryAttention = explains_slips(GroupedQueryAttention)  # shape errors


class KVCache:
    """One layer's keys and values of every token so far, for decoding."""

    def __init__(self, batch, num_kv_heads, max_tokens, head_dim, dtype=None):
        shape = (batch, num_kv_heads, max_tokens, head_dim)  # room, once
        self.keys = torch.zeros(shape, dtype=dtype)  # (B, g, T_max, d_k)
        self.values = torch.zeros(shape, dtype=dtype)  # (B, g, T_max, d_k)
        self.length = 0  # tokens stored so far

    def append(self, K, V, mask=None):
        """Store K, V (B, g, T, d_k); return every key and value so far,
        2 x (B, g, S, d_k), and the mask widened to them, (B, 1, T, S)."""
        start, end = self.length, self.length + K.shape[2]
        check_fits(self.keys, start, K, V)  # else says what fits
        self.keys[:, :, start:end], self.values[:, :, start:end] = K, V
        self.length = end
        if mask is not None:  # every cached key is in the new tokens' past
            seen = mask.new_ones(*mask.shape[:-1], start)  # (B, 1, T, start)
            mask = torch.cat([seen, mask], dim=-1)  # (B, 1, T, S)
        return self.keys[:, :, :end], self.values[:, :, :end], mask


def grouped_from_bert(bert_attention, num_kv_heads):
    """A grouped layer from a BERT attention block: each group's key and
    value projections are the mean of its heads' (the GQA paper's start)."""
    attn, dense = bert_attention.self, bert_attention.output.dense
    h, d = attn.num_attention_heads, dense.in_features
    layer = GroupedQueryAttention(GroupedAttentionConfig(d, h, num_kv_heads))
    g, d_k = layer.num_kv_heads, layer.head_dim

    def pool(rows):  # (h d_k, ...) -> (g d_k, ...): mean over each group
        grouped = rows.reshape(g, h // g, d_k, -1)  # (g, h/g, d_k, d or 1)
        return grouped.mean(1).reshape(g * d_k, *rows.shape[1:])

    weights = {"q.weight": attn.query.weight, "q.bias": attn.query.bias}
    for w in ("weight", "bias"):
        keys, values = getattr(attn.key, w), getattr(attn.value, w)
        weights[f"kv.{w}"] = torch.cat([pool(keys), pool(values)])
    weights["output_linear.weight"] = dense.weight
    weights["output_linear.bias"] = dense.bias
    copy_checked(layer, weights)
    return layer
