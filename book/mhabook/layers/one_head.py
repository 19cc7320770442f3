"""One attention head (section 1).

Generated from book/one_head.ipynb by `make lib`: edit the notebook,
then run `make lib`.
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
        check_attention_mask(mask, scores)  # bool, and fits the scores
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask.any(-1, keepdim=True), 0.0)
    return weights @ value, weights


def check_attention_mask(mask, scores):
    """Refuse a mask that is not bool, or that does not fit the scores
    (..., T_q, T_k) it masks, with a ValueError that names the fix."""
    if not torch.is_tensor(mask) or mask.dtype != torch.bool:
        kind = mask.dtype if torch.is_tensor(mask) else type(mask).__name__
        raise ValueError(
            f"mask is {kind}; pass a bool tensor, True where a query may "
            f"attend (mask.bool() turns a 0/1 mask into one)"
        )
    try:
        fits = torch.broadcast_shapes(mask.shape, scores.shape) == scores.shape
    except RuntimeError:  # the shapes do not broadcast
        fits = False
    if not fits:
        raise ValueError(
            f"mask has shape {tuple(mask.shape)}, which does not fit the "
            f"scores {tuple(scores.shape)}: pass a (T_q, T_k) = "
            f"{tuple(scores.shape[-2:])} mask, or one with their leading axes"
        )


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
