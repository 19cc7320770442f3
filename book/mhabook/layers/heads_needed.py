"""Removing heads through the output projection.

Generated from book/heads_needed.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

from contextlib import contextmanager

import torch
import torch.nn.functional as F

from mhabook.deeper_checks import bert_layers, check_heads, group_by_layer

from .all_heads import loop_from_batched


def zero_heads_hook(heads, num_heads):
    """A forward pre-hook for W^O: zero the context slices of `heads`."""
    check_heads(heads, num_heads)  # else a ValueError naming the range

    def hook(module, args):
        (context,) = args  # (B, T, d): the heads' outputs side by side
        B, T, d = context.shape
        keep = torch.ones(num_heads, dtype=context.dtype)
        keep[heads] = 0.0
        per_head = context.view(B, T, num_heads, d // num_heads)
        per_head = per_head * keep[:, None]  # (B, T, h, d_k)
        return (per_head.view(B, T, d),)  # (B, T, d)

    return hook


def without_head(batched, i, hidden_state):
    """(B, T, d): what the layer outputs when built without head i: the
    loop layer's other heads, concatenated, through W^O minus W^O_i."""
    loop = loop_from_batched(batched)
    del loop.heads[i]  # head i's query, key and value weights are gone
    d, d_k = batched.output_linear.in_features, batched.head_dim
    keep = torch.arange(d) // d_k != i  # the columns of W^O kept
    W_O = batched.output_linear.weight[:, keep]  # (d, d - d_k)
    Z = [head(hidden_state)[0] for head in loop.heads]  # (B, T, d_k) each
    return F.linear(torch.cat(Z, dim=-1), W_O, batched.output_linear.bias)


@contextmanager
def heads_removed(model, heads):
    """Inside the `with` block, `model` runs without `heads`, a list of
    (layer, head) pairs; the hooks go when the block ends, even on error."""
    layers = bert_layers(model)  # its encoder's layers, or a TypeError
    num_heads = model.config.num_attention_heads
    grouped = group_by_layer(heads, len(layers), num_heads)
    handles = [
        layers[i].attention.output.dense.register_forward_pre_hook(
            zero_heads_hook(found, num_heads)
        )
        for i, found in grouped.items()
    ]
    try:
        yield model
    finally:
        for handle in handles:
            handle.remove()
