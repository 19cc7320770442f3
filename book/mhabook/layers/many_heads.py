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
        whole = isinstance(target, int) or getattr(target, "ndim", 1) == 0
        if target is not None and not (whole and 0 <= target < num_tokens):
            raise ValueError(
                f"target {target!r} is not a token position; use 0 to "
                f"{num_tokens - 1} (whole numbers) or None"
            )
        if target is not None:
            Q[i, int(target)] = strength * math.sqrt(num_tokens)
    _, weights = scaled_dot_product_attention(Q, K, K)
    return weights


class MultiHeadAttention(nn.Module):
    """num_heads AttentionHeads side by side, concatenated, then mixed."""

    def __init__(self, config, *extra):
        super().__init__()
        embed_dim, num_heads = sizes_of(config, *extra, layer=self)
        head_dim = head_dim_for(embed_dim, num_heads)
        self.heads = nn.ModuleList(
            AttentionHead(embed_dim, head_dim) for _ in range(num_heads)
        )
        self.output_linear = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_state, mask=None):
        check_input(hidden_state, self.output_linear.in_features)  # (B, T, d)
        # 1. attend: every head reads the whole hidden state
        results = [head(hidden_state, mask) for head in self.heads]
        outputs, weights = zip(*results)
        # 2. concat: h x (B, T, d_k) -> (B, T, h * d_k) = (B, T, d)
        x = torch.cat(outputs, dim=-1)
        # 3. mix the heads with the output projection W^O
        weights = torch.stack(weights, dim=1)  # (B, h, T, T)
        return self.output_linear(x), weights


def head_dim_for(embed_dim, num_heads):
    """Return embed_dim // num_heads, or explain why it does not divide."""
    if not all(hasattr(n, "__index__") for n in (embed_dim, num_heads)):
        raise TypeError(
            f"sizes are whole numbers: got {embed_dim!r} and {num_heads!r}; "
            f"use int(...)"
        )
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


def sizes_of(config, *extra, layer="the layer"):
    """(hidden_size, num_attention_heads) of a config, or a TypeError that
    names the config the layers take."""
    names = ("hidden_size", "num_attention_heads")
    sizes = [getattr(config, name, None) for name in names]
    whole = [type(n) is not bool and hasattr(n, "__index__") for n in sizes]
    if not extra and all(whole):
        return tuple(int(s) for s in sizes)
    name = type(layer).__name__ if isinstance(layer, nn.Module) else layer
    if isinstance(config, dict):
        fix = f"{name}(BertConfig(**config))"
    elif isinstance(config, int) and len(extra) == 1:
        fix = (
            f"{name}(BertConfig(hidden_size={config}, "
            f"num_attention_heads={extra[0]}))"
        )
    else:
        fix = f"{name}(BertConfig(hidden_size=768, num_attention_heads=12))"
    given = ", ".join(repr(a) for a in (config, *extra))
    raise TypeError(
        f"{name} takes one config with whole-number hidden_size and "
        f"num_attention_heads (a BertConfig, say), not {given}: use {fix}"
    )


def check_input(hidden_state, embed_dim):
    """Refuse an input that is not (B, T, d), with the fix in the error."""
    shape = tuple(getattr(hidden_state, "shape", ()))
    if torch.is_tensor(hidden_state) and len(shape) == 3:
        if shape[-1] == embed_dim:
            return
        fix = f"give it {embed_dim} features, or build the layer that wide"
    elif len(shape) == 2 and shape[-1] == embed_dim:
        fix = "add the batch axis, hidden_state[None] for a batch of one"
    elif torch.is_tensor(hidden_state):
        fix = f"reshape it to (batch, tokens, {embed_dim})"
    else:
        shape = type(hidden_state).__name__
        fix = "pass a tensor, such as torch.randn(1, 5, d)"
    raise ValueError(
        f"hidden_state is {shape}; the layer takes (B, T, d) with "
        f"d = {embed_dim}: {fix}"
    )
