"""The chapter's attention layers.

Each definition here is taught in a notebook cell that starts with ``# @save``
(the d2l convention): the notebook is where a reader studies and edits it,
and this module is where later sections import it from.
``tests/test_layers.py`` checks that the two copies stay identical.

Shape letters: B batch, T tokens, C hidden size, h heads, d_k = C // h.
"""

import math

import torch
from torch import nn


def scaled_dot_product_attention(query, key, value, mask=None):
    """Return (output, weights) of softmax(Q K^T / sqrt(d_k)) V.

    mask: bool, broadcastable to (..., T_q, T_k), True where a query may
    attend. A query row that may attend to nothing gets all-zero weights and
    a zero output (not NaN).
    """
    dim_k = query.size(-1)
    # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    scores = query @ key.transpose(-2, -1) / math.sqrt(dim_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return weights @ value, weights


class AttentionHead(nn.Module):
    """One head: its own query, key and value projections."""

    def __init__(self, embed_dim, head_dim):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim)
        self.k = nn.Linear(embed_dim, head_dim)
        self.v = nn.Linear(embed_dim, head_dim)

    def forward(self, hidden_state, mask=None):
        return scaled_dot_product_attention(
            self.q(hidden_state),
            self.k(hidden_state),
            self.v(hidden_state),
            mask,
        )


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
