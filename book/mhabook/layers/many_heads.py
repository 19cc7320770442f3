"""Many heads in one layer (section 2).

Generated from book/many_heads.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

import math

import torch
from torch import nn

from mhabook.checks import check_split, check_targets, takes_config

from .one_head import AttentionHead, scaled_dot_product_attention


def pointer_head(targets, strength=4.0):
    """(T, T) weights of a head whose query i looks at token targets[i]
    (None: at no token, so it spreads evenly). Key j is e_j; query i is
    strength * sqrt(T) times e_targets[i], so its scaled score is
    `strength` on the target and 0 elsewhere."""
    check_targets(targets, strength)  # positions 0..T-1, strength > 0
    num_tokens = len(targets)
    K = torch.eye(num_tokens)  # (T, T): key j is e_j
    Q = torch.zeros(num_tokens, num_tokens)  # (T, T)
    for i, target in enumerate(targets):
        if target is not None:
            Q[i, int(target)] = strength * math.sqrt(num_tokens)
    _, weights = scaled_dot_product_attention(Q, K, K)
    return weights


class MultiHeadAttention(nn.Module):
    """num_heads AttentionHeads side by side, concatenated, then mixed."""

    def __init__(self, config):
        super().__init__()
        embed_dim = config.hidden_size  # d = 768 in BERT-base
        num_heads = config.num_attention_heads  # h = 12
        head_dim = embed_dim // num_heads  # d_k = 64
        self.heads = nn.ModuleList(
            AttentionHead(embed_dim, head_dim) for _ in range(num_heads)
        )
        self.output_linear = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_state, mask=None):  # hidden_state: (B, T, d)
        # 1. attend: every head reads the whole hidden state
        results = [head(hidden_state, mask) for head in self.heads]
        # 2. concat: h x (B, T, d_k) -> (B, T, h * d_k) = (B, T, d)
        x = torch.cat([output for output, _ in results], dim=-1)
        # 3. mix the heads with W^O; the weights stack to (B, h, T, T)
        weights = torch.stack([w for _, w in results], dim=1)
        return self.output_linear(x), weights


MultiHeadAttention = takes_config(MultiHeadAttention)  # checked sizes, input


def head_dim_for(embed_dim, num_heads):
    """d_k = d / h, or an error that names the head counts that fit."""
    check_split(embed_dim, num_heads)
    return embed_dim // num_heads
