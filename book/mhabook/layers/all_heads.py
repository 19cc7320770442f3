"""All heads in one batched product, masks.

Generated from book/all_heads.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mhabook import convert  # weight copying, used below
from mhabook.checks import (
    check_bool_mask,
    check_num_tokens,
    check_padding,
    takes_config,
)


@dataclass(frozen=True)
class AttentionConfig:
    """What an attention layer reads, by BertConfig's names."""

    hidden_size: int  # d
    num_attention_heads: int  # h
    attention_probs_dropout_prob: float = 0.0  # dropout on the weights


def batched_attention(Q, K, V, mask=None, need_weights=True):
    """Attention for every head at once. Q, K, V: (B, h, T, d_k); mask:
    None or bool (B, 1, T, T), True where a query may attend.

    Returns the context (B, h, T, d_k) and the weights (B, h, T, T), or
    None for the weights with need_weights=False (the fused path).
    """
    if not need_weights:
        context = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
        return zero_empty_queries(context, mask), None
    scores = Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5  # (B, h, T, T)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # (B, h, T, T)
    weights = zero_empty_queries(weights, mask)
    return weights @ V, weights  # (B, h, T, d_k), (B, h, T, T)


def check_mask(mask, batch, num_tokens):
    """A bool mask, (T, T) or (B, T, T), True where a query may attend,
    as (B, 1, T, T) to broadcast over the heads; else a ValueError."""
    if mask is not None:
        check_bool_mask(mask, batch, num_tokens)
        return mask.expand(batch, num_tokens, num_tokens).unsqueeze(1)


def zero_empty_queries(tensor, mask):
    """Zeros for a query whose mask row is all False: it has nothing to
    attend to, and a softmax over nothing would give 0/0, NaN."""
    if mask is None:
        return tensor
    return tensor.masked_fill(~mask.any(-1, keepdim=True), 0.0)


class BatchedMultiHeadAttention(nn.Module):
    """Every head at once: one projection, two batched matmuls."""

    def __init__(self, config):
        super().__init__()
        d, h = config.hidden_size, config.num_attention_heads
        self.num_heads, self.head_dim = h, d // h  # h, d_k
        # rows [0, d): every head's query, [d, 2d): keys, [2d, 3d): values
        self.qkv = nn.Linear(d, 3 * d)
        self.output_linear = nn.Linear(d, d)  # W^O

    def forward(self, hidden_state, mask=None, need_weights=True):
        B, T, d = hidden_state.shape
        h, d_k = self.num_heads, self.head_dim
        mask = check_mask(mask, B, T)  # None or (B, 1, T, T)
        # 1. project: all heads' q, k and v in one matmul; the view splits
        # 3d as the rows do: axis 2 picks q/k/v, axis 3 the head
        qkv = self.qkv(hidden_state).view(B, T, 3, h, d_k)
        Q, K, V = qkv.permute(2, 0, 3, 1, 4)  # axes (q/k/v, B, h, T, d_k)
        # 2. attend: all heads at once
        context, weights = batched_attention(Q, K, V, mask, need_weights)
        # 3. concat the heads, (B, T, d), and mix them with W^O
        context = context.transpose(1, 2).reshape(B, T, d)
        return self.output_linear(context), weights


BatchedMultiHeadAttention = takes_config(BatchedMultiHeadAttention)  # checks

# weight copying from book/mhabook/convert.py (batched_from_loop: next)
copy_checked = convert.copy_checked
loop_from_batched = convert.loop_from_batched
torch_from_batched = convert.torch_from_batched
batched_from_bert = convert.batched_from_bert


def batched_from_loop(loop):
    """The batched layer holding exactly the weights of a loop layer."""
    config = AttentionConfig(loop.output_linear.in_features, len(loop.heads))
    rows = [getattr(head, p) for p in "qkv" for head in loop.heads]
    return copy_checked(  # copies after checking every name and shape
        BatchedMultiHeadAttention(config),
        {
            "qkv.weight": torch.cat([m.weight for m in rows]),  # (3d, d)
            "qkv.bias": torch.cat([m.bias for m in rows]),  # q, k, v rows
            "output_linear.weight": loop.output_linear.weight,  # W^O
            "output_linear.bias": loop.output_linear.bias,  # b^O
        },
    )


def causal_mask(num_tokens):
    """(T, T): token i may attend to tokens 0..i, never to the future."""
    check_num_tokens(num_tokens)  # a whole number, 0 or more
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()


def padding_mask(lengths, num_tokens):
    """(B, T, T): in sequence b, every query may attend to the first
    lengths[b] tokens; the padding after them is never attended to."""
    check_padding(lengths, num_tokens)  # each from 0 to T
    lengths = torch.as_tensor(lengths)
    keys = torch.arange(num_tokens) < lengths[:, None]  # (B, T)
    return keys[:, None, :].expand(-1, num_tokens, -1)  # (B, T, T)


class AttentionLayer(nn.Module):
    """Multi-head self-attention in one place: every head at once, an
    optional mask, dropout on the attention weights, and W^O."""

    def __init__(self, config):
        super().__init__()
        d, h = config.hidden_size, config.num_attention_heads
        self.num_heads, self.head_dim = h, d // h  # h, d_k
        self.qkv = nn.Linear(d, 3 * d)  # W^Q, W^K and W^V of every head
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)
        self.output_linear = nn.Linear(d, d)  # W^O

    def forward(self, hidden_state, mask=None):
        B, T, d = hidden_state.shape
        h, d_k = self.num_heads, self.head_dim
        mask = check_mask(mask, B, T)  # None or (B, 1, T, T)
        # 1. project: every head's queries, keys and values at once
        qkv = self.qkv(hidden_state).view(B, T, 3, h, d_k)
        Q, K, V = qkv.permute(2, 0, 3, 1, 4)  # 3 x (B, h, T, d_k)
        # 2. attend: scores, mask, softmax, dropout, weighted sum
        scores = Q @ K.transpose(-2, -1) / d_k**0.5  # (B, h, T, T)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = zero_empty_queries(scores.softmax(dim=-1), mask)
        weights = self.dropout(weights)  # only in training
        context = weights @ V  # (B, h, T, d_k)
        # 3. concat the heads, (B, T, d), and mix them with W^O
        context = context.transpose(1, 2).reshape(B, T, d)
        return self.output_linear(context), weights


AttentionLayer = takes_config(AttentionLayer)  # as the batched layer
