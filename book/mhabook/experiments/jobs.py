"""Heads with jobs (section 4): which head does each job, and how well.

A job is a rule that says, for each query word, which keys are its
targets: the previous word, the next word, [CLS], [SEP], the same word in
the other sentence. A head's score on a job is the share of each query
word's attention that lands on its targets, averaged over the query words
that have a target and then over the examples. The score is computed the
same way for every head, so the best head is chosen on one half of the
examples (the even rows) and scored on the other half (the odd rows),
beside two baselines: an even spread over the tokens and the median head.

An example is a dict from `realheads.run_examples`: `attention`
(L, h, T, T), `tokens`, `segments` (T,) and `special` (positions of [CLS]
and [SEP]).
"""

import math
from collections import Counter
from dataclasses import dataclass

import torch

from ..layers import batched_from_bert, loop_from_batched
from . import realheads as rh
from .inputs import note_unless
from .verdicts import compare


def _words(example):
    return rh.is_word(example)  # (T,): not [CLS], not [SEP]


def previous_word(example):
    """(T, T) bool: query i's target is the word just before it."""
    T = len(example["tokens"])
    words = _words(example)
    targets = torch.zeros(T, T, dtype=torch.bool)
    i = torch.arange(1, T)
    targets[i, i - 1] = words[i] & words[i - 1]
    return targets


def next_word(example):
    """(T, T) bool: query i's target is the word just after it."""
    return previous_word(example).T


def special_token(token):
    """A job: query words target every `token` ("[CLS]" or "[SEP]")."""

    def job(example):
        is_token = torch.tensor([t == token for t in example["tokens"]])
        return _words(example)[:, None] & is_token[None, :]  # (T, T)

    job.__name__ = f"to_{token.strip('[]').lower()}"
    return job


def same_word_other_sentence(example):
    """(T, T) bool: query i's targets are the tokens of the other sentence
    that are the same token as i (for "the" in A, each "the" in B)."""
    words = _words(example)
    tokens = example["tokens"]
    same = torch.tensor([[a == b for b in tokens] for a in tokens])
    segments = example["segments"]
    other = segments[:, None] != segments[None, :]
    return same & other & words[:, None] & words[None, :]


def determiner_noun(example):
    """(T, T) bool: in each noun phrase of `example["phrases"]`, (first,
    last) token positions from `phrase_examples`, the determiner that opens
    it targets the noun that closes it ("a" looks at "car" in "a small red
    car"). An input without labelled phrases has no targets."""
    T = len(example["tokens"])
    targets = torch.zeros(T, T, dtype=torch.bool)
    for first, last in example.get("phrases", ()):
        targets[first, last] = True
    return targets


# The gallery's jobs, in the order the page shows them.
JOBS = {
    "previous word": previous_word,
    "next word": next_word,
    "same word, other sentence": same_word_other_sentence,
    "[CLS]": special_token("[CLS]"),
    "[SEP]": special_token("[SEP]"),
}
PAIR_JOBS = ("same word, other sentence",)  # need two sentences in one input
# Each job's targets, as the head view's guide names them for a word.
TARGETS = {
    "previous word": "the word before it",
    "next word": "the word after it",
    "same word, other sentence": "the same word in the other sentence",
    "[CLS]": "[CLS]",
    "[SEP]": "[SEP]",
}
# The job measured on book/data/noun_phrases.tsv, where a determiner's noun
# sits past one or more adjectives, so no one fixed distance finds every noun.
GRAMMAR = "determiner → its noun"
# Targets that are not words: many heads put much of their attention there
# (Clark et al. 2019, section 3.2, suggest [SEP] serves as a no-op), so a
# head that does one is not counted among the heads with a job of reading.
PARKING = ("[CLS]", "[SEP]")
# Jobs that are a fixed distance themselves (one word back, one on): the
# best fixed distance does them by definition, so no head can beat it there.
DISTANCE_JOBS = ("previous word", "next word")


def pointing_at_words(jobs):
    """Those of `jobs` (`Job`s) whose targets are words: all but
    `PARKING`'s, which stand in fixed places."""
    return [job for job in jobs if job.name not in PARKING]


# A job is done clearly when the held-out interval's low end closes this
# share of the gap from the higher baseline to 1 (all attention on the
# targets): a bar under 1 for any baseline under 1, so a share can reach it
# even for a job that most heads already do.
CLEAR = 0.5
# How a label marks a best head that does not clear its bar.
BELOW = "not clearly done"


def job_rule(name):
    """The function of JOBS named `name`, or a ValueError that names them
    (the grammar job needs a noun phrase marked in its data file)."""
    if name in JOBS:
        return JOBS[name]
    names = ", ".join(map(repr, JOBS))
    if name == GRAMMAR:
        raise ValueError(
            f"{name!r} is not a job of any one input: its targets come from "
            f"the noun phrase marked in book/data/noun_phrases.tsv; use one "
            f"of {names}"
        )
    raise ValueError(f"{name!r} is not a job: use one of {names}")


def job_shares(examples, job):
    """(scores, even): scores (N, L, h), each head's mean share of a query
    word's attention on its targets, per example; even (N,), the share an
    even spread over the T tokens would give. NaN for an example in which
    no query word has a target. `job`: a function of an example, or the
    name of one of JOBS."""
    if isinstance(job, str):
        job = job_rule(job)
    scores, even = [], []
    for ex in examples:
        targets = job(ex)  # (T, T)
        T = len(ex["tokens"])
        if not torch.is_tensor(targets) or targets.shape != (T, T):
            shape = getattr(targets, "shape", type(targets).__name__)
            raise ValueError(
                f"a job returns a ({T}, {T}) bool tensor, True where query i "
                f"looks at token j; {getattr(job, '__name__', 'the job')} "
                f"returned {shape}: mark targets in a (T, T) grid"
            )
        counted = targets.any(-1)  # (T,): query words with a target
        if not counted.any():
            L, h = ex["attention"].shape[:2]
            scores.append(torch.full((L, h), float("nan")))
            even.append(torch.tensor(float("nan")))
            continue
        on_target = (ex["attention"] * targets).sum(-1)  # (L, h, T)
        scores.append(on_target[..., counted].mean(-1))
        even.append(targets[counted].sum(-1).float().mean() / T)
    return torch.stack(scores), torch.stack(even)


@dataclass
class Job:
    """One job's best head, chosen on the even examples."""

    name: str
    layer: int
    head: int
    held_out: float  # its score on the odd examples
    low: float  # a 95% bootstrap interval of `held_out`
    high: float
    even: float  # an even spread's score on the odd examples
    median: float  # the median head's score on the odd examples
    n_examples: int  # odd examples in which some query word has a target
    inputs: str = "sentences"  # what it was measured on, or "pairs"
    # the best fixed distance (`fixed_distance`), chosen and scored as the
    # head is: what place alone scores at the job, and so how often it hits
    place: float = math.nan
    distance: int = 0
    # how often the head's most-weighted token is a target (`top_hits`),
    # held out, with a 95% interval: to set beside `place`
    hits: float = math.nan
    hits_low: float = math.nan
    hits_high: float = math.nan

    @property
    def base(self):
        """The higher baseline: an even spread or the median head."""
        return max(self.even, self.median)

    @property
    def bar(self):
        """The score to beat: `CLEAR` of the way from the highest baseline
        (`base`) to 1."""
        return self.base + CLEAR * (1 - self.base)

    @property
    def common(self):
        """The median head scores at least half as much as the best: many
        heads lean the same way, and the best is no specialist."""
        return self.median >= self.held_out / 2

    @property
    def does_job(self):
        """Held out, its whole interval lies above `bar`: it beats both
        baselines and closes at least `CLEAR` of the gap to 1."""
        return self.low > self.bar

    @property
    def label(self):
        """'name: layer L, head H', marked when the head misses `bar`."""
        below = "" if self.does_job else f" ({BELOW})"
        return f"{self.name}{below}: layer {self.layer}, head {self.head}"

    @property
    def against_place(self):
        """(low, high, place, place): its held-out interval against the
        best fixed distance's score, as `verdicts.compare` (and the page's
        "compare" verdicts) take them."""
        return self.low, self.high, self.place, self.place

    @property
    def share_vs_place(self):
        """'more', 'same' or 'less': `against_place`, as `verdicts.compare`
        puts it."""
        return compare(*self.against_place)

    @property
    def hits_vs_place(self):
        """The same for its hit rate's interval (`hits_low`, `hits_high`):
        both that and `place` count how often the top token is a target."""
        return compare(self.hits_low, self.hits_high, self.place, self.place)

    @property
    def beats_baselines(self):
        """Held out, its whole interval lies above every baseline (a job
        it does in part, when it misses `bar`)."""
        return self.low > self.base


def top_hits(examples, job):
    """(N, L, h): for each head, the share of query words whose
    most-weighted token is one of their targets, per example (NaN for an
    example in which no query word has a target)."""
    hits = []
    for ex in examples:
        targets = job(ex)  # (T, T)
        counted = targets.any(-1)
        top = ex["attention"].argmax(-1)  # (L, h, T): each row's top key
        hit = targets[torch.arange(len(targets)), top]  # (L, h, T)
        hits.append(hit[..., counted].float().mean(-1))
    return torch.stack(hits)


def nanmean0(values):
    """Mean over the first dimension, leaving out NaN rows."""
    keep = ~torch.isnan(values.flatten(1)).any(-1)
    return values[keep].mean(0), int(keep.sum())


# Fewer held-out inputs than this make a bootstrap interval little more
# than the range of the scores: `best_at` then prints a note.
FEW_HELD_OUT = 8


# The rule of place alone that pairs add to the fixed distances: each
# word looks at the token as far into the other sentence as it stands
# into its own, a distance that follows the first sentence's length.
MIRROR = "same place, other sentence"


def _mirrored(example):
    """(T, T) bool: whether key j stands as far into its sentence as query
    i does into its own, in the other sentence of a pair."""
    segments = example["segments"]
    b = int(segments.argmax())  # where sentence B starts; [CLS] opens A
    starts = torch.where(segments.bool(), b, 1)  # (T,) each one's start
    place = torch.arange(len(segments)) - starts  # (T,) into its sentence
    other = segments[:, None] != segments[None, :]
    return other & (place[:, None] == place[None, :])


def _nearest(d):
    """The order fixed distances are tried in: nearest first, back before
    on at the same distance, `MIRROR` last."""
    return (1, 0, 0) if d == MIRROR else (0, abs(d), d)


def fixed_distance(examples, job, choose_on="even"):
    """(distance, score): the rule of place alone at `job`. Every query
    word puts all its weight on the token `distance` places on (negative:
    back), the distance that scores best on the `choose_on` examples;
    `score` is its score on the others, averaged as a head's is. On
    pairs, `MIRROR` competes too: the token as far into the other
    sentence. A rule that looks at one token scores the share of query
    words it hits."""
    hits = []  # per example: {distance: share of its query words hit}
    for ex in examples:
        targets = job(ex)
        n = int(targets.any(-1).sum())
        found = Counter(int(j - i) for i, j in targets.nonzero())
        found[MIRROR] = int((targets & _mirrored(ex)).sum())
        hits.append({d: c / n for d, c in found.items() if c} if n else None)

    def score(rows, d):
        rows = [row for row in rows if row is not None]
        return sum(row.get(d, 0.0) for row in rows) / max(len(rows), 1)

    first = 0 if choose_on == "even" else 1
    chosen = hits[first::2]
    options = {d for row in chosen if row for d in row}
    # nearest first, MIRROR last: a tie keeps the plainer rule
    options = sorted(options, key=_nearest)
    if not options:
        return 0, math.nan
    distance = max(options, key=lambda d: score(chosen, d))  # ties: nearest
    return distance, score(hits[1 - first :: 2], distance)


def best_at(examples, job, seed=0, choose_on="even", specials=False):
    """A `Job`: the head with the highest score on the even examples, its
    score on the odd ones with a 95% bootstrap interval, and baselines.
    choose_on="odd" chooses on the odd examples and scores on the even. A
    job not of JOBS that marks [CLS] or [SEP] as a target is refused
    unless `specials`: heads park attention there."""
    if choose_on not in ("even", "odd"):
        raise ValueError(f"choose_on is 'even' or 'odd', not {choose_on!r}")
    other = "odd" if choose_on == "even" else "even"
    first = 0 if choose_on == "even" else 1
    scores, even = job_shares(examples, job)
    # after job_shares has checked each grid's shape
    rule = job_rule(job) if isinstance(job, str) else job
    if not specials and rule not in JOBS.values():  # a job of the reader's
        if any((rule(ex) & ~_words(ex)).any() for ex in examples):
            raise ValueError(
                "this job marks [CLS] or [SEP] as a target, so its best head "
                "may be one that parks attention there: mark only words "
                "(where rh.is_word(example) is True), or pass specials=True "
                "to score [CLS] and [SEP] as targets"
            )
    choose, n_choose = nanmean0(scores[first::2])
    if n_choose == 0:
        raise ValueError(
            f"no example of the {choose_on} rows has a query word with a "
            f"target for this job: add sentences where the job applies"
        )
    layer, head = rh.best_head(choose)
    odd, odd_even = scores[1 - first :: 2], even[1 - first :: 2]
    keep = ~torch.isnan(odd_even)
    if not keep.any():
        raise ValueError(
            f"no example of the {other} rows has a query word with a target "
            f"for this job: add sentences where the job applies"
        )
    odd, odd_even = odd[keep], odd_even[keep]
    spread = odd_even.mean().item()  # what an even spread scores
    if rule not in JOBS.values() and spread > 0.5:
        raise ValueError(
            f"an even spread already puts {spread:.0%} of a word's attention "
            "on this job's targets, so no head can show a preference: give "
            "each word a few targets, and check the job's axes: targets[i, j] "
            "is True where query word i should look at key j (rows queries, "
            "columns keys)"
        )
    held = odd[:, layer, head]  # (n,)
    rough = f"only {len(held)} held-out inputs: interval rough"
    note_unless(len(held) >= FEW_HELD_OUT, rough)
    low, high = rh.mean_interval(held, seed=seed)
    distance, place = fixed_distance(examples, rule, choose_on)
    top = top_hits(examples, rule)[1 - first :: 2][keep][:, layer, head]
    hits_low, hits_high = rh.mean_interval(top, seed=seed)
    return Job(
        name=getattr(job, "__name__", "").replace("_", " "),  # gallery renames
        layer=layer,
        head=head,
        held_out=held.mean().item(),
        low=low,
        high=high,
        even=spread,
        median=odd.mean(0).median().item(),
        n_examples=len(held),
        place=place,
        distance=distance,
        hits=top.mean().item(),
        hits_low=hits_low,
        hits_high=hits_high,
    )


def gallery(examples, jobs=None, choose_on="even"):
    """[Job, ...]: the best head of each job in `jobs` (default JOBS)."""
    out = []
    for name, job in (jobs or JOBS).items():
        result = best_at(examples, job, choose_on=choose_on)
        result.name = name
        out.append(result)
    return out


def heads_with_jobs(model, tokenizer, choose_on="even"):
    """(found, sentences, pairs): section 4's gallery. `found` holds each
    job's `Job`; the jobs of one sentence are measured on each sentence of
    book/data/claim1_pairs.tsv alone (its A's, then its B's: the halves
    are the even and odd places in that list), those of PAIR_JOBS on its
    pairs. choose_on="odd" chooses each head on the other half."""
    columns = rh.pair_columns()
    where = rh.set_path("pairs")
    sentences = rh.run_examples(
        model, tokenizer, sum(columns, []), None, where
    )
    pairs = rh.run_examples(model, tokenizer, *columns, where)
    found = []
    for name, job in JOBS.items():
        on_pairs = name in PAIR_JOBS
        examples = pairs if on_pairs else sentences
        (result,) = gallery(examples, {name: job}, choose_on)
        result.inputs = "pairs" if on_pairs else "sentences"
        found.append(result)
    return found, sentences, pairs


def gallery_jobs(model, tokenizer):
    """[Job, ...]: section 4's gallery rows, the jobs of `heads_with_jobs`
    then the grammar job of `grammar_job`."""
    found, _, _ = heads_with_jobs(model, tokenizer)
    grammar, _ = grammar_job(model, tokenizer)
    return [*found, grammar]


DETERMINERS = ("a", "an", "the")  # what opens a phrase of noun_phrases.tsv


def mean_or_nan(values):
    """The mean of `values`, or NaN when there are none."""
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def phrase_examples(model, tokenizer, rows=None, set_name=None):
    """The sentences of `rows` (default: book/data/noun_phrases.tsv), each
    run alone, with `phrases`: [(first, last)], the token positions of its
    noun phrase. Raises a ValueError naming the line of a phrase that has
    fewer than two words, holds a word the tokenizer splits, is not a run
    of its sentence's words, or is not a determiner, one or more
    describing words and a noun."""
    if rows is None:
        rows, set_name = (
            rh.load_table(rh.SETS["phrases"]),
            rh.set_path("phrases"),
        )
    texts = [row[0] for row in rows]
    examples = rh.run_examples(model, tokenizer, texts, None, set_name)
    for ex, row in zip(examples, rows):
        sentence, phrase = row
        at = rh.where_row(set_name, row) or "a row"
        split = [w for w in phrase.split() if len(tokenizer.tokenize(w)) != 1]
        if split:
            pieces = tokenizer.tokenize(split[0])
            raise ValueError(
                f"{at} the tokenizer reads {split[0]!r} as {pieces}, not one "
                f"word: write the phrase's words without punctuation, and "
                f"use words the tokenizer keeps whole"
            )
        words = tokenizer.tokenize(phrase)
        if len(words) < 2:
            raise ValueError(
                f"{at} the phrase {phrase!r} has one word: write the "
                f"determiner and its noun, with any words between them"
            )
        tokens, n = ex["tokens"], len(words)
        starts = [i for i in range(len(tokens)) if tokens[i : i + n] == words]
        if not starts:
            raise ValueError(
                f"{at} the phrase {phrase!r} is not in its sentence "
                f"{sentence!r}: copy the phrase from the sentence, word for "
                f"word"
            )
        inner = set(words[1:]) & {*DETERMINERS, "of"}  # a second phrase
        if n < 3 or words[0] not in DETERMINERS or inner:
            raise ValueError(
                f"{at} the phrase {phrase!r} is not a determiner (this set "
                f"reads {', '.join(DETERMINERS)}), one or more words that "
                f"describe the noun, then the noun: use a "
                f"phrase like 'the old grey dog'"
            )
        ex["phrases"] = [(starts[0], starts[0] + n - 1)]
    return examples


def grammar_job(model, tokenizer):
    """(job, examples): the best head at `GRAMMAR` on
    book/data/noun_phrases.tsv, chosen on the even sentences and scored on
    the odd, and those sentences from `phrase_examples`."""
    examples = phrase_examples(model, tokenizer)
    (job,) = gallery(examples, {GRAMMAR: determiner_noun})
    job.inputs = "one noun-phrase template"
    return job, examples


def held_out_phrases(job, examples):
    """(weights (T, T) of `job`'s head, first, last) for each noun phrase
    of the held-out (odd) examples of `phrase_examples`."""
    for ex in examples[1::2]:
        weights = ex["attention"][job.layer, job.head]
        for first, last in ex.get("phrases", ()):
            yield weights, first, last


# --- The study of section 4, in one call -----------------------------------


@dataclass
class RealHeads:
    """Everything section 4 states, from one call."""

    tokens: list  # the pair's tokens, [CLS] A [SEP] B [SEP]
    sentence_b_start: int
    attention: torch.Tensor  # (L, h, T, T), the pair
    hidden_states: tuple  # L + 1 of (1, T, d), the pair
    jobs: list  # [Job, ...], in the order of JOBS
    grammar: Job  # the best head at GRAMMAR, on noun phrases
    phrases: list  # the sentences of noun_phrases.tsv, from phrase_examples
    targets: list  # one (T, T) bool per job, on the pair
    pair_scores: torch.Tensor  # (jobs, L, h): each head's score on the pair
    sentences: list  # each sentence of claim1_pairs.tsv alone
    pairs: list  # the pairs of claim1_pairs.tsv
    n_flies: int  # pairs of flies_pairs.tsv
    # the layer-0 head closest to the source's "flies" picture, chosen on
    # the even pairs; and the same search chosen on the odd pairs (as in
    # `realheads.claim_two`, which the page testing_heads reads)
    flies: rh.FliesTest
    swapped: rh.FliesTest
    # the first pair of flies_pairs.tsv (the source's): its tokens, the
    # rows of `flies`'s head for "flies" in A and in B (2, T), and the
    # positions of the three targets; the two words "flies" in A weights
    # most, and their sentences ("A" or "B")
    source_tokens: list
    source_rows: torch.Tensor
    source_targets: list
    source_top: list
    source_top_sides: list
    source_top_at: list
    largest_difference: float  # the chapter's layers against the model's
    flies_pairs: list = ()  # the pairs of flies_pairs.tsv, run
    # `flies`'s head on the same pairs with sentence B a copy of A, so that
    # both "flies" are verbs (`realheads.place_control`)
    copy_control: rh.FliesTest | None = None

    @property
    def presets(self):
        """The head view's buttons: each job's best head, then the layer-0
        head that best draws the source's "flies" picture."""
        flies = self.flies.layer, self.flies.head
        label = f'the "flies" search: layer {flies[0]}, head {flies[1]}'
        return [*self.gallery_jobs, (label, *flies)]

    @property
    def gallery_jobs(self):
        """The gallery's rows: `jobs`, then `grammar`."""
        return [*self.jobs, self.grammar]

    @property
    def maps(self):
        """`gallery.figure`'s first four arguments for the input the page
        reads: its attention, tokens, `jobs` and their target maps."""
        return self.attention, self.tokens, self.jobs, self.targets

    @property
    def word_jobs(self):
        """The jobs whose targets are words: all but `PARKING`."""
        return pointing_at_words(self.gallery_jobs)

    def job(self, name):
        """The gallery's `Job` for the job `name`, a key of JOBS or
        `GRAMMAR`."""
        for job in self.gallery_jobs:
            if job.name == name:
                return job
        names = ", ".join(repr(job.name) for job in self.gallery_jobs)
        raise ValueError(f"no job {name!r} in the gallery: use one of {names}")

    @property
    def jobs_done(self):
        """How many of `word_jobs` have a head that does the job: the low
        end of its score's interval clears the job's bar."""
        return sum(job.does_job for job in self.word_jobs)

    @property
    def jobs_beyond(self):
        """How many of `word_jobs` have a head whose whole held-out
        interval beats the best fixed distance by share: none can at a
        job that is one (previous, next word)."""
        return sum(job.share_vs_place == "more" for job in self.word_jobs)

    @property
    def grammar_rows(self):
        """[(words between, share, top), ...], one per held-out noun phrase:
        how many words stand between its determiner and its noun, the share
        of the determiner's attention the grammar head puts on the noun, and
        whether the noun is the token it weights most."""
        rows = []
        for weights, first, last in held_out_phrases(
            self.grammar, self.phrases
        ):
            row = weights[first]
            top = int(row.argmax()) == last
            rows.append((last - first - 1, row[last].item(), top))
        return rows

    @property
    def grammar_offset(self):
        """(distance, found): the best rule of place to set the grammar
        head against. The distance in tokens from determiner to noun most
        common in the held-out noun phrases, and for how many of them the
        noun stands there: no fixed distance finds more."""
        found = Counter(
            last - first
            for _, first, last in held_out_phrases(self.grammar, self.phrases)
        )
        return found.most_common(1)[0] if found else (0, 0)

    @property
    def grammar_between(self):
        """The grammar head's mean share, over the held-out noun phrases,
        that a word between determiner and noun puts on the noun (NaN when
        no phrase has a word between)."""
        shares = []
        for weights, first, last in held_out_phrases(
            self.grammar, self.phrases
        ):
            shares += weights[first + 1 : last, last].tolist()
        return mean_or_nan(shares)

    @property
    def grammar_before(self):
        """The grammar head's mean share, over the held-out noun phrases
        that follow a word, that the word just before the determiner puts
        on the noun: its next noun too, so a head that sent every word to
        the next noun would give it as much (NaN when no phrase follows a
        word)."""
        return mean_or_nan(
            weights[first - 1, last].item()
            for weights, first, last in held_out_phrases(
                self.grammar, self.phrases
            )
            if first > 1  # position 0 is [CLS]
        )

    @property
    def grammar_after(self):
        """The grammar head's mean share of a determiner's attention on the
        token just past its noun, over the held-out noun phrases: a head
        that only looked a few tokens ahead would give it much."""
        return mean_or_nan(
            weights[first, last + 1].item()
            for weights, first, last in held_out_phrases(
                self.grammar, self.phrases
            )
            if last + 1 < len(weights)  # [SEP] follows, in the book's data
        )

    @property
    def grammar_example(self):
        """The figure's held-out sentence: the first whose noun phrase has
        the most words between determiner and noun, among those with no
        unmarked determiner (whose row the reader might take for a miss),
        if any."""

        def key(ex):
            alone = sum(t.lower() in DETERMINERS for t in ex["tokens"]) == 1
            return alone, max(b - a for a, b in ex["phrases"])

        return max(self.phrases[1::2], key=key)  # max keeps the first

    def on_pair(self, job):
        """`job`'s head (one of `jobs`), its score at that job on the pair."""
        names = [j.name for j in self.jobs]
        name = getattr(job, "name", type(job).__name__)
        if name not in names:
            raise ValueError(
                f"{name!r} is not one of study.jobs: use one of them "
                f"(named {names})"
            )
        k = names.index(job.name)
        return float(self.pair_scores[k, job.layer, job.head])

    def numbers(self, first=None):
        """{name: value}: the numbers the page glues. `first` (default
        the first job) is the job whose head the head view opens on."""
        first = self.jobs[0] if first is None else first
        flies = self.flies
        return {
            "n_pairs": len(self.pairs),
            "n_sentences": len(self.sentences),
            "n_word_jobs": len(self.word_jobs),
            "clear_share": CLEAR,
            "first_layer": first.layer,
            "first_head": first.head,
            "first_job": first.name,
            "first_target": TARGETS.get(first.name, "its targets"),
            "first_share": first.held_out,
            "first_even": first.even,  # its baselines, held out too
            "first_median": first.median,
            "n_flies": self.n_flies,
            "flies_head": flies.head,
            # the least-lifted target: 1 is an even share
            "flies_lift": flies.score.mean,
            "copy_lift": self.copy_control.score.mean,  # B a copy of A
            # on the source's pair, the word "flies" in A weights most
            "flies_top": self.source_top[0],
            "largest": self.largest_difference,
            "flies_n": len(self.flies_pairs[1::2]),  # the held-out pairs
            **self.grammar_numbers(),
        }

    def grammar_numbers(self):
        """{name: value}: the grammar head's numbers, held out: its share,
        and how many determiners weight their noun most."""
        rows, job = self.grammar_rows, self.grammar
        before = self.grammar_before
        if math.isnan(before):  # no held-out phrase follows a word
            raise ValueError(
                "no held-out noun phrase of book/data/noun_phrases.tsv "
                "follows a word: keep some phrases after their verb, as in "
                "'she bought a red car'"
            )
        return {
            "grammar_layer": job.layer,
            "grammar_head": job.head,
            "grammar_share": job.held_out,
            "grammar_median": job.median,
            "grammar_even": job.even,
            "grammar_top": sum(top for *_, top in rows),
            "grammar_n": len(rows),
            "grammar_distance": self.grammar_offset[0],
            "grammar_by_place": self.grammar_offset[1],
            # the table's fixed distance, chosen and scored as the head is
            "grammar_place_distance": job.distance,
            "grammar_place_share": job.place,
            "grammar_between": self.grammar_between,
            "grammar_before": before,
            "grammar_after": self.grammar_after,
            # the least that a word before the noun gives it, in even shares
            "grammar_ahead_ratio": min(self.grammar_between, before)
            / job.even,
            "n_phrases": len(self.phrases),
        }


def chapter_difference(model, hidden_states, attention):
    """The largest difference between the model's attention (weights and
    output of W^O, every layer) and the chapter's batched and loop layers
    with its weights copied in. Raises a ValueError above 1e-4."""
    largest = 0.0
    for i, block in enumerate(model.encoder.layer):
        ours = batched_from_bert(block.attention).eval()
        loop = loop_from_batched(ours).eval()
        with torch.no_grad():
            out, weights = ours(hidden_states[i])
            loop_out, loop_weights = loop(hidden_states[i])
            context = block.attention.self(hidden_states[i])[0]
            expected = block.attention.output.dense(context)
        for a, b in [
            (weights[0], attention[i]),
            (out, expected),
            (loop_weights, weights),
            (loop_out, out),
        ]:
            largest = max(largest, (a - b).abs().max().item())
    if largest > 1e-4:
        raise ValueError(
            f"the chapter's layers differ from the model's attention by "
            f"{largest:.1e}: the checkpoint's attention is not BERT's "
            f"(check that it is a BertModel loaded with "
            f"attn_implementation='eager')"
        )
    return largest


def real_heads_results(model, tokenizer, text_a, text_b):
    """`RealHeads`: the pair (text_a, text_b) for the head view and the
    gallery's maps; the gallery of `heads_with_jobs`; the layer-0 head
    that best draws the source's "flies" picture on
    book/data/flies_pairs.tsv, chosen on each half and tested on the other
    (`realheads.claim_two`); the chapter's layers against the model."""
    if text_b is None:
        raise ValueError(
            "this page reads a pair, as the source does: give text_b a "
            "sentence, such as 'fruit flies like a banana'"
        )
    pair = rh.run_example(model, tokenizer, text_a, text_b)
    attention, hidden_states = pair["attention"], pair["hidden_states"]
    found, sentences, pairs = heads_with_jobs(model, tokenizer)
    grammar, phrases = grammar_job(model, tokenizer)
    on_pair = [job_shares([pair], job)[0][0] for job in JOBS.values()]
    rows, where = rh.load_table(rh.SETS["flies"]), rh.set_path("flies")
    flies = rh.flies_examples(model, tokenizer, rows, where)
    claim = rh.claim_two(flies)
    return RealHeads(
        tokens=pair["tokens"],
        sentence_b_start=int(pair["segments"].argmax()),
        attention=attention,
        hidden_states=hidden_states,
        jobs=found,
        grammar=grammar,
        phrases=phrases,
        targets=[job(pair) for job in JOBS.values()],
        pair_scores=torch.stack(on_pair),  # (jobs, L, h)
        sentences=sentences,
        pairs=pairs,
        n_flies=len(flies),
        flies=claim.layer0,
        swapped=claim.layer0_swapped,
        source_tokens=claim.source_tokens,
        source_rows=claim.source_rows,
        source_targets=claim.source_targets,
        source_top=claim.source_top,
        source_top_sides=claim.source_top_sides,
        source_top_at=claim.source_top_at,
        largest_difference=chapter_difference(model, hidden_states, attention),
        flies_pairs=flies,
        copy_control=rh.place_control(model, tokenizer, claim.layer0),
    )
