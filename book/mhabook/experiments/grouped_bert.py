"""Run a loaded BERT with grouped key/value heads, and measure how far that
moves it ("Sharing keys and values", on the real checkpoint).

`with_grouped_kv` swaps each layer's self-attention for the chapter's
GroupedQueryAttention made by `grouped_from_bert` (keys and values of each
group mean-pooled); the rest of the model is unchanged. Nothing is trained.
`conversion` measures it for every g that divides h (a Conversion record).

Shape letters: L layers, B batch, h heads, T tokens, N sentences.
"""

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..layers.heads_needed import heads_removed
from ..layers.sharing_kv import grouped_from_bert
from .embedding import sentence_embeddings


class GroupedSelfAttention(nn.Module):
    """Stands where BertSelfAttention stood; the block's output dense layer
    becomes an identity, since the grouped layer applies W^O itself."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states, attention_mask=None, **kwargs):
        return self.layer(hidden_states, bool_mask(attention_mask))


def bool_mask(attention_mask):
    """Hugging Face's (B, 1, T, T) mask, additive or boolean, as the
    chapter's (B, T, T) boolean one (True where a query may attend)."""
    if attention_mask is None:
        return None
    if attention_mask.dtype != torch.bool:
        attention_mask = attention_mask == 0  # 0 kept, a large negative not
    return attention_mask[:, 0]  # (B, T, T)


def with_grouped_kv(model, num_kv_heads, make=grouped_from_bert):
    """A copy of a BERT model whose every layer shares its keys and values
    in num_kv_heads groups (num_kv_heads = h changes nothing); `make`
    builds each grouped layer from a BERT attention block."""
    changed = copy.deepcopy(model)
    for block in changed.encoder.layer:
        layer = make(block.attention, num_kv_heads)
        block.attention.self = GroupedSelfAttention(layer)
        block.attention.output.dense = nn.Identity()
    return changed.eval()


def check_like_package(make, model, num_kv_heads=1):
    """Refuse a `grouped_from_bert` (the page's, after a reader's edit)
    that builds other weights from the model's first block than this
    module's, which made the page's figures."""
    block = model.encoder.layer[0].attention
    try:
        ours = make(block, num_kv_heads).state_dict()
    except RuntimeError as error:  # a slip in the page's shapes
        raise ValueError(
            f"{make.__name__} stopped inside PyTorch at g = {num_kv_heads} "
            f"({error}): check how it pools each group's h/g heads, dim 1 "
            f"of (g, h/g, d_k, d or 1)"
        ) from error
    package = grouped_from_bert(block, num_kv_heads).state_dict()
    if ours.keys() != package.keys() or not all(
        torch.equal(ours[k], package[k]) for k in ours
    ):
        raise ValueError(
            f"this grouped_from_bert builds other weights than mhabook's at "
            f"g = {num_kv_heads}, and the page's figures come from "
            f"mhabook's: to see yours, pass it to "
            f"grouped_bert.with_grouped_kv(model, g, make=grouped_from_bert)"
        )


def grouped_attention_maps(model, inputs):
    """Every layer's attention weights of a `with_grouped_kv` model,
    (L, B, h, T, T), from the hidden states that enter each layer."""
    with torch.inference_mode():
        hidden = model(**inputs, output_hidden_states=True).hidden_states
        mask = inputs["attention_mask"].bool()  # (B, T)
        mask = mask[:, None, :].expand(-1, mask.shape[1], -1)  # (B, T, T)
        maps = [
            block.attention.self.layer(hidden[i], mask)[1]
            for i, block in enumerate(model.encoder.layer)
        ]
    return torch.stack(maps)  # (L, B, h, T, T)


def attention_shift(reference, changed, attention_mask):
    """Per layer, the mean total variation distance between the two models'
    attention rows: half the L1 distance, 0 = same, 1 = disjoint. Rows of
    padding tokens are left out. reference, changed: (L, B, h, T, T)."""
    distance = 0.5 * (reference - changed).abs().sum(-1)  # (L, B, h, T)
    real = attention_mask.bool()[None, :, None, :]  # (1, B, 1, T)
    real = real.expand_as(distance)  # (L, B, h, T)
    per_layer = (distance * real).sum((1, 2, 3)) / real.sum((1, 2, 3))
    return per_layer  # (L,)


def even_spread(maps, attention_mask):
    """Attention maps (L, B, h, T, T) of the same shape in which every real
    token's row spreads evenly over the sentence's real tokens."""
    real = attention_mask[:, None, None, :].to(maps.dtype)  # (B, 1, 1, T)
    even = real / real.sum(-1, keepdim=True)  # (B, 1, 1, T)
    return even.expand_as(maps[0]).expand_as(maps)  # (L, B, h, T, T)


def mean_interval(values, draws=1000, seed=0):
    """(low, high): the 95% bootstrap range of the mean of `values` (N,)."""
    values = torch.as_tensor(values, dtype=torch.float64)
    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(
        len(values), (draws, len(values)), generator=generator
    )
    means = values[picks].mean(-1)  # (draws,)
    low, high = means.quantile(0.025).item(), means.quantile(0.975).item()
    return low, high


@dataclass(frozen=True)
class Conversion:
    """A BERT whose every layer shares its keys and values in g groups
    (mean-pooled, no training), against the model, for each g in kv_counts.

    Fidelity: the mean cosine of each sentence's changed embedding to its
    original one (1: nothing moved). The yardstick is the model with every
    head removed. Attention moved: per layer, the mean total variation
    distance between the two models' attention rows (0 same, 1 disjoint),
    on the first sentences (the probe).
    """

    num_heads: int
    kv_counts: list  # the g below h that divide h, largest first
    n_sentences: int
    probe_size: int  # the sentences whose attention is compared
    halves: tuple  # two slices of the sentences
    cosines: dict  # g -> (N,)
    cosines_none: torch.Tensor  # (N,): every head removed
    other_mean: float  # mean cosine between two different sentences
    shift: dict  # g -> (L,): attention moved
    to_even: torch.Tensor  # (L,): moved to an even spread

    def fidelity(self, g):
        return self.cosines_at(g).mean().item()  # 1 at g = h

    def cosines_at(self, g):
        """(N,): each sentence's cosine at g key/value heads; all 1 at
        g = h, where averaging changes nothing."""
        if g == self.num_heads:
            return torch.ones_like(self.cosines_none)
        if g not in self.cosines:
            raise ValueError(
                f"g = {g} was not measured: use one of "
                f"{sorted(self.cosines)} or {self.num_heads}"
            )
        return self.cosines[g]

    def fidelity_half(self, g, half):
        return self.cosines_at(g)[self.halves[half]].mean().item()

    @property
    def fidelity_none(self):
        return self.cosines_none.mean().item()

    def share_lost(self, g):
        """The fidelity lost at g, as a share of what removing every head
        loses (1: as far as no heads at all)."""
        return (1 - self.fidelity(g)) / (1 - self.fidelity_none)

    def vs_none(self, g, half=None):
        """(low, high, kept): the 95% range of the mean paired difference
        of cosines, g against every head removed, and the share of the
        distance to that model that g keeps; on the sentences of `half`
        (0 or 1) or, if None, on all of them."""
        rows = slice(None) if half is None else self.halves[half]
        low, high = mean_interval((self.cosines[g] - self.cosines_none)[rows])
        lost = 1 - self.cosines[g][rows].mean().item()
        lost_none = 1 - self.cosines_none[rows].mean().item()
        return low, high, 1 - lost / lost_none

    def fidelity_drops(self):
        """The fall in fidelity at each step down in g (h first), on each
        half of the sentences: all above 0 when it falls at every step."""
        ks = [self.num_heads, *self.kv_counts]
        return [
            self.fidelity_half(a, s) - self.fidelity_half(b, s)
            for a, b in zip(ks, ks[1:])
            for s in (0, 1)
        ]

    def shift_growth(self):
        """The least growth, over the layers, of the attention moved at
        each step down in g: all above 0 when it grows in every layer."""
        first = self.shift[self.kv_counts[0]]
        at = {self.num_heads: torch.zeros_like(first), **self.shift}
        ks = [self.num_heads, *self.kv_counts]
        return [(at[b] - at[a]).min().item() for a, b in zip(ks, ks[1:])]


def check_unchanged(model, tokenizer, sentences, reference, probe, maps):
    """Raise unless the g = h copy computes what the model computes."""
    num_heads = model.config.num_attention_heads
    same = with_grouped_kv(model, num_heads)  # nothing averaged
    embeddings = sentence_embeddings(same, tokenizer, sentences)
    same_maps = grouped_attention_maps(same, probe)
    for name, a, b in [
        ("sentence embeddings", embeddings, reference),
        ("attention maps", same_maps, maps),
    ]:
        if not torch.allclose(a, b, atol=1e-5):
            raise RuntimeError(
                f"with g = h the grouped copy should compute the model's "
                f"{name}, but they differ by {(a - b).abs().max():.1e}: "
                f"check grouped_from_bert and GroupedSelfAttention"
            )


# Fewest sentences the conversion measures: two halves of five, each enough
# for a bootstrap interval to mean something.
MIN_SENTENCES = 10


def conversion(model, tokenizer, sentences, probe_size=40):
    """Conversion of `model` (a BertModel) for every g that divides h,
    measured on `sentences`; attention on the first `probe_size`."""
    num_heads = model.config.num_attention_heads
    kv_counts = [g for g in range(num_heads - 1, 0, -1) if num_heads % g == 0]
    kv_counts = kv_counts or [1]  # a model of one head has only g = 1 = h
    n = len(sentences)
    if n < MIN_SENTENCES:
        raise ValueError(
            f"{n} sentence(s) given: the page compares the fidelity on two "
            f"halves of the sentences and bootstraps each, so give at least "
            f"{MIN_SENTENCES}, as book/data/sentences.txt does"
        )
    reference = sentence_embeddings(model, tokenizer, sentences)  # (N, d)
    probe = tokenizer(
        list(sentences[:probe_size]), padding=True, return_tensors="pt"
    )
    with torch.inference_mode():
        attentions = model(**probe, output_attentions=True).attentions
    maps = torch.stack(attentions)  # (L, B, h, T, T)
    check_unchanged(model, tokenizer, sentences, reference, probe, maps)
    every_head = [
        (i, j)
        for i in range(model.config.num_hidden_layers)
        for j in range(num_heads)
    ]
    with heads_removed(model, every_head):  # no head left anywhere
        removed = sentence_embeddings(model, tokenizer, sentences)
    unit = F.normalize(reference, dim=-1)
    others = ~torch.eye(n, dtype=torch.bool)
    cosines, shift = {}, {}
    for g in kv_counts:
        changed = with_grouped_kv(model, g)
        embeddings = sentence_embeddings(changed, tokenizer, sentences)
        cosines[g] = F.cosine_similarity(reference, embeddings, dim=-1)
        changed_maps = grouped_attention_maps(changed, probe)
        mask = probe["attention_mask"]
        shift[g] = attention_shift(maps, changed_maps, mask)  # (L,)
    even = even_spread(maps, probe["attention_mask"])
    return Conversion(
        num_heads=num_heads,
        kv_counts=kv_counts,
        n_sentences=n,
        probe_size=len(probe["input_ids"]),
        halves=(slice(0, n // 2), slice(n // 2, None)),
        cosines=cosines,
        cosines_none=F.cosine_similarity(reference, removed, dim=-1),
        other_mean=(unit @ unit.T)[others].mean().item(),
        shift=shift,
        to_even=attention_shift(maps, even, probe["attention_mask"]),
    )
