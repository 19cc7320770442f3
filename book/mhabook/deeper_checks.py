"""The bookkeeping the Going deeper pages' layers call: not the lesson.

The layers of heads_needed.ipynb and sharing_kv.ipynb are generated from
the pages and read like the lesson; they import these, as the chapter's
layers import `mhabook.checks`. A reader who edits a page still gets a
working layer or a ValueError that names the fix:

- `group_by_layer` and `check_heads`: the (layer, head) pairs and the
  heads that `heads_removed` and `zero_heads_hook` are given exist;
- `check_removed`: a model run without heads as the chapter's
  `heads_removed` runs it;
- `GroupedAttentionConfig` (Hugging Face's names for h and g) and
  `group_size_for`, the rule that g divides h;
- `check_fits`: keys and values that fit a `KVCache`;
- `check_decoded`: outputs decoded with the cache that match the full pass.
"""

from dataclasses import dataclass

import torch

from mhabook.checks import _whole, skippable  # skippable: for timing


def check_heads(heads, num_heads):
    """Refuse head numbers outside 0 .. num_heads - 1, or one number
    where a list is expected."""
    if not hasattr(heads, "__iter__"):
        raise ValueError(
            f"heads {heads!r}: pass a list of head numbers, such as "
            f"[{heads!r}]"
        )
    pairs = [head for head in heads if isinstance(head, (tuple, list))]
    if pairs:
        raise ValueError(
            f"heads holds {pairs[0]!r}, a (layer, head) pair: this takes one "
            f"layer's head numbers; group the pairs with group_by_layer"
        )
    if not all(0 <= int(head) < num_heads for head in heads):
        raise ValueError(
            f"heads {list(heads)}: a layer of this model has heads "
            f"0-{num_heads - 1}; pass heads in that range"
        )


def bert_layers(model):
    """The encoder layers of a Hugging Face BERT model, or a TypeError that
    says what `heads_removed` takes."""
    layers = getattr(getattr(model, "base_model", None), "encoder", None)
    if layers is None or not hasattr(layers, "layer"):
        raise TypeError(
            f"heads_removed takes a Hugging Face BERT model, such as "
            f"load_checkpoint()'s, not a {type(model).__name__}: for one of "
            f"the chapter's layers, register zero_heads_hook on its "
            f"output_linear"
        )
    return layers.layer


def group_by_layer(heads, num_layers, num_heads):
    """{layer: [head, ...]} from (layer, head) pairs, after checking them."""
    grouped = {}
    for pair in heads:
        if not hasattr(pair, "__len__") or len(pair) != 2:
            raise ValueError(
                f"{pair!r} is not a (layer, head) pair: pass a list of "
                f"pairs, such as [(0, 1)]"
            )
        layer, head = (int(i) for i in pair)
        if not (0 <= layer < num_layers and 0 <= head < num_heads):
            raise ValueError(
                f"head {(layer, head)} does not exist: the model has "
                f"layers 0-{num_layers - 1} and heads 0-{num_heads - 1};\n"
                f"pass (layer, head) pairs in those ranges"
            )
        grouped.setdefault(layer, set()).add(head)
    return {layer: sorted(found) for layer, found in sorted(grouped.items())}


@dataclass(frozen=True)
class GroupedAttentionConfig:
    """Hugging Face's names: h query heads share g key/value heads."""

    hidden_size: int
    num_attention_heads: int  # h
    num_key_value_heads: int  # g
    attention_bias: bool = True


def group_size_for(num_heads, num_kv_heads):
    """Return h // g, or explain which numbers of key/value heads work."""
    if not (_whole(num_heads) and _whole(num_kv_heads)):
        raise ValueError(
            f"head counts are whole numbers: got {num_heads!r} and "
            f"{num_kv_heads!r}; use int(...), such as 8 and 2"
        )
    if num_kv_heads < 1 or num_heads % num_kv_heads:
        fits = [g for g in range(1, num_heads + 1) if num_heads % g == 0]
        raise ValueError(
            f"{num_heads} query heads cannot share {num_kv_heads} key/value "
            f"heads in equal groups: g = num_key_value_heads must divide "
            f"h = num_attention_heads. Use one of {fits}."
        )
    return num_heads // num_kv_heads


@skippable
def check_fits(cache, stored, K, V):
    """Refuse keys and values that do not fit `cache`, a KVCache's keys
    (B, g, max_tokens, d_k) holding `stored` tokens, with an error that
    says what would fit."""
    B, g, room, d_k = cache.shape
    end = stored + K.shape[2]
    if V.shape != K.shape:
        raise ValueError(
            f"values {tuple(V.shape)} and keys {tuple(K.shape)} differ: "
            f"append one value per key, each of the keys' shape"
        )
    if K.shape != (B, g, K.shape[2], d_k):
        raise ValueError(
            f"keys {tuple(K.shape)} and values {tuple(V.shape)} do not "
            f"fit a cache of (B, g, max_tokens, d_k) = {(B, g, room, d_k)}. "
            f"Check that the keys are (B, g, T, d_k), in that order (the "
            f"permute or transpose that made them); if they are, make it "
            f"KVCache({K.shape[0]}, {K.shape[1]}, max_tokens, "
            f"{K.shape[-1]}), the layer's B, g and d_k"
        )
    if K.dtype != cache.dtype:
        raise TypeError(
            f"the keys are {K.dtype} but the cache holds {cache.dtype}: "
            f"make it KVCache(..., dtype={K.dtype}), the layer's dtype"
        )
    if end > room:
        raise ValueError(
            f"the cache has room for {room} tokens, not {end}: make it "
            f"with max_tokens at least the total the decoding reaches (the "
            f"prompt plus every token it writes; here at least {end})"
        )


def check_decoded(decoded, full, cache):
    """Refuse outputs decoded step by step with `cache` (a KVCache) that
    differ from `full`, the full pass's (B, T, d) under a causal mask."""
    same = decoded.shape == full.shape
    if not (same and torch.allclose(decoded, full, atol=1e-5)):
        raise ValueError(
            "decoding with the cache should give the full pass's outputs: "
            "decode every token; mask the full pass with causal_mask(T), a "
            f"step of n tokens with causal_mask(n). The cache holds "
            f"{cache.length} of the {full.shape[1]} tokens: append must "
            "advance its length and return only [:, :, :end]"
        )


def check_removed(changed, model, inputs, heads):
    """Refuse `changed`, `model`'s last hidden state on `inputs` with
    `heads` removed by a reader's `heads_removed`, where the chapter's
    (mhabook.layers) gives another."""
    from mhabook.layers.heads_needed import heads_removed  # its own check

    with torch.inference_mode(), heads_removed(model, heads):
        expected = model(**inputs).last_hidden_state
    if not torch.allclose(changed, expected, atol=1e-5):
        gap = (changed - expected).abs().max().item()
        raise ValueError(
            f"removing {heads} gives another output than the chapter's "
            f"heads_removed (by up to {gap:.2g}): put zero_heads_hook on "
            f"each layer's attention.output.dense, the input of W^O"
        )
