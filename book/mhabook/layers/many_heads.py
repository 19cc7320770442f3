"""Many heads in one layer (section 2).

Generated from book/many_heads.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

import math

import torch
from torch import nn

from .one_head import AttentionHead, scaled_dot_product_attention


def pointer_head(targets, strength=4.0):
    """(T, T) weights of a head whose query i looks at token targets[i]
    (None: uniformly). Key j is e_j; query i is strength * sqrt(T) times
    e_targets[i]: its scaled score is `strength` on the target, else 0."""
    num_tokens = len(targets)
    K = torch.eye(num_tokens)  # (T, T): key j is e_j
    Q = torch.zeros(num_tokens, num_tokens)  # (T, T)
    for i, target in enumerate(targets):
        if target is not None and not 0 <= target < num_tokens:
            raise ValueError(
                f"target {target} is not a token position; use 0 to "
                f"{num_tokens - 1} or None"
            )
        if target is not None:
            Q[i, target] = strength * math.sqrt(num_tokens)
    _, weights = scaled_dot_product_attention(Q, K, K)
    return weights


def head_dim_for(embed_dim, num_heads):
    """Return embed_dim // num_heads, or explain why it does not divide."""
    if num_heads < 1 or embed_dim % num_heads:
        fits = [h for h in range(1, embed_dim + 1) if embed_dim % h == 0]
        below = [h for h in fits if h < num_heads][-1:]
        above = [h for h in fits if h > num_heads][:1]
        nearest = below + above
        raise ValueError(
            f"hidden size {embed_dim} does not split into {num_heads} "
            f"heads: {embed_dim} / {num_heads} is not a whole number. "
            f"Use a head count that divides {embed_dim}, such as "
            f"{' or '.join(map(str, nearest))}."
        )
    return embed_dim // num_heads


class MultiHeadAttention(nn.Module):
    """num_heads AttentionHeads side by side, concatenated, then mixed."""

    def __init__(self, config):
        super().__init__()
        embed_dim = config.hidden_size
        num_heads = config.num_attention_heads
        head_dim = head_dim_for(embed_dim, num_heads)
        self.heads = nn.ModuleList(
            AttentionHead(embed_dim, head_dim) for _ in range(num_heads)
        )
        self.output_linear = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_state, mask=None):
        # 1. attend: every head reads the whole hidden state
        results = [head(hidden_state, mask) for head in self.heads]
        outputs, weights = zip(*results)
        # 2. concat: h x (B, T, d_k) -> (B, T, h * d_k) = (B, T, d)
        x = torch.cat(outputs, dim=-1)
        # 3. mix the heads with the output projection W^O
        weights = torch.stack(weights, dim=1)  # (B, h, T, T)
        return self.output_linear(x), weights
