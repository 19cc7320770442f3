"""One attention head (section 1).

Generated from book/one_head.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

import math

import torch
from torch import nn

from mhabook.checks import check_input, check_qkv


def scaled_dot_product_attention(query, key, value, mask=None):
    """Return (output, weights) of softmax(Q K^T / sqrt(d_k)) V.

    mask: bool, True where a query may attend. A query that may attend to
    nothing gets all-zero weights and a zero output (not NaN).
    """
    check_qkv(query, key, value, mask)  # shapes that fit, a bool mask
    dim_k = query.size(-1)
    # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    scores = query @ key.transpose(-2, -1) / math.sqrt(dim_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num()  # no key: 0
    return weights @ value, weights


class AttentionHead(nn.Module):
    """One head: its own query, key and value projections."""

    def __init__(self, embed_dim, head_dim):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim)
        self.k = nn.Linear(embed_dim, head_dim)
        self.v = nn.Linear(embed_dim, head_dim)

    def forward(self, hidden_state, mask=None):
        check_input(hidden_state, self.q.in_features)  # (B, T, d) or a fix
        return scaled_dot_product_attention(
            self.q(hidden_state),
            self.k(hidden_state),
            self.v(hidden_state),
            mask,
        )
