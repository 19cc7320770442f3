"""Removing heads from a checkpoint, and what the heads do.

Head j of a layer owns slice j of the context that enters the output
projection W^O (section 2). Zeroing that slice removes the head: it is the
head mask of Michel et al. (2019). `heads_removed` does it with forward
pre-hooks on each block's W^O, so the model's code and weights stay
untouched; it is taught in a `# @save` cell of heads_needed.ipynb.
`heads_needed_results` makes every measurement that page states. To keep
it cheap, the many models with heads removed run side by side in one batch
(`Probe.many`, a (V, L, h) mask of kept heads), from the first layer they
change, on sentences batched by length (no padding); each distinct set of
heads is run once.

Shape letters: B batch, T tokens, d the width, h heads, d_k = d // h,
L layers, N sentences.
"""

import math
import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

import torch
import torch.nn.functional as F

from mhabook.deeper_checks import group_by_layer
from mhabook.experiments.embedding import check_lengths, same_words
from mhabook.layers.all_heads import batched_from_bert
from mhabook.layers.heads_needed import without_head, zero_heads_hook


class SentenceBatch:
    """Sentences tokenized once, with what enters each layer of the full
    model recorded, so a change to layer l re-runs layers l..L-1 only.

    Sentences of the same length share a batch, so no time goes on
    padding. The layers' inputs are recorded with forward pre-hooks during
    one run of the model itself: the attention mask passed on is the
    model's own. `recorded` holds that run's embeddings (those of
    `embeddings()` with the hooks the model had then).
    """

    def __init__(self, model, tokenizer, sentences, batch_size=64):
        if not sentences:
            raise ValueError("no sentences: pass a non-empty list")
        check_lengths(model, tokenizer, sentences)  # each fits the positions
        self.layers = model.base_model.encoder.layer
        lengths = [len(ids) for ids in tokenizer(list(sentences))["input_ids"]]
        order = sorted(range(len(sentences)), key=lengths.__getitem__)
        self.unsort = torch.tensor(order).argsort()  # back to input order
        self.chunks = []  # (tokenized batch, what entered each layer)
        pooled = []
        for picked in _same_length(order, lengths, batch_size):
            batch = tokenizer(
                [sentences[i] for i in picked],
                padding=True,
                return_tensors="pt",
            )
            inputs, last = self._record(model, batch)
            self.chunks.append((batch, inputs))
            pooled.append(self._pool(last, batch))
        self.recorded = torch.cat(pooled)[self.unsort]  # (N, d)

    def _record(self, model, batch):
        """What entered each layer, and what left the last one."""
        inputs, outputs = [], []

        def record(module, args, kwargs):
            inputs.append((args, kwargs))

        handles = [
            layer.register_forward_pre_hook(record, with_kwargs=True)
            for layer in self.layers
        ]
        handles.append(
            self.layers[-1].register_forward_hook(
                lambda module, args, output: outputs.append(output)
            )
        )
        try:
            with torch.inference_mode():
                model(**batch)
        finally:
            for handle in handles:
                handle.remove()
        return inputs, outputs[-1]  # (B, T, d)

    @staticmethod
    def _pool(hidden, batch):
        """(B, d): the mean of each sentence's real tokens' states."""
        mask = batch["attention_mask"].unsqueeze(-1)  # (B, T, 1)
        mask = mask.to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1)  # (B, d)

    def embeddings(self, start=0, keep=None):
        """(N, d): mean-pooled last hidden states, running the model's
        layers from `start` on (with whatever hooks are on them).

        keep: an optional (V, L, h) tensor of ones and zeros, one variant
        of the model per row: head i of layer l is removed in variant v
        where keep[v, l, i] is 0. The V variants run as one batch, and the
        result is (V, N, d). Heads in layers before `start` must be kept.
        """
        if keep is None:
            return self._run(start, None)[0]
        if start > 0 and not keep[:, :start].all():
            raise ValueError(
                f"heads removed before layer {start} would be skipped: "
                f"start at the first layer that loses a head"
            )
        return self._run(start, keep)

    def _run(self, start, keep):
        V = 1 if keep is None else keep.shape[0]
        pooled = []
        for batch, inputs in self.chunks:
            args, kwargs = inputs[start]
            B = args[0].shape[0]
            args, kwargs = _repeat((args, kwargs), B, V)
            hidden = args[0]  # (V B, T, d): what entered layer `start`
            with torch.inference_mode():
                for layer, block in enumerate(self.layers[start:], start):
                    if keep is None or keep[:, layer].all():
                        hidden = block(hidden, *args[1:], **kwargs)
                        continue
                    dense = block.attention.output.dense
                    handle = dense.register_forward_pre_hook(
                        _variants_hook(keep[:, layer])
                    )
                    try:
                        hidden = block(hidden, *args[1:], **kwargs)
                    finally:
                        handle.remove()
            hidden = hidden.view(V, B, *hidden.shape[1:])  # (V, B, T, d)
            pooled.append(torch.stack([self._pool(x, batch) for x in hidden]))
        return torch.cat(pooled, dim=1)[:, self.unsort]  # (V, N, d)


def _same_length(order, lengths, batch_size):
    """Runs of `order` (indices sorted by length) of one length each, at
    most `batch_size` long: batches that need no padding."""
    picked = []
    for i in order:
        if picked and (
            lengths[i] != lengths[picked[0]] or len(picked) == batch_size
        ):
            yield picked
            picked = []
        picked.append(i)
    yield picked


def _repeat(value, B, V):
    """`value` (tensors nested in tuples, lists and dicts) with every
    tensor whose first dimension is the batch B repeated V times."""
    if V == 1:
        return value
    if isinstance(value, torch.Tensor) and value.dim() and len(value) == B:
        return value.repeat(V, *[1] * (value.dim() - 1))  # (V B, ...)
    if isinstance(value, (tuple, list)):
        return type(value)(_repeat(x, B, V) for x in value)
    if isinstance(value, dict):
        return {k: _repeat(x, B, V) for k, x in value.items()}
    return value


def _variants_hook(keep):
    """A forward pre-hook for W^O on a batch of V variants stacked
    (variant-major): keep (V, h) says which heads each variant keeps."""

    def hook(module, args):
        (context,) = args  # (V B, T, d)
        VB, T, d = context.shape
        V, h = keep.shape
        per_head = context.view(V, VB // V, T, h, d // h)
        per_head = per_head * keep[:, None, None, :, None].to(context.dtype)
        return (per_head.view(VB, T, d),)

    return hook


def cosines(reference, changed):
    """(N,): each row's cosine similarity with its reference row."""
    return F.cosine_similarity(reference, changed, dim=-1)


def paraphrase_rows(sentences, paraphrases, partners):
    """(N,) bool: the rows whose sentence embedding is closer (cosine) to
    its paraphrase's than to its partner's (a sentence on the same
    subject, not a paraphrase); each is (N, d)."""
    return cosines(sentences, paraphrases) > cosines(sentences, partners)


def paraphrase_score(sentences, paraphrases, partners):
    """Share of rows whose sentence embedding is closer (cosine) to its
    paraphrase's than to its partner's; each argument is (N, d)."""
    return (
        paraphrase_rows(sentences, paraphrases, partners).float().mean().item()
    )


def words(text):
    """The set of lower-cased words of `text`."""
    return set(re.findall(r"\w+", text.lower()))


def overlap(a, b):
    """Jaccard overlap of two texts' word sets: shared over all words."""
    return len(words(a) & words(b)) / len(words(a) | words(b))


def overlap_rows(rows):
    """(N,) bool: rows (sentence, paraphrase, partner) whose paraphrase
    shares a larger part of its words with the sentence than the partner
    does: the task done by counting shared words, with no model."""
    return torch.tensor([overlap(s, p) > overlap(s, q) for s, p, q in rows])


def paired_counts(a, b):
    """(wins, losses): rows that scorer `a` gets right and `b` wrong, and
    rows that `b` gets right and `a` wrong; a, b are (N,) bool."""
    return int((a & ~b).sum()), int((~a & b).sum())


def sign_test(wins, losses):
    """One-sided exact sign test on the rows where two scorers disagree:
    the chance that a fair coin, tossed wins + losses times, comes up
    heads `wins` times or more. 1.0 when they never disagree."""
    tosses = int(wins) + int(losses)
    heads = sum(math.comb(tosses, k) for k in range(int(wins), tosses + 1))
    return heads / 2**tosses


def rows_needed(alpha=0.05):
    """The fewest disagreeing rows, all won, that `sign_test` finds below
    `alpha`: fewer rows than that cannot show a difference at all."""
    rows = 0
    while sign_test(rows, 0) >= alpha:
        rows += 1
    return rows


def attention_shares(attention, input_ids, attention_mask, special_ids):
    """Three named behaviours of every head, averaged over real tokens.

    attention: (L, B, h, T, T) weights of a padded batch. Returns a dict of
    (L, h) tensors: the share of a token's attention that goes to special
    tokens ([CLS], [SEP]), to the previous token, and to itself.
    """
    B, T = input_ids.shape
    real = attention_mask.bool()  # (B, T)
    special = torch.isin(input_ids, torch.as_tensor(special_ids))  # (B, T)
    previous = torch.eye(T, dtype=torch.bool).roll(-1, dims=1)  # (T, T)
    previous[0, -1] = False  # the first token has no previous token
    targets = {
        "special": special[:, None, :].expand(B, T, T),  # (B, T, T)
        "previous": previous.expand(B, T, T),
        "self": torch.eye(T, dtype=torch.bool).expand(B, T, T),
    }
    count = real.sum()
    shares = {}
    for name, target in targets.items():
        per_query = (attention * target[None, :, None]).sum(-1)  # (L, B, h, T)
        per_query = per_query * real[None, :, None, :]  # real queries only
        shares[name] = per_query.sum((1, 3)) / count  # (L, h)
    return shares


def attention_shares_by_length(model, tokenizer, sentences, special_ids):
    """`attention_shares` over all `sentences`, run in batches of one
    length each (no padding), each batch weighted by its tokens."""
    lengths = [len(ids) for ids in tokenizer(list(sentences))["input_ids"]]
    order = sorted(range(len(sentences)), key=lengths.__getitem__)
    total, count = {}, 0
    for picked in _same_length(order, lengths, 64):
        batch = tokenizer([sentences[i] for i in picked], return_tensors="pt")
        with torch.inference_mode():
            attentions = model(**batch, output_attentions=True).attentions
        shares = attention_shares(
            torch.stack(attentions),  # (L, B, h, T, T)
            batch["input_ids"],
            batch["attention_mask"],
            special_ids,
        )
        tokens = int(batch["attention_mask"].sum())
        for name, share in shares.items():
            total[name] = total.get(name, 0) + share * tokens
        count += tokens
    return {name: value / count for name, value in total.items()}


def rank_correlation(a, b):
    """Spearman's rank correlation of two same-shape tensors (no ties)."""
    ranks = [x.flatten().argsort().argsort().double() for x in (a, b)]
    return torch.corrcoef(torch.stack(ranks))[0, 1].item()


def chance_correlation(n, level, generator, draws=2000):
    """The size of rank correlation that chance reaches over n items: the
    `level` quantile of |correlation| between n ranks and `draws` random
    shuffles of them (a permutation null)."""
    ranks = torch.arange(n, dtype=torch.double)
    ranks -= ranks.mean()
    shuffled = torch.stack(
        [ranks[torch.randperm(n, generator=generator)] for _ in range(draws)]
    )  # (draws, n)
    null = (shuffled * ranks).sum(-1) / (ranks * ranks).sum()  # (draws,)
    return null.abs().quantile(level).item()


def _layer_ranks(x):
    """(..., L, h): each value's rank among its layer's heads, centred."""
    ranks = x.argsort(-1).argsort(-1).double()
    return ranks - ranks.mean(-1, keepdim=True)


def within_layer_correlations(a, b):
    """(L,): the rank correlation of a[l] with b[l] in each layer l (no
    ties); a and b are (L, h). How a layer's mean differs from another's
    does not enter."""
    ra, rb = _layer_ranks(a), _layer_ranks(b)
    return (ra * rb).sum(-1) / (ra * ra).sum(-1)  # (L,)


def within_layer_correlation(a, b):
    """The mean over layers of `within_layer_correlations`: does a head
    with more of `a` than its layer's other heads have more of `b`?"""
    return within_layer_correlations(a, b).mean().item()


def within_layer_chance(a, b, level, generator, draws=2000):
    """The size that `within_layer_correlation` reaches by chance: the
    `level` quantile of its size when b is shuffled among the heads of
    each layer, apart (a permutation null that keeps every value in its
    layer, so differences between layers cannot pass it)."""
    L, h = b.shape
    shuffle = torch.rand(draws, L, h, generator=generator).argsort(-1)
    shuffled = b.expand(draws, L, h).gather(-1, shuffle)  # (draws, L, h)
    ra, rb = _layer_ranks(a), _layer_ranks(shuffled)
    null = ((ra * rb).sum(-1) / (ra * ra).sum(-1)).mean(-1)  # (draws,)
    return null.abs().quantile(level).item()


def within_layer_power(rho, bar, num_layers, num_heads, generator, sims=2000):
    """The chance that `within_layer_correlation` passes +-`bar` when each
    layer's two values have a true rank correlation `rho`: simulated on
    normal pairs whose correlation r gives that rank correlation,
    rho = (6 / pi) asin(r / 2)."""
    return _power_curve(bar, num_layers, num_heads, generator, sims)(rho)


def _power_curve(bar, num_layers, num_heads, generator, sims=2000):
    """rho -> `within_layer_power`, on draws made once (so the curve is
    smooth in rho and cheap to search)."""
    shape = (sims, num_layers, num_heads)
    x = torch.randn(shape, generator=generator, dtype=torch.double)
    noise = torch.randn(shape, generator=generator, dtype=torch.double)
    rx = _layer_ranks(x)

    def power(rho):
        r = 2 * math.sin(math.pi * rho / 6)
        y = r * x + math.sqrt(max(1 - r * r, 0.0)) * noise
        ry = _layer_ranks(y)
        stat = ((rx * ry).sum(-1) / (rx * rx).sum(-1)).mean(-1)  # (sims,)
        return (stat.abs() > bar).double().mean().item()

    return power


def within_layer_detectable(bar, num_layers, num_heads, power=0.8, seed=0):
    """The true within-layer rank correlation that the test passes with
    chance `power` (bisection, the same simulated draws at every size);
    1.0 when even a near-perfect one (0.999) is passed less often."""
    g = torch.Generator().manual_seed(seed)
    chance = _power_curve(bar, num_layers, num_heads, g)
    low, high = 0.0, 0.999
    if chance(high) < power:
        return 1.0
    while high - low > 1e-4:
        middle = (low + high) / 2
        if chance(middle) >= power:
            high = middle
        else:
            low = middle
    return high


def exact_numbers(layer, i, full, masked, without_i):
    """{glue name: value}: the page's numbers for head i of `layer`
    removed two ways, from the layer's outputs (B, T, d) in full, with the
    hook, and rebuilt without the head; the difference rounded up, and
    `one_match`, it in words ("exactly" where it is 0)."""
    difference = round_up((masked - without_i).abs().max().item())
    return {
        "one_layer": layer,
        "one_i": i,
        "one_difference": difference,
        "one_match": f"to within {difference:.2g}"
        if difference
        else "exactly",
        "one_moved": (masked - full).abs().max().item(),
        "one_scale": full.abs().mean().item(),
    }


def round_up(value, digits=2):
    """`value` (>= 0) rounded up to `digits` significant digits: a bound
    that stays a bound when printed with that many digits (a `:.1e` or
    `:.2g` format alone may round it down)."""
    value = Decimal(float(value))
    if value < 0:
        raise ValueError(f"round_up takes a size >= 0, got {value}")
    if value == 0:
        return 0.0
    unit = Decimal(1).scaleb(value.adjusted() - digits + 1)
    return float(value.quantize(unit, rounding=ROUND_CEILING))


class Probe:
    """A sentence set, and how far removing heads moves its embeddings
    (mean-pooled last hidden states) from the full model's."""

    def __init__(self, model, tokenizer, sentences):
        self.model = model
        self.batch = SentenceBatch(model, tokenizer, sentences)
        self.reference = self.batch.recorded  # (N, d): embeddings()

    def embeddings(self, removed):
        """(N, d): the set's embeddings without `removed` (layer, head)
        pairs; the layers before the first one touched are not re-run."""
        return self.many([removed])[0]

    def many(self, removed_sets, at_once=16):
        """(V, N, d): the set's embeddings without each of V lists of
        (layer, head) pairs. Variants run side by side in one batch, at
        most `at_once` at a time; each batch starts at the first layer
        any of its variants touches."""
        layers = self.batch.layers
        L = len(layers)
        h = self.model.config.num_attention_heads
        keep = torch.ones(len(removed_sets), L, h)
        for v, removed in enumerate(removed_sets):
            for layer, found in group_by_layer(removed, L, h).items():
                keep[v, layer, found] = 0.0
        first = [
            int(row.all(-1).logical_not().nonzero()[0]) if not row.all() else L
            for row in keep
        ]  # the first layer each variant touches (L: none)
        by_start = sorted(range(len(removed_sets)), key=first.__getitem__)
        out = [None] * len(removed_sets)
        for k in range(0, len(by_start), at_once):
            picked = by_start[k : k + at_once]
            start = min(first[v] for v in picked)
            if start == L:  # nothing removed: the reference
                changed = self.reference.expand(len(picked), -1, -1)
            else:
                changed = self.batch.embeddings(start, keep[picked])
            for v, x in zip(picked, changed):
                out[v] = x
        return torch.stack(out)  # (V, N, d)

    def cosines(self, removed):
        """(N,): each sentence's cosine with its full-model embedding."""
        return cosines(self.reference, self.embeddings(removed))

    def fidelity(self, removed):
        """Mean cosine with the full model's embeddings: 1, nothing moved."""
        return self.cosines(removed).mean().item()


def exact_removal(model, tokenizer, text, layer, head):
    """Head `head` of layer `layer` removed two ways, on what enters that
    layer for `text`: the hook zeroing its slice, and the loop layer with
    its weights cut out. Returns (largest difference between the two,
    largest change removing it makes, mean size of the layer's output)."""
    ours = batched_from_bert(model.base_model.encoder.layer[layer].attention)
    ours.eval()
    num_heads = ours.num_heads
    batch = tokenizer(text, return_tensors="pt")
    with torch.inference_mode():
        x = model(**batch, output_hidden_states=True).hidden_states[layer]
        full, _ = ours(x)  # (1, T, d)
        hook = zero_heads_hook([head], num_heads)
        handle = ours.output_linear.register_forward_pre_hook(hook)
        try:
            masked, _ = ours(x)  # slice `head` zeroed before W^O
        finally:
            handle.remove()
        cut = without_head(ours, head, x)  # (1, T, d)
    return (
        (masked - cut).abs().max().item(),
        (masked - full).abs().max().item(),
        full.abs().mean().item(),
    )


def _quantiles(draws, dim=-1):
    return draws.quantile(0.025, dim=dim), draws.quantile(0.975, dim=dim)


@dataclass(frozen=True)
class HeadsNeeded:
    """What heads_needed.ipynb states. A head's importance is the drop in
    fidelity (1 - mean cosine) when it alone is removed; fidelity is the
    mean cosine of the embeddings with heads removed and without."""

    num_layers: int
    num_heads: int
    # 1. one head removed two ways (hook, weights cut out)
    exact_head: tuple  # (layer, head)
    exact_difference: float  # largest difference, rounded up: a bound
    exact_moved: float  # largest change that removing the head makes
    exact_scale: float  # mean size of the layer's output entries
    # 2. each head alone, on every `every`-th sentence
    n_choose: int
    importance: torch.Tensor  # (L, h)
    layer_drop: torch.Tensor  # (L,): mean importance of a layer's heads
    layer_low: torch.Tensor  # (L,): its 95% bootstrap range over sentences
    layer_high: torch.Tensor
    top_layer: int  # the layer whose heads matter most on average
    runner_up: int
    top_low: float  # top layer's low end, against...
    others_high: float  # ...the highest high end of the other layers
    split_half: float  # rank correlation of importance on two halves
    split_bar: float  # what 95% of shuffles stay below
    split_rest: float  # the same without the top layer's heads
    split_bar_rest: float
    split_within: float  # the same within each layer, averaged
    split_bar_within: float  # what 95% of within-layer shuffles stay below
    # 3. the paraphrase task, and many heads removed
    n_rows: int
    task_full: float  # share of rows right, every head in place
    task_none: float  # ... with every head removed
    fid_none: float  # fidelity with every head removed: the yardstick
    # for scale, full model: mean cosine of a sentence's embedding with
    # its paraphrase's, and with its partner's (same subject)
    cos_paraphrase: float
    cos_partner: float
    word_score: float  # ... by counting shared words
    vs_words: tuple  # (wins, losses) of the full model, row by row
    vs_none: tuple
    p_words: float  # one-sided sign tests
    p_none: float
    room_rows: int  # rows the no-heads model gets wrong
    min_rows: int  # the fewest rows a sign test at 5% can detect
    order: list  # (layer, head) pairs, least important first
    by_importance: dict  # {heads removed: (fidelity, task)}
    by_random: list  # one such dict per random order, at `coarse`
    coarse: list
    by_layers: dict  # whole layers, least important layer first
    limit: float  # the task has lost a row below this
    half: int
    fid_half: float  # least important first, at `half` heads removed
    random_half: list  # (fidelity, task) of each random order at `half`
    rest_half: list  # fidelity of random orders sparing the top layer
    imp_top: int  # top-layer heads among the first `half` removed
    top_removed_mean: float  # ... in the random orders, on average
    first_layer: int  # the least important layer
    layer_fid: float  # fidelity without that layer's heads
    heads_fid: float  # ... without as many heads, least important first
    diff_low: float  # 95% range of (layer_fid - heads_fid), over rows
    diff_high: float
    # 4. what the heads attend to
    shares: dict  # {"special", "previous", "self"}: (L, h) shares
    correlation: dict  # {behaviour: rank correlation over all heads}
    by_layer: dict  # {behaviour: (L,) rank correlation in each layer}
    within: dict  # {behaviour: mean of by_layer}: the test's statistic
    chance_within: float  # what chance reaches, heads shuffled in layers
    detectable_within: float  # the true correlation caught 4 times in 5
    top_special: float  # the top layer's mean share on [CLS]/[SEP]
    rest_special: float  # the other layers'

    @property
    def rand_fids(self):
        return [fidelity for fidelity, _ in self.random_half]


def _key(removed):
    """A set of (layer, head) pairs as a dictionary key."""
    return frozenset((int(layer), int(i)) for layer, i in removed)


def _random_order(heads, seed):
    g = torch.Generator().manual_seed(seed)
    return [heads[int(k)] for k in torch.randperm(len(heads), generator=g)]


def heads_needed_results(
    model,
    tokenizer,
    sentences,
    rows,
    example="Time flies like an arrow.",
    every=8,
    n_orders=19,
    n_curves=4,
):
    """Every measurement of heads_needed.ipynb, as a `HeadsNeeded`.

    sentences: a list of texts; importance is measured on every `every`-th
    one, what the heads attend to on all of them. rows: (sentence,
    paraphrase, partner on the same subject) triples, kept apart for the
    removal curves and the task. `n_curves` random orders are drawn in full,
    `n_orders` at half the heads.
    """
    layers = model.base_model.encoder.layer
    L, h = len(layers), model.config.num_attention_heads
    if L < 2 or h < 2:
        raise ValueError(
            f"this page compares one layer's heads with the other layers' "
            f"and needs at least 2 layers of at least 2 heads; the model "
            f"has {L} layer(s) of {h} head(s): load a BERT with more "
            f"layers or more heads per layer, at least 2 of each (set "
            f"MHA_CHECKPOINT to its folder)"
        )
    if n_orders < 1:
        raise ValueError(
            f"n_orders = {n_orders}: the ranking is set beside that many "
            f"random orders; use 1 or more (19 by default)"
        )
    if n_curves > n_orders:
        raise ValueError(
            f"n_curves draws that many of the n_orders random orders in "
            f"full: give n_curves <= n_orders ({n_orders}), got {n_curves}"
        )
    check_lengths(model, tokenizer, sentences)  # each fits the positions
    chosen = list(sentences)[::every]
    if len(chosen) < 4 or len(rows) < 2:
        raise ValueError(
            f"need at least 4 sentences for the importances (every "
            f"{every}th of `sentences`: {len(chosen)}) and 2 rows; pass "
            f"more sentences or a smaller `every`"
        )
    bad = [(k, row) for k, row in enumerate(rows) if len(row) != 3]
    if bad:
        k, row = bad[0]
        raise ValueError(
            f"each row is (sentence, paraphrase, partner), but row {k} of "
            f"`rows` has {len(row)} column(s): {row!r}; load the rows from "
            f"book/data/paraphrases.tsv, and in it separate a line's three "
            f"columns with one tab each"
        )
    same = [
        k
        for k, row in enumerate(rows)
        if same_words(row[0]) == same_words(row[1])
    ]
    if same:  # the tokenizer lower-cases: case and stops would not count
        raise ValueError(
            f"row {same[0]} of `rows` gives a paraphrase that repeats its "
            f"sentence up to case and punctuation: {rows[same[0]]!r}; write "
            f"the paraphrase in other words (book/data/paraphrases.tsv)"
        )
    if h < 3:  # two heads can only rank the same way or the other way
        print(f"Note: {h} heads a layer: within-layer ranks only give ±1")
    heads = [(layer, i) for layer in range(L) for i in range(h)]
    exact = exact_removal(model, tokenizer, example, 0, h // 4)

    # 2. each head alone, and each whole layer, on the chosen sentences:
    # layer l's h + 1 variants run side by side from layer l on
    choose = Probe(model, tokenizer, chosen)
    alone = torch.stack(
        [
            cosines(
                choose.reference,
                choose.many(
                    [[(layer, i)] for i in range(h)]
                    + [[(layer, i) for i in range(h)]]
                ),
            )
            for layer in range(L)
        ]
    )  # (L, h + 1, s): one head removed, then the whole layer
    per_sentence = alone[:, :h]  # (L, h, s)
    layer_loss = (1 - alone[:, h].mean(-1)).tolist()  # (L,)
    importance = 1 - per_sentence.mean(-1)  # (L, h)
    layer_drop = importance.mean(-1)  # (L,)
    g = torch.Generator().manual_seed(0)
    s = per_sentence.shape[-1]
    picks = torch.randint(s, (1000, s), generator=g)  # resampled sets
    boot = 1 - per_sentence[..., picks].mean(-1).mean(1)  # (L, 1000)
    low, high = _quantiles(boot)
    top = int(layer_drop.argmax())
    runner_up = int(layer_drop.topk(2).indices[-1])
    others = torch.arange(L) != top  # every layer but the top one
    halves = (
        1 - per_sentence[..., : s // 2].mean(-1),
        1 - per_sentence[..., s // 2 :].mean(-1),
    )  # (L, h) each
    n_rest = (L - 1) * h  # the heads outside the top layer
    split_bar = chance_correlation(L * h, 0.95, g)
    split_bar_rest = chance_correlation(n_rest, 0.95, g)

    # 3. the task, and removal curves on the paraphrase set
    n = len(rows)
    paraphrase = Probe(
        model, tokenizer, [r[c] for c in range(3) for r in rows]
    )
    order = [heads[int(k)] for k in importance.flatten().argsort()]
    coarse = list(range(0, L * h + 1, max(1, L * h // 4)))
    steps = list(range(0, L * h + 1, h))
    layer_order = sorted(range(L), key=layer_loss.__getitem__)
    whole = [(layer, i) for layer in layer_order for i in range(h)]
    half = L * h // 2
    orders = [_random_order(heads, i) for i in range(max(n_orders, n_curves))]
    rest_heads = [x for x in heads if x[0] != top]
    rest_orders = [
        _random_order(rest_heads, 1000 + i)[:half] for i in range(n_orders)
    ]

    # Curves, orders and comparisons meet the same sets of heads again
    # (none, all, a layer, the least important layer's worth): every set
    # is listed first, and each distinct one is run once, side by side.
    wanted = (
        [heads, order[:half]]
        + [order[:k] for k in steps]
        + [whole[:k] for k in steps]
        + [orders[i][:k] for i in range(n_curves) for k in coarse]
        + [orders[i][:half] for i in range(n_orders)]
        + rest_orders
    )
    keys = list(dict.fromkeys(_key(removed) for removed in wanted))
    computed = dict(zip(keys, paraphrase.many([list(k) for k in keys])))

    def cosines_without(removed):
        changed = computed[_key(removed)]  # (3n, d)
        return cosines(paraphrase.reference, changed)  # (3n,)

    def measure(removed):
        changed = computed[_key(removed)]  # (3n, d)
        right = paraphrase_rows(*changed.view(3, n, -1)).float().mean()
        return cosines_without(removed).mean().item(), right.item()

    reference = paraphrase.reference.view(3, n, -1)  # sentence, para, partner
    right_full = paraphrase_rows(*reference)
    no_heads = computed[_key(heads)]  # (3n, d)
    right_none = paraphrase_rows(*no_heads.view(3, n, -1))
    right_words = overlap_rows(rows)
    task_full, task_none, word_score = (
        r.float().mean().item() for r in (right_full, right_none, right_words)
    )
    if task_full < 0.25:  # far below a coin: the partner looks closer
        raise ValueError(
            f"with every head in place, the model picks the paraphrase on "
            f"only {task_full:.0%} of the rows of paraphrases.tsv, far below "
            f"a coin's 50%: check that each row reads sentence, paraphrase, "
            f"partner, in that order"
        )
    vs_words = paired_counts(right_full, right_words)
    vs_none = paired_counts(right_full, right_none)

    def curve(removal_order, counts):
        return {k: measure(removal_order[:k]) for k in counts}

    by_importance = curve(order, steps)
    by_random = [curve(orders[i], coarse) for i in range(n_curves)]
    by_layers = curve(whole, steps)

    limit = task_full - 0.5 / n  # below this, the task has lost a row

    fid_half = measure(order[:half])[0]
    random_half = [measure(orders[i][:half]) for i in range(n_orders)]
    top_removed = [
        sum(layer == top for layer, _ in orders[i][:half])
        for i in range(n_orders)
    ]
    rest_half = [
        cosines_without(removed).mean().item() for removed in rest_orders
    ]
    # a whole layer against as many heads least important first, by row
    diff = cosines_without(whole[:h]) - cosines_without(order[:h])
    diff = diff.view(3, n).mean(0)  # (n,): a row's 3 sentences averaged
    g = torch.Generator().manual_seed(2)
    diff_low, diff_high = _quantiles(
        diff[torch.randint(n, (1000, n), generator=g)].mean(-1)
    )

    # 4. what the heads attend to, on all the sentences
    shares = attention_shares_by_length(
        model,
        tokenizer,
        sentences,
        [tokenizer.cls_token_id, tokenizer.sep_token_id],
    )
    # the test compares heads within a layer only: layers differ in both
    # share and importance, and a trend over all heads mixes the two
    g = torch.Generator().manual_seed(1)
    level = 1 - 0.05 / 3  # three behaviours tested: 5% for all three
    chance_within = within_layer_chance(
        shares["special"], importance, level, g
    )  # the same for every behaviour: only ranks within a layer enter

    return HeadsNeeded(
        num_layers=L,
        num_heads=h,
        exact_head=(0, h // 4),
        exact_difference=round_up(exact[0]),
        exact_moved=exact[1],
        exact_scale=exact[2],
        n_choose=s,
        importance=importance,
        layer_drop=layer_drop,
        layer_low=low,
        layer_high=high,
        top_layer=top,
        runner_up=runner_up,
        top_low=low[top].item(),
        others_high=high[others].max().item(),
        split_half=rank_correlation(*halves),
        split_bar=split_bar,
        split_rest=rank_correlation(halves[0][others], halves[1][others]),
        split_bar_rest=split_bar_rest,
        split_within=within_layer_correlation(*halves),
        split_bar_within=within_layer_chance(
            *halves, 0.95, torch.Generator().manual_seed(2)
        ),
        n_rows=n,
        task_full=task_full,
        task_none=task_none,
        fid_none=by_importance[L * h][0],
        cos_paraphrase=cosines(*reference[:2]).mean().item(),
        cos_partner=cosines(reference[0], reference[2]).mean().item(),
        word_score=word_score,
        vs_words=vs_words,
        vs_none=vs_none,
        p_words=sign_test(*vs_words),
        p_none=sign_test(*vs_none),
        room_rows=n - int(right_none.sum()),
        min_rows=rows_needed(0.05),
        order=order,
        by_importance=by_importance,
        by_random=by_random,
        coarse=coarse,
        by_layers=by_layers,
        limit=limit,
        half=half,
        fid_half=fid_half,
        random_half=random_half,
        rest_half=rest_half,
        imp_top=sum(layer == top for layer, _ in order[:half]),
        top_removed_mean=sum(top_removed) / n_orders,
        first_layer=layer_order[0],
        layer_fid=by_layers[h][0],
        heads_fid=by_importance[h][0],
        diff_low=diff_low.item(),
        diff_high=diff_high.item(),
        shares=shares,
        correlation={
            k: rank_correlation(v, importance) for k, v in shares.items()
        },
        by_layer={
            k: within_layer_correlations(v, importance)
            for k, v in shares.items()
        },
        within={
            k: within_layer_correlation(v, importance)
            for k, v in shares.items()
        },
        chance_within=chance_within,
        detectable_within=within_layer_detectable(chance_within, L, h),
        top_special=shares["special"][top].mean().item(),
        rest_special=shares["special"][others].mean().item(),
    )


def parameters_per_head(model):
    """The parameters one head of a BERT `model` owns, counted from its
    first layer's modules (every layer is alike): its rows of the query,
    key and value maps with their biases, and its d_k columns of W^O."""
    block = model.encoder.layer[0].attention
    qkv = (block.self.query, block.self.key, block.self.value)
    own = sum(p.numel() for m in qkv for p in m.parameters())
    own += block.output.dense.weight.numel()  # W^O, its bias shared
    return own // model.config.num_attention_heads
