"""Removing heads through the output projection.

Generated from book/heads_needed.ipynb by `make lib`: edit the notebook,
then run `make lib`.
"""

from contextlib import contextmanager

import torch


def group_by_layer(heads, num_layers, num_heads):
    """{layer: [head, ...]} from (layer, head) pairs, after checking them."""
    grouped = {}
    for pair in heads:
        layer, head = (int(i) for i in pair)
        if not (0 <= layer < num_layers and 0 <= head < num_heads):
            raise ValueError(
                f"head {(layer, head)} does not exist: the model has "
                f"layers 0-{num_layers - 1} and heads 0-{num_heads - 1}; "
                f"pass (layer, head) pairs in those ranges"
            )
        grouped.setdefault(layer, set()).add(head)
    return {layer: sorted(found) for layer, found in sorted(grouped.items())}


def zero_heads_hook(heads, num_heads):
    """A forward pre-hook for W^O: zero the context slices of `heads`."""

    def hook(module, args):
        (context,) = args  # (B, T, C): the heads' outputs side by side
        B, T, C = context.shape
        keep = torch.ones(num_heads, dtype=context.dtype)
        keep[heads] = 0.0
        per_head = context.view(B, T, num_heads, C // num_heads)
        per_head = per_head * keep[:, None]  # (B, T, h, d_k)
        return (per_head.view(B, T, C),)  # (B, T, C)

    return hook


@contextmanager
def heads_removed(model, heads):
    """Inside the `with` block, `model` runs without `heads`, a list of
    (layer, head) pairs; the hooks go when the block ends, even on error."""
    layers = model.base_model.encoder.layer
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
