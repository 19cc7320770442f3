"""Figures of the page testing_heads (every function returns its Axes),
and the numbers and verdict phrases the page glues."""

import math

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import torch

from ..experiments.jobs import CLEAR, pointing_at_words
from ..experiments.realheads import checks_won, head8_counts
from .gallery import BEFORE, HOLDS
from .plotting import PALETTE, head_scatter


def _array(values):
    if hasattr(values, "detach"):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float)


def source_pair_bars(record, head):
    """`flies_bars` for `head` of layer 0 on the source's pair: "flies" in
    A and in B, the three targets in bold. `record` holds that head's
    `source_rows` (2, T), `source_tokens` and `source_targets` (a claim 2
    record of `realheads`, or section 4's `RealHeads`)."""
    ax = flies_bars(
        record.source_rows,  # (2, T)
        record.source_tokens,
        record.source_targets,
        ['"flies" in A', '"flies" in B'],
    )
    ax.set_title(f"layer 0, head {head}, the source's pair")
    return ax


def flies_bars(rows, tokens, targets, names, ax=None):
    """Two bars per token: the weight each of two queries gives it.

    rows: (2, T), the two queries' attention rows; tokens: the T tokens;
    targets: positions whose labels are set in bold; names: the queries.
    """
    rows = _array(rows)
    if rows.shape != (2, len(tokens)):
        raise ValueError(
            f"expected two rows of {len(tokens)} weights, one per query, "
            f"got shape {rows.shape}"
        )
    if len(names) != 2:
        raise ValueError(
            f"expected two names, one per query row, got {len(names)}: "
            f"{list(names)!r}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 2.9), layout="constrained")
    x = np.arange(len(tokens))
    for i, (row, name) in enumerate(zip(rows, names)):
        ax.bar(x + (i - 0.5) * 0.4, row, width=0.4, label=name)
    ax.set_xticks(x, tokens, rotation=60, ha="right")
    for i in targets:
        ax.get_xticklabels()[i].set_fontweight("bold")
    ax.set_ylabel("attention weight")
    ax.set_ylim(0, 1.3 * rows.max())  # room for the legend
    ax.legend(frameon=False, ncol=2, loc="upper left")
    return ax


def power_curve(sizes, powers, have, target=0.8, ax=None):
    """The power of a test against the number of held-out sentences, with
    a dashed line at `target` and a dotted one at the `have` we hold."""
    if len(sizes) != len(powers) or not sizes:
        raise ValueError("need one power per size, and at least one size")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.8, 2.8), layout="constrained")
    ax.plot(sizes, powers, marker="o", color=PALETTE[0])
    ax.axhline(target, color="#333333", lw=1, ls="--")
    ax.axvline(have, color="#333333", lw=1, ls=":")
    right = 1.05 * sizes[-1]
    ax.text(have, 1.02, " held out here", ha="left", va="bottom")
    ax.set_xlabel("held-out sentences")
    ax.set_ylabel("power")
    ax.yaxis.set_major_formatter(mpl.ticker.PercentFormatter(1.0))
    ax.set_ylim(0, 1.12)
    ax.set_xlim(0, right)
    return ax


def own_sentence_scatter(ratio_choose, ratio_confirm, bar=None, ax=None):
    """Claim 1's heads: the own/other-sentence ratio on the even pairs
    against the odd pairs, on log axes with ticks at powers of 2; `bar`
    shades where a head is above it on both."""
    ax = head_scatter(
        ratio_choose,
        ratio_confirm,
        "own / other sentence, even pairs",
        "own / other sentence, odd pairs",
        ax=ax,
        reference=1.0,
        log=True,
    )
    if bar is not None:
        (_, right), (_, top) = ax.get_xlim(), ax.get_ylim()
        ax.fill_between(
            [bar, right], bar, top, color=PALETTE[2], alpha=0.12, lw=0
        )
        ax.set_xlim(right=right)
        ax.set_ylim(top=top)
    for axis, limits in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
        ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8) if min(limits) <= t]
        ticks = [t for t in ticks if t <= max(limits)]
        axis.set_ticks(ticks, [f"{t:g}" for t in ticks])
    return ax


# --- What the page glues ---------------------------------------------------
# Every number the page testing_heads states, by its glue name, and every
# verdict: (name, rule of mhabook.experiments.verdicts, its arguments, a
# phrase for each outcome). Each phrase reads true in the sentences that
# glue it; tests/unit/test_realheads.py renders them.


def _estimate(name, estimate):
    """A held-out mean and its 95% interval, as name, name_low, name_high."""
    return {
        name: estimate.mean,
        f"{name}_low": estimate.low,
        f"{name}_high": estimate.high,
    }


def page_numbers(results):
    """{glue name: value}: every number the page testing_heads states,
    from `realheads.testing_results`."""
    c1, c2, p = results.claim1, results.claim2, results.pronouns
    l0, swapped, upper = c2.layer0, c2.layer0_swapped, c2.upper
    num_layers, num_heads = c2.even_scores.shape
    # the recipe's example: the source's pair, "flies" in A
    words = [t not in ("[CLS]", "[SEP]") for t in c2.source_tokens]
    row = c2.source_rows[0]  # (T,) its weights
    target = c2.source_targets[0]  # A's target ("arrow")
    share = (row[target] / row[torch.tensor(words)].sum()).item()
    before = c2.source_flies[0] - 1  # the word just before "flies" in A
    word_jobs = pointing_at_words(results.gallery)  # all but [CLS], [SEP]
    return {
        "clear_share": CLEAR,  # section 4's bar, as a share of the way to 1
        # section 4's jobs that point at words: all but [CLS] and [SEP]
        "gallery_done": sum(job.does_job for job in word_jobs),
        "gallery_n": len(word_jobs),
        "ex_words": sum(words),
        "ex_even": 1 / sum(words),
        "ex_target": c2.source_tokens[target],
        "ex_share": share,
        "ex_lift": share * sum(words),
        "ex_before_word": c2.source_tokens[before],
        # on the same scale as ex_share: a share of the weight on words
        "ex_before": (row[before] / row[torch.tensor(words)].sum()).item(),
        "n_pairs": results.n_pairs,
        "n_flies": results.n_flies,
        "n_pronouns": results.n_pronouns,
        # claim 1
        "c1_bar": c1.bar,
        "c1_replicated": c1.replicated,
        # the heads that pass neither way round
        "c1_rest": c1.n_heads - c1.replicated - c1.reversed,
        "c1_reversed": c1.reversed,
        "c1_candidates": c1.candidates,
        # the same test with every token read as segment A's
        "c1_one_segment": results.one_segment.replicated,
        "c1_chance": 0.025 * c1.candidates,  # odd intervals above by luck
        "cls_share": c1.cls_share,
        "sep_share": c1.sep_share,
        "halves_r": c1.halves_r,
        "halves_bar": c1.halves_bar,
        # claim 2 in layer 0: chosen on the even pairs, and on the odd
        "l0_head": l0.head,
        "n_odd": c2.n_confirm,
        **_estimate("l0_score", l0.score),
        **_estimate("l0_contrast_a", l0.contrast_a),
        **_estimate("l0_contrast_b", l0.contrast_b),
        **_estimate("l0_rival_subject", l0.rival_subject),
        **_estimate("l0_rival_first_b", l0.rival_first_b),
        "src_top": " and ".join(  # '"fruit" (B) and "banana" (B)'
            f'"{word}" ({side})'
            for word, side in zip(c2.source_top, c2.source_top_sides)
        ),
        "swap_head": swapped.head,
        **_estimate("swap_score", swapped.score),
        **_estimate("same_score", results.same_sense.score),  # B copies A
        **_estimate("upper_same_score", results.upper_same_sense.score),
        # claim 2 in layers 1 and up, and the power of its test
        "upper_layer": upper.layer,
        "upper_head": upper.head,
        **_estimate("upper_score", upper.score),
        **_estimate("upper_subject", upper.rival_subject),  # target − it
        "upper_swap_layer": c2.upper_swapped.layer,
        "upper_swap_head": c2.upper_swapped.head,
        **_estimate("upper_swap_score", c2.upper_swapped.score),
        **_estimate("upper_swap_subject", c2.upper_swapped.rival_subject),
        # pronouns
        "p_ties": len(p.tied),
        "p_choose": p.accuracy.max().item(),
        "p_null": p.bar_choose,
        "p_confirm_best": max(p.held_out[t] for t in p.tied).item(),
        "p_bar_low": min(p.bar_confirm[t] for t in p.tied).item(),
        "n_confirm": p.n_confirm,
        "p_power": p.power,
        "p_false": p.false_alarm,
        "p_needed": p.needed,
        # value norms
        "norm_weight": results.by_weight.mean().item(),
        "norm_norm": results.by_norm.mean().item(),
        "norm_layers": int((results.by_norm < results.by_weight).sum()),
    }


def between(rival):
    """Phrases for A's target minus `rival` (an interval against 0), in
    'between A's target and <the rival>, ...'."""
    return {
        "more": "A's target gets more weight",
        "less": f"{rival} gets more weight",
        "same": "these pairs cannot tell them apart",
    }


# Head 8's two sentences, by how many of the two ways round (chosen on the
# even pairs, and on the odd; `realheads.head8_counts`) hold each: "On
# held-out pairs, the pattern ...", and '"arrow" wins ...'. BEFORE counts
# either word's wins (`realheads.checks_won`).
PATTERN = {
    "none": "fails whichever half chooses the head",
    "some": "holds in one half only",
    "most": "holds in one half only",  # 1 of 2
    "all": "holds whichever half chooses the head",
}


def answers(c1, pattern, up_before, p):
    """The answer box's verdicts, one short answer per claim: claim 1 by
    its count of heads; layer 0 by the halves whose pattern holds;
    above layer 0 by the halves where the word before "flies" beats
    "arrow"; pronouns by whether a chosen head beats chance (a test the
    page requires to have under 80% power, so a miss cannot say no)."""
    return [
        (
            "c1_answer",
            "how_many",
            (c1.replicated, c1.n_heads),
            {
                "none": "No",
                "some": "In some heads",
                "most": "In most heads",
                "all": "In every head",
            },
        ),
        (
            "l0_answer",
            "how_many",
            (pattern, 2),
            {
                "none": "no",
                "some": "for one of the two choices",
                "most": "for one of the two choices",
                "all": "yes",
            },
        ),
        (
            "upper_answer",
            "how_many",
            (up_before, 2),
            {
                "none": "The word before does not win",
                "some": "The word before wins for one choice",
                "most": "The word before wins for one choice",
                "all": "No: the word before wins",
            },
        ),
        (
            "coref_answer",
            "above",
            (p.margin, 0.0),
            {True: "Yes", False: "The test is too small to tell"},
        ),
    ]


def page_verdicts(results):
    """[(name, rule, args, phrases), ...]: every verdict the page
    testing_heads glues (`mhabook.views.glued.verdict`)."""
    c1, c2, p = results.claim1, results.claim2, results.pronouns
    l0, swapped = c2.layer0, c2.layer0_swapped
    pattern, _ = head8_counts((l0, swapped))
    target = checks_won((l0, swapped), "more")  # checks A's target wins
    up_pattern, up_before = head8_counts((c2.upper, c2.upper_swapped))
    return [
        *answers(c1, pattern, up_before, p),  # the box's short answers
        (
            "halves_agree",
            "sign",
            (0.0 if math.isnan(c1.halves_r) else c1.halves_r, c1.halves_bar),
            {
                "positive": "the halves agree head by head",
                "negative": "the halves disagree head by head",
                "neither": "no more than chance would give",
            },
        ),
        ("pattern_halves", "how_many", (pattern, 2), PATTERN),
        ("target_halves", "how_many", (target, 2), BEFORE),
        ("upper_halves", "how_many", (up_pattern, 2), PATTERN),
        ("upper_before", "how_many", (up_before, 2), BEFORE),
        (
            "same_head",  # the search on the even pairs, and on the odd
            "above",
            (int(l0.head == swapped.head), 0),
            {True: "the same head", False: "another head"},
        ),
        ("c2_forward", "all_above", (l0.pattern_margins, 0), HOLDS),
        (
            "same_sense",  # the same head on pairs whose B copies A
            "above",
            (int(results.same_sense.pattern_holds), 0),
            {
                True: "still shows the weak pattern",
                False: "no longer shows the weak pattern",
            },
        ),
        (
            "upper_same_sense",  # the head above layer 0, B a copy of A
            "above",
            (int(results.upper_same_sense.pattern_holds), 0),
            {
                True: "also shows the weak pattern",
                False: "does not show the weak pattern",
            },
        ),
        (
            "upper_same_vs",  # its score on the copies against the real
            "compare",
            (
                results.upper_same_sense.score.low,
                results.upper_same_sense.score.high,
                c2.upper.score.low,
                c2.upper.score.high,
            ),
            {
                "less": "below the real pairs' score",
                "same": "close to the real pairs' score",
                "more": "above the real pairs' score",
            },
        ),
        (
            "same_sense_means",
            "above",
            (int(results.same_sense.pattern_holds), 0),
            {
                True: "need not come from B's own words",
                False: "depends on B's own words",
            },
        ),
        ("swap_holds", "all_above", (swapped.pattern_margins, 0), HOLDS),
        (
            "rival_first_b",  # and B's first target
            "compare",
            (l0.rival_first_b.low, l0.rival_first_b.high, 0, 0),
            between("B's first target"),
        ),
        (
            "c2_upper",
            "compare",
            (c2.upper.score.low, c2.upper.score.high, 1.0, 1.0),
            {
                "more": "is above an even share",
                "same": "cannot be told from an even share",
                "less": "is below an even share",
            },
        ),
        (
            "claim_coref",
            "above",
            (p.margin, 0.0),
            {
                True: "a chosen head beats chance",
                False: "no chosen head beats chance",
            },
        ),
        (
            "p_strict",  # a head at chance passes below the nominal 5%?
            "above",
            (0.05, p.false_alarm),
            {
                True: "so the test is conservative",
                False: "as a 95% point should",
            },
        ),
        (
            "p_beats_null",
            "above",
            (p.accuracy.max(), p.bar_choose),  # the tied best heads
            {True: "above", False: "no higher than"},
        ),
        (
            "norm_verdict",
            "all_above",
            (results.by_weight - results.by_norm, 0.0),
            {True: "lower in every layer", False: "not lower in every layer"},
        ),
    ]
