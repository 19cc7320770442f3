"""Copying one attention layer's weights into another layout.

Section 3 ("All heads at once") shows the one conversion its lesson needs,
`batched_from_loop`, in the page. The others live here:

    copy_checked(layer, weights)   load weights after checking keys, shapes
    loop_from_batched(batched)     batched layer -> the loop layer of sec. 2
    torch_from_batched(batched)    batched layer -> torch.nn.MultiheadAttention
    batched_from_bert(attention)   Hugging Face BertAttention -> batched layer

Every layout keeps the same numbers: the batched layer's `qkv` rows are
every head's query rows (head 0 first), then their key rows, then their
value rows, exactly as `nn.MultiheadAttention.in_proj_weight` stores them.
`tests/unit/test_convert.py` checks that each conversion round-trips the
weights exactly.
"""

import torch
from torch import nn

from .checks import check_weights
from .layers.many_heads import MultiHeadAttention


def _batched_layer():
    # all_heads imports this module, so it is read when first needed
    from .layers.all_heads import AttentionConfig, BatchedMultiHeadAttention

    return AttentionConfig, BatchedMultiHeadAttention


def copy_checked(layer, weights):
    """Load weights into layer after checking every key and shape."""
    check_weights(layer.state_dict(), weights)
    layer.load_state_dict(weights)
    return layer


def _named(prefix, module):
    return {f"{prefix}{k}": v for k, v in module.state_dict().items()}


def loop_from_batched(batched):
    """The loop layer of section 2 holding a batched layer's weights."""
    AttentionConfig, _ = _batched_layer()
    h, d_k = batched.num_heads, batched.head_dim
    config = AttentionConfig(batched.output_linear.in_features, h)
    weights = _named("output_linear.", batched.output_linear)
    for name, value in batched.qkv.state_dict().items():  # 3h blocks of d_k
        for n, rows in enumerate(value.split(d_k)):  # q/k/v, then the head
            weights[f"heads.{n % h}.{'qkv'[n // h]}.{name}"] = rows
    return copy_checked(MultiHeadAttention(config), weights)


def torch_from_batched(batched):
    """torch.nn.MultiheadAttention holding a batched layer's weights."""
    d, h = batched.output_linear.in_features, batched.num_heads
    weights = _named("in_proj_", batched.qkv)  # the same [q; k; v] rows
    weights |= _named("out_proj.", batched.output_linear)
    reference = nn.MultiheadAttention(d, h, batch_first=True)
    return copy_checked(reference, weights)


def batched_from_bert(bert_attention):
    """The batched layer holding a Hugging Face BertAttention's weights
    (its four projections; not its LayerNorm)."""
    AttentionConfig, BatchedMultiHeadAttention = _batched_layer()
    if not hasattr(bert_attention, "self"):
        raise TypeError(
            f"batched_from_bert takes a BertAttention, got "
            f"{type(bert_attention).__name__}: pass a layer's .attention, "
            f"such as model.encoder.layer[0].attention"
        )
    attn, dense = bert_attention.self, bert_attention.output.dense
    parts = (attn.query, attn.key, attn.value)
    config = AttentionConfig(dense.in_features, attn.num_attention_heads)
    weights = _named("output_linear.", dense)
    weights["qkv.weight"] = torch.cat([p.weight for p in parts])  # (3d, d)
    weights["qkv.bias"] = torch.cat([p.bias for p in parts])  # (3d,)
    return copy_checked(BatchedMultiHeadAttention(config), weights)
