"""Watch heads learn (section 6): a tiny attention model trained on a task
that needs two kinds of lookup, small enough to train on a CPU in seconds.
`heads_learn` trains it from several seeds side by side and scores each
run: the page's one call.

Every token is a letter carrying a digit, such as ``c3``; in a sequence of
``num_tokens`` tokens every letter occurs exactly twice, with independent
digits. At every position the model must answer two questions:
- previous token: which letter stands just before me? (a lookup by
  position; position 0 has no answer);
- matching token: which digit does the other copy of my letter carry? (a
  lookup by content).
"""

import copy
import dataclasses
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from ..layers.many_heads import MultiHeadAttention

JOBS = ("previous token", "matching token")
IGNORE = -100  # cross_entropy's ignore_index: no answer here
LR = 1e-2  # Adam's learning rate, unless a run is given another


@dataclass(frozen=True)
class TinyConfig:
    """Sizes of the tiny model. hidden_size and num_attention_heads are
    the two numbers MultiHeadAttention reads."""

    num_letters: int = 8
    num_digits: int = 4
    num_tokens: int = 8
    hidden_size: int = 32
    num_attention_heads: int = 2

    def __post_init__(self):
        if not 1 <= self.num_letters <= 26:  # the tokens' names: a0 to z9
            raise ValueError(
                f"num_letters = {self.num_letters}: tokens are named by the "
                f"letters a to z; use 1 to 26"
            )
        if self.num_tokens < 4:  # one letter pair: match = previous token
            raise ValueError(
                f"num_tokens = {self.num_tokens}: with one pair of letters "
                f"the matching token is also the previous one, so the two "
                f"jobs cannot be told apart; use 4 or more (an even number)"
            )
        if self.num_digits < 2:  # one digit: the answer needs no lookup
            raise ValueError(
                f"num_digits = {self.num_digits}: with one digit every "
                f"matching answer is the same, so no head needs to look; "
                f"use 2 or more"
            )

    @property
    def vocab_size(self):
        return self.num_letters * self.num_digits


def token_names(config, ids):
    """'c3' for the token with letter 2 and digit 3."""
    return [
        "abcdefghijklmnopqrstuvwxyz"[i // config.num_digits]
        + str(i % config.num_digits)
        for i in ids.tolist()
    ]


def make_batch(config, batch_size, generator):
    """Return (ids, previous, partner, digit), each (B, T).

    previous: the letter before each token (IGNORE at position 0).
    partner: the position of the other copy of each token's letter.
    digit: the digit that other copy carries (the matching job's answer).
    """
    B, T, L = batch_size, config.num_tokens, config.num_letters
    if T % 2 or T // 2 > L:
        raise ValueError(
            f"num_tokens must be even and at most 2 * num_letters = {2 * L}"
            f", got {T}"
        )
    # T/2 distinct letters, each placed twice: slots s and s + T/2 match
    letters = torch.rand(B, L, generator=generator).argsort(-1)[:, : T // 2]
    letters = letters.repeat(1, 2)  # (B, T) by slot
    digits = torch.randint(config.num_digits, (B, T), generator=generator)
    slot = torch.rand(B, T, generator=generator).argsort(-1)  # pos -> slot
    position = slot.argsort(-1)  # (B, T): slot -> pos
    letter = letters.gather(1, slot)  # (B, T) by position
    digit = digits.gather(1, slot)  # (B, T)
    ids = letter * config.num_digits + digit  # (B, T)
    previous = torch.full_like(ids, IGNORE)
    previous[:, 1:] = letter[:, :-1]
    partner = position.gather(1, (slot + T // 2) % T)  # (B, T)
    return ids, previous, partner, digit.gather(1, partner)


class TinyAttentionModel(nn.Module):
    """Token and position embeddings, one MultiHeadAttention with a
    residual connection, and one linear read-out per job."""

    def __init__(self, config):
        super().__init__()
        d = config.hidden_size
        self.token = nn.Embedding(config.vocab_size, d)
        self.position = nn.Embedding(config.num_tokens, d)
        self.attention = MultiHeadAttention(config)
        self.read_previous = nn.Linear(d, config.num_letters)
        self.read_matching = nn.Linear(d, config.num_digits)

    def forward(self, ids):
        """Return (previous logits, matching logits, weights (B, h, T, T))."""
        B, T = ids.shape
        x = self.token(ids) + self.position(torch.arange(T))  # (B, T, d)
        out, weights = self.attention(x)  # (B, T, d), (B, h, T, T)
        x = x + out
        return self.read_previous(x), self.read_matching(x), weights


def job_scores(weights, partner):
    """(h, 2): the mean weight each head puts on each job's target.

    Column 0: from position i to i - 1 (i >= 1). Column 1: from each
    position to the other copy of its letter.
    """
    B, h, T, _ = weights.shape
    i = torch.arange(1, T)
    previous = weights[:, :, i, i - 1].mean(dim=(0, 2))  # (h,)
    index = partner[:, None, :, None].expand(B, h, T, 1)  # (B, h, T, 1)
    matching = weights.gather(-1, index).mean(dim=(0, 2, 3))  # (h,)
    return torch.stack([previous, matching], dim=1)


def job_loss(prev_logits, match_logits, previous, digit):
    """Summed cross-entropy of both jobs (no answer at IGNORE)."""
    return F.cross_entropy(
        prev_logits.flatten(0, 1), previous.flatten(), ignore_index=IGNORE
    ) + F.cross_entropy(match_logits.flatten(0, 1), digit.flatten())


def loss_and_accuracy(model, batch):
    """Summed cross-entropy of both jobs, and each job's accuracy."""
    ids, previous, _, digit = batch
    prev_logits, match_logits, _ = model(ids)
    loss = job_loss(prev_logits, match_logits, previous, digit)
    scored = previous != IGNORE
    prev_ok = prev_logits.argmax(-1)[scored] == previous[scored]
    match_ok = match_logits.argmax(-1) == digit
    return loss, (
        prev_ok.float().mean().item(),
        match_ok.float().mean().item(),
    )


def train(model, config, steps=600, batch_size=64, lr=LR, seed=0):
    """Adam on both jobs at once; returns the loss of every step.

    Seeded and run on one thread, so every run gives the same numbers.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    try:
        for _ in range(steps):
            batch = make_batch(config, batch_size, generator)
            loss, _ = loss_and_accuracy(model, batch)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    return losses


def train_runs(config, seeds, steps=400, batch_size=64, lr=LR):
    """Train one TinyAttentionModel per seed, side by side.

    Run s starts from `torch.manual_seed(s)` and draws its batches from a
    generator seeded s, as `train(model, config, seed=s)` does. The models
    run as one: torch.func.vmap maps one model's loss over the stacked
    weights, and one Adam steps them all. Adam updates every number on
    its own, so each run trains as it would alone, to float rounding.
    Returns (untrained models, trained models, losses (steps, runs)).
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        models = []
        for seed in seeds:
            torch.manual_seed(seed)
            models.append(TinyAttentionModel(config))
        untrained = copy.deepcopy(models)
        weights, buffers = stack_module_state(models)  # (runs, ...) each
        shape = copy.deepcopy(models[0]).to("meta")  # the model, no numbers

        def loss_of_one(weights, buffers, ids, previous, digit):
            call = functional_call(shape, (weights, buffers), (ids,))
            return job_loss(call[0], call[1], previous, digit)

        loss_of_each = vmap(loss_of_one)  # (runs,)
        optimizer = torch.optim.Adam(weights.values(), lr=lr)
        generators = [torch.Generator().manual_seed(s) for s in seeds]
        losses = []
        for _ in range(steps):
            batches = [make_batch(config, batch_size, g) for g in generators]
            ids, previous, _, digit = (torch.stack(b) for b in zip(*batches))
            loss = loss_of_each(weights, buffers, ids, previous, digit)
            optimizer.zero_grad()
            loss.sum().backward()  # each run's gradient reaches only it
            optimizer.step()
            losses.append(loss.detach())
    finally:
        torch.set_num_threads(threads)
    for run, model in enumerate(models):
        model.load_state_dict({k: w[run].detach() for k, w in weights.items()})
    return untrained, models, torch.stack(losses)


@dataclass(frozen=True)
class HeadsLearn:
    """What "Watch heads learn" states: the tiny model trained from
    several seeds, every run scored on the same held-out sequences."""

    seeds: tuple  # one run per seed
    steps: int  # training steps of each run
    untrained: list  # the TinyAttentionModel of each run, before training
    trained: list  # and after
    held_out: tuple  # (ids, previous, partner, digit), from make_batch
    accuracy: torch.Tensor  # (runs, 2): each run's accuracy on each job
    before: torch.Tensor  # (runs, h, 2): job_scores before training
    after: torch.Tensor  # (runs, h, 2): and after
    chance: float  # how often the two jobs' targets are the same token
    # the matching accuracy of a reader of the previous token alone, over
    # every position, as `accuracy` is (`previous_only_accuracy`)
    previous_floor: float
    # (runs, 2): the same runs with one head of the same width, trained
    # with `one_head_setting` (NaN when heads_learn ran no one-head runs)
    one_head_accuracy: torch.Tensor
    # (learning rate, steps) of those runs, the best of `settings` tried
    # (`tune_one_head`); () when none were tried
    one_head_setting: tuple = ()
    settings: tuple = ()
    # each setting's validation score (`tune_one_head`), in `settings`' order
    setting_scores: tuple = ()

    @property
    def n_settings(self):
        """How many (learning rate, steps) settings the one head tried."""
        return len(self.settings)

    @property
    def job(self):
        """(runs, 2): the head that puts the most weight on each job's
        target."""
        return self.after.argmax(dim=1)

    @property
    def specialist(self):
        """(runs, 2): that head's mean weight on the job's target."""
        return self.after.max(dim=1).values

    @property
    def other(self):
        """(runs, 2): the other heads' mean weight on the job's target."""
        h = self.after.shape[1]
        return (self.after.sum(dim=1) - self.specialist) / max(h - 1, 1)

    @property
    def split(self):
        """(runs,) bool: each job has a head of its own that puts more
        than half its weight on the job's target."""
        own = self.job[:, 0] != self.job[:, 1]
        return own & (self.specialist > 0.5).all(dim=-1)

    @property
    def worst(self):
        """The index of the run with the lowest matching accuracy."""
        return int(self.accuracy[:, 1].argmin())

    @property
    def worst_margin(self):
        """Two standard errors of the worst run's matching accuracy,
        counting each held-out sequence once (its questions are not
        independent)."""
        p, n = self.accuracy[self.worst, 1].item(), len(self.held_out[0])
        return 2 * (p * (1 - p) / n) ** 0.5

    def numbers(self, config):
        """What the page heads_learn states, by glue name: the first run's
        jobs, the spread of all runs, the one-head comparison, and the
        sizes of `config`. Bounds are rounded the way the text reads them
        ("at least" down, "no more than" up)."""
        two, one = self.accuracy.mean(0), self.one_head_accuracy.mean(0)
        floor = math.floor(self.accuracy[0].min().item() * 1000) / 10
        return {
            "num_runs": len(self.seeds),
            "first_seed": self.seeds[0],
            "last_seed": self.seeds[-1],
            "seed_list": seed_list(self.seeds),
            "steps": self.steps,
            "job_previous": self.job[0, 0].item(),
            "job_matching": self.job[0, 1].item(),
            "specialist_min": math.floor(
                1000 * self.specialist[0].min().item()
            )
            / 1000,
            "other_max": self.other[0].max().item(),
            "before_max": math.ceil(100 * self.before[0].max().item()) / 100,
            "chance": self.chance,
            "accuracy_floor": f"{floor:.1f}".removesuffix(".0"),  # 99.8, 100
            "split_count": self.split.sum().item(),
            "worst_seed": self.seeds[self.worst],
            "worst_accuracy": self.accuracy[self.worst, 1].item(),
            "two_prev": two[0].item(),
            "two_match": two[1].item(),
            "one_prev": one[0].item(),
            "one_match": one[1].item(),
            # the one-head runs' spread on the matching questions
            "one_match_min": self.one_head_accuracy[:, 1].min().item(),
            "one_match_max": self.one_head_accuracy[:, 1].max().item(),
            # runs answering 90% or more of the matching questions
            "one_solved": (self.one_head_accuracy[:, 1] >= 0.9).sum().item(),
            "two_solved": (self.accuracy[:, 1] >= 0.9).sum().item(),
            "two_lr": LR,  # the two heads' rate, train_runs' default
            "one_lr": self.one_head_setting[0] if self.n_settings else 0,
            "one_steps": self.one_head_setting[1] if self.n_settings else 0,
            "n_settings": self.n_settings,
            # the chosen setting's score on the tuning seeds' validation,
            # and the runs' score on the held-out set, both jobs averaged
            "one_tuned": max(self.setting_scores, default=float("nan")),
            "one_both": self.one_head_accuracy.mean().item(),
            "tune_seeds": TUNE_SEEDS,
            "previous_floor": self.previous_floor,
            "n_sequences": len(self.held_out[0]),
            "tiny_tokens": config.num_tokens,
            "tiny_even": 1 / config.num_tokens,
            "tiny_heads": config.num_attention_heads,
            "tiny_head_width": config.hidden_size
            // config.num_attention_heads,
            "tiny_digits": config.num_digits,
        }

    def page_verdicts(self, config):
        """[(name, rule, args, phrases), ...]: each verdict the page
        heads_learn glues, the first run's and the weakest run's."""
        numbers = self.numbers(config)
        looked_back = self.after[self.worst, :, 0].tolist()  # each head
        margin = numbers["worst_accuracy"] - numbers["previous_floor"]
        return [
            (
                "first_split",
                "above",
                (int(self.split[0]), 0),
                {True: "each job got a head", False: "the jobs did not split"},
            ),
            (
                "sharp",
                "above",
                (numbers["specialist_min"], 0.5),
                {True: "sharp", False: "not sharp"},
            ),
            (
                "worst_heads",
                "all_above",
                (looked_back, 0.5),
                {
                    True: "both heads took the previous-token job",
                    False: "the heads did not both look back",
                },
            ),
            (
                "floor_verdict",
                "sign",
                (margin, self.worst_margin),
                {
                    "neither": "is within chance of that mark",
                    "positive": "is above that mark beyond chance",
                    "negative": "is below that mark beyond chance",
                },
            ),
        ]


def seed_list(seeds):
    """The seeds in words: "0 to 11" for a run of them, else "7, 0 and 3"."""
    seeds = [int(x) for x in seeds]
    if len(seeds) > 2 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]} to {seeds[-1]}"
    words = [str(x) for x in seeds]
    return (
        ", ".join(words[:-1]) + " and " + words[-1] if words[1:] else words[0]
    )


def previous_only_accuracy(partner, num_digits):
    """The expected matching accuracy of a model that reads only the
    previous token, over every position of `partner` (B, T): right when
    the previous token is the match, else right one time in `num_digits`
    by guessing. Position 0 has no previous token, so it always guesses."""
    B, T = partner.shape
    is_match = torch.zeros(B, T, dtype=torch.bool)
    is_match[:, 1:] = partner[:, 1:] == torch.arange(T - 1)
    rate = is_match.float().mean().item()
    return rate + (1 - rate) / num_digits


# The one-head control's (learning rate, steps) settings: the two-head
# recipe first. `tune_one_head` tries each on TUNE_SEEDS seeds of their own.
ONE_HEAD_SETTINGS = (
    (1e-2, 400),
    (3e-3, 1200),
    (1e-3, 1200),
    (3e-3, 2400),
    (3e-3, 4800),
)
TUNE_SEEDS = 6  # a run of one head may solve the task or stall, by seed


def tune_one_head(config, seeds, validation, settings=ONE_HEAD_SETTINGS):
    """[score, ...], one per setting of `settings` (learning rate, steps):
    how much of `validation`'s questions (a batch from `make_batch`) the
    one-head runs from `seeds` answer, the two jobs averaged."""
    one = dataclasses.replace(config, num_attention_heads=1)

    def score(setting):
        lr, steps = setting
        _, models, _ = train_runs(one, seeds, steps, lr=lr)
        with torch.no_grad():
            found = [loss_and_accuracy(m, validation)[1] for m in models]
        return torch.tensor(found).mean().item()

    return [score(setting) for setting in settings]


def heads_learn(
    config,
    seeds=range(12),
    steps=400,
    held_out_size=1024,
    one_head=ONE_HEAD_SETTINGS,
):
    """Train the tiny model from each seed (`train_runs`) and score every
    run on `held_out_size` held-out sequences, drawn by a generator seed
    that no run trains from (one above the largest). The runs ask whether
    two jobs split between heads: one head is refused. The same seeds then
    train one head of the same width, with the best of the `one_head`
    settings (`tune_one_head`, on other seeds and other sequences);
    one_head=() trains none."""
    seeds = list(seeds)
    if len(set(seeds)) != len(seeds):  # a repeated seed repeats its run
        raise ValueError(
            f"seeds {seeds} repeat a seed, so one run would count twice: "
            f"use distinct seeds, such as range({len(seeds)})"
        )
    if config.num_attention_heads < 2:
        raise ValueError(
            f"heads_learn asks whether training splits two jobs between "
            f"heads, so it needs 2 heads or more; got "
            f"num_attention_heads={config.num_attention_heads}: set it to 2 "
            f"or more (the page's section 'One head in place of two' "
            f"trains one head alone)"
        )
    seeds = list(seeds)
    if not seeds or not isinstance(steps, int) or steps < 1:
        raise ValueError(
            f"heads_learn trains from each seed for `steps` steps: give it "
            f"at least one seed and a whole number of steps of 1 or more "
            f"(the page uses 400); got seeds={seeds}, steps={steps!r}"
        )
    untrained, trained, _ = train_runs(config, seeds, steps)
    apart = max(seeds) + 1  # no run draws its batches from this seed
    held_out, validation = (
        make_batch(config, held_out_size, torch.Generator().manual_seed(s))
        for s in (apart, apart + 1)
    )
    ids, _, partner, _ = held_out
    setting, ones, scores = (), [], []
    if one_head:  # tuned on seeds and sequences of its own
        tune = range(apart + 2, apart + 2 + TUNE_SEEDS)
        scores = tune_one_head(config, tune, validation, one_head)
        setting = one_head[scores.index(max(scores))]
        one = dataclasses.replace(config, num_attention_heads=1)
        _, ones, _ = train_runs(one, seeds, setting[1], lr=setting[0])
    with torch.no_grad():
        accuracy = [loss_and_accuracy(m, held_out)[1] for m in trained]
        one_head_accuracy = [loss_and_accuracy(m, held_out)[1] for m in ones]
        before = [job_scores(m(ids)[2], partner) for m in untrained]
        after = [job_scores(m(ids)[2], partner) for m in trained]
    if not ones:
        one_head_accuracy = torch.full((len(seeds), 2), float("nan"))
    i = torch.arange(1, config.num_tokens)
    return HeadsLearn(
        seeds=tuple(seeds),
        steps=steps,
        untrained=untrained,
        trained=trained,
        held_out=held_out,
        accuracy=torch.tensor(accuracy),
        before=torch.stack(before),
        after=torch.stack(after),
        chance=(partner[:, i] == i - 1).float().mean().item(),
        previous_floor=previous_only_accuracy(partner, config.num_digits),
        one_head_accuracy=torch.as_tensor(one_head_accuracy),
        one_head_setting=setting,
        settings=tuple(one_head),
        setting_scores=tuple(scores),
    )
