"""Every number "Sharing keys and values" states, from one call:
`sharing_results` returns a SharingKV record. Its parts: the checks of
the grouped layer against three references and of decoding with a KV
cache against the full pass (`Checks`), the time a decoding step takes
with and without the cache (`Timing`), the cache's memory (`Memory`), and
what sharing does to a loaded BERT (`grouped_bert.Conversion`). The
figures and tables are drawn in mhabook/views/sharing.py.

Shape letters: B batch, T tokens, d the width, h query heads, g key/value
heads, d_k = d // h, S tokens so far, L layers.
"""

from dataclasses import dataclass
from functools import partial

import torch
import torch.nn.functional as F
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaAttention

from ..layers.all_heads import (
    BatchedMultiHeadAttention,
    causal_mask,
    copy_checked,
)
from ..layers.sharing_kv import (
    GroupedAttentionConfig,
    GroupedQueryAttention,
    KVCache,
)
from . import grouped_bert
from .costs import (
    PairedRatio,
    median_term,
    paired_ratio,
    time_interleaved,
)
from .grouped_bert import mean_interval  # noqa: F401  (for the page)

# The references


def grouped_from_llama(llama_attention):
    """Copy a Hugging Face LlamaAttention's q/k/v/o projections into a
    GroupedQueryAttention, after checking their names and shapes."""
    config = llama_attention.config
    source = llama_attention.state_dict()
    parts = ("weight", "bias") if config.attention_bias else ("weight",)
    expected = {f"{p}_proj.{w}" for p in "qkvo" for w in parts}
    if source.keys() != expected:
        raise ValueError(
            f"not a LlamaAttention block: expected the parameters "
            f"{sorted(expected)}, found {sorted(source)}"
        )
    layer = GroupedQueryAttention(config)
    if layer.head_dim != llama_attention.head_dim:
        raise ValueError(
            f"head_dim {llama_attention.head_dim} is not hidden_size / "
            f"num_attention_heads = {layer.head_dim}; this layer needs "
            f"them equal"
        )
    weights = {}
    for w in parts:
        weights[f"q.{w}"] = source[f"q_proj.{w}"]
        weights[f"kv.{w}"] = torch.cat(  # keys first, then values
            [source[f"k_proj.{w}"], source[f"v_proj.{w}"]]
        )
        weights[f"output_linear.{w}"] = source[f"o_proj.{w}"]
    copy_checked(layer, weights)
    return layer


def grouped_from_batched(batched):
    """The g = h grouped layer holding a batched layer's weights: the
    first third of its qkv rows goes to q, the rest to kv."""
    hidden, h = batched.output_linear.in_features, batched.num_heads
    layer = GroupedQueryAttention(GroupedAttentionConfig(hidden, h, h))
    weight, bias = batched.qkv.weight, batched.qkv.bias  # rows [q; k; v]
    copy_checked(
        layer,
        {
            "q.weight": weight[:hidden],  # (d, d)
            "q.bias": bias[:hidden],  # (d,)
            "kv.weight": weight[hidden:],  # (2d, d): keys, then values
            "kv.bias": bias[hidden:],  # (2C,)
            "output_linear.weight": batched.output_linear.weight,
            "output_linear.bias": batched.output_linear.bias,
        },
    )
    return layer


def gap(a, b):
    """The largest difference between a and b, after checking that they
    are equal to within 1e-5."""
    if not torch.allclose(a, b, rtol=1e-5, atol=1e-5):
        raise AssertionError(
            f"the grouped layer and its reference differ by "
            f"{(a - b).abs().max().item():.1e}, more than 1e-5"
        )
    return (a - b).abs().max().item()


def fused_output(layer, x, is_causal):
    """The grouped layer's own projections, attended by PyTorch's fused
    F.scaled_dot_product_attention with enable_gqa=True (no copies)."""
    B, T, d = x.shape
    h, g, d_k = layer.num_heads, layer.num_kv_heads, layer.head_dim
    Q = layer.q(x).view(B, T, h, d_k).transpose(1, 2)  # (B, h, T, d_k)
    kv = layer.kv(x).view(B, T, 2, g, d_k)  # (B, T, 2, g, d_k)
    K, V = kv.permute(2, 0, 3, 1, 4)  # 2 x (B, g, T, d_k)
    context = F.scaled_dot_product_attention(
        Q, K, V, is_causal=is_causal, enable_gqa=True
    )  # (B, h, T, d_k)
    return layer.output_linear(context.transpose(1, 2).reshape(B, T, d))


def random_llama(hidden_size, heads, kv_heads):
    """A randomly initialised Hugging Face LlamaAttention, in eval mode."""
    config = LlamaConfig(
        hidden_size=hidden_size,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        attn_implementation="eager",  # returns its attention weights
    )
    return LlamaAttention(config, layer_idx=0).eval()


def llama_output(llama, x, is_causal):
    """(output, weights) of LlamaAttention with its rotation turned off
    (cos 1, sin 0: the identity) and, if causal, its additive mask."""
    B, T, _ = x.shape
    cos = torch.ones(B, T, llama.head_dim)  # rotation by angle 0:
    sin = torch.zeros(B, T, llama.head_dim)  # the identity
    mask = None
    if is_causal:
        mask = torch.zeros(T, T).masked_fill(~causal_mask(T), -torch.inf)
        mask = mask.expand(B, 1, T, T)  # (B, 1, T, T), added to scores
    return llama(x, position_embeddings=(cos, sin), attention_mask=mask)


@dataclass(frozen=True)
class Checks:
    """The grouped layer against three references, and decoding with a
    cache against the full causal pass: the largest differences."""

    pairs: tuple  # the (h, g) checked, each with and without a causal mask
    largest: dict  # reference -> largest difference over its checks
    counts: dict  # reference -> how many tensors were compared
    decode_kv_heads: tuple  # the g decoded with a cache (h = 8)
    decode_steps: int  # tokens decoded one at a time
    decode_gap: float  # largest difference, decoded vs full pass

    @property
    def largest_gap(self):
        return max(self.largest.values())


def check_like_checked(layer_class, h=8, g=2, head_dim=8, seed=0):
    """Refuse a grouped-attention class (the page's, after a reader's
    edit) whose outputs differ from those of the GroupedQueryAttention that
    `check_references` checks, given the same weights and inputs."""
    config = GroupedAttentionConfig(head_dim * h, h, g)
    torch.manual_seed(seed)
    checked, ours = GroupedQueryAttention(config), layer_class(config)
    ours.load_state_dict(checked.state_dict())
    x = torch.randn(2, 5, config.hidden_size)
    with torch.no_grad():
        difference = (ours(x)[0] - checked(x)[0]).abs().max().item()
    if difference > 1e-5:
        raise ValueError(
            f"this GroupedQueryAttention differs by {difference:.1e} from "
            f"the one checked against PyTorch and Llama: query head i reads "
            f"key/value head i // (h // g), so check how K and V are shared "
            f"(repeat_interleave, not repeat)"
        )


def check_references(pairs, head_dim=8, tokens=7, seed=0):
    """Checks of GroupedQueryAttention: equal to BatchedMultiHeadAttention
    when g = h, to PyTorch's fused kernel with enable_gqa=True and to
    Llama's attention for every (h, g) in pairs, with and without a
    causal mask; and, for g = h, h / 4 and 1 with h = 8, decoding token by
    token with a KVCache equal to the full pass under a causal mask."""
    torch.manual_seed(seed)
    gaps = {"multi-head (g = h)": [], "fused, enable_gqa": [], "Llama": []}
    with torch.no_grad():
        for h, g in pairs:
            llama = random_llama(head_dim * h, h, g)
            layer = grouped_from_llama(llama)
            mha = BatchedMultiHeadAttention(llama.config)
            x = torch.randn(2, tokens, head_dim * h)
            for mask in (None, causal_mask(tokens)):
                causal = mask is not None
                out, weights = layer(x, mask)
                ref, ref_weights = llama_output(llama, x, causal)
                gaps["Llama"] += [gap(out, ref), gap(weights, ref_weights)]
                fused = fused_output(layer, x, causal)
                gaps["fused, enable_gqa"].append(gap(out, fused))
                if g == h:
                    both = zip(
                        grouped_from_batched(mha)(x, mask), mha(x, mask)
                    )
                    gaps["multi-head (g = h)"] += [gap(a, b) for a, b in both]
        kv_heads, steps = (8, 2, 1), 12
        x = torch.randn(2, steps, 8 * head_dim)
        decode = []
        for g in kv_heads:
            layer = GroupedQueryAttention(
                GroupedAttentionConfig(8 * head_dim, 8, g)
            )
            full, _ = layer(x, causal_mask(steps))  # (B, T, d)
            cache = KVCache(2, g, max_tokens=steps, head_dim=head_dim)
            out = [
                layer(x[:, t : t + 1], cache=cache)[0] for t in range(steps)
            ]
            decode.append(gap(torch.cat(out, dim=1), full))
    return Checks(
        pairs=tuple(pairs),
        largest={name: max(v) for name, v in gaps.items() if v},
        counts={name: len(v) for name, v in gaps.items() if v},
        decode_kv_heads=kv_heads,
        decode_steps=steps,
        decode_gap=max(decode),
    )


# Timing


@dataclass(frozen=True)
class Timing:
    """Seconds per decoding step of one GroupedQueryAttention layer, with
    and without a KV cache, at S tokens so far. Each time is the mean
    per call of a block of calls; the repeats are interleaved
    (time_interleaved), so ratios are paired within a repeat (paired_ratio:
    a median and its 95% bootstrap interval)."""

    width: int
    num_heads: int
    num_kv_heads: int
    lengths: tuple  # S, shortest first
    repeats: int
    min_run_time: float  # seconds of calls behind each time
    without: torch.Tensor  # (repeats, len(lengths)): all S tokens again
    cached: torch.Tensor  # (repeats, len(lengths)): one token, S cached
    without_steps: tuple  # a Term (median, 95% interval) at each S
    cached_steps: tuple  # a Term at each S
    speedups: tuple  # a PairedRatio, without / cached, at each S
    growth_without: PairedRatio  # without, longest S / half of it
    growth_with: PairedRatio  # cached, longest S / shortest S
    stack_layers: int  # layers of the stack timed at the longest S
    stack_speedup: PairedRatio  # the stack's without / cached, longest S

    @property
    def half(self):
        """The length the longest one is compared with: half of it."""
        return self.lengths[-1] // 2

    @property
    def first_fall(self):
        """(S, next S): the first two lengths between which the cached
        step's median time fell, or None when it rose (or held) from each
        length to the next. One noisy length can make it fall."""
        medians = [term.median for term in self.cached_steps]
        for i, (a, b) in enumerate(zip(medians, medians[1:])):
            if b < a:
                return self.lengths[i], self.lengths[i + 1]
        return None

    @property
    def speedup(self):
        """without / cached at the longest S."""
        return self.speedups[-1]

    def flops_without(self, S):
        """FLOPs of the step without a cache (a multiply-add is two): token
        S's query and output projections 4 d^2, the keys and values of all
        S tokens 4 S d g d_k, its scores and weighted values 4 S d."""
        d, g, d_k = self.width, self.num_kv_heads, self.width // self.num_heads
        return 4 * d * d + 4 * S * d * g * d_k + 4 * S * d

    def flops_cached(self, S):
        """FLOPs of the cached step: as `flops_without`, but the key and
        value of token S alone, 4 d g d_k."""
        d, g, d_k = self.width, self.num_kv_heads, self.width // self.num_heads
        return 4 * d * d + 4 * d * g * d_k + 4 * S * d

    @property
    def flop_ratio(self):
        """Without the cache over with it, in FLOPs, at the longest S."""
        longest = self.lengths[-1]
        return self.flops_without(longest) / self.flops_cached(longest)

    @property
    def stack_flop_ratio(self):
        """As `flop_ratio`, for the stack: without the cache, each layer
        below the top runs on all S tokens again (projections 4 S d^2 +
        4 S d g d_k, scores and weighted values 4 S^2 d) and the top one
        as `flops_without`; with it, each layer as `flops_cached`."""
        S, d = self.lengths[-1], self.width
        g, d_k = self.num_kv_heads, self.width // self.num_heads
        below = 4 * S * d * d + 4 * S * d * g * d_k + 4 * S * S * d
        without = (self.stack_layers - 1) * below + self.flops_without(S)
        return without / (self.stack_layers * self.flops_cached(S))

    @property
    def flop_growth(self):
        """The rerun's FLOPs at the longest S over those at half of it."""
        longest = self.lengths[-1]
        return self.flops_without(longest) / self.flops_without(self.half)


def decoding_steps(
    width, num_heads, num_kv_heads, max_tokens, num_layers=1, seed=0
):
    """(step_without, step_with): the step that produces token S in a
    stack of `num_layers` grouped layers, each fed the outputs of the one
    below. Without a cache, each layer below the top runs on all S tokens
    again (under a causal mask), since the layer above needs all their
    outputs; the top layer (the only one, in a stack of one), whose output
    is needed for token S alone, computes every key and value but only
    token S's query. With a cache, token S goes through each layer against
    the S - 1 keys and values that layer cached."""
    torch.manual_seed(seed)
    config = GroupedAttentionConfig(width, num_heads, num_kv_heads)
    layers = [GroupedQueryAttention(config).eval() for _ in range(num_layers)]
    tokens = torch.randn(1, max_tokens, width)
    d_k = layers[0].head_dim
    caches = [KVCache(1, num_kv_heads, max_tokens, d_k) for _ in layers]
    with torch.inference_mode():  # fill each layer's cache once
        x, mask = tokens[:, : max_tokens - 1], causal_mask(max_tokens - 1)
        for layer, cache in zip(layers, caches):
            x = layer(x, mask, cache)[0]  # layer l's input: l - 1's output

    top = KVCache(1, num_kv_heads, max_tokens, d_k)  # a stack's top, refilled

    def step_without(S):  # every key and value of all S tokens again
        x, mask = tokens[:, :S], causal_mask(S)
        for layer in layers[:-1]:
            x = layer(x, mask)[0]
        layer = layers[-1]  # keys and values of all S, token S's query
        kv = layer.kv(x[:, :-1]).view(1, S - 1, 2, num_kv_heads, d_k)
        top.length = 0
        top.append(*kv.permute(2, 0, 3, 1, 4))
        return layer(x[:, -1:], cache=top)[0][:, -1]

    def step_with(S):  # token S through each layer, S - 1 cached
        x = tokens[:, S - 1 : S]
        for layer, cache in zip(layers, caches):
            cache.length = S - 1  # forget what this step wrote last time
            x = layer(x, cache=cache)[0]
        return x

    return step_without, step_with


def time_decoding(
    width=512,
    num_heads=8,
    num_kv_heads=2,
    lengths=(32, 64, 128, 256, 512),
    repeats=15,
    min_run_time=0.02,
    stack_layers=2,
):
    """Timing of one layer's decoding steps at each S in lengths (which
    must hold the longest one's half), with and without the cache, and of
    a stack of `stack_layers` layers at the longest S; all interleaved."""
    lengths = tuple(sorted(lengths))
    if lengths[0] < 2 or lengths[-1] // 2 not in lengths or repeats < 2:
        raise ValueError(
            f"need lengths of 2 tokens or more that hold half the longest "
            f"(e.g. 256 and 512), and repeats >= 2; got {lengths}, {repeats}"
        )
    if stack_layers < 2:
        raise ValueError(
            f"stack_layers is the stack timed beside one layer: give 2 or "
            f"more, got {stack_layers}"
        )
    sizes, S_max = (width, num_heads, num_kv_heads), lengths[-1]
    without, step = decoding_steps(*sizes, S_max)
    fns = [partial(without, S) for S in lengths]
    fns += [partial(step, S) for S in lengths]
    stack = decoding_steps(*sizes, S_max, num_layers=stack_layers)
    fns += [partial(fn, S_max) for fn in stack]  # columns 2n and 2n + 1
    with torch.inference_mode():
        times = time_interleaved(fns, repeats, min_run_time)
    n = len(lengths)  # columns: without (n), then cached (n)
    half = lengths.index(lengths[-1] // 2)
    return Timing(
        width=width,
        num_heads=num_heads,
        num_kv_heads=num_kv_heads,
        lengths=lengths,
        repeats=repeats,
        min_run_time=min_run_time,
        without=times[:, :n],
        cached=times[:, n : 2 * n],
        without_steps=tuple(median_term(times[:, i]) for i in range(n)),
        cached_steps=tuple(median_term(times[:, n + i]) for i in range(n)),
        speedups=tuple(paired_ratio(times, i, n + i) for i in range(n)),
        growth_without=paired_ratio(times, n - 1, half),
        growth_with=paired_ratio(times, 2 * n - 1, n),
        stack_layers=stack_layers,
        stack_speedup=paired_ratio(times, 2 * n, 2 * n + 1),
    )


# Memory

# layers L, query heads h, key/value heads g, d_k, as each source states;
# decoders only: BERT looks both ways, so it keeps no cache
MODELS = {
    "Llama 2 7B": (32, 32, 32, 128),
    "Llama 3 8B": (32, 32, 8, 128),
    "Mistral 7B v0.1": (32, 32, 8, 128),
    "Falcon-7B": (32, 71, 1, 64),
}
BERT_BASE = (12, 12, 12, 64)  # L, h, g, d_k: the width for the parameters


def kv_cache_bytes(layers, kv_heads, head_dim, tokens, bytes_per_number=2):
    """2 L g d_k S b: keys and values of every layer for S tokens."""
    sizes = dict(layers=layers, kv_heads=kv_heads, head_dim=head_dim)
    sizes |= dict(tokens=tokens, bytes_per_number=bytes_per_number)
    negative = {name: n for name, n in sizes.items() if n < 0}
    if negative:
        raise ValueError(
            f"sizes count layers, heads, numbers, tokens and bytes, so none "
            f"is below 0: got {negative}; use sizes of 0 or more"
        )
    empty = {name: n for name, n in sizes.items() if n == 0}
    empty.pop("tokens", None)  # an empty cache holds no bytes
    if empty:
        raise ValueError(
            f"a model has at least one layer, key/value head, feature and "
            f"byte per number: got {empty}; use 1 or more"
        )
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_number


def attention_parameters(hidden_size, num_heads, num_kv_heads):
    """The parameters of one GroupedQueryAttention layer."""
    config = GroupedAttentionConfig(hidden_size, num_heads, num_kv_heads)
    layer = GroupedQueryAttention(config)
    return sum(p.numel() for p in layer.parameters())


@dataclass(frozen=True)
class Memory:
    """The KV cache of one sequence in 16-bit numbers, for MODELS."""

    models: dict  # name -> (L, h, g, d_k)
    tokens: int  # the sequence length of `gib`
    kib_per_token: dict  # name -> KiB per token, all layers
    gib: dict  # name -> GiB at `tokens` tokens
    llama_ratio: float  # Llama 2 7B's cache / Llama 3 8B's
    params_mqa_share: float  # MQA's parameters / MHA's, BERT-base's width
    mqa_cache_ratio: int  # MHA's cache / MQA's, BERT-base's h
    mistral_window_mib: float  # Mistral 7B v0.1's cache: a 4,096-token window


def memory(models=MODELS, tokens=32768, base=BERT_BASE):
    """Memory of the cache for `models`, and what sharing keeps of an
    attention layer's parameters at the shape `base` (BERT-base's)."""
    _, h, _, d_k = base
    mistral = [models["Mistral 7B v0.1"][i] for i in (0, 2, 3)]  # L, g, d_k
    return Memory(
        models=dict(models),
        tokens=tokens,
        kib_per_token={
            name: kv_cache_bytes(L, g, d_k, 1) / 2**10
            for name, (L, _, g, d_k) in models.items()
        },
        gib={
            name: kv_cache_bytes(L, g, d_k, tokens) / 2**30
            for name, (L, _, g, d_k) in models.items()
        },
        llama_ratio=models["Llama 2 7B"][2] / models["Llama 3 8B"][2],
        params_mqa_share=attention_parameters(h * d_k, h, 1)
        / attention_parameters(h * d_k, h, h),
        mqa_cache_ratio=kv_cache_bytes(1, h, d_k, 1)
        // kv_cache_bytes(1, 1, d_k, 1),
        mistral_window_mib=kv_cache_bytes(*mistral, 4096) / 2**20,
    )


# The page's one call


def check_shareable(model):
    """Refuse a model whose layers have one head: g = h = 1, nothing to
    share, so the page's steps down in g would be none."""
    h = model.config.num_attention_heads
    if h < 2:
        raise ValueError(
            f"the model has {h} attention head per layer, so there is no "
            f"smaller number g of key/value heads to share: load a "
            f"checkpoint with 2 or more heads per layer (MHA_CHECKPOINT)"
        )


@dataclass(frozen=True)
class SharingKV:
    """Every number "Sharing keys and values" states."""

    checks: Checks
    timing: Timing
    memory: Memory
    conversion: grouped_bert.Conversion


def sharing_results(
    model,
    tokenizer,
    sentences,
    pairs=((8, 8), (8, 4), (8, 2), (8, 1), (12, 3), (12, 12)),
    timing=None,
    probe_size=40,
):
    """SharingKV: the checks, the timing (time_decoding's keyword
    arguments in `timing`, its defaults if None), the memory, and the
    conversion of `model` measured on `sentences`. A model of one head
    per layer is refused: it has no key/value heads to share."""
    check_shareable(model)
    return SharingKV(
        checks=check_references(pairs),
        timing=time_decoding(**(timing or {})),
        memory=memory(),
        conversion=grouped_bert.conversion(
            model, tokenizer, sentences, probe_size
        ),
    )
