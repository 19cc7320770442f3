"""Removing heads from a pretrained BERT, and what the heads do (section 5).

Head j of a layer owns slice j of the context that enters the output
projection W^O (section 2). Zeroing that slice removes the head: it is the
head mask of Michel et al. (2019). `heads_removed` does it with forward
pre-hooks on each block's W^O, so the model's code and weights stay
untouched; it is taught in a `# @save` cell of heads_needed.ipynb.

Shape letters: B batch, T tokens, C hidden size, h heads, d_k = C // h,
L layers.
"""

import math
import re
from statistics import NormalDist

import torch
import torch.nn.functional as F


class SentenceBatch:
    """Sentences tokenized once, with what enters each layer of the full
    model recorded, so a change to layer l re-runs layers l..L-1 only.

    Sentences of similar length share a batch, so little time goes on
    padding. The layers' inputs are recorded with forward pre-hooks during
    one run of the model itself: the attention mask passed on is the
    model's own.
    """

    def __init__(self, model, tokenizer, sentences, batch_size=32):
        if not sentences:
            raise ValueError("no sentences: pass a non-empty list")
        self.layers = model.base_model.encoder.layer
        lengths = [len(ids) for ids in tokenizer(list(sentences))["input_ids"]]
        order = sorted(range(len(sentences)), key=lengths.__getitem__)
        self.unsort = torch.tensor(order).argsort()  # back to input order
        self.chunks = []  # (tokenized batch, what entered each layer)
        for first in range(0, len(order), batch_size):
            picked = [sentences[i] for i in order[first : first + batch_size]]
            batch = tokenizer(picked, padding=True, return_tensors="pt")
            self.chunks.append((batch, self._record(model, batch)))

    def _record(self, model, batch):
        inputs = []

        def record(module, args, kwargs):
            inputs.append((args, kwargs))

        handles = [
            layer.register_forward_pre_hook(record, with_kwargs=True)
            for layer in self.layers
        ]
        try:
            with torch.inference_mode():
                model(**batch)
        finally:
            for handle in handles:
                handle.remove()
        return inputs

    def embeddings(self, start=0):
        """(N, C): mean-pooled last hidden states, running the model's
        layers from `start` on (with whatever hooks are on them)."""
        pooled = []
        for batch, inputs in self.chunks:
            args, kwargs = inputs[start]
            hidden = args[0]  # (B, T, C): what entered layer `start`
            with torch.inference_mode():
                for layer in self.layers[start:]:
                    hidden = layer(hidden, *args[1:], **kwargs)  # (B, T, C)
            mask = batch["attention_mask"].unsqueeze(-1)  # (B, T, 1)
            mask = mask.to(hidden.dtype)
            pooled.append((hidden * mask).sum(1) / mask.sum(1))  # (B, C)
        return torch.cat(pooled)[self.unsort]  # (N, C)


def cosines(reference, changed):
    """(N,): each row's cosine similarity with its reference row."""
    return F.cosine_similarity(reference, changed, dim=-1)


def paraphrase_rows(sentences, paraphrases, partners):
    """(N,) bool: the rows whose sentence embedding is closer (cosine) to
    its paraphrase's than to its unrelated partner's; each is (N, C)."""
    return cosines(sentences, paraphrases) > cosines(sentences, partners)


def paraphrase_score(sentences, paraphrases, partners):
    """Share of rows whose sentence embedding is closer (cosine) to its
    paraphrase's than to its unrelated partner's; each argument is (N, C)."""
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


def detectable_correlation(bar, n, power=0.8):
    """The true rank correlation whose sample value over n items passes
    `bar` with probability `power`: Fisher's z, with the variance
    1.06 / (n - 3) of Spearman's correlation (Fieller et al., 1957)."""
    if n <= 3:
        return 1.0  # too few items to detect anything short of perfect
    spread = math.sqrt(1.06 / (n - 3))
    z = math.atanh(min(bar, 0.999999)) + NormalDist().inv_cdf(power) * spread
    return math.tanh(z)
