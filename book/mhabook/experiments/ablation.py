"""Switching heads off and reading attention three ways: the reference
that Lab 3's live model (mhabook.views.live, run in the browser) is
checked against, and the ranking of heads its presets switch off.

A head mask xi (L x h: 1 keeps a head, 0 switches it off) zeroes a head's
slice of the context just before W^O, as Michel et al. (2019) do; the
head's attention weights are still computed. `masked_run` applies it with
forward pre-hooks on each block's W^O (mhabook.layers.heads_needed's
`zero_heads_hook`, with a mask of any values) and returns what the live
model returns: the attention weights, each head's value norms
||f_h(x_j)|| = ||(x_j W_V + b_V)_h W^O_h|| (Kobayashi et al. 2020) and the
last hidden states. `mean_pooled` pools them as sentence-transformers
does for all-MiniLM-L6-v2: the mean over the tokens, normalised.
`value_weighted` and `rollout` are the lab's other two readings of the
weights; `head_ranking` ranks the heads as "Are all heads needed?" does.

Shape letters: B batch, T tokens, d the width, h heads, d_k = d // h,
L layers.
"""

from contextlib import contextmanager

import torch
import torch.nn.functional as F

from . import pruning


def check_head_mask(mask, num_layers, num_heads):
    """`mask` as a float tensor (L, h) of 0s and 1s; None means all 1s.
    Anything else raises a ValueError naming the shape expected."""
    shape = (num_layers, num_heads)
    if mask is None:
        return torch.ones(shape)
    try:
        mask = torch.as_tensor(mask, dtype=torch.float32)
    except (TypeError, ValueError) as error:
        raise ValueError(
            f"the head mask must be {num_layers} lists (layers) of "
            f"{num_heads} numbers (heads), each 1 (keep) or 0 (off); "
            f"got {mask!r}"
        ) from error
    if tuple(mask.shape) != shape:
        raise ValueError(
            f"the head mask must have shape {shape} (layers, heads), each "
            f"entry 1 (keep) or 0 (off); got shape {tuple(mask.shape)}"
        )
    if not ((mask == 0) | (mask == 1)).all():
        raise ValueError(
            f"the head mask of shape {shape} (layers, heads) may hold only "
            f"1 (keep) and 0 (off); got {sorted(set(mask.flatten().tolist()))}"
        )
    return mask


def mask_phrase(mask):
    """What a head mask (L, h) switches off, in words: "layer 5 off" when
    it is one whole layer, else "3 heads off" (or "no head off")."""
    off = torch.as_tensor(mask) == 0  # (L, h)
    layers = off.all(-1).nonzero().flatten().tolist()
    if len(layers) == 1 and off.sum() == off.shape[-1]:
        return f"layer {layers[0]} off"
    count = int(off.sum())
    return {0: "no head off", 1: "1 head off"}.get(count, f"{count} heads off")


def masked_context_hook(keep):
    """A forward pre-hook for W^O: multiply head k's context slice by
    keep[k] (h,), a tensor; zero switches the head off."""

    def hook(module, args):
        (context,) = args  # (B, T, d): the heads' outputs side by side
        B, T, d = context.shape
        h = keep.shape[0]
        per_head = context.view(B, T, h, d // h) * keep[:, None]
        return (per_head.view(B, T, d),)

    return hook


def value_norms(values, W_O, num_heads):
    """||f_h(x_j)||: each head's value vectors through its slice of W^O.

    values: (B, T, d), x W_V + b_V of one layer; W_O: (d, d), the weight
    of its output projection (nn.Linear: out x in). Returns (B, h, T)."""
    B, T, d = values.shape
    d_k = d // num_heads
    per_head = values.view(B, T, num_heads, d_k)
    W = W_O.view(W_O.shape[0], num_heads, d_k)  # (d, h, d_k): out x (head, in)
    f = torch.einsum("bthd,ohd->bhto", per_head, W)  # (B, h, T, d)
    return f.norm(dim=-1)


@contextmanager
def head_mask_hooks(model, head_mask):
    """Inside the block, `model` (a BERT) runs with `head_mask` (L, h) and
    records each layer's value vectors in the list it yields."""
    layers = model.base_model.encoder.layer
    values = []
    handles = []
    for i, layer in enumerate(layers):
        handles.append(
            layer.attention.output.dense.register_forward_pre_hook(
                masked_context_hook(head_mask[i])
            )
        )
        handles.append(
            layer.attention.self.value.register_forward_hook(
                lambda module, args, output: values.append(output)
            )
        )
    try:
        yield values
    finally:
        for handle in handles:
            handle.remove()


def masked_run(model, inputs, head_mask=None):
    """One BERT run under `head_mask` (L, h; None: every head on).

    inputs: the tokenizer's tensors (input_ids, attention_mask,
    token_type_ids), batch B. Returns (attention (B, L, h, T, T), value
    norms (B, L, h, T), last hidden states (B, T, d))."""
    config = model.config
    mask = check_head_mask(
        head_mask, config.num_hidden_layers, config.num_attention_heads
    )
    layers = model.base_model.encoder.layer
    with head_mask_hooks(model, mask) as values, torch.no_grad():
        outputs = model(**inputs, output_attentions=True)
        norms = [
            value_norms(v, layer.attention.output.dense.weight, mask.shape[1])
            for v, layer in zip(values, layers)
        ]
    attention = torch.stack(outputs.attentions, dim=1)
    return attention, torch.stack(norms, dim=1), outputs.last_hidden_state


def mean_pooled(hidden, attention_mask):
    """(B, d): the mean of each row's real tokens, normalised to length 1,
    as sentence-transformers pools all-MiniLM-L6-v2."""
    weights = attention_mask.to(hidden.dtype)[..., None]  # (B, T, 1)
    mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
    return F.normalize(mean, dim=-1)


def similarity(model, tokenizer, text_a, text_b, head_mask=None):
    """The cosine of A's and B's sentence embeddings, each sentence encoded
    alone under `head_mask`; None when B is empty."""
    if not str(text_b).strip():
        return None
    batch = tokenizer([text_a, text_b], padding=True, return_tensors="pt")
    _, _, hidden = masked_run(model, batch, head_mask)
    a, b = mean_pooled(hidden, batch["attention_mask"])
    return float(a @ b)


def value_weighted(attention, norms):
    """||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||: attention (..., T, T)
    scaled by the value norms of the key tokens (..., T)."""
    return attention * norms[..., None, :]


def rollout(attention, head_mask=None):
    """Attention rolled out across layers (Abnar and Zuidema 2020).

    attention: (L, h, T, T) of one example. Each layer's weights, averaged
    over its heads that `head_mask` (L, h) keeps (all by default), are
    mixed half and half with the identity (the residual stream), rows
    renormalised, and multiplied from layer 0 up; a layer with every head
    off mixes in the identity alone. Returns (L, T, T): row i of [l] is
    how much each input token reaches token i at the output of layer l."""
    L, h, T, _ = attention.shape
    keep = check_head_mask(head_mask, L, h).bool()
    eye = torch.eye(T, dtype=attention.dtype)
    rolled = eye
    out = []
    for i in range(L):
        if keep[i].any():
            averaged = attention[i][keep[i]].mean(0)  # (T, T)
        else:
            averaged = torch.zeros_like(eye)
        mixed = 0.5 * averaged + 0.5 * eye
        mixed = mixed / mixed.sum(-1, keepdim=True)
        rolled = mixed @ rolled
        out.append(rolled)
    return torch.stack(out)


def head_ranking(model, tokenizer, sentences, every=8):
    """Every (layer, head) pair, least important first, as "Are all heads
    needed?" ranks them (pruning.heads_needed_results' `order`, the rest
    of that page's study left out): a head's importance is 1 minus the
    mean cosine between each sentence's embedding with that head removed
    and without, on every `every`-th sentence."""
    L = len(model.base_model.encoder.layer)
    h = model.config.num_attention_heads
    chosen = list(sentences)[::every]
    if not chosen:
        raise ValueError(
            f"no sentences to rank the heads on (every {every}th of "
            f"{len(sentences)}): pass more sentences or a smaller `every`"
        )
    probe = pruning.Probe(model, tokenizer, chosen)
    heads = [(layer, i) for layer in range(L) for i in range(h)]
    importance = torch.stack(
        [1 - probe.cosines([head]).mean() for head in heads]
    )  # (L h,)
    return [heads[int(k)] for k in importance.argsort()]
