"""All heads in one batched product, masks.

Generated from book/all_heads.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .many_heads import MultiHeadAttention, check_input, head_dim_for, sizes_of


@dataclass(frozen=True)
class AttentionConfig:
    """The two numbers an attention layer needs (BertConfig has them too)."""

    hidden_size: int
    num_attention_heads: int


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


class BatchedMultiHeadAttention(nn.Module):
    """Multi-head attention without a loop over heads: one projection
    makes every head's q, k and v; two batched matmuls serve all heads."""

    def __init__(self, config, *extra):
        super().__init__()
        hidden, self.num_heads = sizes_of(config, *extra, layer=self)
        self.head_dim = head_dim_for(hidden, self.num_heads)
        # rows [0, C): every head's query, [C, 2C): keys, [2C, 3C): values
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.output_linear = nn.Linear(hidden, hidden)

    def forward(self, hidden_state, mask=None, need_weights=True):
        check_input(hidden_state, self.qkv.in_features)  # (B, T, C)
        B, T, C = hidden_state.shape
        h, d_k = self.num_heads, self.head_dim
        mask = check_mask(mask, B, T)  # None or (B, 1, T, T)
        # 1. project: all heads' q, k and v in one matmul, (B, T, 3C); the
        # view splits 3C as the rows do: axis 2 picks q/k/v, axis 3 the head
        qkv = self.qkv(hidden_state).view(B, T, 3, h, d_k)  # (B, T, 3, h, d_k)
        # reorder to (q/k/v, B, h, T, d_k): the old axes 2, 0, 3, 1, 4
        Q, K, V = qkv.permute(2, 0, 3, 1, 4)  # 3 x (B, h, T, d_k)
        # 2. attend: all heads at once
        context, weights = batched_attention(Q, K, V, mask, need_weights)
        # 3. concat the heads and mix them with W^O
        context = context.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return self.output_linear(context), weights


def check_mask(mask, batch, num_tokens):
    """Return a bool mask shaped (B, 1, T, T) for broadcasting over heads.

    Accepts (T, T), shared by the batch, or (B, T, T), one per sequence;
    True marks the keys a query may attend to.
    """
    if mask is None:
        return None
    shapes = [(num_tokens, num_tokens), (batch, num_tokens, num_tokens)]
    if tuple(mask.shape) not in shapes:
        raise ValueError(
            f"mask has shape {tuple(mask.shape)}; expected (T, T) = "
            f"{shapes[0]} or (B, T, T) = {shapes[1]} for an input with "
            f"B = {batch} and T = {num_tokens}"
        )
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask has dtype {mask.dtype}; expected torch.bool with True "
            f"where a query may attend (use mask.bool() for a 0/1 mask)"
        )
    return mask.expand(batch, num_tokens, num_tokens).unsqueeze(1)


def zero_empty_queries(tensor, mask):
    """Zeros for a query whose mask row is all False: it has nothing to
    attend to, and a softmax over nothing would give 0/0, NaN."""
    if mask is None:
        return tensor
    empty = ~mask.any(-1, keepdim=True)  # (B, 1, T, 1)
    return tensor.masked_fill(empty, 0.0)


def copy_checked(layer, weights):
    """Load weights into layer after checking every key and shape."""
    target = layer.state_dict()
    if weights.keys() != target.keys():
        raise ValueError(
            f"keys differ: missing {sorted(target.keys() - weights.keys())}, "
            f"unexpected {sorted(weights.keys() - target.keys())}"
        )
    for key, value in weights.items():
        if value.shape != target[key].shape:
            raise ValueError(
                f"{key}: shape {tuple(value.shape)} does not fit "
                f"{tuple(target[key].shape)}"
            )
    layer.load_state_dict(weights)


def batched_from_loop(loop):
    """The batched layer holding exactly the weights of a loop layer."""
    hidden = loop.output_linear.in_features
    layer = BatchedMultiHeadAttention(AttentionConfig(hidden, len(loop.heads)))
    weights, biases = [], []
    for part in ("q", "k", "v"):  # stack the heads' rows, head 0 first
        weights += [getattr(head, part).weight for head in loop.heads]
        biases += [getattr(head, part).bias for head in loop.heads]
    copy_checked(
        layer,
        {
            "qkv.weight": torch.cat(weights),  # (3C, C)
            "qkv.bias": torch.cat(biases),  # (3C,)
            "output_linear.weight": loop.output_linear.weight,
            "output_linear.bias": loop.output_linear.bias,
        },
    )
    return layer


def loop_from_batched(batched):
    """The loop layer of section 2 holding a batched layer's weights."""
    hidden = batched.output_linear.in_features
    loop = MultiHeadAttention(AttentionConfig(hidden, batched.num_heads))
    rows = batched.head_dim
    weight = batched.qkv.weight.split(rows)  # 3h x (d_k, C)
    bias = batched.qkv.bias.split(rows)  # 3h x (d_k,)
    weights = {}
    for p, part in enumerate(("q", "k", "v")):
        for i in range(batched.num_heads):  # head i's rows of this part
            n = p * batched.num_heads + i
            weights[f"heads.{i}.{part}.weight"] = weight[n]
            weights[f"heads.{i}.{part}.bias"] = bias[n]
    weights["output_linear.weight"] = batched.output_linear.weight
    weights["output_linear.bias"] = batched.output_linear.bias
    copy_checked(loop, weights)
    return loop


def torch_from_batched(batched):
    """torch.nn.MultiheadAttention holding a batched layer's weights."""
    hidden = batched.output_linear.in_features
    reference = nn.MultiheadAttention(
        hidden, batched.num_heads, batch_first=True
    )
    copy_checked(
        reference,
        {
            "in_proj_weight": batched.qkv.weight,  # same [q; k; v] layout
            "in_proj_bias": batched.qkv.bias,
            "out_proj.weight": batched.output_linear.weight,
            "out_proj.bias": batched.output_linear.bias,
        },
    )
    return reference


def batched_from_bert(bert_attention):
    """The batched layer holding a Hugging Face BertAttention's weights."""
    attn, dense = bert_attention.self, bert_attention.output.dense
    config = AttentionConfig(dense.in_features, attn.num_attention_heads)
    layer = BatchedMultiHeadAttention(config)
    parts = (attn.query, attn.key, attn.value)
    copy_checked(
        layer,
        {
            "qkv.weight": torch.cat([p.weight for p in parts]),  # (3C, C)
            "qkv.bias": torch.cat([p.bias for p in parts]),  # (3C,)
            "output_linear.weight": dense.weight,
            "output_linear.bias": dense.bias,
        },
    )
    return layer


def causal_mask(num_tokens):
    """(T, T): token i may attend to tokens 0..i, never to the future."""
    return torch.ones(num_tokens, num_tokens, dtype=torch.bool).tril()


def padding_mask(lengths, num_tokens):
    """(B, T, T): in sequence b, every query may attend to the first
    lengths[b] tokens; the padding after them is never attended to."""
    lengths = torch.as_tensor(lengths)
    keys = torch.arange(num_tokens) < lengths[:, None]  # (B, T)
    return keys[:, None, :].expand(-1, num_tokens, -1)  # (B, T, T)
