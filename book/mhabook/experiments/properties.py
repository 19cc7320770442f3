"""The six properties of a correct multi-head layer (section 3)."""

import copy

import torch

from ..layers import causal_mask


def layer_properties(layer, x):
    """{property: bool} for `layer`, a layer like BatchedMultiHeadAttention
    (one `qkv` projection, `output_linear`; layer(x, mask) returns the
    output and (B, h, T, T) weights), on an input x of (B, T, d)."""
    if not all(hasattr(layer, a) for a in ("qkv", "num_heads", "head_dim")):
        raise TypeError(
            f"layer_properties checks a batched layer, with one qkv "
            f"projection (BatchedMultiHeadAttention, AttentionLayer), not a "
            f"{type(layer).__name__}: pass batched_from_loop(loop) for a "
            f"loop layer"
        )
    dropout = [m for m in layer.modules() if isinstance(m, torch.nn.Dropout)]
    if layer.training and any(m.p > 0 for m in dropout):
        raise ValueError(
            "the layer is in training mode, so dropout changes its weights "
            "from call to call: call layer.eval() first"
        )
    B, T, d = x.shape
    if T < 2:
        raise ValueError(
            f"x has {T} token(s): give two or more, since a lone token always "
            f"gets weight 1 and its query and key get no gradient"
        )
    h, d_k = layer.num_heads, layer.head_dim
    with torch.no_grad():
        out, weights = layer(x)  # (B, T, d), (B, h, T, T)
        _, causal = layer(x, mask=causal_mask(T))
        changed = copy.deepcopy(layer)
        changed.qkv.weight[:d_k] *= 2  # head 0's query rows, doubled
        maps = changed(x)[1]
    moved = (maps - weights).abs().amax((0, 2, 3)) > 1e-6  # (h,)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    layer.zero_grad()
    layer(x)[0].sum().backward()
    grads = layer.qkv.weight.grad.view(3, h, d_k, d).abs().sum((2, 3))
    sums = torch.ones(B, h, T)
    return {
        "1. output shape = input shape": out.shape == x.shape,
        "2. one (T, T) map per head": weights.shape == (B, h, T, T),
        "3. rows >= 0 that sum to 1": bool((weights >= 0).all())
        and torch.allclose(weights.sum(-1), sums, atol=1e-6),
        "4. no weight on the future": bool((causal[..., future] == 0).all()),
        "5. no other head's map moves": not moved[1:].any(),
        "6. gradients reach every head": bool((grads > 0).all())
        and bool((layer.output_linear.weight.grad != 0).any()),
    }
